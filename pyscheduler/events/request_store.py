"""The request-event store: events for the RM, never for REST or streams.

REQUEST events with change type NONE carry diagnostics about one ask (for a Kubernetes shim,
they become events on the pod). They are kept apart from the history ring, in a bounded store
that the publisher drains into the RM callback every interval (YuniKorn's ``EventStore``):
when the store is full, newer events are dropped and counted until the next collection.
"""

from __future__ import annotations

import threading

from pyscheduler.si.events import EventRecord

__all__ = ["RequestEventStore"]


class RequestEventStore:
    """Bounded, thread-safe store of request events awaiting publication."""

    def __init__(self, capacity: int) -> None:
        self._lock = threading.Lock()
        self._events: list[EventRecord] = []
        self._capacity = capacity
        # A new capacity applies at the next collection, as in YuniKorn.
        self._next_capacity = capacity
        self.stored = 0
        self.dropped = 0

    @property
    def capacity(self) -> int:
        with self._lock:
            return self._capacity

    def set_capacity(self, capacity: int) -> None:
        """Change the capacity from the next collection on."""
        with self._lock:
            self._next_capacity = capacity

    def store(self, record: EventRecord) -> bool:
        """Keep ``record`` for the next publication; False (and counted) when full."""
        with self._lock:
            if len(self._events) >= self._capacity:
                self.dropped += 1
                return False
            self._events.append(record)
            self.stored += 1
            return True

    def collect(self) -> list[EventRecord]:
        """Take every stored event, leaving the store empty."""
        with self._lock:
            events, self._events = self._events, []
            self._capacity = self._next_capacity
            return events

    def __len__(self) -> int:
        with self._lock:
            return len(self._events)
