"""Queue snapshots for preemption: what YuniKorn's ``QueuePreemptionSnapshot`` computes.

A preemption attempt copies, for the queues it looks at, their allocated, preempting, max and
guaranteed resources, then plays "remove this victim, add this ask" on copies of those copies
(``duplicate``) without touching the real queues. Usage changes propagate to the parents, as
they do on queues.

The arithmetic is YuniKorn's, including its corner cases (``shared/spec/yunikorn/preemption.md``
and ``objects/preemption.go``): a queue's *remaining guaranteed* is its guarantee minus what it
uses (allocated minus preempting), only for the guaranteed types, bounded by the parent's
remaining where both name a type (a type only one side names keeps that side's quantity: a
queue without a guarantee has its parent's remaining); None when no queue on the path has a
guarantee. A queue's *preemptable* resource is
its usage above its guarantee, only the types over it, bounded by the parent's.

**Plain dicts.** A decision runs this arithmetic a few hundred times per node it plans, so the
snapshots hold quantities as plain ``dict[str, int]`` (a type missing is not the same as 0 here,
as in YuniKorn) and the functions below build dicts, not :class:`Resource` objects. Python's
integers do not overflow; results near the int64 limits are only compared, never stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "Quantities",
    "QueueSnapshot",
    "add_into",
    "ask_queue_under_guaranteed",
    "component_min_only_existing",
    "component_min_permissive",
    "covers",
    "merge_if_not_present",
    "not_negative",
    "sub_only_existing",
    "victim_queue_over_guaranteed",
]

Quantities = dict[str, int]


def sub_only_existing(left: Mapping[str, int] | None, right: Mapping[str, int] | None) -> Quantities:
    """``left - right`` for the types of ``left`` only."""
    if left is None:
        return {}
    if right is None:
        return dict(left)
    return {k: v - right.get(k, 0) for k, v in left.items()}


def component_min_permissive(left: Quantities | None, right: Quantities | None) -> Quantities | None:
    """Per type the smaller of two resources over the union of types; a type one side does not
    name keeps the other side's quantity (YuniKorn's ComponentWiseMinPermissive: a type a
    guarantee does not name is not limited by it); None only when both are None."""
    if left is None:
        return right
    if right is None:
        return left
    merged = dict(right)
    for k, v in left.items():
        other = merged.get(k)
        merged[k] = v if other is None or v < other else other
    return merged


def component_min_only_existing(left: Quantities, right: Quantities | None) -> Quantities:
    """For the types of ``left``: the smaller of the two where ``right`` has the type."""
    if right is None:
        return left
    return {k: min(v, right[k]) if k in right else v for k, v in left.items()}


def merge_if_not_present(left: Quantities, right: Quantities | None) -> Quantities:
    """``left``, plus the types of ``right`` that ``left`` does not have."""
    if right is None:
        return left
    merged = dict(right)
    merged.update(left)
    return merged


def add_into(total: dict[str, int], amount: Mapping[str, int]) -> None:
    """Adds ``amount`` into ``total``, type by type (a missing type counts as 0)."""
    for name, value in amount.items():
        total[name] = total.get(name, 0) + value


def not_negative(quantities: Mapping[str, int] | None) -> bool:
    """Every quantity >= 0 (YuniKorn's StrictlyGreaterThanOrEquals(r, Zero); None is zero)."""
    return quantities is None or all(v >= 0 for v in quantities.values())


def ask_queue_under_guaranteed(ask: Mapping[str, int], remaining: Mapping[str, int]) -> bool:
    """YuniKorn's isAskQueueUnderGuaranteed: the ask's queue is within its guarantee for this
    ask when no type of the ask is below zero in its remaining guarantee; the types the ask does
    not use do not count (a queue over its guarantee in memory may still preempt for vcores)."""
    return all(remaining.get(k, 0) >= 0 for k in ask)


def victim_queue_over_guaranteed(ask: Mapping[str, int], remaining: Mapping[str, int]) -> bool:
    """YuniKorn's isVictimQueueOverGuaranteed: a victim's queue is over its guarantee for this
    ask when some type of the ask is below zero in its remaining guarantee, whatever the other
    types (it may be under its guarantee in a type the ask does not use)."""
    return any(remaining.get(k, 0) < 0 for k in ask)


def covers(total: Mapping[str, int], ask: Mapping[str, int]) -> bool:
    """Whether the victims' ``total`` covers the ask in the types the victims hold: no type both
    name where the ask is larger, and at least one type in common. The types the victims lack
    are the node's to give (its plan's start index already checked that); YuniKorn's final
    check (``ask.StrictlyGreaterThanOnlyExisting(victims)``) compares the same types."""
    common = False
    for k, v in ask.items():
        held = total.get(k)
        if held is None:
            continue
        if v > held:
            return False
        common = True
    return common


_UNKNOWN: Final[Any] = object()


@dataclass(eq=False, slots=True)
class QueueSnapshot:
    """One queue as a preemption attempt sees it (copies of its resources). An attempt's
    original snapshots are ``frozen``: only their copies (:meth:`duplicate`) change, so an
    original remembers its remaining guarantee once computed."""

    path: str
    parent: QueueSnapshot | None
    leaf: bool
    allocated: Quantities
    preempting: Quantities
    maximum: Quantities | None
    guaranteed: Quantities | None
    #: The snapshot of the ask's leaf, for queues that compare themselves with it.
    ask_queue: QueueSnapshot | None = None
    #: Never changed after it is made (an attempt's original; its copies are not frozen).
    frozen: bool = False
    #: Whether this queue or an ancestor has a guarantee (set when made; none: no remaining).
    guarantee_on_path: bool = False
    _remaining: Any = _UNKNOWN
    _used: Quantities | None = None

    def __post_init__(self) -> None:
        self.guarantee_on_path = bool(self.guaranteed) or (self.parent is not None and self.parent.guarantee_on_path)

    def duplicate(self, copies: dict[str, QueueSnapshot]) -> QueueSnapshot:
        """A copy (and of its parents), registered in ``copies`` by path; the ask queue is
        shared (the arithmetic does not change it)."""
        existing = copies.get(self.path)
        if existing is not None:
            return existing
        parent = self.parent.duplicate(copies) if self.parent is not None else None
        copy = QueueSnapshot(self.path, parent, self.leaf, dict(self.allocated), self.preempting, self.maximum,
                             self.guaranteed, self.ask_queue)
        copies[self.path] = copy
        return copy

    def add_allocation(self, resource: Mapping[str, int]) -> None:
        pairs = tuple(resource.items())  # read once: a native Resource builds its items per call
        snapshot: QueueSnapshot | None = self
        while snapshot is not None:
            allocated = snapshot.allocated
            for k, v in pairs:
                allocated[k] = allocated.get(k, 0) + v
            snapshot = snapshot.parent

    def remove_allocation(self, resource: Mapping[str, int]) -> None:
        pairs = tuple(resource.items())  # read once: a native Resource builds its items per call
        snapshot: QueueSnapshot | None = self
        while snapshot is not None:
            allocated = snapshot.allocated
            for k, v in pairs:
                allocated[k] = allocated.get(k, 0) - v
            snapshot = snapshot.parent

    def used(self) -> Quantities:
        """Allocated minus preempting (a frozen snapshot computes it once)."""
        if self.frozen:
            if self._used is None:
                self._used = self._compute_used()
            return self._used
        return self._compute_used()

    def _compute_used(self) -> Quantities:
        preempting = self.preempting
        if not preempting or not any(preempting.values()):
            return self.allocated
        return {k: v - preempting.get(k, 0) for k, v in self.allocated.items()}

    def remaining_guaranteed(self) -> Quantities | None:
        """YuniKorn's GetRemainingGuaranteedResource (see the module doc). The ask's queue lets
        its own remaining take precedence over its ancestors'; a queue above the ask's queue
        that has a guarantee, while the ask's queue has one too, passes nothing down (so a
        sibling starving below its guarantee can find victims without a preemption loop)."""
        if self.frozen:
            if self._remaining is _UNKNOWN:
                self._remaining = self._compute_remaining()
            return self._remaining  # type: ignore[no-any-return]
        return self._compute_remaining()

    def _compute_remaining(self) -> Quantities | None:
        if not self.guarantee_on_path:
            return None  # what the walk up would find: no level has a guarantee
        parent = self.parent.remaining_guaranteed() if self.parent is not None else None
        guaranteed = self.guaranteed or {}
        if not parent and not guaranteed:
            return None
        remaining = sub_only_existing(guaranteed, self.used())
        ask = self.ask_queue
        if ask is not None:
            if ask.path == self.path and remaining:
                return merge_if_not_present(remaining, parent)
            if remaining and ask.path.startswith(self.path) and ask.guaranteed:
                # Go's strings.HasPrefix, as YuniKorn compares queue paths here.
                return None
        return component_min_permissive(remaining, parent)

    def preemptable(self) -> Quantities | None:
        """YuniKorn's GetPreemptableResource: usage above the guarantee, only the types over it,
        bounded by the parent's (for those types); None without usage."""
        if not self.allocated:
            return None
        parent = self.parent.preemptable() if self.parent is not None else None
        guaranteed = self.guaranteed
        used = self.used()
        if guaranteed is None:
            positive = {k: v for k, v in used.items() if v > 0}
        else:
            positive = {k: over for k, v in used.items() if (over := v - guaranteed.get(k, 0)) > 0}
        if not positive:
            return positive
        return component_min_only_existing(positive, parent)
