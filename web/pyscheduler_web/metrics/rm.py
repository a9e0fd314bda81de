"""The metrics the attached RMs declare (:class:`pyscheduler.service.rm.MeasuredRM`, the
Kubernetes shim's API calls and bindings among them), exported as they are.

An RM declares its metrics as plain data (:class:`~pyscheduler.service.rm.RMMetric`), without a
metrics library, as it declares its routes without a web framework; the app factory calls
:func:`register_rm_metrics` once the service has started and its RMs are attached (as it mounts
their routes), which registers one collector per measured attachment, asking it at every scrape.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from pyscheduler.service.rm import MeasuredRM, RMMetric

from pyscheduler_web.metrics.source import MetricsInputs, ScrapeCollector

if TYPE_CHECKING:
    from pyscheduler.service.entrypoint import Attachment

    from pyscheduler_web.metrics import Metrics

__all__ = ["RMMetrics", "family", "register_rm_metrics"]


def family(metric: RMMetric) -> Metric:
    """The Prometheus family of one declared metric."""
    labels = list(metric.labels)
    if metric.kind == "histogram":
        histogram = HistogramMetricFamily(metric.name, metric.doc, labels=labels)
        for values, buckets, total in metric.histograms:
            histogram.add_metric(list(values), [(bound, float(count)) for bound, count in buckets], total)
        return histogram
    made = (CounterMetricFamily if metric.kind == "counter" else GaugeMetricFamily)(metric.name, metric.doc, labels=labels)
    for values, value in metric.values:
        made.add_metric(list(values), value)
    return made


class RMMetrics(ScrapeCollector):
    """One measured RM's metrics, asked at every scrape."""

    def __init__(self, rm: MeasuredRM) -> None:
        self._rm = rm

    def collect(self) -> Iterator[Metric]:
        for metric in self._rm.metrics():
            yield family(metric)


def register_rm_metrics(metrics: Metrics, attachments: Iterable[Attachment]) -> int:
    """Registers the metrics of every measured attachment; how many there were."""
    registered = 0
    for attachment in attachments:
        rm: object = attachment.rm
        if isinstance(rm, MeasuredRM):
            measured = rm

            def source(_inputs: MetricsInputs, rm: MeasuredRM = measured) -> RMMetrics:
                return RMMetrics(rm)

            metrics.register(source)
            registered += 1
    return registered
