"""The per-node plan's queue arithmetic, on the ask's resource types only.

A node's plan (:meth:`.guaranteed.GuaranteedPreemptor._victims_on_node`) asks two questions
per victim, many times per attempt: is the victim's queue over its guarantee before the
victim is removed (:func:`.snapshot.victim_queue_over_guaranteed`), and is the ask's queue
still within its guarantee once the victim's resources are counted against it
(:func:`.snapshot.ask_queue_under_guaranteed`). Both look at the ask's types only, and the
remaining guarantee (:meth:`.snapshot.QueueSnapshot.remaining_guaranteed`) is computed type
by type: a type's quantity depends on that type alone. What does depend on every type is
*which* types a remaining guarantee has, or whether it is None; and that never changes during
an attempt, because it follows from the guarantees' key sets and the queue tree, not from
usage. So this module works out the shape once per queue (:class:`TypedQueue`) and then plays
the plan on short lists of integers, one per type of the ask, instead of dicts of every type.

The slow twin in ``tests/preemption_reference.py`` plans with the dict snapshots; the oracle
test compares the two on random clusters.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

from pyscheduler.scheduler.preemption.snapshot import QueueSnapshot

__all__ = ["TypedPlan", "TypedQueue", "TypedQueues", "common_ancestor"]

#: Per type of the ask: the remaining guarantee's quantity, or None where it has no such type.
Remaining = list[int | None]


class TypedQueue:
    """One queue's snapshot seen on the ask's types: its static shape, its usage when the
    attempt started, and its usage in the plan under way (``current``, valid while ``stamp``
    is the plan's)."""

    __slots__ = ("current", "guaranteed", "merge", "none", "parent", "path", "stamp", "used")

    def __init__(self, snapshot: QueueSnapshot, parent: TypedQueue | None, types: Sequence[str],
                 parent_keys: frozenset[str] | None) -> None:
        self.path = snapshot.path
        self.parent = parent
        guaranteed = snapshot.guaranteed or {}
        self.guaranteed: list[int | None] = [guaranteed.get(t) for t in types]
        used = snapshot.used()
        self.used = [used.get(t, 0) for t in types]
        self.current = self.used
        self.stamp = 0
        self.merge = False
        self.none = False
        ask = snapshot.ask_queue
        if not snapshot.guarantee_on_path or (not parent_keys and not guaranteed):
            self.none = True
        elif ask is not None and ask.path == snapshot.path and guaranteed:
            self.merge = True
        elif ask is not None and guaranteed and ask.path.startswith(snapshot.path) and ask.guaranteed:
            self.none = True  # Go's strings.HasPrefix, as in remaining_guaranteed

    def keys(self, parent_keys: frozenset[str] | None, snapshot: QueueSnapshot) -> frozenset[str] | None:
        """The types of this queue's remaining guarantee (None: it is None), for its children."""
        if self.none:
            return None
        own = frozenset(snapshot.guaranteed or {})
        return own if parent_keys is None else own | parent_keys


class TypedQueues:
    """The typed queues of one attempt, made from its (unchanging) original snapshots."""

    def __init__(self, snapshots: Mapping[str, QueueSnapshot], types: Sequence[str]) -> None:
        self._snapshots = snapshots
        self.types = list(types)
        self._made: dict[str, tuple[TypedQueue, frozenset[str] | None]] = {}

    def get(self, path: str) -> TypedQueue | None:
        made = self._made.get(path)
        if made is None:
            snapshot = self._snapshots.get(path)
            if snapshot is None:
                return None
            made = self._make(snapshot)
        return made[0]

    def _make(self, snapshot: QueueSnapshot) -> tuple[TypedQueue, frozenset[str] | None]:
        made = self._made.get(snapshot.path)
        if made is not None:
            return made
        parent, parent_keys = self._make(snapshot.parent) if snapshot.parent is not None else (None, None)
        queue = TypedQueue(snapshot, parent, self.types, parent_keys)
        made = (queue, queue.keys(parent_keys, snapshot))
        self._made[snapshot.path] = made
        return made


_stamps = itertools.count(1)


class TypedPlan:
    """One pass of a node's plan: the queues' usage copied on first change (stamped with the
    pass), and the two questions of the module doc."""

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
