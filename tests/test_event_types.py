"""Tests for the event enums and EventRecord's wire encoding.

Expected numbers are written out literally from
/work/shared/spec/yunikorn/events.md ("EventRecord JSON", enums) rather than
derived from the code under test.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from pyscheduler.si.events import (
    EventChangeDetail,
    EventChangeType,
    EventRecord,
    EventRecordType,
)

EXPECTED_RECORD_TYPES = {
    "UNKNOWN_EVENTRECORD_TYPE": 0,
    "REQUEST": 1,
    "APP": 2,
    "NODE": 3,
    "QUEUE": 4,
    "USERGROUP": 5,
}

EXPECTED_CHANGE_TYPES = {"NONE": 0, "SET": 1, "ADD": 2, "REMOVE": 3}

EXPECTED_CHANGE_DETAILS = {
    "DETAILS_NONE": 0,
    "REQUEST_CANCEL": 100,
    "REQUEST_ALLOC": 101,
    "REQUEST_TIMEOUT": 102,
    "APP_ALLOC": 200,
    "APP_REQUEST": 201,
    "APP_REJECT": 202,
    "APP_NEW": 203,
    "APP_ACCEPTED": 204,
    "APP_RUNNING": 206,
    "APP_COMPLETING": 207,
    "APP_COMPLETED": 208,
    "APP_FAILING": 209,
    "APP_FAILED": 210,
    "APP_RESUMING": 211,
    "APP_EXPIRED": 212,
    "APP_CANNOTRUN_QUEUE": 213,
    "APP_RUNNABLE_QUEUE": 214,
    "APP_CANNOTRUN_QUOTA": 215,
    "APP_RUNNABLE_QUOTA": 216,
    "NODE_DECOMISSION": 300,
    "NODE_SCHEDULABLE": 302,
    "NODE_ALLOC": 303,
    "NODE_CAPACITY": 304,
    "NODE_OCCUPIED": 305,
    "NODE_RESERVATION": 306,
    "QUEUE_CONFIG": 400,
    "QUEUE_DYNAMIC": 401,
    "QUEUE_TYPE": 402,
    "QUEUE_MAX": 403,
    "QUEUE_GUARANTEED": 404,
    "QUEUE_APP": 405,
    "QUEUE_ALLOC": 406,
    "QUEUE_PREEMPTION": 407,
    "ALLOC_CANCEL": 500,
    "ALLOC_PREEMPT": 501,
    "ALLOC_TIMEOUT": 502,
    "ALLOC_REPLACED": 503,
    "ALLOC_NODEREMOVED": 504,
    "UG_USER_LIMIT": 600,
    "UG_GROUP_LIMIT": 601,
    "UG_APP_LINK": 602,
    "UG_USER_RESOURCE": 603,
    "UG_GROUP_RESOURCE": 604,
}


def compact(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


# --- enums ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("enum", "expected"),
    [
        (EventRecordType, EXPECTED_RECORD_TYPES),
        (EventChangeType, EXPECTED_CHANGE_TYPES),
        (EventChangeDetail, EXPECTED_CHANGE_DETAILS),
    ],
)
def test_enum_members_and_values_exact(enum: Any, expected: dict[str, int]) -> None:
    # Same names, same numbers, same declaration order, nothing extra.
    assert [(m.name, m.value) for m in enum] == list(expected.items())


def test_change_detail_count() -> None:
    assert len(EventChangeDetail) == 44


@pytest.mark.parametrize("reserved", [205, 301])
def test_reserved_details_are_not_members(reserved: int) -> None:
    with pytest.raises(ValueError):
        EventChangeDetail(reserved)
    assert "APP_STARTING" not in EventChangeDetail.__members__
    assert "NODE_READY" not in EventChangeDetail.__members__


def test_enums_are_ints_on_the_wire() -> None:
    assert int(EventChangeDetail.QUEUE_PREEMPTION) == 407
    assert EventChangeDetail(407) is EventChangeDetail.QUEUE_PREEMPTION
    assert json.dumps(EventRecordType.USERGROUP) == "5"
    assert json.dumps(EventChangeDetail.UG_GROUP_RESOURCE) == "604"


# --- EventRecord ------------------------------------------------------------


def test_record_defaults() -> None:
    rec = EventRecord(EventRecordType.REQUEST, EventChangeType.NONE, EventChangeDetail.DETAILS_NONE, "alloc-1")
    assert rec.reference_id == ""
    assert rec.message == ""
    assert rec.timestamp_ns == 0
    assert dict(rec.resource) == {}


def test_record_is_frozen_and_slotted() -> None:
    rec = EventRecord(EventRecordType.APP, EventChangeType.ADD, EventChangeDetail.APP_NEW, "app-1")
    with pytest.raises(dataclasses.FrozenInstanceError):
        rec.message = "x"  # type: ignore[misc]
    assert not hasattr(rec, "__dict__")


def test_record_coerces_ints_to_enums() -> None:
    rec = EventRecord(2, 1, 206, "app-1")  # type: ignore[arg-type]
    assert rec.type is EventRecordType.APP
    assert rec.change_type is EventChangeType.SET
    assert rec.change_detail is EventChangeDetail.APP_RUNNING


@pytest.mark.parametrize(("type_", "change", "detail"), [(6, 0, 0), (1, 4, 0), (1, 0, 205), (1, 0, 301)])
def test_record_rejects_unknown_numbers(type_: int, change: int, detail: int) -> None:
    with pytest.raises(ValueError):
        EventRecord(type_, change, detail, "x")  # type: ignore[arg-type]


def test_record_resource_is_copied_and_read_only() -> None:
    source = {"memory": 5}
    rec = EventRecord(EventRecordType.NODE, EventChangeType.SET, EventChangeDetail.NODE_CAPACITY, "n", resource=source)
    source["memory"] = 6
    assert rec.resource["memory"] == 5
    with pytest.raises(TypeError):
        rec.resource["memory"] = 7  # type: ignore[index]


def test_record_equality_and_hash() -> None:
    a = EventRecord(EventRecordType.NODE, EventChangeType.ADD, EventChangeDetail.NODE_ALLOC, "n", resource={"vcore": 1})
    b = EventRecord(EventRecordType.NODE, EventChangeType.ADD, EventChangeDetail.NODE_ALLOC, "n", resource={"vcore": 1})
    c = EventRecord(EventRecordType.NODE, EventChangeType.ADD, EventChangeDetail.NODE_ALLOC, "n", resource={"vcore": 2})
    assert a == b and hash(a) == hash(b)
    assert a != c


def test_wire_all_zero_record_is_only_resource() -> None:
    rec = EventRecord(
        EventRecordType.UNKNOWN_EVENTRECORD_TYPE, EventChangeType.NONE, EventChangeDetail.DETAILS_NONE, ""
    )
    assert compact(rec.to_wire_dict()) == '{"resource":{}}'


def test_wire_full_record_key_order() -> None:
    rec = EventRecord(
        type=EventRecordType.APP,
        change_type=EventChangeType.ADD,
        change_detail=EventChangeDetail.APP_ALLOC,
        object_id="app-1",
        reference_id="alloc-1",
        message="allocated",
        timestamp_ns=1_700_000_000_123_456_789,
        resource={"vcore": 1000, "memory": 10_000_000},
    )
    assert compact(rec.to_wire_dict()) == (
        '{"type":2,"objectID":"app-1","message":"allocated","timestampNano":1700000000123456789,'
        '"eventChangeType":2,"eventChangeDetail":200,"referenceID":"alloc-1",'
        '"resource":{"resources":{"memory":{"value":10000000},"vcore":{"value":1000}}}}'
    )


def test_wire_node_added_event() -> None:
    # Shape of step 2 of TestApplicationHistoryTracking: NODE ADD DETAILS_NONE.
    rec = EventRecord(
        EventRecordType.NODE,
        EventChangeType.ADD,
        EventChangeDetail.DETAILS_NONE,
        "node-1:1234",
        message="Node added to the scheduler",
        timestamp_ns=5,
        resource={"vcore": 20000, "memory": 100000000},
    )
    assert compact(rec.to_wire_dict()) == (
        '{"type":3,"objectID":"node-1:1234","message":"Node added to the scheduler","timestampNano":5,'
        '"eventChangeType":2,"resource":{"resources":{"memory":{"value":100000000},"vcore":{"value":20000}}}}'
    )


def test_wire_request_event_omits_none_change_type_and_detail() -> None:
    rec = EventRecord(
        EventRecordType.REQUEST,
        EventChangeType.NONE,
        EventChangeDetail.DETAILS_NONE,
        "alloc-1",
        reference_id="app-1",
        message="Unschedulable request",
        timestamp_ns=42,
    )
    assert compact(rec.to_wire_dict()) == (
        '{"type":1,"objectID":"alloc-1","message":"Unschedulable request","timestampNano":42,'
        '"referenceID":"app-1","resource":{}}'
    )


def test_wire_runnable_limit_event_omits_change_type_keeps_detail() -> None:
    rec = EventRecord(EventRecordType.APP, EventChangeType.NONE, EventChangeDetail.APP_CANNOTRUN_QUOTA, "app-1")
    assert compact(rec.to_wire_dict()) == '{"type":2,"objectID":"app-1","eventChangeDetail":215,"resource":{}}'


def test_wire_zero_quantity_is_empty_object_and_names_sorted() -> None:
    rec = EventRecord(
        EventRecordType.QUEUE,
        EventChangeType.SET,
        EventChangeDetail.QUEUE_MAX,
        "root",
        resource={"vcore": 0, "nvidia.com/gpu": 2, "memory": 0, "ephemeral-storage": 7},
    )
    assert compact(rec.to_wire_dict()) == (
        '{"type":4,"objectID":"root","eventChangeType":1,"eventChangeDetail":403,'
        '"resource":{"resources":{"ephemeral-storage":{"value":7},"memory":{},'
        '"nvidia.com/gpu":{"value":2},"vcore":{}}}}'
    )


def test_wire_values_are_plain_ints() -> None:
    rec = EventRecord(EventRecordType.USERGROUP, EventChangeType.REMOVE, EventChangeDetail.UG_USER_RESOURCE, "u")
    wire = rec.to_wire_dict()
    assert type(wire["type"]) is int
    assert type(wire["eventChangeType"]) is int
    assert type(wire["eventChangeDetail"]) is int
    assert list(wire) == ["type", "objectID", "eventChangeType", "eventChangeDetail", "resource"]
