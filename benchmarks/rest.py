"""The REST benchmarks: benchmarks.md section 2, its REST part, measured on a served scheduler.

Every figure comes from a real ``pyscheduler serve`` (gunicorn, one gthread worker, the
scheduler in it) on a free port of 127.0.0.1, started by this module with its own RM embedded
(``--rm benchmarks.rest:attach``, see :func:`attach`), and stopped at the end of each
part even when it fails (SIGTERM, then SIGKILL of its process group).

(a) **Batch**: ``GET /ws/v1/events/batch?count=10000`` on a full 100,000-event ring (workload
    events of section 1, so the body has realistic ids, resources and messages). Three figures
    per body encoding (``identity``; ``gzip``, what a default client such as requests or a
    browser asks for and YuniKorn answers):

    - **server time**: the WSGI application's time in the served process, from the moment
      gunicorn hands it the request until the response (body and headers built, gzip
      included) is returned. The web layer has no timing header, so :func:`attach` wraps the
      Flask app's ``wsgi_app`` in a timer for this path and ``/bench/timings`` reads it back.
      It leaves out gunicorn's parsing and the socket write.
    - **client time**: request sent to last body byte read, over one kept-alive
      ``http.client`` connection on loopback (no decompression on the client).
    - **in-process ``EventSystem.batch_body``**: the Rust body builder alone, called in the
      served process (the lower bound of the server time).

(b) **Stream replay**: one client opens ``/ws/v1/events/stream?count=100000`` on the full
    ring over a plain socket and decodes the chunked body until it has 100,000 event lines;
    events per second from connecting to the last line (so the request, the subscription
    and the first chunk are in the time).

(c) **Scheduling with open streams**: YuniKorn's BenchmarkScheduling shape (section 3, as
    :mod:`benchmarks.scheduling`: root.a and root.b, 10,000 asks of memory 10 and
    vcore 1, nodes of capacity ``asks / nodes + 1`` asks; 1,000 nodes, ``fair``) run by the
    served scheduler, once with no stream open and once with 100 live streams
    (``/ws/v1/events/stream``, no history) read continuously by this process. As in the
    scheduling benchmark's threaded figure, the served scheduling loop is stopped while the
    nodes, applications and asks are submitted (``/bench/setup``, not timed) and started again
    by ``/bench/run``, which times from that start until the RM callback has every allocation.
    The streams are opened after the setup (they carry the timed run's events only), from
    127.0.0.2, 127.0.0.3, ... (10 each: ``event.maxStreamsPerHost`` is 15 per client address)
    and read by one selector thread that decodes and counts lines. Each run is a fresh server;
    runs alternate (none, streams, none, ...) and the medians are compared. Also reported: the
    events each stream received against those the run stored, and the streams the server cut
    for falling behind.

Machines here have 2 cores shared by the server, the clients and whatever else runs: the
figures are what such a machine gives, compare the ratios.
"""

from __future__ import annotations

import gc
import http.client
import json
import os
import selectors
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

from benchmarks.machine import Progress, fmt_rate, fmt_ratio, format_table

# --- sizes ------------------------------------------------------------------------------------

#: YuniKorn's default ring capacity and REST response size (the server runs with defaults).
RING_EVENTS: Final = 100_000
BATCH_COUNT: Final = 10_000
BATCH_REPEATS: Final = 50
REPLAY_EVENTS: Final = 100_000
REPLAY_REPEATS: Final = 3
STREAMS: Final = 100
SCHED_NODES: Final = 1_000
SCHED_ASKS: Final = 10_000
SCHED_POLICY: Final = "fair"
SCHED_REPEATS: Final = 3

QUICK_RING_EVENTS: Final = 20_000
QUICK_BATCH_REPEATS: Final = 8
QUICK_REPLAY_EVENTS: Final = 20_000
QUICK_REPLAY_REPEATS: Final = 2
QUICK_STREAMS: Final = 10
QUICK_SCHED_NODES: Final = 100
QUICK_SCHED_ASKS: Final = 1_000
QUICK_SCHED_REPEATS: Final = 1

#: Targets (benchmarks.md / the issue).
TARGET_BATCH_MS: Final = 20.0
TARGET_REPLAY_RATE: Final = 1_000_000.0
TARGET_STREAMS_RATIO: Final = 0.9

#: Streams per client address (YuniKorn's event.maxStreamsPerHost default is 15).
STREAMS_PER_SOURCE: Final = 10
BATCH_PATH: Final = "/ws/v1/events/batch"
STREAM_PATH: Final = "/ws/v1/events/stream"
RM_ID: Final = "bench-rest"
CLOSED_BY_PRODUCER: Final = b"closed by the producer"

STARTUP_TIMEOUT: Final = 60.0
STOP_TIMEOUT: Final = 15.0
HTTP_TIMEOUT: Final = 60.0

#: The served configuration: the scheduling benchmark's queues (root.a, root.b).
CONFIG: Final = """\
partitions:
  - name: default
    nodesortpolicy: {type: %s}
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
          - name: b
"""


# =============================================================================================
# The served side: the RM embedded in the server (``--rm benchmarks.rest:attach``)
# =============================================================================================


class _TimingMiddleware:
    """Times the WSGI app for one path (the batch endpoint): request in, response built."""

    def __init__(self, app: Callable[..., Any], path: str, sink: deque[int]) -> None:
        self.app = app
        self.path = path
        self.sink = sink

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if environ.get("PATH_INFO") != self.path:
            return self.app(environ, start_response)
        started = time.perf_counter_ns()
        result = self.app(environ, start_response)
        self.sink.append(time.perf_counter_ns() - started)
        return result


class BenchRM:
    """The benchmark's RM in the served process: counts allocations, as the scheduling
    benchmark's ``CountingRM`` does, and owns the ``/bench/*`` routes' state."""

    def __init__(self, service: Any) -> None:
        self.service = service
        self.allocated = 0
        self.rejected = 0
        self.target = 0
        self.done = threading.Event()
        self.timings: deque[int] = deque(maxlen=100_000)

    # The RM callback (see docs/scheduler.md). New allocations come from the scheduling
    # cycle, one thread at a time: no lock needed for the counter.
    def update_allocation(self, response: Any) -> None:
        if response.new:
            self.allocated += len(response.new)
            if self.target and self.allocated >= self.target:
                self.done.set()
        if response.rejected_allocations:
            self.rejected += len(response.rejected_allocations)

    def update_application(self, response: Any) -> None:
        """Accepted applications: nothing to do."""

    def update_node(self, response: Any) -> None:
        """Accepted nodes: nothing to do."""

    def send_event(self, events: Any) -> None:
        """Request events: not surfaced."""

    def update_container_scheduling_state(self, request: Any) -> None:
        """Autoscaling hints: not used."""

    def stop(self) -> None:
        self.done.set()

    def init_app(self, app: Any) -> None:
        """The served app, once started (``pyscheduler_web.rm_routes.FlaskExtensionRM``): times
        the batch endpoint and adds the ``/bench/*`` routes (benchmark servers only)."""
        app.wsgi_app = _TimingMiddleware(app.wsgi_app, BATCH_PATH, self.timings)
        app.register_blueprint(_bench_routes(self))


def attach(service: Any) -> BenchRM:
    """``pyscheduler serve --rm benchmarks.rest:attach``: registers the benchmark's RM (which
    extends the served app: :meth:`BenchRM.init_app`)."""
    from pyscheduler.si import messages as si

    rm = BenchRM(service)
    service.proxy.register_resource_manager(
        si.RegisterResourceManagerRequest(rm_id=RM_ID, version="bench", policy_group="queues", config=service.config_text),
        rm,
    )
    return rm


def _bench_routes(rm: BenchRM) -> Any:
    from flask import Blueprint, current_app, jsonify, request

    service = rm.service
    events = service.event_system
    bp = Blueprint("bench_rest_routes", __name__)

    def state() -> dict[str, Any]:
        stats = events.stats()
        lowest, highest = events.id_range()
        return {
            "streams": len(current_app.extensions["pyscheduler"].streams),
            "subscribers": stats.subscribers,
            "slow_closed": stats.slow_closed,
            "created": stats.created,
            "dropped": stats.dropped,
            "next_id": events.next_id(),
            "lowest": lowest,
            "highest": highest,
            "held": len(events),
            "allocated": rm.allocated,
            # A new worker (after a crash or a kill by the arbiter) would be another process.
            "worker_pid": os.getpid(),
        }

    @bp.get("/bench/state")
    def get_state() -> Any:
        return jsonify(state())

    @bp.post("/bench/fill")
    def fill() -> Any:
        """Add ``n`` workload events (section 1's model) and wait until they are stored."""
        from benchmarks.workload import generate_events

        n = int(request.args.get("n", str(RING_EVENTS)))
        seed = int(request.args.get("seed", "1"))
        add = events.add
        events.flush(30.0)
        dropped = events.stats().dropped
        started = time.perf_counter()
        for i, (typ, change, detail, ts, obj, ref, msg, res) in enumerate(generate_events(n, seed=seed)):
            add(typ, change, detail, obj, ref, msg, res, ts)
            if i % 20_000 == 19_999:  # the intake queue holds 100k: never let it overflow
                events.flush(30.0)
        events.flush(30.0)
        result = state()
        result["fill_seconds"] = time.perf_counter() - started
        result["fill_dropped"] = result["dropped"] - dropped
        return jsonify(result)

    @bp.get("/bench/batch_body")
    def batch_body() -> Any:
        """``EventSystem.batch_body`` timed in the served process (no HTTP)."""
        start = int(request.args["start"])
        count = int(request.args.get("count", str(BATCH_COUNT)))
        repeats = int(request.args.get("repeats", "10"))
        seconds = []
        size = 0
        for i in range(repeats):
            began = time.perf_counter()
            body = events.batch_body(start + i, count)
            seconds.append(time.perf_counter() - began)
            size = len(body)
            del body
        return jsonify(seconds=seconds, bytes=size)

    @bp.post("/bench/timings")
    def timings() -> Any:
        """The batch endpoint's server times (ns) since the last call; clears them."""
        taken = list(rm.timings)
        rm.timings.clear()
        return jsonify(ns=taken)

    @bp.post("/bench/setup")
    def setup() -> Any:
        """Stop the scheduling loop and submit the benchmark's nodes, apps and asks (not timed);
        ``shape=many-queues`` submits the many-queues shape (the server must serve its queues)."""
        from benchmarks.scheduling import MANY_QUEUES_SHAPE, submit_many_queues, submit_workload

        nodes = int(request.args["nodes"])
        asks = int(request.args["asks"])
        submit = submit_many_queues if request.args.get("shape") == MANY_QUEUES_SHAPE else submit_workload
        proxy = service.proxy
        service.scheduler.stop()
        rm.allocated = 0
        rm.rejected = 0
        rm.target = asks
        rm.done.clear()
        submit(proxy, RM_ID, nodes, asks)
        events.flush(30.0)
        return jsonify(state())

    @bp.post("/bench/run")
    def run() -> Any:
        """Start the scheduling loop, after ``delay`` seconds (untimed: lets a client send this
        request, then set up something to measure it under); time until the RM has every
        allocation (bounded)."""
        timeout = float(request.args.get("timeout", "120"))
        time.sleep(min(max(float(request.args.get("delay", "0")), 0.0), 30.0))
        events.flush(30.0)
        before = events.stats()
        next_before = events.next_id()
        cycles_before = service.scheduler.cycles
        gc.collect()
        cpu_before = os.times()
        started = time.perf_counter()
        service.scheduler.start()
        finished = rm.done.wait(timeout)
        seconds = time.perf_counter() - started
        cpu_after = os.times()
        loop_cpu = _thread_cpu_seconds(service.scheduler.thread)
        events.flush(30.0)
        after = events.stats()
        error = None
        if not finished:
            error = f"{rm.allocated} of {rm.target} allocations after {seconds:.1f} s (timeout {timeout:g} s)"
        elif rm.rejected:
            error = f"{rm.rejected} asks rejected"
        return jsonify(
            allocations=rm.allocated,
            seconds=seconds,
            rate=rm.allocated / seconds if seconds > 0 else 0.0,
            cycles=service.scheduler.cycles - cycles_before,
            events=after.created - before.created,
            events_dropped=after.dropped - before.dropped,
            events_stored=events.next_id() - next_before,
            slow_closed=after.slow_closed - before.slow_closed,
            process_cpu=(cpu_after.user + cpu_after.system) - (cpu_before.user + cpu_before.system),
            loop_cpu=loop_cpu,
            error=error,
        )

    return bp


def _thread_cpu_seconds(thread: threading.Thread | None) -> float | None:
    """CPU time (user + system) a running thread has used, from /proc (Linux; None elsewhere).
    Resolution: the kernel's clock tick (usually 10 ms)."""
    tid = getattr(thread, "native_id", None)
    if tid is None:
        return None
    try:
        with open(f"/proc/self/task/{tid}/stat", encoding="ascii") as f:
            fields = f.read().rpartition(")")[2].split()
        # After the command name: state is field 3, utime and stime are fields 14 and 15.
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


# =============================================================================================
# The client side
# =============================================================================================


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServedScheduler:
    """``pyscheduler serve`` on a free loopback port with :func:`attach` embedded."""

    def __init__(
        self,
        policy: str = SCHED_POLICY,
        workdir: Path | None = None,
        config_text: str | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        #: Extra environment of the served process.
        self.extra_env = dict(env or {})
        self._tmp = tempfile.TemporaryDirectory(prefix="pyscheduler-bench-rest-") if workdir is None else None
        self.workdir = Path(self._tmp.name) if self._tmp is not None else workdir  # type: ignore[assignment]
        self.config = self.workdir / f"queues-{policy}.yaml"
        self.config.write_text(CONFIG % policy if config_text is None else config_text, encoding="utf-8")
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = self.workdir / "server.log"

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> ServedScheduler:
        self.port = free_port()
        self.log_path = self.workdir / f"server-{self.port}.log"
        env = dict(os.environ)
        env.pop("PYSCHEDULER_BIND", None)
        # The served process imports this module (--rm benchmarks.rest:attach): the benchmarks
        # are not installed, so their checkout goes on its path.
        checkout = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (checkout, env.get("PYTHONPATH", "")) if p)
        env.update(self.extra_env)
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable, "-m", "pyscheduler.cli", "serve", "--bind", self.host,
                    "--config", str(self.config), "--rm", "benchmarks.rest:attach",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                cwd=self.workdir,
                start_new_session=True,
            )
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}: {self.log_tail()}")
            try:
                if self.request("GET", "/bench/state", timeout=2.0)[0] == 200:
                    return self
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"server did not answer within {STARTUP_TIMEOUT:g} s: {self.log_tail()}")
            time.sleep(0.1)

    def request(self, method: str, path: str, timeout: float = HTTP_TIMEOUT) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, headers={"Accept-Encoding": "identity"})
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()

    def json(self, method: str, path: str, timeout: float = HTTP_TIMEOUT) -> dict[str, Any]:
        status, body = self.request(method, path, timeout)
        if status != 200:
            raise RuntimeError(f"{method} {path}: HTTP {status}: {body[:300]!r}")
        data: dict[str, Any] = json.loads(body)
        return data

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return " | ".join(text.strip().splitlines()[-lines:])

    def stop(self) -> int | None:
        """SIGTERM (gunicorn's graceful stop), SIGKILL of the group after STOP_TIMEOUT."""
        process = self.process
        code = None
        if process is not None:
            if process.poll() is None:
                try:
                    process.send_signal(signal.SIGTERM)
                    process.wait(STOP_TIMEOUT)
                except subprocess.TimeoutExpired:
                    try:
                        os.killpg(process.pid, signal.SIGKILL)
                    except OSError:
                        pass
                    process.wait(5)
            code = process.returncode
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
        return code

    def __enter__(self) -> ServedScheduler:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ChunkedLines:
    """Decodes a chunked HTTP body incrementally, counting lines (NDJSON events) without
    splitting or copying it, and keeping its last bytes (for YuniKorn's closing line)."""

    __slots__ = ("pending", "remaining", "trailer", "lines", "chunks", "body_bytes", "finished", "tail")

    def __init__(self) -> None:
        self.chunks = 0
        self.pending = b""
        self.remaining = 0
        self.trailer = 0
        self.lines = 0
        self.body_bytes = 0
        self.finished = False
        self.tail = b""

    def feed(self, data: bytes | bytearray, size: int | None = None) -> None:
        """Decodes ``data[:size]`` (all of it by default): a reused receive buffer can be fed
        without copying what was read into a new ``bytes``."""
        pos, size = 0, len(data) if size is None else size
        while pos < size and not self.finished:
            if self.remaining:
                end = min(size, pos + self.remaining)
                self.lines += data.count(b"\n", pos, end)
                self.body_bytes += end - pos
                self.tail = (self.tail + data[max(pos, end - 256) : end])[-256:]
                self.remaining -= end - pos
                pos = end
                if not self.remaining:
                    self.trailer = 2
            elif self.trailer:
                take = min(self.trailer, size - pos)
                self.trailer -= take
                pos += take
            else:
                newline = data.find(b"\n", pos)
                if newline < 0:
                    self.pending += data[pos:]
                    if len(self.pending) > 1024:
                        raise ValueError("bad chunk size line")
                    return
                line, self.pending = self.pending + data[pos:newline], b""
                pos = newline + 1
                chunk = int(line.split(b";")[0].strip(), 16)
                if chunk == 0:
                    self.finished = True
                else:
                    self.remaining = chunk
                    self.chunks += 1

    @property
    def closed_by_producer(self) -> bool:
        return CLOSED_BY_PRODUCER in self.tail


def open_stream(
    port: int, query: str, source: str | None = None, timeout: float = 10.0, host: str = "127.0.0.1"
) -> tuple[socket.socket, ChunkedLines]:
    """``GET /ws/v1/events/stream?QUERY`` over a plain socket; returns it once the headers
    are in (the body bytes read so far are already fed to the decoder). Also used by the
    locust stream clients (loadtests/locustfile.py)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if source is not None:
            sock.bind((source, 0))
        sock.settimeout(timeout)
        sock.connect((host, port))
        sock.sendall(f"GET {STREAM_PATH}?{query} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        buffer = b""
        deadline = time.monotonic() + timeout
        while b"\r\n\r\n" not in buffer:
            if time.monotonic() > deadline or len(buffer) > 65536:
                raise TimeoutError("no stream headers")
            data = sock.recv(65536)
            if not data:
                raise EOFError("connection closed before the headers")
            buffer += data
        head, _, rest = buffer.partition(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        status = int(status_line.split()[1])
        headers = {k.strip().lower(): v.strip() for k, v in (h.split(":", 1) for h in header_lines if ":" in h)}
        if status != 200 or headers.get("transfer-encoding", "").lower() != "chunked":
            raise RuntimeError(f"stream answered {status_line!r} {rest[:200]!r}")
        decoder = ChunkedLines()
        decoder.feed(rest)
        return sock, decoder
    except BaseException:
        sock.close()
        raise


class StreamFleet:
    """``count`` live streams read continuously by one selector thread (bounded by ``stop``)."""

    def __init__(self, port: int, count: int, per_source: int = STREAMS_PER_SOURCE) -> None:
        self.streams: list[tuple[socket.socket, ChunkedLines]] = []
        self.eof = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: str | None = None
        #: CPU seconds the reader thread used (set when it ends).
        self.reader_cpu: float | None = None
        try:
            for i in range(count):
                source = f"127.0.0.{2 + i // per_source}"
                self.streams.append(open_stream(port, "", source=source))
        except BaseException:
            self.close()
            raise

    def start(self) -> None:
        self._thread = threading.Thread(target=self._read, name="bench-rest-streams", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        selector = selectors.DefaultSelector()
        # One receive buffer for every stream: no fresh multi-100 KB bytes object per read.
        buffer = bytearray(1 << 20)
        cpu = time.thread_time()
        try:
            for sock, decoder in self.streams:
                sock.setblocking(False)
                selector.register(sock, selectors.EVENT_READ, decoder)
            while not self._stop.is_set() and selector.get_map():
                for key, _ in selector.select(0.1):
                    sock = key.fileobj
                    try:
                        size = sock.recv_into(buffer)  # type: ignore[union-attr]
                    except (BlockingIOError, InterruptedError):
                        continue
                    except OSError:
                        size = 0
                    if size:
                        key.data.feed(buffer, size)
                    if not size or key.data.finished:
                        selector.unregister(sock)
                        self.eof += 1
        except Exception as exc:  # reported with the results
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            selector.close()
            self.reader_cpu = time.thread_time() - cpu

    def lines(self) -> list[int]:
        """Event lines received per stream (the InstanceUUID line not counted)."""
        return [max(0, decoder.lines - 1) for _, decoder in self.streams]

    def chunks(self) -> list[int]:
        return [decoder.chunks for _, decoder in self.streams]

    def done(self, expected: int) -> bool:
        """Every stream has ``expected`` events or has ended."""
        return all(decoder.finished or decoder.lines - 1 >= expected for _, decoder in self.streams)

    def cut(self) -> int:
        return sum(1 for _, decoder in self.streams if decoder.closed_by_producer)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)
            self._thread = None
        for sock, _ in self.streams:
            try:
                sock.close()
            except OSError:
                pass


# --- (a) batch ----------------------------------------------------------------------------------


@dataclass
class Timing:
    """Milliseconds over repeats: median, p95 (nearest rank), min, max."""

    samples: int
    median_ms: float
    p95_ms: float
    min_ms: float
    max_ms: float

    @classmethod
    def of(cls, seconds: Sequence[float]) -> Timing:
        ordered = sorted(seconds)
        p95 = ordered[min(len(ordered) - 1, max(0, int(round(0.95 * len(ordered) + 0.5)) - 1))]
        return cls(
            samples=len(ordered),
            median_ms=statistics.median(ordered) * 1e3,
            p95_ms=p95 * 1e3,
            min_ms=ordered[0] * 1e3,
            max_ms=ordered[-1] * 1e3,
        )


@dataclass
class BatchResult:
    encoding: str
    count: int
    body_bytes: int
    server: Timing
    client: Timing


@dataclass
class BatchReport:
    ring_events: int
    count: int
    repeats: int
    fill_seconds: float
    results: list[BatchResult] = field(default_factory=list)
    batch_body: Timing | None = None
    batch_body_bytes: int = 0


def measure_batch(
    server: ServedScheduler, ring: int, count: int, repeats: int, progress: Callable[[str], None]
) -> BatchReport:
    filled = server.json("POST", f"/bench/fill?n={ring}", timeout=300)
    if filled["fill_dropped"]:
        raise RuntimeError(f"{filled['fill_dropped']} events dropped while filling the ring")
    lowest, held = int(filled["lowest"]), int(filled["held"])
    if held < count:
        raise RuntimeError(f"the ring holds {held} events, fewer than {count}")
    progress(f"rest (a): ring filled with {held:,} events in {filled['fill_seconds']:.1f} s; {repeats} batches per encoding")
    report = BatchReport(ring_events=held, count=count, repeats=repeats, fill_seconds=filled["fill_seconds"])
    span = held - count + 1
    starts = [lowest + (i * 7_919) % span for i in range(repeats)]
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=HTTP_TIMEOUT)

    def get(start: int, encoding: str) -> tuple[float, bytes, http.client.HTTPResponse]:
        began = time.perf_counter()
        conn.request("GET", f"{BATCH_PATH}?start={start}&count={count}", headers={"Accept-Encoding": encoding})
        response = conn.getresponse()
        body = response.read()
        return time.perf_counter() - began, body, response

    try:
        for encoding in ("identity", "gzip"):
            for start in starts[:3]:  # warm-up (not timed): connection, code paths, allocator
                get(start, encoding)
            _, body, response = get(starts[0], encoding)
            if response.status != 200:
                raise RuntimeError(f"batch answered {response.status}: {body[:200]!r}")
            if encoding == "gzip":
                if response.getheader("Content-Encoding") != "gzip":
                    raise RuntimeError("the batch body was not gzipped for Accept-Encoding: gzip")
                import gzip as _gzip

                body = _gzip.decompress(body)
            records = json.loads(body)["EventRecords"]
            if not records or len(records) != count:
                raise RuntimeError(f"batch returned {0 if not records else len(records)} events, expected {count}")
            server.json("POST", "/bench/timings")  # clear the warm-up's
            client_seconds = []
            size = 0
            for start in starts:
                seconds, body, response = get(start, encoding)
                if response.status != 200:
                    raise RuntimeError(f"batch answered {response.status}")
                client_seconds.append(seconds)
                size = len(body)
            server_ns = server.json("POST", "/bench/timings")["ns"]
            if len(server_ns) != len(starts):
                raise RuntimeError(f"{len(server_ns)} server timings for {len(starts)} requests")
            report.results.append(
                BatchResult(encoding, count, size, Timing.of([n / 1e9 for n in server_ns]), Timing.of(client_seconds))
            )
    finally:
        conn.close()
    inproc = server.json("GET", f"/bench/batch_body?start={lowest}&count={count}&repeats={repeats}")
    report.batch_body = Timing.of(inproc["seconds"])
    report.batch_body_bytes = int(inproc["bytes"])
    return report


# --- (b) stream replay --------------------------------------------------------------------------


@dataclass
class ReplayReport:
    events: int
    repeats: int
    seconds: list[float] = field(default_factory=list)
    body_bytes: int = 0

    @property
    def median_seconds(self) -> float | None:
        return statistics.median(self.seconds) if self.seconds else None

    @property
    def rate(self) -> float | None:
        median = self.median_seconds
        return self.events / median if median else None


def replay_once(port: int, events: int, timeout: float = 60.0) -> tuple[float, int]:
    """One client replaying ``events`` history events: (seconds to the last line, body bytes)."""
    began = time.perf_counter()
    sock, decoder = open_stream(port, f"count={events}", timeout=timeout)
    try:
        deadline = time.monotonic() + timeout
        want = events + 1  # the InstanceUUID line first
        while decoder.lines < want:
            if decoder.finished:
                raise RuntimeError(f"the stream ended after {decoder.lines - 1} events: {decoder.tail[-200:]!r}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{decoder.lines - 1} of {events} events within {timeout:g} s")
            data = sock.recv(1 << 20)
            if not data:
                raise EOFError(f"connection closed after {decoder.lines - 1} events")
            decoder.feed(data)
        seconds = time.perf_counter() - began
        return seconds, decoder.body_bytes
    finally:
        sock.close()


def measure_replay(server: ServedScheduler, events: int, repeats: int, progress: Callable[[str], None]) -> ReplayReport:
    held = int(server.json("GET", "/bench/state")["held"])
    if held < events:
        raise RuntimeError(f"the ring holds {held} events, fewer than {events}")
    progress(f"rest (b): {repeats} replays of {events:,} events to one client")
    report = ReplayReport(events=events, repeats=repeats)
    for _ in range(repeats):
        seconds, size = replay_once(server.port, events)
        report.seconds.append(seconds)
        report.body_bytes = size
        # The server notices the closed socket within ~100 ms and frees the slot.
        deadline = time.monotonic() + 5.0
        while server.json("GET", "/bench/state")["streams"] and time.monotonic() < deadline:
            time.sleep(0.05)
    return report


# --- (c) scheduling with open streams ----------------------------------------------------------------


@dataclass
class SchedRun:
    streams: int
    rate: float
    seconds: float
    allocations: int
    events: int
    events_dropped: int
    events_stored: int
    #: Events each stream had received when the reads stopped (min / max over streams).
    delivered_min: int | None = None
    delivered_max: int | None = None
    #: Streams that ended with YuniKorn's "closed by the producer" line (fell behind).
    streams_cut: int = 0
    slow_closed: int = 0
    #: Chunks (writes) per stream, median: how often each stream thread woke up to write.
    chunks_median: float | None = None
    #: CPU seconds in the timed run: the served process, its scheduling thread.
    process_cpu: float | None = None
    loop_cpu: float | None = None
    #: CPU seconds of this process's stream reader thread, over its whole life.
    reader_cpu: float | None = None
    error: str | None = None


@dataclass
class SchedReport:
    nodes: int
    asks: int
    policy: str
    streams: int
    repeats: int
    runs: list[SchedRun] = field(default_factory=list)

    def median_rate(self, streams: int) -> float | None:
        rates = [r.rate for r in self.runs if r.streams == streams and not r.error]
        return statistics.median(rates) if rates else None

    @property
    def ratio(self) -> float | None:
        base, loaded = self.median_rate(0), self.median_rate(self.streams)
        return loaded / base if base and loaded is not None else None


def sched_once(nodes: int, asks: int, policy: str, streams: int, progress: Callable[[str], None]) -> SchedRun:
    """One fresh server: setup, ``streams`` live streams opened, the timed run."""
    timeout = max(60.0, asks / 50)
    with ServedScheduler(policy) as server:
        setup = server.json("POST", f"/bench/setup?nodes={nodes}&asks={asks}", timeout=300)
        if setup["allocated"]:
            raise RuntimeError("allocations before the timed run: the loop was not stopped")
        fleet = StreamFleet(server.port, streams) if streams else None
        try:
            if fleet is not None:
                fleet.start()
                deadline = time.monotonic() + 10.0
                while server.json("GET", "/bench/state")["streams"] < streams:
                    if time.monotonic() > deadline:
                        opened = server.json("GET", "/bench/state")["streams"]
                        raise RuntimeError(f"only {opened} of {streams} streams open")
                    time.sleep(0.05)
            result = server.json("POST", f"/bench/run?timeout={timeout:g}", timeout=timeout + 60)
            run = SchedRun(
                streams=streams,
                rate=float(result["rate"]),
                seconds=float(result["seconds"]),
                allocations=int(result["allocations"]),
                events=int(result["events"]),
                events_dropped=int(result["events_dropped"]),
                events_stored=int(result["events_stored"]),
                slow_closed=int(result["slow_closed"]),
                process_cpu=result.get("process_cpu"),
                loop_cpu=result.get("loop_cpu"),
                error=result["error"],
            )
            if fleet is not None:
                # Let the streams catch up with the run's events (bounded), then stop reading.
                expected = run.events_stored
                deadline = time.monotonic() + 30.0
                while time.monotonic() < deadline and not fleet.done(expected):
                    time.sleep(0.1)
                delivered = fleet.lines()
                run.delivered_min, run.delivered_max = min(delivered), max(delivered)
                run.streams_cut = fleet.cut()
                run.chunks_median = statistics.median(fleet.chunks())
                if fleet.error and not run.error:
                    run.error = f"stream reader: {fleet.error}"
        finally:
            if fleet is not None:
                fleet.close()
    if fleet is not None:
        run.reader_cpu = fleet.reader_cpu
    progress(
        f"rest (c): {streams:>3} streams: {run.rate:,.0f} allocations/s ({run.seconds:.2f} s, {run.events:,} events, "
        f"server CPU {_cpu(run.process_cpu)} s, loop {_cpu(run.loop_cpu)} s"
        + (f", per stream {run.delivered_min:,}-{run.delivered_max:,}, {run.streams_cut} cut" if streams else "")
        + ")"
    )
    return run


def measure_sched(
    nodes: int, asks: int, policy: str, streams: int, repeats: int, progress: Callable[[str], None]
) -> SchedReport:
    report = SchedReport(nodes=nodes, asks=asks, policy=policy, streams=streams, repeats=repeats)
    progress(f"rest (c): {asks:,} asks on {nodes:,} nodes ({policy}), 0 vs {streams} streams, x{repeats}, "
             "a fresh server per run")
    for _ in range(repeats):
        for count in (0, streams):
            try:
                report.runs.append(sched_once(nodes, asks, policy, count, progress))
            except Exception as exc:  # one broken run must not hide the others
                report.runs.append(SchedRun(count, 0.0, 0.0, 0, 0, 0, 0, error=f"{type(exc).__name__}: {exc}"))
    return report


# --- the family ---------------------------------------------------------------------------------


@dataclass
class RestReport:
    """Everything the REST benchmark found."""

    quick: bool
    batch: BatchReport | None = None
    replay: ReplayReport | None = None
    scheduling: SchedReport | None = None
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if self.replay is not None:
            data["replay"].update(median_seconds=self.replay.median_seconds, events_per_second=self.replay.rate)
        if self.scheduling is not None:
            data["scheduling"].update(
                rate_without_streams=self.scheduling.median_rate(0),
                rate_with_streams=self.scheduling.median_rate(self.scheduling.streams),
                ratio=self.scheduling.ratio,
            )
        data["targets"] = self.targets()
        return data

    def targets(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        if self.batch is not None:
            identity = next((r for r in self.batch.results if r.encoding == "identity"), None)
            if identity is not None:
                found["batch_server_ms_under_20"] = identity.server.median_ms < TARGET_BATCH_MS
        if self.replay is not None and self.replay.rate is not None:
            found["replay_over_1M_per_s"] = self.replay.rate > TARGET_REPLAY_RATE
        if self.scheduling is not None and self.scheduling.ratio is not None:
            found["streams_ratio_at_least_0.9"] = self.scheduling.ratio >= TARGET_STREAMS_RATIO
        return found

    def format(self) -> str:
        return format_report(self)


def run(
    *,
    quick: bool = False,
    streams: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> RestReport:
    """Runs (a), (b) and (c); each part's failure is recorded and the others still run."""
    if progress is None:
        progress = Progress()
    report = RestReport(quick=quick)
    try:
        import pyscheduler_web  # noqa: F401
    except ImportError:
        report.notes.append("not run: the web package (pyscheduler-web) is not installed (pip install -e web)")
        return report
    ring = QUICK_RING_EVENTS if quick else RING_EVENTS
    replay_events = QUICK_REPLAY_EVENTS if quick else REPLAY_EVENTS
    try:
        with ServedScheduler() as server:
            try:
                report.batch = measure_batch(
                    server, ring, BATCH_COUNT, QUICK_BATCH_REPEATS if quick else BATCH_REPEATS, progress
                )
            except Exception as exc:
                report.failures.append(f"batch: {type(exc).__name__}: {exc}")
            try:
                if report.batch is None:  # the ring must be full for the replay
                    server.json("POST", f"/bench/fill?n={ring}", timeout=300)
                report.replay = measure_replay(
                    server, replay_events, QUICK_REPLAY_REPEATS if quick else REPLAY_REPEATS, progress
                )
            except Exception as exc:
                report.failures.append(f"replay: {type(exc).__name__}: {exc}")
    except Exception as exc:
        report.failures.append(f"server for (a) and (b): {type(exc).__name__}: {exc}")
    try:
        report.scheduling = measure_sched(
            QUICK_SCHED_NODES if quick else SCHED_NODES,
            QUICK_SCHED_ASKS if quick else SCHED_ASKS,
            SCHED_POLICY,
            streams if streams is not None else (QUICK_STREAMS if quick else STREAMS),
            QUICK_SCHED_REPEATS if quick else SCHED_REPEATS,
            progress,
        )
        for r in report.scheduling.runs:
            if r.error:
                report.failures.append(f"scheduling with {r.streams} streams: {r.error}")
    except Exception as exc:
        report.failures.append(f"scheduling: {type(exc).__name__}: {exc}")
    return report


# --- formatting ---------------------------------------------------------------------------------


def _ms(value: float) -> str:
    return f"{value:.2f}"


def _cpu(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _met(ok: bool | None) -> str:
    return "-" if ok is None else ("met" if ok else "NOT met")


def format_report(report: RestReport) -> str:
    parts = ["## REST (benchmarks.md section 2, the REST figures; a served scheduler on 127.0.0.1)"]
    for note in report.notes:
        parts += ["", note]
    targets = report.targets()
    batch = report.batch
    if batch is not None:
        rows = []
        for r in batch.results:
            rows.append([
                f"batch, Accept-Encoding: {r.encoding}",
                f"{r.body_bytes / 1e6:.2f} MB",
                _ms(r.server.median_ms), _ms(r.server.p95_ms),
                _ms(r.client.median_ms), _ms(r.client.p95_ms),
                f"< {TARGET_BATCH_MS:g} ms: {_met(r.server.median_ms < TARGET_BATCH_MS)}",
            ])
        if batch.batch_body is not None:
            rows.append([
                "EventSystem.batch_body in the served process (lower bound)",
                f"{batch.batch_body_bytes / 1e6:.2f} MB",
                _ms(batch.batch_body.median_ms), _ms(batch.batch_body.p95_ms), "-", "-", "",
            ])
        parts += [
            "",
            f"### (a) GET /ws/v1/events/batch?count={batch.count:,} on a full ring ({batch.ring_events:,} workload events)",
            "",
            f"{batch.repeats} requests per encoding at different starts, after 3 untimed ones, on one kept-alive "
            "connection. server: the WSGI app's time in the served process (request in, response built, gzip "
            "included; gunicorn's parsing and the socket write are not in it), read back from the benchmark's "
            "timing wrapper (the web layer has no timing header). client: request sent to last body byte, over "
            "loopback, no decompression. The body size is what went over the wire.",
            "",
            format_table(
                ["what", "body", "server median ms", "server p95 ms", "client median ms", "client p95 ms", "target (server)"],
                rows,
                align="lrrrrrl",
            ),
        ]
    replay = report.replay
    if replay is not None and replay.rate is not None:
        median = replay.median_seconds or 0.0
        parts += [
            "",
            f"### (b) Stream replay: /ws/v1/events/stream?count={replay.events:,}, one client",
            "",
            "A plain socket; chunked framing decoded and lines counted as they arrive; from connect to the last "
            f"event line. Median of {replay.repeats} (all: {', '.join(f'{s * 1e3:.0f} ms' for s in replay.seconds)}).",
            "",
            format_table(
                ["events", "body", "seconds", "events/s", "MB/s", "target"],
                [[
                    f"{replay.events:,}", f"{replay.body_bytes / 1e6:.1f} MB", f"{median:.3f}",
                    fmt_rate(replay.rate), f"{replay.body_bytes / 1e6 / median:.0f}" if median else "-",
                    f"> 1 M events/s: {_met(targets.get('replay_over_1M_per_s'))}",
                ]],
                align="rrrrrl",
            ),
        ]
    sched = report.scheduling
    if sched is not None:
        rows = []
        for r in sched.runs:
            rows.append([
                f"{r.streams}",
                "-" if r.error else f"{r.rate:,.0f}",
                "-" if r.error else f"{r.seconds:.2f}",
                f"{r.events_stored:,}",
                _cpu(r.process_cpu),
                _cpu(r.loop_cpu),
                "-" if r.delivered_min is None else f"{r.delivered_min:,} - {r.delivered_max:,}",
                "-" if r.chunks_median is None else f"{r.chunks_median:,.0f}",
                f"{r.streams_cut} / {r.slow_closed}" if r.streams else "-",
                _cpu(r.reader_cpu),
                r.error or "",
            ])
        base, loaded = sched.median_rate(0), sched.median_rate(sched.streams)
        loaded_runs = [r for r in sched.runs if r.streams and not r.error]
        cut = [r.streams_cut for r in loaded_runs]
        parts += [
            "",
            f"### (c) Scheduling throughput with {sched.streams} open live streams vs none",
            "",
            f"BenchmarkScheduling shape served: {sched.asks:,} asks on {sched.nodes:,} nodes ({sched.policy}), events on; "
            "the served loop is stopped during the untimed setup and started by the timed run; a fresh server per "
            f"run, runs alternating; {sched.repeats} of each. Streams opened after the setup (live only), 10 per "
            "client address, read by one selector thread in the benchmark process. server CPU s: user + system "
            "time of the served process during the timed run (2 cores: up to 2x the seconds); loop thread CPU s: "
            "the scheduling thread's own (10 ms ticks); writes per stream: chunks each stream received (median); "
            "streams cut: ended by the server for falling more than 2,000 events behind; reader CPU s: the "
            "benchmark's stream reader thread over its whole life.",
            "",
            format_table(
                ["streams", "allocations/s", "seconds", "events stored", "server CPU s", "loop thread CPU s",
                 "events read per stream (min - max)", "writes per stream", "streams cut (client / server)",
                 "reader CPU s", "error"],
                rows,
                align="rrrrrrrrrrl",
            ),
            "",
            f"Median: {'-' if base is None else f'{base:,.0f}'} allocations/s with no stream, "
            f"{'-' if loaded is None else f'{loaded:,.0f}'} with {sched.streams}: ratio "
            f"{fmt_ratio(sched.ratio)} (target >= {TARGET_STREAMS_RATIO:.0%}: "
            f"{_met(targets.get('streams_ratio_at_least_0.9'))}).",
        ]
        if cut and max(cut) > 0:
            parts.append(
                f"{min(cut)} to {max(cut)} of the {sched.streams} streams were cut during a loaded run (fell more "
                "than 2,000 events behind): a cut stream costs nothing afterwards, so the ratio flatters the "
                "server; with every stream kept to the end it would be lower."
            )
    if report.failures:
        parts += ["", "FAILURES:", *(f"- {failure}" for failure in report.failures)]
    return "\n".join(parts)

