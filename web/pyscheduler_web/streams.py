"""Event streams: the connection limits and the NDJSON body of ``/ws/v1/events/stream``.

Limits (YuniKorn's ``event.maxStreams`` and ``event.maxStreamsPerHost``, read again for every
new stream so a configuration reload applies to the next connection):

- The per-host limit counts connections per **client address** (``REMOTE_ADDR``, the TCP
  peer), not per ``Host`` header as YuniKorn does (``r.Host``): the header is chosen by the
  client, so with it one client could open every stream by varying it, and all clients naming
  the same host would share one budget. Behind a reverse proxy every client has the proxy's
  address; raise ``event.maxStreamsPerHost`` there.
- Each open stream holds one gunicorn thread, so the total is also capped by the threads the
  worker can spare (:meth:`StreamRegistry.set_thread_budget`): streams can never take the
  threads that ordinary requests need, whatever ``event.maxStreams`` says.

The body (:func:`stream_body`): the ``{"InstanceUUID":...}`` line at once, then the events.
Over HTTP/1.1 the history (``count``, ``start``) goes out from the request's thread at full
speed (``Subscription.pump``, GIL released), then the stream is handed to the event store's
fan-out thread (``EventSystem.attach_stream``; ``docs/events.md``, "The fan-out thread"),
which writes every live stream from events rendered once, in chunks gathered over at most
20 ms, while the request's thread sleeps on its ticket. Otherwise (HTTP/1.0, no socket)
``Subscription.next`` waits at most :data:`POLL_INTERVAL` and returns every event available
(up to :data:`CHUNK_EVENTS`), which gunicorn writes.
When the producer closes the subscription (the client fell more than its buffer behind, or the
event system stopped) or the service shuts down, the stream ends with YuniKorn's in-band line
``{"status_code":200,"message":"Event stream was closed by the producer","description":...}``.
A client that goes away is noticed at the next write or, while idle, by a look at the socket
(a non-blocking peek here, a ``poll`` once a second in the fan-out); a client that stops
reading is cut when one chunk has been stuck for 5 s (YuniKorn's write deadline,
:class:`WriteDeadlines` or the fan-out's own) or, sooner, when it falls more than its buffer
behind (the closing line then waits in the socket for it). The subscription is closed and the
slot released in every case.
"""

from __future__ import annotations

import itertools
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from pyscheduler.common.background import BackgroundThread
from pyscheduler._native import StreamTicket, Subscription
from pyscheduler.config.event_settings import EventSettings

from pyscheduler_web.http import json_body

__all__ = [
    "CHUNK_EVENTS",
    "CLOSED_BY_PRODUCER",
    "POLL_INTERVAL",
    "WRITE_TIMEOUT",
    "StreamRegistry",
    "StreamSlot",
    "WriteDeadlines",
    "closing_line",
    "stream_body",
]

#: Longest wait in ``Subscription.next`` before looking at the client and the shutdown flag
#: (HTTP/1.0 streams, written by their own thread): a closed one frees its slot this soon.
POLL_INTERVAL: Final = 0.05
#: Most events in one chunk written to the client.
CHUNK_EVENTS: Final = 1000
#: A write that makes no progress for this long ends the stream (YuniKorn's write deadline).
WRITE_TIMEOUT: Final = 5.0
#: Longest sleep of a fanned-out stream's thread before it looks at the shutdown flag. A
#: shutdown ends the streams at once through ``release_streams``; this is the fallback. Each
#: wake takes the GIL, so a hundred streams waking often would tax the scheduling loop.
TICKET_WAIT: Final = 2.0

#: ``EventSystem.attach_stream``: (subscription, socket fd, write timeout) -> ticket.
Attach = Callable[[Subscription, int, float], StreamTicket]
CLOSED_BY_PRODUCER: Final = "Event stream was closed by the producer"


@dataclass(frozen=True, slots=True)
class StreamSlot:
    """One open stream: the client address and when it was opened (ns)."""

    id: int
    host: str
    created_ns: int


class StreamRegistry:
    """Open streams per client address, with YuniKorn's limits and a thread budget."""

    def __init__(self, settings: Callable[[], EventSettings]) -> None:
        self._settings = settings
        self._lock = threading.Lock()
        self._open: dict[int, StreamSlot] = {}
        self._per_host: dict[str, int] = {}
        self._ids = itertools.count(1)
        self._capacity: int | None = None
        #: Streams refused for a limit (metrics).
        self.refused = 0

    def set_thread_budget(self, capacity: int | None) -> None:
        """The most streams the server's threads allow (None: no cap besides the settings)."""
        with self._lock:
            self._capacity = capacity

    @property
    def thread_budget(self) -> int | None:
        return self._capacity

    def limit(self) -> int:
        limit = self._settings().max_streams
        return limit if self._capacity is None else min(limit, self._capacity)

    def acquire(self, host: str) -> StreamSlot | None:
        """A slot for a new stream from ``host``; None when a limit is reached."""
        per_host_limit = self._settings().max_streams_per_host
        limit = self.limit()
        with self._lock:
            if len(self._open) >= limit or self._per_host.get(host, 0) >= per_host_limit:
                self.refused += 1
                return None
            slot = StreamSlot(next(self._ids), host, time.time_ns())
            self._open[slot.id] = slot
            self._per_host[host] = self._per_host.get(host, 0) + 1
            return slot

    def release(self, slot: StreamSlot) -> None:
        with self._lock:
            if self._open.pop(slot.id, None) is None:
                return
            left = self._per_host[slot.host] - 1
            if left:
                self._per_host[slot.host] = left
            else:
                del self._per_host[slot.host]

    def __len__(self) -> int:
        with self._lock:
            return len(self._open)

    def describe(self) -> list[dict[str, Any]]:
        """YuniKorn's ``GetEventStreams()`` (``eventStreams`` of the state dump)."""
        with self._lock:
            slots = sorted(self._open.values(), key=lambda s: s.id)
        return [{"Name": s.host, "CreatedAt": s.created_ns} for s in slots]


def closing_line(description: str) -> bytes:
    """YuniKorn's in-band end of a stream: a YAPIError with status 200 (the headers are gone)."""
    return json_body(
        {"status_code": 200, "message": CLOSED_BY_PRODUCER, "description": description or CLOSED_BY_PRODUCER}
    )


class WriteDeadlines:
    """YuniKorn's per-write deadline (5 s) for stream writes, without a socket timeout.

    gunicorn writes each chunk with a blocking ``sendall``. A socket timeout would end a stuck
    write with an error gunicorn logs as a failure; instead, a stream arms its deadline before
    it hands a chunk over and disarms it when it gets control back, and one watchdog thread
    shuts down the sockets whose write has been stuck past the deadline. The blocked
    ``sendall`` then fails with EPIPE, which gunicorn treats as a client gone: the generator
    is closed, the subscription and the slot are released.
    """

    def __init__(self, timeout: float = WRITE_TIMEOUT, tick: float = 0.5) -> None:
        self.timeout = timeout
        self.tick = tick
        self._lock = threading.Lock()
        self._armed: dict[int, tuple[float, socket.socket]] = {}
        # Started by the first armed deadline; checks every tick, the first after one tick.
        self._thread = BackgroundThread("pyscheduler-stream-deadlines", self._expire, interval=tick, first_delay=tick)
        #: Streams cut for a stuck write (metrics).
        self.expired = 0

    def arm(self, key: int, sock: socket.socket) -> None:
        with self._lock:
            self._armed[key] = (time.monotonic() + self.timeout, sock)
        self._thread.start()  # a no-op once running

    def close(self, timeout: float = 5.0) -> None:
        """Stops the watchdog (at shutdown; a later ``arm`` starts it again)."""
        self._thread.stop(timeout)

    def disarm(self, key: int) -> None:
        with self._lock:
            self._armed.pop(key, None)

    def count_expired(self) -> None:
        """A stream whose write deadline was enforced elsewhere (the Rust pump)."""
        with self._lock:
            self.expired += 1

    def _expire(self) -> None:
        """Shuts down the sockets whose write is stuck past its deadline."""
        now = time.monotonic()
        with self._lock:
            expired = [(k, sock) for k, (deadline, sock) in self._armed.items() if deadline <= now]
            for key, _ in expired:
                del self._armed[key]
            self.expired += len(expired)
        for _, sock in expired:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class PeerWatch:
    """Notices a client that closed its side of an idle stream.

    A zero-timeout ``poll``; only when the socket is readable (or hung up) does a peek look
    at what is there: EOF or an error means the client is gone, data (a pipelined request)
    does not. A plain ``recv`` cannot be used alone: on a socket with a timeout (the write
    deadline) Python waits for readability first, ``MSG_DONTWAIT`` or not.
    """

    _HANGUP = select.POLLHUP | select.POLLERR | select.POLLNVAL | getattr(select, "POLLRDHUP", 0)

    def __init__(self, sock: socket.socket | None) -> None:
        self._sock = sock
        self._poll: Any = None
        if sock is not None:
            self._poll = select.poll()
            self._poll.register(sock, select.POLLIN | self._HANGUP)

    def closed(self) -> bool:
        if self._poll is None or self._sock is None:
            return False
        try:
            ready = self._poll.poll(0)
        except OSError:
            return True
        if not ready:
            return False
        if ready[0][1] & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
            return True
        try:
            return self._sock.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True


class StreamBody:
    """The WSGI body of a stream: iterates :func:`stream_body`'s generator, and ``close``
    releases the subscription and the slot even when the server closes the body before ever
    iterating it (closing a generator that never started skips its ``finally``)."""

    def __init__(self, body: Iterator[bytes], cleanup: Callable[[], None]) -> None:
        self._body = body
        self._cleanup = cleanup

    def __iter__(self) -> Iterator[bytes]:
        return self._body

    def close(self) -> None:
        try:
            self._body.close()  # type: ignore[attr-defined]
        finally:
            self._cleanup()


def stream_body(
    first_line: bytes,
    subscription: Subscription,
    release: Callable[[], None],
    stopping: threading.Event,
    sock: socket.socket | None,
    deadlines: WriteDeadlines | None = None,
    key: int = 0,
    attach: Attach | None = None,
) -> Iterator[bytes]:
    """The response body. gunicorn writes (and sends) each item as it is yielded; closing the
    generator (client gone, write stuck, worker stopping) closes the subscription and frees
    the slot. ``deadlines`` (with the stream's ``key``) bounds each write. With ``attach``
    (``EventSystem.attach_stream``; only for HTTP/1.1, where the body is chunked) live events
    are written by the event store's fan-out thread."""
    peer = PeerWatch(sock)
    armed = deadlines is not None and sock is not None

    def send(data: bytes) -> Iterator[bytes]:
        if armed:
            deadlines.arm(key, sock)  # type: ignore[union-attr, arg-type]
        yield data
        if armed:
            deadlines.disarm(key)  # type: ignore[union-attr]

    def end(reason: str) -> Iterator[bytes]:
        yield from send(closing_line(reason))
        if sock is not None:
            # gunicorn's last write (the chunked terminator) comes after the generator: a
            # socket timeout bounds it (the worker resets it if the connection is reused).
            sock.settimeout(WRITE_TIMEOUT)

    try:
        yield from send(first_line)
        if attach is not None and sock is not None:
            yield from _fanned(subscription, sock, stopping, end, deadlines, attach)
            return
        while True:
            if stopping.is_set():
                yield from end("the scheduler is shutting down")
                return
            chunk = subscription.next(CHUNK_EVENTS, POLL_INTERVAL)
            if chunk is None:
                yield from end(subscription.closed_reason or "")
                return
            if chunk:
                yield from send(chunk)
            elif peer.closed():
                return
    finally:
        if armed:
            deadlines.disarm(key)  # type: ignore[union-attr]
        subscription.close()
        release()


def _fanned(
    subscription: Subscription,
    sock: socket.socket,
    stopping: threading.Event,
    end: Callable[[str], Iterator[bytes]],
    deadlines: WriteDeadlines | None,
    attach: Attach,
) -> Iterator[bytes]:
    """History first, written by this thread at full speed with the GIL released; then the
    stream is handed to the event store's fan-out thread, which writes every live stream from
    events rendered once, and this thread sleeps on its ticket. The first and closing lines and
    the chunked terminator go through gunicorn (the hub reports at a chunk boundary), so the
    framing stays one chunk sequence."""
    fd = sock.fileno()
    restore = sock.gettimeout() != None  # noqa: E711 - a timeout means a non-blocking fd
    status, _ = subscription.pump(fd, CHUNK_EVENTS, 0.0, WRITE_TIMEOUT, restore)
    if status == "closed":
        yield from end(subscription.closed_reason or "")
        return
    if status in ("write_failed", "write_timeout"):
        if status == "write_timeout" and deadlines is not None:
            deadlines.count_expired()
        return
    try:
        ticket = attach(subscription, fd, WRITE_TIMEOUT)
    except (ValueError, RuntimeError, OSError):
        # Closed or stopped since the history went out, or no descriptor to spare.
        yield from end(subscription.closed_reason or "the stream could not be handed to the event writer")
        return
    try:
        outcome = None
        while outcome is None:
            if stopping.is_set():
                ticket.release()
            outcome = ticket.wait(TICKET_WAIT)
    finally:
        ticket.release()  # the body closed under us (worker exiting): hand the socket back
    if outcome == "closed":
        yield from end(ticket.closed_reason or "")
    elif outcome == "released":
        yield from end("the scheduler is shutting down")
    elif outcome == "write_timeout" and deadlines is not None:
        deadlines.count_expired()
    # "peer_closed", "write_failed": the client is gone.
