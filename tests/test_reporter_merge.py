"""The reporter manager's merge (pyscheduler.reporter.merge): the seed's three examples
verbatim, registration order deciding every conflict, per-field validation, normalisation."""

from __future__ import annotations

import pytest

from pyscheduler.reporter.content import FieldType, ReportField
from pyscheduler.reporter.merge import FieldKind, FieldSpec, Reported, decode_value, merge

S = FieldType.STATUS
SCHEMA = {
    (S, "ReclaimedResourceCapacity"): FieldSpec(S, "ReclaimedResourceCapacity", FieldKind.MAP,
                                               check=lambda v: None if isinstance(v, str) else "a quantity string"),
    (S, "ResourceStatus"): FieldSpec(S, "ResourceStatus", FieldKind.SLICE,
                                    check=lambda v: None if isinstance(v, dict) else "an object"),
    (S, "TopologyStatus"): FieldSpec(S, "TopologyStatus", FieldKind.COMMON,
                                    check=lambda v: None if isinstance(v, dict) else "an object"),
    (FieldType.METADATA, "Labels"): FieldSpec(FieldType.METADATA, "Labels", FieldKind.MAP,
                                             normalise=lambda m: dict(sorted(m.items()))),
}


def field(name: str, value: str, field_type: FieldType = S) -> ReportField:
    return ReportField(field_type, name, value.encode())


# -- the seed's examples, values verbatim ------------------------------------------------------------


def test_seed_map_example() -> None:
    a = Reported("A", [field("ReclaimedResourceCapacity", '&{"cpu": "10"}')])
    b = Reported("B", [field("ReclaimedResourceCapacity", '&{"memory": "24Gi"}')])
    merged = merge([a, b], SCHEMA)
    assert merged.values == {"ReclaimedResourceCapacity": {"cpu": "10", "memory": "24Gi"}}
    assert merged.sources["ReclaimedResourceCapacity"] == {"cpu": "A", "memory": "B"}
    assert merged.rejected == []


def test_seed_slice_example() -> None:
    a = Reported("A", [field("ResourceStatus", '[&{"numa": "numa-1", "available": {"device-1": "12"}}]')])
    b = Reported("B", [field("ResourceStatus", '[&{"numa": "numa-2", "available": {"device-2": "13"}}]')])
    merged = merge([a, b], SCHEMA)
    assert merged.values["ResourceStatus"] == [
        {"numa": "numa-1", "available": {"device-1": "12"}},
        {"numa": "numa-2", "available": {"device-2": "13"}},
    ]
    assert merged.sources["ResourceStatus"] == ["A", "B"]


def test_seed_common_field_example() -> None:
    a = Reported("A", [field("TopologyStatus", '&{"sockets": [&{"socketID": 0}]}')])
    b = Reported("B", [field("TopologyStatus", '&{"sockets": [&{"socketID": 1}]}')])
    merged = merge([a, b], SCHEMA)
    # The whole object is replaced (Katalyst's code deep-merges it and appends the sockets).
    assert merged.values["TopologyStatus"] == {"sockets": [{"socketID": 1}]}
    assert merged.sources["TopologyStatus"] == "B"


# -- registration order, not value order --------------------------------------------------------------


def test_the_later_registered_plugin_wins_a_shared_key_whatever_the_values() -> None:
    # Katalyst sorts by serialised text, so "8" beat "10" whatever the registration order.
    first = Reported("first", [field("ReclaimedResourceCapacity", '{"cpu": "8"}')])
    second = Reported("second", [field("ReclaimedResourceCapacity", '{"cpu": "10"}')])
    assert merge([first, second], SCHEMA).values["ReclaimedResourceCapacity"] == {"cpu": "10"}
    assert merge([second, first], SCHEMA).values["ReclaimedResourceCapacity"] == {"cpu": "8"}


# -- validation per field -------------------------------------------------------------------------------


def test_a_bad_field_is_rejected_alone() -> None:
    bad = Reported("bad", [
        field("ReclaimedResourceCapacity", '{"cpu": 10}'),     # a number where a quantity string goes
        field("ResourceStatus", '{"numa": "numa-1"}'),         # an object where an array goes
        field("TopologyStatus", "{not json"),
        field("NoSuchField", '"x"'),
        field("Labels", '{"rack": "r1"}', FieldType.METADATA),  # fine
    ])
    good = Reported("good", [field("ReclaimedResourceCapacity", '{"memory": "1Gi"}')])
    merged = merge([bad, good], SCHEMA)
    assert merged.values == {"Labels": {"rack": "r1"}, "ReclaimedResourceCapacity": {"memory": "1Gi"}}
    reasons = {r.field: r.reason for r in merged.rejected}
    assert all(r.plugin == "bad" for r in merged.rejected)
    assert "key 'cpu': a quantity string" == reasons["ReclaimedResourceCapacity"]
    assert "needs a JSON array, got an object" in reasons["ResourceStatus"]
    assert reasons["TopologyStatus"].startswith("not JSON")
    assert reasons["NoSuchField"] == "unknown field status.NoSuchField"


def test_a_field_in_the_wrong_part_of_the_object_is_unknown() -> None:
    merged = merge([Reported("p", [field("Labels", '{"a": "b"}', FieldType.STATUS)])], SCHEMA)
    assert merged.values == {} and merged.rejected[0].reason == "unknown field status.Labels"


def test_normalisation_runs_after_the_merge() -> None:
    merged = merge([Reported("a", [field("Labels", '{"zone": "z1", "rack": "r1"}', FieldType.METADATA)]),
                    Reported("b", [field("Labels", '{"arch": "arm64"}', FieldType.METADATA)])], SCHEMA)
    assert list(merged.values["Labels"]) == ["arch", "rack", "zone"]


@pytest.mark.parametrize(("text", "value"), [
    ('&{"a": 1}', {"a": 1}),
    ('[& {"a": "&{"}]', [{"a": "&{"}]),     # inside a string it stays
    ('{"a": "x\\"&{"}', {"a": 'x"&{'}),
    ('"&"', "&"),
])
def test_pointer_marks_are_read_only_before_an_object(text: str, value: object) -> None:
    assert decode_value(text.encode()) == value


def test_a_stray_ampersand_is_still_bad_json() -> None:
    with pytest.raises(ValueError):
        decode_value(b'&[1]')


# -- turning plugins on and off (Katalyst's rule) ---------------------------------------------------


@pytest.mark.parametrize(("name", "rules", "on"), [
    ("foo", [], True),
    ("foo", ["*"], True),
    ("foo", ["*", "-foo"], False),
    ("foo", ["-foo", "*"], False),
    ("foo", ["foo", "-foo"], True),       # the first entry naming it wins
    ("foo", ["bar"], False),              # named plugins only
    ("foo", ["bar", "*"], True),
    ("foo", ["-bar"], False),             # no star: nothing else is on
])
def test_the_enable_rule(name: str, rules: list[str], on: bool) -> None:
    from pyscheduler.reporter.plugin import is_enabled

    assert is_enabled(name, rules) is on
