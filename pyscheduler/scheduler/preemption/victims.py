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

**Without scanning allocations.** :class:`Victims` walks the queues only (a few hundred at
most) and answers "is this allocation a victim" per allocation, so an attempt looks at the
allocations of the nodes it plans and of the leaves it needs, not at every allocation of the
partition. Its order of victims is YuniKorn's collection order made deterministic: leaves
depth-first with children by name, applications by id, allocations by key.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyscheduler.config.queue_preemption import PreemptionPolicy
from pyscheduler.scheduler.preemption.ordering import shares_a_type
from pyscheduler.scheduler.preemption.snapshot import QueueSnapshot, not_negative

if TYPE_CHECKING:
    from pyscheduler.objects.allocation import Allocation
    from pyscheduler.objects.application import Application
    from pyscheduler.objects.node import Node
    from pyscheduler.objects.queue import Queue

__all__ = ["EligibleLeaf", "Victims", "fence_root"]


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


def _snapshot_of(queue: Queue, snapshots: dict[str, QueueSnapshot], ask_path: str) -> QueueSnapshot:
    """The queue's snapshot (and its parents'), made once per attempt."""
    found = snapshots.get(queue.path)
    if found is not None:
        return found
    parent = _snapshot_of(queue.parent, snapshots, ask_path) if queue.parent is not None else None
    snapshot = QueueSnapshot(queue.path, parent, queue.is_leaf, queue.allocated, queue.preempting,
                             queue.max_resource, queue.guaranteed, snapshots.get(ask_path))
    snapshots[queue.path] = snapshot
    return snapshot


@dataclass(eq=False)
class EligibleLeaf:
    """A leaf whose allocations may be victims, and the priority they must not exceed."""

    queue: Queue
    snapshot: QueueSnapshot
    #: None below a priority fence: any priority.
    max_priority: int | None
    #: Position in the depth-first walk (the first key of the victims' order).
    rank: int


class Victims:
    """The eligible victims of one attempt (see the module doc) and the queue snapshots the
    attempt plays with: ``snapshots`` holds the ask's leaf and its ancestors and every
    eligible leaf with its ancestors."""

    def __init__(self, leaf: Queue, ask: Allocation) -> None:
        self.ask = ask
        self.ask_path = leaf.path
        priorities: dict[str, int] = {}
        fence = fence_root(leaf, ask, priorities)
        self.snapshots: dict[str, QueueSnapshot] = {}
        ask_snapshot = _snapshot_of(leaf, self.snapshots, self.ask_path)
        node = ask_snapshot
        while node.parent is not None:  # every queue on the ask's path but root knows the ask queue
            node.ask_queue = ask_snapshot
            node = node.parent
        self.leaves: list[EligibleLeaf] = []
        self._collect(fence, priorities, priorities[fence.path], False)
        #: Application id -> (its eligible leaf, the application).
        self._by_app: dict[str, tuple[EligibleLeaf, Application]] = {
            app_id: (eligible, app) for eligible in self.leaves for app_id, app in eligible.queue.applications.items()}

    def _collect(self, queue: Queue, priorities: dict[str, int], ask_priority: int, fenced: bool) -> None:
        if queue.path == self.ask_path:
            return
        if queue.is_leaf:
            if queue.preemption_policy is PreemptionPolicy.DISABLED or not queue.applications:
                return
            snapshot = _snapshot_of(queue, self.snapshots, self.ask_path)
            remaining = snapshot.remaining_guaranteed()
            if remaining is not None and not_negative(remaining):
                return  # within its guarantee
            self.leaves.append(EligibleLeaf(queue, snapshot, None if fenced else ask_priority, len(self.leaves)))
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
            self._collect(child, priorities, child_priority, fenced or child_fenced)

    # -- questions ------------------------------------------------------------------------------

    def leaf_of(self, alloc: Allocation) -> EligibleLeaf | None:
        """The allocation's eligible leaf when it is a victim, else None."""
        found = self._by_app.get(alloc.application_id)
        if found is None:
            return None
        eligible, app = found
        if app.allocations.get(alloc.allocation_key) is not alloc or not self._accepts(eligible, alloc):
            return None
        return eligible

    def _accepts(self, eligible: EligibleLeaf, alloc: Allocation) -> bool:
        return (not alloc.required_node and not alloc.preempted
                and (eligible.max_priority is None or alloc.priority <= eligible.max_priority)
                and shares_a_type(self.ask.resource, alloc.resource))

    def in_leaf(self, eligible: EligibleLeaf) -> Iterator[Allocation]:
        """The leaf's victims, in order (generated: a caller that stops early reads little)."""
        applications = eligible.queue.applications
        for app_id in sorted(applications):
            allocations = applications[app_id].allocations
            for key in sorted(allocations):
                alloc = allocations[key]
                if self._accepts(eligible, alloc):
                    yield alloc

    def every(self) -> Iterator[tuple[EligibleLeaf, Allocation]]:
        """Every victim with its leaf, in order."""
        for eligible in self.leaves:
            for alloc in self.in_leaf(eligible):
                yield eligible, alloc

    def on_node(self, node: Node) -> list[tuple[EligibleLeaf, Allocation]]:
        """The node's victims with their leaves, in the order of :meth:`every`."""
        found = []
        for alloc in node.allocations.values():
            eligible = self.leaf_of(alloc)
            if eligible is not None:
                found.append((eligible, alloc))
        found.sort(key=lambda pair: (pair[0].rank, pair[1].application_id, pair[1].allocation_key))
        return found
