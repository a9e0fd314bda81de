"""What the shim reads from a node: its capacity, attributes and whether pods may go there.

- **Capacity**: ``status.allocatable`` (``cpu`` in millicores as ``vcore``, ``memory`` in
  bytes, ``pods``, every extended resource by its name). A quantity that does not parse is left
  out (and logged): the rest of the node still counts.
- **Attributes**: every label, plus YuniKorn's ``si/hostname`` (the node's name),
  ``si/rackname`` (``/rack-default``) and ``si/instance-type`` (label
  ``node.kubernetes.io/instance-type``).
- **Schedulable**: not cordoned (``spec.unschedulable``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pyscheduler.si import messages as si
from pyscheduler_k8s.pods import resource_name
from pyscheduler_k8s.quantity import QuantityError, to_int, to_milli

__all__ = ["NodeView", "node_view"]

log = logging.getLogger(__name__)

DEFAULT_RACK: Final = "/rack-default"
INSTANCE_TYPE_LABEL: Final = "node.kubernetes.io/instance-type"


@dataclass(frozen=True)
class NodeView:
    name: str
    capacity: dict[str, int] = field(default_factory=dict)
    attributes: dict[str, str] = field(default_factory=dict)
    schedulable: bool = True
    #: The taints as (key, value, effect), for the shim's predicates.
    taints: tuple[tuple[str, str, str], ...] = ()
    labels: dict[str, str] = field(default_factory=dict)


def _capacity(name: str, allocatable: Mapping[str, Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for resource, text in allocatable.items():
        try:
            value = to_milli(text) if resource == "cpu" else to_int(text)
        except QuantityError as exc:
            log.warning("node %s: %s: left out of its capacity", name, exc)
            continue
        if value > 0:
            out[resource_name(resource)] = value
    return out


def node_view(node: Mapping[str, Any]) -> NodeView:
    meta = node.get("metadata") or {}
    spec = node.get("spec") or {}
    name = str(meta.get("name", ""))
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    attributes = dict(labels)
    attributes[si.HOST_NAME] = name
    attributes[si.RACK_NAME] = DEFAULT_RACK
    instance_type = labels.get(INSTANCE_TYPE_LABEL)
    if instance_type:
        attributes[si.INSTANCE_TYPE] = instance_type
    taints = tuple((str(t.get("key", "")), str(t.get("value", "")), str(t.get("effect", "")))
                   for t in spec.get("taints") or () if isinstance(t, dict))
    return NodeView(name=name, capacity=_capacity(name, (node.get("status") or {}).get("allocatable") or {}),
                    attributes=attributes, schedulable=not spec.get("unschedulable", False), taints=taints,
                    labels=labels)
