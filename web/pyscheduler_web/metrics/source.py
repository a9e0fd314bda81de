"""What a subsystem's metrics are: a Prometheus collector made from what the web app assembled.

A **metrics source** (:data:`MetricsSource`) is a callable taking :class:`MetricsInputs` (the
scheduler service and the REST layer's stream registry) and returning a
:class:`prometheus_client.registry.Collector`. The collector reads its subsystem's counters when
Prometheus scrapes and costs the scheduler nothing in between. Sources are listed once, in
:data:`pyscheduler_web.metrics.SOURCES` (exposition order); adding a subsystem's metrics means
writing its collector and adding it there (or passing ``sources`` to
:class:`~pyscheduler_web.metrics.Metrics`), never editing another subsystem's collector.

The service is seen through :class:`ObservedService`, the attributes the collectors read, so a
service assembled elsewhere (the core entry point) serves as long as it has them.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from pyscheduler.reporter.manager import ReporterManager
    from pyscheduler.scheduler.context import ClusterContext
    from pyscheduler.scheduler.loop import Scheduler
    from pyscheduler.scheduler.role_history_saver import RoleHistorySaver

    from pyscheduler_web.streams import StreamRegistry

__all__ = ["MetricsInputs", "MetricsSource", "ObservedService", "ScrapeCollector", "counter", "gauge"]


class ObservedService(Protocol):
    """The parts of the scheduler service the collectors read (at scrape time)."""

    @property
    def context(self) -> ClusterContext: ...

    @property
    def scheduler(self) -> Scheduler: ...

    @property
    def reporters(self) -> ReporterManager: ...

    @property
    def role_history_saver(self) -> RoleHistorySaver | None: ...

    @property
    def started_ns(self) -> int: ...


@dataclass(frozen=True, slots=True)
class MetricsInputs:
    """What a metrics source is made from."""

    service: ObservedService
    streams: StreamRegistry


#: One subsystem's metrics: made once per app, when its registry is assembled.
MetricsSource = Callable[[MetricsInputs], Collector]


class ScrapeCollector(Collector):
    """A collector whose metrics are only known at scrape time (the registry does not
    auto-describe): subclasses write :meth:`collect`."""

    def describe(self) -> list[Metric]:
        return []

    @abstractmethod
    def collect(self) -> Iterator[Metric]: ...


def gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    """A gauge without labels."""
    return GaugeMetricFamily(name, doc, value=value)


def counter(name: str, doc: str, value: float) -> CounterMetricFamily:
    """A counter without labels (exposed with the ``_total`` suffix)."""
    return CounterMetricFamily(name, doc, value=value)
