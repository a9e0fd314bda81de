"""Queue position (issue 35): the order in which the next scheduling cycle visits the pending
applications of a partition, and each one's place in it.

The order is the walk of :class:`pyscheduler.scheduler.cycle.SchedulingCycle`: from root, each
parent's children in fair order (:class:`~pyscheduler.policies.sorting.FairQueueSorter`, the
oracle of the cycle's cached ``ChildOrder``), skipping stopped children and those with nothing
pending, recursively; in each leaf its applications with asks in the leaf's sort order
(:func:`~pyscheduler.policies.sorting.app_sorter`). Both sorters are called afresh here, never
the cycle's caches (``ChildOrder``, ``Queue.fifo_order``): a read changes nothing.

It is a snapshot: every allocation moves fair shares, so the next cycle may reorder. Reserved
asks and gang replacements are tried before the walk and are not positions.

:func:`pending_order` runs under the partition's lock (the caller holds it) and costs one sort
per leaf and parent with pending asks: callers compute it once per request, never per
application.
"""

from __future__ import annotations

from contextlib import nullcontext
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from pyscheduler.common.resources import Resource
from pyscheduler.dao._common import find_partition, res_map, validate_queue_path
from pyscheduler.dao.errors import QUEUE_NOT_FOUND, BadRequest, NotFound
from pyscheduler.objects.queue import ObjectState
from pyscheduler.policies.sorting import FairQueueSorter, app_sorter

if TYPE_CHECKING:
    from pyscheduler.objects.application import Application
    from pyscheduler.objects.partition import Partition
    from pyscheduler.objects.queue import Queue
    from pyscheduler.scheduler.context import ClusterContext

__all__ = [
    "DEFAULT_PAGE",
    "MAX_PAGE",
    "Position",
    "pending_applications",
    "pending_order",
    "position_of",
    "positions_by_app",
]

#: ``/pending`` answers this many applications unless ``limit`` says otherwise, at most MAX_PAGE.
DEFAULT_PAGE = 1000
MAX_PAGE = 10_000


class Position(NamedTuple):
    """One pending application's place in the next cycle's walk."""

    app_id: str
    queue_path: str
    #: 1-based places in its leaf and in the partition.
    in_queue: int
    in_partition: int
    queue_length: int
    #: Its own pending resources and the sum of the pending of the applications ahead of it in
    #: its leaf (what they take first).
    pending: Resource
    ahead_in_queue: Resource


_FAIR_QUEUES = FairQueueSorter()


def _children_in_order(queue: Queue) -> list[Queue]:
    children = list(queue.children.values())
    priorities = {child.path: child.current_priority for child in children}
    return _FAIR_QUEUES.sort(children, priorities, queue.priority_sorting)


def leaf_order(queue: Queue) -> list[Application]:
    """A leaf's applications with asks in the order the cycle tries them."""
    return app_sorter(queue.sort_policy).sort(list(queue.apps_with_asks.values()), queue)


def _leaves_in_order(partition: Partition) -> Iterator[Queue]:
    """The leaves the next cycle's walk visits, in its order."""
    stack: list[Queue] = [partition.root]
    while stack:
        queue = stack.pop()
        if queue.state is ObjectState.STOPPED or not queue.pending.strictly_greater_than_zero():
            continue
        if queue.is_leaf:
            yield queue
        else:
            stack.extend(reversed(_children_in_order(queue)))


def _leaf_positions(queue: Queue, before: int) -> list[Position]:
    apps = leaf_order(queue)
    out = []
    ahead = Resource()
    for index, app in enumerate(apps):
        pending = app.pending
        out.append(Position(app.app_id, queue.path, index + 1, before + index + 1, len(apps), pending, ahead))
        ahead = ahead + pending
    return out


def position_of(partition: Partition, app_id: str) -> tuple[Position | None, int]:
    """One application's position and the partition's number of pending applications, without
    sorting the other leaves' applications (only their number counts). The caller holds the
    partition's lock."""
    found: Position | None = None
    total = 0
    for leaf in _leaves_in_order(partition):
        if found is None and app_id in leaf.apps_with_asks:
            found = next(p for p in _leaf_positions(leaf, total) if p.app_id == app_id)
        total += len(leaf.apps_with_asks)
    return found, total


def pending_order(partition: Partition) -> list[Position]:
    """Every pending application of ``partition`` in the next cycle's order (see the module
    doc). The caller holds the partition's lock."""
    out: list[Position] = []
    for leaf in _leaves_in_order(partition):
        out.extend(_leaf_positions(leaf, len(out)))
    return out


def positions_by_app(partition: Partition) -> dict[str, Position]:
    """:func:`pending_order` by application id. The caller holds the partition's lock."""
    return {position.app_id: position for position in pending_order(partition)}


def position_dao(position: Position, partition_length: int) -> dict[str, Any]:
    """The ``position`` object of a why answer."""
    return {
        "inQueue": position.in_queue,
        "queueLength": position.queue_length,
        "aheadInQueue": res_map(position.ahead_in_queue, prune=True),
        "inPartition": position.in_partition,
        "partitionLength": partition_length,
    }


def _page_param(raw: str | None, name: str, default: int, maximum: int | None) -> int:
    if raw is None or raw == "":
        return default
    if not raw.isdigit() or len(raw) > 9:
        raise BadRequest(f'"{name}" must be a non-negative integer, got {raw[:40]!r}')
    value = int(raw)
    if maximum is not None and value > maximum:
        raise BadRequest(f'"{name}" must be at most {maximum}, got {value}')
    return value


def _no_tick() -> None:
    """Without a pacer nothing yields."""


def pending_applications(ctx: ClusterContext, partition: str, queue: str = "", limit: str | None = None,
                         offset: str | None = None) -> list[dict[str, Any]]:
    """``GET /ws/v1/partition/{p}/pending?queue=&limit=&offset=``: the pending applications in
    the next cycle's order, those of ``queue`` (a leaf, or every leaf below a parent) only when
    given; ``limit`` (default :data:`DEFAULT_PAGE`, at most :data:`MAX_PAGE`) from ``offset``.
    Bad paging values and queue names are a 400, an unknown queue a 404."""
    page = _page_param(limit, "limit", DEFAULT_PAGE, MAX_PAGE)
    start = _page_param(offset, "offset", 0, None)
    validate_queue_path(queue)
    part = find_partition(ctx, partition)
    pacer = ctx.read_pacer
    with pacer.building() if pacer is not None else nullcontext(_no_tick) as tick:
        with part.lock:
            found = part.get_queue(queue) if queue else None
            if queue and found is None:
                raise NotFound(QUEUE_NOT_FOUND)
            order = pending_order(part)
        tick()  # paced outside the lock (pyscheduler.scheduler.read_pacing)
    if found is not None:
        prefix = found.path + "."
        order = [p for p in order if p.queue_path == found.path or p.queue_path.startswith(prefix)]
    return [
        {
            "applicationID": p.app_id,
            "queueName": p.queue_path,
            "inQueue": p.in_queue,
            "inPartition": p.in_partition,
            "pending": res_map(p.pending, prune=True),
            "aheadInQueue": res_map(p.ahead_in_queue, prune=True),
        }
        for p in order[start:start + page]
    ]
