"""The event system: the one object the scheduler talks to about events.

Every change the scheduler makes is handed to :meth:`EventSystem.add`, which never blocks:

- REQUEST events with change type NONE (diagnostics for one ask, meant for the RM) go to a
  bounded :class:`~pyscheduler.events.request_store.RequestEventStore`; a publisher drains it
  into the RM callback's ``send_event`` every 2 s. They are never served by REST or streams.
- Every other event goes to the native store (``pyscheduler._native.EventStore``): a bounded
  lock-free queue, then a Rust consumer thread that interns its strings and keeps it as a
  22-byte record in the ring buffer. When the queue is full the event is dropped and counted.
- Stream subscribers are cursors over that ring (see :meth:`EventSystem.subscribe`): they
  see history and then live events with no gap and no duplicate, and one that falls behind
  is closed without slowing the producer or anyone else.

Reads (:meth:`batch_body`, :meth:`ndjson`) come back as wire-format ``bytes`` built once in
Rust; no Python object is made per event.
"""

from __future__ import annotations

import threading
import uuid
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pyscheduler._native import EventStore, StreamTicket, Subscription
from pyscheduler.common.clock import Clock, SystemClock
from pyscheduler.config.event_settings import EventSettings
from pyscheduler.events.publisher import DEFAULT_PUBLISH_INTERVAL, EventSink, ShimPublisher
from pyscheduler.events.request_store import RequestEventStore
from pyscheduler.si.events import AddEvent, EventChangeDetail, EventChangeType, EventRecord, EventRecordType

__all__ = [
    "AddEvent",
    "DEFAULT_QUEUE_CAPACITY",
    "DEFAULT_SUBSCRIBER_CAPACITY",
    "EventStats",
    "EventSystem",
    "truncate_message",
]

#: Events that may wait between ``add`` and the ring (YuniKorn's event channel size).
DEFAULT_QUEUE_CAPACITY = 100_000
#: Live events a stream subscriber may fall behind by before it is cut (YuniKorn's
#: effective slack: 1000 events in the producer-side buffer and 1000 in the handler's).
DEFAULT_SUBSCRIBER_CAPACITY = 2000

#: YuniKorn cuts longer messages to their first 1021 bytes and "..." (Kubernetes' limit).
MAX_MESSAGE_BYTES = 1024
_KEPT_MESSAGE_BYTES = 1021


@dataclass(frozen=True, slots=True)
class EventStats:
    """Counters of the event system (for metrics and the REST layer)."""

    #: Events offered while tracking was enabled (history events, and request events
    #: while request events are enabled).
    created: int
    #: History events dropped because the queue to the ring was full.
    dropped: int
    #: History events stored in the ring buffer.
    stored: int
    #: History events not stored because collection is off (ring capacity 0).
    not_stored: int
    #: History events waiting between ``add`` and the ring.
    queued: int
    #: Request events kept for the RM, and dropped because the request store was full.
    request_stored: int
    request_dropped: int
    #: Request events delivered to the RM callback, and lost to a failing callback.
    published: int
    publish_failed: int
    #: Open stream subscriptions (of which written by the stream writer), streams the writer
    #: ended for a chunk not written within the write timeout, subscriptions closed for
    #: falling behind, and events delivered.
    subscribers: int
    attached_streams: int
    stream_write_timeouts: int
    slow_closed: int
    delivered: int
    #: Ring occupancy and memory.
    ring_capacity: int
    ring_len: int
    interned_strings: int
    memory_bytes: int


def truncate_message(message: str) -> str:
    """YuniKorn's message cut, on a UTF-8 character boundary (the Rust store does the same
    for history events)."""
    encoded = message.encode("utf-8", "surrogatepass")
    if len(encoded) <= MAX_MESSAGE_BYTES:
        return message
    # errors="ignore" drops a character split by the cut, backing off to its boundary.
    return encoded[:_KEPT_MESSAGE_BYTES].decode("utf-8", "ignore") + "..."


class EventSystem:
    """Non-blocking event intake, the history ring, request events and stream subscriptions.

    ``add(type, change_type, change_detail, object_id, reference_id="", message="",
    resource=None, timestamp_ns=None) -> bool`` records one event (see :class:`AddEvent`).
    """

    add: AddEvent

    def __init__(
        self,
        settings: EventSettings | None = None,
        *,
        clock: Clock | None = None,
        queue_capacity: int = DEFAULT_QUEUE_CAPACITY,
        publish_interval: float = DEFAULT_PUBLISH_INTERVAL,
    ) -> None:
        self._settings = settings or EventSettings()
        self._clock = clock or SystemClock()
        self._settings_lock = threading.Lock()
        #: A new id per instance: clients that see it change know the history restarted.
        self.instance_uuid = str(uuid.uuid4())
        self._store = EventStore(self._settings.ring_buffer_capacity, queue_capacity)
        self._requests = RequestEventStore(self._settings.request_store_capacity)
        self._sink: EventSink | None = None
        self._publisher = ShimPublisher(self._requests, lambda: self._sink, publish_interval)
        self._request_events = False
        self._apply_flags(self._settings)
        # Weakly: the native store is invisible to the cyclic collector, so a bound method
        # there would keep this system, and its store, alive after the last user drops it.
        self._store.set_request_sink(_weak_method(self._on_request_event))
        self.add: AddEvent = self._store.record if isinstance(self._clock, SystemClock) else self._add_with_clock

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Start publishing request events to the RM (the history pipeline always runs)."""
        self._publisher.start()

    def stop(self) -> None:
        """Store what is queued, publish the last request events, close every stream."""
        self._publisher.stop()
        self._store.stop()

    def set_callback(self, sink: EventSink | None) -> None:
        """The RM callback that receives request events (None: keep them unsent)."""
        self._sink = sink

    # -- intake (the scheduling loop's side) -------------------------------------------------
    #
    # `add` is the native store's `record` when the clock is the real one, so the scheduling
    # loop's call goes straight to Rust (no Python frame); with an injected clock it is
    # `_add_with_clock`, which stamps the event from that clock first.

    def _add_with_clock(
        self,
        type: int,
        change_type: int,
        change_detail: int,
        object_id: str,
        reference_id: str = "",
        message: str = "",
        resource: Mapping[str, int] | None = None,
        timestamp_ns: int | None = None,
    ) -> bool:
        if timestamp_ns is None:
            timestamp_ns = self._clock.now_ns()
        return self._store.record(
            type, change_type, change_detail, object_id, reference_id, message, resource, timestamp_ns
        )

    def add_record(self, record: EventRecord) -> bool:
        """:meth:`add` for a ready-made record (its timestamp 0 means now)."""
        return self.add(
            record.type,
            record.change_type,
            record.change_detail,
            record.object_id,
            record.reference_id,
            record.message,
            dict(record.resource) or None,
            record.timestamp_ns or None,
        )

    def _on_request_event(
        self,
        type: int,
        change_type: int,
        change_detail: int,
        object_id: str,
        reference_id: str,
        message: str,
        resource: Mapping[str, int] | None,
        timestamp_ns: int | None,
    ) -> bool:
        """The native store's sink for REQUEST/NONE events: they go to the request store."""
        if not self._request_events:
            return False
        stamp = self._clock.now_ns() if timestamp_ns is None else timestamp_ns
        record = EventRecord(
            EventRecordType(type),
            EventChangeType(change_type),
            EventChangeDetail(change_detail),
            object_id,
            reference_id,
            truncate_message(message),
            stamp,
            resource or {},
        )
        return self._requests.store(record)

    # -- settings ----------------------------------------------------------------------------

    @property
    def settings(self) -> EventSettings:
        return self._settings

    @property
    def tracking_enabled(self) -> bool:
        """Whether events are collected: tracking enabled and a ring to keep them (the REST
        layer answers 500 while they are not)."""
        return self._settings.tracking_active

    def reload(self, extra_config: Mapping[str, str]) -> EventSettings:
        """Apply settings from a configuration map. A bad value raises ConfigError and leaves
        every setting as it was; new capacities apply without losing event ids."""
        settings = EventSettings.from_config(extra_config)
        self.apply_settings(settings)
        return settings

    def apply_settings(self, settings: EventSettings) -> None:
        with self._settings_lock:
            old, self._settings = self._settings, settings
            if settings.ring_buffer_capacity != old.ring_buffer_capacity:
                self._store.resize(settings.ring_buffer_capacity)
            self._requests.set_capacity(settings.request_store_capacity)
            self._apply_flags(settings)

    def _apply_flags(self, settings: EventSettings) -> None:
        # A ring of capacity 0 (service.event.ringBufferCapacity=0) turns collection off.
        self._store.set_tracking(settings.tracking_active)
        self._request_events = settings.request_events_active

    # -- queries (the REST layer's side) -------------------------------------------------------

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every event added so far is in the ring; False on timeout."""
        return self._store.flush(timeout)

    def publish_request_events(self) -> int:
        """Publish the stored request events to the RM now (the publisher does it every 2 s)."""
        return self._publisher.publish_once()

    def id_range(self) -> tuple[int, int]:
        """(lowest, highest) event ids held; (0, 0) when nothing was ever stored."""
        return self._store.id_range()

    def lowest_id(self) -> int:
        return self._store.lowest_id()

    def highest_id(self) -> int:
        return self._store.highest_id()

    def next_id(self) -> int:
        return self._store.next_id()

    def __len__(self) -> int:
        return len(self._store)

    def batch_body(self, start: int, count: int) -> bytes:
        """The exact ``/ws/v1/events/batch`` body for ``count`` events from ``start``."""
        return self._store.batch_body(self.instance_uuid, start, count)

    def ndjson(self, start: int, count: int) -> bytes:
        """``count`` events from ``start`` as NDJSON (empty when ``start`` is not held)."""
        return self._store.ndjson(start, count)

    def records(
        self, start: int, count: int
    ) -> list[tuple[int, int, int, int, int, str, str, str, dict[str, int]]]:
        """Decoded events (id, type, change type, detail, timestamp, object id, reference id,
        message, resource): for tests and tools, not for hot paths."""
        return self._store.records(start, count)

    def subscribe(self, count: int = 0, capacity: int = DEFAULT_SUBSCRIBER_CAPACITY) -> Subscription:
        """A stream of the last ``count`` events, then live ones."""
        return self._store.subscribe_recent(count, capacity)

    def subscribe_from(self, start: int, capacity: int = DEFAULT_SUBSCRIBER_CAPACITY) -> Subscription:
        """A stream resuming at event id ``start``. Raises EventIdOutOfRangeError when the
        ring no longer holds it."""
        return self._store.subscribe_from(start, capacity)

    def open_stream(
        self, subscription: Subscription, fd: int, first_line: bytes, chunked: bool, write_timeout: float
    ) -> StreamTicket:
        """Hands a stream's subscription and socket (the response head sent) to the stream
        writer, which writes the whole body: the first line, the history (before this returns),
        live events from one thread for every stream, and the closing line (``docs/events.md``,
        "The stream writer")."""
        return self._store.open_stream(subscription, fd, first_line, chunked, write_timeout)

    def release_streams(self) -> None:
        """Ends every open stream at its next chunk boundary, with the closing line (shutting
        down)."""
        self._store.release_streams()

    def stats(self) -> EventStats:
        native = self._store.stats()
        return EventStats(
            created=native["accepted"] + native["dropped"] + self._requests.stored + self._requests.dropped,
            dropped=native["dropped"],
            stored=native["stored"],
            not_stored=native["not_stored"],
            queued=native["queued"],
            request_stored=self._requests.stored,
            request_dropped=self._requests.dropped,
            published=self._publisher.published,
            publish_failed=self._publisher.failed,
            subscribers=native["subscribers"],
            attached_streams=native["attached_streams"],
            stream_write_timeouts=native["stream_write_timeouts"],
            slow_closed=native["slow_closed"],
            delivered=native["delivered"],
            ring_capacity=native["capacity"],
            ring_len=native["len"],
            interned_strings=native["interned_strings"],
            memory_bytes=native["memory_bytes"],
        )


def _weak_method(method: Callable[..., bool]) -> Callable[..., bool]:
    """``method`` called through a weak reference to its object (False once it is gone)."""
    ref = weakref.WeakMethod(method)

    def call(*args: Any) -> bool:
        target = ref()
        return target(*args) if target is not None else False

    return call
