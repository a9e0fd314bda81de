"""``/ws/v1/metrics``: Prometheus metrics of the scheduler, each subsystem contributing its own.

Each app has its own :class:`~prometheus_client.CollectorRegistry` (never the global one, so
several apps in one process, as in tests, do not collide) holding, in exposition order:

- the runtime collectors (process, platform, GC): YuniKorn collects its runtime metrics first;
- one collector per subsystem, from :data:`SOURCES` (the registration point: a subsystem's
  metrics are its own collector, listed there; see :mod:`.source` for the contract): the event
  system (:mod:`.events`), the REST event streams (:mod:`.event_streams`), role history
  (:mod:`.role_history`), the node reporter manager (:mod:`.reporter`), preemption
  (:mod:`.preemption`), the scheduling loop (:mod:`.scheduler`) and its cycle-latency
  histogram, and each partition's size (:mod:`.partitions`, labelled ``cluster`` and
  ``partition``: several RMs may each have a ``default``), each queue's resources and
  applications (:mod:`.queues`, YuniKorn's ``yunikorn_queue_*``) and gang scheduling
  (:mod:`.gangs`). Every collector reads its counters when Prometheus scrapes.

The app factory adds two more once the app exists: the REST requests (:mod:`.rest`, hooked on
the Flask app) and the metrics the attached RMs declare (:mod:`.rm`, the Kubernetes shim's).
docs/metrics.md lists every metric.

An app or an attached RM adds metrics of its own with ``Metrics(service, streams,
sources=(*SOURCES, mine))`` or :meth:`Metrics.register`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from pyscheduler_web.metrics.event_streams import EventStreamMetrics
from pyscheduler_web.metrics.events import EventMetrics
from pyscheduler_web.metrics.gangs import GangMetrics
from pyscheduler_web.metrics.partitions import PartitionMetrics
from pyscheduler_web.metrics.preemption import PreemptionMetrics
from pyscheduler_web.metrics.queues import QueueMetrics
from pyscheduler_web.metrics.reporter import ReporterMetrics
from pyscheduler_web.metrics.role_history import RoleHistoryMetrics
from pyscheduler_web.metrics.scheduler import CYCLE_LATENCY_BUCKETS_MS, SchedulerMetrics, cycle_latency, instrument_cycle
from pyscheduler_web.metrics.source import MetricsInputs, MetricsSource, ObservedService

if TYPE_CHECKING:
    from pyscheduler_web.streams import StreamRegistry

__all__ = [
    "CYCLE_LATENCY_BUCKETS_MS",
    "SOURCES",
    "Metrics",
    "MetricsInputs",
    "MetricsSource",
    "ObservedService",
    "instrument_cycle",
]

#: Every subsystem's metrics, in exposition order. Adding a subsystem's metrics is adding its
#: source here (its own module), never editing another collector.
SOURCES: Final[tuple[MetricsSource, ...]] = (
    EventMetrics,
    EventStreamMetrics,
    RoleHistoryMetrics,
    ReporterMetrics,
    PreemptionMetrics,
    SchedulerMetrics,
    cycle_latency,
    PartitionMetrics,
    QueueMetrics,
    GangMetrics,
)


class Metrics:
    """The app's registry and its exposition."""

    def __init__(
        self, service: ObservedService, streams: StreamRegistry, sources: Iterable[MetricsSource] = SOURCES
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self._inputs = MetricsInputs(service, streams)
        for source in sources:
            self.register(source)

    def register(self, source: MetricsSource) -> Collector:
        """Adds one subsystem's metrics (exposed after those already registered); returns its
        collector."""
        collector = source(self._inputs)
        self.registry.register(collector)
        return collector

    def exposition(self, accept: str | None) -> tuple[bytes, str]:
        """The scrape body and its content type (OpenMetrics when the client asks for it)."""
        encoder, content_type = choose_encoder(accept or "")
        return encoder(self.registry), content_type
