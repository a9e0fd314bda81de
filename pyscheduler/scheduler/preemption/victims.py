"""Where guaranteed-share preemption looks for victims (YuniKorn's queue.go
``FindEligiblePreemptionVictims`` and ``findPreemptionFenceRoot``).

**The fence root.** From the ask's leaf upwards, the first queue that is the root, has
``preemption.policy: fence``, or whose usage plus the ask exceeds any type of its configured
max (exactly reaching the max does not fence; a max without the ask's types does not). The
ask's priority is carried up on the way: a ``priority.policy: fence`` queue resets it to its
offset, any other adds its ``priority.offset``.

**Eligible victims**, depth-first below the fence root, never in the ask's own leaf: leaves
whose ``preemption.policy`` is not ``disabled`` and that are not within their guarantee
(remaining guaranteed >= 0 in every type; a leaf with no guarantee on its path is never
within it). In such a leaf, every allocation that shares a resource type with the ask, has no
required node, is not released or already preempted, and whose priority is at most the ask's
(lowered by each child queue's offset on the way down). Below a child with ``priority.policy:
fence``: nothing when its offset is above the ask's priority, otherwise every allocation
whatever its priority.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyscheduler.config.queue_preemption import PreemptionPolicy
from pyscheduler.scheduler.preemption.ordering import shares_a_type
from pyscheduler.scheduler.preemption.snapshot import QueueSnapshot, not_negative

if TYPE_CHECKING:
    from pyscheduler.objects.allocation import Allocation
    from pyscheduler.objects.application import Application
    from pyscheduler.objects.queue import Queue

__all__ = ["fence_root", "find_victims"]


def fence_root(leaf: Queue, ask: Allocation, priorities: dict[str, int]) -> Queue:
    """The queue below which victims are searched; ``priorities`` gets the ask's priority as
    each queue on the way up sees it."""
    priority = ask.priority
    queue = leaf
    while True:
        priority = queue.priority_offset if queue.priority_fence else priority + queue.priority_offset
        priorities[queue.path] = priority
        if queue.parent is None or queue.preemption_policy is PreemptionPolicy.FENCE or _over_max(queue, ask):
            return queue
        queue = queue.parent


def _over_max(queue: Queue, ask: Allocation) -> bool:
    maximum = queue.max_resource
    if maximum is None:
        return False
    usage = queue.allocated + ask.resource
    return any(usage.get(name, 0) > limit for name, limit in maximum.items() if name in ask.resource)


def snapshot_of(queue: Queue, snapshots: dict[str, QueueSnapshot], ask_path: str) -> QueueSnapshot:
    """The queue's snapshot (and its parents'), made once per attempt."""
    found = snapshots.get(queue.path)
    if found is not None:
        return found
    parent = snapshot_of(queue.parent, snapshots, ask_path) if queue.parent is not None else None
    snapshot = QueueSnapshot(queue.path, parent, queue.is_leaf, queue.allocated, queue.preempting,
                             queue.max_resource, queue.guaranteed, [], snapshots.get(ask_path))
    snapshots[queue.path] = snapshot
    return snapshot


def find_victims(leaf: Queue, ask: Allocation) -> dict[str, QueueSnapshot]:
    """Snapshots by queue path: the ask's leaf and its ancestors, and every leaf below the fence
    root with potential victims (see the module doc)."""
    priorities: dict[str, int] = {}
    fence = fence_root(leaf, ask, priorities)
    snapshots: dict[str, QueueSnapshot] = {}
    ask_snapshot = snapshot_of(leaf, snapshots, leaf.path)
    node = ask_snapshot
    while node.parent is not None:  # every queue on the ask's path but root knows the ask queue
        node.ask_queue = ask_snapshot
        node = node.parent
    _collect(fence, leaf.path, ask, priorities, priorities[fence.path], False, snapshots)
    return snapshots


def _collect(queue: Queue, ask_path: str, ask: Allocation, priorities: dict[str, int], ask_priority: int,
             fenced: bool, snapshots: dict[str, QueueSnapshot]) -> None:
    if queue.path == ask_path:
        return
    if queue.is_leaf:
        if queue.preemption_policy is PreemptionPolicy.DISABLED:
            return
        snapshot = snapshot_of(queue, snapshots, ask_path)
        remaining = snapshot.remaining_guaranteed()
        if remaining is not None and not_negative(remaining):
            return  # within its guarantee
        for app_id in sorted(queue.applications):
            for alloc in _allocations(queue.applications[app_id]):
                if (shares_a_type(ask.resource, alloc.resource) and not alloc.required_node and not alloc.preempted
                        and (fenced or alloc.priority <= ask_priority)):
                    snapshot.victims.append(alloc)
        if not snapshot.victims:
            del snapshots[queue.path]
        return
    for name in sorted(queue.children):
        child = queue.children[name]
        child_fenced = False
        child_priority = priorities.get(child.path)
        if child_priority is None:
            # A subtree other than the ask's: the priority as seen from inside it.
            if child.priority_fence:
                if child.priority_offset > ask_priority:
                    continue
                child_fenced = True
                child_priority = ask_priority
            else:
                child_priority = ask_priority - child.priority_offset
        _collect(child, ask_path, ask, priorities, child_priority, fenced or child_fenced, snapshots)


def _allocations(app: Application) -> list[Allocation]:
    return [app.allocations[key] for key in sorted(app.allocations)]
