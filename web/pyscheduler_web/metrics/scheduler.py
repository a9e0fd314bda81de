"""The scheduling loop: its counters (read at scrape time) and YuniKorn's
``yunikorn_scheduler_scheduling_latency_milliseconds``, a histogram of the cycle's duration.

The core has no metrics hook, so :func:`instrument_cycle` wraps the ``run`` method of the
scheduler's ``SchedulingCycle`` instance (the loop calls ``self.cycle.run()``): about a
microsecond per cycle, without touching the core.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import Histogram
from prometheus_client.core import Metric

from pyscheduler_web.metrics.source import MetricsInputs, ObservedService, ScrapeCollector, counter, gauge

__all__ = ["CYCLE_LATENCY_BUCKETS_MS", "SchedulerMetrics", "cycle_latency", "instrument_cycle"]

#: Milliseconds; a cycle is usually tens of microseconds to a few milliseconds.
CYCLE_LATENCY_BUCKETS_MS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 1000.0)


class SchedulerMetrics(ScrapeCollector):
    """Cycles, allocations, errors, partitions and the start time."""

    def __init__(self, inputs: MetricsInputs) -> None:
        self._service: ObservedService = inputs.service

    def collect(self) -> Iterator[Metric]:
        service = self._service
        scheduler = service.scheduler
        yield counter("pyscheduler_scheduler_cycles", "Scheduling cycles run.", scheduler.cycles)
        yield counter("pyscheduler_scheduler_allocations", "Allocations made by the scheduling cycle.", scheduler.allocations)
        yield counter("pyscheduler_scheduler_cycle_errors", "Scheduling cycles that failed with an error.", scheduler.errors)
        yield gauge("pyscheduler_scheduler_partitions", "Partitions of every registered RM.", len(service.context.partitions))
        yield gauge(
            "pyscheduler_scheduler_start_time_seconds",
            "When the scheduler started (Unix seconds).",
            service.started_ns / 1e9,
        )


def instrument_cycle(scheduler: Any, histogram: Histogram) -> None:
    """Observe every scheduling cycle's duration (ms) by wrapping the cycle instance's ``run``."""
    cycle = scheduler.cycle
    run: Callable[..., Any] = cycle.run
    observe = histogram.observe
    perf_counter = time.perf_counter

    def timed_run(*args: Any, **kwargs: Any) -> Any:
        started = perf_counter()
        try:
            return run(*args, **kwargs)
        finally:
            observe((perf_counter() - started) * 1000.0)

    cycle.run = timed_run


def cycle_latency(inputs: MetricsInputs) -> Histogram:
    """The cycle-duration histogram, observing the service's scheduler from now on."""
    histogram = Histogram(
        "yunikorn_scheduler_scheduling_latency_milliseconds",
        "Duration of one scheduling cycle, in milliseconds.",
        buckets=CYCLE_LATENCY_BUCKETS_MS,
        registry=None,
    )
    instrument_cycle(inputs.service.scheduler, histogram)
    return histogram
