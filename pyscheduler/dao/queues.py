"""Queues (YuniKorn's PartitionQueueDAOInfo): ``/partition/{p}/queues`` and ``/queue/{q}``.

Locks: the partition's lock is held for the whole tree (it orders queue creation, removal and
usage changes); each queue is read under its own lock, one at a time, and never while another
queue's lock is held (partition -> queue). Nothing is changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyscheduler.dao._common import (
    INT32_MIN,
    abs_used_capacity,
    find_partition,
    go_duration,
    parse_go_duration,
    put,
    res_map,
    sorted_map,
    validate_queue_path,
)
from pyscheduler.dao.errors import QUEUE_NOT_FOUND, NotFound
from pyscheduler.objects.queue import PRIORITY_POLICY, SORT_PRIORITY, parse_priority_offset
from pyscheduler.scheduler.context import external_name

if TYPE_CHECKING:
    from pyscheduler.objects.partition import Partition
    from pyscheduler.objects.queue import Queue, QueueSettings
    from pyscheduler.scheduler.context import ClusterContext

__all__ = ["queue", "queue_dao", "queues"]

# Queue properties YuniKorn reads (configs/configvalidator.go); the priority ones are the queue's.
PREEMPTION_POLICY = "preemption.policy"
PREEMPTION_DELAY = "preemption.delay"
#: YuniKorn's default preemption delay (configs.DefaultPreemptionDelay).
DEFAULT_PREEMPTION_DELAY_NS = 30 * 1_000_000_000


def _preemption_delay(properties: dict[str, str]) -> int:
    text = properties.get(PREEMPTION_DELAY)
    if not text:
        return DEFAULT_PREEMPTION_DELAY_NS
    try:
        delay = parse_go_duration(text)
    except ValueError:
        return DEFAULT_PREEMPTION_DELAY_NS
    return delay if delay > 0 else DEFAULT_PREEMPTION_DELAY_NS


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


def _current_priorities(root: Queue) -> dict[str, int]:
    """YuniKorn's currentPriority of every queue, as the queues keep it for the scheduling cycle
    (``Queue.current_priority``: the highest pending ask priority below, the offset added or a
    fence's offset only; the minimum int32 with nothing pending)."""
    result: dict[str, int] = {}
    for queue in root.walk():
        with queue.lock:
            result[queue.path] = queue.current_priority
    return result


def queue_dao(
    partition: Partition, queue: Queue, *, subtree: bool, priorities: dict[str, int] | None = None
) -> dict[str, Any]:
    """PartitionQueueDAOInfo of one queue; ``subtree`` adds ``children`` recursively. The caller
    holds the partition's lock."""
    if priorities is None:
        priorities = _current_priorities(partition.root)
    headroom = queue.headroom()  # walks the path, one queue lock at a time
    with queue.lock:
        children = sorted(queue.children.values(), key=lambda q: q.name)
        properties = dict(queue.properties)
        settings = queue.settings
        allocated = res_map(queue.allocated, prune=True)
        pending = res_map(queue.pending, prune=True)
        running = queue.running_apps
        state = queue.state.value
        is_leaf = queue.is_leaf
        managed = queue.is_managed
    maximum = settings.max_resource
    template = _template(queue)
    preemption_policy = properties.get(PREEMPTION_POLICY, "").lower()

    out: dict[str, Any] = {"queuename": queue.path}
    put(out, "status", state)
    out["partition"] = external_name(partition.name)
    put(out, "pendingResource", pending)
    put(out, "maxResource", res_map(maximum))
    put(out, "guaranteedResource", res_map(settings.guaranteed))
    put(out, "allocatedResource", allocated)
    # preemptingResource: nothing is preempted here yet.
    put(out, "headroom", res_map(headroom))
    out["isLeaf"] = is_leaf
    out["isManaged"] = managed
    put(out, "properties", sorted_map(properties))
    put(out, "parent", queue.parent.path if queue.parent is not None else "")
    if template is not None:
        out["template"] = _template_dao(template)
    if subtree:
        put(out, "children", [queue_dao(partition, child, subtree=True, priorities=priorities) for child in children])
    put(out, "childNames", [child.path for child in children])
    put(out, "absUsedCapacity", abs_used_capacity(maximum, allocated))
    put(out, "maxRunningApps", settings.max_applications)
    put(out, "runningApps", running)
    out["currentPriority"] = priorities.get(queue.path, INT32_MIN)
    # allocatingAcceptedApps: not tracked (apps are counted running from their first allocation).
    put(out, "sortingPolicy", queue.sort_policy if is_leaf else "fair")
    out["prioritySorting"] = properties.get(SORT_PRIORITY, "").lower() != "disabled"
    out["preemptionEnabled"] = preemption_policy != "disabled"
    out["isPreemptionFence"] = preemption_policy == "fence"
    put(out, "preemptionDelay", go_duration(_preemption_delay(properties)))
    out["isPriorityFence"] = properties.get(PRIORITY_POLICY, "").lower() == "fence"
    put(out, "priorityOffset", parse_priority_offset(properties))
    return out


def queues(ctx: ClusterContext, partition: str) -> dict[str, Any]:
    """``/partition/{p}/queues``: the root queue with every queue below it."""
    part = find_partition(ctx, partition)
    with part.lock:
        return queue_dao(part, part.root, subtree=True)


def queue(ctx: ClusterContext, partition: str, queue_name: str, subtree: bool = False) -> dict[str, Any]:
    """``/partition/{p}/queue/{q}``: one queue by its full path (``childNames`` always,
    ``children`` only with ``subtree``)."""
    part = find_partition(ctx, partition)
    validate_queue_path(queue_name)
    with part.lock:
        found = part.get_queue(queue_name) if queue_name else None
        if found is None:
            raise NotFound(QUEUE_NOT_FOUND)
        return queue_dao(part, found, subtree=subtree)
