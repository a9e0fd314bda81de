"""The shim's thread shapes, all on the core's :class:`~pyscheduler.common.background.BackgroundThread`:

- :class:`QueuePool`: N named threads taking items from one queue and handling each (the
  binders, the event writers, the workers for other writes). What a handler raises is logged
  with the pool's name and the pool goes on. :meth:`QueuePool.stop` wakes every thread (one
  stop marker each), lets the item in hand finish and joins them; items still queued are
  dropped (the shim is stopping: a new leader recovers from the API server), unless a
  ``drain`` lets the threads handle them first for up to that many seconds (the events of
  the bindings done: what happened is worth saying, what did not is the next leader's).
- :class:`DelayedCalls`: one-shot calls after a delay (a retry's :func:`backoff`), each a
  BackgroundThread with ``first_delay`` and no interval; :meth:`DelayedCalls.stop` cancels
  the ones not run yet.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, Final, Generic, TypeVar

from pyscheduler.common.background import BackgroundThread

__all__ = ["BACKOFF_FIRST", "BACKOFF_MAX", "DelayedCalls", "QueuePool", "backoff"]

log = logging.getLogger(__name__)

T = TypeVar("T")
#: A pool thread that took its stop marker sleeps this long, i.e. until its stop wakes it.
_IDLE: Final = 3600.0


#: The first pause before a failed write is tried again, doubled each time up to the maximum.
BACKOFF_FIRST: Final = 1.0
BACKOFF_MAX: Final = 60.0


def backoff(attempt: int) -> float:
    """The pause before try ``attempt + 1`` (``attempt`` counts from 0)."""
    return float(min(BACKOFF_MAX, BACKOFF_FIRST * 2.0 ** attempt))


class _Stop:
    """The marker each pool thread takes once when the pool stops."""


_STOP: Final = _Stop()


class QueuePool(Generic[T]):
    def __init__(self, name: str, threads: int, handle: Callable[[T], None], *, maxsize: int = 0) -> None:
        self.name = name
        self._handle = handle
        self._queue: queue.Queue[T | _Stop] = queue.Queue(maxsize=maxsize)
        self._stopped = threading.Event()
        self._threads = [BackgroundThread(f"{name}-{n}", self._step, interval=_IDLE) for n in range(threads)]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def put(self, item: T) -> None:
        """Queues ``item`` (waits for room in a bounded pool); dropped once the pool stopped."""
        if not self._stopped.is_set():
            self._queue.put(item)

    def offer(self, item: T) -> bool:
        """Queues ``item`` if there is room: False when the pool is full (or stopped)."""
        if self._stopped.is_set():
            return False
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            return False
        return True

    def stop(self, timeout: float = 5.0, *, drain: float = 0.0) -> None:
        """Stops the threads (see the module doc); ``drain``: seconds they may go on with the
        items queued before the rest is dropped."""
        deadline = time.monotonic() + drain
        while drain > 0 and self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.005)
        self._stopped.set()
        while True:  # what waits is dropped, so the markers find room in a bounded queue
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
            self._queue.task_done()
        for _ in self._threads:
            self._queue.put(_STOP)
        for thread in self._threads:
            thread.stop(timeout)

    def _step(self) -> bool:
        item = self._queue.get()
        try:
            if isinstance(item, _Stop) or self._stopped.is_set():
                return False  # sleeps until its stop wakes it
            try:
                self._handle(item)
            except Exception:  # one failed item must not stop the others
                log.exception("%s: handling %r failed", self.name, item)
            return True
        finally:
            self._queue.task_done()  # counted only now: a drain waits for the item in hand too


class DelayedCalls:
    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._pending: dict[int, BackgroundThread] = {}
        self._numbers = itertools.count()
        self._stopped = False

    def call_later(self, delay: float, task: Callable[..., None], *args: Any) -> None:
        """Calls ``task(*args)`` on its own thread after ``delay`` seconds (not after a stop)."""
        number = next(self._numbers)

        def run() -> None:
            with self._lock:
                self._pending.pop(number, None)
            task(*args)

        thread = BackgroundThread(f"{self.name}-{number}", run, interval=0, first_delay=max(delay, 1e-3))
        with self._lock:
            if self._stopped:
                return
            self._pending[number] = thread
        thread.start()

    def stop(self, timeout: float = 1.0) -> None:
        with self._lock:
            self._stopped = True
            pending, self._pending = list(self._pending.values()), {}
        for thread in pending:
            thread.stop(timeout)
