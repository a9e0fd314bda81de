"""Answers written off the pool: what a client's socket cannot take at once waits here.

A pool thread of the serving worker (:mod:`pyscheduler_web.worker`) writes an answer without
blocking: what the socket takes at once goes out, the rest is queued in the connection's
:class:`Outbox` and the thread goes back to the pool. The worker's main loop then writes the
queued bytes as the client reads them (the socket is polled for writing), and closes a
connection whose queue makes no progress for ``PYSCHEDULER_IO_TIMEOUT``. A client that never
reads its answers therefore holds memory, never a thread, and that memory is bounded:

- **per connection** by ``per_connection`` bytes (16 MiB by default: the service's largest
  answers fit);
- **in all** by the :class:`AnswerBudget` (256 MiB by default), shared by every connection.

Past either bound the thread writes the rest itself, blocking (bounded by the socket's
timeout), as any server would. At most :data:`SLOW_WRITERS` threads do that at once: past them
the answer is dropped and the connection cut (``BrokenPipeError``, which gunicorn treats as a
client gone), so slow readers can never hold the threads ordinary requests need. A dropped
answer is remembered (:attr:`Outbox.dropped`): the worker then discards the queue and closes.

Threads: while a request is served only its pool thread calls :meth:`Outbox.write`; the main
loop calls :meth:`Outbox.flush` and :meth:`Outbox.discard` only once that thread is done. So
the queue needs no lock; the budget, shared by all connections, has one.

Queued bytes are memoryviews of the ``bytes`` objects written (no copy); anything mutable is
copied first, since its writer may reuse it.
"""

from __future__ import annotations

import errno
import socket
import threading
from collections import deque
from typing import Final

__all__ = ["PER_CONNECTION", "SLOW_WRITERS", "TOTAL", "AnswerBudget", "Outbox"]

#: Bytes of answers queued for one connection, by default.
PER_CONNECTION: Final = 16 << 20
#: Bytes of answers queued for all connections together, by default.
TOTAL: Final = 256 << 20
#: Pool threads that may block writing to a slow reader at once (half the 16 kept for ordinary
#: requests, see pyscheduler_web.gunicorn_conf.REQUEST_THREADS).
SLOW_WRITERS: Final = 8


class AnswerBudget:
    """The bytes every connection's queue may hold together, and the slow-writer slots."""

    def __init__(self, total: int = TOTAL, slow_writers: int = SLOW_WRITERS) -> None:
        self.total = total
        self._used = 0
        self._lock = threading.Lock()
        self.slow_writers = threading.BoundedSemaphore(slow_writers)

    @property
    def used(self) -> int:
        return self._used

    def take(self, size: int) -> bool:
        """Reserves ``size`` bytes; False (nothing reserved) when they do not fit."""
        with self._lock:
            if self._used + size > self.total:
                return False
            self._used += size
            return True

    def give_back(self, size: int) -> None:
        with self._lock:
            self._used -= size


class Outbox:
    """One connection's queue of answer bytes not yet taken by its socket."""

    __slots__ = ("budget", "per_connection", "size", "dropped", "_chunks")

    def __init__(self, budget: AnswerBudget, per_connection: int = PER_CONNECTION) -> None:
        self.budget = budget
        self.per_connection = per_connection
        #: Bytes queued.
        self.size = 0
        #: An answer was dropped (the client read too slowly and every bound was reached).
        self.dropped = False
        self._chunks: deque[memoryview] = deque()

    # -- the pool thread ---------------------------------------------------------------------

    def write(self, sock: socket.socket, data: bytes | bytearray | memoryview) -> None:
        """Writes ``data`` after what is queued: at once as far as the socket takes it, the
        rest queued within the bounds, else written by this thread (see the module doc)."""
        view = memoryview(data if isinstance(data, bytes) else bytes(data)).cast("B")
        if not self._chunks:
            view = view[_send_now(sock, view):]
            if not view:
                return
        if self.size + len(view) <= self.per_connection and self.budget.take(len(view)):
            self._chunks.append(view)
            self.size += len(view)
            return
        self._write_blocking(sock, view)

    def _write_blocking(self, sock: socket.socket, view: memoryview) -> None:
        if not self.budget.slow_writers.acquire(blocking=False):
            self.dropped = True
            raise BrokenPipeError(errno.EPIPE, "answer dropped: the client reads too slowly and the answer buffers are full")
        try:
            self.write_pending(sock)  # what is queued goes first
            socket.socket.sendall(sock, view)
        finally:
            self.budget.slow_writers.release()

    def write_pending(self, sock: socket.socket) -> None:
        """Writes what is queued from this thread, blocking (within the socket's timeout):
        before anything is written to the socket's descriptor behind the queue's back."""
        while self._chunks:
            chunk = self._chunks[0]
            socket.socket.sendall(sock, chunk)
            self._done(len(chunk))

    # -- the main loop -----------------------------------------------------------------------

    def flush(self, sock: socket.socket) -> bool:
        """Writes what the (non-blocking) socket takes now; True when anything went out.
        Raises the socket's OSError when the client is gone."""
        progressed = False
        while self._chunks:
            chunk = self._chunks[0]
            try:
                sent = sock.send(chunk)
            except (BlockingIOError, InterruptedError):
                break
            progressed = True
            if sent < len(chunk):
                self._chunks[0] = chunk[sent:]
                self.size -= sent
                self.budget.give_back(sent)
                break
            self._done(sent)
        return progressed

    def discard(self) -> None:
        """Forgets what is queued (the connection is closing)."""
        self.budget.give_back(self.size)
        self.size = 0
        self._chunks.clear()

    def _done(self, size: int) -> None:
        self._chunks.popleft()
        self.size -= size
        self.budget.give_back(size)


def _send_now(sock: socket.socket, view: memoryview) -> int:
    """Bytes of ``view`` the socket takes without waiting. The pool thread's socket has a
    timeout, with which even a single ``send`` first waits for room: it is set to 0 meanwhile."""
    timeout = sock.gettimeout()
    sock.settimeout(0.0)
    sent = 0
    try:
        while sent < len(view):
            try:
                sent += sock.send(view[sent:])
            except (BlockingIOError, InterruptedError):
                break
    finally:
        sock.settimeout(timeout)
    return sent
