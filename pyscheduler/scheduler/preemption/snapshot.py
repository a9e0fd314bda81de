"""Queue snapshots for preemption: what YuniKorn's ``QueuePreemptionSnapshot`` computes.

A preemption attempt copies, for the queues it looks at, their allocated, preempting, max and
guaranteed resources, then plays "remove this victim, add this ask" on copies of those copies
(``duplicate``) without touching the real queues. Usage changes propagate to the parents, as
they do on queues.

The arithmetic is YuniKorn's, including its corner cases (``shared/spec/yunikorn/preemption.md``
and ``objects/preemption.go``): a queue's *remaining guaranteed* is its guarantee minus what it
uses (allocated minus preempting), only for the guaranteed types, bounded by the parent's
remaining; None when no queue on the path has a guarantee. A queue's *preemptable* resource is
its usage above its guarantee, only the types over it, bounded by the parent's.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyscheduler.common.resources import Resource

__all__ = [
    "QueueSnapshot",
    "component_min",
    "component_min_only_existing",
    "merge_if_not_present",
    "not_negative",
    "strictly_negative",
    "sub_only_existing",
]


def sub_only_existing(left: Resource | None, right: Resource | None) -> Resource:
    """``left - right`` for the types of ``left`` only."""
    if left is None:
        return Resource()
    if right is None:
        return left
    return Resource({k: v - right.get(k, 0) for k, v in left.items()})


def component_min(left: Resource | None, right: Resource | None) -> Resource | None:
    """Per type the smaller of two resources over the union of types, a missing type counting
    as 0; None when either is None (Go's ComponentWiseMin over nil)."""
    if left is None:
        return right
    if right is None:
        return left
    keys = set(left) | set(right)
    return Resource({k: min(left.get(k, 0), right.get(k, 0)) for k in keys})


def component_min_only_existing(left: Resource, right: Resource | None) -> Resource:
    """For the types of ``left``: the smaller of the two where ``right`` has the type."""
    if right is None:
        return left
    return Resource({k: min(v, right[k]) if k in right else v for k, v in left.items()})


def merge_if_not_present(left: Resource, right: Resource | None) -> Resource:
    """``left``, plus the types of ``right`` that ``left`` does not have."""
    if right is None:
        return left
    merged = dict(right.items())
    merged.update(left.items())
    return Resource(merged)


def not_negative(resource: Resource | None) -> bool:
    """Every quantity >= 0 (YuniKorn's StrictlyGreaterThanOrEquals(r, Zero); None is zero)."""
    return resource is None or all(v >= 0 for v in resource.values())


def strictly_negative(resource: Resource) -> bool:
    """Below zero: no quantity above 0 and at least one below (Zero strictly greater)."""
    values = list(resource.values())
    return all(v <= 0 for v in values) and any(v < 0 for v in values)


@dataclass(eq=False)
class QueueSnapshot:
    """One queue as a preemption attempt sees it (copies of its resources)."""

    path: str
    parent: QueueSnapshot | None
    leaf: bool
    allocated: Resource
    preempting: Resource
    maximum: Resource | None
    guaranteed: Resource | None
    #: The snapshot of the ask's leaf, for queues that compare themselves with it.
    ask_queue: QueueSnapshot | None = None

    def duplicate(self, copies: dict[str, QueueSnapshot]) -> QueueSnapshot:
        """A copy (and of its parents), registered in ``copies`` by path; the ask queue is
        shared (the arithmetic does not change it)."""
        existing = copies.get(self.path)
        if existing is not None:
            return existing
        parent = self.parent.duplicate(copies) if self.parent is not None else None
        copy = QueueSnapshot(self.path, parent, self.leaf, self.allocated, self.preempting, self.maximum,
                             self.guaranteed, self.ask_queue)
        copies[self.path] = copy
        return copy

    def add_allocation(self, resource: Resource) -> None:
        snapshot: QueueSnapshot | None = self
        while snapshot is not None:
            snapshot.allocated = snapshot.allocated + resource
            snapshot = snapshot.parent

    def remove_allocation(self, resource: Resource) -> None:
        snapshot: QueueSnapshot | None = self
        while snapshot is not None:
            snapshot.allocated = snapshot.allocated - resource
            snapshot = snapshot.parent

    def used(self) -> Resource:
        return sub_only_existing(self.allocated, self.preempting)

    def remaining_guaranteed(self) -> Resource | None:
        """YuniKorn's GetRemainingGuaranteedResource (see the module doc). The ask's queue lets
        its own remaining take precedence over its ancestors'; a queue above the ask's queue
        that has a guarantee, while the ask's queue has one too, passes nothing down (so a
        sibling starving below its guarantee can find victims without a preemption loop)."""
        parent = self.parent.remaining_guaranteed() if self.parent is not None else None
        guaranteed = self.guaranteed or Resource()
        if (parent is None or parent.is_empty()) and guaranteed.is_empty():
            return None
        remaining = sub_only_existing(guaranteed, self.used())
        ask = self.ask_queue
        if ask is not None:
            if ask.path == self.path and not remaining.is_empty():
                return merge_if_not_present(remaining, parent)
            ask_remaining = sub_only_existing(ask.guaranteed or Resource(), ask.used())
            if not remaining.is_empty() and _is_prefix(ask.path, self.path) and not ask_remaining.is_empty():
                return None
        return component_min(remaining, parent)

    def preemptable(self) -> Resource | None:
        """YuniKorn's GetPreemptableResource: usage above the guarantee, only the types over it,
        bounded by the parent's (for those types); None without usage."""
        if self.allocated.is_empty():
            return None
        parent = self.parent.preemptable() if self.parent is not None else None
        over = sub_only_existing(self.used(), self.guaranteed)
        positive = Resource({k: v for k, v in over.items() if v > 0})
        if positive.is_empty():
            return positive
        return component_min_only_existing(positive, parent)


def _is_prefix(path: str, prefix: str) -> bool:
    """Go's strings.HasPrefix, as YuniKorn compares queue paths here."""
    return path.startswith(prefix)
