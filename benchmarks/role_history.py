"""Role history (issue 11): ``python -m benchmarks role-history``.

Three measurements:

(a) **Selection**: the cost of :meth:`RoleHistory.choose` for a pending ask (the work the cycle
    adds per ask with a role) on a history of 10,000 nodes and 50 roles, each node holding
    entries of 10 roles (100,000 entries, about 2,000 nodes per role's recent list), with a
    tenth of the nodes over the failure threshold for each role (skipped by the walk), in steady
    churn: each timed call targets a node, then the instance lands there and a random earlier
    one stops (so lists keep changing). Per call: median, p99 and max in microseconds
    (target: p99 under 50 us).
(b) **Save**: a save of 100,000 entries to a local directory (encode, write, fsync, rename,
    purge), and the snapshot the saver takes first under the partition's lock, a chunk of
    about 2,000 entries per hold with the garbage collector paused, as the saver takes it
    (target: save under 200 ms; it runs on the saver's thread, never the scheduling thread,
    which waits at most one hold).
(c) **Scheduling with role history on vs off**: the many-queues shape of the scheduling
    benchmark (fair, 1,000 nodes, 10,000 asks in 1,000 applications, events on, the threaded
    scheduler) as is, and with every ask playing one of 5 roles whose history (restored before
    the asks arrive) points at other nodes; alternating fresh subprocesses, median of 3
    (target: on >= 0.9x off).
"""

from __future__ import annotations

import random
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from benchmarks.machine import Progress, fmt_ratio, format_table
from benchmarks.scheduling import MANY_QUEUES_SHAPE, ROLES_SHAPE, alternating_rates, median_rate, rate_ratio

NODES: Final = 10_000
ROLES: Final = 50
ROLES_PER_NODE: Final = 10
CALLS: Final = 20_000
QUICK_NODES: Final = 1_000
QUICK_CALLS: Final = 2_000
SAVE_ENTRIES: Final = 100_000
QUICK_SAVE_ENTRIES: Final = 10_000
SAVES: Final = 5
REPEATS: Final = 3
TARGET_P99_US: Final = 50.0
TARGET_SAVE_MS: Final = 200.0
TARGET_RATIO: Final = 0.9


@dataclass
class RoleHistoryReport:
    nodes: int
    roles: int
    calls: int
    save_entries: int
    quick: bool
    choose_us: dict[str, float] = field(default_factory=dict)
    save_ms: dict[str, float] = field(default_factory=dict)
    snapshot_ms: dict[str, float] = field(default_factory=dict)
    file_bytes: int = 0
    #: Scheduling runs: shape -> allocations/s of each repeat (threaded), and the history
    #: placements of the roles shape.
    rates: dict[str, list[float]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def median_rate(self, shape: str) -> float | None:
        return median_rate(self.rates, shape)

    def ratio(self) -> float | None:
        return rate_ratio(self.rates, ROLES_SHAPE, MANY_QUEUES_SHAPE)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ratio"] = self.ratio()
        return data

    def format(self) -> str:
        return format_report(self)


# -- (a) selection ----------------------------------------------------------------------------------


def measure_choose(nodes: int, roles: int, calls: int, seed: int = 1) -> dict[str, float]:
    from pyscheduler.policies.role_history import RoleHistory
    from pyscheduler.policies.role_history.settings import RoleSettings

    rng = random.Random(seed)
    history = RoleHistory("bench")
    node_ids = [f"node-{i:05d}" for i in range(nodes)]
    role_names = [f"role-{r:02d}" for r in range(roles)]
    for i, node_id in enumerate(node_ids):
        for r in rng.sample(range(roles), ROLES_PER_NODE):
            history.add_entry(node_id, role_names[r], 1_700_000_000_000_000_000 + rng.randrange(10**12))
    # A tenth of each role's nodes failed too often: the walk skips them.
    settings = RoleSettings()
    for role in role_names:
        for node_id in history.recent(role)[::10]:
            entry = history.entry(node_id, role)
            assert entry is not None
            entry.failed_recently = settings.failure_threshold + 1
    schedulable: Callable[[str], bool] = lambda node_id: True  # noqa: E731
    running: list[tuple[str, str]] = []
    times: list[float] = []
    now_ns = 1_800_000_000_000_000_000
    for call in range(calls):
        role = role_names[call % roles]
        key = f"ask-{call}"
        began = time.perf_counter_ns()
        placement = history.choose(key, role, settings, float(call), schedulable)
        times.append((time.perf_counter_ns() - began) / 1000)
        if placement.node_id is not None:
            history.allocated(key, role, placement.node_id)
            running.append((role, placement.node_id))
        if running and rng.random() < 0.9:
            stopped_role, stopped_node = running.pop(rng.randrange(len(running)))
            now_ns += 1_000_000
            history.released(stopped_role, stopped_node, now_ns)
    times.sort()
    return {"median": statistics.median(times), "p99": times[int(len(times) * 0.99)], "max": times[-1],
            "entries": float(sum(len(e) for e in history.nodes.values()))}


# -- (b) save -----------------------------------------------------------------------------------------


def measure_save(entries: int, saves: int) -> tuple[dict[str, float], dict[str, float], int]:
    from pyscheduler.policies.role_history import RoleHistories
    from pyscheduler.policies.role_history.file_format import SavedEntry
    from pyscheduler.policies.role_history.store import HistoryStore
    from pyscheduler.scheduler.role_history_saver import HoldWithoutCollection

    histories = RoleHistories()
    apps = max(1, entries // 100)
    histories.restore(
        SavedEntry(f"service-{i % apps:04d}", f"node-{i // apps:05d}", f"role-{i % 7}", False, 1_700_000_000_000 + i)
        for i in range(entries)
    )
    directory = tempfile.mkdtemp(prefix="pyscheduler-rolehistory-bench-")
    save_ms: list[float] = []
    snapshot_ms: list[float] = []
    longest_hold_ms: list[float] = []
    size = 0
    try:
        store = HistoryStore(directory, keep=2)
        for n in range(saves):
            # One history changed since the last save, as between two saves of a busy cluster.
            next(iter(histories)).version += 1
            lock = _TimedLock()
            began = time.perf_counter()
            snapshot = histories.snapshot(HoldWithoutCollection(lock))
            snapshot_ms.append((time.perf_counter() - began) * 1e3)
            longest_hold_ms.append(lock.longest * 1e3)
            began = time.perf_counter()
            path = store.save("default", 1_800_000_000_000 + n, snapshot)
            save_ms.append((time.perf_counter() - began) * 1e3)
            size = len(open(path, "rb").read())
        first_snapshot = snapshot_ms[0]
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return (
        {"median": statistics.median(save_ms), "max": max(save_ms)},
        {"first": first_snapshot, "median_after": statistics.median(snapshot_ms[1:]) if saves > 1 else first_snapshot,
         "longest_hold": max(longest_hold_ms)},
        size,
    )


class _TimedLock:
    """A lock that remembers its longest hold (what the scheduling cycle could wait)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._since = 0.0
        self.longest = 0.0

    def __enter__(self) -> object:
        self._lock.acquire()
        self._since = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.longest = max(self.longest, time.perf_counter() - self._since)
        self._lock.release()


# -- (c) scheduling on vs off --------------------------------------------------------------------------


def measure_scheduling(report: RoleHistoryReport, quick: bool, progress: Callable[[str], None]) -> None:
    alternating_rates((MANY_QUEUES_SHAPE, ROLES_SHAPE), quick=quick, repeats=1 if quick else REPEATS,
                      family="role-history", rates=report.rates, failures=report.failures, progress=progress)


def run(*, quick: bool = False, progress: Callable[[str], None] | None = None) -> RoleHistoryReport:
    if progress is None:
        progress = Progress()
    nodes = QUICK_NODES if quick else NODES
    calls = QUICK_CALLS if quick else CALLS
    entries = QUICK_SAVE_ENTRIES if quick else SAVE_ENTRIES
    report = RoleHistoryReport(nodes=nodes, roles=ROLES, calls=calls, save_entries=entries, quick=quick)
    progress(f"role-history: selection on {nodes:,} nodes x {ROLES} roles, {calls:,} calls")
    report.choose_us = measure_choose(nodes, ROLES, calls)
    progress(f"role-history: {SAVES} saves of {entries:,} entries")
    report.save_ms, report.snapshot_ms, report.file_bytes = measure_save(entries, SAVES)
    measure_scheduling(report, quick, progress)
    return report


def format_report(report: RoleHistoryReport) -> str:
    c, s, snap = report.choose_us, report.save_ms, report.snapshot_ms
    on, off = report.median_rate(ROLES_SHAPE), report.median_rate(MANY_QUEUES_SHAPE)
    met = lambda ok: "met" if ok else "NOT met"  # noqa: E731
    rows = [
        [f"selection (choose), {report.nodes:,} nodes x {report.roles} roles, {int(c['entries']):,} entries",
         f"median {c['median']:.1f} us, p99 {c['p99']:.1f} us, max {c['max']:.0f} us",
         f"p99 < {TARGET_P99_US:g} us: {met(c['p99'] < TARGET_P99_US)}"],
        [f"save of {report.save_entries:,} entries ({report.file_bytes / 1e6:.1f} MB file, local disk, fsync)",
         f"median {s['median']:.1f} ms, max {s['max']:.1f} ms",
         f"< {TARGET_SAVE_MS:g} ms: {met(s['max'] < TARGET_SAVE_MS)}"],
        ["snapshot taken under the partition's lock, a chunk at a time: first save / later saves (one "
         "history changed); the longest hold",
         f"{snap['first']:.1f} ms / {snap['median_after']:.2f} ms; hold {snap['longest_hold']:.1f} ms", ""],
        ["scheduling, many queues, role history on / off (threaded, median)",
         f"{_rate(on)} / {_rate(off)} allocations/s: {fmt_ratio(report.ratio())}",
         f">= {TARGET_RATIO:g}x: {met((report.ratio() or 0) >= TARGET_RATIO)}"],
    ]
    runs = ", ".join(f"{shape}: {', '.join(f'{r:,.0f}' for r in rates)}" for shape, rates in report.rates.items())
    parts = [
        "## Role history",
        "",
        "(a) RoleHistory.choose per pending ask with churn (each call's instance lands, nine in ten calls stop a "
        "random running one), a tenth of each role's nodes over the failure threshold; (b) HistoryStore.save to a "
        "temporary local directory, 5 saves; (c) the scheduling benchmark's many-queues shape, fair, events on, "
        "threaded, alternating fresh subprocesses: as is (off) and with every ask playing one of 5 roles of its "
        "application whose restored history points at other nodes (on).",
        "",
        format_table(["what", "result", "target"], rows, align="lll"),
        "",
        f"Scheduling runs (allocations/s): {runs or 'none'}.",
    ]
    if report.failures:
        parts += ["", "FAILURES:", *(f"- {f}" for f in report.failures)]
    return "\n".join(parts)


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"
