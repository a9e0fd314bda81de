"""Every queue's resources and applications, under YuniKorn's names and labels.

- ``yunikorn_queue_resource`` (gauge; labels ``queue``, ``state``, ``resource``, as YuniKorn's
  queue metrics have them): ``state`` is ``guaranteed`` and ``max`` (the configured values; a
  queue without one has no series for it), ``allocated`` (used), ``pending`` (asked, not yet
  placed) and ``preempting`` (allocations being preempted); a resource type the queue has no
  value for has no series (zero is not written).
- ``yunikorn_queue_app`` (gauge; labels ``queue``, ``state``): the queue's live applications by
  state (as YuniKorn lowercases them: ``accepted``, ``running``...).

Every series also has ``cluster`` and ``partition`` (as :mod:`.partitions`): two RMs may each have
a ``root.default``.

Reads: each partition's queues are copied under its lock (the resources are immutable and
shared, so a queue costs a few attribute reads and one pass over its applications' states), the
families built after it is released, one partition at a time.

Label cardinality is bounded: ``state`` has five values, ``resource`` the partition's resource
types, and at most :data:`MAX_QUEUES` queues of a partition are written, breadth-first from the
root (so the top of the tree stays when dynamic queues, one per namespace, grow without bound);
``pyscheduler_queue_metrics_omitted`` counts the queues left out.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Final, NamedTuple

from prometheus_client.core import GaugeMetricFamily, Metric

from pyscheduler.scheduler.context import external_name

from pyscheduler_web.metrics.source import MetricsInputs, ObservedService, ScrapeCollector

if TYPE_CHECKING:
    from pyscheduler.objects.partition import Partition
    from pyscheduler.objects.queue import Queue

__all__ = ["MAX_QUEUES", "QueueMetrics"]

#: The most queues of one partition written per scrape (breadth-first from the root).
MAX_QUEUES: Final = 1000

_NO_RESOURCE: Mapping[str, int] = {}


class _QueueValues(NamedTuple):
    path: str
    #: state -> the queue's resource in that state (guaranteed, max, allocated, pending, preempting).
    resources: tuple[tuple[str, Mapping[str, int]], ...]
    applications: Counter[str]


def _queue_values(queue: Queue) -> _QueueValues:
    """Caller holds the partition's lock."""
    states: Counter[str] = Counter(app.state.value.lower() for app in queue.applications.values())
    return _QueueValues(queue.path, (
        ("guaranteed", queue.guaranteed or _NO_RESOURCE),
        ("max", queue.max_resource or _NO_RESOURCE),
        ("allocated", queue.allocated),
        ("pending", queue.pending),
        ("preempting", queue.preempting),
    ), states)


def _partition_queues(partition: Partition, limit: int) -> tuple[list[_QueueValues], int]:
    """The first ``limit`` queues breadth-first, and how many were left out."""
    with partition.lock:
        taken: list[_QueueValues] = []
        omitted = 0
        pending: deque[Queue] = deque([partition.root])
        while pending:
            queue = pending.popleft()
            if len(taken) >= limit:
                omitted += 1
            else:
                taken.append(_queue_values(queue))
            pending.extend(sorted(queue.children.values(), key=lambda q: q.name))
        return taken, omitted


class QueueMetrics(ScrapeCollector):
    """Every partition's queues (see the module doc)."""

    def __init__(self, inputs: MetricsInputs, max_queues: int = MAX_QUEUES) -> None:
        self._service: ObservedService = inputs.service
        self._max_queues = max_queues

    def collect(self) -> Iterator[Metric]:
        resources = GaugeMetricFamily("yunikorn_queue_resource",
                                      "A queue's resources: guaranteed, max, allocated, pending and preempting.",
                                      labels=["cluster", "partition", "queue", "state", "resource"])
        apps = GaugeMetricFamily("yunikorn_queue_app", "A queue's live applications, by state.",
                                 labels=["cluster", "partition", "queue", "state"])
        omitted = GaugeMetricFamily("pyscheduler_queue_metrics_omitted",
                                    f"Queues of the partition left out of the queue metrics (over {self._max_queues}).",
                                    labels=["cluster", "partition"])
        for partition in sorted(self._service.context.partitions.values(), key=lambda p: p.name):
            queues, left_out = _partition_queues(partition, self._max_queues)
            where = [partition.rm_id, external_name(partition.name)]
            omitted.add_metric(where, left_out)
            for queue in queues:
                for state, resource in queue.resources:
                    for name, quantity in sorted(resource.items()):
                        resources.add_metric([*where, queue.path, state, name], quantity)
                for state, count in sorted(queue.applications.items()):
                    apps.add_metric([*where, queue.path, state], count)
        yield resources
        yield apps
        yield omitted
