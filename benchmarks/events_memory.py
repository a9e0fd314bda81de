"""Event store memory: benchmarks.md section 1.

For each size N and each layout, a FRESH Python process measures how much its resident
memory (RSS) grows from just before the container is created to after N workload events
are stored in it (a ring of capacity N, so it ends full) and, for the Rust store, after
``flush()`` has returned. The increase divided by N is the cost of an event.

Layouts:

* ``rust``: ``pyscheduler._native.EventStore`` (interned strings, compact records): the
  one that matters; the target is at most 40 bytes/event at 9M.
* ``py-dicts``: a preallocated Python list of dicts with YuniKorn's keys, the resource as a
  nested dict (one per event, as the scheduler builds one per event).
* ``py-tuples``: the same, as a list of tuples.
* ``control``: the workload generator alone, nothing stored: what the measurement
  harness itself leaves resident, to read the other rows against.

A fresh process per (layout, N) keeps one run's freed-but-retained memory out of the
next. The child is ``python -m benchmarks.events_memory --child '<json>'``; it
prints one JSON result line on stdout and progress on stderr.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

from benchmarks.machine import Progress, fmt_count, fmt_ratio, format_table
from benchmarks.workload import DEFAULT_SEED, EventArgs, Mix, chunked, feed_store, generate_events

MIB: Final = 1 << 20
DEFAULT_SIZES: Final = (1_000_000, 3_000_000, 9_000_000)
QUICK_SIZES: Final = (50_000,)
DEFAULT_PYTHON_MAX: Final = 3_000_000
DEFAULT_QUEUE_CAPACITY: Final = 100_000
"""YuniKorn's event channel size (DefaultEventChannelSize): the production queue bound."""
CHUNK_SIZE: Final = 10_000
TARGET_BYTES_PER_EVENT: Final = 40.0
TARGET_EVENTS: Final = 9_000_000
CHILD_FLAG: Final = "--child"


@dataclass(frozen=True)
class Layout:
    """One way of holding the events in memory."""

    name: str
    description: str
    is_python: bool


LAYOUTS: Final = {
    layout.name: layout
    for layout in (
        Layout("rust", "Rust EventStore (interned, compact ring)", is_python=False),
        Layout("py-dicts", "Python list of dicts (YuniKorn keys, nested resource dict)", is_python=True),
        Layout("py-tuples", "Python list of tuples (resource dict)", is_python=True),
        Layout("control", "control: workload generator only, nothing stored", is_python=False),
    )
}

# The seed's Go figures (historical-usage-tracking.md): increase of the runtime's "Sys"
# metric, MiB, after storing 3M / 6M / 9M events.
GO_REFERENCE_MIB: Final[dict[str, dict[int, float]]] = {
    "Go []*si.EventRecord (what YuniKorn ships)": {3_000_000: 805, 6_000_000: 1595, 9_000_000: 2380},
    "Go []si.EventRecord": {3_000_000: 437, 6_000_000: 856, 9_000_000: 1280},
    "Go []internalRecord + interning (seed's best)": {3_000_000: 211, 6_000_000: 404, 9_000_000: 593},
}
GO_SHIPPED: Final = "Go []*si.EventRecord (what YuniKorn ships)"
GO_BEST: Final = "Go []internalRecord + interning (seed's best)"


# --- measurement in the child process ----------------------------------------------------


@dataclass(frozen=True)
class MemoryParams:
    """What one child process measures."""

    layout: str
    events: int
    seed: int = DEFAULT_SEED
    mix: Mix = "normal"
    queue_capacity: int = DEFAULT_QUEUE_CAPACITY
    chunk_size: int = CHUNK_SIZE


@dataclass
class MemoryRow:
    """The result of one (layout, N) measurement."""

    layout: str
    events: int
    stored: int
    rss_before_bytes: int
    rss_empty_bytes: int
    rss_after_bytes: int
    peak_rss_bytes: int
    increase_bytes: int
    bytes_per_event: float
    seconds: float
    rejected: int = 0
    interned_strings: int | None = None
    store_memory_bytes: int | None = None
    """What the store itself reports (``stats()["memory_bytes"]``), to set beside RSS."""
    store_stats: dict[str, int] | None = None
    #: The job mix of the workload events ("normal", "gang" or a fraction).
    mix: str = "normal"


class EventStoreLike(Protocol):
    """The part of ``pyscheduler._native.EventStore`` the memory benchmark uses."""

    def add_many(self, events: list[EventArgs]) -> int: ...

    def flush(self, timeout: float | None = None) -> bool: ...

    def stats(self) -> dict[str, int]: ...

    def __len__(self) -> int: ...


StoreFactory = Callable[..., EventStoreLike]


def rss_bytes() -> int:
    """Return this process's resident set size (``/proc/self/statm``)."""
    with open("/proc/self/statm", encoding="ascii") as f:
        resident_pages = int(f.read().split()[1])
    return resident_pages * os.sysconf("SC_PAGE_SIZE")


def peak_rss_bytes() -> int:
    """Return this process's peak resident set size (``VmHWM``), or 0 if unknown."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def _settled_rss() -> int:
    gc.collect()
    return rss_bytes()


def native_store_factory() -> Callable[..., Any]:
    """Return the real ``EventStore`` class (imported late: the module may not be built)."""
    from pyscheduler._native import EventStore

    store_class: Callable[..., Any] = EventStore
    return store_class


def dict_record(event: EventArgs) -> dict[str, Any]:
    """Return the event as a pure-Python store would keep it: a dict with YuniKorn's keys."""
    type_, change, detail, ts, object_id, ref, message, resource = event
    return {
        "type": type_,
        "objectID": object_id,
        "message": message,
        "timestampNano": ts,
        "eventChangeType": change,
        "eventChangeDetail": detail,
        "referenceID": ref,
        "resource": None if resource is None else dict(resource),
    }


def tuple_record(event: EventArgs) -> EventArgs:
    """Return the event as a tuple that owns its resource dict."""
    resource = event[7]
    if resource is None:
        return event
    return (event[0], event[1], event[2], event[3], event[4], event[5], event[6], dict(resource))


PYTHON_RECORDS: Final[dict[str, Callable[[EventArgs], object]]] = {
    "py-dicts": dict_record,
    "py-tuples": tuple_record,
}


def _progress_every(n: int, label: str, progress: Callable[[str], None] | None) -> Callable[[int], None]:
    # About ten progress lines per run, whatever its size.
    step = max(n // 10, 1)
    next_report = [step]
    started = time.monotonic()

    def report(done: int) -> None:
        if progress is not None and done >= next_report[0] and done < n:
            progress(f"{label}: {fmt_count(done)}/{fmt_count(n)} events ({time.monotonic() - started:.1f}s)")
            next_report[0] = (done // step + 1) * step

    return report


def measure_in_process(
    params: MemoryParams,
    *,
    store_factory: StoreFactory | None = None,
    progress: Callable[[str], None] | None = None,
) -> MemoryRow:
    """Measure one layout in THIS process (the child's job); see the module docstring."""
    if params.layout not in LAYOUTS:
        raise ValueError(f"unknown layout {params.layout!r}; known: {', '.join(LAYOUTS)}")
    events = generate_events(params.events, seed=params.seed, mix=params.mix)
    on_chunk = _progress_every(params.events, f"{params.layout} {fmt_count(params.events)}", progress)
    if params.layout == "rust":
        factory = store_factory if store_factory is not None else native_store_factory()
        return _measure_store(params, factory, events, on_chunk)
    if params.layout == "control":
        return _measure_python(params, events, on_chunk, record=None)
    return _measure_python(params, events, on_chunk, record=PYTHON_RECORDS[params.layout])


def _measure_store(
    params: MemoryParams, factory: StoreFactory, events: Iterator[EventArgs], on_chunk: Callable[[int], None]
) -> MemoryRow:
    gc.disable()  # no cycles are created; collections would only slow the run down
    started = time.perf_counter()
    before = _settled_rss()
    store = factory(capacity=params.events, queue_capacity=params.queue_capacity)
    empty = rss_bytes()
    _, rejected = feed_store(
        store, events, queue_capacity=params.queue_capacity, chunk_size=params.chunk_size, on_chunk=on_chunk
    )
    after = _settled_rss()
    seconds = time.perf_counter() - started
    stats = {str(k): int(v) for k, v in store.stats().items()}
    stored = len(store)
    gc.enable()
    return _measured_row(
        params,
        stored,
        (before, empty, after),
        seconds,
        rejected=rejected,
        interned_strings=stats.get("interned_strings"),
        store_memory_bytes=stats.get("memory_bytes"),
        store_stats=stats,
    )


def _measured_row(params: MemoryParams, stored: int, rss: tuple[int, int, int], seconds: float, **extra: Any) -> MemoryRow:
    """A result row from the RSS before, with the empty container, and after storing."""
    before, empty, after = rss
    return MemoryRow(
        layout=params.layout,
        events=params.events,
        stored=stored,
        rss_before_bytes=before,
        rss_empty_bytes=empty,
        rss_after_bytes=after,
        peak_rss_bytes=peak_rss_bytes(),
        increase_bytes=after - before,
        bytes_per_event=(after - before) / params.events if params.events else 0.0,
        seconds=seconds,
        mix=str(params.mix),
        **extra,
    )


def _measure_python(
    params: MemoryParams,
    events: Iterator[EventArgs],
    on_chunk: Callable[[int], None],
    record: Callable[[EventArgs], object] | None,
) -> MemoryRow:
    gc.disable()  # millions of tracked dicts would make every full collection slower
    started = time.perf_counter()
    before = _settled_rss()
    # Preallocated like the seed's Go test ("the slice was created once, then an index
    # variable was increased"), so the N slots are part of the measured increase.
    ring: list[object] | None = [None] * params.events if record is not None else None
    empty = rss_bytes()
    done = 0
    chunk: list[EventArgs] = []
    for chunk in chunked(events, params.chunk_size):
        if ring is not None and record is not None:
            for event in chunk:
                ring[done] = record(event)
                done += 1
        else:
            done += len(chunk)
        on_chunk(done)
    chunk = []  # the last batch must not stay alive into the measurement
    after = _settled_rss()
    seconds = time.perf_counter() - started
    stored = done if ring is not None else 0
    gc.enable()
    return _measured_row(params, stored, (before, empty, after), seconds)


def child_main(argv: Sequence[str]) -> int:
    """Entry point of the child process: measure, print the row as one JSON line."""
    params = MemoryParams(**json.loads(argv[0]))
    progress = Progress(stream=sys.stderr)
    row = measure_in_process(params, progress=lambda message: progress(f"  {message}"))
    print(json.dumps(asdict(row)), flush=True)
    return 0


# --- the parent: one child per (layout, N), then the report -------------------------------


@dataclass
class NotMeasured:
    """A (layout, N) pair that this run did not measure, and why."""

    layout: str
    events: int
    reason: str


@dataclass
class RatioRow:
    """How the other layouts compare with the Rust store at one size."""

    events: int
    rust_bytes_per_event: float
    py_dicts_over_rust: float | None
    py_tuples_over_rust: float | None
    go_shipped_over_rust: float | None
    go_best_over_rust: float | None


@dataclass
class SeedRow:
    """One line of the seed's table of events per day ("Memory usage of historical
    elements"), with the memory the Rust store needs to keep ``retention_days`` of them, from
    the bytes/event measured for that job type in this run."""

    pods_per_day: int
    apps_per_day: int
    job_type: str
    events_per_app: int
    events_per_pod: int
    events_per_day: int
    retained_events: int
    bytes_per_event: float | None
    retained_mib: float | None


#: The seed's table: pods per day, 100 pods per application; 7 events per application, 2 per
#: pod for a normal job and 3 for a gang job (the placeholder replaced).
SEED_PODS_PER_DAY: Final = (150_000, 300_000)
SEED_PODS_PER_APP: Final = 100
SEED_RETENTION_DAYS: Final = 5


def seed_rows(rows: Sequence[MemoryRow]) -> list[SeedRow]:
    """The seed's normal and gang rows, with the Rust store's bytes/event at the largest size
    measured for each job type (None when it was not measured)."""
    out = []
    for pods in SEED_PODS_PER_DAY:
        for job_type, per_pod in (("normal", 2), ("gang", 3)):
            apps = pods // SEED_PODS_PER_APP
            per_app = 7 + SEED_PODS_PER_APP * per_pod
            per_day = apps * per_app
            retained = per_day * SEED_RETENTION_DAYS
            measured = [r for r in rows if r.layout == "rust" and r.mix == job_type]
            bpe = max(measured, key=lambda r: r.events).bytes_per_event if measured else None
            out.append(SeedRow(pods, apps, job_type, per_app, per_pod, per_day, retained, bpe,
                               retained * bpe / MIB if bpe is not None else None))
    return out


@dataclass
class GoReferenceRow:
    """One line of the seed's Go table, with bytes/event derived from its MiB."""

    layout: str
    mib: dict[int, float]
    bytes_per_event: dict[int, float]


@dataclass
class MemoryReport:
    """Everything the event-memory benchmark found."""

    sizes: list[int]
    python_max: int
    mix: str
    seed: int
    queue_capacity: int
    rows: list[MemoryRow] = field(default_factory=list)
    not_measured: list[NotMeasured] = field(default_factory=list)
    ratios: list[RatioRow] = field(default_factory=list)
    go_reference: list[GoReferenceRow] = field(default_factory=list)
    seed_rows: list[SeedRow] = field(default_factory=list)
    target: str = ""
    target_met: bool | None = None
    failures: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Return the report as JSON-serialisable data."""
        return asdict(self)

    def format(self) -> str:
        """Return the report as markdown tables."""
        return format_memory_report(self)


def go_reference() -> list[GoReferenceRow]:
    """Return the seed's Go table with bytes per event at each size."""
    return [
        GoReferenceRow(layout, dict(mib), {n: m * MIB / n for n, m in mib.items()})
        for layout, mib in GO_REFERENCE_MIB.items()
    ]


def _child_env() -> dict[str, str]:
    # The child must import this very package, whether it is installed or run from a tree.
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return env


def run_child(params: MemoryParams, python: str = sys.executable) -> MemoryRow:
    """Measure ``params`` in a fresh process; raise RuntimeError if it fails."""
    cmd = [python, "-m", "benchmarks.events_memory", CHILD_FLAG, json.dumps(asdict(params))]
    done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, env=_child_env(), check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{params.layout} at {fmt_count(params.events)} failed with exit code {done.returncode}")
    lines = done.stdout.strip().splitlines()
    if not lines:
        raise RuntimeError(f"{params.layout} at {fmt_count(params.events)} printed no result")
    return MemoryRow(**json.loads(lines[-1]))


def plan_runs(
    sizes: Sequence[int], python_max: int, layouts: Sequence[str] = tuple(LAYOUTS)
) -> tuple[list[tuple[str, int]], list[NotMeasured]]:
    """Return the (layout, N) pairs to measure, and those skipped with the reason."""
    runs: list[tuple[str, int]] = []
    skipped: list[NotMeasured] = []
    for n in sizes:
        for name in layouts:
            if LAYOUTS[name].is_python and n > python_max:
                reason = f"not measured: above --python-max {fmt_count(python_max)} (no extrapolation)"
                skipped.append(NotMeasured(name, n, reason))
            else:
                runs.append((name, n))
    return runs, skipped


def run(
    *,
    sizes: Sequence[int] = DEFAULT_SIZES,
    python_max: int = DEFAULT_PYTHON_MAX,
    seed: int = DEFAULT_SEED,
    mix: Mix = "normal",
    queue_capacity: int = DEFAULT_QUEUE_CAPACITY,
    layouts: Sequence[str] = tuple(LAYOUTS),
    progress: Callable[[str], None] | None = None,
    measure: Callable[[MemoryParams], MemoryRow] = run_child,
) -> MemoryReport:
    """Run the event-memory benchmark: one fresh child process per (layout, N)."""
    if progress is None:
        progress = Progress()
    report = MemoryReport(
        sizes=list(sizes), python_max=python_max, mix=str(mix), seed=seed, queue_capacity=queue_capacity
    )
    runs, report.not_measured = plan_runs(sizes, python_max, layouts)
    for index, (layout, n) in enumerate(runs, 1):
        progress(f"events-memory {index}/{len(runs)}: {layout} at {fmt_count(n)} events (fresh process)")
        params = MemoryParams(layout=layout, events=n, seed=seed, mix=mix, queue_capacity=queue_capacity)
        try:
            row = measure(params)
        except (RuntimeError, OSError, ValueError) as exc:
            report.failures.append(str(exc))
            report.not_measured.append(NotMeasured(layout, n, f"failed: {exc}"))
            continue
        report.rows.append(row)
        if row.layout == "rust" and row.stored != row.events:
            report.failures.append(f"rust at {fmt_count(n)}: stored {row.stored} of {row.events} events")
    if mix == "normal" and "rust" in layouts and sizes:
        # The seed's gang rows: the Rust store once more, on gang jobs (3 events per pod).
        n = max(sizes)
        progress(f"events-memory: rust at {fmt_count(n)} events of gang jobs (fresh process)")
        try:
            report.rows.append(measure(MemoryParams(layout="rust", events=n, seed=seed, mix="gang",
                                                    queue_capacity=queue_capacity)))
        except (RuntimeError, OSError, ValueError) as exc:
            report.failures.append(str(exc))
            report.not_measured.append(NotMeasured("rust (gang)", n, f"failed: {exc}"))
    report.seed_rows = seed_rows(report.rows)
    report.ratios = compute_ratios([r for r in report.rows if r.mix == str(mix)])
    report.go_reference = go_reference()
    report.target, report.target_met = check_target(report.rows)
    return report


def _row(rows: Sequence[MemoryRow], layout: str, n: int, mix: str = "normal") -> MemoryRow | None:
    return next((r for r in rows if r.layout == layout and r.events == n and r.mix == mix), None)


def _over(other: float | None, rust: float) -> float | None:
    return None if other is None or rust <= 0 else other / rust


def compute_ratios(rows: Sequence[MemoryRow]) -> list[RatioRow]:
    """Return, for each size with a Rust row, the other layouts' bytes/event over Rust's.

    Go figures are used only at the sizes the seed measured (3M, 6M, 9M): nothing is
    extrapolated.
    """
    ratios: list[RatioRow] = []
    for rust in (r for r in rows if r.layout == "rust"):
        n = rust.events
        dicts, tuples = _row(rows, "py-dicts", n), _row(rows, "py-tuples", n)
        go_shipped, go_best = GO_REFERENCE_MIB[GO_SHIPPED].get(n), GO_REFERENCE_MIB[GO_BEST].get(n)
        ratios.append(
            RatioRow(
                events=n,
                rust_bytes_per_event=rust.bytes_per_event,
                py_dicts_over_rust=_over(dicts.bytes_per_event if dicts else None, rust.bytes_per_event),
                py_tuples_over_rust=_over(tuples.bytes_per_event if tuples else None, rust.bytes_per_event),
                go_shipped_over_rust=_over(go_shipped * MIB / n if go_shipped else None, rust.bytes_per_event),
                go_best_over_rust=_over(go_best * MIB / n if go_best else None, rust.bytes_per_event),
            )
        )
    return ratios


def check_target(rows: Sequence[MemoryRow]) -> tuple[str, bool | None]:
    """Compare the Rust store at 9M with the target of 40 bytes/event."""
    rust = _row(rows, "rust", TARGET_EVENTS)
    goal = f"Rust store at most {TARGET_BYTES_PER_EVENT:.0f} bytes/event at {fmt_count(TARGET_EVENTS)}"
    if rust is None:
        return f"{goal}: not measured in this run", None
    met = rust.bytes_per_event <= TARGET_BYTES_PER_EVENT
    return f"{goal}: {rust.bytes_per_event:.1f} bytes/event, {'met' if met else 'NOT met'}", met


def _mib(n: int) -> str:
    return f"{n / MIB:.1f}"


def format_memory_report(report: MemoryReport) -> str:
    """Return the report as markdown: results, what was not measured, ratios, Go table."""
    parts = [
        "## Event store memory (benchmarks.md section 1)",
        "",
        f"Workload: {report.mix} jobs, 100 pods per app, seed {report.seed}. RSS increase of a fresh process "
        f"from before creating the container to after storing N events (ring capacity N, full; "
        f"Rust: after flush(), queue capacity {report.queue_capacity}). 'empty container' is the part "
        "present before the first event (Rust: what EventStore() allocates up front, e.g. its queue; "
        "Python: the list of N slots); 'control' is the workload generator alone, what the harness itself "
        "leaves resident.",
        "",
        format_table(
            [
                "layout",
                "events",
                "RSS increase MiB",
                "bytes/event",
                "empty container MiB",
                "peak RSS MiB",
                "store-reported MiB",
                "interned strings",
                "time s",
            ],
            [
                [
                    r.layout if r.mix == report.mix else f"{r.layout} ({r.mix} jobs)",
                    fmt_count(r.events),
                    _mib(r.increase_bytes),
                    f"{r.bytes_per_event:.1f}",
                    _mib(r.rss_empty_bytes - r.rss_before_bytes),
                    _mib(r.peak_rss_bytes),
                    _mib(r.store_memory_bytes) if r.store_memory_bytes is not None else "-",
                    r.interned_strings if r.interned_strings is not None else "-",
                    f"{r.seconds:.1f}",
                ]
                for r in report.rows
            ],
        ),
    ]
    if report.not_measured:
        parts += ["", "Not measured in this run:"]
        parts += [f"- {m.layout} at {fmt_count(m.events)}: {m.reason}" for m in report.not_measured]
    if report.ratios:
        parts += [
            "",
            "Ratios (bytes/event of the layout over the Rust store's, same N; Go only where the seed measured N):",
            "",
            format_table(
                [
                    "events",
                    "Rust bytes/event",
                    "Python dicts / Rust",
                    "Python tuples / Rust",
                    "Go shipped / Rust",
                    "Go best / Rust",
                ],
                [
                    [
                        fmt_count(r.events),
                        f"{r.rust_bytes_per_event:.1f}",
                        fmt_ratio(r.py_dicts_over_rust),
                        fmt_ratio(r.py_tuples_over_rust),
                        fmt_ratio(r.go_shipped_over_rust),
                        fmt_ratio(r.go_best_over_rust),
                    ]
                    for r in report.ratios
                ],
            ),
        ]
    parts += ["", "Reference: the seed's Go figures (runtime Sys increase, MiB; bytes/event derived):", ""]
    sizes = sorted({n for g in report.go_reference for n in g.mib})
    parts.append(
        format_table(
            ["layout", *(f"{fmt_count(n)} MiB" for n in sizes), *(f"bytes/event {fmt_count(n)}" for n in sizes)],
            [
                [g.layout, *(f"{g.mib[n]:.0f}" for n in sizes), *(f"{g.bytes_per_event[n]:.0f}" for n in sizes)]
                for g in report.go_reference
            ],
        )
    )
    if report.seed_rows:
        parts += [
            "",
            f"The seed's daily volumes (100 pods per application; 7 events per application, 2 per pod for normal "
            f"jobs, 3 for gang jobs), kept {SEED_RETENTION_DAYS} days in the Rust store at the bytes/event measured "
            "above for that job type (largest size):",
            "",
            format_table(
                ["pods/day", "apps/day", "job type", "events/app", "events/pod", "events/day",
                 f"events in {SEED_RETENTION_DAYS} days", "Rust bytes/event", "Rust MiB"],
                [[fmt_count(r.pods_per_day), f"{r.apps_per_day:,}", r.job_type, r.events_per_app, r.events_per_pod,
                  fmt_count(r.events_per_day), fmt_count(r.retained_events),
                  f"{r.bytes_per_event:.1f}" if r.bytes_per_event is not None else "-",
                  f"{r.retained_mib:.0f}" if r.retained_mib is not None else "-"] for r in report.seed_rows],
            ),
        ]
    parts += ["", f"Target: {report.target}"]
    if report.failures:
        parts += ["", "FAILURES:", *(f"- {f}" for f in report.failures)]
    return "\n".join(parts)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == CHILD_FLAG:
        sys.exit(child_main(sys.argv[2:]))
    print("internal entry point: use `python -m benchmarks events-memory`", file=sys.stderr)
    sys.exit(2)
