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

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from pyscheduler.reporter.content import FieldType, ReportField
from pyscheduler.reporter.merge import Reported, merge
from pyscheduler.reporter.node_fields import NODE_SCHEMA, NodeFacts, node_facts

__all__ = ["CNR_GROUP", "CNR_PATH", "CNR_PLURAL", "CNR_VERSION", "ReportedNode", "json_name", "part_name",
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
