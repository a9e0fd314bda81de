"""The node reporter manager: polls, failures and refused fields per plugin, and its rounds."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from pyscheduler_web.metrics.source import MetricsInputs, ObservedService, ScrapeCollector, counter, gauge

__all__ = ["ReporterMetrics"]


class ReporterMetrics(ScrapeCollector):
    """The service's reporter manager, one ``plugin`` label per plugin."""

    def __init__(self, inputs: MetricsInputs) -> None:
        self._service: ObservedService = inputs.service

    def collect(self) -> Iterator[Metric]:
        reporters = self._service.reporters
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
