"""Internal metrics history (YuniKorn's InternalMetricsHistory): one sample a minute of the
number of applications and of containers (allocations), kept for the last day.

It feeds ``/ws/v1/history/apps`` and ``/ws/v1/history/containers`` and the state dump. A sample
counts the live applications and their allocations over every partition, each read under its
partition's lock; nothing is changed. Tests call :meth:`History.sample` directly; a running
scheduler starts the background thread with :meth:`History.start`.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from typing import TYPE_CHECKING

from pyscheduler.common.background import BackgroundThread
from pyscheduler.common.clock import Clock
from pyscheduler.objects.application_state import AppState

if TYPE_CHECKING:
    from pyscheduler.scheduler.context import ClusterContext

__all__ = ["History", "DEFAULT_CAPACITY", "DEFAULT_INTERVAL"]

log = logging.getLogger(__name__)

#: YuniKorn keeps 1440 records, one a minute: a day.
DEFAULT_CAPACITY = 1440
DEFAULT_INTERVAL = 60.0


class History:
    def __init__(
        self,
        ctx: ClusterContext,
        clock: Clock | None = None,
        capacity: int = DEFAULT_CAPACITY,
        interval: float = DEFAULT_INTERVAL,
    ) -> None:
        if capacity <= 0:
            raise ValueError(f"history capacity must be positive, got {capacity}")
        self.ctx = ctx
        self.clock = clock or ctx.clock
        self.capacity = capacity
        self.interval = interval
        self._lock = threading.Lock()
        #: (timestamp ns, applications, containers), oldest first; the oldest goes when full.
        self._records: deque[tuple[int, int, int]] = deque(maxlen=capacity)
        self._thread = BackgroundThread("pyscheduler-history", self._step, interval=interval, first_delay=interval)

    def counts(self) -> tuple[int, int]:
        """(Running applications, allocations of the live applications) over every partition,
        now: YuniKorn stores its "total applications running" metric and its allocated
        containers (the web UI plots them as "Running Applications" and "Containers")."""
        with self.ctx.lock:
            partitions = list(self.ctx.partitions.values())
        apps = containers = 0
        for partition in partitions:
            with partition.lock:
                for app in partition.applications.values():
                    if app.state is AppState.RUNNING:
                        apps += 1
                    containers += len(app.allocations)
        return apps, containers

    def sample(self) -> tuple[int, int, int]:
        """Records one sample now and returns it."""
        apps, containers = self.counts()
        record = (self.clock.now_ns(), apps, containers)
        with self._lock:
            self._records.append(record)
        return record

    def records(self) -> list[tuple[int, int, int]]:
        with self._lock:
            return list(self._records)

    def apps(self) -> list[tuple[int, int]]:
        """(timestamp ns, applications) of every sample, oldest first."""
        return [(ts, apps) for ts, apps, _ in self.records()]

    def containers(self) -> list[tuple[int, int]]:
        """(timestamp ns, containers) of every sample, oldest first."""
        return [(ts, containers) for ts, _, containers in self.records()]

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)

    # -- thread ------------------------------------------------------------------------------------

    def start(self) -> None:
        """Samples every ``interval`` seconds on a daemon thread (the first after one interval,
        like YuniKorn's ticker). A failed sample is logged and the next one still comes."""
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._thread.stop(timeout)

    @property
    def running(self) -> bool:
        return self._thread.running

    def _step(self) -> None:
        self.sample()
