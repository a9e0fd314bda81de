"""Behaviour tests of ``pyscheduler._native.EventStore`` and ``Subscription``.

The contract is /work/shared/spec/yunikorn/events.md: YuniKorn's ring buffer id semantics
(``event_ringbuffer.go``), the EventRecord JSON written byte for byte as Go's encoding/json
writes it, the ``/ws/v1/events/batch`` body and NDJSON stream lines. Expected bytes are written
out literally; the property tests compare against small pure-Python reference models
(a port of YuniKorn's ring buffer, YuniKorn's message cut and Go's string escaping) that
live in this file and share no code with the store.
"""

from __future__ import annotations

import gc
import json
import time
from collections.abc import Iterator, Mapping
from types import MappingProxyType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyscheduler._native import EventIdOutOfRangeError, EventStore, EventSystemStoppedError

pytestmark = pytest.mark.timeout(60)

# Wire values (events.md, "Enums").
REQUEST, APP, NODE, QUEUE, USERGROUP = 1, 2, 3, 4, 5
NONE, SET, ADD, REMOVE = 0, 1, 2, 3
APP_REQUEST, APP_RUNNING, NODE_CAPACITY = 201, 206, 304

CLOSED_SLOW = "Event stream was closed by the producer: the consumer fell behind by more than its buffer"
CLOSED_OVERWRITTEN = "Event stream was closed by the producer: its next event was overwritten in the ring buffer"
CLOSED_STOPPED = "Event stream was closed by the producer: the event system stopped"
CLOSED_BY_CLIENT = "Event stream was closed by the consumer"


# --------------------------------------------------------------------------------------------
# helpers and reference models
# --------------------------------------------------------------------------------------------


def node_line(ts: int) -> bytes:
    """The wire line of the NODE SET NODE_CAPACITY event ``fill`` adds."""
    return (
        b'{"type":3,"objectID":"node-1","timestampNano":%d,"eventChangeType":1,"eventChangeDetail":304,"resource":{}}'
        % ts
    )


def fill(store: EventStore, n: int, first_ts: int = 1000) -> None:
    """Adds ``n`` node events with timestamps ``first_ts, first_ts+1, ...`` and waits for them."""
    for i in range(n):
        assert store.add(NODE, SET, NODE_CAPACITY, first_ts + i, "node-1") is True
    assert store.flush(5.0) is True


def timestamps(ndjson: bytes) -> list[int]:
    return [json.loads(line)["timestampNano"] for line in ndjson.decode("utf-8").splitlines()]


def record_ids(store: EventStore, start: int, count: int) -> list[int]:
    return [r[0] for r in store.records(start, count)]


def only_line(store: EventStore) -> bytes:
    """The NDJSON line of the newest stored event, without its newline."""
    out = store.ndjson(store.highest_id(), 1)
    assert out.endswith(b"\n") and out.count(b"\n") == 1
    return out[:-1]


def read_all(sub, limit: int = 1_000_000, timeout: float = 0.0) -> bytes:  # type: ignore[no-untyped-def]
    """Reads what a subscription has available (bounded). Callers flush first, so every event
    they expect is already stored and no waiting is needed."""
    out = b""
    while out.count(b"\n") < limit:
        chunk = sub.next(max_events=10_000, timeout=timeout)
        if not chunk:
            break
        out += chunk
    return out


def yunikorn_cut(message: str) -> str:
    """YuniKorn's message rule: over 1024 bytes -> first 1021 bytes (backed off to a UTF-8
    character boundary) + '...'."""
    raw = message.encode("utf-8")
    if len(raw) <= 1024:
        return message
    cut = 1021
    while (raw[cut] & 0xC0) == 0x80:
        cut -= 1
    return raw[:cut].decode("utf-8") + "..."


def go_string(s: str) -> bytes:
    """Go encoding/json (HTML-safe) string literal."""
    short = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
    out = []
    for ch in s:
        if ch in short:
            out.append(short[ch])
        elif ord(ch) < 0x20 or ch in "<>&\u2028\u2029":
            out.append("\\u%04x" % ord(ch))
        else:
            out.append(ch)
    return ('"' + "".join(out) + '"').encode("utf-8")


def go_record(
    type_: int, change: int, detail: int, ts: int, obj: str, ref: str, msg: str, res: Mapping[str, int]
) -> bytes:
    """Go encoding/json of si.EventRecord with omitempty keys and an always-present resource."""
    parts = []
    if type_:
        parts.append(b'"type":%d' % type_)
    if obj:
        parts.append(b'"objectID":' + go_string(obj))
    if msg:
        parts.append(b'"message":' + go_string(msg))
    if ts:
        parts.append(b'"timestampNano":%d' % ts)
    if change:
        parts.append(b'"eventChangeType":%d' % change)
    if detail:
        parts.append(b'"eventChangeDetail":%d' % detail)
    if ref:
        parts.append(b'"referenceID":' + go_string(ref))
    if res:
        quantities = b",".join(
            go_string(name) + (b':{"value":%d}' % res[name] if res[name] else b":{}")
            for name in sorted(res, key=lambda n: n.encode("utf-8"))
        )
        parts.append(b'"resource":{"resources":{' + quantities + b"}}")
    else:
        parts.append(b'"resource":{}')
    return b"{" + b",".join(parts) + b"}"


class YuniKornRing:
    """A port of YuniKorn's ``eventRingBuffer`` (event_ringbuffer.go, as events.md describes it):
    a fixed slice, ``head``, sticky ``full``, ``id``, ``lowestId`` and ``resizeOffset``; ids are
    computed from positions. Capacity 0 is pyscheduler's addition: collection off, nothing is
    stored and no id is used; with nothing held both ends report the last id issued."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.events: list[object] = [None] * capacity
        self.head = 0
        self.full = False
        self.id = 0
        self.lowest = 0
        self.resize_offset = 0

    def add(self, event: object) -> None:
        if self.capacity == 0:
            return
        self.events[self.head] = event
        if not self.full:
            self.full = self.head == self.capacity - 1
        else:
            self.lowest += 1
        self.head = (self.head + 1) % self.capacity
        self.id += 1

    def held(self) -> int:
        return self.capacity if self.full else self.head

    def last_id(self) -> int:
        return self.id - 1 if self.id > 0 else 0

    def id_range(self) -> tuple[int, int]:
        return (self.lowest if self.held() else self.last_id(), self.last_id())

    def events_from(self, start: int, count: int) -> list[object] | None:
        if self.held() == 0 or not self.lowest <= start < self.id:
            return None
        pos = (start - self.resize_offset) % self.capacity
        n = min(count, self.capacity, self.id - start)  # capped at capacity, never past head
        return [self.events[(pos + k) % self.capacity] for k in range(n)]

    def recent(self, count: int) -> list[object]:
        n = min(count, self.held())
        return self.events_from(self.id - n, n) or [] if n else []

    def resize(self, new: int) -> None:
        if new == self.capacity:
            return
        held = self.held()
        n = min(held, new)
        newest = [self.events[(self.head - n + k) % self.capacity] for k in range(n)]
        self.events = newest + [None] * (new - n)
        self.capacity = new
        self.head = n % new if new else 0
        self.full = n == new
        if held > new:  # "some events were lost"
            self.lowest = self.id - new
        self.resize_offset = self.lowest
        assert self.id - self.lowest == self.held() or self.held() == 0


# --------------------------------------------------------------------------------------------
# construction and the empty store
# --------------------------------------------------------------------------------------------


def test_defaults_and_bad_queue_capacity(native_event_store_factory):
    store = native_event_store_factory()
    assert store.capacity == 100_000
    assert store.stopped is False
    store.stop()
    assert EventStore().capacity == 100_000
    with pytest.raises(ValueError, match="queue_capacity"):
        EventStore(10, 0)
    with pytest.raises(OverflowError):
        EventStore(-1)


def test_empty_store_reports_zero_zero_and_null_records(native_event_store_factory):
    store = native_event_store_factory(20)
    assert store.id_range() == (0, 0)
    assert (store.lowest_id(), store.highest_id(), store.next_id(), len(store)) == (0, 0, 0, 0)
    assert store.batch_body("u-1", 0, 10) == b'{"InstanceUUID":"u-1","LowestID":0,"HighestID":0,"EventRecords":null}\n'
    assert store.ndjson(0, 10) == b""
    assert store.records(0, 10) == []


def test_first_event_gets_id_zero_and_one_event_is_zero_zero_with_a_record(native_event_store_factory):
    store = native_event_store_factory(20)
    fill(store, 1, first_ts=7)
    assert store.id_range() == (0, 0)
    assert (store.next_id(), len(store)) == (1, 1)
    assert store.batch_body("u", 0, 10) == (
        b'{"InstanceUUID":"u","LowestID":0,"HighestID":0,"EventRecords":['
        b'{"type":3,"objectID":"node-1","timestampNano":7,"eventChangeType":1,"eventChangeDetail":304,"resource":{}}'
        b"]}\n"
    )
    assert store.records(0, 1) == [(0, 3, 1, 304, 7, "node-1", "", "", {})]


def test_ids_are_consecutive_from_zero(native_event_store_factory):
    store = native_event_store_factory(100)
    fill(store, 30)
    assert record_ids(store, 0, 100) == list(range(30))
    assert store.id_range() == (0, 29)
    assert store.next_id() == 30


# --------------------------------------------------------------------------------------------
# ring buffer semantics (YuniKorn's examples and more)
# --------------------------------------------------------------------------------------------


def test_yunikorn_example_cap_20_after_25_adds(native_event_store_factory):
    store = native_event_store_factory(20)
    fill(store, 25)  # id i has timestamp 1000 + i
    assert store.id_range() == (5, 24)
    assert len(store) == 20
    assert timestamps(store.ndjson(18, 100)) == list(range(1018, 1025))
    assert store.batch_body("u", 311, 10) == b'{"InstanceUUID":"u","LowestID":5,"HighestID":24,"EventRecords":null}\n'
    assert store.batch_body("u", 4, 10) == b'{"InstanceUUID":"u","LowestID":5,"HighestID":24,"EventRecords":null}\n'
    assert store.batch_body("u", 25, 10) == b'{"InstanceUUID":"u","LowestID":5,"HighestID":24,"EventRecords":null}\n'
    assert store.ndjson(4, 10) == b"" and store.ndjson(25, 10) == b""
    assert store.records(4, 10) == [] and store.records(25, 10) == []
    assert record_ids(store, 5, 3) == [5, 6, 7]


def test_yunikorn_example_cap_20_after_50_adds(native_event_store_factory):
    store = native_event_store_factory(20)
    fill(store, 50)
    assert store.id_range() == (30, 49)
    assert store.ndjson(18, 100) == b""
    assert timestamps(store.ndjson(42, 100)) == list(range(1042, 1050))
    # The batch body: records 42..49 and the held range, whatever the count.
    body = store.batch_body("u", 42, 100)
    assert body == (
        b'{"InstanceUUID":"u","LowestID":30,"HighestID":49,"EventRecords":['
        + b",".join(node_line(1000 + i) for i in range(42, 50))
        + b"]}\n"
    )


def test_every_start_and_count_reads_in_id_order_across_the_wrap(native_event_store_factory):
    store = native_event_store_factory(20)
    fill(store, 57)  # held: ids 37..56, the ring has wrapped several times
    for start in range(30, 60):
        for count in (1, 2, 5, 13, 19, 20, 21, 1000):
            got = store.ndjson(start, count)
            if 37 <= start <= 56:
                want = b"".join(node_line(1000 + i) + b"\n" for i in range(start, min(start + count, 57)))
            else:
                want = b""
            assert got == want, (start, count)
            want_ids = list(range(start, min(start + count, 57))) if want else []
            assert record_ids(store, start, count) == want_ids, (start, count)


def test_count_is_capped_at_capacity_and_highest_is_the_newest_held(native_event_store_factory):
    store = native_event_store_factory(20)
    fill(store, 20)
    assert record_ids(store, 0, 2**64 - 1) == list(range(20))
    assert store.batch_body("u", 0, 10**15).count(b'"type":3') == 20
    # HighestID is the newest id held regardless of how many records the response holds.
    assert store.batch_body("u", 3, 2) == (
        b'{"InstanceUUID":"u","LowestID":0,"HighestID":19,"EventRecords":[' + node_line(1003) + b"," + node_line(1004) + b"]}\n"
    )
    with pytest.raises(OverflowError):
        store.batch_body("u", -1, 10)
    with pytest.raises(OverflowError):
        store.ndjson(0, 2**64)


def test_batch_body_exact_bytes(native_event_store_factory):
    store = native_event_store_factory(10)
    store.add(QUEUE, ADD, 0, 11, "root")
    store.add(APP, ADD, APP_REQUEST, 12, "app-1", "alloc-1", "", {"vcore": 1000, "memory": 10000000})
    assert store.flush(5)
    assert store.batch_body("8c6d3b1e-5f0a-4e0b-9d7e-2f1c3a4b5c6d", 0, 10) == (
        b'{"InstanceUUID":"8c6d3b1e-5f0a-4e0b-9d7e-2f1c3a4b5c6d","LowestID":0,"HighestID":1,"EventRecords":['
        b'{"type":4,"objectID":"root","timestampNano":11,"eventChangeType":2,"resource":{}},'
        b'{"type":2,"objectID":"app-1","timestampNano":12,"eventChangeType":2,"eventChangeDetail":201,'
        b'"referenceID":"alloc-1","resource":{"resources":{"memory":{"value":10000000},"vcore":{"value":1000}}}}'
        b"]}\n"
    )
    assert store.ndjson(0, 10) == (
        b'{"type":4,"objectID":"root","timestampNano":11,"eventChangeType":2,"resource":{}}\n'
        b'{"type":2,"objectID":"app-1","timestampNano":12,"eventChangeType":2,"eventChangeDetail":201,'
        b'"referenceID":"alloc-1","resource":{"resources":{"memory":{"value":10000000},"vcore":{"value":1000}}}}\n'
    )
    # The instance uuid is escaped like any Go string.
    assert store.batch_body('a"<b>', 5, 1) == (
        b'{"InstanceUUID":"a\\"\\u003cb\\u003e","LowestID":0,"HighestID":1,"EventRecords":null}\n'
    )


def test_resize_shrink_keeps_the_newest_and_ids_continue(native_event_store_factory):
    store = native_event_store_factory(20)
    fill(store, 25)
    store.resize(10)
    assert store.capacity == 10
    assert store.id_range() == (15, 24)
    assert timestamps(store.ndjson(15, 100)) == list(range(1015, 1025))
    assert store.ndjson(14, 1) == b""
    fill(store, 1, first_ts=1025)
    assert store.id_range() == (16, 25)
    assert record_ids(store, 16, 100) == list(range(16, 26))


def test_resize_grow_keeps_everything_and_ids_continue(native_event_store_factory):
    store = native_event_store_factory(10)
    fill(store, 13)
    store.resize(30)
    assert store.id_range() == (3, 12)
    assert len(store) == 10
    fill(store, 27, first_ts=1013)
    assert store.id_range() == (10, 39)
    assert timestamps(store.ndjson(10, 100)) == list(range(1010, 1040))


def test_capacity_zero_turns_collection_off_and_ids_are_never_reused(native_event_store_factory):
    store = native_event_store_factory(5)
    fill(store, 7)
    store.resize(0)
    assert (store.capacity, len(store)) == (0, 0)
    assert store.ndjson(6, 1) == b""
    fill(store, 4, first_ts=5000)  # accepted, but not stored and no id used
    assert store.next_id() == 7
    assert len(store) == 0
    st_ = store.stats()
    assert (st_["stored"], st_["not_stored"], st_["accepted"]) == (7, 4, 11)
    assert store.batch_body("u", 6, 10).endswith(b'"EventRecords":null}\n')
    store.resize(5)
    fill(store, 1, first_ts=6000)
    assert store.records(7, 10) == [(7, 3, 1, 304, 6000, "node-1", "", "", {})]
    assert store.id_range() == (7, 7)


def test_store_created_with_capacity_zero_collects_nothing(native_event_store_factory):
    store = native_event_store_factory(0)
    fill(store, 3)
    assert (store.next_id(), len(store), store.id_range()) == (0, 0, (0, 0))
    assert store.stats()["not_stored"] == 3
    assert store.batch_body("u", 0, 10) == b'{"InstanceUUID":"u","LowestID":0,"HighestID":0,"EventRecords":null}\n'


RING_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(min_value=1, max_value=30)),
        st.tuples(st.just("resize"), st.integers(min_value=0, max_value=25)),
    ),
    max_size=20,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(initial=st.integers(min_value=0, max_value=20), ops=RING_OPS)
def test_ring_matches_a_port_of_yunikorns_ring_buffer(initial: int, ops: list[tuple[str, int]]) -> None:
    store = EventStore(initial, 10_000)
    model = YuniKornRing(initial)
    seq = 0
    try:
        for op, arg in ops:
            if op == "add":
                for _ in range(arg):
                    seq += 1
                    assert store.add(APP, SET, APP_RUNNING, seq, "app-1") is True
                    model.add(seq)
                assert store.flush(5.0)
            else:
                store.resize(arg)
                model.resize(arg)
            assert store.capacity == model.capacity
            assert store.next_id() == model.id
            assert store.id_range() == model.id_range()
            assert len(store) == model.held()
            low, high = model.id_range()
            for start in range(max(0, low - 2), model.id + 3):
                for count in (1, 2, 7, 30):
                    want = model.events_from(start, count)
                    assert [r[4] for r in store.records(start, count)] == (want or []), (start, count)
                    head = b'{"InstanceUUID":"u","LowestID":%d,"HighestID":%d,"EventRecords":' % (low, high)
                    body = store.batch_body("u", start, count)
                    assert body.startswith(head)
                    assert body.endswith(b"null}\n") if want is None else body.endswith(b"]}\n")
            for n in (0, 1, 5, 100):
                sub = store.subscribe_recent(n, 1000)
                want = model.recent(n)
                got = sub.next(1000, 0.0 if not want else 2.0)
                assert timestamps(got) == want, n
                sub.close()
    finally:
        store.stop()


# --------------------------------------------------------------------------------------------
# wire format
# --------------------------------------------------------------------------------------------


def test_record_with_every_field_in_go_key_order(native_event_store_factory):
    store = native_event_store_factory(10)
    store.add(APP, REMOVE, 501, 1_700_000_000_000_000_000, "app-1", "alloc-1", "preempted", {"memory": 5})
    assert store.flush(5)
    assert only_line(store) == (
        b'{"type":2,"objectID":"app-1","message":"preempted","timestampNano":1700000000000000000,'
        b'"eventChangeType":3,"eventChangeDetail":501,"referenceID":"alloc-1",'
        b'"resource":{"resources":{"memory":{"value":5}}}}'
    )


def test_all_zero_record_is_just_an_empty_resource(native_event_store_factory):
    store = native_event_store_factory(10)
    store.add(0, 0, 0, 0, "")
    assert store.flush(5)
    assert only_line(store) == b'{"resource":{}}'
    assert store.records(0, 1) == [(0, 0, 0, 0, 0, "", "", "", {})]


@pytest.mark.parametrize(
    ("args", "line"),
    [
        ((0, SET, 1, 5, "o"), b'{"objectID":"o","timestampNano":5,"eventChangeType":1,"eventChangeDetail":1,"resource":{}}'),
        ((APP, SET, 1, 5, ""), b'{"type":2,"timestampNano":5,"eventChangeType":1,"eventChangeDetail":1,"resource":{}}'),
        ((APP, SET, 1, 0, "o"), b'{"type":2,"objectID":"o","eventChangeType":1,"eventChangeDetail":1,"resource":{}}'),
        ((APP, NONE, 213, 5, "o"), b'{"type":2,"objectID":"o","timestampNano":5,"eventChangeDetail":213,"resource":{}}'),
        ((APP, SET, 0, 5, "o"), b'{"type":2,"objectID":"o","timestampNano":5,"eventChangeType":1,"resource":{}}'),
        ((NODE, SET, 1, -5, "o"), b'{"type":3,"objectID":"o","timestampNano":-5,"eventChangeType":1,"eventChangeDetail":1,"resource":{}}'),
        (
            (USERGROUP, ADD, 603, 2**63 - 1, "u", "root.a"),
            b'{"type":5,"objectID":"u","timestampNano":9223372036854775807,"eventChangeType":2,'
            b'"eventChangeDetail":603,"referenceID":"root.a","resource":{}}',
        ),
        (
            (7, 3, 1023, -(2**63), "o", "r", "m"),
            b'{"type":7,"objectID":"o","message":"m","timestampNano":-9223372036854775808,"eventChangeType":3,'
            b'"eventChangeDetail":1023,"referenceID":"r","resource":{}}',
        ),
    ],
)
def test_zero_and_empty_keys_are_omitted(native_event_store_factory, args, line):
    store = native_event_store_factory(10)
    assert store.add(*args) is True
    assert store.flush(5)
    assert only_line(store) == line


def test_resource_names_sorted_zero_is_empty_object_and_int64_extremes(native_event_store_factory):
    store = native_event_store_factory(10)
    resource = {
        "vcore": 1000,
        "memory": 0,
        "Pods": -1,
        "nvidia.com/gpu": 2**63 - 1,
        "ephemeral-storage": -(2**63),
        "hugepages-2Mi": 2,
    }
    store.add(NODE, SET, NODE_CAPACITY, 1, "n", resource=resource)
    assert store.flush(5)
    assert only_line(store) == (
        b'{"type":3,"objectID":"n","timestampNano":1,"eventChangeType":1,"eventChangeDetail":304,"resource":{"resources":{'
        b'"Pods":{"value":-1},"ephemeral-storage":{"value":-9223372036854775808},"hugepages-2Mi":{"value":2},'
        b'"memory":{},"nvidia.com/gpu":{"value":9223372036854775807},"vcore":{"value":1000}}}}'
    )
    assert store.records(0, 1)[0][8] == resource


def test_resource_names_sort_by_utf8_bytes_and_are_escaped(native_event_store_factory):
    store = native_event_store_factory(10)
    store.add(NODE, SET, NODE_CAPACITY, 1, "n", resource={"\u00e9": 1, "z": 2, "\U0001f600": 3, "\uffff": 4, "<a&b>": 5})
    store.add(NODE, SET, NODE_CAPACITY, 2, "n", resource={})
    store.add(NODE, SET, NODE_CAPACITY, 3, "n", resource=None)
    assert store.flush(5)
    assert store.ndjson(0, 3) == (
        b'{"type":3,"objectID":"n","timestampNano":1,"eventChangeType":1,"eventChangeDetail":304,"resource":{"resources":{'
        b'"\\u003ca\\u0026b\\u003e":{"value":5},"z":{"value":2},"\xc3\xa9":{"value":1},"\xef\xbf\xbf":{"value":4},'
        b'"\xf0\x9f\x98\x80":{"value":3}}}}\n'
        b'{"type":3,"objectID":"n","timestampNano":2,"eventChangeType":1,"eventChangeDetail":304,"resource":{}}\n'
        b'{"type":3,"objectID":"n","timestampNano":3,"eventChangeType":1,"eventChangeDetail":304,"resource":{}}\n'
    )


ESCAPES = [
    ("plain", b'"plain"'),
    ('a"b\\c', b'"a\\"b\\\\c"'),
    ("<b>&</b>", b'"\\u003cb\\u003e\\u0026\\u003c/b\\u003e"'),
    ("\n\r\t\b\f", b'"\\n\\r\\t\\b\\f"'),
    ("\x00\x01\x0b\x1a\x1b\x1f", b'"\\u0000\\u0001\\u000b\\u001a\\u001b\\u001f"'),
    ("x\u2028y\u2029z", b'"x\\u2028y\\u2029z"'),
    # Not escaped by Go: DEL, '/', other U+20xx characters, NEL, BOM, non-ASCII text.
    ("\x7f/\u2027\u202a\u0085\ufeff", b'"\x7f/\xe2\x80\xa7\xe2\x80\xaa\xc2\x85\xef\xbb\xbf"'),
    ("\u20ac \u2713 \U0001f600 \u00fc", b'"\xe2\x82\xac \xe2\x9c\x93 \xf0\x9f\x98\x80 \xc3\xbc"'),
    ("\u2028", b'"\\u2028"'),
    ("\u00e2\u0080\u00a8", b'"\xc3\xa2\xc2\x80\xc2\xa8"'),
]


@pytest.mark.parametrize(("text", "quoted"), ESCAPES)
def test_go_string_escaping_in_every_string_field(native_event_store_factory, text, quoted):
    store = native_event_store_factory(10)
    store.add(APP, SET, APP_RUNNING, 9, text, text, text, {text: 1})
    assert store.flush(5)
    assert only_line(store) == (
        b'{"type":2,"objectID":' + quoted + b',"message":' + quoted + b',"timestampNano":9,"eventChangeType":1,'
        b'"eventChangeDetail":206,"referenceID":' + quoted + b',"resource":{"resources":{' + quoted + b':{"value":1}}}}'
    )
    assert store.records(0, 1)[0][5:] == (text, text, text, {text: 1})


@pytest.mark.parametrize(
    ("message", "stored"),
    [
        ("x" * 1024, "x" * 1024),
        ("x" * 1025, "x" * 1021 + "..."),
        ("y" * 5000, "y" * 1021 + "..."),
        # A 3-byte character at bytes 1020..1022 straddles the cut: it goes entirely.
        ("a" * 1020 + "\u20ac" + "b" * 10, "a" * 1020 + "..."),
        # A 4-byte character at bytes 1019..1022.
        ("a" * 1019 + "\U0001f600" + "b" * 10, "a" * 1019 + "..."),
        # A character ending exactly at byte 1021 is kept.
        ("a" * 1018 + "\u20ac" + "b" * 10, "a" * 1018 + "\u20ac..."),
        # The cut falls exactly on a boundary.
        ("a" * 1021 + "\u20ac\u20ac", "a" * 1021 + "..."),
        # 1024 bytes of multi-byte text are kept whole.
        ("\u20ac" * 341 + "a", "\u20ac" * 341 + "a"),
        ("\u20ac" * 342, "\u20ac" * 340 + "..."),
    ],
)
def test_long_messages_are_cut_to_1021_bytes_plus_dots(native_event_store_factory, message, stored):
    store = native_event_store_factory(10)
    store.add(REQUEST, SET, 0, 1, "ask-1", "", message)
    store.add_many([(REQUEST, SET, 0, 2, "ask-2", "", message)])
    assert store.flush(5)
    recs = store.records(0, 2)
    assert [r[7] for r in recs] == [stored, stored]
    assert len(stored.encode()) <= 1024
    assert store.ndjson(0, 1) == (
        b'{"type":1,"objectID":"ask-1","message":"' + stored.encode() + b'","timestampNano":1,"eventChangeType":1,"resource":{}}\n'
    )


MESSAGES = st.one_of(
    st.text(max_size=60),
    st.text(max_size=1300),
    st.tuples(
        st.integers(min_value=1000, max_value=1030),
        st.text(alphabet=st.characters(min_codepoint=0x80, exclude_categories=["Cs"]), min_size=1, max_size=12),
        st.text(max_size=10),
    ).map(lambda t: "a" * t[0] + t[1] + t[2]),
    st.text(alphabet=st.characters(min_codepoint=0x80, exclude_categories=["Cs"]), min_size=250, max_size=600),
)


@pytest.fixture(scope="module")
def wire_store() -> Iterator[EventStore]:
    store = EventStore(64, 10_000)
    yield store
    store.stop()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    message=MESSAGES,
    object_id=st.text(max_size=40),
    reference_id=st.text(max_size=40),
    resource=st.dictionaries(st.text(max_size=12), st.integers(min_value=-(2**63), max_value=2**63 - 1), max_size=4),
    kind=st.tuples(st.integers(0, 7), st.integers(0, 3), st.integers(0, 1023)),
    ts=st.integers(min_value=-(2**63), max_value=2**63 - 1),
)
def test_random_records_round_trip_byte_for_byte(wire_store, message, object_id, reference_id, resource, kind, ts):
    assert wire_store.add(kind[0], kind[1], kind[2], ts, object_id, reference_id, message, resource) is True
    assert wire_store.flush(5)
    line = only_line(wire_store)
    expected_message = yunikorn_cut(message)
    assert line == go_record(kind[0], kind[1], kind[2], ts, object_id, reference_id, expected_message, resource)
    parsed = json.loads(line)
    assert parsed.get("message", "") == expected_message
    assert parsed.get("objectID", "") == object_id
    assert parsed.get("referenceID", "") == reference_id
    assert {k: v.get("value", 0) for k, v in parsed["resource"].get("resources", {}).items()} == resource
    assert wire_store.records(wire_store.highest_id(), 1)[0][1:] == (
        kind[0], kind[1], kind[2], ts, object_id, reference_id, expected_message, resource,
    )


# --------------------------------------------------------------------------------------------
# strings: UUIDs and interning
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "f47ac10b-58cc-4372-a567-0e02b2c3d479",
        "F47AC10B-58CC-4372-A567-0E02B2C3D479",
        "f47ac10b-58cc-4372-a567-0E02b2c3d479",
        "00000000-0000-0000-0000-000000000000",
        "ffffffff-ffff-ffff-ffff-ffffffffffff",
        "g47ac10b-58cc-4372-a567-0e02b2c3d479",
        "f47ac10b-58cc-4372-a567-0e02b2c3d47",
        "f47ac10b-58cc-4372-a567-0e02b2c3d4799",
        "f47ac10b_58cc-4372-a567-0e02b2c3d479",
        "{f47ac10b-58cc-4372-a567-0e02b2c3d479}",
        "sixteen-bytes-ok",
        "seventeen-bytes-x",
    ],
)
def test_uuid_like_and_inline_strings_round_trip_exactly(native_event_store_factory, text):
    store = native_event_store_factory(10)
    store.add(APP, ADD, 200, 1, text, text, text, {text: 3})
    assert store.flush(5)
    q = go_string(text)
    assert only_line(store) == (
        b'{"type":2,"objectID":' + q + b',"message":' + q + b',"timestampNano":1,"eventChangeType":2,'
        b'"eventChangeDetail":200,"referenceID":' + q + b',"resource":{"resources":{' + q + b':{"value":3}}}}'
    )


def test_evicted_records_release_their_strings(native_event_store_factory):
    store = native_event_store_factory(3)
    uuid = "0b0e0c4e-7a0f-4f6e-8a43-4c9d2b0a1f00"
    store.add(APP, ADD, 201, 1, "app-1", uuid, "", {"memory": 5})
    store.add(NODE, ADD, 303, 2, "node-1", uuid, "a long message of more than sixteen bytes", {"memory": 5})
    assert store.flush(5)
    assert store.stats()["interned_strings"] == 5  # app-1, uuid, node-1, memory, the message
    for ts in range(3, 6):
        store.add(QUEUE, ADD, 0, ts, "root")
    assert store.flush(5)
    assert store.stats()["interned_strings"] == 1  # only "root" is still referenced
    store.resize(0)
    stats = store.stats()
    assert (stats["interned_strings"], stats["interned_payloads"]) == (0, 0)
    # Strings of old records are really gone: new events with the same text still round trip.
    store.resize(3)
    store.add(APP, ADD, 201, 6, "app-1", uuid, "", {"memory": 5})
    assert store.flush(5)
    assert store.records(store.highest_id(), 1)[0][5:] == ("app-1", uuid, "", {"memory": 5})


# --------------------------------------------------------------------------------------------
# argument validation: a rejected event is never queued
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "kwargs", "error"),
    [
        ((8, 0, 0, 1, "o"), {}, ValueError),
        ((0, 4, 0, 1, "o"), {}, ValueError),
        ((0, 0, 1024, 1, "o"), {}, ValueError),
        ((-1, 0, 0, 1, "o"), {}, OverflowError),
        ((0, 0, 0, 2**63, "o"), {}, OverflowError),
        ((0, 0, 0, 1.5, "o"), {}, TypeError),
        ((0, 0, 0, 1, None), {}, TypeError),
        ((0, 0, 0, 1, "o"), {"resource": {"memory": True}}, TypeError),
        ((0, 0, 0, 1, "o"), {"resource": {"memory": 1.0}}, TypeError),
        ((0, 0, 0, 1, "o"), {"resource": {"memory": "1"}}, TypeError),
        ((0, 0, 0, 1, "o"), {"resource": {"memory": 2**63}}, ValueError),
        ((0, 0, 0, 1, "o"), {"resource": {"memory": -(2**63) - 1}}, ValueError),
        ((0, 0, 0, 1, "o"), {"resource": {1: 1}}, TypeError),
        ((0, 0, 0, 1, "o"), {"resource": [("memory", 1)]}, TypeError),
        ((0, 0, 0, 1, "o"), {"message": "bad \ud800 surrogate"}, UnicodeEncodeError),
        ((0, 0, 0, 1, "\udfff"), {}, UnicodeEncodeError),
    ],
)
def test_invalid_events_raise_and_queue_nothing(native_event_store_factory, args, kwargs, error):
    store = native_event_store_factory(10)
    with pytest.raises(error):
        store.add(*args, **kwargs)
    assert store.flush(5)
    stats = store.stats()
    assert (stats["accepted"], stats["dropped"], store.next_id()) == (0, 0, 0)


def test_field_range_errors_name_the_field(native_event_store_factory):
    store = native_event_store_factory(10)
    with pytest.raises(ValueError, match="type 8"):
        store.add(8, 0, 0, 1, "o")
    with pytest.raises(ValueError, match="change_type 4"):
        store.add(0, 4, 0, 1, "o")
    with pytest.raises(ValueError, match="change_detail 1024"):
        store.add(0, 0, 1024, 1, "o")


def test_enum_members_and_mapping_types_are_accepted(native_event_store_factory):
    from collections.abc import Mapping as AbcMapping

    from pyscheduler.si.events import EventChangeDetail, EventChangeType, EventRecordType

    class Res(AbcMapping):  # a Mapping that is not a dict
        def __getitem__(self, key):
            return {"memory": 7}[key]

        def __iter__(self):
            return iter(["memory"])

        def __len__(self):
            return 1

    store = native_event_store_factory(10)
    assert store.add(EventRecordType.APP, EventChangeType.SET, EventChangeDetail.APP_RUNNING, 1, "a", resource=Res())
    assert store.add(APP, SET, APP_RUNNING, 2, "a", resource=MappingProxyType({"vcore": 1}))
    assert store.flush(5)
    assert store.ndjson(0, 2) == (
        b'{"type":2,"objectID":"a","timestampNano":1,"eventChangeType":1,"eventChangeDetail":206,'
        b'"resource":{"resources":{"memory":{"value":7}}}}\n'
        b'{"type":2,"objectID":"a","timestampNano":2,"eventChangeType":1,"eventChangeDetail":206,'
        b'"resource":{"resources":{"vcore":{"value":1}}}}\n'
    )


def test_timestamp_none_means_now(native_event_store_factory):
    store = native_event_store_factory(10)
    before = time.time_ns()
    assert store.add(APP, SET, APP_RUNNING, None, "a")
    assert store.add_many([(APP, SET, APP_RUNNING, None, "b")]) == 1
    after = time.time_ns()
    assert store.flush(5)
    stamps = [r[4] for r in store.records(0, 2)]
    assert all(before <= ts <= after for ts in stamps), (before, stamps, after)


# --------------------------------------------------------------------------------------------
# record: the scheduler's entry point (tracking flag, request events to a sink)
# --------------------------------------------------------------------------------------------


def test_record_routes_request_events_to_the_sink_and_the_rest_to_the_ring(native_event_store_factory):
    store = native_event_store_factory(10)
    assert store.record(REQUEST, NONE, 0, "alloc-0", "app-1", "why") is False  # no sink: not kept
    calls = []

    def sink(*args):
        calls.append(args)
        return True

    store.set_request_sink(sink)
    assert store.record(REQUEST, NONE, 0, "alloc-1", "app-1", "why", {"memory": 5}, 42) is True
    assert store.record(REQUEST, NONE, 0, "alloc-2") is True
    assert calls == [
        (1, 0, 0, "alloc-1", "app-1", "why", {"memory": 5}, 42),
        (1, 0, 0, "alloc-2", "", "", None, None),
    ]
    store.set_request_sink(lambda *args: False)
    assert store.record(REQUEST, NONE, 0, "alloc-3") is False  # the sink's answer is returned
    # REQUEST events with a change type, and every other type, are history.
    before = time.time_ns()
    assert store.record(REQUEST, SET, 101, "alloc-1", "app-1", timestamp_ns=3) is True
    assert store.record(APP, ADD, 203, "app-1") is True
    after = time.time_ns()
    assert store.flush(5)
    assert store.ndjson(0, 1) == (
        b'{"type":1,"objectID":"alloc-1","timestampNano":3,"eventChangeType":1,"eventChangeDetail":101,'
        b'"referenceID":"app-1","resource":{}}\n'
    )
    assert before <= store.records(1, 1)[0][4] <= after
    assert store.next_id() == 2  # no request/NONE event reached the ring
    store.set_request_sink(None)
    assert store.record(REQUEST, NONE, 0, "alloc-4") is False
    assert len(calls) == 2


def test_record_propagates_a_failing_sink_and_validates_history_events(native_event_store_factory):
    store = native_event_store_factory(10)

    def boom(*args):
        raise RuntimeError("sink failed")

    store.set_request_sink(boom)
    with pytest.raises(RuntimeError, match="sink failed"):
        store.record(REQUEST, NONE, 0, "alloc-1")
    with pytest.raises(ValueError):
        store.record(APP, 4, 0, "app-1")
    with pytest.raises(TypeError):
        store.record(APP, SET, APP_RUNNING, None)
    assert store.flush(5)
    assert (store.stats()["accepted"], store.next_id()) == (0, 0)


def test_tracking_off_makes_record_keep_nothing_but_not_add(native_event_store_factory):
    store = native_event_store_factory(10)
    calls = []
    store.set_request_sink(lambda *args: calls.append(args) or True)
    store.set_tracking(False)
    assert store.record(APP, ADD, 203, "app-1", timestamp_ns=1) is False
    assert store.record(REQUEST, NONE, 0, "alloc-1") is False
    assert calls == []
    assert store.add(APP, ADD, 203, 2, "app-2") is True  # `add` ignores the flag
    assert store.flush(5)
    assert [r[5] for r in store.records(0, 10)] == ["app-2"]
    stats = store.stats()
    assert (stats["accepted"], stats["dropped"]) == (1, 0)  # not offered, so not dropped either
    store.set_tracking(True)
    assert store.record(APP, ADD, 203, "app-3", timestamp_ns=3) is True
    assert store.record(REQUEST, NONE, 0, "alloc-2") is True
    assert store.flush(5)
    assert [r[5] for r in store.records(0, 10)] == ["app-2", "app-3"]
    assert len(calls) == 1


# --------------------------------------------------------------------------------------------
# add_many
# --------------------------------------------------------------------------------------------


def test_add_many_accepts_5_to_8_fields(native_event_store_factory):
    store = native_event_store_factory(10)
    n = store.add_many(
        iter(
            [
                (QUEUE, ADD, 0, 1, "root"),
                (QUEUE, ADD, 405, 2, "root.a", "app-1"),
                (APP, SET, 204, 3, "app-1", "", "accepted"),
                (APP, ADD, 200, 4, "app-1", "alloc-1", "", {"memory": 1}),
                (APP, ADD, 200, 5, "app-1", "alloc-2", "", None),
            ]
        )
    )
    assert n == 5
    assert store.flush(5)
    assert store.ndjson(0, 10) == (
        b'{"type":4,"objectID":"root","timestampNano":1,"eventChangeType":2,"resource":{}}\n'
        b'{"type":4,"objectID":"root.a","timestampNano":2,"eventChangeType":2,"eventChangeDetail":405,"referenceID":"app-1","resource":{}}\n'
        b'{"type":2,"objectID":"app-1","message":"accepted","timestampNano":3,"eventChangeType":1,"eventChangeDetail":204,"resource":{}}\n'
        b'{"type":2,"objectID":"app-1","timestampNano":4,"eventChangeType":2,"eventChangeDetail":200,"referenceID":"alloc-1","resource":{"resources":{"memory":{"value":1}}}}\n'
        b'{"type":2,"objectID":"app-1","timestampNano":5,"eventChangeType":2,"eventChangeDetail":200,"referenceID":"alloc-2","resource":{}}\n'
    )
    assert store.add_many([]) == 0


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        ((APP, SET, 1, 1), TypeError),
        ((APP, SET, 1, 1, "a", "", "", None, "extra"), TypeError),
        ([APP, SET, 1, 1, "a"], TypeError),
        ((APP, 9, 1, 1, "a"), ValueError),
        ((APP, SET, 1, 1, "a", "", "", {"m": 1.5}), TypeError),
        ((APP, SET, 1, 1, 5), TypeError),
    ],
)
def test_add_many_checks_every_tuple_before_queueing_any(native_event_store_factory, bad, error):
    store = native_event_store_factory(10)
    with pytest.raises(error):
        store.add_many([(APP, SET, 1, 1, "ok-1"), (APP, SET, 1, 2, "ok-2"), bad, (APP, SET, 1, 3, "ok-3")])
    assert store.flush(5)
    assert (store.stats()["accepted"], store.next_id()) == (0, 0)
    with pytest.raises(TypeError):
        store.add_many(42)


# --------------------------------------------------------------------------------------------
# intake: bounded, non-blocking, drops counted
# --------------------------------------------------------------------------------------------


def test_full_queue_drops_and_counts_without_blocking(native_event_store_factory):
    store = native_event_store_factory(1000, queue_capacity=1)
    offered = 0
    accepted = 0
    started = time.monotonic()
    for _ in range(20):  # bounded: a tiny queue overflows in the first round in practice
        events = [(APP, SET, APP_RUNNING, offered + i + 1, "app") for i in range(50_000)]
        accepted += store.add_many(events)
        offered += len(events)
        if store.stats()["dropped"]:
            break
    elapsed = time.monotonic() - started
    assert store.flush(5)
    stats = store.stats()
    assert stats["dropped"] > 0
    assert stats["accepted"] == accepted
    assert stats["accepted"] + stats["dropped"] == offered
    assert stats["stored"] == accepted
    assert store.next_id() == accepted
    # The events that made it are dense and in the order they were offered.
    stamps = [r[4] for r in store.records(store.lowest_id(), 1000)]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    assert elapsed < 5.0


def test_single_adds_to_a_full_queue_return_false_immediately(native_event_store_factory):
    store = native_event_store_factory(100, queue_capacity=1)
    true = false = 0
    started = time.monotonic()
    for i in range(200_000):
        if store.add(APP, SET, APP_RUNNING, i + 1, "a"):
            true += 1
        else:
            false += 1
            if false >= 10:
                break
    elapsed = time.monotonic() - started
    assert store.flush(5)
    stats = store.stats()
    assert false == stats["dropped"] > 0
    assert true == stats["accepted"] == stats["stored"] == store.next_id()
    assert elapsed < 5.0


# --------------------------------------------------------------------------------------------
# subscriptions
# --------------------------------------------------------------------------------------------


def test_subscribe_recent_replays_the_last_n_then_live(native_event_store_factory):
    store = native_event_store_factory(100)
    fill(store, 10)
    sub = store.subscribe_recent(3, 100)
    assert sub.next_id == 7
    fill(store, 5, first_ts=1010)
    got = read_all(sub)
    assert got == b"".join(node_line(1000 + i) + b"\n" for i in range(7, 15))
    assert sub.next_id == 15
    assert sub.next(10, 0.05) == b""


@pytest.mark.parametrize(("count", "first_id"), [(0, 10), (1, 9), (10, 0), (11, 0), (10**12, 0)])
def test_subscribe_recent_counts(native_event_store_factory, count, first_id):
    store = native_event_store_factory(100)
    fill(store, 10)
    sub = store.subscribe_recent(count, 100)
    assert sub.next_id == first_id
    assert timestamps(read_all(sub)) == [1000 + i for i in range(first_id, 10)]


def test_subscribe_recent_on_a_wrapped_ring_gets_only_held_events(native_event_store_factory):
    store = native_event_store_factory(20)
    fill(store, 25)
    sub = store.subscribe_recent(100, 100)
    assert sub.next_id == 5
    assert timestamps(read_all(sub)) == list(range(1005, 1025))


def test_subscription_chunks_match_store_ndjson_byte_for_byte(native_event_store_factory):
    store = native_event_store_factory(100)
    store.add(APP, ADD, 200, 1, "app-<1>", "alloc-1", "msg\n", {"memory": 0, "vcore": 2})
    fill(store, 9)
    sub = store.subscribe_recent(10, 100)
    chunks = [sub.next(max_events=4, timeout=1.0) for _ in range(3)]
    assert [c.count(b"\n") for c in chunks] == [4, 4, 2]
    assert b"".join(chunks) == store.ndjson(0, 10)
    sub2 = store.subscribe_recent(10, 100)
    assert sub2.next(max_events=0, timeout=1.0) == store.ndjson(0, 1)  # at least one event per read


def test_subscribe_from_resumes_and_rejects_ids_not_held(native_event_store_factory):
    store = native_event_store_factory(10)
    fill(store, 25)
    sub = store.subscribe_from(20, 100)
    assert sub.next_id == 20
    assert timestamps(read_all(sub)) == list(range(1020, 1025))
    fill(store, 1, first_ts=1025)
    assert timestamps(read_all(sub)) == [1025]
    for start in (3, 14, 27, 2**64 - 1):
        with pytest.raises(EventIdOutOfRangeError) as info:
            store.subscribe_from(start, 100)
        assert info.value.args[1:] == (start, 16, 25)
        assert f"event id {start} is not available" in info.value.args[0]
        assert isinstance(info.value, ValueError)
    sub_next = store.subscribe_from(26, 100)  # the next id to come is a valid resume point
    fill(store, 1, first_ts=1026)
    assert timestamps(read_all(sub_next)) == [1026]


def test_subscribe_from_on_an_empty_store(native_event_store_factory):
    store = native_event_store_factory(10)
    sub = store.subscribe_from(0, 10)
    with pytest.raises(EventIdOutOfRangeError) as info:
        store.subscribe_from(1, 10)
    assert info.value.args[1:] == (1, 0, 0)
    fill(store, 2)
    assert timestamps(read_all(sub)) == [1000, 1001]


def test_next_times_out_with_empty_bytes_after_about_the_timeout(native_event_store_factory):
    store = native_event_store_factory(10)
    sub = store.subscribe_recent(0, 10)
    started = time.monotonic()
    assert sub.next(10, 0.15) == b""
    elapsed = time.monotonic() - started
    assert 0.1 <= elapsed < 1.5
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            sub.next(10, bad)
    with pytest.raises(ValueError):
        store.flush(-1.0)


def test_close_ends_the_subscription(native_event_store_factory):
    store = native_event_store_factory(10)
    sub = store.subscribe_recent(0, 10)
    other = store.subscribe_recent(0, 10)
    assert store.stats()["subscribers"] == 2
    sub.close()
    assert sub.closed_reason == CLOSED_BY_CLIENT
    assert sub.next(10, 0.01) is None
    assert store.stats()["subscribers"] == 1
    fill(store, 1)
    assert sub.next(10, 0.01) is None
    assert timestamps(read_all(other)) == [1000]
    assert store.stats()["slow_closed"] == 0


def test_dropping_a_subscription_unregisters_it(native_event_store_factory):
    store = native_event_store_factory(10)
    sub = store.subscribe_recent(0, 10)
    assert store.stats()["subscribers"] == 1
    del sub
    gc.collect()
    assert store.stats()["subscribers"] == 0


def test_subscriber_falling_behind_by_more_than_its_capacity_is_closed(native_event_store_factory):
    store = native_event_store_factory(1000)
    slow = store.subscribe_recent(0, 5)
    fast = store.subscribe_recent(0, 5)
    fill(store, 5)  # exactly its capacity behind: still open
    assert slow.closed_reason is None
    assert timestamps(read_all(fast)) == list(range(1000, 1005))
    fill(store, 1, first_ts=1005)  # 6 behind: cut
    assert slow.closed_reason == CLOSED_SLOW
    assert slow.next(10, 0.01) is None
    assert timestamps(read_all(fast)) == [1005]
    assert fast.closed_reason is None
    stats = store.stats()
    assert (stats["subscribers"], stats["slow_closed"]) == (1, 1)


def test_a_subscriber_that_keeps_up_is_never_cut(native_event_store_factory):
    store = native_event_store_factory(1000)
    sub = store.subscribe_recent(0, 5)
    seen: list[int] = []
    for round_ in range(50):
        fill(store, 5, first_ts=1000 + 5 * round_)
        seen += timestamps(read_all(sub))
    assert seen == list(range(1000, 1250))
    assert sub.closed_reason is None


def test_history_does_not_count_as_lag(native_event_store_factory):
    store = native_event_store_factory(1000)
    fill(store, 50)
    sub = store.subscribe_recent(50, 10)
    fill(store, 10, first_ts=1050)  # 10 live events behind (plus 50 unread history): open
    assert sub.closed_reason is None
    assert timestamps(read_all(sub)) == list(range(1000, 1060))
    fill(store, 11, first_ts=1060)
    assert sub.closed_reason == CLOSED_SLOW


def test_subscriber_whose_next_event_was_overwritten_is_closed(native_event_store_factory):
    store = native_event_store_factory(10)
    fill(store, 10)
    sub = store.subscribe_recent(10, 1000)
    fill(store, 5, first_ts=1010)
    assert sub.next(100, 0.01) is None
    assert sub.closed_reason == CLOSED_OVERWRITTEN
    assert store.stats()["slow_closed"] == 1


def test_shrinking_the_ring_past_a_cursor_closes_the_subscriber(native_event_store_factory):
    store = native_event_store_factory(100)
    fill(store, 50)
    behind = store.subscribe_from(10, 1000)
    current = store.subscribe_from(45, 1000)
    store.resize(10)  # keeps ids 40..49
    assert behind.closed_reason == CLOSED_OVERWRITTEN
    assert behind.next(10, 0.01) is None
    assert current.closed_reason is None
    assert timestamps(read_all(current)) == list(range(1045, 1050))


def test_stop_stores_queued_events_and_closes_streams(native_event_store_factory):
    store = native_event_store_factory(100)
    sub = store.subscribe_recent(0, 100)
    for i in range(10):
        assert store.add(APP, SET, APP_RUNNING, i + 1, "a")
    store.stop()
    assert store.stopped is True
    assert len(store) == 10
    # Events stored before the stop are still delivered, then the close reason.
    assert timestamps(sub.next(100, 1.0)) == list(range(1, 11))
    assert sub.next(100, 0.01) is None
    assert sub.closed_reason == CLOSED_STOPPED
    assert store.add(APP, SET, APP_RUNNING, 99, "a") is False
    assert store.add_many([(APP, SET, APP_RUNNING, 99, "a")]) == 0
    stats = store.stats()
    assert (stats["accepted"], stats["dropped"], stats["stored"]) == (10, 2, 10)
    assert store.flush(0.1) is True
    with pytest.raises(EventSystemStoppedError):
        store.subscribe_recent(0, 1)
    with pytest.raises(RuntimeError):
        store.subscribe_from(10, 1)
    store.stop()  # idempotent
    # Reads still work after the stop.
    assert timestamps(store.ndjson(0, 100)) == list(range(1, 11))


def test_stats_counts_delivered_events(native_event_store_factory):
    store = native_event_store_factory(100)
    a = store.subscribe_recent(0, 100)
    b = store.subscribe_recent(0, 100)
    fill(store, 7)
    read_all(a)
    read_all(b)
    stats = store.stats()
    assert stats["delivered"] == 14
    assert (stats["capacity"], stats["len"], stats["queued"]) == (100, 7, 0)
    assert stats["memory_bytes"] > 0
