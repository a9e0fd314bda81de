"""Coalesced writes, one pending write per key: the shim's pod conditions.

A burst of pending pods (thousands asking at once, each told why it waits) must not stall the
thread that reports them (the core's event publisher) behind one API round trip per pod, and
must not queue without bound: :class:`CoalescingWriter` keeps, per key, only the newest value
not yet written, and its own threads write them in the order the keys first became pending.
The number of waiting writes is bounded by the number of distinct keys (the pods the shim
knows); a key submitted again before its write ran is written once, with the newest value.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["CoalescingWriter"]

log = logging.getLogger(__name__)

V = TypeVar("V")


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
        self._threads: list[threading.Thread] = []

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
            thread = threading.Thread(target=self._run, name=f"{self._name}-{n}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout: float = 5.0) -> None:
        with self._lock:
            self._stopped = True
            self._newest.clear()
            self._order.clear()
            self._lock.notify_all()
        for thread in self._threads:
            thread.join(timeout)

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._order and not self._stopped:
                    self._lock.wait()
                if self._stopped:
                    return
                key = self._order.popleft()
                if key not in self._newest:
                    continue  # discarded
                value = self._newest.pop(key)
            try:
                self._write(key, value)
            except Exception:  # one failed write must not stop the others
                log.exception("%s: writing %s failed", self._name, key)
