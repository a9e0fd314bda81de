"""What guaranteed-share attempts work out about queues and the next attempt may reuse.

An attempt judges every leaf it meets (is it within its guarantee?) and works out, per queue, its
figures on the ask's resource types (:mod:`.typed`). Between two attempts a busy cluster changes
the usage of a few queues, not of the hundreds the attempts look at, so a partition keeps one
memo (under its lock, as every attempt runs) holding, per leaf that asked:

- the leaves' verdicts (:data:`.victims.Verdicts`), each with the usage it was made from;
- the typed queues (:class:`.typed.TypedQueues`) per set of ask types, which read a queue's usage
  again when the queue's resources were replaced;

and, for every asking leaf, each leaf's allocations in age order (:class:`.victims.LeafOrders`,
for YuniKorn's additional victims), made again for a leaf whose allocations changed.

Both also depend on the tree's shape: queues, guarantees, maxes, properties. Any change of those
(:func:`pyscheduler.objects.queue.queue_shape_version`) starts the memo again. Decisions are the
same with or without it: the oracle test (``tests/test_preemption_oracle.py``) runs its random
attempts one after the other on the same memo against the slow twin that has none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from pyscheduler.objects.queue import queue_shape_version
from pyscheduler.scheduler.preemption.typed import TypedQueues
from pyscheduler.scheduler.preemption.victims import LeafOrders, Verdicts

if TYPE_CHECKING:
    from pyscheduler.objects.queue import Queue

__all__ = ["AskLeafMemo", "PreemptionMemo"]

#: Ask leaves remembered at once (the least recently used goes first).
ASK_LEAVES: Final = 32
#: Sets of ask types remembered per ask leaf.
TYPE_SETS: Final = 8


@dataclass(eq=False)
class AskLeafMemo:
    """What attempts for asks of one leaf keep."""

    #: The partition's leaf orders (shared by every asking leaf).
    orders: LeafOrders = field(default_factory=LeafOrders)
    verdicts: Verdicts = field(default_factory=dict)
    typed: dict[tuple[str, ...], TypedQueues] = field(default_factory=dict)

    def typed_queues(self, ask: Queue, types: Sequence[str],
                     claimed: Mapping[str, Mapping[str, int]] | None = None) -> TypedQueues:
        """The typed queues for these ask types, started for a new attempt with what is claimed
        on the ask's path (:func:`.guaranteed.claimed_by_preemptors`)."""
        key = tuple(types)
        found = self.typed.pop(key, None)
        if found is None:
            found = TypedQueues(ask, key, claimed)
        else:
            found.begin(claimed)
        self.typed[key] = found
        if len(self.typed) > TYPE_SETS:
            del self.typed[next(iter(self.typed))]
        return found


class PreemptionMemo:
    """One partition's memo (see the module doc)."""

    def __init__(self) -> None:
        self._shape = -1
        self._leaves: dict[str, AskLeafMemo] = {}
        self._orders = LeafOrders()

    def for_ask_leaf(self, leaf: Queue) -> AskLeafMemo:
        shape = queue_shape_version()
        if shape != self._shape:
            self._leaves.clear()
            self._orders = LeafOrders()
            self._shape = shape
        found = self._leaves.pop(leaf.path, None)
        if found is None:
            found = AskLeafMemo(self._orders)
        self._leaves[leaf.path] = found
        if len(self._leaves) > ASK_LEAVES:
            del self._leaves[next(iter(self._leaves))]
        return found
