"""The serving path under hostile clients (issues 10 and 31): ``python -m benchmarks hostile-clients``.

For each kind of misbehaving client, a fresh served scheduler (``pyscheduler serve`` with the
benchmark's RM, :class:`benchmarks.rest.ServedScheduler`) gets YuniKorn's scheduling workload
(the REST benchmark's part (c): root.a and root.b, 10,000 asks on 1,000 nodes, ``fair``), then
10 rounds (:data:`ROUNDS`) of: ``sockets`` connections (1,000 by default) open and misbehave
while 3 health checks (``/ws/v1/scheduler/healthcheck``, each on a new connection) are timed
(target: under 100 ms, every one), then they close. During the first round the timed
scheduling run goes (``/bench/run``: from the loop's start to the last allocation), compared
with the same run and no such clients (target: at least 0.9x). After every round the worker's
pid is read: a changed pid is a worker restart (target: none in the 10 rounds). The rates are
medians of :data:`RATE_RUNS` timed runs per kind (each on a fresh server, with the sockets held:
one round), taken in passes over every kind, so the machine's drift hits every kind alike.

The kinds: idle sockets, half a request head, a whole head with a body that never completes,
answers never read (``Connection: close``), connections kept alive after one request, and
kept-alive connections past the worker's connection cap (a server started with a cap of half
the sockets: those over it get the worker's JSON 503 at once, and so does a health check that
meets a full cap; the time to the answer is what is timed, and the statuses are reported).
gunicorn keeps at most ``cap - threads`` connections alive and closes the others after their
answer, so the cap is not always full when a check arrives.

Issue 31 adds seven kinds: a whole request with half of a second one behind it in the same
write, then one header byte every 5 s (N1); big answers (``/ws/v1/events/batch?count=10000``,
about 3 MB) never read, from sockets with small receive buffers (N2); ``Expect: 100-continue``
and no body (N3); idle sockets all from one address, against a connection cap of half the
sockets (N4: the per-address cap, 256, keeps the others served); request lines ending in a bare
LF (N5); a chunk size of ``FFFFFFFFFFFFFFFFFF`` (N6); a raw UTF-8 byte in the query (N7). What
the misbehaving sockets themselves got is reported too (the status each can read in the first
round: 100, 200, 400, 413, 503, or nothing).

The worker caps the connections of one address (256), so the misbehaving sockets come from
127.0.0.2 on, 200 per address (N4: all from 127.0.0.2), and the health checks from 127.0.0.1.

Kinds whose sockets get an answer (:data:`ANSWERED`) start their checks once every socket
has its answer waiting, unread: the checks measure the server while those clients hold their
connections, not the queue of their own 1,000 requests (the time to answer those is reported).
The timed run starts then too, so that it measures scheduling while the clients hold their
connections and answers, not while the server makes 1,000 answers (for N2 that is 3 GB of
event batches: seconds of CPU, reported as "answered s"). Past the cap its request is sent
before the sockets open (a request sent after them would be refused) and the server starts the
run :data:`RUN_DELAY` s later.
"""

from __future__ import annotations

import concurrent.futures
import http.client
import select
import socket
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
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
#: Timed scheduling runs per kind, each on a fresh server, passes over the kinds alternating
#: (a run lasts about 0.35 s and one run's rate moves by about 10 %: the median of 3 does not).
RATE_RUNS: Final = 3
QUICK_RATE_RUNS: Final = 1
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
    # Issue 31.
    "N1 second head trickled": b"GET /ws/v1/partitions HTTP/1.1\r\nHost: x\r\n\r\nGET /ws/v1/partitions HTTP/1.1\r\nX-Slow: ",
    "N2 big answers never read": b"GET /ws/v1/events/batch?count=10000 HTTP/1.1\r\nHost: x\r\n\r\n",
    "N3 expect 100-continue, no body": (
        b"POST /ws/v1/validate-conf HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n"
    ),
    "N4 one address past its cap": b"",
    "N5 bare LF request lines": b"GET /ws/v1/partitions HTTP/1.1\nHost: x\n\n",
    "N6 huge chunk size": (
        b"POST /ws/v1/validate-conf HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFF\r\npart"
    ),
    "N7 raw UTF-8 in the query": "GET /ws/v1/partitions?q=é HTTP/1.1\r\nHost: x\r\n\r\n".encode(),
}
#: The kind whose health checks meet a full connection cap (answered 503, by design).
CAP_FULL: Final = "kept alive past the cap"
#: Kinds run against a server whose connection cap is half the sockets.
PAST_THE_CAP: Final = frozenset({"kept alive past the cap", "N4 one address past its cap"})
#: Kinds whose sockets all come from one address (the others: 200 per address).
ONE_ADDRESS: Final = frozenset({"N4 one address past its cap"})
PER_ADDRESS: Final = 200
#: Kinds whose sockets then send one byte every TRICKLE_PERIOD s (the first at once).
TRICKLED: Final = frozenset({"N1 second head trickled"})
TRICKLE_PERIOD: Final = 5.0
#: Kinds whose sockets read little (a small receive buffer): the answers stay in the server.
SMALL_BUFFERS: Final = frozenset({"N2 big answers never read"})
#: Kinds whose sockets get an answer: the health checks start once every one has it waiting
#: (not read), so they measure the server while these clients hold their connections, not
#: while it is still answering their 1,000 requests (that time is reported).
ANSWERED: Final = frozenset({
    "answers never read", "kept alive after one request", "kept alive past the cap", "N1 second head trickled",
    "N2 big answers never read", "N3 expect 100-continue, no body", "N5 bare LF request lines",
    "N6 huge chunk size", "N7 raw UTF-8 in the query",
})
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
    #: What the misbehaving sockets could read in the first round (see their_answers).
    answers: dict[str, int] = field(default_factory=dict)
    #: Every timed run's allocations/s (``rate`` is their median).
    rates: list[float] = field(default_factory=list)


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
            # Past the cap a full cap answers the check 503 by design; everywhere else it is served.
            "health_served": bool(hostile) and all(r.statuses == [200] for r in hostile if r.kind != CAP_FULL),
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


def _source(kind: str, index: int) -> str:
    """The address the ``index``-th misbehaving socket of ``kind`` connects from."""
    return "127.0.0.2" if kind in ONE_ADDRESS else f"127.0.0.{2 + index // PER_ADDRESS}"


def _connect(port: int, kind: str, index: int) -> socket.socket:
    sock = socket.socket()
    if kind in SMALL_BUFFERS:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(10)
    sock.bind((_source(kind, index), 0))
    sock.connect(("127.0.0.1", port))
    return sock


def _trickle(opened: list[socket.socket], stop: threading.Event) -> None:
    """One header byte on every socket at once, then every TRICKLE_PERIOD s until ``stop``."""
    while True:
        for sock in opened:
            try:
                sock.send(b"a")
            except OSError:
                pass  # closed by the server (its head deadline), or full
        if stop.wait(TRICKLE_PERIOD):
            return


@contextmanager
def misbehaving(port: int, count: int, kind: str) -> Iterator[list[socket.socket]]:
    first = KINDS[kind]
    opened: list[socket.socket] = []
    stop = threading.Event()
    trickler: threading.Thread | None = None
    try:
        if first is not None:
            for index in range(count):
                sock = _connect(port, kind, index)
                opened.append(sock)
                if first:
                    try:
                        sock.sendall(first)
                    except OSError:
                        pass  # refused past the cap: the server may have closed it already
                # From here on nothing waits on them (with a timeout set, even a MSG_DONTWAIT
                # call would first wait for the socket to be ready).
                sock.setblocking(False)
            time.sleep(0.3)  # let the server see them all
        if kind in TRICKLED:
            trickler = threading.Thread(target=_trickle, args=(opened, stop), daemon=True)
            trickler.start()
        yield opened
    finally:
        stop.set()
        if trickler is not None:
            trickler.join(TRICKLE_PERIOD + 5)
        for sock in opened:
            sock.close()


def their_answers(opened: list[socket.socket]) -> dict[str, int]:
    """What each misbehaving socket can read now, without reading it: the status of the first
    answer (``100``, ``400``...), ``closed``, or ``nothing``; counted."""
    seen: Counter[str] = Counter()
    for sock in opened:
        try:
            data = sock.recv(12, socket.MSG_PEEK)
        except BlockingIOError:
            seen["nothing"] += 1
            continue
        except OSError:
            data = b""
        seen[data[9:12].decode("latin-1") if data.startswith(b"HTTP/1.") else ("closed" if not data else "other")] += 1
    return dict(sorted(seen.items()))


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


def _server_env(kind: str, sockets: int) -> dict[str, str] | None:
    """Past the cap: a connection cap of half the sockets; for one address past its cap, a
    per-address cap below that (the default, 256, unless half the sockets are fewer)."""
    if kind not in PAST_THE_CAP:
        return None
    cap = max(sockets // 2, 1)
    env = {"PYSCHEDULER_MAX_CONNECTIONS": str(cap)}
    if kind in ONE_ADDRESS and cap <= 256:
        env["PYSCHEDULER_MAX_CONNECTIONS_PER_ADDRESS"] = str(max(cap // 2, 1))
    return env


def run_kind(
    kind: str, nodes: int, asks: int, sockets: int, rounds: int, progress: Callable[[str], None]
) -> KindRun:
    timeout = max(60.0, asks / 50)
    times: list[float] = []
    statuses: list[int] = []
    restarts = 0
    answered: list[float] = []
    answers: dict[str, int] = {}
    result: dict[str, Any] = {}
    with ServedScheduler(env=_server_env(kind, sockets)) as server, concurrent.futures.ThreadPoolExecutor(1) as pool:
        first_pid = pid = server.json("POST", f"/bench/setup?nodes={nodes}&asks={asks}", timeout=300)["worker_pid"]
        def start_run(delay: float) -> concurrent.futures.Future[dict[str, Any]]:
            return pool.submit(server.json, "POST", f"/bench/run?timeout={timeout:g}&delay={delay:g}",
                               timeout + delay + 60)

        for round_no in range(rounds):
            run: concurrent.futures.Future[dict[str, Any]] | None = None
            if round_no == 0 and kind in PAST_THE_CAP:
                # Sent before the sockets open (past the cap, a request sent after them would be
                # refused): the server waits RUN_DELAY s, then the timed run goes while they are held.
                run = start_run(RUN_DELAY)
                time.sleep(0.1)
            with misbehaving(server.port, sockets, kind) as opened:
                if kind in ANSWERED:
                    answered.append(wait_answered(opened, ANSWER_WAIT))
                if round_no == 0 and run is None:
                    # Once their requests are answered: the run goes while they hold their
                    # connections, not while the server is still answering them ("answered s").
                    run = start_run(0.0)
                for ms, status in (health_check(server.port) for _ in range(CHECKS)):
                    times.append(ms)
                    statuses.append(status)
                if round_no == 0:
                    answers = their_answers(opened)
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
        max(answered, default=0.0), answers, [float(result["rate"])],
    )
    progress(
        f"hostile-clients: {kind}: {outcome.rounds} rounds, health check {outcome.health_median_ms:.1f} ms median, "
        f"{outcome.health_max_ms:.1f} ms slowest (HTTP {', '.join(map(str, outcome.statuses))}); "
        f"{outcome.rate:,.0f} allocations/s; worker restarts {restarts}"
        + (f"; the sockets' own requests answered within {outcome.answered_s:.2f} s" if answered else "")
        + (f"; they got {_answers_text(answers)}" if answers else "")
    )
    return outcome


def _answers_text(answers: dict[str, int]) -> str:
    return ", ".join(f"{status} x{count}" for status, count in answers.items()) or "-"


def run(
    *,
    quick: bool = False,
    sockets: int | None = None,
    progress: Callable[[str], None] | None = None,
    kinds: Iterable[str] | None = None,
) -> HostileReport:
    """Every kind (or ``kinds``, with the baseline: the ratios need it)."""
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
    chosen = list(KINDS) if kinds is None else [NONE, *(k for k in kinds if k != NONE)]
    by_kind: dict[str, KindRun] = {}
    for repeat in range(QUICK_RATE_RUNS if quick else RATE_RUNS):
        for kind in chosen:  # every pass over all kinds: slow drift of the machine hits each alike
            try:
                # The first pass makes every round; the others one round, for the rate.
                outcome = run_kind(kind, nodes, asks, count, rounds if repeat == 0 else 1, progress)
            except Exception as exc:  # one broken run must not hide the others
                outcome = KindRun(kind, count, 0.0, 0.0, 0.0, False, f"{type(exc).__name__}: {exc}")
            _merge(by_kind, outcome)
    report.runs = list(by_kind.values())
    report.failures += [f"{r.kind}: {r.error}" for r in report.runs if r.error]
    return report


def _merge(by_kind: dict[str, KindRun], outcome: KindRun) -> None:
    """A kind's later run adds its rate (the kind's rate is the median), its health checks and
    its worker restarts; an error of any run is the kind's."""
    first = by_kind.get(outcome.kind)
    if first is None:
        by_kind[outcome.kind] = outcome
        return
    first.rates += outcome.rates
    if first.rates:
        first.rate = statistics.median(first.rates)
    first.health_ms += outcome.health_ms
    if first.health_ms:
        first.health_median_ms = statistics.median(first.health_ms)
        first.health_max_ms = max(first.health_ms)
    first.statuses = sorted(set(first.statuses) | set(outcome.statuses))
    first.restarts += outcome.restarts
    first.worker_survived = first.worker_survived and outcome.worker_survived
    first.error = first.error or outcome.error


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
                _answers_text(r.answers) if r.answers else "-",
                r.error or "",
            ]
            for r in report.runs
        ]
        parts += [
            "",
            f"A fresh served scheduler per kind: {report.asks:,} asks on {report.nodes:,} nodes (fair); then rounds "
            f"of the misbehaving sockets opened, held through {CHECKS} health checks (each on a new connection) and "
            "closed; the timed scheduling run goes during the first round; allocations/s is the median of "
            f"{len(report.runs[0].rates) if report.runs else 0} such runs per kind, each on a fresh server, the "
            "passes over the kinds alternating, and its ratio is against the median with none; "
            "worker restarts are pid changes between rounds. The timed run starts once the sockets are open and "
            "their answers waiting (past the cap: its request is sent before the sockets open and starts "
            f"{RUN_DELAY:g} s later), while they are held. Sockets that get an answer: the checks "
            "start once every socket has its answer waiting, unread (answered s: the slowest round's time to answer "
            "the sockets' own requests; their answers: what each could read in the first round). Past the cap: the "
            "server's cap is half the sockets; a health check that meets a full cap is answered 503 at once (the time "
            f"to that answer is timed). The sockets come from 127.0.0.2 on, {PER_ADDRESS} per address (N4: all from "
            "127.0.0.2, against the per-address cap), the health checks from 127.0.0.1.",
            "",
            format_table(
                ["clients", "sockets", "health check median ms", "slowest ms", "allocations/s", "vs none",
                 "rounds", "HTTP", "worker restarts", "answered s", "their answers", "error"],
                rows,
                align="lrrrrrrlrrll",
            ),
            "",
            f"Targets: every health check under {TARGET_MS:g} ms: {'met' if targets['health_under_100ms'] else 'NOT met'}; "
            f"scheduling at least {TARGET_RATIO:.1f}x of none: {'met' if targets['scheduling_ratio_at_least_0.9'] else 'NOT met'}; "
            f"no worker restart: {'met' if targets['no_worker_restart'] else 'NOT met'}; "
            f"health checks served (200) but past the cap: {'met' if targets['health_served'] else 'NOT met'}.",
        ]
    if report.failures:
        parts += ["", "FAILURES:", *(f"- {failure}" for failure in report.failures)]
    return "\n".join(parts)
