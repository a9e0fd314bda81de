"""The REST layer's event streams (``/ws/v1/events/stream``): open, allowed, refused, and cut
for a stuck chunk (the stream writer's count, read from the event system)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import Metric

from pyscheduler_web.metrics.source import MetricsInputs, ObservedService, ScrapeCollector, counter, gauge

if TYPE_CHECKING:
    from pyscheduler_web.streams import StreamRegistry

__all__ = ["EventStreamMetrics"]


class EventStreamMetrics(ScrapeCollector):
    """The stream registry's limits and the writer's write timeouts."""

    def __init__(self, inputs: MetricsInputs) -> None:
        self._service: ObservedService = inputs.service
        self._streams: StreamRegistry = inputs.streams

    def collect(self) -> Iterator[Metric]:
        streams = self._streams
        yield gauge("pyscheduler_web_event_streams", "Open /ws/v1/events/stream connections.", len(streams))
        yield gauge("pyscheduler_web_event_streams_limit", "Most concurrent event streams allowed now.", streams.limit())
        yield counter("pyscheduler_web_event_streams_refused", "Event streams refused for a limit (503).", streams.refused)
        yield counter(
            "pyscheduler_web_event_streams_write_timeouts",
            "Event streams cut because one chunk was not written within 5 s.",
            self._service.context.event_system.stats().stream_write_timeouts,
        )
