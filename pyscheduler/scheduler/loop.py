"""The scheduling loop: runs the cycle on its own thread.

It runs again at once after a cycle that placed something or after an RM update (while it runs,
it is one of the context's update listeners), otherwise every 100 ms (YuniKorn's
``internalSchedule``), and fires the partitions' timers every second.
Tests drive it by hand instead: :meth:`Scheduler.schedule_once` runs one cycle and
:meth:`Scheduler.run_until_idle` runs cycles until one places nothing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from pyscheduler.common.background import BackgroundThread
from pyscheduler.scheduler.context import ClusterContext
from pyscheduler.scheduler.cycle import DEFAULT_RESERVATION_DELAY, Decision, SchedulingCycle

__all__ = ["Scheduler", "IDLE_INTERVAL", "TICK_INTERVAL"]

log = logging.getLogger(__name__)

IDLE_INTERVAL = 0.1
TICK_INTERVAL = 1.0


class Scheduler:
    def __init__(
        self,
        context: ClusterContext,
        *,
        reservation_delay: float = DEFAULT_RESERVATION_DELAY,
        idle_interval: float = IDLE_INTERVAL,
        tick_interval: float = TICK_INTERVAL,
    ) -> None:
        self.context = context
        self.cycle = SchedulingCycle(context, reservation_delay=reservation_delay)
        self.idle_interval = idle_interval
        self.tick_interval = tick_interval
        self._thread = BackgroundThread("pyscheduler-scheduling", self._step, interval=idle_interval)
        self._last_tick = context.clock.monotonic()
        #: Cycles run, allocations made, and cycles that failed with an error (health checks).
        self.cycles = 0
        self.allocations = 0
        self.errors = 0
        self.last_error = ""
        #: Removes this loop's wake-up from the context's update listeners (set while it runs).
        self._remove_wake_listener: Callable[[], None] | None = None

    # -- manual mode -----------------------------------------------------------------------------

    def schedule_once(self) -> list[Decision]:
        """One cycle: at most one allocation per partition. Fires due timers first."""
        self._tick_if_due()
        try:
            decisions = self.cycle.run()
        except Exception as err:  # a bug in one cycle must not end scheduling
            self.errors += 1
            self.last_error = f"{type(err).__name__}: {err}"
            log.exception("scheduling cycle failed")
            return []
        self.cycles += 1
        self.allocations += len(decisions)
        return decisions

    def run_until_idle(self, max_cycles: int = 1_000_000) -> int:
        """Runs cycles until one places nothing (or ``max_cycles``); returns allocations made."""
        made = 0
        for _ in range(max_cycles):
            decisions = self.schedule_once()
            if not decisions:
                break
            made += len(decisions)
        return made

    def _tick_if_due(self) -> None:
        now = self.context.clock.monotonic()
        if now - self._last_tick >= self.tick_interval:
            self._last_tick = now
            self.context.tick()

    # -- thread ----------------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread.running:
            return
        # A listener among others: another Scheduler, the web layer or a test may listen too.
        self._remove_wake_listener = self.context.add_update_listener(self._thread.wake)
        # Work submitted before the start does not wait for the first idle tick: the first cycle
        # runs at once.
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Ends the loop after the cycle in progress."""
        remove_wake_listener, self._remove_wake_listener = self._remove_wake_listener, None
        if remove_wake_listener is not None:
            # A stopped loop must not stay reachable from (and be called by) the context.
            remove_wake_listener()
        self._thread.stop(timeout)
        self.context.read_pacer.scheduler_busy = False  # a stopped loop is not busy

    @property
    def running(self) -> bool:
        return self._thread.running

    @property
    def thread(self) -> threading.Thread | None:
        """The loop's thread while it runs."""
        return self._thread.thread

    def wake(self) -> None:
        self._thread.wake()

    def _step(self) -> bool:
        """One cycle of the loop's thread; True (run again at once) when it placed something."""
        placed = bool(self.schedule_once())
        # While cycles run back to back, REST answers are built paced (read_pacing).
        self.context.read_pacer.scheduler_busy = placed
        return placed
