"""Role history: where role instances were placed, escalations, and the saver's writes."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import Metric

from pyscheduler_web.metrics.source import MetricsInputs, ObservedService, ScrapeCollector, counter

__all__ = ["RoleHistoryMetrics"]


class RoleHistoryMetrics(ScrapeCollector):
    """Every partition's role histories, summed, and the role history saver."""

    def __init__(self, inputs: MetricsInputs) -> None:
        self._service: ObservedService = inputs.service

    def collect(self) -> Iterator[Metric]:
        service = self._service
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
