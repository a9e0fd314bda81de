"""The fields a plugin may report about a node, and what they become on the core's node.

Two kinds of object describe a node here, and both land on the same scheduler node:
Katalyst's ``CustomNodeResource`` (:data:`CNR`, ``node.katalyst.kubewharf.io/v1alpha1``, so a
plugin written for Katalyst reports unchanged) and Kubernetes' ``Node`` (:data:`NODE`, ``v1``).
Content for any other kind is rejected ("no reporter for ..."), as Katalyst skips a kind it
has no reporter for.

| part | field | kind | becomes |
|---|---|---|---|
| metadata | ``Labels`` | map of strings | node attributes, as they are |
| metadata | ``Annotations`` | map of strings | node attributes, as they are |
| spec | ``NodeResourceProperties`` | slice of ``{propertyName, propertyValues, propertyQuantity}`` | attribute ``property.<name>``: the values joined by ``,``, or the quantity; one per name (the later wins), sorted |
| spec | ``Taints`` | slice of ``{key, value, effect}`` | attribute ``katalyst.kubewharf.io/taints`` (JSON); unique by key and effect, sorted |
| status | ``Resources`` | object ``{allocatable, capacity}`` of quantities | the node's schedulable capacity (allocatable, else capacity) |
| status | ``Occupied`` | map of quantities | resources used outside the scheduler (a pyscheduler field) |
| status | ``TopologyZone`` | slice of zones ``{type, name, ...}`` | attribute ``katalyst.kubewharf.io/topology-zones`` (JSON); unique by (type, name), the later wins, sorted |
| status | ``TopologyPolicy`` | string | attribute ``katalyst.kubewharf.io/topology-policy`` |
| status | ``ReclaimedResourceCapacity`` | map of quantities | attributes ``reclaimed.<resource>`` (the seed's field) |
| status | ``ResourceStatus`` | slice of objects | attribute ``katalyst.kubewharf.io/resource-status`` (JSON; the seed's field) |
| status | ``TopologyStatus`` | object | attribute ``katalyst.kubewharf.io/topology-status`` (JSON; the seed's field) |

Quantities are Kubernetes' (``10``, ``1.5``, ``500m``, ``24Gi``), read by the one parser the
Kubernetes shim reads a Node with (:mod:`pyscheduler.common.quantity`): ``cpu`` is the
scheduler's ``vcore`` (in millicores), as YuniKorn's shim maps it, every other name stays, its
count rounded up to whole units as Kubernetes' ``Value()`` does. A quantity must fit int64 in
thousandths (about 9.2e15 units), so that its conversion cannot fail whatever it is about.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pyscheduler.common.quantity import QuantityError, core_resources, to_milli
from pyscheduler.common.resources import Resource
from pyscheduler.reporter.content import FieldType, GroupVersionKind
from pyscheduler.reporter.merge import FieldKind, FieldSpec, Merged

__all__ = ["CNR", "NODE", "NODE_KINDS", "NODE_SCHEMA", "NodeFacts", "node_facts"]

CNR: Final = GroupVersionKind("node.katalyst.kubewharf.io", "v1alpha1", "CustomNodeResource")
NODE: Final = GroupVersionKind("", "v1", "Node")
NODE_KINDS: Final = frozenset({CNR, NODE})

TAINTS_ATTRIBUTE: Final = "katalyst.kubewharf.io/taints"
ZONES_ATTRIBUTE: Final = "katalyst.kubewharf.io/topology-zones"
POLICY_ATTRIBUTE: Final = "katalyst.kubewharf.io/topology-policy"
RESOURCE_STATUS_ATTRIBUTE: Final = "katalyst.kubewharf.io/resource-status"
TOPOLOGY_STATUS_ATTRIBUTE: Final = "katalyst.kubewharf.io/topology-status"


def _string(value: Any) -> str | None:
    return None if isinstance(value, str) else "a string"


def _quantity(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, str | int):
        return "a quantity (such as 10, 1.5, 500m or 24Gi)"
    try:
        # In thousandths: whatever resource it is about (cpu is counted in millicores), its
        # conversion (core_resources) cannot fail once it is accepted.
        to_milli(value)
    except QuantityError as err:
        return f"a quantity (such as 10, 1.5, 500m or 24Gi) within int64 thousandths: {err}"
    return None


def _object(value: Any) -> str | None:
    return None if isinstance(value, dict) else "an object"


def _property(value: Any) -> str | None:
    if not isinstance(value, dict) or not isinstance(value.get("propertyName"), str) or not value["propertyName"]:
        return "an object with a propertyName"
    values = value.get("propertyValues", [])
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        return "propertyValues must be a list of strings"
    if "propertyQuantity" in value and _quantity(value["propertyQuantity"]) is not None:
        return "propertyQuantity must be a quantity"
    return None


def _taint(value: Any) -> str | None:
    if not isinstance(value, dict) or not isinstance(value.get("key"), str) or not value["key"]:
        return "an object with a key"
    if not all(isinstance(value.get(k, ""), str) for k in ("value", "effect")):
        return "value and effect must be strings"
    return None


def _zone(value: Any) -> str | None:
    if not isinstance(value, dict) or not isinstance(value.get("type"), str) or not value["type"]:
        return "an object with a type"
    if not isinstance(value.get("name", ""), str):
        return "name must be a string"
    return None


def _resources(value: Any) -> str | None:
    if not isinstance(value, dict):
        return "an object {allocatable, capacity}"
    for part in ("allocatable", "capacity"):
        quantities = value.get(part, {})
        if quantities is None:
            continue
        if not isinstance(quantities, dict):
            return f"{part} must be a map of quantities"
        for name, quantity in quantities.items():
            problem = _quantity(quantity)
            if problem is not None:
                return f"{part}.{name}: {problem}"
    return None


def _sorted_map(value: dict[str, Any]) -> dict[str, Any]:
    return dict(sorted(value.items()))


M, SP, ST = FieldType.METADATA, FieldType.SPEC, FieldType.STATUS
_FIELDS: Final = (
    FieldSpec(M, "Labels", FieldKind.MAP, _string, _sorted_map),
    FieldSpec(M, "Annotations", FieldKind.MAP, _string, _sorted_map),
    FieldSpec(SP, "NodeResourceProperties", FieldKind.SLICE, _property,
              unique_key=lambda p: p["propertyName"]),
    FieldSpec(SP, "Taints", FieldKind.SLICE, _taint,
              unique_key=lambda t: (t["key"], t.get("effect", ""))),
    FieldSpec(ST, "Resources", FieldKind.COMMON, _resources),
    FieldSpec(ST, "Occupied", FieldKind.MAP, _quantity, _sorted_map),
    FieldSpec(ST, "TopologyZone", FieldKind.SLICE, _zone,
              unique_key=lambda z: (z["type"], z.get("name", ""))),
    FieldSpec(ST, "TopologyPolicy", FieldKind.COMMON, _string),
    FieldSpec(ST, "ReclaimedResourceCapacity", FieldKind.MAP, _quantity, _sorted_map),
    FieldSpec(ST, "ResourceStatus", FieldKind.SLICE, _object),
    FieldSpec(ST, "TopologyStatus", FieldKind.COMMON, _object),
)
#: (part, field name) -> spec, for :func:`pyscheduler.reporter.merge.merge`.
NODE_SCHEMA: Final = {(spec.field_type, spec.name): spec for spec in _FIELDS}


@dataclass(frozen=True)
class NodeFacts:
    """What the merged fields say about one node, in the core's terms."""

    attributes: Mapping[str, str] = field(default_factory=dict)
    #: None: no plugin reports the capacity (the RM's stays).
    capacity: Resource | None = None
    #: None: no plugin reports occupied resources.
    occupied: Resource | None = None


def node_facts(merged: Merged, cache: dict[Any, Any] | None = None) -> NodeFacts:
    """The node's attributes, capacity and occupied resources from merged fields.

    ``cache`` (shared across nodes, as :func:`merge`'s): the derived forms of a field (its JSON
    text as an attribute, a capacity as a Resource) by the field's :attr:`Merged.keys`, so the
    same zones or capacity on thousands of nodes is encoded or parsed once."""
    values = merged.values

    def derived(name: str, make: Callable[[Any], Any]) -> Any:
        if cache is None:
            return make(values[name])
        key = ("derived", merged.keys[name])
        found = cache.get(key)
        if found is None:
            found = cache[key] = make(values[name])
        return found

    attributes: dict[str, str] = {}
    attributes.update(values.get("Labels", {}))
    attributes.update(values.get("Annotations", {}))
    for prop in values.get("NodeResourceProperties", []):
        if "propertyQuantity" in prop:
            attributes[f"property.{prop['propertyName']}"] = str(prop["propertyQuantity"])
        else:
            attributes[f"property.{prop['propertyName']}"] = ",".join(prop.get("propertyValues", []))
    for name, quantity in values.get("ReclaimedResourceCapacity", {}).items():
        attributes[f"reclaimed.{name}"] = str(quantity)
    for name, attribute in (("Taints", TAINTS_ATTRIBUTE), ("TopologyZone", ZONES_ATTRIBUTE),
                            ("ResourceStatus", RESOURCE_STATUS_ATTRIBUTE), ("TopologyStatus", TOPOLOGY_STATUS_ATTRIBUTE)):
        if name in values:
            attributes[attribute] = derived(name, _json_text)
    if "TopologyPolicy" in values:
        attributes[POLICY_ATTRIBUTE] = values["TopologyPolicy"]
    capacity = derived("Resources", _capacity) if "Resources" in values else None
    occupied = derived("Occupied", _resource) if "Occupied" in values else None
    return NodeFacts(dict(sorted(attributes.items())), capacity or None, occupied)


def _json_text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _capacity(resources: Mapping[str, Any]) -> Resource | bool:
    """The schedulable capacity a Resources field gives (allocatable, else capacity), or False
    (cacheable) when it gives none."""
    chosen = resources.get("allocatable") or resources.get("capacity")
    return _resource(chosen) if chosen else False


def _resource(quantities: Mapping[str, Any]) -> Resource:
    """Kubernetes quantities as the core's resource (:func:`pyscheduler.common.quantity.core_resources`:
    ``cpu`` -> ``vcore`` millicores, anything else rounded up to whole units)."""
    return Resource(core_resources(quantities))
