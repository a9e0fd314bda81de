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
The shape outlives the attempt: it is kept until the tree's shape changes (:mod:`.memo`), and
only a queue's usage is read again, when the queue's resources were replaced.

**Twins.** The typed queues are mirrored in the native ``PlanQueues`` (``rust/schedmath/src/plan.rs``), which
plays a whole node's plan in one call (:mod:`.node_plan`), unless the process's one native
switch (:mod:`pyscheduler.common.native`) is off when they are made: then they have no mirror
and the node plan runs its pure-Python twin (:class:`.node_plan.TypedPlan`). The oracle tests
run both against the slow reference of the test kit (``pyscheduler.testing.preemption_reference``,
YuniKorn's arithmetic on the dict snapshots of every type).

**Claims.** A queue on the ask's path counts as used what asks already preempting below it wait
for (``claimed``, as the dict snapshots do: :mod:`.victims`); given per attempt, it is part of
what a queue's ``used`` is refreshed from.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from pyscheduler._native import PlanQueues
from pyscheduler.common import native as native_switch

if TYPE_CHECKING:
    from pyscheduler.objects.queue import Queue

__all__ = ["Remaining", "TypedQueue", "TypedQueues"]

#: Per type of the ask: the remaining guarantee's quantity, or None where it has no such type.
Remaining = list[int | None]
#: Per type of the ask: what is claimed on a queue (None: nothing).
Claimed = tuple[int, ...] | None


class TypedQueue:
    """One queue seen on the ask's types: its static shape (from the tree and the guarantees,
    as its snapshot would have it), its usage when the attempt started (``used``, refreshed
    from the queue when its allocated or preempting resource was replaced), and its usage in
    the plan under way (``current``, valid while ``stamp`` is the plan's)."""

    __slots__ = ("_allocated", "_claimed", "_preempting", "checked", "current", "guaranteed", "index", "merge",
                 "none", "on_path", "parent", "path", "queue", "stamp", "used")

    def __init__(self, queue: Queue, parent: TypedQueue | None, types: Sequence[str],
                 parent_keys: frozenset[str] | None, ask: Queue, claimed: Claimed = None) -> None:
        self.queue = queue
        self.path = queue.path
        self.parent = parent
        resource = queue.guaranteed
        guaranteed = {} if resource is None else resource.view()
        self.guaranteed: list[int | None] = [guaranteed.get(t) for t in types]
        #: This queue or an ancestor has a guarantee (QueueSnapshot.guarantee_on_path).
        self.on_path: bool = bool(guaranteed) or (parent is not None and parent.on_path)
        self._allocated: object = None
        self._preempting: object = None
        self._claimed: Claimed = None
        self.used: list[int] = []
        self.current = self.used
        self.stamp = 0
        self.checked = 0
        #: Its index in the native twin (-1: not mirrored).
        self.index = -1
        self.refresh(types, claimed)
        self.merge = False
        self.none = False
        # Root's snapshot does not know the ask's queue (victims.Victims): only below root.
        ask_guaranteed = ask.guaranteed
        knows_ask = parent is not None
        if not self.on_path or (not parent_keys and not guaranteed):
            self.none = True
        elif knows_ask and ask.path == queue.path and guaranteed:
            self.merge = True
        elif (knows_ask and guaranteed and ask.path.startswith(queue.path) and ask_guaranteed is not None
              and len(ask_guaranteed)):
            self.none = True  # Go's strings.HasPrefix, as in remaining_guaranteed

    def refresh(self, types: Sequence[str], claimed: Claimed = None) -> bool:
        """``used`` again from the queue and what is claimed on it (per type), unless they are
        the ones it was made from (a queue replaces its resources on every change, never mutates
        them); whether it changed."""
        queue = self.queue
        allocated, preempting = queue.allocated, queue.preempting
        if allocated is self._allocated and preempting is self._preempting and claimed == self._claimed:
            return False
        self._allocated, self._preempting, self._claimed = allocated, preempting, claimed
        held, freeing = allocated.view(), preempting.view()
        # QueueSnapshot.used: allocated minus preempting, over allocated's types; plus the claims
        # (added to allocated there, so a type the queue does not hold counts too).
        used = [held[t] - freeing.get(t, 0) if t in held else 0 for t in types]
        if claimed is not None:
            used = [u + c for u, c in zip(used, claimed)]
        self.used = used
        return True

    def keys(self, parent_keys: frozenset[str] | None) -> frozenset[str] | None:
        """The types of this queue's remaining guarantee (None: it is None), for its children."""
        if self.none:
            return None
        resource = self.queue.guaranteed
        own = frozenset(() if resource is None else resource.view())
        return own if parent_keys is None else own | parent_keys


class TypedQueues:
    """The typed queues for asks of one leaf on one set of types, made when first needed and
    kept across attempts while the tree's shape stays (:mod:`.memo`); :meth:`begin` starts an
    attempt, after which each queue's usage is checked against the queue once."""

    def __init__(self, ask: Queue, types: Sequence[str], claimed: Mapping[str, Mapping[str, int]] | None = None) -> None:
        self.ask = ask
        self.types = list(types)
        self._made: dict[str, tuple[TypedQueue, frozenset[str] | None]] = {}
        self._attempt = next(_attempts)
        #: Queue path -> what is claimed on it, per type (this attempt's).
        self._claimed: dict[str, tuple[int, ...]] = {}
        self._set_claimed(claimed)
        #: The native mirror, which plans (node_plan.plan_node); None: the pure-Python twin plans
        #: (the one native switch was off when these queues were made).
        self.native: PlanQueues | None = PlanQueues(len(self.types)) if native_switch.enabled() else None

    def begin(self, claimed: Mapping[str, Mapping[str, int]] | None = None) -> None:
        """A new attempt: the queues' usage and the claims may have changed since the last one."""
        self._attempt = next(_attempts)
        self._set_claimed(claimed)

    def _set_claimed(self, claimed: Mapping[str, Mapping[str, int]] | None) -> None:
        types = self.types
        self._claimed = {path: tuple([amounts.get(t, 0) for t in types])
                         for path, amounts in (claimed or {}).items() if amounts}

    def get(self, queue: Queue) -> TypedQueue:
        made = self._made.get(queue.path)
        if made is None or made[0].queue is not queue:
            made = self._make(queue)
        typed = made[0]
        attempt = self._attempt
        walk: TypedQueue | None = typed
        while walk is not None and walk.checked != attempt:
            walk.checked = attempt
            if walk.refresh(self.types, self._claimed.get(walk.path)):
                self._mirror_usage(walk)
            walk = walk.parent
        return typed

    def _mirror(self, typed: TypedQueue) -> None:
        mirror = self.native
        if mirror is not None:
            parent = typed.parent
            typed.index = mirror.add(None if parent is None else parent.index, typed.guaranteed, typed.none, typed.merge)
            mirror.set_used(typed.index, typed.used)

    def _mirror_usage(self, typed: TypedQueue) -> None:
        if self.native is not None:
            self.native.set_used(typed.index, typed.used)

    def _make(self, queue: Queue) -> tuple[TypedQueue, frozenset[str] | None]:
        made = self._made.get(queue.path)
        if made is not None and made[0].queue is queue:
            return made
        parent, parent_keys = self._make(queue.parent) if queue.parent is not None else (None, None)
        typed = TypedQueue(queue, parent, self.types, parent_keys, self.ask, self._claimed.get(queue.path))
        typed.checked = self._attempt
        self._mirror(typed)
        made = (typed, typed.keys(parent_keys))
        self._made[queue.path] = made
        return made


_attempts = itertools.count(1)
