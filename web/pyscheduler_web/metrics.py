"""``/ws/v1/metrics``: Prometheus metrics of the scheduler, the event system and the streams.

Each app has its own :class:`~prometheus_client.CollectorRegistry` (never the global one, so
several apps in one process, as in tests, do not collide) with:

- the runtime collectors (process, platform, GC): YuniKorn collects its runtime metrics first;
- :class:`SchedulerCollector`, which reads the counters at scrape time and costs the
  scheduler nothing in between: ``EventSystem.stats()`` under YuniKorn's ``yunikorn_event_*``
  names where one exists and ``pyscheduler_event_*`` otherwise, the scheduling loop's
  counters, and the open, allowed and refused event streams;
- ``yunikorn_scheduler_scheduling_latency_milliseconds``, a histogram of the scheduling
  cycle's duration. The core has no metrics hook, so :func:`instrument_cycle` wraps the
  ``run`` method of the scheduler's ``SchedulingCycle`` instance (the loop calls
  ``self.cycle.run()``): about a microsecond per cycle, without touching the core.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import choose_encoder
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from pyscheduler.common.histogram import LatencyHistogram

if TYPE_CHECKING:
    from pyscheduler_web.service import SchedulerService
    from pyscheduler_web.streams import StreamRegistry

__all__ = ["CYCLE_LATENCY_BUCKETS_MS", "Metrics", "SchedulerCollector", "instrument_cycle"]

#: Milliseconds; a cycle is usually tens of microseconds to a few milliseconds.
CYCLE_LATENCY_BUCKETS_MS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 1000.0)


class SchedulerCollector(Collector):
    """Reads the service's counters when Prometheus scrapes."""

    def __init__(self, service: SchedulerService, streams: StreamRegistry) -> None:
        self._service = service
        self._streams = streams

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        service = self._service
        stats = service.context.event_system.stats()
        lowest, highest = service.context.event_system.id_range()

        def gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
            return GaugeMetricFamily(name, doc, value=value)

        def counter(name: str, doc: str, value: float) -> CounterMetricFamily:
            return CounterMetricFamily(name, doc, value=value)

        # YuniKorn's event metrics (gauges in YuniKorn, kept as gauges here).
        yield gauge("yunikorn_event_total_created", "Events created while tracking was enabled.", stats.created)
        yield gauge(
            "yunikorn_event_total_channeled",
            "History events accepted into the pipeline to the ring buffer.",
            stats.stored + stats.not_stored + stats.queued,
        )
        yield gauge(
            "yunikorn_event_total_not_channeled",
            "History events dropped because the pipeline to the ring buffer was full.",
            stats.dropped,
        )
        yield gauge("yunikorn_event_total_processed", "History events taken off the pipeline.", stats.stored + stats.not_stored)
        yield gauge("yunikorn_event_total_stored", "History events stored in the ring buffer.", stats.stored)
        yield gauge("yunikorn_event_total_not_stored", "History events not stored (collection off).", stats.not_stored)
        yield gauge("yunikorn_event_total_collected", "Request events published to the RM.", stats.published)
        # The rest of EventSystem.stats().
        yield gauge("pyscheduler_event_queued", "History events waiting between add and the ring buffer.", stats.queued)
        yield gauge("pyscheduler_event_ring_capacity", "Capacity of the event ring buffer.", stats.ring_capacity)
        yield gauge("pyscheduler_event_ring_events", "Events held in the ring buffer.", stats.ring_len)
        yield gauge("pyscheduler_event_lowest_id", "Oldest event id held.", lowest)
        yield gauge("pyscheduler_event_highest_id", "Newest event id held.", highest)
        yield gauge("pyscheduler_event_memory_bytes", "Memory used by the ring buffer and its interners.", stats.memory_bytes)
        yield gauge("pyscheduler_event_interned_strings", "Distinct strings interned by the event store.", stats.interned_strings)
        yield counter("pyscheduler_event_request_stored", "Request events kept for the RM.", stats.request_stored)
        yield counter("pyscheduler_event_request_dropped", "Request events dropped (request store full).", stats.request_dropped)
        yield counter("pyscheduler_event_publish_failed", "Request events lost to a failing RM callback.", stats.publish_failed)
        yield gauge("pyscheduler_event_subscribers", "Open event subscriptions.", stats.subscribers)
        yield gauge(
            "pyscheduler_event_streams_attached",
            "Event streams written by the event store's stream writer.",
            stats.attached_streams,
        )
        yield counter(
            "pyscheduler_event_subscribers_closed_slow",
            "Subscriptions closed by the producer for falling behind.",
            stats.slow_closed,
        )
        yield counter("pyscheduler_event_delivered", "Events delivered to subscriptions.", stats.delivered)
        # REST event streams.
        streams = self._streams
        yield gauge("pyscheduler_web_event_streams", "Open /ws/v1/events/stream connections.", len(streams))
        yield gauge("pyscheduler_web_event_streams_limit", "Most concurrent event streams allowed now.", streams.limit())
        yield counter("pyscheduler_web_event_streams_refused", "Event streams refused for a limit (503).", streams.refused)
        yield counter(
            "pyscheduler_web_event_streams_write_timeouts",
            "Event streams cut because one chunk was not written within 5 s.",
            stats.stream_write_timeouts,
        )
        # Role history.
        histories = [p.role_histories for p in list(service.context.partitions.values())]
        yield counter("pyscheduler_role_history_placements_history_node",
                      "Role instances placed on the history node their ask targeted.",
                      sum(h.history_placements for h in histories))
        yield counter("pyscheduler_role_history_placements_elsewhere",
                      "Role instances placed on any other node (no usable history node, escalated, RM-reported).",
                      sum(h.other_placements for h in histories))
        yield counter("pyscheduler_role_history_escalations",
                      "Asks sent to the normal node order after their role's placement timeout.",
                      sum(h.escalations for h in histories))
        saver = service.role_history_saver
        yield counter("pyscheduler_role_history_saves", "Role history files written.", saver.saves if saver else 0)
        yield counter("pyscheduler_role_history_save_errors", "Role history saves that failed (retried).",
                      saver.save_errors if saver else 0)
        # The node reporter manager, per plugin.
        reporters = service.reporters
        polls = CounterMetricFamily("pyscheduler_reporter_polls", "Polls of a reporter plugin.", labels=["plugin"])
        failures = CounterMetricFamily("pyscheduler_reporter_poll_failures",
                                       "Polls that failed or timed out (the last good report stayed).", labels=["plugin"])
        rejected = GaugeMetricFamily("pyscheduler_reporter_rejected_fields",
                                     "Fields of a plugin refused in the last round.", labels=["plugin"])
        for state in reporters.plugins():
            polls.add_metric([state.name], state.polls)
            failures.add_metric([state.name], state.failures)
            rejected.add_metric([state.name], len(state.rejected))
        yield polls
        yield failures
        yield rejected
        yield counter("pyscheduler_reporter_rounds", "Rounds of the node reporter manager.", reporters.rounds)
        yield gauge("pyscheduler_reporter_round_seconds", "How long the last reporter round took.",
                    reporters.last_round_seconds)
        # Preemption, over every partition.
        partitions = list(service.context.partitions.values())
        yield counter("pyscheduler_preemption_attempts",
                      "Guaranteed-share preemption attempts (asks past the preconditions).",
                      sum(p.preemption_attempts for p in partitions))
        yield counter("pyscheduler_preemption_preemptions",
                      "Preemptions made (guaranteed-share and required-node), each one release message.",
                      sum(p.preemptions for p in partitions))
        yield counter("pyscheduler_preemption_victims", "Allocations chosen as preemption victims.",
                      sum(p.preemption_victims for p in partitions))
        latency = HistogramMetricFamily("pyscheduler_preemption_try_latency_milliseconds",
                                        "Time to decide one guaranteed-share preemption (find victims, choose a node).")
        merged = LatencyHistogram()  # every partition's, bucket by bucket
        for partition in partitions:
            own = partition.preemption_latency
            merged.counts = [a + b for a, b in zip(merged.counts, own.counts)]
            merged.sum_ms += own.sum_ms
        latency.add_metric([], merged.cumulative(), merged.sum_ms)
        yield latency
        # The scheduling loop.
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


class Metrics:
    """The app's registry and its exposition."""

    def __init__(self, service: SchedulerService, streams: StreamRegistry) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self.registry.register(SchedulerCollector(service, streams))
        self.cycle_latency = Histogram(
            "yunikorn_scheduler_scheduling_latency_milliseconds",
            "Duration of one scheduling cycle, in milliseconds.",
            buckets=CYCLE_LATENCY_BUCKETS_MS,
            registry=self.registry,
        )
        instrument_cycle(service.scheduler, self.cycle_latency)

    def exposition(self, accept: str | None) -> tuple[bytes, str]:
        """The scrape body and its content type (OpenMetrics when the client asks for it)."""
        encoder, content_type = choose_encoder(accept or "")
        return encoder(self.registry), content_type
