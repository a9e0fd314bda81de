"""Gang scheduling: placeholders over each partition's life and the gang applications now.

- ``pyscheduler_gang_placeholders_asked``, ``..._allocated``, ``..._replaced`` and
  ``..._timed_out`` (counters; labels ``cluster``, ``partition``): the partition's
  :class:`~pyscheduler.objects.placeholders.GangCounts`, counted by the core as placeholders
  are asked for, placed, replaced by their real members, or end any other way.
- ``pyscheduler_gang_applications`` (gauge; labels ``cluster``, ``partition``, ``state``): live
  applications with task groups, by state (lowercased): ``accepted`` ones are the gangs
  reserving (holding or waiting for their placeholders), ``running`` ones run (their members
  replacing the placeholders), ``resuming``/``failing`` ones timed out.

Reads: the counters and one pass over the partition's live applications are copied under the
partition's lock (a few attribute reads per application), one partition at a time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING, NamedTuple

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from pyscheduler.scheduler.context import external_name

from pyscheduler_web.metrics.source import MetricsInputs, ObservedService, ScrapeCollector

if TYPE_CHECKING:
    from pyscheduler.objects.partition import Partition

__all__ = ["GangMetrics"]

#: The counters of GangCounts, in exposition order: (field, help).
_COUNTERS = (
    ("asked", "Placeholders asked for (one per placeholder ask, recovered ones included)."),
    ("allocated", "Placeholders placed on a node."),
    ("replaced", "Placeholders replaced by a real member of their gang."),
    ("timed_out", "Placeholders that ended otherwise: timed out, preempted, node gone, too small, app gone."),
)


class _GangValues(NamedTuple):
    counts: tuple[int, ...]
    applications: Counter[str]


def _gang_values(partition: Partition) -> _GangValues:
    with partition.lock:
        counts = partition.gang_counts
        states: Counter[str] = Counter(
            app.state.value.lower() for app in partition.applications.values() if app.placeholder_data)
        return _GangValues(tuple(getattr(counts, field) for field, _ in _COUNTERS), states)


class GangMetrics(ScrapeCollector):
    """Every partition's placeholder counters and gang applications."""

    def __init__(self, inputs: MetricsInputs) -> None:
        self._service: ObservedService = inputs.service

    def collect(self) -> Iterator[Metric]:
        labels = ["cluster", "partition"]
        counters = [CounterMetricFamily(f"pyscheduler_gang_placeholders_{field}", doc, labels=labels)
                    for field, doc in _COUNTERS]
        apps = GaugeMetricFamily("pyscheduler_gang_applications",
                                 "Live applications with task groups (gangs), by state.", labels=[*labels, "state"])
        for partition in sorted(self._service.context.partitions.values(), key=lambda p: p.name):
            values = _gang_values(partition)
            where = [partition.rm_id, external_name(partition.name)]
            for family, count in zip(counters, values.counts):
                family.add_metric(where, count)
            for state, count in sorted(values.applications.items()):
                apps.add_metric([*where, state], count)
        yield from counters
        yield apps
