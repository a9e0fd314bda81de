"""Each partition's size: nodes, applications by state, capacity and allocated resources.

Every sample is labelled ``cluster`` (the partition's RM id, the ``clusterId`` of
``/ws/v1/partitions``) and ``partition`` (its plain name), so two RMs that each have a
``default`` partition are two series, never one. Values are copied under each partition's lock,
one partition at a time, when Prometheus scrapes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING, NamedTuple

from prometheus_client.core import GaugeMetricFamily, Metric

from pyscheduler.scheduler.context import external_name

from pyscheduler_web.metrics.source import MetricsInputs, ObservedService, ScrapeCollector

if TYPE_CHECKING:
    from pyscheduler.objects.partition import Partition

__all__ = ["PartitionMetrics"]

#: The labels of every partition sample.
PARTITION_LABELS = ["cluster", "partition"]


class _PartitionValues(NamedTuple):
    cluster: str
    name: str
    nodes: int
    applications: Counter[str]
    capacity: dict[str, int]
    allocated: dict[str, int]


def _values(partition: Partition) -> _PartitionValues:
    with partition.lock:  # copy; the families are built after
        states: Counter[str] = Counter()
        for table in (partition.applications, partition.completed_applications, partition.rejected_applications):
            for app in table.values():
                states[app.state.value] += 1
        return _PartitionValues(partition.rm_id, external_name(partition.name), len(partition.nodes), states,
                                dict(partition.total), dict(partition.root.allocated))


class PartitionMetrics(ScrapeCollector):
    """One series per partition (and per state or resource type), labelled by cluster."""

    def __init__(self, inputs: MetricsInputs) -> None:
        self._service: ObservedService = inputs.service

    def collect(self) -> Iterator[Metric]:
        partitions = sorted(self._service.context.partitions.values(), key=lambda p: p.name)
        nodes = GaugeMetricFamily("pyscheduler_partition_nodes", "Nodes of the partition.", labels=PARTITION_LABELS)
        apps = GaugeMetricFamily("pyscheduler_partition_applications",
                                 "Applications of the partition (live and kept after they ended), by state.",
                                 labels=[*PARTITION_LABELS, "state"])
        capacity = GaugeMetricFamily("pyscheduler_partition_capacity",
                                     "Schedulable capacity of the partition's nodes, by resource type.",
                                     labels=[*PARTITION_LABELS, "resource"])
        allocated = GaugeMetricFamily("pyscheduler_partition_allocated",
                                      "Resources allocated in the partition, by resource type.",
                                      labels=[*PARTITION_LABELS, "resource"])
        for partition in partitions:
            values = _values(partition)
            labels = [values.cluster, values.name]
            nodes.add_metric(labels, values.nodes)
            for state, count in sorted(values.applications.items()):
                apps.add_metric([*labels, state], count)
            for name, quantity in sorted(values.capacity.items()):
                capacity.add_metric([*labels, name], quantity)
            for name, quantity in sorted(values.allocated.items()):
                allocated.add_metric([*labels, name], quantity)
        yield nodes
        yield apps
        yield capacity
        yield allocated
