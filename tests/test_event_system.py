"""Behaviour tests of ``pyscheduler.events.EventSystem``, the scheduler's one entry point to
events: non-blocking intake, request events for the RM (request store + publisher), the
history ring and its queries, stream subscriptions, counters and settings reload.

Contract: /work/shared/spec/yunikorn/events.md. Expected wire bytes are written literally.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid
from collections.abc import Sequence

import pytest

from pyscheduler.common.clock import ManualClock
from pyscheduler.common.errors import ConfigError
from pyscheduler.config.event_settings import EventSettings
from pyscheduler.events import (
    EventChangeDetail,
    EventChangeType,
    EventIdOutOfRangeError,
    EventRecord,
    EventRecordType,
    EventSystem,
    EventSystemStoppedError,
)

pytestmark = pytest.mark.timeout(60)

REQUEST, APP, NODE, QUEUE = 1, 2, 3, 4
NONE, SET, ADD, REMOVE = 0, 1, 2, 3
APP_NEW, APP_RUNNING, APP_REQUEST, NODE_CAPACITY = 203, 206, 201, 304

T0 = 1_700_000_000_000_000_000

CLOSED_SLOW = "Event stream was closed by the producer: the consumer fell behind by more than its buffer"
CLOSED_OVERWRITTEN = "Event stream was closed by the producer: its next event was overwritten in the ring buffer"
CLOSED_STOPPED = "Event stream was closed by the producer: the event system stopped"


class RecordingSink:
    """An RM callback that records what it is sent."""

    def __init__(self) -> None:
        self.batches: list[list[EventRecord]] = []
        self.arrived = threading.Event()
        self._lock = threading.Lock()

    def send_event(self, events: Sequence[EventRecord]) -> None:
        with self._lock:
            self.batches.append(list(events))
        self.arrived.set()

    @property
    def events(self) -> list[EventRecord]:
        with self._lock:
            return [e for batch in self.batches for e in batch]


class FailingSink:
    def __init__(self) -> None:
        self.calls = 0

    def send_event(self, events: Sequence[EventRecord]) -> None:
        self.calls += 1
        raise RuntimeError("the RM is down")


def node_event(es: EventSystem, ts: int) -> bool:
    return es.add(NODE, SET, NODE_CAPACITY, "node-1", timestamp_ns=ts)


def node_line(ts: int) -> bytes:
    return (
        b'{"type":3,"objectID":"node-1","timestampNano":%d,"eventChangeType":1,"eventChangeDetail":304,"resource":{}}'
        % ts
    )


def fill(es: EventSystem, n: int, first_ts: int = 1000) -> None:
    for i in range(n):
        assert node_event(es, first_ts + i) is True
    assert es.flush(5.0) is True


def read_available(sub) -> bytes:  # type: ignore[no-untyped-def]
    """What a subscription has ready (callers flush first, so no waiting is needed)."""
    out = b""
    for _ in range(10_000):
        chunk = sub.next(max_events=10_000, timeout=0.0)
        if not chunk:
            break
        out += chunk
    return out


def request_settings(**changes: object) -> EventSettings:
    return EventSettings(request_events_enabled=True, **changes)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# instance, timestamps, queries
# --------------------------------------------------------------------------------------------


def test_instance_uuid_is_a_fresh_uuid4_per_instance(event_system_factory):
    a, b = event_system_factory(), event_system_factory()
    for es in (a, b):
        parsed = uuid.UUID(es.instance_uuid)
        assert parsed.version == 4
        assert str(parsed) == es.instance_uuid  # canonical lower-case text
    assert a.instance_uuid != b.instance_uuid
    assert a.batch_body(0, 10) == (
        b'{"InstanceUUID":"' + a.instance_uuid.encode() + b'","LowestID":0,"HighestID":0,"EventRecords":null}\n'
    )


def test_history_queries_exact_bytes(event_system_factory):
    es = event_system_factory(clock=ManualClock(T0))
    assert es.add(QUEUE, ADD, 0, "root") is True
    assert es.add(APP, ADD, APP_REQUEST, "app-1", "alloc-1", "", {"vcore": 1000, "memory": 10000000}) is True
    assert es.flush(5.0)
    assert es.id_range() == (0, 1)
    assert (es.lowest_id(), es.highest_id(), es.next_id(), len(es)) == (0, 1, 2, 2)
    rec0 = b'{"type":4,"objectID":"root","timestampNano":1700000000000000000,"eventChangeType":2,"resource":{}}'
    rec1 = (
        b'{"type":2,"objectID":"app-1","timestampNano":1700000000000000000,"eventChangeType":2,"eventChangeDetail":201,'
        b'"referenceID":"alloc-1","resource":{"resources":{"memory":{"value":10000000},"vcore":{"value":1000}}}}'
    )
    uid = es.instance_uuid.encode()
    assert es.batch_body(0, 10) == b'{"InstanceUUID":"' + uid + b'","LowestID":0,"HighestID":1,"EventRecords":[' + rec0 + b"," + rec1 + b"]}\n"
    assert es.batch_body(1, 10) == b'{"InstanceUUID":"' + uid + b'","LowestID":0,"HighestID":1,"EventRecords":[' + rec1 + b"]}\n"
    assert es.batch_body(2, 10) == b'{"InstanceUUID":"' + uid + b'","LowestID":0,"HighestID":1,"EventRecords":null}\n'
    assert es.ndjson(0, 10) == rec0 + b"\n" + rec1 + b"\n"
    assert es.ndjson(0, 1) == rec0 + b"\n"
    assert es.records(1, 1) == [(1, 2, 2, 201, T0, "app-1", "alloc-1", "", {"memory": 10000000, "vcore": 1000})]


def test_timestamps_come_from_the_clock_unless_given(event_system_factory):
    clock = ManualClock(T0)
    es = event_system_factory(clock=clock)
    es.add(APP, ADD, APP_NEW, "app-1")
    clock.advance(1.5)
    es.add(APP, SET, APP_RUNNING, "app-1")
    es.add(APP, SET, APP_RUNNING, "app-2", timestamp_ns=42)
    assert es.flush(5.0)
    assert [r[4] for r in es.records(0, 3)] == [T0, T0 + 1_500_000_000, 42]


def test_system_clock_stamps_events_with_now(event_system):
    before = time.time_ns()
    event_system.add(APP, ADD, APP_NEW, "app-1")
    after = time.time_ns()
    assert event_system.flush(5.0)
    ts = event_system.records(0, 1)[0][4]
    assert before <= ts <= after


def test_add_record(event_system_factory):
    es = event_system_factory(clock=ManualClock(T0))
    rec = EventRecord(
        EventRecordType.APP, EventChangeType.SET, EventChangeDetail.APP_RUNNING, "app-1",
        message="running", timestamp_ns=5, resource={"memory": 1},
    )
    assert es.add_record(rec) is True
    assert es.add_record(EventRecord(EventRecordType.QUEUE, EventChangeType.ADD, EventChangeDetail.DETAILS_NONE, "root")) is True
    assert es.flush(5.0)
    assert es.ndjson(0, 2) == (
        b'{"type":2,"objectID":"app-1","message":"running","timestampNano":5,"eventChangeType":1,"eventChangeDetail":206,'
        b'"resource":{"resources":{"memory":{"value":1}}}}\n'
        b'{"type":4,"objectID":"root","timestampNano":1700000000000000000,"eventChangeType":2,"resource":{}}\n'
    )


def test_long_history_messages_are_cut(event_system):
    event_system.add(APP, SET, APP_RUNNING, "app-1", message="a" * 1020 + "\u20ac" + "b" * 100, timestamp_ns=1)
    assert event_system.flush(5.0)
    assert event_system.records(0, 1)[0][7] == "a" * 1020 + "..."


# --------------------------------------------------------------------------------------------
# request events: only to the RM
# --------------------------------------------------------------------------------------------


def test_request_events_go_only_to_the_rm_callback(event_system_factory):
    es = event_system_factory(request_settings(), clock=ManualClock(T0))
    sink = RecordingSink()
    es.set_callback(sink)
    sub = es.subscribe()
    assert es.add(REQUEST, NONE, 0, "alloc-1", "app-1", "0/3 nodes: <insufficient memory>", {"memory": 5}) is True
    assert es.add(APP, ADD, APP_REQUEST, "app-1", "alloc-1", timestamp_ns=7) is True
    assert es.flush(5.0)
    # The ring, the REST body and the stream only ever see the history event, as id 0.
    app_line = b'{"type":2,"objectID":"app-1","timestampNano":7,"eventChangeType":2,"eventChangeDetail":201,"referenceID":"alloc-1","resource":{}}'
    assert (es.next_id(), len(es)) == (1, 1)
    assert es.batch_body(0, 100) == (
        b'{"InstanceUUID":"' + es.instance_uuid.encode() + b'","LowestID":0,"HighestID":0,"EventRecords":[' + app_line + b"]}\n"
    )
    assert read_available(sub) == app_line + b"\n"
    assert sink.batches == []  # nothing is sent before the publisher runs
    assert es.publish_request_events() == 1
    assert sink.batches == [
        [
            EventRecord(
                EventRecordType.REQUEST, EventChangeType.NONE, EventChangeDetail.DETAILS_NONE, "alloc-1", "app-1",
                "0/3 nodes: <insufficient memory>", T0, {"memory": 5},
            )
        ]
    ]
    # The store was cleared: nothing is sent twice.
    assert es.publish_request_events() == 0
    assert len(sink.batches) == 1
    stats = es.stats()
    assert (stats.request_stored, stats.request_dropped, stats.published, stats.stored, stats.created) == (1, 0, 1, 1, 2)


def test_request_events_are_stamped_with_now_by_the_system_clock(event_system_factory):
    es = event_system_factory(request_settings())
    sink = RecordingSink()
    es.set_callback(sink)
    before = time.time_ns()
    assert es.add(REQUEST, NONE, 0, "alloc-1", "app-1", "why") is True
    after = time.time_ns()
    assert es.add(REQUEST, NONE, 0, "alloc-2", "app-1", "why", timestamp_ns=9) is True
    assert es.publish_request_events() == 2
    stamps = [e.timestamp_ns for e in sink.events]
    assert before <= stamps[0] <= after
    assert stamps[1] == 9


def test_request_events_with_a_change_type_are_history(event_system_factory):
    es = event_system_factory(request_settings())
    sink = RecordingSink()
    es.set_callback(sink)
    assert es.add(REQUEST, SET, 101, "alloc-1", "app-1", timestamp_ns=3) is True
    assert es.flush(5.0)
    assert es.ndjson(0, 1) == (
        b'{"type":1,"objectID":"alloc-1","timestampNano":3,"eventChangeType":1,"eventChangeDetail":101,"referenceID":"app-1","resource":{}}\n'
    )
    assert es.publish_request_events() == 0
    assert sink.batches == []


def test_request_events_are_off_by_default(event_system):
    sink = RecordingSink()
    event_system.set_callback(sink)
    assert event_system.settings.request_events_enabled is False
    assert event_system.add(REQUEST, NONE, 0, "alloc-1", "app-1", "why") is False
    assert event_system.flush(5.0)
    assert event_system.next_id() == 0
    assert event_system.publish_request_events() == 0
    assert sink.batches == []
    stats = event_system.stats()
    assert (stats.request_stored, stats.request_dropped, stats.created) == (0, 0, 0)


def test_request_store_capacity_zero_turns_request_events_off(event_system):
    event_system.reload({"service.event.requestEventsEnabled": "true", "service.event.requestStoreCapacity": "0"})
    assert event_system.add(REQUEST, NONE, 0, "alloc-1", "app-1", "why") is False
    event_system.reload({"service.event.requestEventsEnabled": "true"})
    assert event_system.add(REQUEST, NONE, 0, "alloc-1", "app-1", "why") is True


def test_full_request_store_drops_and_counts_until_the_next_collection(event_system_factory):
    es = event_system_factory(request_settings(request_store_capacity=3))
    sink = RecordingSink()
    es.set_callback(sink)
    results = [es.add(REQUEST, NONE, 0, f"alloc-{i}", "app-1", timestamp_ns=i + 1) for i in range(5)]
    assert results == [True, True, True, False, False]
    stats = es.stats()
    assert (stats.request_stored, stats.request_dropped, stats.created) == (3, 2, 5)
    assert es.publish_request_events() == 3
    assert [e.object_id for e in sink.events] == ["alloc-0", "alloc-1", "alloc-2"]
    assert es.add(REQUEST, NONE, 0, "alloc-5", "app-1") is True
    assert es.stats().published == 3


def test_request_capacity_change_applies_at_the_next_collection(event_system_factory):
    es = event_system_factory(request_settings(request_store_capacity=2))
    es.set_callback(RecordingSink())
    es.reload({"service.event.requestEventsEnabled": "true", "event.requestCapacity": "4"})
    assert [es.add(REQUEST, NONE, 0, f"a-{i}", "app") for i in range(3)] == [True, True, False]
    assert es.publish_request_events() == 2
    assert [es.add(REQUEST, NONE, 0, f"b-{i}", "app") for i in range(5)] == [True, True, True, True, False]


def test_request_event_messages_are_cut_like_history_messages(event_system_factory):
    es = event_system_factory(request_settings())
    sink = RecordingSink()
    es.set_callback(sink)
    es.add(REQUEST, NONE, 0, "alloc-1", "app-1", "x" * 1024)
    es.add(REQUEST, NONE, 0, "alloc-2", "app-1", "x" * 1025)
    es.add(REQUEST, NONE, 0, "alloc-3", "app-1", "a" * 1020 + "\u20ac" + "b" * 10)
    es.add(REQUEST, NONE, 0, "alloc-4", "app-1", "a" * 1018 + "\u20ac" + "b" * 10)
    assert es.publish_request_events() == 4
    assert [e.message for e in sink.events] == [
        "x" * 1024,
        "x" * 1021 + "...",
        "a" * 1020 + "...",
        "a" * 1018 + "\u20ac...",
    ]


def test_no_callback_means_collected_request_events_are_not_sent(event_system_factory):
    # YuniKorn's publisher collects every interval and only sends when a callback is registered.
    es = event_system_factory(request_settings())
    assert es.add(REQUEST, NONE, 0, "alloc-1", "app-1", "why") is True
    assert es.publish_request_events() == 0
    sink = RecordingSink()
    es.set_callback(sink)
    assert es.publish_request_events() == 0
    assert es.add(REQUEST, NONE, 0, "alloc-2", "app-1", "why") is True
    assert es.publish_request_events() == 1
    assert [e.object_id for e in sink.events] == ["alloc-2"]


def test_a_failing_callback_is_counted_and_publishing_goes_on(event_system_factory):
    es = event_system_factory(request_settings())
    failing = FailingSink()
    es.set_callback(failing)
    es.add(REQUEST, NONE, 0, "alloc-1", "app-1")
    es.add(REQUEST, NONE, 0, "alloc-2", "app-1")
    assert es.publish_request_events() == 0
    assert failing.calls == 1
    assert (es.stats().published, es.stats().publish_failed) == (0, 2)
    sink = RecordingSink()
    es.set_callback(sink)
    es.add(REQUEST, NONE, 0, "alloc-3", "app-1")
    assert es.publish_request_events() == 1
    assert (es.stats().published, es.stats().publish_failed) == (1, 2)


def test_the_publisher_thread_sends_request_events_every_interval(event_system_factory):
    es = event_system_factory(request_settings(), publish_interval=0.05)
    sink = RecordingSink()
    es.set_callback(sink)
    es.start()
    es.add(REQUEST, NONE, 0, "alloc-1", "app-1", "first")
    assert sink.arrived.wait(timeout=3.0), "the publisher did not send within 3 s"
    assert [e.message for e in sink.events] == ["first"]
    sink.arrived.clear()
    es.add(REQUEST, NONE, 0, "alloc-2", "app-1", "second")
    assert sink.arrived.wait(timeout=3.0)
    assert [e.message for e in sink.events] == ["first", "second"]
    assert es.stats().published == 2
    es.stop()


def test_the_default_publish_interval_is_two_seconds(event_system_factory):
    from pyscheduler.events.publisher import DEFAULT_PUBLISH_INTERVAL

    assert DEFAULT_PUBLISH_INTERVAL == 2.0
    es = event_system_factory(request_settings())
    sink = RecordingSink()
    es.set_callback(sink)
    es.start()
    started = time.monotonic()
    es.add(REQUEST, NONE, 0, "alloc-1", "app-1")
    assert sink.arrived.wait(timeout=4.0)
    assert 1.0 <= time.monotonic() - started <= 3.5
    es.stop()


def test_stop_publishes_what_is_left(event_system_factory):
    es = event_system_factory(request_settings(), publish_interval=60.0)
    sink = RecordingSink()
    es.set_callback(sink)
    es.start()
    es.add(REQUEST, NONE, 0, "alloc-1", "app-1", "last words")
    assert sink.batches == []
    es.stop()
    assert [e.message for e in sink.events] == ["last words"]


# --------------------------------------------------------------------------------------------
# subscriptions
# --------------------------------------------------------------------------------------------


def test_subscribe_history_then_live_without_gap_or_duplicate(event_system):
    fill(event_system, 10)
    sub = event_system.subscribe(count=4)
    assert sub.next_id == 6
    fill(event_system, 3, first_ts=1010)
    assert read_available(sub) == b"".join(node_line(1000 + i) + b"\n" for i in range(6, 13))
    from_sub = event_system.subscribe_from(2)
    assert read_available(from_sub) == event_system.ndjson(2, 100)
    with pytest.raises(EventIdOutOfRangeError):
        event_system.subscribe_from(14)


def test_default_subscriber_capacity_is_2000_live_events(event_system_factory):
    es = event_system_factory(EventSettings(ring_buffer_capacity=10_000))
    sub = es.subscribe()
    fill(es, 2000)
    assert sub.closed_reason is None
    fill(es, 1, first_ts=5000)
    assert sub.closed_reason == CLOSED_SLOW
    assert sub.next(10, 0.0) is None
    assert es.stats().slow_closed == 1


def test_stop_closes_streams_and_refuses_new_work(event_system):
    sub = event_system.subscribe()
    fill(event_system, 3)
    event_system.stop()
    assert read_available(sub) == b"".join(node_line(1000 + i) + b"\n" for i in range(3))
    assert sub.next(10, 0.0) is None
    assert sub.closed_reason == CLOSED_STOPPED
    assert node_event(event_system, 5) is False
    with pytest.raises(EventSystemStoppedError):
        event_system.subscribe()
    assert event_system.stats().dropped == 1


# --------------------------------------------------------------------------------------------
# counters and the non-blocking intake
# --------------------------------------------------------------------------------------------


def test_counters(event_system_factory):
    es = event_system_factory(request_settings(request_store_capacity=2, ring_buffer_capacity=100))
    sink = RecordingSink()
    es.set_callback(sink)
    slow = es.subscribe(capacity=1)
    fast = es.subscribe(capacity=100)
    fill(es, 3)
    for i in range(3):
        es.add(REQUEST, NONE, 0, f"alloc-{i}", "app-1")
    assert es.publish_request_events() == 2
    read_available(fast)
    assert slow.closed_reason == CLOSED_SLOW
    es.reload({"event.trackingEnabled": "false"})
    assert node_event(es, 1) is False  # not offered: not created
    es.reload(
        {"service.event.requestEventsEnabled": "true", "service.event.requestStoreCapacity": "2",
         "event.ringBufferCapacity": "100"}
    )
    stats = es.stats()
    assert dataclasses.asdict(stats) | {"interned_strings": 0, "memory_bytes": 0} == {
        "created": 6,
        "dropped": 0,
        "stored": 3,
        "not_stored": 0,
        "queued": 0,
        "request_stored": 2,
        "request_dropped": 1,
        "published": 2,
        "publish_failed": 0,
        "subscribers": 1,
        "attached_streams": 0,
        "stream_write_timeouts": 0,
        "slow_closed": 1,
        "delivered": 3,
        "ring_capacity": 100,
        "ring_len": 3,
        "interned_strings": 0,
        "memory_bytes": 0,
    }
    assert stats.interned_strings == 1  # "node-1"
    es.stop()
    assert node_event(es, 2) is False
    stats = es.stats()
    assert (stats.created, stats.dropped, stats.stored) == (7, 1, 3)


def test_a_full_queue_drops_and_counts_and_add_never_blocks(event_system_factory):
    es = event_system_factory(EventSettings(ring_buffer_capacity=1000), queue_capacity=1)
    kept = lost = 0
    started = time.monotonic()
    for i in range(200_000):  # bounded; a one-slot queue overflows long before
        if node_event(es, i + 1):
            kept += 1
        else:
            lost += 1
            if lost >= 20:
                break
    elapsed = time.monotonic() - started
    assert es.flush(5.0)
    stats = es.stats()
    assert lost == stats.dropped == 20
    assert kept == stats.stored == es.next_id()
    assert stats.created == kept + lost
    assert elapsed < 5.0


# --------------------------------------------------------------------------------------------
# settings reload
# --------------------------------------------------------------------------------------------


def test_reload_ring_capacity_keeps_ids(event_system_factory):
    es = event_system_factory(EventSettings(ring_buffer_capacity=10))
    fill(es, 25)
    assert es.id_range() == (15, 24)
    settings = es.reload({"event.ringBufferCapacity": "5"})
    assert settings.ring_buffer_capacity == 5
    assert es.settings is settings
    assert es.stats().ring_capacity == 5
    assert es.id_range() == (20, 24)
    assert es.ndjson(20, 100) == b"".join(node_line(1000 + i) + b"\n" for i in range(20, 25))
    fill(es, 3, first_ts=1025)
    assert es.id_range() == (23, 27)
    es.reload({"service.event.ringBufferCapacity": "100"})
    assert es.id_range() == (23, 27)
    fill(es, 1, first_ts=1028)
    assert es.records(28, 1)[0][:1] == (28,)
    assert es.id_range() == (23, 28)


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"event.ringBufferCapacity": "abc"}, "event.ringBufferCapacity"),
        ({"service.event.ringBufferCapacity": "-1"}, "service.event.ringBufferCapacity"),
        ({"event.ringBufferCapacity": "4294967296"}, "event.ringBufferCapacity"),
        ({"event.ringBufferCapacity": " 5"}, "event.ringBufferCapacity"),
        ({"event.ringBufferCapacity": 5}, "event.ringBufferCapacity"),
        ({"event.trackingEnabled": "yes"}, "event.trackingEnabled"),
        ({"service.event.requestEventsEnabled": "on"}, "service.event.requestEventsEnabled"),
        (
            {
                "event.trackingEnabled": "false",
                "event.ringBufferCapacity": "3",
                "service.event.requestEventsEnabled": "false",
                "service.event.requestStoreCapacity": "1",
                "event.maxStreams": "many",
            },
            "event.maxStreams",
        ),
        (
            {"event.ringBufferCapacity": "3", "service.event.ringBufferCapacity": "4"},
            "service.event.ringBufferCapacity",
        ),
    ],
)
def test_a_bad_reload_changes_nothing(event_system_factory, config, key):
    original = EventSettings(ring_buffer_capacity=10, request_events_enabled=True, request_store_capacity=5, max_streams=7)
    es = event_system_factory(original)
    sink = RecordingSink()
    es.set_callback(sink)
    fill(es, 12)
    before = (es.batch_body(0, 100), es.id_range(), es.next_id(), len(es), es.stats().ring_capacity)
    with pytest.raises(ConfigError) as info:
        es.reload(config)
    assert info.value.key == key
    assert key in str(info.value)
    assert es.settings is original
    assert es.tracking_enabled is True
    assert (es.batch_body(0, 100), es.id_range(), es.next_id(), len(es), es.stats().ring_capacity) == before
    # Everything still works with the old settings: ids continue, the ring is still 10 long,
    # request events still go to the RM with the old store capacity (5).
    fill(es, 1, first_ts=1012)
    assert es.id_range() == (3, 12)
    assert [es.add(REQUEST, NONE, 0, f"a-{i}", "app") for i in range(6)] == [True] * 5 + [False]


def test_tracking_disabled_stores_nothing_and_keeps_the_ring(event_system_factory):
    es = event_system_factory(request_settings())
    sink = RecordingSink()
    es.set_callback(sink)
    sub = es.subscribe()
    fill(es, 3)
    read_available(sub)
    body = es.batch_body(0, 100)
    es.reload({"event.trackingEnabled": "false", "service.event.requestEventsEnabled": "true"})
    assert es.tracking_enabled is False
    assert es.settings.tracking_enabled is False
    assert node_event(es, 5000) is False
    assert es.add(APP, ADD, APP_NEW, "app-1") is False
    assert es.add(REQUEST, NONE, 0, "alloc-1", "app-1") is False
    assert es.add_record(EventRecord(EventRecordType.QUEUE, EventChangeType.ADD, EventChangeDetail.DETAILS_NONE, "root")) is False
    assert es.flush(5.0)
    assert es.batch_body(0, 100) == body  # disabling does not clear the ring
    assert es.next_id() == 3
    assert sub.next(10, 0.0) == b""
    assert es.publish_request_events() == 0
    stats = es.stats()
    assert (stats.created, stats.stored, stats.request_stored) == (3, 3, 0)
    es.reload({"service.event.trackingEventsEnabled": "true", "service.event.requestEventsEnabled": "true"})
    assert es.tracking_enabled is True
    fill(es, 1, first_ts=2000)
    assert es.records(3, 1)[0][:1] == (3,)
    assert read_available(sub) == node_line(2000) + b"\n"


@pytest.mark.parametrize("key", ["event.trackingEnabled", "service.event.trackingEventsEnabled"])
@pytest.mark.parametrize("value", ["false", "0", "f", "F", "FALSE", "False"])
def test_tracking_aliases_and_go_bool_spellings(event_system, key, value):
    event_system.reload({key: value})
    assert event_system.tracking_enabled is False
    assert node_event(event_system, 1) is False


def test_service_ring_capacity_zero_turns_collection_off(event_system):
    fill(event_system, 3)
    event_system.reload({"service.event.ringBufferCapacity": "0"})
    assert event_system.stats().ring_capacity == 0
    assert len(event_system) == 0
    assert event_system.tracking_enabled is False
    for i in range(4):
        assert node_event(event_system, 2000 + i) is False, "nothing is kept while collection is off"
    assert event_system.flush(5.0)
    assert event_system.next_id() == 3
    assert len(event_system) == 0
    assert event_system.ndjson(0, 100) == b""
    assert event_system.batch_body(0, 100) == (
        b'{"InstanceUUID":"' + event_system.instance_uuid.encode() + b'","LowestID":2,"HighestID":2,"EventRecords":null}\n'
    )
    stats = event_system.stats()
    assert (stats.stored, stats.not_stored, stats.created) == (3, 0, 3)
    # Turning it back on continues the ids: none is reused.
    event_system.reload({"service.event.ringBufferCapacity": "10"})
    fill(event_system, 1, first_ts=3000)
    assert event_system.records(3, 10) == [(3, 3, 1, 304, 3000, "node-1", "", "", {})]


def test_yunikorn_ring_capacity_zero_means_the_default(event_system_factory):
    es = event_system_factory(EventSettings(ring_buffer_capacity=10))
    fill(es, 5)
    es.reload({"event.ringBufferCapacity": "0"})
    assert es.settings.ring_buffer_capacity == 100_000
    assert es.stats().ring_capacity == 100_000
    assert es.id_range() == (0, 4)


@pytest.mark.parametrize("key", ["event.ringBufferCapacity", "service.event.ringBufferCapacity"])
def test_ring_capacity_aliases(event_system_factory, key):
    es = event_system_factory()
    fill(es, 10)
    es.reload({key: "7"})
    assert es.stats().ring_capacity == 7
    assert es.id_range() == (3, 9)
    es.reload({"event.ringBufferCapacity": "6", "service.event.ringBufferCapacity": "6"})
    assert es.id_range() == (4, 9)


def test_request_capacity_aliases(event_system_factory):
    es = event_system_factory()
    es.set_callback(RecordingSink())
    es.reload({"service.event.requestEventsEnabled": "true", "service.event.requestStoreCapacity": "2"})
    es.publish_request_events()  # a new capacity applies at the next collection
    assert [es.add(REQUEST, NONE, 0, f"a-{i}", "app") for i in range(3)] == [True, True, False]
    es.reload({"service.event.requestEventsEnabled": "true", "event.requestCapacity": "1"})
    es.publish_request_events()
    assert [es.add(REQUEST, NONE, 0, f"b-{i}", "app") for i in range(2)] == [True, False]


def test_reload_with_an_empty_map_restores_the_defaults(event_system_factory):
    es = event_system_factory(EventSettings(tracking_enabled=False, ring_buffer_capacity=10, request_events_enabled=True))
    assert node_event(es, 1) is False
    settings = es.reload({})
    assert settings == EventSettings()
    assert es.tracking_enabled is True
    assert es.stats().ring_capacity == 100_000
    assert es.add(REQUEST, NONE, 0, "alloc-1", "app-1") is False  # request events are off by default
    assert node_event(es, 2) is True


def test_shrinking_reload_closes_subscribers_whose_events_are_gone(event_system_factory):
    es = event_system_factory(EventSettings(ring_buffer_capacity=100))
    fill(es, 50)
    old = es.subscribe_from(0)
    recent = es.subscribe(count=5)
    es.reload({"event.ringBufferCapacity": "10"})
    assert old.closed_reason == CLOSED_OVERWRITTEN
    assert recent.closed_reason is None
    assert read_available(recent) == b"".join(node_line(1000 + i) + b"\n" for i in range(45, 50))
    assert es.stats().slow_closed == 1
