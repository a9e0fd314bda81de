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
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
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
        if self._thread is not None:
            return
        self._stop.clear()
        # A listener among others: another Scheduler, the web layer or a test may listen too.
        self._remove_wake_listener = self.context.add_update_listener(self._wake.set)
        # Work submitted before the start must not wait for the first idle tick.
        self._wake.set()
        self._thread = threading.Thread(target=self._run, name="pyscheduler-scheduling", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Ends the loop after the cycle in progress."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        remove_wake_listener, self._remove_wake_listener = self._remove_wake_listener, None
        if remove_wake_listener is not None:
            # A stopped loop must not stay reachable from (and be called by) the context.
            remove_wake_listener()
        self._stop.set()
        self._wake.set()
        thread.join(timeout)
        self.context.read_pacer.scheduler_busy = False  # a stopped loop is not busy

    @property
    def running(self) -> bool:
        return self._thread is not None

    def wake(self) -> None:
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.idle_interval)
            self._wake.clear()
            if self._stop.is_set():
                break
            placed = bool(self.schedule_once())
            # While cycles run back to back, REST answers are built paced (read_pacing).
            self.context.read_pacer.scheduler_busy = placed
            if placed:
                # It placed something: there may be more to place right away.
                self._wake.set()
