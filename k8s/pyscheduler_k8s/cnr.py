"""Katalyst's ``CustomNodeResource`` (CNR): what the node reporter agents write, what the shim
reads (issue 16).

One CNR per node, named as the node, cluster scoped: group ``node.katalyst.kubewharf.io``,
version ``v1alpha1``, plural ``customnoderesources`` (Katalyst's CRD; ``k8s/deploy`` installs
it). The agent on a node writes the merge of its plugins' reports into it; the shim reads it back
into the core's node: the same node schema (:mod:`pyscheduler.reporter.node_fields`) in both
directions, so a field means on Kubernetes what it means to the reporter manager in the core.

The object's layout is the schema's: the Go field name with its first letter lowered is the
JSON name, under the part it belongs to (``Labels`` -> ``metadata.labels``, ``Taints`` ->
``spec.taints``, ``TopologyZone`` -> ``status.topologyZone``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from pyscheduler.reporter.content import FieldType, ReportField
from pyscheduler.reporter.merge import Merged, Reported, merge
from pyscheduler.reporter.node_fields import NODE_SCHEMA, NodeFacts, node_facts

__all__ = ["CNR_API_VERSION", "CNR_GROUP", "CNR_KIND", "CNR_PATH", "CNR_PLURAL", "CNR_VERSION", "FIELD_MANAGER",
           "CnrObject", "ReportedNode", "cnr_object", "cnr_path", "json_name", "object_name_problem", "part_name",
           "reported_node"]

CNR_GROUP: Final = "node.katalyst.kubewharf.io"
CNR_VERSION: Final = "v1alpha1"
CNR_PLURAL: Final = "customnoderesources"
CNR_PATH: Final = f"/apis/{CNR_GROUP}/{CNR_VERSION}/{CNR_PLURAL}"
#: The plugin name the CNR's fields are merged under (the agent merged its plugins already).
SOURCE: Final = "cnr"

_PARTS: Final = {FieldType.METADATA: "metadata", FieldType.SPEC: "spec", FieldType.STATUS: "status"}


def part_name(field_type: FieldType) -> str:
    return _PARTS[field_type]


def json_name(go_name: str) -> str:
    """``TopologyZone`` -> ``topologyZone``."""
    return go_name[:1].lower() + go_name[1:]


@dataclass(frozen=True)
class ReportedNode:
    """What a node's CNR says: its labels (for the shim's node selector checks) and its facts in
    the core's terms; ``rejected`` names the fields left out and why."""

    name: str
    labels: dict[str, str] = field(default_factory=dict)
    facts: NodeFacts = field(default_factory=NodeFacts)
    rejected: tuple[str, ...] = ()


def reported_node(cnr: Mapping[str, Any]) -> ReportedNode:
    """A CNR object read back through the node schema: a field of the wrong shape is left out
    (named in ``rejected``), the others count."""
    meta = cnr.get("metadata") or {}
    fields: list[ReportField] = []
    for (field_type, go_name) in NODE_SCHEMA:
        part = cnr.get(part_name(field_type))
        if not isinstance(part, Mapping):
            continue
        value = part.get(json_name(go_name))
        if value is None:
            continue
        fields.append(ReportField(field_type, go_name, orjson.dumps(value)))
    merged = merge([Reported(SOURCE, fields)], NODE_SCHEMA)
    labels = merged.values.get("Labels", {})
    return ReportedNode(
        name=str(meta.get("name", "")), labels={str(k): str(v) for k, v in labels.items()},
        facts=node_facts(merged), rejected=tuple(f"{r.field}: {r.reason}" for r in merged.rejected))


# -- The writing side: the object a node's reporter agent applies (pyscheduler_k8s.agent) -----------

CNR_API_VERSION: Final = f"{CNR_GROUP}/{CNR_VERSION}"
CNR_KIND: Final = "CustomNodeResource"
#: Who owns the fields the agent writes (server-side apply's field manager): a field it stops
#: reporting is dropped by its next apply, fields other writers own are left alone.
FIELD_MANAGER: Final = "pyscheduler-reporter-agent"
#: Kubernetes' limits on object metadata (apimachinery's validation): a name segment, a prefix
#: (a DNS subdomain, as an object name), and all of an object's annotations together.
NAME_SEGMENT_MAX: Final = 63
DNS_SUBDOMAIN_MAX: Final = 253
ANNOTATIONS_MAX_BYTES: Final = 256 * 1024

_DNS_SUBDOMAIN: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_NAME_SEGMENT: Final = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
#: Go field name -> the part of the object it belongs to.
_PART_OF: Final = {go_name: field_type for field_type, go_name in NODE_SCHEMA}


def cnr_path(name: str) -> str:
    return f"{CNR_PATH}/{name}"


def object_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a node's CNR (cluster scoped: a DNS subdomain, as node names
    are), or None."""
    if not name:
        return "an object name cannot be empty"
    if len(name) > DNS_SUBDOMAIN_MAX:
        return f"an object name is at most {DNS_SUBDOMAIN_MAX} characters, this one has {len(name)}"
    if not _DNS_SUBDOMAIN.fullmatch(name):
        return ("not a valid object name: lower-case letters, digits, '-' and '.', starting and ending with a "
                "letter or digit (a DNS subdomain, as node names are)")
    return None


def _key_problem(key: str) -> str | None:
    """Why ``key`` is not a label or annotation key (``[prefix/]name``), or None."""
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > DNS_SUBDOMAIN_MAX or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        return "its prefix is not a DNS subdomain"
    if not name or len(name) > NAME_SEGMENT_MAX or not _NAME_SEGMENT.fullmatch(name):
        return f"its name is not 1-{NAME_SEGMENT_MAX} letters, digits, '-', '_' or '.' between letters or digits"
    return None


def _label_value_problem(value: str) -> str | None:
    if value and (len(value) > NAME_SEGMENT_MAX or not _NAME_SEGMENT.fullmatch(value)):
        return f"the value is not 0-{NAME_SEGMENT_MAX} letters, digits, '-', '_' or '.' between letters or digits"
    return None


@dataclass(frozen=True)
class CnrObject:
    """A node's CNR as the agent applies it, and what of the merge was left out and why."""

    body: dict[str, Any]
    left_out: tuple[str, ...] = ()


def cnr_object(node: str, merged: Merged | None) -> CnrObject:
    """The CNR of ``node`` holding ``merged`` (a reporter manager's merge for it; None: nothing
    reported): each field at its JSON name under its part (:func:`json_name`,
    :func:`part_name`), so :func:`reported_node` reads back exactly what was merged.

    Labels and annotations the API server would refuse (a key or a label value outside
    Kubernetes' syntax, annotations beyond 256 KiB together) are left out one by one and named
    in ``left_out`` with the plugin that reported them: one bad entry must not cost the node its
    whole object, as it would if the apply were refused."""
    body: dict[str, Any] = {"apiVersion": CNR_API_VERSION, "kind": CNR_KIND, "metadata": {"name": node}}
    left_out: list[str] = []
    if merged is None:
        return CnrObject(body)
    for go_name, value in merged.values.items():
        field_type = _PART_OF[go_name]
        if field_type is FieldType.METADATA:
            value = _valid_metadata(go_name, value, merged.sources.get(go_name) or {}, left_out)
        body.setdefault(part_name(field_type), {})[json_name(go_name)] = value
    return CnrObject(body, tuple(left_out))


def _valid_metadata(go_name: str, entries: Mapping[str, str], sources: Mapping[str, str],
                    left_out: list[str]) -> dict[str, str]:
    """The labels or annotations Kubernetes takes; each other entry named in ``left_out``."""
    kept: dict[str, str] = {}
    for key, value in entries.items():
        problem = _key_problem(key)
        if problem is None and go_name == "Labels":
            problem = _label_value_problem(value)
        if problem is None:
            kept[key] = value
        else:
            left_out.append(f"{go_name} {key!r} from {sources.get(key, '?')}: {problem}")
    if go_name == "Annotations":
        size = sum(len(key.encode()) + len(value.encode()) for key, value in kept.items())
        if size > ANNOTATIONS_MAX_BYTES:
            left_out.append(f"Annotations: {size} bytes together, Kubernetes takes at most {ANNOTATIONS_MAX_BYTES}")
            return {}
    return kept
