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

The body (:func:`stream_body`): behind gunicorn, every byte after the response head is
written by the event store's stream writer (``EventSystem.open_stream``; ``docs/events.md``,
"The stream writer"): the ``{"InstanceUUID":...}`` line, the history (``count``, ``start``)
at full speed from the request's thread with the GIL released, then live events from the
writer's one thread for every stream (each event rendered once, chunks gathered over at most
20 ms), while the request's thread sleeps on its ticket. HTTP/1.1 bodies are chunked (gunicorn
writes the terminating chunk after the writer is done), HTTP/1.0 bodies end when the
connection closes. When the producer closes the subscription (the client fell more than its
buffer behind, or the event system stopped) or the service shuts down, the writer ends the
stream with YuniKorn's in-band line
``{"status_code":200,"message":"Event stream was closed by the producer","description":...}``.
The closing line is defined once, in Rust (``rust/stream``): :func:`closing_line`,
:data:`CLOSED_BY_PRODUCER` and :data:`RELEASED_DESCRIPTION` are the native module's, re-exported
here for the body this module writes itself (no socket, or a hand-over that failed).
A client that goes away is noticed at the next write or, while idle, within 25 ms; a client
that stops reading is cut when one chunk has been stuck for 5 s (YuniKorn's write deadline,
the writer's one deadline for every chunk, the first line and the closing line included) or,
sooner, when it falls more than its buffer behind (the closing line then waits in the socket
for it). The subscription is closed and the slot released in every case.

Without a socket (a WSGI server other than gunicorn, Flask's test client) the server writes
what the generator yields: ``Subscription.next`` waits at most :data:`POLL_INTERVAL` and
returns every event available (up to :data:`CHUNK_EVENTS`).
"""

from __future__ import annotations

import itertools
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from pyscheduler._native import (
    CLOSED_BY_PRODUCER,
    RELEASED_DESCRIPTION,
    StreamOutcome,
    StreamTicket,
    Subscription,
    closing_line,
)
from pyscheduler.config.event_settings import EventSettings

__all__ = [
    "CHUNK_EVENTS",
    "CLOSED_BY_PRODUCER",
    "POLL_INTERVAL",
    "RELEASED_DESCRIPTION",
    "WRITE_TIMEOUT",
    "StreamRegistry",
    "StreamSlot",
    "closing_line",
    "stream_body",
]

#: Longest wait in ``Subscription.next`` before looking at the shutdown flag (streams with no
#: socket, written by the server).
POLL_INTERVAL: Final = 0.05
#: Most events in one item yielded to a server with no socket.
CHUNK_EVENTS: Final = 1000
#: A chunk not written within this time ends the stream (YuniKorn's write deadline).
WRITE_TIMEOUT: Final = 5.0
#: Longest sleep of a stream's request thread before it looks at the shutdown flag. A
#: shutdown ends the streams at once through ``release_streams``; this is the fallback. Each
#: wake takes the GIL, so a hundred streams waking often would tax the scheduling loop.
TICKET_WAIT: Final = 2.0

#: ``EventSystem.open_stream``: (subscription, socket fd, first line, chunked, write timeout).
OpenStream = Callable[[Subscription, int, bytes, bool, float], StreamTicket]


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
    open_stream: OpenStream | None = None,
    chunked: bool = True,
) -> Iterator[bytes]:
    """The response body. With gunicorn's socket and ``open_stream`` the stream writer writes
    it (``chunked``: HTTP/1.1 framing, else an HTTP/1.0 body ended by the close); otherwise
    the server writes each item yielded. Closing the generator (client gone, worker stopping)
    closes the subscription and frees the slot."""
    try:
        if open_stream is not None and sock is not None:
            # gunicorn sends the head for an empty item and writes nothing else.
            yield b""
            _written_by_the_stream_writer(first_line, subscription, sock, stopping, open_stream, chunked)
            return
        yield first_line
        while True:
            if stopping.is_set():
                yield closing_line(RELEASED_DESCRIPTION)
                return
            chunk = subscription.next(CHUNK_EVENTS, POLL_INTERVAL)
            if chunk is None:
                yield closing_line(subscription.closed_reason or "")
                return
            if chunk:
                yield chunk
    finally:
        subscription.close()
        release()


def _written_by_the_stream_writer(
    first_line: bytes,
    subscription: Subscription,
    sock: socket.socket,
    stopping: threading.Event,
    open_stream: OpenStream,
    chunked: bool,
) -> None:
    """Hands the body to the stream writer (the history goes out before ``open_stream``
    returns) and sleeps on the ticket until the stream ends."""
    # The writer writes to the descriptor itself: the serving worker's socket first writes
    # what it queued (the response head) and stops queueing (pyscheduler_web.outbox).
    write_directly = getattr(sock, "write_directly", None)
    if write_directly is not None:
        write_directly()
    try:
        ticket = open_stream(subscription, sock.fileno(), first_line, chunked, WRITE_TIMEOUT)
    except (ValueError, RuntimeError, OSError):
        # Closed or stopped before the hand-over, or no descriptor to spare: nothing was written
        # after the head, so the closing line goes out the server's way.
        sock.settimeout(WRITE_TIMEOUT)
        sock.sendall(_framed(closing_line(subscription.closed_reason or "the stream could not be opened"), chunked))
        return
    try:
        outcome = ticket.wait(0.0)
        while outcome is None:
            if stopping.is_set():
                ticket.release()
            outcome = ticket.wait(TICKET_WAIT)
    finally:
        ticket.release()  # the body closed under us (worker exiting): end the stream
    if outcome in (StreamOutcome.CLOSED, StreamOutcome.RELEASED):
        # At a chunk boundary: gunicorn's last write (the chunked terminator) comes next, and
        # a socket timeout bounds it (the worker resets it if the connection is reused).
        sock.settimeout(WRITE_TIMEOUT)


def _framed(data: bytes, chunked: bool) -> bytes:
    return b"%X\r\n%s\r\n" % (len(data), data) if chunked else data
