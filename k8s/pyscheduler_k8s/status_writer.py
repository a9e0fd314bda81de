"""Coalesced writes, one pending write per key: the shim's pod conditions.

A burst of pending pods (thousands asking at once, each told why it waits) must not stall the
thread that reports them (the core's event publisher) behind one API round trip per pod, and
must not queue without bound: :class:`CoalescingWriter` keeps, per key, only the newest value
not yet written, and its own threads write them in the order the keys first became pending.
The number of waiting writes is bounded by the number of distinct keys (the pods the shim
knows); a key submitted again before its write ran is written once, with the newest value.
Its threads are :class:`~pyscheduler.common.background.BackgroundThread` s, each step one write.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Final, Generic, TypeVar

from pyscheduler.common.background import BackgroundThread

__all__ = ["CoalescingWriter"]

log = logging.getLogger(__name__)

V = TypeVar("V")
#: A writer thread that found the writer stopped sleeps this long, i.e. until its stop wakes it.
_IDLE: Final = 3600.0


class CoalescingWriter(Generic[V]):
    def __init__(self, write: Callable[[str, V], None], *, name: str = "writer") -> None:
        """``write(key, value)`` runs on the writer's threads; what it raises is logged and the
        writer goes on with the next key."""
        self._write = write
        self._name = name
        self._lock = threading.Condition()
        self._newest: dict[str, V] = {}
        self._order: deque[str] = deque()
        self._stopped = False
        self._threads: list[BackgroundThread] = []

    def submit(self, key: str, value: V) -> None:
        with self._lock:
            if self._stopped:
                return
            if key not in self._newest:
                self._order.append(key)
                self._lock.notify()
            self._newest[key] = value

    def discard(self, key: str) -> None:
        """Drops the key's pending write, if any (the pod is gone)."""
        with self._lock:
            self._newest.pop(key, None)  # its place in the order is skipped when reached

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._newest)

    def start(self, threads: int) -> None:
        for n in range(threads):
            thread = BackgroundThread(f"{self._name}-{n}", self._step, interval=_IDLE)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout: float = 5.0) -> None:
        with self._lock:
            self._stopped = True
            self._newest.clear()
            self._order.clear()
            self._lock.notify_all()
        threads, self._threads = self._threads, []
        for thread in threads:
            thread.stop(timeout)

    def _step(self) -> bool:
        """One write (the oldest pending key's newest value); False once stopped."""
        with self._lock:
            while True:
                while not self._order and not self._stopped:
                    self._lock.wait()
                if self._stopped:
                    return False
                key = self._order.popleft()
                if key in self._newest:
                    break  # else discarded: the next one
            value = self._newest.pop(key)
        try:
            self._write(key, value)
        except Exception:  # one failed write must not stop the others
            log.exception("%s: writing %s failed", self._name, key)
        return True
