"""Saving role histories: off the scheduling thread, driven by what changed, with a bounded delay.

The seed's design (Slider saved synchronously, inside its lock, after every start and stop).
:class:`RoleHistorySaver` runs one background thread that wakes every ``delay`` seconds (1 s by
default: the most a crash loses of what the scheduler learnt). For each partition whose role
histories changed since its last save, it takes a snapshot under the partition's lock, a chunk
of histories (about 2,000 entries) per hold, so the scheduling cycle waits at most that long
(only the histories that changed are walked again; the others' entries are reused), and, with
no lock held, writes the file through the :class:`~pyscheduler.policies.role_history.store.HistoryStore`.
A save that fails is counted, logged and retried at the next wake-up; it never stops the
thread or the scheduler. Stopping saves once more, so a clean shutdown loses nothing.

Loading is the other half: the context loads a partition's newest readable history when it
creates the partition (``ClusterContext(role_history_store=...)``), so a restarted scheduler
starts with the histories its predecessor saved. What the store skipped (a corrupt, truncated,
future-version or unreadable file) is a warning, never a failed start.
"""

from __future__ import annotations

import logging
import threading
from contextlib import AbstractContextManager
import time
from typing import Final

from pyscheduler.common.background import BackgroundThread
from pyscheduler.common.gc_pause import collector_paused
from pyscheduler.policies.role_history.store import HistoryStore
from pyscheduler.scheduler.context import ClusterContext, external_name

__all__ = ["DEFAULT_SAVE_DELAY", "HoldWithoutCollection", "RoleHistorySaver"]

log = logging.getLogger(__name__)

DEFAULT_SAVE_DELAY: Final = 1.0


class HoldWithoutCollection:
    """Holds ``lock`` with Python's cyclic garbage collector paused (common.gc_pause): a
    snapshot allocates many small objects, and a full collection that they trigger would
    otherwise run inside the hold (tens of ms on a large heap, with the scheduling cycle
    waiting). It runs after the release."""

    def __init__(self, lock: AbstractContextManager[object]) -> None:
        self._lock = lock
        self._pause = collector_paused()

    def __enter__(self) -> object:
        self._lock.__enter__()
        self._pause = collector_paused()
        self._pause.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._pause.__exit__(None, None, None)
        self._lock.__exit__(None, None, None)


class RoleHistorySaver:
    """Saves the role histories of every partition of ``context`` to ``store``."""

    def __init__(self, context: ClusterContext, store: HistoryStore, delay: float = DEFAULT_SAVE_DELAY) -> None:
        self.context = context
        self.store = store
        #: Files written, saves that failed, the last failure, the last save's duration.
        self.saves = 0
        self.save_errors = 0
        self.last_error = ""
        self.last_save_seconds = 0.0
        self._failed: set[str] = set()
        # One save at a time (the thread's and a final or explicit one).
        self._saving = threading.Lock()
        self._thread = BackgroundThread("pyscheduler-role-history", self._step, interval=delay,
                                        first_delay=delay, on_stop=self.save_changed)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stops the thread, then saves what changed since the last save."""
        self._thread.stop(timeout)

    @property
    def running(self) -> bool:
        return self._thread.running

    def _step(self) -> None:
        self.save_changed()

    def save_changed(self) -> int:
        """Saves every partition whose histories changed (or whose last save failed); returns
        how many files were written."""
        written = 0
        with self._saving:
            for partition in list(self.context.partitions.values()):
                name = external_name(partition.name)
                histories = partition.role_histories
                with partition.lock:
                    changed = name in self._failed or histories.changed_since_snapshot()
                if not changed:
                    continue
                entries = histories.snapshot(HoldWithoutCollection(partition.lock))
                started = time.perf_counter()
                try:
                    self.store.save(name, self.context.clock.now_ns() // 1_000_000, entries)
                except Exception as err:  # any file system's error: counted, retried
                    self._failed.add(name)
                    self.save_errors += 1
                    self.last_error = f"{type(err).__name__}: {err}"
                    log.warning("saving the role history of partition %s failed: %s", name, self.last_error)
                    continue
                self._failed.discard(name)
                self.saves += 1
                written += 1
                self.last_save_seconds = time.perf_counter() - started
        return written
