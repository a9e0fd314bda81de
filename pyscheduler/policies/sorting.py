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

import bisect
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from pyscheduler.common.resources import Resource

if TYPE_CHECKING:
    from pyscheduler.objects.application import Application
    from pyscheduler.objects.queue import Queue

__all__ = [
    "AppSorter",
    "FairAppSorter",
    "ChildOrder",
    "FairQueueSorter",
    "FifoAppSorter",
    "app_sorter",
    "fair_child_key",
    "fair_max",
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


def _fair_max_below(queue: Queue, parent_maxes: dict[int, Resource]) -> Resource:
    """:func:`fair_max` of ``queue`` from its parent's, computed once per parent in
    ``parent_maxes``: siblings share every ancestor, only their own maximum differs."""
    parent = queue.parent
    if parent is None:
        return fair_max(queue)
    inherited = parent_maxes.get(id(parent))
    if inherited is None:
        inherited = parent_maxes[id(parent)] = fair_max(parent)
    own = queue.max_resource
    if own is None:
        return inherited
    return Resource({**inherited.view(), **own.view()})


def fair_child_key(queue: Queue, priority: int, fairmax: Resource, priority_first: bool) -> tuple[object, ...]:
    """A child's place among its siblings: ``priority`` (its ``current_priority``) first unless
    the parent disables priority sorting, then the fair share against ``fairmax`` (its
    :func:`fair_max`), then the larger pending (its positive quantities summed: the comparison
    only breaks ties), then the name (unique among siblings, so the order is total)."""
    share = queue.allocated.fair_share(queue.guaranteed, fairmax)
    first, second = (-priority, share) if priority_first else (share, -priority)
    return first, second, -queue.pending.positive_total(), queue.name


class FairQueueSorter:
    """Children of a parent: priority first (unless the parent disables priority sorting), then
    fair share, then pending. Every key computed afresh: the oracle of :class:`ChildOrder`."""

    def sort(self, queues: Sequence[Queue], priorities: Mapping[str, int], priority_first: bool = True) -> list[Queue]:
        parent_maxes: dict[int, Resource] = {}
        return sorted(queues, key=lambda q: fair_child_key(
            q, priorities.get(q.path, 0), _fair_max_below(q, parent_maxes), priority_first))


class ChildOrder:
    """A parent's children in :class:`FairQueueSorter`'s order, kept between cycles.

    One allocation changes the usage and pending of one path; sorting every parent's children
    afresh on every cycle was most of a cycle's time with 100 leaves. So each parent keeps its
    children's keys and order, and its queue adds a child to :attr:`stale` whenever a key input
    of the child changes (allocated, pending, ``current_priority``). :meth:`ordered` computes
    the stale keys again and sorts (a nearly sorted list: linear). Everything else a key reads
    (maximums and guarantees up the path, the cluster size, the set of children) moves the queue
    shape version (``pyscheduler.objects.queue.queue_shape_version``), and a new version, or a
    change of the parent's priority sorting, rebuilds the order. Read and written under the
    partition's lock, as the queues are. Every child is in the order, also those without
    pending asks or stopped: the walk skips them (a sorted list's sublist is sorted)."""

    __slots__ = ("stale", "_order", "_keys", "_fairmax", "_shape", "_priority_first")

    def __init__(self) -> None:
        #: Children whose key inputs changed since the order was last read.
        self.stale: set[Queue] = set()
        self._order: list[Queue] = []
        self._keys: dict[Queue, tuple[object, ...]] = {}
        self._fairmax: dict[Queue, Resource] = {}
        self._shape: int | None = None
        self._priority_first: bool | None = None

    def ordered(self, parent: Queue, shape: int) -> list[Queue]:
        """``parent``'s children in fair order (``shape``: the current queue shape version). The
        list is replaced, never changed in place, so a caller may keep iterating one."""
        priority_first = parent.priority_sorting
        keys = self._keys
        if shape != self._shape or priority_first is not self._priority_first:
            children = list(parent.children.values())
            parent_maxes: dict[int, Resource] = {}
            self._fairmax = {c: _fair_max_below(c, parent_maxes) for c in children}
            keys = self._keys = {c: fair_child_key(c, c.current_priority, self._fairmax[c], priority_first)
                                 for c in children}
            self._shape, self._priority_first = shape, priority_first
        elif self.stale:
            fairmax, stale = self._fairmax, [c for c in self.stale if c in keys]
            self.stale.clear()
            for child in stale:
                keys[child] = fair_child_key(child, child.current_priority, fairmax[child], priority_first)
            if len(stale) * 8 < len(keys):
                # One allocation moves one child per level: take it out and put it back in its
                # place (a binary search) rather than sorting every child again.
                order = self._order.copy()
                for child in stale:
                    order.remove(child)
                for child in stale:
                    bisect.insort(order, child, key=keys.__getitem__)
                self._order = order
                return order
        else:
            return self._order
        self.stale.clear()
        self._order = sorted(keys, key=keys.__getitem__)
        return self._order


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
