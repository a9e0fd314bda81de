"""Event throughput: benchmarks.md section 2 (the REST parts come later).

Measured, each next to a pure-Python comparison timed in the same run:

(a) ``EventStore.add`` from Python, one call per event, with pre-generated arguments (so
    the workload generator is not measured);
(b) ``EventStore.add_many`` with batches of several sizes;
(c) ``EventSystem.add``: the per-event cost the scheduling loop sees;
(d) serialisation: NDJSON over a full ring, and ``batch_body`` for 10,000 events (plus the
    time to build one such body).

``add`` never blocks and drops events when its queue is full, and a dropped event is far
cheaper than a stored one, so the producer is paused (untimed) with ``flush()`` between
batches that are smaller than the queue: every timed ``add`` is a real one. The consumer
thread still runs concurrently with the timed calls, as it does in production.
"""

from __future__ import annotations

import gc
import json
import statistics
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any, Final, Protocol

from benchmarks.events_memory import dict_record, native_store_factory
from benchmarks.machine import Progress, fmt_count, fmt_rate, fmt_ratio, format_table
from benchmarks.workload import DEFAULT_SEED, EventArgs, Mix, Resource, chunked, feed_store, generate_events

DEFAULT_EVENTS: Final = 1_000_000
QUICK_EVENTS: Final = 20_000
RING_CAPACITY: Final = 100_000
"""YuniKorn's default ring buffer capacity (event.ringBufferCapacity)."""
QUEUE_CAPACITY: Final = 100_000
PAUSE_EVERY: Final = 50_000
"""Events added between two untimed flushes: half the queue, so nothing is ever dropped."""
BATCH_SIZES: Final = (100, 1_000, 10_000)
BATCH_BODY_COUNT: Final = 10_000
"""The REST batch response size (event.RESTResponseSize default)."""
ADD_TARGET_NS: Final = 1_000.0
NDJSON_TARGET_PER_S: Final = 5_000_000.0
#: Events per NDJSON chunk when a stream replays history (the REST layer reads in chunks).
STREAM_CHUNK: Final = 1_000

FacadeArgs = tuple[Any, Any, Any, str, str, str, Resource | None]
"""``EventSystem.add`` arguments: the event without its timestamp."""


class StoreLike(Protocol):
    """The part of ``pyscheduler._native.EventStore`` this benchmark uses."""

    def add(
        self,
        type: int,
        change_type: int,
        change_detail: int,
        timestamp_ns: int,
        object_id: str,
        reference_id: str = "",
        message: str = "",
        resource: Resource | None = None,
    ) -> bool: ...

    def add_many(self, events: list[EventArgs]) -> int: ...

    def flush(self, timeout: float | None = None) -> bool: ...

    def stats(self) -> dict[str, int]: ...

    def lowest_id(self) -> int: ...

    def __len__(self) -> int: ...

    def ndjson(self, start: int, count: int) -> bytes: ...

    def batch_body(self, instance_uuid: str, start: int, count: int) -> bytes: ...


StoreFactory = Callable[..., StoreLike]


class EventSystemLike(Protocol):
    """The part of ``pyscheduler.events.EventSystem`` this benchmark uses."""

    def start(self) -> None: ...

    def add(self, *args: Any) -> bool: ...

    def flush(self) -> Any: ...

    def stop(self) -> None: ...


# --- the pure-Python comparisons --------------------------------------------------------


class PyDequeStore:
    """Pure-Python comparison store: each event becomes a dict in a bounded deque."""

    def __init__(self, capacity: int = RING_CAPACITY) -> None:
        self._ring: deque[dict[str, Any]] = deque(maxlen=capacity)

    def add(
        self,
        type: int,
        change_type: int,
        change_detail: int,
        timestamp_ns: int,
        object_id: str,
        reference_id: str = "",
        message: str = "",
        resource: Resource | None = None,
    ) -> bool:
        """Store one event, as a pure-Python event store would."""
        self._ring.append(
            {
                "type": type,
                "objectID": object_id,
                "message": message,
                "timestampNano": timestamp_ns,
                "eventChangeType": change_type,
                "eventChangeDetail": change_detail,
                "referenceID": reference_id,
                "resource": None if resource is None else dict(resource),
            }
        )
        return True

    def add_many(self, events: list[EventArgs]) -> int:
        """Store a batch of events."""
        self._ring.extend([dict_record(e) for e in events])
        return len(events)

    def add_now(
        self,
        type: int,
        change_type: int,
        change_detail: int,
        object_id: str,
        reference_id: str = "",
        message: str = "",
        resource: Resource | None = None,
    ) -> bool:
        """Stamp and store one event: the pure-Python counterpart of ``EventSystem.add``."""
        return self.add(type, change_type, change_detail, time.time_ns(), object_id, reference_id, message, resource)

    def flush(self, timeout: float | None = None) -> bool:
        """Nothing is queued: every event is stored by ``add`` itself."""
        return True


def wire_record(event: EventArgs) -> dict[str, Any]:
    """Return the event as YuniKorn's EventRecord JSON object (events.md: omitempty keys)."""
    type_, change, detail, ts, object_id, ref, message, resource = event
    record: dict[str, Any] = {}
    for key, value in (
        ("type", type_),
        ("objectID", object_id),
        ("message", message),
        ("timestampNano", ts),
        ("eventChangeType", change),
        ("eventChangeDetail", detail),
        ("referenceID", ref),
    ):
        if value:
            record[key] = value
    quantities = {name: ({"value": v} if v else {}) for name, v in sorted((resource or {}).items())}
    record["resource"] = {"resources": quantities} if quantities else {}
    return record


_compact = json.JSONEncoder(separators=(",", ":")).encode


def py_ndjson(records: Sequence[dict[str, Any]]) -> bytes:
    """Pure-Python NDJSON of wire records (the comparison for ``EventStore.ndjson``)."""
    return ("\n".join(map(_compact, records)) + "\n").encode()


def py_batch_body(instance_uuid: str, lowest: int, highest: int, records: Sequence[dict[str, Any]]) -> bytes:
    """Pure-Python batch body (the comparison for ``EventStore.batch_body``)."""
    body = {"InstanceUUID": instance_uuid, "LowestID": lowest, "HighestID": highest, "EventRecords": list(records)}
    return _compact(body).encode()


# --- results ------------------------------------------------------------------------------


@dataclass
class ThroughputRow:
    """One measured operation, with its pure-Python comparison and target."""

    section: str
    operation: str
    events: int
    seconds: float
    events_per_second: float
    ns_per_event: float
    python_ns_per_event: float | None = None
    speedup_vs_python: float | None = None
    target: str | None = None
    target_met: bool | None = None
    rejected: int = 0
    notes: str = ""


@dataclass
class ThroughputReport:
    """Everything the event-throughput benchmark found."""

    events: int
    repeats: int
    ring_capacity: int
    rows: list[ThroughputRow] = field(default_factory=list)
    batch_body_ms: float | None = None
    python_batch_body_ms: float | None = None
    warnings: list[str] = field(default_factory=list)
    not_measured: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Return the report as JSON-serialisable data."""
        return asdict(self)

    def format(self) -> str:
        """Return the report as markdown."""
        return format_throughput_report(self)


def make_row(
    section: str,
    operation: str,
    events: int,
    seconds: float,
    *,
    python_seconds: float | None = None,
    target: tuple[str, bool] | None = None,
    rejected: int = 0,
    notes: str = "",
) -> ThroughputRow:
    """Build a row from a timing of ``events`` events (and the comparison's timing)."""
    ns = seconds * 1e9 / events if events else 0.0
    python_ns = python_seconds * 1e9 / events if python_seconds is not None and events else None
    return ThroughputRow(
        section=section,
        operation=operation,
        events=events,
        seconds=seconds,
        events_per_second=events / seconds if seconds > 0 else 0.0,
        ns_per_event=ns,
        python_ns_per_event=python_ns,
        speedup_vs_python=python_ns / ns if python_ns is not None and ns > 0 else None,
        target=target[0] if target else None,
        target_met=target[1] if target else None,
        rejected=rejected,
        notes=notes,
    )


def _add_target(ns: float) -> tuple[str, bool]:
    return "< 1 µs/event", ns < ADD_TARGET_NS


# --- timing helpers -----------------------------------------------------------------------


@dataclass
class CallTiming:
    """Time spent in the producer's calls, and in calls plus draining into the ring."""

    producer_s: float
    sustained_s: float
    rejected: int


def time_calls(
    add: Callable[..., bool], batches: Sequence[Sequence[tuple[Any, ...]]], flush: Callable[[], Any]
) -> CallTiming:
    """Call ``add(*args)`` once per event, flushing (untimed for the producer) after each batch."""
    producer = 0
    rejected = 0
    clock = time.perf_counter_ns
    started = clock()
    for batch in batches:
        t0 = clock()
        for args in batch:
            if not add(*args):
                rejected += 1
        producer += clock() - t0
        flush()
    return CallTiming(producer / 1e9, (clock() - started) / 1e9, rejected)


def time_batches(
    add_many: Callable[[list[EventArgs]], int],
    batches: Sequence[list[EventArgs]],
    flush: Callable[[], Any],
    pause_every: int,
) -> CallTiming:
    """Call ``add_many`` per batch; flush (untimed for the producer) before the queue could fill."""
    producer = 0
    rejected = 0
    pending = 0
    clock = time.perf_counter_ns
    started = clock()
    for batch in batches:
        if pending + len(batch) > pause_every:
            flush()
            pending = 0
        t0 = clock()
        taken = add_many(batch)
        producer += clock() - t0
        rejected += len(batch) - taken
        pending += taken
    flush()
    return CallTiming(producer / 1e9, (clock() - started) / 1e9, rejected)


def close(store: object) -> None:
    """Stop a store's consumer thread now rather than whenever it is collected."""
    stop = getattr(store, "stop", None)
    if callable(stop):
        stop()


def _median_timing(runs: Sequence[CallTiming]) -> CallTiming:
    return CallTiming(
        statistics.median(r.producer_s for r in runs),
        statistics.median(r.sustained_s for r in runs),
        max(r.rejected for r in runs),
    )


def _repeat(fn: Callable[[], CallTiming], repeats: int) -> CallTiming:
    return _median_timing([fn() for _ in range(repeats)])


def _median_seconds(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


# --- the four measurements ------------------------------------------------------------------


def bench_add(factory: StoreFactory, args: list[EventArgs], repeats: int) -> list[ThroughputRow]:
    """(a) ``EventStore.add``, one call per event, against ``PyDequeStore.add``."""
    batches = list(chunked(args, PAUSE_EVERY))

    def rust() -> CallTiming:
        store = factory(capacity=RING_CAPACITY, queue_capacity=QUEUE_CAPACITY)
        try:
            return time_calls(store.add, batches, store.flush)
        finally:
            close(store)

    def python() -> CallTiming:
        store = PyDequeStore(RING_CAPACITY)
        return time_calls(store.add, batches, store.flush)

    r, p = _repeat(rust, repeats), _repeat(python, repeats)
    n = len(args)
    producer = make_row(
        "add",
        "EventStore.add, 1 call/event (producer time)",
        n,
        r.producer_s,
        python_seconds=p.producer_s,
        target=_add_target(r.producer_s * 1e9 / n),
        rejected=r.rejected,
        notes="pure Python: dict appended to a deque(maxlen)",
    )
    sustained = make_row(
        "add",
        "EventStore.add + drain into the ring (sustained)",
        n,
        r.sustained_s,
        python_seconds=p.sustained_s,
        rejected=r.rejected,
        notes="includes flush(): consumer interning + ring",
    )
    return [producer, sustained]


def bench_add_many(
    factory: StoreFactory, args: list[EventArgs], repeats: int, sizes: Sequence[int] = BATCH_SIZES
) -> list[ThroughputRow]:
    """(b) ``EventStore.add_many`` with batches of each size, against ``PyDequeStore.add_many``."""
    return [_bench_batch_size(factory, args, size, repeats) for size in sizes]


def _bench_batch_size(factory: StoreFactory, args: list[EventArgs], size: int, repeats: int) -> ThroughputRow:
    batches = list(chunked(args, size))

    def rust() -> CallTiming:
        store = factory(capacity=RING_CAPACITY, queue_capacity=QUEUE_CAPACITY)
        try:
            return time_batches(store.add_many, batches, store.flush, PAUSE_EVERY)
        finally:
            close(store)

    def python() -> CallTiming:
        store = PyDequeStore(RING_CAPACITY)
        return time_batches(store.add_many, batches, store.flush, PAUSE_EVERY)

    r, p = _repeat(rust, repeats), _repeat(python, repeats)
    return make_row(
        "add_many",
        f"EventStore.add_many, batches of {fmt_count(size)} (producer time)",
        len(args),
        r.producer_s,
        python_seconds=p.producer_s,
        rejected=r.rejected,
        notes=f"sustained incl. drain: {fmt_rate(len(args) / r.sustained_s if r.sustained_s else None)}",
    )


def facade_args(args: Sequence[EventArgs]) -> tuple[list[FacadeArgs], str]:
    """Return ``EventSystem.add`` arguments (no timestamp), with enum members if possible.

    The scheduling loop passes the events package's enum members, not bare ints, so the
    benchmark does too when they exist.
    """
    try:
        from pyscheduler.events import EventChangeDetail, EventChangeType, EventRecordType

        converted = [
            (EventRecordType(t), EventChangeType(c), EventChangeDetail(d), o, r, m, res)
            for t, c, d, _, o, r, m, res in args
        ]
        return converted, "enum members"
    except (ImportError, ValueError, TypeError):
        return [(t, c, d, o, r, m, res) for t, c, d, _, o, r, m, res in args], "plain ints"


def default_event_system_factory() -> EventSystemLike:
    """Return a new ``pyscheduler.events.EventSystem`` (imported late: it may not exist yet)."""
    from pyscheduler.events import EventSystem

    return EventSystem()


def bench_event_system(
    calls: list[FacadeArgs],
    kind: str,
    repeats: int,
    factory: Callable[[], EventSystemLike] = default_event_system_factory,
) -> list[ThroughputRow]:
    """(c) ``EventSystem.add``: what one event costs the scheduling loop.

    ``calls`` come from :func:`facade_args`; ``kind`` says whether they hold enum members.
    """
    batches = list(chunked(calls, PAUSE_EVERY))  # type: ignore[arg-type]

    def facade() -> CallTiming:
        system = factory()
        system.start()
        try:
            return time_calls(system.add, batches, system.flush)
        finally:
            system.stop()

    def python() -> CallTiming:
        store = PyDequeStore(RING_CAPACITY)
        return time_calls(store.add_now, batches, store.flush)

    r, p = _repeat(facade, repeats), _repeat(python, repeats)
    n = len(calls)
    return [
        make_row(
            "EventSystem.add",
            f"EventSystem.add, 1 call/event ({kind})",
            n,
            r.producer_s,
            python_seconds=p.producer_s,
            target=_add_target(r.producer_s * 1e9 / n),
            rejected=r.rejected,
            notes="pure Python: time_ns() + dict appended to a deque",
        )
    ]


@dataclass
class SerialisationResult:
    """Rows of (d), the batch-body build time, and what the sanity checks found."""

    rows: list[ThroughputRow]
    batch_body_ms: float
    python_batch_body_ms: float
    warnings: list[str]


def _check_ndjson(body: bytes, events: Sequence[EventArgs]) -> list[str]:
    lines = body.decode().splitlines()
    problems = []
    if len(lines) != len(events):
        problems.append(f"ndjson: {len(lines)} lines for {len(events)} events")
    if lines and json.loads(lines[0]) != wire_record(events[0]):
        problems.append(f"ndjson: first record {lines[0]} differs from the expected {_compact(wire_record(events[0]))}")
    return problems


def _check_batch(body: bytes, instance: str, start: int, count: int, events: Sequence[EventArgs]) -> list[str]:
    doc = json.loads(body)
    problems = []
    if doc.get("InstanceUUID") != instance:
        problems.append(f"batch_body: InstanceUUID {doc.get('InstanceUUID')!r}, expected {instance!r}")
    records = doc.get("EventRecords") or []
    if len(records) != count:
        problems.append(f"batch_body: {len(records)} EventRecords, expected {count}")
    if records and records[0] != wire_record(events[start]):
        expected = _compact(wire_record(events[start]))
        problems.append(f"batch_body: record {start} is {_compact(records[0])}, expected {expected}")
    return problems


def bench_serialisation(
    factory: StoreFactory, events: list[EventArgs], repeats: int, batch_repeats: int
) -> SerialisationResult:
    """(d) NDJSON over a full ring and 10k-event batch bodies, against ``json`` on dicts.

    The pure-Python side serialises ready-made wire dicts, which favours it: a real
    pure-Python store would also have to build them.
    """
    ring = len(events)
    store = factory(capacity=ring, queue_capacity=QUEUE_CAPACITY)
    feed_store(store, events, queue_capacity=QUEUE_CAPACITY)
    lowest, count = store.lowest_id(), len(store)
    warnings = [] if count == ring else [f"ring holds {count} events, expected {ring}"]
    records = [wire_record(e) for e in events]
    instance = str(uuid.uuid4())
    per_body = min(BATCH_BODY_COUNT, ring)
    span = max(count - per_body, 1)
    starts = [(i * 7_919) % span for i in range(batch_repeats)]  # spread over the ring

    # Order matters: freeing one large output raises glibc's dynamic mmap threshold, after
    # which smaller bodies no longer get fresh (page-faulting) memory. Batch bodies are
    # therefore timed before any full-ring NDJSON is built, and the checks come last.
    highest = lowest + count - 1
    batch = statistics.median(
        _median_seconds(partial(store.batch_body, instance, lowest + s, per_body), 1) for s in starts
    )
    batch_py = statistics.median(
        _median_seconds(partial(py_batch_body, instance, lowest, highest, records[s : s + per_body]), 1) for s in starts
    )
    nd = _median_seconds(lambda: store.ndjson(lowest, count), repeats)
    nd_py = _median_seconds(lambda: py_ndjson(records), repeats)
    # Streams replay history in chunks of at most STREAM_CHUNK events: the real access pattern.
    chunk_starts = range(lowest, lowest + count, STREAM_CHUNK)
    nd_chunked = _median_seconds(lambda: [store.ndjson(s, STREAM_CHUNK) for s in chunk_starts], repeats)

    first_body = store.batch_body(instance, lowest + starts[0], per_body)
    warnings += _check_batch(first_body, instance, starts[0], per_body, events)
    warnings += _check_ndjson(store.ndjson(lowest, count), events[:count])
    close(store)
    nd_rate = count / nd if nd > 0 else 0.0
    nd_chunked_rate = count / nd_chunked if nd_chunked > 0 else 0.0
    rows = [
        make_row(
            "serialise",
            f"EventStore.ndjson over a full {fmt_count(count)} ring",
            count,
            nd,
            python_seconds=nd_py,
            target=("≥ 5 M events/s", nd_rate >= NDJSON_TARGET_PER_S),
            notes="one call, one ~25 MB bytes object (fresh memory page-faults)",
        ),
        make_row(
            "serialise",
            f"EventStore.ndjson in {fmt_count(STREAM_CHUNK)}-event chunks over the ring",
            count,
            nd_chunked,
            python_seconds=nd_py,
            target=("≥ 5 M events/s", nd_chunked_rate >= NDJSON_TARGET_PER_S),
            notes="the chunk size a stream replays history in",
        ),
        make_row(
            "serialise",
            f"EventStore.batch_body, count={fmt_count(per_body)}",
            per_body,
            batch,
            python_seconds=batch_py,
            notes=f"median of {len(starts)} bodies at different starts",
        ),
    ]
    return SerialisationResult(rows, batch * 1e3, batch_py * 1e3, warnings)


# --- the family entry point -------------------------------------------------------------------


def run(
    *,
    events: int = DEFAULT_EVENTS,
    ring_capacity: int = RING_CAPACITY,
    repeats: int = 3,
    batch_repeats: int = 20,
    seed: int = DEFAULT_SEED,
    mix: Mix = "normal",
    progress: Callable[[str], None] | None = None,
    store_factory: StoreFactory | None = None,
    event_system_factory: Callable[[], EventSystemLike] | None = None,
) -> ThroughputReport:
    """Run the event-throughput benchmark (a) to (d) in this process."""
    if progress is None:
        progress = Progress()
    ring_capacity = min(ring_capacity, events)
    report = ThroughputReport(events=events, repeats=repeats, ring_capacity=ring_capacity)
    progress(f"events-throughput: generating {fmt_count(events)} events (not timed)")
    args = list(generate_events(events, seed=seed, mix=mix))
    calls = facade_args(args)
    try:
        factory = store_factory if store_factory is not None else native_store_factory()
    except ImportError as exc:
        report.failures.append(f"pyscheduler._native is not importable: {exc}")
        return report
    # The pre-generated arguments are an artifact of the benchmark: a million tracked
    # tuples would make every full collection during the timed loops scan them.
    gc.collect()
    gc.freeze()
    try:
        _measure_all(report, factory, args, calls, repeats, batch_repeats, progress, event_system_factory)
    finally:
        gc.unfreeze()
    for row in report.rows:
        if row.rejected:
            report.warnings.append(f"{row.operation}: {row.rejected} events rejected (queue full?)")
    return report


def _measure_all(
    report: ThroughputReport,
    factory: StoreFactory,
    args: list[EventArgs],
    calls: tuple[list[FacadeArgs], str],
    repeats: int,
    batch_repeats: int,
    progress: Callable[[str], None],
    event_system_factory: Callable[[], EventSystemLike] | None,
) -> None:
    events, ring_capacity = report.events, report.ring_capacity
    progress(f"events-throughput (a): EventStore.add x {fmt_count(events)}, {repeats} repeats, + pure Python")
    report.rows += bench_add(factory, args, repeats)
    progress("events-throughput (b): EventStore.add_many batches + pure Python")
    report.rows += bench_add_many(factory, args, repeats)
    progress("events-throughput (c): EventSystem.add + pure Python")
    try:
        es_factory = event_system_factory if event_system_factory is not None else default_event_system_factory
        report.rows += bench_event_system(calls[0], calls[1], repeats, es_factory)
    except ImportError as exc:
        report.not_measured.append(f"EventSystem.add: pyscheduler.events is not importable ({exc})")
        report.failures.append(f"pyscheduler.events is not importable: {exc}")
    progress(f"events-throughput (d): serialisation of a {fmt_count(ring_capacity)} ring + pure Python json")
    # The ring is filled with the first events of the same workload (the CLI keeps the
    # ring no larger than the event count).
    ring_events = args[:ring_capacity]
    ser = bench_serialisation(factory, ring_events, repeats=max(repeats, 3), batch_repeats=batch_repeats)
    report.rows += ser.rows
    report.batch_body_ms, report.python_batch_body_ms = ser.batch_body_ms, ser.python_batch_body_ms
    report.warnings += ser.warnings


def _target_cell(row: ThroughputRow) -> str:
    if row.target is None:
        return ""
    return f"{row.target}: {'met' if row.target_met else 'NOT met'}"


def _ns(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def format_throughput_report(report: ThroughputReport) -> str:
    """Return the report as markdown."""
    parts = [
        "## Event throughput (benchmarks.md section 2, without REST)",
        "",
        f"{fmt_count(report.events)} pre-generated workload events; medians of {report.repeats} runs; "
        f"ring capacity {fmt_count(report.ring_capacity)}, queue {fmt_count(QUEUE_CAPACITY)}; producer paused "
        f"(untimed flush) every {fmt_count(PAUSE_EVERY)} events so nothing is dropped. Pure-Python figures "
        "include the cyclic GC's work on their dicts; the pre-generated arguments are frozen out of it. "
        "Multi-MB outputs depend on glibc malloc's state (freshly mmap'd buffers page-fault), so serialisation "
        "figures vary with what the process did before; the header lists any MALLOC_* settings.",
        "",
        format_table(
            ["operation", "events/s", "ns/event", "pure Python ns/event", "speed-up", "target", "notes"],
            [
                [
                    r.operation,
                    fmt_rate(r.events_per_second),
                    _ns(r.ns_per_event),
                    _ns(r.python_ns_per_event),
                    fmt_ratio(r.speedup_vs_python),
                    _target_cell(r),
                    r.notes,
                ]
                for r in report.rows
            ],
            align="lrrrrll",
        ),
    ]
    if report.batch_body_ms is not None and report.python_batch_body_ms is not None:
        ratio = fmt_ratio(report.python_batch_body_ms / report.batch_body_ms if report.batch_body_ms else None)
        parts += [
            "",
            f"One {fmt_count(BATCH_BODY_COUNT)}-event batch body: {report.batch_body_ms:.2f} ms "
            f"(pure Python json.dumps of ready-made dicts: {report.python_batch_body_ms:.2f} ms, {ratio}).",
        ]
    sections = (("Not measured", report.not_measured), ("WARNINGS", report.warnings), ("FAILURES", report.failures))
    for title, items in sections:
        if items:
            parts += ["", f"{title}:", *(f"- {item}" for item in items)]
    return "\n".join(parts)
