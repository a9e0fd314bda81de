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

**Asks already preempting.** The snapshots of the ask's leaf and its ancestors count as
allocated what the caller says asks below them that triggered preemption wait for
(``claimed``, see :func:`.guaranteed.claimed_by_preemptors`): the ask's queue stops preempting
at its guarantee even while earlier preemptions for it are still in flight, and a victim leaf
sharing a guaranteed ancestor with it sees that ancestor as its usage will be.

**Across attempts.** Whether a leaf is within its guarantee depends only on the usage of the
queues with a guarantee on its path (and on the tree's shape and the ask's leaf, which the
caller's memo is kept for: :mod:`.memo`) and on what is claimed on the ask's path; a leaf's
verdict is reused while those are the ones it was made from, so an attempt builds snapshots
only for the queues whose numbers it actually plays with (:meth:`Victims.snapshot`).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyscheduler.config.queue_preemption import PreemptionPolicy
from pyscheduler.scheduler.preemption.snapshot import QueueSnapshot, not_negative

if TYPE_CHECKING:
    from pyscheduler.objects.allocation import Allocation
    from pyscheduler.objects.application import Application
    from pyscheduler.objects.node import Node
    from pyscheduler.objects.queue import Queue

__all__ = ["EligibleLeaf", "LeafOrders", "Verdict", "Verdicts", "Victims", "fence_root"]


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
    maximum, guaranteed = queue.max_resource, queue.guaranteed
    snapshot = QueueSnapshot(queue.path, parent, queue.is_leaf, queue.allocated.to_dict(), queue.preempting.to_dict(),
                             None if maximum is None else maximum.to_dict(),
                             None if guaranteed is None else guaranteed.to_dict(), snapshots.get(ask_path), frozen=True)
    snapshots[queue.path] = snapshot
    return snapshot


@dataclass(eq=False, slots=True)
class EligibleLeaf:
    """A leaf whose allocations may be victims, and the priority they must not exceed."""

    queue: Queue
    #: None below a priority fence: any priority.
    max_priority: int | None
    #: The leaf's place in the depth-first walk (children by name): its path's names.
    rank: tuple[str, ...]


@dataclass(eq=False, slots=True)
class Verdict:
    """A leaf's judgement kept across attempts for asks of one leaf (see the module doc): its
    eligibility for one fence root and ask priority (``context``) while it has applications,
    and whether it is over its guarantee, both made from the allocated and preempting resources
    of the queues with a guarantee on its path (``guarded``: the tree's shape fixes them)."""

    queue: Queue
    guarded: tuple[Queue, ...]
    made_from: tuple[object, ...] | None = None
    over: bool = False
    context: tuple[str, int] | None = None
    has_applications: bool = False
    eligible: EligibleLeaf | None = None

    @classmethod
    def of(cls, queue: Queue) -> Verdict:
        guarded = []
        walk: Queue | None = queue
        while walk is not None:
            guaranteed = walk.guaranteed
            if guaranteed is not None and len(guaranteed):
                guarded.append(walk)
            walk = walk.parent
        return cls(queue, tuple(guarded))

    def inputs(self) -> tuple[object, ...]:
        """What the verdict is made from, as the queues are now (compared by identity first:
        a queue replaces its resources on every change)."""
        guarded = self.guarded
        if len(guarded) == 1:
            return guarded[0].allocated, guarded[0].preempting
        return tuple([r for q in guarded for r in (q.allocated, q.preempting)])


#: Leaf path -> its verdict (:class:`Verdict`).
Verdicts = dict[str, Verdict]

#: An allocation's place in a leaf's age order: (did not opt in, originator, minus its creation
#: time, application id, allocation key) and the allocation.
_Aged = tuple[bool, bool, int, str, str, "Allocation"]


class LeafOrders:
    """Each leaf's allocations in the guaranteed-share age order (opted in first, then not
    originators, newest first; ties by application id and key), kept across attempts while the
    leaf's allocated resource is the one the order was made from (a leaf replaces it whenever
    an allocation is added, removed or resized). Which of them are victims is decided when read:
    being preempted, the ask's priority and types change without the leaf's usage."""

    def __init__(self) -> None:
        self._orders: dict[str, tuple[Queue, object, list[_Aged]]] = {}

    def of(self, queue: Queue) -> list[_Aged]:
        kept = self._orders.get(queue.path)
        if kept is not None and kept[0] is queue and kept[1] is queue.allocated:
            return kept[2]
        order = [(not alloc.allow_preempt_self, alloc.originator, -alloc.create_time_ns, app_id, key, alloc)
                 for app_id, app in queue.applications.items() for key, alloc in app.allocations.items()]
        order.sort(key=lambda aged: aged[:5])
        self._orders[queue.path] = (queue, queue.allocated, order)
        return order


class Victims:
    """The eligible victims of one attempt (see the module doc) and the queue snapshots the
    attempt plays with: ``snapshots`` holds the ask's leaf and its ancestors, and the eligible
    leaves whose snapshots were asked for (:meth:`snapshot`) or judged without a kept verdict,
    with their ancestors. A leaf is judged when first met (from a node's allocation or the
    depth-first walk), once per attempt; ``verdicts`` are the ones kept from earlier attempts
    for the same ask leaf (:mod:`.memo`), updated in place."""

    def __init__(self, leaf: Queue, ask: Allocation, applications: Mapping[str, Application],
                 verdicts: Verdicts | None = None, claimed: Mapping[str, Mapping[str, int]] | None = None) -> None:
        self.ask = ask
        self.ask_path = leaf.path
        self.applications = applications
        self._priorities: dict[str, int] = {}
        self.fence = fence_root(leaf, ask, self._priorities)
        self.snapshots: dict[str, QueueSnapshot] = {}
        ask_snapshot = _snapshot_of(leaf, self.snapshots, self.ask_path)
        claimed = claimed or {}
        node = ask_snapshot
        while True:
            # Each queue's own subtree total (not added up the path: its parent has its own).
            # Before anything is computed from the snapshot, which then stays frozen.
            extra = claimed.get(node.path)
            if extra:
                allocated = node.allocated
                for name, amount in extra.items():
                    allocated[name] = allocated.get(name, 0) + amount
            if node.parent is None:
                break
            node.ask_queue = ask_snapshot  # every queue on the ask's path but root knows the ask queue
            node = node.parent
        #: What a kept verdict depends on besides the queues' resources: the claims on the path.
        self._claimed_key = tuple(sorted((path, tuple(sorted(q.items()))) for path, q in claimed.items() if q))
        #: Queue path -> (the ask's priority as seen there, below a priority fence), or None
        #: when a priority fence above the ask's priority closes the subtree.
        self._seen: dict[str, tuple[int, bool] | None] = {self.fence.path: (self._priorities[self.fence.path], False)}
        #: Leaf path -> its eligibility, judged once.
        self._judged: dict[str, EligibleLeaf | None] = {}
        #: What a kept eligibility depends on besides usage.
        self._context = (self.fence.path, ask.priority)
        #: Verdicts kept across attempts for this ask's leaf (see the module doc).
        self._verdicts: Verdicts = {} if verdicts is None else verdicts
        #: The queues whose snapshots this attempt may need: the ask's path, the eligible leaves.
        self._queues: dict[str, Queue] = {}
        walk: Queue | None = leaf
        while walk is not None:
            self._queues[walk.path] = walk
            walk = walk.parent
        #: Application id -> its leaf's eligibility (the application and its queue as first met).
        self._by_app: dict[str, tuple[Application, EligibleLeaf] | None] = {}
        #: The ask's resource types (a victim must hold one of them).
        self._ask_types = [name for name, value in ask.resource.items() if value != 0]

    @property
    def leaves(self) -> Iterator[EligibleLeaf]:
        """The eligible leaves below the fence root, depth-first with children by name."""
        stack = [self.fence]
        while stack:
            queue = stack.pop()
            if queue.is_leaf:
                eligible = self._judge(queue)
                if eligible is not None:
                    yield eligible
                continue
            if self._seen_from(queue) is None:
                continue
            stack.extend(queue.children[name] for name in sorted(queue.children, reverse=True))

    def _seen_from(self, queue: Queue) -> tuple[int, bool] | None:
        """The ask's priority as ``queue`` sees it and whether a priority fence is above it
        (None: not reachable, or closed by a fence); ``queue`` must be below the fence root."""
        if queue.path in self._seen:
            return self._seen[queue.path]
        parent = queue.parent
        above = self._seen_from(parent) if parent is not None else None
        seen: tuple[int, bool] | None = None
        if above is not None:
            ask_priority, fenced = above
            own = self._priorities.get(queue.path)
            if own is not None:
                seen = (own, fenced)
            elif queue.priority_fence:
                # A subtree other than the ask's: the priority as seen from inside it.
                seen = None if queue.priority_offset > ask_priority else (ask_priority, True)
            else:
                seen = (ask_priority - queue.priority_offset, fenced)
        self._seen[queue.path] = seen
        return seen

    def _below_fence(self, queue: Queue) -> bool:
        fence_path = self.fence.path
        return queue.path.startswith(fence_path + ".") or self.fence.parent is None

    def _judge(self, queue: Queue) -> EligibleLeaf | None:
        """The leaf's eligibility (see the module doc), judged once per attempt: the kept one
        while nothing it depends on changed."""
        path = queue.path
        if path in self._judged:
            return self._judged[path]
        verdict = self._verdicts.get(path)
        if verdict is None or verdict.queue is not queue:
            verdict = self._verdicts[path] = Verdict.of(queue)
        inputs = verdict.inputs()
        if self._claimed_key:
            inputs = (*inputs, self._claimed_key)
        has_applications = bool(queue.applications)
        if (verdict.context != self._context or verdict.made_from != inputs
                or verdict.has_applications != has_applications):
            verdict.eligible = self._judge_now(queue, verdict, inputs)
            verdict.context, verdict.has_applications = self._context, has_applications
        eligible = verdict.eligible
        if eligible is not None:
            self._queues[path] = queue
        self._judged[path] = eligible
        return eligible

    def _judge_now(self, queue: Queue, verdict: Verdict, inputs: tuple[object, ...]) -> EligibleLeaf | None:
        path = queue.path
        if (path == self.ask_path or queue.preemption_policy is PreemptionPolicy.DISABLED or not queue.applications
                or not self._below_fence(queue)):
            return None
        seen = self._seen_from(queue)
        if seen is None:
            return None
        if verdict.made_from != inputs:
            # Not within its guarantee: worked out on the queue's snapshot.
            remaining = _snapshot_of(queue, self.snapshots, self.ask_path).remaining_guaranteed()
            verdict.over = remaining is None or not not_negative(remaining)
            verdict.made_from = inputs
        if not verdict.over:
            return None
        priority, fenced = seen
        return EligibleLeaf(queue, None if fenced else priority, tuple(path.split(".")))

    def queue(self, path: str) -> Queue | None:
        """A queue on the ask's path or an eligible leaf met so far."""
        return self._queues.get(path)

    def snapshot(self, path: str) -> QueueSnapshot | None:
        """The snapshot of a queue on the ask's path or of an eligible leaf met so far (made
        when first asked for: within an attempt nothing changes)."""
        found = self.snapshots.get(path)
        if found is None:
            queue = self._queues.get(path)
            if queue is not None:
                found = _snapshot_of(queue, self.snapshots, self.ask_path)
        return found

    # -- questions ------------------------------------------------------------------------------

    def leaf_of(self, alloc: Allocation) -> EligibleLeaf | None:
        """The allocation's eligible leaf when it is a victim, else None."""
        app_id = alloc.application_id
        if app_id in self._by_app:
            known = self._by_app[app_id]
        else:
            known = self._by_app[app_id] = self._app_leaf(app_id)
        if known is None:
            return None
        app, eligible = known
        if app.allocations.get(alloc.allocation_key) is not alloc or not self._accepts(eligible, alloc):
            return None
        return eligible

    def _app_leaf(self, app_id: str) -> tuple[Application, EligibleLeaf] | None:
        app = self.applications.get(app_id)
        if app is None or app.queue is None:
            return None
        queue = app.queue
        eligible = self._judged[queue.path] if queue.path in self._judged else self._judge(queue)
        return None if eligible is None else (app, eligible)

    def _accepts(self, eligible: EligibleLeaf, alloc: Allocation) -> bool:
        """A victim in an eligible leaf: no required node, not preempted, its priority allowed,
        and a resource type of the ask held (YuniKorn's MatchAny, as ordering.shares_a_type)."""
        if alloc.required_node or alloc.preempted:
            return False
        if eligible.max_priority is not None and alloc.priority > eligible.max_priority:
            return False
        held = alloc.resource.view()
        for name in self._ask_types:
            if held.get(name, 0) != 0:
                return True
        return False

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

    def in_age_order(self, orders: LeafOrders) -> Iterator[tuple[EligibleLeaf, Allocation]]:
        """Every victim with its leaf in YuniKorn's order for additional victims: the age order
        of :class:`LeafOrders`, ties in the order of :meth:`every` (the same as sorting what
        :meth:`every` yields, stably, by that order), merged from the leaves lazily: a caller that
        stops early reads little."""
        merged = heapq.merge(*(self._aged_stream(eligible, orders) for eligible in self.leaves),
                             key=lambda entry: entry[0])
        for _, eligible, alloc in merged:
            if self._accepts(eligible, alloc):
                yield eligible, alloc

    @staticmethod
    def _aged_stream(eligible: EligibleLeaf, orders: LeafOrders
                     ) -> Iterator[tuple[tuple[bool, bool, int, tuple[str, ...], str, str], EligibleLeaf, Allocation]]:
        rank = eligible.rank
        for opted_out, originator, age, app_id, key, alloc in orders.of(eligible.queue):
            yield (opted_out, originator, age, rank, app_id, key), eligible, alloc

    def on_node(self, node: Node) -> list[tuple[EligibleLeaf, Allocation]]:
        """The node's victims with their leaves, in the order of :meth:`every`."""
        found = []
        for alloc in node.allocations.values():
            eligible = self.leaf_of(alloc)
            if eligible is not None:
                found.append((eligible, alloc))
        found.sort(key=lambda pair: (pair[0].rank, pair[1].application_id, pair[1].allocation_key))
        return found

    def on_node_for_plan(self, node: Node) -> list[tuple[EligibleLeaf, Allocation]]:
        """The node's victims with their leaves in a node plan's order: the guaranteed-share
        order (:func:`.ordering.sort_for_node`: opted in first, then not originators, newest
        first), ties in the order of :meth:`every`; one sort instead of both in turn."""
        by_app = self._by_app
        keyed = []
        for alloc in node.allocations.values():
            app_id = alloc.application_id
            known = by_app[app_id] if app_id in by_app else by_app.setdefault(app_id, self._app_leaf(app_id))
            if known is None:
                continue
            app, eligible = known
            if app.allocations.get(alloc.allocation_key) is not alloc or not self._accepts(eligible, alloc):
                continue
            keyed.append(((not alloc.allow_preempt_self, alloc.originator, -alloc.create_time_ns, eligible.rank,
                           app_id, alloc.allocation_key), eligible, alloc))
        keyed.sort(key=lambda entry: entry[0])
        return [(eligible, alloc) for _, eligible, alloc in keyed]
