"""The answers of issue 35 at scale: ``python -m benchmarks answers``.

Three figures, each against the issue's target:

(a) **why** (:func:`pyscheduler.dao.why.why`, what ``GET .../application/{app}/why`` calls) on a
    5,000-node state with 100,000 pending asks (:func:`benchmarks.why.build`: 1,000 applications
    of 100 asks over three leaves, nothing scheduled, the nodes holding half the asks' demand; the
    RM's predicates, which pass every node, asked for every node that has room). For the first,
    middle and last application (by id), 200 calls each (``Sizes.why_calls``) with the node grouping (the default)
    and with ``nodes=false``: median and p99 (nearest rank) against 50 ms.
(b) **what-if** (:func:`pyscheduler.sim.whatif.what_if`, what ``POST .../whatif`` calls) for an
    application of 10 asks on 5,000 nodes (:func:`benchmarks.whatif.build`), in two states: 100,000
    running allocations and no pending ask (one that fits, placed now; one too large, which
    waits), and 40,000 running allocations with 100,000 pending asks that fit nowhere (every
    cycle of the replay walks them, as a live cycle does). Median of 3 runs against 2 s,
    with a budget no run reaches (the served default of 3 s would cut a slow run short).
(c) **Scheduling while 4 clients ask why**: the scale shape (:data:`benchmarks.scheduling.SCALE_SHAPE`:
    1,000 leaves, 10 asks per application, fair) at 5,000 nodes and 100,000 asks, the real threaded
    loop timed from start until the RM has every allocation (as :mod:`benchmarks.scheduling`),
    alone and while ``CLIENTS`` threads of the same process call ``why`` (node grouping on, as the
    REST default) back to back, each over its own stride of the applications, skipping those with
    no pending ask left (a user asks about a job that waits). In-process threads are the served
    setup: gunicorn runs one worker (``gunicorn_conf.workers = 1``) whose app factory starts the
    scheduler in that process, and the blueprint's handler calls the same
    function on a pool thread (the read pacer included: :attr:`ClusterContext.read_pacer`). The
    clients each finish one answer before the clock starts and stop when the run ends; every loop
    is bounded in calls and time. Runs alternate (alone first on even repeats), fresh state each,
    median of 3; target: at least 0.9x of alone.

``--quick``: 200 nodes and 1,000 asks for (a), 200 nodes and 2,000 running / 800 running with
2,000 pending for (b), 200 nodes and 2,000 asks for (c), a few calls and one run each: a smoke test
of the code, not figures.
"""

from __future__ import annotations

import gc
import math
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from benchmarks import whatif as whatif_bench
from benchmarks import why as why_bench
from benchmarks.machine import Progress, fmt_ratio
from benchmarks.scheduling import MANY_POLICY, SCALE_SHAPE, build, case_timeout
from pyscheduler.common.text_table import format_table
from pyscheduler.dao.why import why

__all__ = ["AnswersReport", "run"]

WHY_TARGET_MS: Final = 50.0
WHATIF_TARGET_S: Final = 2.0
RATIO_TARGET: Final = 0.9
CLIENTS: Final = 4


@dataclass(frozen=True)
class Sizes:
    """The sizes of one run of the family (full or ``--quick``)."""

    why_nodes: int
    why_apps: int
    why_asks_per_app: int
    why_calls: int
    whatif_nodes: int
    #: (label, running allocations, pending asks that fit nowhere, memory of the asked application's asks).
    whatif_states: tuple[tuple[str, int, int, int], ...]
    whatif_runs: int
    sched_nodes: int
    sched_asks: int
    repeats: int
    #: Bound of one client's loop (calls); the time bound is the run's timeout.
    max_calls_per_client: int


def sizes(*, quick: bool) -> Sizes:
    """The family's sizes (see the module doc)."""
    fits, too_large = whatif_bench.FITS_MEMORY, whatif_bench.TOO_LARGE_MEMORY
    if quick:
        return Sizes(why_nodes=200, why_apps=50, why_asks_per_app=20, why_calls=10, whatif_nodes=200,
                     whatif_states=(("2,000 running, fits", 2_000, 0, fits),
                                    ("800 running + 2,000 pending that fit nowhere, fits", 800, 2_000, fits)),
                     whatif_runs=1, sched_nodes=200, sched_asks=2_000, repeats=1, max_calls_per_client=10_000)
    return Sizes(why_nodes=5_000, why_apps=1_000, why_asks_per_app=100, why_calls=200, whatif_nodes=5_000,
                 whatif_states=(("100,000 running, fits (placed now)", 100_000, 0, fits),
                                ("100,000 running, too large (waits)", 100_000, 0, too_large),
                                ("40,000 running + 100,000 pending that fit nowhere, fits", 40_000, 100_000, fits)),
                 whatif_runs=3, sched_nodes=5_000, sched_asks=100_000, repeats=3, max_calls_per_client=1_000_000)


@dataclass
class WhyRow:
    application: str
    nodes: bool
    #: The application's place in the partition's pending order (the answer's position).
    in_partition: int | None
    pending_asks: int
    times_ms: list[float]

    @property
    def median_ms(self) -> float:
        return statistics.median(self.times_ms)

    @property
    def p99_ms(self) -> float:
        return percentile(self.times_ms, 0.99)


@dataclass
class WhatIfRow:
    state: str
    running: int
    pending: int
    times_s: list[float]
    placed_now: bool
    cycles: int
    lock_ms: float

    @property
    def median_s(self) -> float:
        return statistics.median(self.times_s)


@dataclass
class SchedulingRun:
    clients: int
    rate: float
    seconds: float
    #: why answers the clients got during the timed run, and how many had a pending ask.
    answers: int = 0
    answers_pending: int = 0
    answer_ms: list[float] = field(default_factory=list)
    #: CPU seconds of the client threads during the run (see :attr:`WhyClients.cpu_seconds`).
    clients_cpu_seconds: float = 0.0


@dataclass
class AnswersReport:
    quick: bool
    sizes: Sizes
    why: list[WhyRow] = field(default_factory=list)
    why_build_s: float = 0.0
    whatif: list[WhatIfRow] = field(default_factory=list)
    runs: list[SchedulingRun] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def rates(self, clients: int) -> list[float]:
        return [r.rate for r in self.runs if r.clients == clients]

    def ratio(self) -> float | None:
        alone, busy = self.rates(0), self.rates(CLIENTS)
        return statistics.median(busy) / statistics.median(alone) if alone and busy else None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["why_summary"] = [{"application": r.application, "nodes": r.nodes, "median_ms": r.median_ms,
                                "p99_ms": r.p99_ms, "met": r.p99_ms < WHY_TARGET_MS} for r in self.why]
        data["whatif_summary"] = [{"state": r.state, "median_s": r.median_s, "met": r.median_s < WHATIF_TARGET_S}
                                  for r in self.whatif]
        data.update(ratio=self.ratio(), targets={"why_ms": WHY_TARGET_MS, "whatif_s": WHATIF_TARGET_S,
                                                 "ratio": RATIO_TARGET})
        return data

    def format(self) -> str:
        return format_report(self)


def percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile: the smallest value at least ``fraction`` of them do not exceed."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


# --- (a) why -------------------------------------------------------------------------------------


def measure_why(report: AnswersReport, progress: Callable[[str], None]) -> None:
    s = report.sizes
    started = time.perf_counter()
    context, proxy = why_bench.build(s.why_nodes, s.why_apps, s.why_asks_per_app)
    report.why_build_s = time.perf_counter() - started
    try:
        for app_id in ("app-0", f"app-{s.why_apps // 2}", f"app-{s.why_apps - 1}"):
            for with_nodes in (True, False):
                progress(f"answers: why {app_id}{'' if with_nodes else ' nodes=false'}, {s.why_calls} calls")
                nodes = None if with_nodes else "false"
                answer = why(context, "default", app_id, nodes=nodes)
                gc.collect()
                times = why_bench.timings_ms(lambda: why(context, "default", app_id, nodes=nodes), s.why_calls)
                position = answer.get("position") or {}
                report.why.append(WhyRow(app_id, with_nodes, position.get("inPartition"), len(answer["asks"]), times))
    finally:
        proxy.stop()


# --- (b) what-if ---------------------------------------------------------------------------------


def measure_whatif(report: AnswersReport, progress: Callable[[str], None]) -> None:
    s = report.sizes
    built: dict[tuple[int, int], Any] = {}
    for label, running, pending, memory in s.whatif_states:
        key = (running, pending)
        if key not in built:
            built.clear()  # one state at a time in memory
            gc.collect()
            progress(f"answers: what-if state {running:,} running, {pending:,} pending")
            built[key] = whatif_bench.build(s.whatif_nodes, running, pending)
        progress(f"answers: what-if, {label}, {s.whatif_runs} runs")
        gc.collect()
        times, answer = whatif_bench.timings(built[key], memory, s.whatif_runs)
        report.whatif.append(WhatIfRow(label, running, pending, times, bool(answer["placedNow"]),
                                       int(answer["cycles"]), float(answer["lockSeconds"]) * 1e3))


# --- (c) scheduling while clients ask why --------------------------------------------------------


class WhyClients:
    """``count`` threads, each calling ``why`` back to back for the next application of its stride
    of ``app_ids`` that has a pending ask, until :meth:`stop`, ``max_calls`` calls or ``deadline``
    (monotonic), whichever comes first."""

    def __init__(self, context: Any, app_ids: list[str], count: int, max_calls: int, deadline: float) -> None:
        self._context = context
        self._app_ids = app_ids
        self._applications = next(iter(context.partitions.values())).applications
        self._count = count
        self._max_calls = max_calls
        self._deadline = deadline
        self._stop = threading.Event()
        self._counting = threading.Event()
        self._lock = threading.Lock()
        # Counting starts as the barrier releases (its action), before any client asks again.
        self._first = threading.Barrier(count + 1, action=self._counting.set)
        self.answers = 0
        self.answers_pending = 0
        self.answer_ms: list[float] = []
        #: CPU seconds the clients' threads used while counting (their loops and the answers built).
        self.cpu_seconds = 0.0
        self.errors: list[str] = []
        self._threads = [threading.Thread(target=self._ask, args=(i,), name=f"why-client-{i}", daemon=True)
                         for i in range(count)]

    def start(self, timeout: float = 60.0) -> None:
        """Start the clients and return once each has had one answer (not counted)."""
        for thread in self._threads:
            thread.start()
        self._first.wait(timeout)

    def _ask(self, index: int) -> None:
        # A prime stride spreads each client over the applications (and over the leaves, which
        # hold the applications round-robin).
        ids, stride = self._app_ids, 7919
        position = index * (len(ids) // max(1, self._count))
        calls = 0
        waited = False
        cpu_started = 0.0
        applications = self._applications
        while calls < self._max_calls and not self._stop.is_set() and time.monotonic() < self._deadline:
            # The next application of the stride that still has a pending ask (a user asks about
            # a job that waits; read without the lock, a dict lookup and a length), else any.
            app_id = ids[position % len(ids)]
            for _ in range(len(ids)):
                app = applications.get(app_id)
                if app is not None and app.asks:
                    break
                position += stride
                app_id = ids[position % len(ids)]
            position += stride
            calls += 1
            began = time.perf_counter()
            try:
                answer = why(self._context, "default", app_id)
            except Exception as exc:  # a failing answer is a finding, not a crash of the run
                with self._lock:
                    self.errors.append(f"{app_id}: {type(exc).__name__}: {exc}")
                self._stop.set()
                break
            elapsed_ms = (time.perf_counter() - began) * 1e3
            if not waited:
                waited = True
                try:
                    self._first.wait()
                except threading.BrokenBarrierError:  # start() gave up waiting: so does this client
                    break
                cpu_started = time.thread_time()
            elif self._counting.is_set() and not self._stop.is_set():
                with self._lock:
                    self.answers += 1
                    self.answers_pending += bool(answer["asks"])
                    self.answer_ms.append(elapsed_ms)
        if not waited:
            self._first.abort()
            return
        with self._lock:
            self.cpu_seconds += time.thread_time() - cpu_started

    def running(self) -> int:
        """Clients still asking."""
        return sum(thread.is_alive() for thread in self._threads)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(30)


def scheduling_run(nodes: int, asks: int, clients: int, max_calls: int) -> SchedulingRun:
    """Allocations per second of one threaded run of the scale shape, with ``clients`` why clients."""
    setup = build(MANY_POLICY, nodes, asks, True, SCALE_SHAPE)
    timeout = case_timeout(asks)
    app_ids = [f"app-{i:04d}" for i in range(max(1, asks // 10))]
    fleet = WhyClients(setup.context, app_ids, clients, max_calls, time.monotonic() + timeout + 120) if clients else None
    try:
        gc.collect()
        if fleet is not None:
            fleet.start()
        started = time.perf_counter()
        setup.scheduler.start()
        finished = setup.rm.done.wait(timeout)
        seconds = time.perf_counter() - started
        if fleet is not None:
            fleet.stop()
        setup.scheduler.stop()
    finally:
        if fleet is not None:
            fleet.stop()
        setup.proxy.stop()
    if fleet is not None and fleet.errors:
        raise RuntimeError(f"why failed: {fleet.errors[0]}")
    if not finished:
        raise RuntimeError(f"{setup.rm.allocated} of {asks} allocations in {seconds:.1f} s")
    run = SchedulingRun(clients, asks / seconds, seconds)
    if fleet is not None:
        run.answers, run.answers_pending, run.answer_ms = fleet.answers, fleet.answers_pending, fleet.answer_ms
        run.clients_cpu_seconds = fleet.cpu_seconds
    return run


def measure_scheduling(report: AnswersReport, progress: Callable[[str], None]) -> None:
    s = report.sizes
    for repeat in range(s.repeats):
        order = (0, CLIENTS) if repeat % 2 == 0 else (CLIENTS, 0)
        for clients in order:
            progress(f"answers: scheduling with {clients} why clients, run {repeat + 1} of {s.repeats}")
            try:
                report.runs.append(scheduling_run(s.sched_nodes, s.sched_asks, clients, s.max_calls_per_client))
            except Exception as exc:
                report.failures.append(f"scheduling with {clients} clients: {type(exc).__name__}: {exc}")


def run(*, quick: bool = False, progress: Callable[[str], None] | None = None) -> AnswersReport:
    if progress is None:
        progress = Progress()
    report = AnswersReport(quick=quick, sizes=sizes(quick=quick))
    for name, part in (("why", measure_why), ("what-if", measure_whatif), ("scheduling", measure_scheduling)):
        try:
            part(report, progress)
        except Exception as exc:  # one broken part must not hide the others
            report.failures.append(f"{name}: {type(exc).__name__}: {exc}")
        gc.collect()
    return report


# --- the report ----------------------------------------------------------------------------------


def _verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def format_report(report: AnswersReport) -> str:
    s = report.sizes
    why_rows = [[r.application, f"{r.in_partition:,}" if r.in_partition is not None else "-", f"{r.pending_asks}",
                 "grouped" if r.nodes else "nodes=false", f"{r.median_ms:.1f}", f"{r.p99_ms:.1f}",
                 _verdict(r.p99_ms < WHY_TARGET_MS)] for r in report.why]
    whatif_rows = [[r.state, f"{r.median_s:.2f}", ", ".join(f"{t:.2f}" for t in r.times_s),
                    f"{'placed now' if r.placed_now else 'waits'}, {r.cycles} cycles", f"{r.lock_ms:.0f}",
                    _verdict(r.median_s < WHATIF_TARGET_S)] for r in report.whatif]
    ratio = report.ratio()
    alone, busy = report.rates(0), report.rates(CLIENTS)
    answers = [r for r in report.runs if r.clients]
    answer_ms = [ms for r in answers for ms in r.answer_ms]
    sched_rows = [
        [f"alone (median of {len(alone)})", _rates(alone)],
        [f"while {CLIENTS} threads ask why (median of {len(busy)})", _rates(busy)],
        [f"ratio (target {RATIO_TARGET:g}x)",
         fmt_ratio(ratio) + ("" if ratio is None else f" ({_verdict(ratio >= RATIO_TARGET)})")],
    ]
    if answers:
        sched_rows.append([
            "why answers during the runs",
            f"{sum(r.answers for r in answers):,} ({sum(r.answers_pending for r in answers):,} with a pending ask); "
            + (f"median {statistics.median(answer_ms):.1f} ms, p99 {percentile(answer_ms, 0.99):.1f} ms "
               "(paced while the loop is busy)" if answer_ms else "none"),
        ])
        sched_rows.append([
            "the clients' CPU time (their threads)",
            ", ".join(f"{r.clients_cpu_seconds:.2f} s of {r.seconds:.2f} s ({r.clients_cpu_seconds / r.seconds:.0%})"
                      for r in answers),
        ])
    parts = [
        "## Answers (issue 35): why, what-if, scheduling while clients ask why",
        "",
        f"(a) why on {s.why_nodes:,} nodes, {s.why_apps * s.why_asks_per_app:,} pending asks ({s.why_apps:,} "
        f"applications of {s.why_asks_per_app}, built in {report.why_build_s:.1f} s), {s.why_calls} calls each "
        f"(target {WHY_TARGET_MS:g} ms, checked on the p99):",
        "",
        format_table(["application", "in partition", "pending asks", "nodes", "median ms", "p99 ms",
                      f"< {WHY_TARGET_MS:g} ms"], why_rows, align="lrrlrrl"),
        "",
        f"(b) what-if of an application of 10 asks on {s.whatif_nodes:,} nodes, median of {s.whatif_runs} "
        f"(target {WHATIF_TARGET_S:g} s):",
        "",
        format_table(["state, application", "median s", "runs s", "answer", "lock ms", f"< {WHATIF_TARGET_S:g} s"],
                     whatif_rows, align="lrrlrl"),
        "",
        f"(c) scheduling, scale shape ({s.sched_nodes:,} nodes, {s.sched_asks:,} asks, fair, threaded), allocations/s "
        "(runs in order):",
        "",
        format_table(["run", "allocations/s"], sched_rows, align="ll"),
    ]
    if report.failures:
        parts += ["", "FAILURES:", *(f"- {f}" for f in report.failures)]
    return "\n".join(parts)


def _rates(rates: list[float]) -> str:
    if not rates:
        return "-"
    return f"{statistics.median(rates):,.0f} ({', '.join(f'{r:,.0f}' for r in rates)})"
