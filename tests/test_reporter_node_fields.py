"""What reported fields become on the core's node (pyscheduler.reporter.node_fields), and the
merge behaviours of shared/spec/reporter.md that apply to them."""

from __future__ import annotations

import json

from pyscheduler.common.resources import Resource
from pyscheduler.reporter.content import FieldType, ReportField
from pyscheduler.reporter.merge import Reported, merge
from pyscheduler.reporter.node_fields import (
    NODE_SCHEMA,
    POLICY_ATTRIBUTE,
    TAINTS_ATTRIBUTE,
    ZONES_ATTRIBUTE,
    node_facts,
)

M, SP, ST = FieldType.METADATA, FieldType.SPEC, FieldType.STATUS


def report(plugin: str, *fields: tuple[FieldType, str, object]) -> Reported:
    return Reported(plugin, [ReportField(t, n, json.dumps(v).encode()) for t, n, v in fields])


def facts(*reports: Reported):  # type: ignore[no-untyped-def]
    merged = merge(list(reports), NODE_SCHEMA)
    assert merged.rejected == [], merged.rejected
    return merged, node_facts(merged)


def test_labels_and_annotations_become_attributes_merged_by_key() -> None:
    # Katalyst's case 5: {cc: dd} plus {aa: bb} gives both.
    _, node = facts(report("a", (M, "Labels", {"cc": "dd", "rack": "r1"})),
                    report("b", (M, "Labels", {"aa": "bb", "rack": "r2"}), (M, "Annotations", {"note": "x"})))
    assert node.attributes == {"aa": "bb", "cc": "dd", "note": "x", "rack": "r2"}


def test_properties_concatenate_and_one_per_name_remains() -> None:
    # Katalyst's case 4: memory then cpu properties give both.
    _, node = facts(report("a", (SP, "NodeResourceProperties", [{"propertyName": "memory", "propertyQuantity": "10Gi"}])),
                    report("b", (SP, "NodeResourceProperties", [{"propertyName": "cpu", "propertyQuantity": "10"},
                                                                 {"propertyName": "arch", "propertyValues": ["x86", "avx512"]}])))
    assert node.attributes == {"property.arch": "x86,avx512", "property.cpu": "10", "property.memory": "10Gi"}


def test_topology_zones_are_unique_and_sorted() -> None:
    # Katalyst's case 8: [Socket/0, Numa/0] comes out [Numa/0, Socket/0].
    merged, node = facts(report("a", (ST, "TopologyZone", [{"type": "Socket", "name": "0"}, {"type": "Numa", "name": "0"}])),
                         report("b", (ST, "TopologyZone", [{"type": "Numa", "name": "0", "resources": {}}])))
    assert merged.values["TopologyZone"] == [{"type": "Numa", "name": "0", "resources": {}}, {"type": "Socket", "name": "0"}]
    # Sources stay with their elements: the Numa zone kept is b's.
    assert merged.sources["TopologyZone"] == ["b", "a"]
    assert json.loads(node.attributes[ZONES_ATTRIBUTE])[0] == {"name": "0", "resources": {}, "type": "Numa"}


def test_taints_unique_by_key_and_effect() -> None:
    _, node = facts(report("a", (SP, "Taints", [{"key": "k2", "effect": "NoScheduleForReclaimedTasks"},
                                                {"key": "k1", "value": "old", "effect": "E"}])),
                    report("b", (SP, "Taints", [{"key": "k1", "value": "new", "effect": "E"}])))
    assert json.loads(node.attributes[TAINTS_ATTRIBUTE]) == [
        {"effect": "E", "key": "k1", "value": "new"}, {"effect": "NoScheduleForReclaimedTasks", "key": "k2"}]


def test_resources_become_capacity_and_occupied_with_kubernetes_quantities() -> None:
    _, node = facts(report("agent", (ST, "Resources", {"allocatable": {"cpu": "7500m", "memory": "30Gi", "nvidia.com/gpu": "2"},
                                                       "capacity": {"cpu": "8"}})),
                    report("advisor", (ST, "Occupied", {"cpu": "1", "memory": "512Mi"}), (ST, "TopologyPolicy", "None")))
    assert node.capacity == Resource({"vcore": 7500, "memory": 30 << 30, "nvidia.com/gpu": 2})
    assert node.occupied == Resource({"vcore": 1000, "memory": 512 << 20})
    assert node.attributes == {POLICY_ATTRIBUTE: "None"}


def test_capacity_falls_back_to_capacity_and_nothing_reported_changes_nothing() -> None:
    _, node = facts(report("agent", (ST, "Resources", {"capacity": {"cpu": "4"}})))
    assert node.capacity == Resource({"vcore": 4000})
    _, empty = facts()
    assert (empty.attributes, empty.capacity, empty.occupied) == ({}, None, None)


def test_bad_values_are_rejected_per_field() -> None:
    merged = merge([report("bad", (ST, "Resources", {"allocatable": {"cpu": "lots"}}),
                           (M, "Labels", {"ok": 1}),
                           (SP, "Taints", [{"value": "no key"}]),
                           (ST, "Occupied", {"memory": "1Gi"}))], NODE_SCHEMA)
    assert sorted(r.field for r in merged.rejected) == ["Labels", "Resources", "Taints"]
    node = node_facts(merged)
    assert node.capacity is None and node.occupied is not None


def test_the_shared_cache_gives_the_same_facts_as_none() -> None:
    # Derived forms (zone text, capacity) are cached by what the field was made of; a second node
    # with the same zones but other labels gets the same text and its own labels.
    cache: dict[object, object] = {}
    zones = (ST, "TopologyZone", [{"type": "Socket", "name": "0"}])
    capacity = (ST, "Resources", {"allocatable": {"cpu": "4"}})
    first = node_facts(merge([report("a", zones, capacity, (M, "Labels", {"n": "1"}))], NODE_SCHEMA, cache), cache)
    second = node_facts(merge([report("a", zones, capacity, (M, "Labels", {"n": "2"}))], NODE_SCHEMA, cache), cache)
    plain = node_facts(merge([report("a", zones, capacity, (M, "Labels", {"n": "2"}))], NODE_SCHEMA))
    assert second == plain and first.attributes["n"] == "1"
    assert first.attributes[ZONES_ATTRIBUTE] is second.attributes[ZONES_ATTRIBUTE]
    assert first.capacity is second.capacity == Resource({"vcore": 4000})
