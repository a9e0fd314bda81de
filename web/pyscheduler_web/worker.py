"""The serving worker: gunicorn's threaded worker, hardened against slow, idle and hostile clients.

gunicorn's ``gthread`` worker hands a connection to a pool thread as soon as it is accepted or
readable, and that thread then reads the request head from a blocking socket with no deadline:
a client that sends half a request line holds a thread for as long as it likes, and a hundred
such clients hold the whole pool (the scheduler's REST API then answers nothing). Closing a
connection lingers up to 2 s on the worker's main loop, which also sends the heartbeat to the
arbiter. :class:`ServingWorker` (a subclass, gunicorn's documented way) changes that:

- **A pool thread only for a whole request head.** The main loop reads what a connection
  sends without blocking until the head (request line and headers, up to ``\\r\\n\\r\\n``) is
  complete, then hands it, with those bytes, to a pool thread. Idle and kept-alive connections
  cost no thread.
- **Deadlines.** The head must arrive within :data:`HEADER_TIMEOUT` (10 s, Go's
  ``ReadHeaderTimeout`` in YuniKorn) of the connection's start or of the previous response,
  and a body (gathered in the main loop as well, up to 16 MiB: by its Content-Length, or to the
  end of a chunked one's trailer section, :mod:`pyscheduler_web.chunked_scan`) within :data:`BODY_TIMEOUT` of the head; otherwise the
  connection is closed. A body cut short is handed over at once (and answered 400). Writes in
  a pool thread time out after :data:`IO_TIMEOUT` without progress.
- **Limits.** A head over :data:`MAX_HEADER_BYTES` (1 MiB, Go's ``DefaultMaxHeaderBytes``) gets
  YuniKorn's JSON error with status 431, a head with a request line or a field gunicorn would
  otherwise refuse as too long is served (gunicorn's own line and field limits are lifted, this
  worker bounds the whole head instead).
- **The main loop never waits on a client.** Graceful closes (lingering for the peer's FIN) run
  on a small closer pool; when that is busy, the connection is closed at once.
- **A connection cap.** Beyond ``worker_connections`` a new connection gets a JSON 503 and is
  closed at once instead of waiting, unaccepted, behind the others.

Limits can be changed through the environment (``PYSCHEDULER_HEADER_TIMEOUT``,
``PYSCHEDULER_IO_TIMEOUT``, ``PYSCHEDULER_MAX_HEADER_BYTES``) and ``worker_connections``
(``--worker-connections`` in ``GUNICORN_CMD_ARGS``).
"""

from __future__ import annotations

import errno
import json
import os
import selectors
import socket
import time
from collections import deque
from collections.abc import Callable
from concurrent import futures
from functools import partial
from typing import Any, Final

from gunicorn import util
from gunicorn.workers.gthread import _DEFER, TConn, ThreadWorker

from pyscheduler_web.chunked_scan import ChunkedBodyScanner

__all__ = ["HEADER_TIMEOUT", "IO_TIMEOUT", "MAX_HEADER_BYTES", "ServingWorker"]


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
#: Seconds a body read or a response write may make no progress in a pool thread.
IO_TIMEOUT: Final = _env_float("PYSCHEDULER_IO_TIMEOUT", 30.0)
#: The largest request body gathered (the REST service's own limit, 16 MiB); above it a 413.
MAX_BODY_BYTES: Final = 16 << 20
#: The largest request head (request line and headers), Go's DefaultMaxHeaderBytes.
MAX_HEADER_BYTES: Final = int(_env_float("PYSCHEDULER_MAX_HEADER_BYTES", float(1 << 20)))
#: Graceful closes running at once; more are closed at once (RST rather than a waiting loop).
CLOSERS: Final = 4
MAX_PENDING_CLOSES: Final = 256
#: A refused request's close drains what the client still sends, this long and this much at most.
LINGER: Final = 2.0
MAX_DRAIN: Final = 2 * MAX_BODY_BYTES

_HEAD_END: Final = b"\r\n\r\n"
_READ: Final = 65536


def _body_framing(head: bytes) -> int | str | None:
    """How the request's body ends: its Content-Length, None for a chunked body (or none at
    all: length 0), "too large" above :data:`MAX_BODY_BYTES`. A head gunicorn will refuse
    anyway (a bad or repeated length) is handed over as it is (length 0)."""
    length = 0
    chunked = False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            try:
                length = int(value.strip())
            except ValueError:
                return 0
        elif name == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    if chunked:
        return None
    if length > MAX_BODY_BYTES:
        return "too large"
    return max(length, 0)


def _json_answer(status: int, reason: str, message: str) -> bytes:
    # YuniKorn's error shape, encoded as Go encodes it (no spaces).
    body = json.dumps({"status_code": status, "message": message, "description": message}, separators=(",", ":")).encode()
    return (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json; charset=UTF-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body


class DeadlineSocket(socket.socket):
    """A client socket whose blocking mode has a deadline: gunicorn's pool threads switch a
    connection to blocking mode before reading its body and writing its answer; here that
    means "blocking for at most :data:`IO_TIMEOUT` without progress"."""

    io_timeout: float = IO_TIMEOUT

    def setblocking(self, flag: bool) -> None:
        if flag:
            self.settimeout(self.io_timeout)
        else:
            super().setblocking(False)


class HeadConn(TConn):  # type: ignore[misc]  # gunicorn is untyped
    """A connection that gathers its request head in the main loop before a thread serves it."""

    def __init__(self, cfg: Any, sock: socket.socket, client: Any, server: Any) -> None:
        super().__init__(cfg, sock, client, server)
        self.head = bytearray()
        self.head_deadline = time.monotonic() + HEADER_TIMEOUT
        #: Once the head is in: where the body starts, and how the end of the body is known
        #: (its length, or for a chunked body a scanner of its framing).
        self.body_start: int | None = None
        self.body_length: int | None = None
        self.chunks: ChunkedBodyScanner | None = None

    def start_head(self) -> None:
        """Waits for the next request head (a new connection, or one kept alive)."""
        self.head = bytearray()
        self.head_deadline = time.monotonic() + HEADER_TIMEOUT
        self.body_start = None
        self.body_length = None
        self.chunks = None

    def init(self) -> None:
        fresh = self.parser is None
        super().init()
        if fresh and self.head and self.parser is not None and hasattr(self.parser, "unreader"):
            self.parser.unreader.unread(bytes(self.head))
            self.head = bytearray()


class ServingWorker(ThreadWorker):  # type: ignore[misc]  # gunicorn is untyped
    """See the module doc."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.heading: deque[HeadConn] = deque()
        self.closer: futures.ThreadPoolExecutor | None = None
        self.pending_closes = 0

    def init_process(self) -> None:
        self.closer = futures.ThreadPoolExecutor(max_workers=CLOSERS, thread_name_prefix="pyscheduler-closer")
        super().init_process()

    # -- accepting ---------------------------------------------------------------------------

    def set_accept_enabled(self, enabled: bool) -> None:
        # While running, keep accepting past the cap: a connection over it is refused at once
        # (accept) rather than left unaccepted in the listen queue behind the others.
        super().set_accept_enabled(enabled or self.alive)
        if not self.alive:
            # Stopping: a connection still waiting for its request head has none in progress.
            for conn in list(self.heading):
                self._drop_heading(conn)

    def accept(self, listener: socket.socket) -> None:
        try:
            raw, client = listener.accept()
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return
        sock = DeadlineSocket(raw.family, raw.type, raw.proto, fileno=raw.detach())
        if self.nr_conns >= self.worker_connections:
            self._refuse(sock, 503, "Service Unavailable", "too many connections: try again later")
            return
        self.nr_conns += 1
        conn = HeadConn(self.cfg, sock, client, listener.getsockname())
        self._await_head(conn)

    def _refuse(self, sock: socket.socket, status: int, reason: str, message: str) -> None:
        """Answers with YuniKorn's JSON error and closes. The close lingers (off the main loop),
        draining what the client is still sending, so that it reads the answer rather than a
        reset."""
        try:
            socket.socket.setblocking(sock, False)
            sock.send(_json_answer(status, reason, message))
        except OSError:
            util.close(sock)
            return
        self._linger_off_loop(sock)

    def _linger_off_loop(self, sock: socket.socket) -> None:
        def linger() -> None:
            socket.socket.setblocking(sock, True)
            util.close_graceful(sock, timeout=LINGER, max_drain=MAX_DRAIN)

        self._off_loop(linger, lambda: util.close(sock))

    # -- request heads in the main loop -------------------------------------------------------

    def _await_head(self, conn: HeadConn) -> None:
        conn.start_head()
        socket.socket.setblocking(conn.sock, False)
        self.heading.append(conn)
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._on_head_readable, conn))

    def _on_head_readable(self, conn: HeadConn, client: socket.socket) -> None:
        try:
            data = conn.sock.recv(_READ)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            if conn.body_start is None:  # the client went away before sending a whole head
                self._drop_heading(conn)
            else:  # a body cut short: the request is answered (400) without waiting for more
                self._hand_over(conn)
            return
        conn.head += data
        if conn.body_start is None:
            # Look for the end of the head only in the new bytes (and the 3 before them).
            end = conn.head.find(_HEAD_END, max(0, len(conn.head) - len(data) - 3))
            if end < 0:
                if len(conn.head) > MAX_HEADER_BYTES:
                    self._answer_and_close(conn, 431, "Request Header Fields Too Large",
                                           f"request head larger than {MAX_HEADER_BYTES} bytes")
                return
            if end > MAX_HEADER_BYTES:
                self._answer_and_close(conn, 431, "Request Header Fields Too Large",
                                       f"request head larger than {MAX_HEADER_BYTES} bytes")
                return
            framing = _body_framing(bytes(conn.head[:end]))
            if framing == "too large":
                self._answer_and_close(conn, 413, "Request Entity Too Large",
                                       f"request body larger than {MAX_BODY_BYTES} bytes")
                return
            conn.body_start = end + len(_HEAD_END)
            conn.body_length = framing if isinstance(framing, int) else None
            conn.chunks = None if conn.body_length is not None else ChunkedBodyScanner(conn.body_start)
            conn.head_deadline = time.monotonic() + BODY_TIMEOUT  # the body has its own deadline
        body = len(conn.head) - conn.body_start
        if conn.body_length is not None:
            complete = body >= conn.body_length
        else:  # chunked: it ends after the last chunk and the trailer section
            complete = conn.chunks is not None and conn.chunks.scan(conn.head)
        if complete:
            self._hand_over(conn)
        elif body > MAX_BODY_BYTES + 64 * 1024:  # the chunk framing's own bytes allowed for
            self._answer_and_close(conn, 413, "Request Entity Too Large",
                                   f"request body larger than {MAX_BODY_BYTES} bytes")

    def _hand_over(self, conn: HeadConn) -> None:
        """The head (and body) are in: a pool thread serves the request from these bytes."""
        self._leave_heading(conn)
        if conn.initialized:
            conn.parser.unreader.unread(bytes(conn.head))
            conn.head = bytearray()
        conn.data_ready = True
        self.enqueue_req(conn)

    def _answer_and_close(self, conn: HeadConn, status: int, reason: str, message: str) -> None:
        self._leave_heading(conn)
        self.nr_conns -= 1
        self._refuse(conn.sock, status, reason, message)

    def _leave_heading(self, conn: HeadConn) -> None:
        try:
            self.poller.unregister(conn.sock)
        except (KeyError, ValueError, OSError):
            pass
        try:
            self.heading.remove(conn)
        except ValueError:
            pass

    def _drop_heading(self, conn: HeadConn) -> None:
        self._leave_heading(conn)
        self.nr_conns -= 1
        util.close(conn.sock)

    def murder_pending(self) -> None:
        super().murder_pending()
        now = time.monotonic()
        expired = [conn for conn in self.heading if conn.head_deadline <= now]
        for conn in expired:  # no whole head in time (Go closes without an answer too)
            self._drop_heading(conn)

    # -- kept-alive connections: their next head is gathered the same way ---------------------

    def finish_request(self, conn: Any, fs: Any) -> None:
        if not isinstance(conn, HeadConn):
            super().finish_request(conn, fs)
            return
        try:
            result = fs.result() if not fs.cancelled() else False
        except Exception:
            result = False
        if result is _DEFER and self.alive:  # not expected: heads arrive whole
            self._await_head(conn)
            return
        if result and self.alive and not conn.is_http2:
            if conn.parser.unreader.buf.getvalue():
                self.enqueue_req(conn)  # the next request was read ahead with the body
                return
            self._await_head(conn)
            return
        self.nr_conns -= 1
        self._close_off_loop(conn)

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

    def run(self) -> None:
        try:
            super().run()
        finally:
            for conn in list(self.heading):
                self._drop_heading(conn)
            if self.closer is not None:
                self.closer.shutdown(wait=False)
