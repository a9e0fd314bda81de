"""A guaranteed-share attempt's per-node plan (YuniKorn's calculateVictimsByNode, two passes
over a node's candidate victims) on the typed queues of :mod:`.typed`: the one production
entry, :func:`plan_node`, with its two implementations.

- **Native** (the default): one call of ``PlanQueues.plan`` (``rust/schedmath/src/plan.rs``)
  over the typed queues' native mirror; it computes in 128-bit integers, so no sum of int64
  quantities overflows.
- **Pure Python** (:func:`_plan_python`, :class:`TypedPlan`): the same arithmetic, run when
  the process's one native switch (:mod:`pyscheduler.common.native`, ``PYSCHEDULER_NATIVE=0``)
  was off as the typed queues were made: they then have no native mirror. The oracle tests
  run both against the slow reference (``pyscheduler.testing.preemption_reference``).

The choice is made once per typed queues (:class:`.typed.TypedQueues`, kept across attempts by
:mod:`.memo`), never per call by a flag of this module.

Moving a victim's resources from its queue to the ask's changes only the queues below their
common ancestor (above it the two changes cancel), and whether the ask's queue then goes over
its guarantee depends only on the ask's side: so the pure plan keeps that answer per (common
ancestor, resources) until a victim is actually taken. A victim that does not reduce the
node's shortfall is moved back at once in YuniKorn; here it is not moved.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from pyscheduler._native import PlanQueues
from pyscheduler.common.resources import Resource
from pyscheduler.scheduler.preemption.snapshot import add_into
from pyscheduler.scheduler.preemption.typed import Remaining, TypedQueue, TypedQueues

if TYPE_CHECKING:
    from pyscheduler.objects.allocation import Allocation
    from pyscheduler.objects.queue import Queue

__all__ = ["TypedPlan", "common_ancestor", "plan_node", "reduces_shortfall"]

#: A node's plan: (start index, victims), or None when the node is of no use.
Planned = tuple[int, list["Allocation"]] | None


def plan_node(typed: TypedQueues, ask_leaf: Queue, leaf_of: Mapping[str, Queue], ask: Resource,
              available: Resource, candidates: list[Allocation],
              ancestors: dict[TypedQueue, TypedQueue | None]) -> Planned:
    """The node's plan for an ask of ``ask_leaf`` (``leaf_of``: each candidate's leaf queue;
    ``ancestors``: the attempt's cache of common ancestors, used by the pure plan)."""
    if typed.native is not None:
        return _plan_native(typed.native, typed, ask_leaf, leaf_of, ask, available, candidates)
    return _plan_python(typed, ask_leaf, leaf_of, ask, available, candidates, ancestors)


def _plan_native(native: PlanQueues, typed: TypedQueues, ask_leaf: Queue, leaf_of: Mapping[str, Queue],
                 ask: Resource, available: Resource, candidates: list[Allocation]) -> Planned:
    wanted = ask.view()
    room = available.view()
    types = typed.types
    # The node's types: the ask's, the room's and the victims' (see plan.rs).
    node_types = list(wanted)
    node_types.extend(t for t in room if t not in wanted)
    ask_index = typed.get(ask_leaf).index
    kept: list[Allocation] = []
    queues: list[int] = []
    amounts: list[list[int]] = []
    freed: list[list[int]] = []
    for victim in candidates:
        leaf = leaf_of.get(victim.allocation_key)
        if leaf is None:
            continue
        held = victim.resource.view()
        for name in held:
            if name not in wanted and name not in room and name not in node_types:
                node_types.append(name)
        kept.append(victim)
        queues.append(typed.get(leaf).index)
        amounts.append([held.get(t, 0) for t in types])
    for victim in kept:
        held = victim.resource.view()
        freed.append([held.get(t, 0) for t in node_types])
    planned = native.plan(ask_index, queues, amounts, freed, [wanted.get(t, 0) for t in node_types],
                          [room.get(t, 0) for t in node_types])
    if planned is None:
        return None
    index, positions = planned
    return index, [kept[p] for p in positions]


def _plan_python(typed: TypedQueues, ask_leaf: Queue, leaf_of: Mapping[str, Queue], ask: Resource,
                 available: Resource, candidates: list[Allocation],
                 ancestors: dict[TypedQueue, TypedQueue | None]) -> Planned:
    wanted = ask.view()
    types = typed.types
    ask_queue = typed.get(ask_leaf)
    plan = TypedPlan()
    over_if_moved: dict[tuple[TypedQueue | None, tuple[int, ...]], bool] = {}
    current = available.to_dict()
    head: list[Allocation] = []
    tail: list[Allocation] = []
    for victim in candidates:
        leaf = leaf_of.get(victim.allocation_key)
        if leaf is None:
            continue
        queue = typed.get(leaf)
        if not plan.victim_queue_over(queue):
            continue
        freed = victim.resource.view()
        amounts = tuple([freed.get(t, 0) for t in types])
        if queue in ancestors:
            common = ancestors[queue]
        else:
            common = ancestors[queue] = common_ancestor(queue, ask_queue)
        key = (common, amounts)
        over = over_if_moved.get(key)
        if over is None:
            plan.move(ask_queue, amounts, 1, common)
            over = over_if_moved[key] = plan.ask_queue_over(ask_queue)
            plan.move(ask_queue, amounts, -1, common)
        if over:
            break
        if reduces_shortfall(wanted, current, freed):
            plan.move(queue, amounts, -1, common)
            plan.move(ask_queue, amounts, 1, common)
            over_if_moved.clear()
            add_into(current, freed)
            head.append(victim)
        else:
            tail.append(victim)
    ordered = head + tail
    if not ordered:
        return None
    plan = TypedPlan()
    current = available.to_dict()
    results: list[Allocation] = []
    index = -1
    for victim in ordered:
        leaf = leaf_of.get(victim.allocation_key)
        if leaf is None:
            continue
        queue = typed.get(leaf)
        if plan.victim_queue_over(queue):
            freed = victim.resource.view()
            plan.move(queue, [freed.get(t, 0) for t in types], -1)
            add_into(current, freed)
            if index < 0 and ask.fits_in(current):
                index = len(results)
            results.append(victim)
    if index < 0:
        return None
    return index, results


def reduces_shortfall(wanted: Mapping[str, int], current: Mapping[str, int], freed: Mapping[str, int]) -> bool:
    """Whether adding ``freed`` to ``current`` changes the ask's shortfall (``wanted - current``
    with negatives as 0, a missing type as 0): only the freed types can change it."""
    for name, amount in freed.items():
        if amount:
            missing = wanted.get(name, 0) - current.get(name, 0)
            if max(missing, 0) != max(missing - amount, 0):
                return True
    return False


_stamps = itertools.count(1)


class TypedPlan:
    """One pass of the pure-Python node plan: the queues' usage copied on first change
    (stamped with the pass), and the plan's two questions: is a victim's queue over its
    guarantee, is the ask's queue over its own (on the ask's types only, see :mod:`.typed`)."""

    __slots__ = ("stamp",)

    def __init__(self) -> None:
        self.stamp = next(_stamps)

    def remaining(self, queue: TypedQueue) -> Remaining | None:
        """:meth:`.snapshot.QueueSnapshot.remaining_guaranteed` on the ask's types."""
        if queue.none:
            return None
        parent = self.remaining(queue.parent) if queue.parent is not None else None
        used = queue.current if queue.stamp == self.stamp else queue.used
        out: Remaining = []
        for i, limit in enumerate(queue.guaranteed):
            above = None if parent is None else parent[i]
            if limit is None:
                out.append(above)
                continue
            own = limit - used[i]
            out.append(own if above is None or queue.merge or own < above else above)
        return out

    def victim_queue_over(self, queue: TypedQueue) -> bool:
        """No guarantee on its path, or below zero in a type of the ask."""
        remaining = self.remaining(queue)
        return remaining is None or any(v is not None and v < 0 for v in remaining)

    def ask_queue_over(self, queue: TypedQueue) -> bool:
        """Below zero in a type of the ask (never without a remaining guarantee)."""
        remaining = self.remaining(queue)
        return remaining is not None and any(v is not None and v < 0 for v in remaining)

    def move(self, queue: TypedQueue | None, amounts: Sequence[int], sign: int, stop: TypedQueue | None = None) -> None:
        """Adds ``sign`` x ``amounts`` to the usage of ``queue`` and its ancestors below
        ``stop`` (None: up to the root)."""
        stamp = self.stamp
        while queue is not stop and queue is not None:
            if queue.stamp != stamp:
                queue.current = list(queue.used)
                queue.stamp = stamp
            current = queue.current
            for i, amount in enumerate(amounts):
                current[i] += sign * amount
            queue = queue.parent


def common_ancestor(queue: TypedQueue, other: TypedQueue) -> TypedQueue | None:
    """The lowest queue that is ``queue`` or an ancestor of it and also ``other`` or one of
    ``other``'s ancestors (None: they share no queue)."""
    chain = set()
    walk: TypedQueue | None = other
    while walk is not None:
        chain.add(walk)
        walk = walk.parent
    walk = queue
    while walk is not None and walk not in chain:
        walk = walk.parent
    return walk
