"""The serving worker: gunicorn's threaded worker, hardened against slow, idle and hostile clients.

gunicorn's ``gthread`` worker hands a connection to a pool thread as soon as it is accepted or
readable, and that thread then reads the request head from a blocking socket with no deadline:
a client that sends half a request line holds a thread for as long as it likes, and a hundred
such clients hold the whole pool (the scheduler's REST API then answers nothing). Closing a
connection lingers up to 2 s on the worker's main loop, which also sends the heartbeat to the
arbiter. :class:`ServingWorker` (a subclass, gunicorn's documented way) changes that:

- **A pool thread only for a whole request.** The main loop reads what a connection sends
  without blocking until the head (request line and headers, up to ``\\r\\n\\r\\n``) and the body
  are complete, then hands them to a pool thread. Idle and kept-alive connections cost no
  thread. Every head goes this way, a second one pipelined behind the first included: what a
  thread read past its request goes back to the main loop, never straight to another thread.
- **Deadlines.** The head must arrive within :data:`HEADER_TIMEOUT` (10 s, Go's
  ``ReadHeaderTimeout`` in YuniKorn) of the connection's start or of the previous response,
  and a body (gathered in the main loop as well, up to 16 MiB: by its Content-Length, or to the
  end of a chunked one's trailer section, :mod:`pyscheduler_web.chunked_scan`) within
  :data:`BODY_TIMEOUT` of the head; otherwise the connection is closed. A body cut short is
  handed over at once (and answered 400).
- **Answers written off the pool** (:mod:`pyscheduler_web.outbox`). A thread writes what the
  socket takes at once and queues the rest; the main loop writes the queue as the client reads
  it and closes a connection whose queue makes no progress for :data:`IO_TIMEOUT`. Queues are
  bounded per connection and in all; past the bounds at most 8 threads block on slow readers,
  further answers are dropped. The event stream, written by its own writer, bypasses this.
- **A reserve for the health check.** ``GET /ws/v1/scheduler/healthcheck`` (the probe the Helm
  chart uses) runs on :data:`HEALTH_THREADS` threads of its own, so a busy pool never delays it.
- **Answers at once, in YuniKorn's JSON error shape**, from the main loop: a head over
  :data:`MAX_HEADER_BYTES` (1 MiB, Go's ``DefaultMaxHeaderBytes``) is a 431, a body announced
  past 16 MiB (a Content-Length, or chunk sizes as they arrive) a 413, a head with a bare LF
  line end a 400 (see below), an ``Expect`` other than ``100-continue`` a 417. Whatever
  gunicorn's own parser refuses (a raw UTF-8 byte in the target, a bad header name...) gets
  the same JSON body instead of its HTML page. gunicorn's line and field limits are lifted:
  this worker bounds the whole head instead.
- **Bare LF.** RFC 9112 lets a server accept a lone LF as a line end, and Go does. This worker
  refuses it (400 at once): gunicorn's parser, behind it, requires CRLF, and rewriting line ends
  in front of a parser is how two parsers come to disagree about where a request ends.
- **Expect: 100-continue.** ``HTTP/1.1 100 Continue`` goes out as soon as the head is accepted
  (HTTP/1.1, a body still to come), and gunicorn's own, later one is suppressed.
- **The main loop never waits on a client.** Graceful closes (lingering for the peer's FIN) run
  on a small closer pool; when that is busy, the connection is closed at once.
- **Connection caps.** Beyond ``worker_connections`` a new connection gets a JSON 503 and is
  closed at once instead of waiting, unaccepted, behind the others; so does one from an address
  that already holds :data:`MAX_CONNECTIONS_PER_ADDRESS` (256), so that one host cannot lock
  out the others.

Limits can be changed through the environment (``PYSCHEDULER_HEADER_TIMEOUT``,
``PYSCHEDULER_BODY_TIMEOUT``, ``PYSCHEDULER_IO_TIMEOUT``, ``PYSCHEDULER_MAX_HEADER_BYTES``,
``PYSCHEDULER_MAX_CONNECTIONS_PER_ADDRESS``, ``PYSCHEDULER_ANSWER_BUFFER_PER_CONNECTION``,
``PYSCHEDULER_ANSWER_BUFFER_TOTAL``) and ``worker_connections`` (``--worker-connections`` in
``GUNICORN_CMD_ARGS``).
"""

from __future__ import annotations

import errno
import html
import json
import os
import re
import selectors
import socket
import time
from collections import Counter, deque
from collections.abc import Callable
from concurrent import futures
from functools import partial
from typing import Any, Final

from gunicorn import util
from gunicorn.workers.gthread import _DEFER, TConn, ThreadWorker

from pyscheduler_web.chunked_scan import ChunkedBodyScanner
from pyscheduler_web.outbox import PER_CONNECTION, TOTAL, AnswerBudget, Outbox

__all__ = [
    "HEADER_TIMEOUT",
    "HEALTH_THREADS",
    "IO_TIMEOUT",
    "MAX_CONNECTIONS_PER_ADDRESS",
    "MAX_HEADER_BYTES",
    "ServingWorker",
]


def _env_float(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if value > 0 else default


#: Seconds a client has to send a whole request head (Go's ReadHeaderTimeout in YuniKorn).
HEADER_TIMEOUT: Final = _env_float("PYSCHEDULER_HEADER_TIMEOUT", 10.0)
#: Seconds a client has to send a whole request body once its head is in.
BODY_TIMEOUT: Final = _env_float("PYSCHEDULER_BODY_TIMEOUT", 30.0)
#: Seconds a write (a thread's, or the main loop's of a queued answer) may make no progress.
IO_TIMEOUT: Final = _env_float("PYSCHEDULER_IO_TIMEOUT", 30.0)
#: The largest request body gathered (the REST service's own limit, 16 MiB); above it a 413.
MAX_BODY_BYTES: Final = 16 << 20
#: The largest request head (request line and headers), Go's DefaultMaxHeaderBytes.
MAX_HEADER_BYTES: Final = int(_env_float("PYSCHEDULER_MAX_HEADER_BYTES", float(1 << 20)))
#: Connections one client address may hold at once (a sixteenth of the default global cap).
MAX_CONNECTIONS_PER_ADDRESS: Final = int(_env_float("PYSCHEDULER_MAX_CONNECTIONS_PER_ADDRESS", 256.0))
#: Answer bytes queued for slow readers: per connection, and for all together.
ANSWER_BUFFER_PER_CONNECTION: Final = int(_env_float("PYSCHEDULER_ANSWER_BUFFER_PER_CONNECTION", float(PER_CONNECTION)))
ANSWER_BUFFER_TOTAL: Final = int(_env_float("PYSCHEDULER_ANSWER_BUFFER_TOTAL", float(TOTAL)))
#: Threads that serve only the health check.
HEALTH_THREADS: Final = 2
HEALTH_PATH: Final = b"/ws/v1/scheduler/healthcheck"
#: Graceful closes running at once; more are closed at once (RST rather than a waiting loop).
CLOSERS: Final = 4
MAX_PENDING_CLOSES: Final = 256
#: A refused request's close drains what the client still sends, this long and this much at most.
LINGER: Final = 2.0
MAX_DRAIN: Final = 2 * MAX_BODY_BYTES

_HEAD_END: Final = b"\r\n\r\n"
_BARE_LF: Final = re.compile(rb"(?<!\r)\n")
_READ: Final = 65536
_CONTINUE: Final = b"HTTP/1.1 100 Continue\r\n\r\n"


def _headers(head: bytes) -> dict[bytes, list[bytes]]:
    """The head's header values by lower-cased name (enough to frame the request: gunicorn's
    parser checks the head properly once it is handed over)."""
    found: dict[bytes, list[bytes]] = {}
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        found.setdefault(name.strip().lower(), []).append(value.strip())
    return found


def _body_framing(headers: dict[bytes, list[bytes]]) -> int | str | None:
    """How the request's body ends: its Content-Length, None for a chunked body (or none at
    all: length 0), "too large" above :data:`MAX_BODY_BYTES`. A head gunicorn will refuse
    anyway (a bad or repeated length) is handed over as it is (length 0)."""
    if any(b"chunked" in value.lower() for value in headers.get(b"transfer-encoding", ())):
        return None
    lengths = headers.get(b"content-length", [])
    try:
        length = int(lengths[-1]) if lengths else 0
    except ValueError:
        return 0
    if length > MAX_BODY_BYTES:
        return "too large"
    return max(length, 0)


def _expectation(request_line: bytes, headers: dict[bytes, list[bytes]]) -> str | None:
    """None without an ``Expect`` header, "continue" for ``100-continue`` in an HTTP/1.1
    request (HTTP/1.0 ones are ignored, RFC 9110 section 10.1.1), else "unknown"."""
    values = headers.get(b"expect")
    if not values:
        return None
    if values[-1].lower() != b"100-continue":
        return "unknown"
    return "continue" if request_line.endswith(b"HTTP/1.1") else None


def _address_of(client: Any) -> str:
    """A client's IP address ("" for none: a UNIX socket's peer, which no per-address cap counts)."""
    return str(client[0]) if isinstance(client, tuple) and client else ""


def _is_health_check(request_line: bytes) -> bool:
    method, _, rest = request_line.partition(b" ")
    target = rest.rpartition(b" ")[0]
    return method == b"GET" and target.partition(b"?")[0] == HEALTH_PATH


def _json_answer(status: int, reason: str, message: str) -> bytes:
    # YuniKorn's error shape, encoded as Go encodes it (no spaces).
    body = json.dumps({"status_code": status, "message": message, "description": message}, separators=(",", ":")).encode()
    return (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json; charset=UTF-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body


_GUNICORN_ERROR: Final = re.compile(rb"\AHTTP/1\.1 (\d{3}) ([^\r\n]*)\r\n.*?</h1>\s*(.*?)\s*</body>", re.DOTALL)


def _as_json_error(page: bytes) -> bytes:
    """gunicorn's HTML error answer (``util.write_error``) as YuniKorn's JSON error: the same
    status and reason, the page's message (or the reason) as message."""
    match = _GUNICORN_ERROR.match(page)
    if match is None:
        return _json_answer(500, "Internal Server Error", "internal server error")
    status, reason, message = match.groups()
    text = html.unescape(message.decode("latin-1")) or reason.decode("latin-1")
    return _json_answer(int(status), reason.decode("latin-1"), text)


class _CapturedWrite:
    """Stands for the client socket while gunicorn writes an error page, to keep the page."""

    def __init__(self) -> None:
        self.data = b""

    def gettimeout(self) -> float:
        return 0.0

    def sendall(self, data: bytes) -> None:
        self.data += data


class DeadlineSocket(socket.socket):
    """A client socket whose blocking mode has a deadline, and whose writes go through an
    :class:`~pyscheduler_web.outbox.Outbox` once one is attached.

    gunicorn's pool threads switch a connection to blocking mode before reading its body and
    writing its answer; here that means "blocking for at most :data:`IO_TIMEOUT`", and a
    ``sendall`` that never waits for a slow reader (see the outbox). Code that writes to the
    descriptor itself (the event stream's writer, ``sendfile``) calls :meth:`write_directly`
    first, so that nothing queued is overtaken."""

    io_timeout: float = IO_TIMEOUT
    outbox: Outbox | None = None

    def setblocking(self, flag: bool) -> None:
        if flag:
            self.settimeout(self.io_timeout)
        else:
            super().setblocking(False)

    def sendall(self, data: Any, flags: int = 0) -> None:
        outbox = self.outbox
        if outbox is None or flags:
            super().sendall(data, flags)
        else:
            outbox.write(self, data)

    def write_directly(self) -> None:
        """Writes what is queued (blocking, with the deadline), then stops queueing."""
        outbox, self.outbox = self.outbox, None
        if outbox is not None and outbox.size:
            outbox.write_pending(self)

    def sendfile(self, file: Any, offset: int = 0, count: int | None = None) -> int:
        self.write_directly()
        return super().sendfile(file, offset, count)


class HeadConn(TConn):  # type: ignore[misc]  # gunicorn is untyped
    """A connection that gathers each request in the main loop before a thread serves it."""

    def __init__(self, cfg: Any, sock: DeadlineSocket, client: Any, server: Any, outbox: Outbox) -> None:
        super().__init__(cfg, sock, client, server)
        self.outbox = outbox
        sock.outbox = outbox
        #: The client's address, as the per-address cap counts it.
        self.address = _address_of(client)
        self.head = bytearray()
        self.head_deadline = time.monotonic() + HEADER_TIMEOUT
        #: Once the head is in: where the body starts, and how the end of the body is known
        #: (its length, or for a chunked body a scanner of its framing).
        self.body_start: int | None = None
        self.body_length: int | None = None
        self.chunks: ChunkedBodyScanner | None = None
        #: This request is the health check (served by the reserve), and was sent 100 Continue.
        self.health = False
        self.continued = False
        #: While its queued answer is written: whether the connection stays open afterwards.
        self.keep_after_flush = False

    def start_head(self) -> None:
        """Waits for the next request head (a new connection, or one kept alive)."""
        self.sock.outbox = self.outbox  # again, after an event stream wrote directly
        self.head = bytearray()
        self.head_deadline = time.monotonic() + HEADER_TIMEOUT
        self.body_start = None
        self.body_length = None
        self.chunks = None
        self.health = False
        self.continued = False

    def init(self) -> None:
        fresh = self.parser is None
        super().init()
        if fresh and self.head and self.parser is not None and hasattr(self.parser, "unreader"):
            self.parser.unreader.unread(bytes(self.head))
            self.head = bytearray()

    def read_ahead(self) -> bytes:
        """What the parser read past the request just served (a pipelined next request)."""
        if self.parser is None or not hasattr(self.parser, "unreader"):
            return b""
        return bytes(self.parser.unreader.take_buffered())


class ServingWorker(ThreadWorker):  # type: ignore[misc]  # gunicorn is untyped
    """See the module doc."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.heading: deque[HeadConn] = deque()
        #: Connections whose queued answer the main loop is writing.
        self.flushing: set[HeadConn] = set()
        self.per_address: Counter[str] = Counter()
        self.max_per_address = min(MAX_CONNECTIONS_PER_ADDRESS, self.worker_connections)
        self.budget = AnswerBudget(ANSWER_BUFFER_TOTAL)
        self.closer: futures.ThreadPoolExecutor | None = None
        self.reserve: futures.ThreadPoolExecutor | None = None
        self.pending_closes = 0

    def init_process(self) -> None:
        self.closer = futures.ThreadPoolExecutor(max_workers=CLOSERS, thread_name_prefix="pyscheduler-closer")
        self.reserve = futures.ThreadPoolExecutor(max_workers=HEALTH_THREADS, thread_name_prefix="pyscheduler-health")
        super().init_process()

    # -- accepting ---------------------------------------------------------------------------

    def set_accept_enabled(self, enabled: bool) -> None:
        # While running, keep accepting past the cap: a connection over it is refused at once
        # (accept) rather than left unaccepted in the listen queue behind the others.
        super().set_accept_enabled(enabled or self.alive)
        if not self.alive:
            # Stopping: a connection still waiting for its request head has none in progress.
            for conn in list(self.heading):
                self._drop(conn)

    def accept(self, listener: socket.socket) -> None:
        try:
            raw, client = listener.accept()
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return
        sock = DeadlineSocket(raw.family, raw.type, raw.proto, fileno=raw.detach())
        address = _address_of(client)
        if self.nr_conns >= self.worker_connections:
            self._refuse(sock, 503, "Service Unavailable", "too many connections: try again later")
            return
        if address and self.per_address[address] >= self.max_per_address:
            self._refuse(sock, 503, "Service Unavailable",
                         f"too many connections from {address} (at most {self.max_per_address}): try again later")
            return
        conn = HeadConn(self.cfg, sock, client, listener.getsockname(), Outbox(self.budget, ANSWER_BUFFER_PER_CONNECTION))
        self.nr_conns += 1
        self.per_address[conn.address] += 1
        self._await_head(conn)

    def _forget(self, conn: HeadConn) -> None:
        """The connection no longer counts against the caps; its queued answer is dropped."""
        self.nr_conns -= 1
        left = self.per_address[conn.address] - 1
        if left > 0:
            self.per_address[conn.address] = left
        else:
            del self.per_address[conn.address]
        conn.outbox.discard()

    def _refuse(self, sock: socket.socket, status: int, reason: str, message: str) -> None:
        """Answers with YuniKorn's JSON error and closes. The close lingers (off the main loop),
        draining what the client is still sending, so that it reads the answer rather than a
        reset."""
        try:
            socket.socket.setblocking(sock, False)
            socket.socket.send(sock, _json_answer(status, reason, message))
        except OSError:
            util.close(sock)
            return
        self._linger_off_loop(sock)

    def _linger_off_loop(self, sock: socket.socket) -> None:
        def linger() -> None:
            socket.socket.setblocking(sock, True)
            util.close_graceful(sock, timeout=LINGER, max_drain=MAX_DRAIN)

        self._off_loop(linger, lambda: util.close(sock))

    # -- requests gathered in the main loop ---------------------------------------------------

    def _await_head(self, conn: HeadConn, read_ahead: bytes = b"") -> None:
        """Gathers the connection's next request; ``read_ahead``: its first bytes, already read."""
        conn.start_head()
        socket.socket.setblocking(conn.sock, False)
        self.heading.append(conn)
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._on_head_readable, conn))
        if read_ahead:
            self._received(conn, read_ahead)

    def _on_head_readable(self, conn: HeadConn, client: socket.socket) -> None:
        try:
            data = conn.sock.recv(_READ)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if data:
            self._received(conn, data)
        elif conn.body_start is None:  # the client went away before sending a whole head
            self._drop(conn)
        else:  # a body cut short: the request is answered (400) without waiting for more
            self._hand_over(conn)

    def _received(self, conn: HeadConn, data: bytes) -> None:
        conn.head += data
        if conn.body_start is None and not self._head_accepted(conn, len(data)):
            return
        self._body_received(conn)

    def _head_accepted(self, conn: HeadConn, new: int) -> bool:
        """True once the head is whole and acceptable (its body's framing then known); False
        while it is incomplete, or when it was refused (the connection is then closed)."""
        head = conn.head
        # Look for the end of the head only in the new bytes (and the 3 before them).
        end = head.find(_HEAD_END, max(0, len(head) - new - 3))
        if _BARE_LF.search(head, max(0, len(head) - new), end if end >= 0 else len(head)):
            self._answer_and_close(conn, 400, "Bad Request", "bare LF as line terminator in the request head")
            return False
        if end < 0:
            if len(head) > MAX_HEADER_BYTES:
                self._head_too_large(conn)
            return False
        if end > MAX_HEADER_BYTES:
            self._head_too_large(conn)
            return False
        text = bytes(head[:end])
        if text.startswith(b"\r\n"):  # one empty line before the request line is allowed
            text = text[2:]
        request_line = text.partition(b"\r\n")[0]
        headers = _headers(text)
        framing = _body_framing(headers)
        if framing == "too large":
            self._body_too_large(conn)
            return False
        expectation = _expectation(request_line, headers)
        if expectation == "unknown":
            self._answer_and_close(conn, 417, "Expectation Failed", "unsupported Expect header")
            return False
        conn.body_start = end + len(_HEAD_END)
        conn.body_length = framing if isinstance(framing, int) else None
        conn.chunks = None if conn.body_length is not None else ChunkedBodyScanner(conn.body_start)
        conn.head_deadline = time.monotonic() + BODY_TIMEOUT  # the body has its own deadline
        conn.health = _is_health_check(request_line)
        if expectation == "continue" and conn.body_length != 0 and len(head) == conn.body_start:
            conn.continued = self._send_continue(conn)
        return True

    def _send_continue(self, conn: HeadConn) -> bool:
        """``100 Continue`` (the head is accepted and the client waits to send its body)."""
        try:
            return socket.socket.send(conn.sock, _CONTINUE) == len(_CONTINUE)
        except OSError:
            return False  # the client sends its body after its own wait anyway

    def _body_received(self, conn: HeadConn) -> None:
        assert conn.body_start is not None
        body = len(conn.head) - conn.body_start
        if conn.body_length is not None:
            complete = body >= conn.body_length
        else:  # chunked: it ends after the last chunk and the trailer section
            assert conn.chunks is not None
            complete = conn.chunks.scan(conn.head)
            if conn.chunks.declared > MAX_BODY_BYTES:  # announced past the limit: no need to wait
                self._body_too_large(conn)
                return
        if complete:
            self._hand_over(conn)
        elif body > MAX_BODY_BYTES + 64 * 1024:  # the chunk framing's own bytes allowed for
            self._body_too_large(conn)

    def _head_too_large(self, conn: HeadConn) -> None:
        self._answer_and_close(conn, 431, "Request Header Fields Too Large",
                               f"request head larger than {MAX_HEADER_BYTES} bytes")

    def _body_too_large(self, conn: HeadConn) -> None:
        self._answer_and_close(conn, 413, "Request Entity Too Large", f"request body larger than {MAX_BODY_BYTES} bytes")

    def _hand_over(self, conn: HeadConn) -> None:
        """The head (and body) are in: a pool thread serves the request from these bytes."""
        self._leave_heading(conn)
        if conn.initialized:
            conn.parser.unreader.unread(bytes(conn.head))
            conn.head = bytearray()
        conn.data_ready = True
        self.enqueue_req(conn)

    def enqueue_req(self, conn: Any) -> None:
        # The health check has threads of its own: whatever holds the pool, it is answered.
        pool = self.reserve if getattr(conn, "health", False) and self.reserve is not None else self.tpool
        fs = pool.submit(self.handle, conn)
        fs.add_done_callback(lambda fut: self.method_queue.defer(self.finish_request, conn, fut))

    def _answer_and_close(self, conn: HeadConn, status: int, reason: str, message: str) -> None:
        self._leave_heading(conn)
        self._forget(conn)
        self._refuse(conn.sock, status, reason, message)

    def _leave_heading(self, conn: HeadConn) -> None:
        self._unregister(conn)
        try:
            self.heading.remove(conn)
        except ValueError:
            pass

    def _unregister(self, conn: HeadConn) -> None:
        try:
            self.poller.unregister(conn.sock)
        except (KeyError, ValueError, OSError):
            pass

    def _drop(self, conn: HeadConn) -> None:
        """Closes a connection waiting in the main loop (for its head, or to write its answer)."""
        self._leave_heading(conn)
        self.flushing.discard(conn)
        self._forget(conn)
        util.close(conn.sock)

    def murder_pending(self) -> None:
        super().murder_pending()
        now = time.monotonic()
        for conn in [conn for conn in self.heading if conn.head_deadline <= now]:
            self._drop(conn)  # no whole request in time (Go closes without an answer too)
        for conn in [conn for conn in self.flushing if conn.head_deadline <= now]:
            self._drop(conn)  # the client stopped reading its answer

    # -- serving -------------------------------------------------------------------------------

    def handle_request(self, req: Any, conn: Any) -> Any:
        if getattr(conn, "continued", False):
            # This worker sent 100 Continue when it accepted the head; gunicorn would send a
            # second one (it checks this flag of its request).
            req._expected_100_continue = False
        return super().handle_request(req, conn)

    def handle_http2(self, conn: Any) -> Any:
        # An HTTP/2 connection is served by its thread for its whole life: nothing may wait in
        # the queue for a main loop that only flushes once the thread is done.
        if isinstance(conn.sock, DeadlineSocket):
            conn.sock.write_directly()
        return super().handle_http2(conn)

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        """gunicorn's handling (its log lines, its status for each error), but the answer is
        YuniKorn's JSON error rather than gunicorn's HTML page."""
        page = _CapturedWrite()
        super().handle_error(req, page, addr, exc)
        try:
            util.write_nonblock(client, _as_json_error(page.data))
        except Exception:
            self.log.debug("Failed to send error message.")

    # -- after an answer: the next request is gathered the same way ------------------------------

    def finish_request(self, conn: Any, fs: Any) -> None:
        if not isinstance(conn, HeadConn):
            super().finish_request(conn, fs)
            return
        try:
            result = fs.result() if not fs.cancelled() else False
        except Exception:
            result = False
        # _DEFER is not expected (requests arrive whole): the connection waits for its next head.
        keep = (result is _DEFER or bool(result)) and self.alive and not conn.is_http2
        if conn.outbox.dropped:
            keep = False
        elif conn.outbox.size:
            self._flush_later(conn, keep)
            return
        self._next_or_close(conn, keep)

    def _next_or_close(self, conn: HeadConn, keep: bool) -> None:
        if keep:
            self._await_head(conn, conn.read_ahead())
            return
        self._forget(conn)
        self._close_off_loop(conn)

    def _flush_later(self, conn: HeadConn, keep: bool) -> None:
        """The main loop writes the queued answer as the client reads it (see _on_writable)."""
        conn.keep_after_flush = keep
        conn.head_deadline = time.monotonic() + IO_TIMEOUT  # for progress, not for the whole
        try:
            socket.socket.setblocking(conn.sock, False)
            self.poller.register(conn.sock, selectors.EVENT_WRITE, partial(self._on_writable, conn))
        except (OSError, ValueError):  # closed under us (an answer that failed half-way)
            self._forget(conn)
            util.close(conn.sock)
            return
        self.flushing.add(conn)

    def _on_writable(self, conn: HeadConn, client: socket.socket) -> None:
        try:
            progressed = conn.outbox.flush(conn.sock)
        except OSError:  # the client is gone
            self._drop(conn)
            return
        if progressed:
            conn.head_deadline = time.monotonic() + IO_TIMEOUT
        if conn.outbox.size == 0:
            self._unregister(conn)
            self.flushing.discard(conn)
            self._next_or_close(conn, conn.keep_after_flush and self.alive)

    def _close_off_loop(self, conn: HeadConn) -> None:
        self._off_loop(lambda: conn.close(graceful=True), conn.close)

    def _off_loop(self, close: Callable[[], object], close_now: Callable[[], object]) -> None:
        """A lingering close (waiting for the peer) on the closer pool; ``close_now`` instead when
        too many wait or the pool is gone, so the main loop never waits on a client."""
        if self.closer is None or self.pending_closes >= MAX_PENDING_CLOSES:
            close_now()
            return
        self.pending_closes += 1

        def run() -> None:
            try:
                close()
            finally:
                self.method_queue.defer(self._closed)

        try:
            self.closer.submit(run)
        except RuntimeError:  # shutting down
            self.pending_closes -= 1
            close_now()

    def _closed(self) -> None:
        self.pending_closes -= 1

    def handle_quit(self, sig: int, frame: Any) -> None:
        if self.reserve is not None:
            self.reserve.shutdown(wait=False)
        super().handle_quit(sig, frame)

    def run(self) -> None:
        try:
            super().run()
        finally:
            for conn in [*self.heading, *self.flushing]:
                self._drop(conn)
            for pool in (self.closer, self.reserve):
                if pool is not None:
                    pool.shutdown(wait=False)
