"""The shim publisher: pushes collected request events to the RM callback.

Every interval (2 s, as YuniKorn's ``defaultPushEventInterval``) it collects the request
store and, when anything was collected and an RM callback is registered, calls its
``send_event(list)``. A failing callback is logged and counted; it never stops the publisher.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Protocol

from pyscheduler.common.background import BackgroundThread
from pyscheduler.events.request_store import RequestEventStore
from pyscheduler.si.events import EventRecord

__all__ = ["EventSink", "ShimPublisher", "DEFAULT_PUBLISH_INTERVAL"]

log = logging.getLogger(__name__)

DEFAULT_PUBLISH_INTERVAL = 2.0


class EventSink(Protocol):
    """What the publisher needs of an RM callback."""

    def send_event(self, events: Sequence[EventRecord]) -> None: ...


class ShimPublisher:
    """Background thread draining a :class:`RequestEventStore` into an RM callback."""

    def __init__(
        self,
        store: RequestEventStore,
        sink: Callable[[], EventSink | None],
        interval: float = DEFAULT_PUBLISH_INTERVAL,
    ) -> None:
        self._store = store
        self._sink = sink
        self._interval = interval
        # The first publication after one interval, then every interval.
        self._thread = BackgroundThread(
            "pyscheduler-event-publisher", self._publish_step, interval=interval, first_delay=interval
        )
        self._lock = threading.Lock()
        self.published = 0
        self.failed = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread (if started), then publish what is stored one last time."""
        self._thread.stop()
        self.publish_once()

    @property
    def running(self) -> bool:
        return self._thread.running

    def publish_once(self) -> int:
        """Collect and send now; returns how many events were sent."""
        with self._lock:
            events = self._store.collect()
            sink = self._sink()
            if not events or sink is None:
                return 0
            try:
                sink.send_event(events)
            except Exception:  # the RM's failure must not end publishing
                self.failed += len(events)
                log.exception("RM callback send_event failed for %d events", len(events))
                return 0
            self.published += len(events)
            return len(events)

    def _publish_step(self) -> None:
        self.publish_once()
