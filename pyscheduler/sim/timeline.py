"""Simulated time: the threaded mode's scaled clock and the simulated RM's heap of timed events.

The simulation's clock is also the core's (ask ages, the reservation delay and application
timers follow it): a :class:`~pyscheduler.common.clock.ManualClock` in lockstep mode, a
:class:`ScaledClock` in threaded mode; both start at :data:`START_NS` on the wall clock.

:class:`EventHeap` orders what the RM does next: (simulated time, kind, sequence, payload). At
equal times the kind decides (a release before a submission: the freed space is then visible to
the asks that arrive at the same instant), then the sequence (insertion order), so a run never
depends on comparing payloads and always replays the same way. The heap is not thread-safe:
:class:`~pyscheduler.sim.rm.SimulatedRM` guards it with its condition.
"""

from __future__ import annotations

import heapq
import time
from typing import Final

from pyscheduler.sim.workload_types import AppPlan

__all__ = [
    "CONFIRM",
    "MEMBERS",
    "PREEMPTED",
    "RELEASE",
    "START_NS",
    "SUBMIT",
    "WAKE",
    "WAKE_INTERVAL",
    "WAKE_MARGIN",
    "Event",
    "EventHeap",
    "Payload",
    "ScaledClock",
]

#: 2026-01-01T00:00:00Z: the simulated wall clock starts here (event timestamps look real).
START_NS: Final = 1_767_225_600_000_000_000

# Event kinds, in the order they go at equal times.
#: An allocation's run time is over: the RM releases it.
RELEASE: Final = 0
#: A victim of preemption was killed: confirm the release to the core, submit the task again.
PREEMPTED: Final = 1
#: An application arrives: submit it with its asks.
SUBMIT: Final = 2
#: Nothing to send: wakes the core when a preemption delay has passed (in lockstep, keeps the
#: clock from jumping past it).
WAKE: Final = 3
#: Gang jobs: a placeholder the core released is gone (its pod deleted): confirm the release;
#: a job runs (every placeholder placed) or resumed: submit its members.
CONFIRM: Final = 4
MEMBERS: Final = 5

#: A release's or a victim's (application id, allocation key), a placeholder's confirmation
#: (application id, key, termination type), a submission's plan, or None for a wake.
Payload = tuple[str, str] | tuple[str, str, int] | AppPlan | None
#: (simulated time, kind, sequence, payload).
Event = tuple[float, int, int, Payload]

#: The late tenant's asks are woken this long after their preemption delay (the manual
#: clock's nanoseconds may trail its seconds by a few rounding errors) ...
WAKE_MARGIN: Final = 0.001
#: ... then every this many simulated seconds while one of them waits (preemption re-checks an
#: ask at most every 15 s: this sees it within a second).
WAKE_INTERVAL: Final = 1.0


class ScaledClock:
    """A clock that runs ``speed`` times faster than the real one, starting at 0 (monotonic)
    and at :data:`START_NS` (wall). Thread-safe: it only reads ``time.monotonic``."""

    def __init__(self, speed: float, start_ns: int = START_NS) -> None:
        if not speed > 0:
            raise ValueError(f"speed must be positive, got {speed}")
        self.speed = speed
        self._origin = time.monotonic()
        self._start_ns = start_ns

    def monotonic(self) -> float:
        return (time.monotonic() - self._origin) * self.speed

    def now_ns(self) -> int:
        return self._start_ns + int(self.monotonic() * 1_000_000_000)

    def real_seconds(self, simulated: float) -> float:
        """How long ``simulated`` seconds take on the wall clock."""
        return simulated / self.speed


class EventHeap:
    """The RM's timed events, earliest first (see the module docstring for the order). False
    when empty."""

    __slots__ = ("_events", "_sequence")

    def __init__(self) -> None:
        self._events: list[Event] = []
        self._sequence = 0

    def __bool__(self) -> bool:
        return bool(self._events)

    def push(self, when: float, kind: int, payload: Payload) -> None:
        self._sequence += 1
        heapq.heappush(self._events, (when, kind, self._sequence, payload))

    def next_time(self) -> float:
        """When the earliest event is due (the heap must not be empty)."""
        return self._events[0][0]

    def take_due(self, now: float) -> list[Event]:
        """Removes and returns the events due at ``now`` or before, earliest first."""
        events = self._events
        due = []
        while events and events[0][0] <= now:
            due.append(heapq.heappop(events))
        return due

    def has_work(self) -> bool:
        """Whether anything but a wake is still to come."""
        return any(kind != WAKE for _, kind, _, _ in self._events)
