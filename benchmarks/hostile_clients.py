"""The serving path under hostile clients (issue 10): ``python -m benchmarks hostile-clients``.

For each kind of misbehaving client, a fresh served scheduler (``pyscheduler serve`` with the
benchmark's RM, :class:`benchmarks.rest.ServedScheduler`) gets YuniKorn's scheduling workload
(the REST benchmark's part (c): root.a and root.b, 10,000 asks on 1,000 nodes, ``fair``), then
10 rounds (:data:`ROUNDS`) of: ``sockets`` connections (1,000 by default) open and misbehave
while 3 health checks (``/ws/v1/scheduler/healthcheck``, each on a new connection) are timed
(target: under 100 ms, every one), then they close. During the first round the timed
scheduling run goes (``/bench/run``: from the loop's start to the last allocation), compared
with the same run and no such clients (target: at least 0.9x). After every round the worker's
pid is read: a changed pid is a worker restart (target: none in the 10 rounds).

The kinds: idle sockets, half a request head, a whole head with a body that never completes,
answers never read (``Connection: close``), connections kept alive after one request, and
kept-alive connections past the worker's connection cap (a server started with a cap of half
the sockets: those over it get the worker's JSON 503 at once, and so does a health check that
meets a full cap; the time to the answer is what is timed, and the statuses are reported).
gunicorn keeps at most ``cap - threads`` connections alive and closes the others after their
answer, so the cap is not always full when a check arrives.

Kinds whose sockets send whole requests (:data:`ANSWERED`) start their checks once every socket
has its answer waiting, unread: the checks measure the server while those clients hold their
connections, not the queue of their own 1,000 requests (the time to answer those is reported).
The timed run's request is sent before the sockets open (past the cap a request sent after them
would be refused) and the server starts the run :data:`RUN_DELAY` s later.
"""

from __future__ import annotations

import concurrent.futures
import http.client
import select
import socket
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from benchmarks.machine import Progress, fmt_ratio, format_table
from benchmarks.rest import QUICK_SCHED_ASKS, QUICK_SCHED_NODES, SCHED_ASKS, SCHED_NODES, ServedScheduler

__all__ = ["HostileReport", "run"]

SOCKETS: Final = 1000
QUICK_SOCKETS: Final = 150
ROUNDS: Final = 10
QUICK_ROUNDS: Final = 2
CHECKS: Final = 3
#: Seconds the server waits between receiving the timed run request and starting it.
RUN_DELAY: Final = 2.0
TARGET_MS: Final = 100.0
TARGET_RATIO: Final = 0.9
NONE: Final = "none"
KINDS: Final = {
    NONE: None,
    "idle": b"",
    "half a request head": b"GET /ws/v1/partitions HT",
    "body never completes": b"POST /ws/v1/validate-conf HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\npart",
    "answers never read": b"GET /ws/v1/partitions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    "kept alive after one request": b"GET /ws/v1/partitions HTTP/1.1\r\nHost: x\r\n\r\n",
    "kept alive past the cap": b"GET /ws/v1/partitions HTTP/1.1\r\nHost: x\r\n\r\n",
}
#: Kinds run against a server whose connection cap is half the sockets.
PAST_THE_CAP: Final = frozenset({"kept alive past the cap"})
#: Kinds whose sockets send whole requests: the health checks start once every one has its
#: answer waiting (not read), so they measure the server while these clients hold their
#: connections, not while it is still answering their 1,000 requests (that time is reported).
ANSWERED: Final = frozenset({"answers never read", "kept alive after one request", "kept alive past the cap"})
#: The longest wait for those answers.
ANSWER_WAIT: Final = 60.0


@dataclass
class KindRun:
    kind: str
    sockets: int
    health_median_ms: float
    health_max_ms: float
    rate: float
    worker_survived: bool
    error: str | None = None
    rounds: int = 0
    #: Worker pid changes seen between rounds.
    restarts: int = 0
    #: HTTP statuses of the health checks.
    statuses: list[int] = field(default_factory=list)
    #: Every health check's milliseconds, round after round.
    health_ms: list[float] = field(default_factory=list)
    #: The longest time the server took to answer all the sockets' requests (ANSWERED kinds).
    answered_s: float = 0.0


@dataclass
class HostileReport:
    nodes: int
    asks: int
    sockets: int
    quick: bool
    runs: list[KindRun] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def rate_without(self) -> float | None:
        base = next((r for r in self.runs if r.kind == NONE and not r.error), None)
        return base.rate if base is not None else None

    def ratio(self, run: KindRun) -> float | None:
        base = self.rate_without()
        return run.rate / base if base and not run.error else None

    def targets(self) -> dict[str, Any]:
        hostile = [r for r in self.runs if r.kind != NONE and not r.error]
        ratios = [self.ratio(r) for r in hostile]
        return {
            "health_under_100ms": bool(hostile) and all(r.health_max_ms < TARGET_MS for r in hostile),
            "scheduling_ratio_at_least_0.9": bool(ratios) and all(x is not None and x >= TARGET_RATIO for x in ratios),
            "no_worker_restart": bool(hostile) and all(r.worker_survived and r.restarts == 0 for r in hostile),
        }

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ratios"] = {r.kind: self.ratio(r) for r in self.runs}
        data["targets"] = self.targets()
        return data

    def format(self) -> str:
        return format_report(self)


def wait_answered(opened: list[socket.socket], limit: float) -> float:
    """Seconds until every socket has something to read (its answer, or the server's close),
    without reading it; at most ``limit``."""
    began = time.perf_counter()
    poller = select.poll()
    waiting = {sock.fileno() for sock in opened}
    for fd in waiting:
        poller.register(fd, select.POLLIN)
    while waiting and time.perf_counter() - began < limit:
        for fd, _ in poller.poll(100):
            waiting.discard(fd)
            poller.unregister(fd)
    return time.perf_counter() - began


@contextmanager
def misbehaving(port: int, count: int, first: bytes | None) -> Iterator[list[socket.socket]]:
    opened: list[socket.socket] = []
    try:
        if first is not None:
            for _ in range(count):
                sock = socket.create_connection(("127.0.0.1", port), timeout=10)
                opened.append(sock)
                if first:
                    try:
                        sock.sendall(first)
                    except OSError:
                        pass  # refused past the cap: the server may have closed it already
            time.sleep(0.3)  # let the server see them all
        yield opened
    finally:
        for sock in opened:
            sock.close()


def health_check(port: int) -> tuple[float, int]:
    """(milliseconds to the whole answer, HTTP status) of one health check on a new connection."""
    began = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", "/ws/v1/scheduler/healthcheck", headers={"Connection": "close"})
        response = conn.getresponse()
        response.read()
    finally:
        conn.close()
    return (time.perf_counter() - began) * 1e3, response.status


def run_kind(
    kind: str, nodes: int, asks: int, sockets: int, rounds: int, progress: Callable[[str], None]
) -> KindRun:
    timeout = max(60.0, asks / 50)
    env = {"PYSCHEDULER_MAX_CONNECTIONS": str(max(sockets // 2, 1))} if kind in PAST_THE_CAP else None
    times: list[float] = []
    statuses: list[int] = []
    restarts = 0
    answered: list[float] = []
    result: dict[str, Any] = {}
    with ServedScheduler(env=env) as server, concurrent.futures.ThreadPoolExecutor(1) as pool:
        first_pid = pid = server.json("POST", f"/bench/setup?nodes={nodes}&asks={asks}", timeout=300)["worker_pid"]
        for round_no in range(rounds):
            run: concurrent.futures.Future[dict[str, Any]] | None = None
            if round_no == 0:
                # Sent before the sockets open (past the cap, a request sent after them would be
                # refused): the server waits RUN_DELAY s, then the timed run goes while they are held.
                run = pool.submit(server.json, "POST", f"/bench/run?timeout={timeout:g}&delay={RUN_DELAY:g}",
                                  timeout + RUN_DELAY + 60)
                time.sleep(0.1)
            with misbehaving(server.port, sockets, KINDS[kind]) as opened:
                if kind in ANSWERED:
                    answered.append(wait_answered(opened, ANSWER_WAIT))
                for ms, status in (health_check(server.port) for _ in range(CHECKS)):
                    times.append(ms)
                    statuses.append(status)
                if run is not None:
                    result = run.result()
            now = server.json("GET", "/bench/state")["worker_pid"]
            restarts += now != pid
            pid = now
            if KINDS[kind] is None:
                break  # nothing misbehaves: one round is the baseline
    outcome = KindRun(
        kind, 0 if KINDS[kind] is None else sockets, statistics.median(times), max(times), float(result["rate"]),
        pid == first_pid, result["error"], round_no + 1, restarts, sorted(set(statuses)), [round(t, 2) for t in times],
        max(answered, default=0.0),
    )
    progress(
        f"hostile-clients: {kind}: {outcome.rounds} rounds, health check {outcome.health_median_ms:.1f} ms median, "
        f"{outcome.health_max_ms:.1f} ms slowest (HTTP {', '.join(map(str, outcome.statuses))}); "
        f"{outcome.rate:,.0f} allocations/s; worker restarts {restarts}"
        + (f"; the sockets' own requests answered within {outcome.answered_s:.2f} s" if answered else "")
    )
    return outcome


def run(*, quick: bool = False, sockets: int | None = None, progress: Callable[[str], None] | None = None) -> HostileReport:
    if progress is None:
        progress = Progress()
    count = sockets or (QUICK_SOCKETS if quick else SOCKETS)
    rounds = QUICK_ROUNDS if quick else ROUNDS
    nodes = QUICK_SCHED_NODES if quick else SCHED_NODES
    asks = QUICK_SCHED_ASKS if quick else SCHED_ASKS
    report = HostileReport(nodes=nodes, asks=asks, sockets=count, quick=quick)
    try:
        import pyscheduler_web  # noqa: F401
    except ImportError:
        report.notes.append("not run: the web package (pyscheduler-web) is not installed (pip install -e web)")
        return report
    for kind in KINDS:
        try:
            report.runs.append(run_kind(kind, nodes, asks, count, rounds, progress))
        except Exception as exc:  # one broken run must not hide the others
            report.runs.append(KindRun(kind, count, 0.0, 0.0, 0.0, False, f"{type(exc).__name__}: {exc}"))
    report.failures += [f"{r.kind}: {r.error}" for r in report.runs if r.error]
    return report


def format_report(report: HostileReport) -> str:
    parts = [f"## The serving path under hostile clients ({report.sockets} sockets per kind)"]
    parts += ["", *report.notes] if report.notes else []
    if report.runs:
        targets = report.targets()
        rows = [
            [
                r.kind,
                r.sockets,
                f"{r.health_median_ms:.1f}",
                f"{r.health_max_ms:.1f}",
                "-" if r.error else f"{r.rate:,.0f}",
                fmt_ratio(report.ratio(r)),
                r.rounds,
                ", ".join(map(str, r.statuses)),
                r.restarts,
                f"{r.answered_s:.2f}" if r.kind in ANSWERED and not r.error else "-",
                r.error or "",
            ]
            for r in report.runs
        ]
        parts += [
            "",
            f"A fresh served scheduler per kind: {report.asks:,} asks on {report.nodes:,} nodes (fair); then rounds "
            f"of the misbehaving sockets opened, held through {CHECKS} health checks (each on a new connection) and "
            "closed; the timed scheduling run goes during the first round, its ratio is against the run with none; "
            "worker restarts are pid changes between rounds. The timed run's request is sent before the sockets open "
            f"and starts {RUN_DELAY:g} s later, while they are held. Sockets that send whole requests: the checks "
            "start once every socket has its answer waiting, unread (answered s: the slowest round's time to answer "
            "the sockets' own requests). Past the cap: the server's cap is half the sockets; "
            "a health check that meets a full cap is answered 503 at once (the time to that answer is timed).",
            "",
            format_table(
                ["clients", "sockets", "health check median ms", "slowest ms", "allocations/s", "vs none",
                 "rounds", "HTTP", "worker restarts", "answered s", "error"],
                rows,
                align="lrrrrrrlrrl",
            ),
            "",
            f"Targets: every health check under {TARGET_MS:g} ms: {'met' if targets['health_under_100ms'] else 'NOT met'}; "
            f"scheduling at least {TARGET_RATIO:.1f}x of none: {'met' if targets['scheduling_ratio_at_least_0.9'] else 'NOT met'}; "
            f"no worker restart: {'met' if targets['no_worker_restart'] else 'NOT met'}.",
        ]
    if report.failures:
        parts += ["", "FAILURES:", *(f"- {failure}" for failure in report.failures)]
    return "\n".join(parts)
