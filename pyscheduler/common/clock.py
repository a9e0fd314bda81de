"""Injectable time, so timeouts and timers are testable without sleeping.

Everything in pyscheduler that reads the time takes a :class:`Clock`. Production code uses
:class:`SystemClock`; tests use :class:`ManualClock` and move time forward explicitly.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol

__all__ = ["Clock", "ManualClock", "SystemClock"]


class Clock(Protocol):
    """A source of wall-clock and monotonic time."""

    def now_ns(self) -> int:
        """Wall-clock time in Unix nanoseconds (event timestamps, submission times)."""
        ...

    def monotonic(self) -> float:
        """Seconds from an arbitrary origin that never goes backwards (timeouts, delays)."""
        ...


class SystemClock:
    """The real clock."""

    def now_ns(self) -> int:
        return time.time_ns()

    def monotonic(self) -> float:
        return time.monotonic()


class ManualClock:
    """A clock that only moves when told to. Thread-safe."""

    def __init__(self, start_ns: int = 1_700_000_000_000_000_000) -> None:
        self._lock = threading.Lock()
        self._now_ns = start_ns
        self._monotonic = 0.0

    def now_ns(self) -> int:
        with self._lock:
            return self._now_ns

    def monotonic(self) -> float:
        with self._lock:
            return self._monotonic

    def advance(self, seconds: float) -> None:
        """Move both clocks forward by ``seconds``."""
        if seconds < 0:
            raise ValueError("a clock cannot go backwards")
        with self._lock:
            self._now_ns += int(seconds * 1_000_000_000)
            self._monotonic += seconds
