"""Preemption over every partition: attempts, preemptions, victims, and how long one
guaranteed-share attempt takes (every partition's histogram merged bucket by bucket)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import HistogramMetricFamily, Metric

from pyscheduler.common.histogram import LatencyHistogram

from pyscheduler_web.metrics.source import MetricsInputs, ObservedService, ScrapeCollector, counter

__all__ = ["PreemptionMetrics"]


class PreemptionMetrics(ScrapeCollector):
    """Every partition's preemption counters and latency."""

    def __init__(self, inputs: MetricsInputs) -> None:
        self._service: ObservedService = inputs.service

    def collect(self) -> Iterator[Metric]:
        partitions = list(self._service.context.partitions.values())
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
