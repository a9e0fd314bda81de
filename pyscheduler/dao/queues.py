"""Queues (YuniKorn's PartitionQueueDAOInfo): ``/partition/{p}/queues`` and ``/queue/{q}``.

Locks: the partition's lock is held only while the queues' values are copied (:class:`QueueView`);
the JSON is built after it is released. Nothing is changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from pyscheduler.dao._common import (
    abs_used_capacity,
    cluster_id,
    find_partition,
    go_duration,
    put,
    res_map,
    sorted_map,
    validate_queue_path,
)
from pyscheduler.dao.errors import QUEUE_NOT_FOUND, NotFound
from pyscheduler.objects.queue import PRIORITY_POLICY, SORT_PRIORITY, parse_priority_offset
from pyscheduler.config.queue_preemption import (
    PreemptionPolicy,
    preemption_delay_ns,
    preemption_policy,
    quota_preemption_delay_ns,
)
from pyscheduler.scheduler.context import external_name

if TYPE_CHECKING:
    from pyscheduler.common.resources import Resource
    from pyscheduler.objects.partition import Partition
    from pyscheduler.objects.queue import Queue, QueueSettings
    from pyscheduler.scheduler.context import ClusterContext

__all__ = ["QueueView", "queue", "queue_dao", "queue_view", "queues"]

# Queue properties YuniKorn reads (configs/configvalidator.go); the priority ones are the queue's.


def _template(queue: Queue) -> QueueSettings | None:
    """The child template a queue shows: its own; a parent without one inherits its nearest
    ancestor's (YuniKorn copies the template down to parent queues, never to leaves)."""
    own = queue.settings.child_template
    if own is not None or queue.is_leaf:
        return own
    ancestor = queue.parent
    while ancestor is not None:
        if ancestor.settings.child_template is not None:
            return ancestor.settings.child_template
        ancestor = ancestor.parent
    return None


def _template_dao(template: QueueSettings) -> dict[str, Any]:
    out: dict[str, Any] = {}
    put(out, "maxApplications", template.max_applications)
    put(out, "maxResource", res_map(template.max_resource))
    put(out, "guaranteedResource", res_map(template.guaranteed))
    put(out, "properties", sorted_map(template.properties))
    return out


class QueueView(NamedTuple):
    """One queue's values (and its children's, for a subtree), copied under the partition's lock."""

    path: str
    partition: str
    state: str
    parent_path: str
    is_leaf: bool
    managed: bool
    settings: QueueSettings
    template: QueueSettings | None
    properties: dict[str, str]
    allocated: Resource
    pending: Resource
    preempting: Resource
    headroom: Resource | None
    running_apps: int
    current_priority: int
    sort_policy: str
    child_paths: tuple[str, ...]
    #: The children's views with ``subtree``, else None.
    children: tuple[QueueView, ...] | None
    #: Accepted gang applications holding placeholders (counted as running), by id.
    allocating_accepted: tuple[str, ...] = ()


def queue_view(partition: Partition, queue: Queue, *, subtree: bool) -> QueueView:
    """The caller holds the partition's lock. ``current_priority`` is YuniKorn's
    currentPriority as the queue keeps it for the scheduling cycle (``Queue.current_priority``:
    the highest pending ask priority below, the offset added or a fence's offset only; the
    minimum int32 with nothing pending)."""
    children = sorted(queue.children.values(), key=lambda q: q.name)
    return QueueView(
        queue.path,
        partition.name,
        queue.state.value,
        queue.parent.path if queue.parent is not None else "",
        queue.is_leaf,
        queue.is_managed,
        queue.settings,
        _template(queue),
        dict(queue.properties),
        queue.allocated,
        queue.pending,
        queue.preempting,
        queue.headroom(),
        queue.running_apps,
        queue.current_priority,
        queue.sort_policy,
        tuple(child.path for child in children),
        tuple(queue_view(partition, child, subtree=True) for child in children) if subtree else None,
        tuple(sorted(queue.allocating_accepted)),
    )


def queue_dao(queue: QueueView) -> dict[str, Any]:
    """PartitionQueueDAOInfo of one queue (with ``children`` when the view has them)."""
    properties = queue.properties
    settings = queue.settings
    allocated = res_map(queue.allocated, prune=True)
    maximum = settings.max_resource
    policy = preemption_policy(properties)

    out: dict[str, Any] = {"queuename": queue.path}
    put(out, "status", queue.state)
    out["partition"] = external_name(queue.partition)
    # pyscheduler's addition, as on applications: the partition's RM (cluster).
    out["clusterId"] = cluster_id(queue.partition)
    put(out, "pendingResource", res_map(queue.pending, prune=True))
    put(out, "maxResource", res_map(maximum))
    put(out, "guaranteedResource", res_map(settings.guaranteed))
    put(out, "allocatedResource", allocated)
    put(out, "preemptingResource", res_map(queue.preempting, prune=True))
    put(out, "headroom", res_map(queue.headroom))
    out["isLeaf"] = queue.is_leaf
    out["isManaged"] = queue.managed
    put(out, "properties", sorted_map(properties))
    put(out, "parent", queue.parent_path)
    if queue.template is not None:
        out["template"] = _template_dao(queue.template)
    if queue.children is not None:
        put(out, "children", [queue_dao(child) for child in queue.children])
    put(out, "childNames", list(queue.child_paths))
    put(out, "absUsedCapacity", abs_used_capacity(maximum, allocated))
    put(out, "maxRunningApps", settings.max_applications)
    put(out, "runningApps", queue.running_apps)
    out["currentPriority"] = queue.current_priority
    put(out, "allocatingAcceptedApps", list(queue.allocating_accepted))
    put(out, "sortingPolicy", queue.sort_policy if queue.is_leaf else "fair")
    out["prioritySorting"] = properties.get(SORT_PRIORITY, "").lower() != "disabled"
    out["preemptionEnabled"] = policy is not PreemptionPolicy.DISABLED
    out["isPreemptionFence"] = policy is PreemptionPolicy.FENCE
    put(out, "preemptionDelay", go_duration(preemption_delay_ns(properties)))
    put(out, "quotaPreemptionDelay", go_duration(quota_preemption_delay_ns(properties)))
    out["isPriorityFence"] = properties.get(PRIORITY_POLICY, "").lower() == "fence"
    put(out, "priorityOffset", parse_priority_offset(properties))
    return out


def queues(ctx: ClusterContext, partition: str) -> dict[str, Any]:
    """``/partition/{p}/queues``: the root queue with every queue below it."""
    part = find_partition(ctx, partition)
    with part.lock:
        view = queue_view(part, part.root, subtree=True)
    return queue_dao(view)


def queue(ctx: ClusterContext, partition: str, queue_name: str, subtree: bool = False) -> dict[str, Any]:
    """``/partition/{p}/queue/{q}``: one queue by its full path (``childNames`` always,
    ``children`` only with ``subtree``)."""
    part = find_partition(ctx, partition)
    validate_queue_path(queue_name)
    with part.lock:
        found = part.get_queue(queue_name) if queue_name else None
        if found is None:
            raise NotFound(QUEUE_NOT_FOUND)
        view = queue_view(part, found, subtree=subtree)
    return queue_dao(view)
