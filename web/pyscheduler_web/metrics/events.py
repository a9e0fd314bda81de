"""The event system's metrics: ``EventSystem.stats()`` under YuniKorn's ``yunikorn_event_*``
names where one exists (gauges there, gauges here), ``pyscheduler_event_*`` otherwise."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import Metric

from pyscheduler_web.metrics.source import MetricsInputs, ObservedService, ScrapeCollector, counter, gauge

__all__ = ["EventMetrics"]


class EventMetrics(ScrapeCollector):
    """The event pipeline, ring buffer, request events and subscriptions."""

    def __init__(self, inputs: MetricsInputs) -> None:
        self._service: ObservedService = inputs.service

    def collect(self) -> Iterator[Metric]:
        event_system = self._service.context.event_system
        stats = event_system.stats()
        lowest, highest = event_system.id_range()
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
