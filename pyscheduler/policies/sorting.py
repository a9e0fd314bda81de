"""Queue and application sorting (YuniKorn's ``sorters.go``).

- Parents always sort their children **fair**: priority first (each child's
  ``current_priority``: the highest pending ask priority in its subtree with the child's
  ``priority.offset`` or fence applied), then the lower fair share, then the larger pending, then
  the name.
- Leaves sort applications **fifo** (default: priority, then submission time) or **fair**
  (priority, then YuniKorn's ``CompUsageRatio`` of the allocations against the queue's
  guarantee: the share vectors compared from the largest share down).
- ``application.sort.priority: disabled`` on the sorting queue puts priority second: share (or
  submission time) first, then priority.

Where YuniKorn leaves the order between equal keys to Go's random map iteration, ties go to
the queue name or application id, so runs repeat exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from pyscheduler.common.resources import Resource

if TYPE_CHECKING:
    from pyscheduler.objects.application import Application
    from pyscheduler.objects.queue import Queue

__all__ = [
    "AppSorter",
    "FairAppSorter",
    "FairQueueSorter",
    "FifoAppSorter",
    "app_sorter",
    "fair_max",
    "fair_share",
    "usage_shares",
]


def fair_max(queue: Queue) -> Resource:
    """The root maximum (cluster size) with every ancestor's own maximums overriding it."""
    chain = list(queue.ancestors())
    result: dict[str, int] = {}
    for q in reversed(chain):  # root first, so deeper maximums win
        if q.max_resource is not None:
            result.update(q.max_resource.view())
    return Resource(result)


def fair_share(allocated: Mapping[str, int], guaranteed: Mapping[str, int] | None, fairmax: Mapping[str, int]) -> float:
    """The largest share over allocated types: allocated / guaranteed, or allocated / fair max
    for types without a guarantee; 1.0 for usage against a zero or negative denominator."""
    share = 0.0
    for name, used in allocated.items():
        if used <= 0:
            continue
        denominator = guaranteed.get(name) if guaranteed is not None and name in guaranteed else fairmax.get(name)
        if denominator is None:
            continue
        share = max(share, used / denominator if denominator > 0 else 1.0)
    return share


def _pending_total(queue: Queue) -> int:
    # A single number for "larger pending" between otherwise equal queues: the pending
    # quantities summed (the comparison only breaks ties).
    return sum(v for v in queue.pending.values() if v > 0)


def _fair_max_below(queue: Queue, parent_maxes: dict[int, Mapping[str, int]]) -> Mapping[str, int]:
    """:func:`fair_max` of ``queue`` from its parent's, computed once per parent in
    ``parent_maxes``: siblings share every ancestor, only their own maximum differs."""
    parent = queue.parent
    if parent is None:
        return fair_max(queue).view()
    inherited = parent_maxes.get(id(parent))
    if inherited is None:
        inherited = parent_maxes[id(parent)] = fair_max(parent).view()
    own = queue.max_resource
    if own is None:
        return inherited
    return {**inherited, **own.view()}


class FairQueueSorter:
    """Children of a parent: priority first (unless the parent disables priority sorting), then
    fair share, then pending.

    ``shape``: the queues' shape version (``pyscheduler.objects.queue.queue_shape_version``,
    which moves whenever any queue's maximum or guarantee changes, the root's maximum, the
    cluster size, included). With it, each queue keeps its last key (``Queue.fair_sort_cache``)
    and reuses it while its inputs are the same objects: the resources are immutable and
    replaced on every change, so ``is`` says "unchanged" in one comparison. One allocation
    changes the usage of one path; the other siblings' keys are not computed again (they were
    most of a cycle's time with 100 leaves)."""

    def sort(self, queues: Sequence[Queue], priorities: Mapping[str, int], priority_first: bool = True,
             shape: int | None = None) -> list[Queue]:
        parent_maxes: dict[int, Mapping[str, int]] = {}

        def key(q: Queue) -> tuple[object, ...]:
            priority = -priorities.get(q.path, 0)
            allocated, pending = q.allocated, q.pending
            cached = q.fair_sort_cache
            if (shape is not None and cached is not None and cached[0] == shape and cached[1] is allocated
                    and cached[2] is pending and cached[3] == priority and cached[4] is priority_first):
                kept: tuple[object, ...] = cached[5]
                return kept
            fairmax = _fair_max_below(q, parent_maxes)
            share = fair_share(allocated.view(), q.guaranteed.view() if q.guaranteed else None, fairmax)
            first, second = (priority, share) if priority_first else (share, priority)
            made = (first, second, -_pending_total(q), q.name)
            if shape is not None:
                q.fair_sort_cache = (shape, allocated, pending, priority, priority_first, made)
            return made

        return sorted(queues, key=key)


class AppSorter(Protocol):
    def sort(self, apps: Sequence[Application], queue: Queue) -> list[Application]: ...


class FifoAppSorter:
    """Highest pending priority first, then the earliest submission, then the id (submission
    first when the queue disables priority sorting)."""

    def sort(self, apps: Sequence[Application], queue: Queue) -> list[Application]:
        if queue.priority_sorting:
            return sorted(apps, key=lambda a: (-(a.max_ask_priority or 0), a.submission_time_ns, a.app_id))
        return sorted(apps, key=lambda a: (a.submission_time_ns, -(a.max_ask_priority or 0), a.app_id))


def usage_shares(allocated: Mapping[str, int], total: Mapping[str, int] | None) -> tuple[float, ...]:
    """YuniKorn's ``getShares`` as a sort key: per allocated type the usage over ``total`` (the
    usage itself where ``total`` has no or a zero quantity), largest first. Ordering these
    tuples is ``CompUsageRatio``: the largest shares compared first, then the next ones; an
    application with more types in use ranks higher when the rest is equal. Zero usage adds
    nothing (YuniKorn's zero shares never decide), and usage is never negative here."""
    shares = []
    for name, used in allocated.items():
        if used == 0:
            continue
        denominator = total.get(name, 0) if total is not None else 0
        shares.append(used / denominator if denominator else float(used))
    shares.sort(reverse=True)
    return tuple(shares)


class FairAppSorter:
    """Highest pending priority first, then the lowest usage against the queue's guarantee
    (``CompUsageRatio``), then the submission time and id (usage first when the queue disables
    priority sorting)."""

    def sort(self, apps: Sequence[Application], queue: Queue) -> list[Application]:
        guaranteed = queue.guaranteed.view() if queue.guaranteed else None
        priority_first = queue.priority_sorting

        def key(a: Application) -> tuple[object, ...]:
            priority = -(a.max_ask_priority or 0)
            shares = usage_shares(a.allocated.view(), guaranteed)
            first, second = (priority, shares) if priority_first else (shares, priority)
            return first, second, a.submission_time_ns, a.app_id

        return sorted(apps, key=key)


_FIFO = FifoAppSorter()
_FAIR = FairAppSorter()


def app_sorter(policy: str) -> AppSorter:
    """The sorter for a leaf's ``application.sort.policy`` (stateaware means fifo)."""
    return _FAIR if policy == "fair" else _FIFO
