"""REST reads yield to a busy scheduling loop.

Python runs one thread at a time (the GIL): a REST request that builds a large JSON answer
(every node, every active application) and the scheduling loop take turns, and with several
such requests in flight the loop gets only its share of turns. The lock model already keeps
REST reads off the partition's lock while they build their answer
(:mod:`pyscheduler.objects.locking`); this module keeps them from crowding out the loop:

- **One answer built at a time.** Builders pass through one gate, so however many clients
  poll, the loop competes with one of them, not with all.
- **A paced builder while the loop is busy.** While the scheduling loop is placing work (it
  placed something in its last cycle and runs again at once), the builder sleeps after each
  slice of work so that it uses at most ``duty`` of the time (10% by default): the loop keeps
  nearly all of the interpreter. An idle loop (nothing to place) costs REST nothing: no sleep.

Answers stay exact: the values are copied under the partition's lock before building starts,
only the building is slower while the scheduler is busy. ``duty=1`` turns pacing off.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Final

__all__ = ["DEFAULT_DUTY", "DEFAULT_SLICE", "ReadPacer"]

#: The share of the time a REST builder may use while the scheduling loop is busy.
DEFAULT_DUTY: Final = 0.1
#: Work a builder does between two checks of the clock, at most, in seconds.
DEFAULT_SLICE: Final = 0.002


class ReadPacer:
    """The gate and the pacing of REST answer builders (see the module doc)."""

    def __init__(self, duty: float = DEFAULT_DUTY, slice_seconds: float = DEFAULT_SLICE) -> None:
        if not 0 < duty <= 1:
            raise ValueError(f"duty must be in (0, 1], got {duty}")
        self.duty = duty
        self.slice_seconds = slice_seconds
        #: Set by the scheduling loop: True while it runs cycles back to back.
        self.scheduler_busy = False
        self._gate = threading.Lock()
        #: Seconds builders slept to yield to the scheduler (metrics, tests).
        self.yielded_seconds = 0.0

    @contextmanager
    def building(self, duty: float | None = None) -> Iterator[Callable[[], None]]:
        """Holds the gate while an answer is built; yields ``tick``, to be called after each
        item (a node, an application): it sleeps when the slice is used up and the loop is busy.
        ``duty``: a smaller share than the pacer's for an answer that holds the partition's lock
        while it builds (the loop waits for it then, not only for the interpreter)."""
        share = self.duty if duty is None else min(self.duty, duty)
        with self._gate:
            started = time.perf_counter()

            def tick() -> None:
                nonlocal started
                if not self.scheduler_busy or share >= 1:
                    return
                worked = time.perf_counter() - started
                if worked < self.slice_seconds:
                    return
                pause = worked * (1 - share) / share
                time.sleep(pause)
                self.yielded_seconds += pause
                started = time.perf_counter()

            yield tick
