"""The serving path under hostile clients (issue 10): ``python -m benchmarks hostile-clients``.

For each kind of misbehaving client, a fresh served scheduler (``pyscheduler serve`` with the
benchmark's RM, :class:`benchmarks.rest.ServedScheduler`) gets YuniKorn's scheduling workload
(the REST benchmark's part (c): root.a and root.b, 10,000 asks on 1,000 nodes, ``fair``), then
``sockets`` connections (900 by default, under the worker's 1,000-connection cap) that
misbehave and stay open while

- 10 health checks (``/ws/v1/scheduler/healthcheck``, each on a new connection) are timed
  (target: under 100 ms, every one), and
- the timed scheduling run goes (``/bench/run``: from the loop's start to the last allocation),
  compared with the same run and no such clients (target: at least 0.9x);

then whether the worker survived (the same process answers before and after). The kinds: idle
sockets, half a request head, a whole head with a body that never completes, answers never
read (``Connection: close``), connections kept alive after one request.
"""

from __future__ import annotations

import http.client
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

SOCKETS: Final = 900
QUICK_SOCKETS: Final = 150
CHECKS: Final = 10
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
}


@dataclass
class KindRun:
    kind: str
    sockets: int
    health_median_ms: float
    health_max_ms: float
    rate: float
    worker_survived: bool
    error: str | None = None


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
            "no_worker_restart": bool(hostile) and all(r.worker_survived for r in hostile),
        }

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ratios"] = {r.kind: self.ratio(r) for r in self.runs}
        data["targets"] = self.targets()
        return data

    def format(self) -> str:
        return format_report(self)


@contextmanager
def misbehaving(port: int, count: int, first: bytes | None) -> Iterator[list[socket.socket]]:
    opened: list[socket.socket] = []
    try:
        if first is not None:
            for _ in range(count):
                sock = socket.create_connection(("127.0.0.1", port), timeout=10)
                if first:
                    sock.sendall(first)
                opened.append(sock)
            time.sleep(0.3)  # let the server see them all
        yield opened
    finally:
        for sock in opened:
            sock.close()


def health_ms(port: int) -> float:
    began = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", "/ws/v1/scheduler/healthcheck", headers={"Connection": "close"})
        response = conn.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"health check: HTTP {response.status}")
    finally:
        conn.close()
    return (time.perf_counter() - began) * 1e3


def run_kind(kind: str, nodes: int, asks: int, sockets: int, progress: Callable[[str], None]) -> KindRun:
    timeout = max(60.0, asks / 50)
    with ServedScheduler() as server:
        pid = server.json("POST", f"/bench/setup?nodes={nodes}&asks={asks}", timeout=300)["worker_pid"]
        with misbehaving(server.port, sockets, KINDS[kind]):
            times = [health_ms(server.port) for _ in range(CHECKS)]
            result = server.json("POST", f"/bench/run?timeout={timeout:g}", timeout=timeout + 60)
        survived = server.json("GET", "/bench/state")["worker_pid"] == pid
    outcome = KindRun(
        kind, 0 if KINDS[kind] is None else sockets, statistics.median(times), max(times), float(result["rate"]),
        survived, result["error"],
    )
    progress(
        f"hostile-clients: {kind}: health check {outcome.health_median_ms:.1f} ms median, "
        f"{outcome.health_max_ms:.1f} ms slowest; {outcome.rate:,.0f} allocations/s"
    )
    return outcome


def run(*, quick: bool = False, sockets: int | None = None, progress: Callable[[str], None] | None = None) -> HostileReport:
    if progress is None:
        progress = Progress()
    count = sockets or (QUICK_SOCKETS if quick else SOCKETS)
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
            report.runs.append(run_kind(kind, nodes, asks, count, progress))
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
                "yes" if r.worker_survived else "NO",
                r.error or "",
            ]
            for r in report.runs
        ]
        parts += [
            "",
            f"A fresh served scheduler per kind: {report.asks:,} asks on {report.nodes:,} nodes (fair), the "
            f"misbehaving sockets opened after the setup and held through {CHECKS} health checks (each on a new "
            "connection) and the timed scheduling run; the ratio is against the run with none.",
            "",
            format_table(
                ["clients", "sockets", "health check median ms", "slowest ms", "allocations/s", "vs none",
                 "worker survived", "error"],
                rows,
                align="lrrrrrll",
            ),
            "",
            f"Targets: every health check under {TARGET_MS:g} ms: {'met' if targets['health_under_100ms'] else 'NOT met'}; "
            f"scheduling at least {TARGET_RATIO:.1f}x of none: {'met' if targets['scheduling_ratio_at_least_0.9'] else 'NOT met'}; "
            f"no worker restart: {'met' if targets['no_worker_restart'] else 'NOT met'}.",
        ]
    if report.failures:
        parts += ["", "FAILURES:", *(f"- {failure}" for failure in report.failures)]
    return "\n".join(parts)
