"""Scheduling throughput while REST clients poll: the cost of the REST layer to the scheduler.

The many-queues shape (:mod:`benchmarks.scheduling`: 10 parents x 10 leaves, 1,000
applications, 10,000 asks, 1,000 nodes, ``fair``) is run by a served scheduler (a real
``pyscheduler serve``, :class:`benchmarks.rest.ServedScheduler`), once with no client and once
while ``pollers`` clients (4 by default) each request ``/ws/v1/partition/default/nodes`` and
``/ws/v1/partition/default/applications/active`` back to back over a kept-alive connection,
reading every body. As in the REST benchmark's part (c), the served loop is stopped during the
untimed setup and ``/bench/run`` times from its start until the RM has every allocation; each
run is a fresh server; runs alternate (none, pollers, none, ...) and the medians are compared.
The pollers start after the setup and are known to be polling (each finished one request)
before the timed run begins; they stop when it ends.

The figure it shows is the lock model's (pyscheduler.objects.locking): a REST read holds the
partition's lock only to copy values, so the scheduling cycle waits for copies, not for JSON.
What remains is CPU: on 2 cores the pollers' requests, the benchmark's clients and the
scheduling thread share one interpreter lock in the served process and two cores in all.
"""

from __future__ import annotations

import http.client
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from benchmarks.machine import Progress, fmt_ratio, format_table
from benchmarks.rest import ServedScheduler
from benchmarks.scheduling import (
    MANY_ASKS,
    MANY_NODES,
    MANY_POLICY,
    MANY_QUEUES_SHAPE,
    QUICK_MANY_ASKS,
    QUICK_MANY_NODES,
    many_queues_config,
)

__all__ = ["PollingReport", "run"]

POLLERS: Final = 4
REPEATS: Final = 3
QUICK_REPEATS: Final = 1
TARGET_RATIO: Final = 0.9
PATHS: Final = ("/ws/v1/partition/default/nodes", "/ws/v1/partition/default/applications/active")
#: A poller's request that takes longer than this fails the run (a hung server).
REQUEST_TIMEOUT: Final = 60.0


class PollerFleet:
    """``count`` threads, each polling :data:`PATHS` in turn over its own kept-alive connection
    until :meth:`stop`; counts requests, bytes and failures."""

    def __init__(self, port: int, count: int) -> None:
        self.port = port
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.requests = 0
        self.bytes = 0
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self._started = threading.Barrier(count + 1)
        self._threads = [threading.Thread(target=self._poll, name=f"poller-{i}", daemon=True) for i in range(count)]

    def start(self, timeout: float = 60.0) -> None:
        """Starts the pollers and returns once each has finished one request."""
        for thread in self._threads:
            thread.start()
        self._started.wait(timeout)

    def _poll(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=REQUEST_TIMEOUT)
        first = True
        try:
            while not self._stop.is_set():
                for path in PATHS:
                    began = time.perf_counter()
                    conn.request("GET", path, headers={"Accept-Encoding": "identity"})
                    response = conn.getresponse()
                    body = response.read()
                    elapsed = time.perf_counter() - began
                    if response.status != 200:
                        raise RuntimeError(f"GET {path}: HTTP {response.status}")
                    with self._lock:
                        self.requests += 1
                        self.bytes += len(body)
                        self.latencies.append(elapsed)
                if first:
                    first = False
                    self._started.wait()
        except Exception as exc:  # reported with the run
            with self._lock:
                self.errors.append(f"{type(exc).__name__}: {exc}")
            if first:
                self._started.abort()
        finally:
            conn.close()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(REQUEST_TIMEOUT + 5)


@dataclass
class PollingRun:
    pollers: int
    rate: float
    seconds: float
    allocations: int
    requests: int = 0
    megabytes: float = 0.0
    latency_median_ms: float | None = None
    process_cpu: float | None = None
    loop_cpu: float | None = None
    error: str | None = None


@dataclass
class PollingReport:
    nodes: int
    asks: int
    pollers: int
    repeats: int
    quick: bool
    runs: list[PollingRun] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def median_rate(self, pollers: int) -> float | None:
        rates = [r.rate for r in self.runs if r.pollers == pollers and not r.error]
        return statistics.median(rates) if rates else None

    @property
    def ratio(self) -> float | None:
        base, loaded = self.median_rate(0), self.median_rate(self.pollers)
        return loaded / base if base and loaded is not None else None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(
            rate_without_pollers=self.median_rate(0),
            rate_with_pollers=self.median_rate(self.pollers),
            ratio=self.ratio,
            targets={"pollers_ratio_at_least_0.9": None if self.ratio is None else self.ratio >= TARGET_RATIO},
        )
        return data

    def format(self) -> str:
        return format_report(self)


def run_once(nodes: int, asks: int, pollers: int, progress: Callable[[str], None]) -> PollingRun:
    """One fresh server: the many-queues setup, ``pollers`` clients polling, the timed run."""
    timeout = max(60.0, asks / 50)
    with ServedScheduler(MANY_POLICY, config_text=many_queues_config(MANY_POLICY)) as server:
        setup = server.json(
            "POST", f"/bench/setup?nodes={nodes}&asks={asks}&shape={MANY_QUEUES_SHAPE}", timeout=300
        )
        if setup["allocated"]:
            raise RuntimeError("allocations before the timed run: the loop was not stopped")
        fleet = PollerFleet(server.port, pollers) if pollers else None
        try:
            if fleet is not None:
                fleet.start()
                if fleet.errors:
                    raise RuntimeError(f"poller: {fleet.errors[0]}")
                before = fleet.requests
            result = server.json("POST", f"/bench/run?timeout={timeout:g}", timeout=timeout + 60)
        finally:
            if fleet is not None:
                fleet.stop()
    outcome = PollingRun(
        pollers=pollers,
        rate=float(result["rate"]),
        seconds=float(result["seconds"]),
        allocations=int(result["allocations"]),
        process_cpu=result.get("process_cpu"),
        loop_cpu=result.get("loop_cpu"),
        error=result["error"],
    )
    if fleet is not None:
        outcome.requests = fleet.requests - before
        outcome.megabytes = fleet.bytes / 1e6
        outcome.latency_median_ms = statistics.median(fleet.latencies) * 1e3 if fleet.latencies else None
        if fleet.errors and not outcome.error:
            outcome.error = f"poller: {fleet.errors[0]}"
    progress(
        f"rest-polling: {pollers} pollers: {outcome.rate:,.0f} allocations/s ({outcome.seconds:.2f} s"
        + (f", {outcome.requests} requests during the run" if pollers else "")
        + ")"
    )
    return outcome


def run(
    *, quick: bool = False, pollers: int = POLLERS, progress: Callable[[str], None] | None = None
) -> PollingReport:
    if progress is None:
        progress = Progress()
    nodes = QUICK_MANY_NODES if quick else MANY_NODES
    asks = QUICK_MANY_ASKS if quick else MANY_ASKS
    repeats = QUICK_REPEATS if quick else REPEATS
    report = PollingReport(nodes=nodes, asks=asks, pollers=pollers, repeats=repeats, quick=quick)
    try:
        import pyscheduler_web  # noqa: F401
    except ImportError:
        report.notes.append("not run: the web package (pyscheduler-web) is not installed (pip install -e web)")
        return report
    progress(f"rest-polling: many-queues shape, {asks:,} asks on {nodes:,} nodes, 0 vs {pollers} pollers, x{repeats}")
    for _ in range(repeats):
        for count in (0, pollers):
            try:
                report.runs.append(run_once(nodes, asks, count, progress))
            except Exception as exc:  # one broken run must not hide the others
                report.runs.append(PollingRun(count, 0.0, 0.0, 0, error=f"{type(exc).__name__}: {exc}"))
    report.failures += [f"{r.pollers} pollers: {r.error}" for r in report.runs if r.error]
    return report


def _row(r: PollingRun) -> Sequence[object]:
    return [
        r.pollers,
        "-" if r.error else f"{r.rate:,.0f}",
        "-" if r.error else f"{r.seconds:.2f}",
        r.requests if r.pollers else "-",
        f"{r.megabytes:,.0f}" if r.pollers else "-",
        "-" if r.latency_median_ms is None else f"{r.latency_median_ms:,.0f}",
        "-" if r.process_cpu is None else f"{r.process_cpu:.2f}",
        "-" if r.loop_cpu is None else f"{r.loop_cpu:.2f}",
        r.error or "",
    ]


def format_report(report: PollingReport) -> str:
    parts = [f"## Scheduling while {report.pollers} REST clients poll nodes and active applications"]
    for note in report.notes:
        parts += ["", note]
    if report.runs:
        base, loaded = report.median_rate(0), report.median_rate(report.pollers)
        met = "-" if report.ratio is None else ("met" if report.ratio >= TARGET_RATIO else "NOT met")
        parts += [
            "",
            f"Many-queues shape served: {report.asks:,} asks, {report.asks // 10:,} applications in 100 leaves, "
            f"{report.nodes:,} nodes (fair), events on; a fresh server per run, runs alternating, {report.repeats} of "
            f"each. Each poller GETs {' and '.join(PATHS)} in turn over a kept-alive connection and reads every body; "
            "requests and MB: what the pollers received during the timed run and the whole run.",
            "",
            format_table(
                ["pollers", "allocations/s", "seconds", "requests", "MB read", "request median ms", "server CPU s",
                 "loop thread CPU s", "error"],
                [_row(r) for r in report.runs],
                align="rrrrrrrrl",
            ),
            "",
            f"Median: {'-' if base is None else f'{base:,.0f}'} allocations/s with no poller, "
            f"{'-' if loaded is None else f'{loaded:,.0f}'} with {report.pollers}: ratio {fmt_ratio(report.ratio)} "
            f"(target >= {TARGET_RATIO:.0%}: {met}).",
        ]
    if report.failures:
        parts += ["", "FAILURES:", *(f"- {failure}" for failure in report.failures)]
    return "\n".join(parts)
