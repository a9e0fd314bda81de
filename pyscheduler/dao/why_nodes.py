"""Why no node takes an ask (issue 35): the partition's nodes grouped by the first reason each
refuses it, for the ``nodes`` object of a why answer (docs/design/why.md).

Each node is checked in this order and counted under the first check it fails:

1. ``UNSCHEDULABLE``: the node is cordoned;
2. ``INSUFFICIENT``: its available resources lack the ask's; one row per resource type, the
   first type (by name) the node is short of;
3. ``RESERVED``: it holds a reservation for another ask (the cycle's node search skips it);
4. ``OUTSIDE_SCOPE``: it is in another member cluster or topology domain than the ones the
   application may use now;
5. ``PREDICATE``: the RM's predicates refuse the ask there (asked as a reservation check,
   ``allocate=False``, as the cycle asks when it reserves: nothing is held on the RM side);
   one row per distinct reason the RM gives.

Nodes passing every check count as ``fit``. The RM is asked only about the nodes that pass the
first four checks, as the cycle's node search asks only about nodes that fit.

**Identical asks share one scan.** A why answer for an application of 100 asks of the same
shape would otherwise cost 100 scans of every node: :class:`NodeGroupings` keeps the grouping
per *kind* of ask (its resource, task group, tags, required node and placeholder flag, and the
scope) for the duration of one answer, and the RM is asked with the first ask of the kind (asks
of a kind carry the same constraints, as a gang's members do). Called under the partition's
lock; nothing is changed (the predicates are the RM's read-only reservation check).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from pyscheduler.si.callback import PredicatesFunc, check_predicates
from pyscheduler.si.messages import PredicatesArgs

if TYPE_CHECKING:
    from pyscheduler.objects.allocation import Allocation
    from pyscheduler.objects.node import Node
    from pyscheduler.objects.partition import Partition

__all__ = [
    "INSUFFICIENT",
    "NodeGrouping",
    "NodeGroupings",
    "OUTSIDE_SCOPE",
    "PREDICATE",
    "RESERVED",
    "UNSCHEDULABLE",
    "group_nodes",
]

UNSCHEDULABLE: Final = "UNSCHEDULABLE"
INSUFFICIENT: Final = "INSUFFICIENT"
RESERVED: Final = "RESERVED"
OUTSIDE_SCOPE: Final = "OUTSIDE_SCOPE"
PREDICATE: Final = "PREDICATE"


class NodeGrouping(NamedTuple):
    """How the nodes answer one kind of ask."""

    total: int
    fit: int
    #: (code, resource type or RM reason or "", count), most frequent first.
    refusals: tuple[tuple[str, str, int], ...]
    #: Nodes refused by the RM's predicates only (they have room): PREDICATES rather than
    #: NO_NODE_FITS when no node fits.
    refused_by_predicates: int

    def dao(self) -> dict[str, Any]:
        rows = []
        for code, detail, count in self.refusals:
            row: dict[str, Any] = {"code": code}
            if code == INSUFFICIENT:
                row["resource"] = detail
            elif code == PREDICATE:
                row["reason"] = detail
            row["count"] = count
            rows.append(row)
        return {"total": self.total, "fit": self.fit, "refusals": rows}


def _first_short(ask: Allocation, available: Any) -> str:
    """The first resource type (by name) of the ask the node lacks, "" when it fits."""
    for name in sorted(ask.resource):
        if ask.resource[name] > available.get(name, 0):
            return name
    return ""


def group_nodes(partition: Partition, ask: Allocation, predicates: PredicatesFunc | None,
                scope: Collection[str] | None = None, *, first_only: bool = False) -> NodeGrouping:
    """Groups ``partition``'s nodes by the first reason each refuses ``ask`` (module doc);
    ``scope``: the node ids the application may use now (None: every node); ``first_only``:
    stop at the first node that takes it (whether one does is all the caller needs: the counts
    are then partial). The caller holds the partition's lock."""
    counts: Counter[tuple[str, str]] = Counter()
    fit = 0
    key = ask.allocation_key
    resource = ask.resource
    nodes: Collection[Node] = partition.nodes.values()
    for node in nodes:
        if not node.schedulable:
            counts[(UNSCHEDULABLE, "")] += 1
            continue
        if not resource.fits_in(node.available):
            counts[(INSUFFICIENT, _first_short(ask, node.available))] += 1
            continue
        if node.reservations and any(other != key for other in node.reservations):
            counts[(RESERVED, "")] += 1
            continue
        if scope is not None and node.node_id not in scope:
            counts[(OUTSIDE_SCOPE, "")] += 1
            continue
        if predicates is not None:
            reason = check_predicates(predicates, PredicatesArgs(key, node.node_id, False))
            if reason:
                counts[(PREDICATE, reason)] += 1
                continue
        fit += 1
        if first_only:
            break
    refusals = tuple(sorted(((code, detail, count) for (code, detail), count in counts.items()),
                            key=lambda row: (-row[2], row[0], row[1])))
    by_predicates = sum(count for (code, _), count in counts.items() if code == PREDICATE)
    return NodeGrouping(len(nodes), fit, refusals, by_predicates)


def ask_kind(ask: Allocation) -> tuple[object, ...]:
    """What makes two asks answer the nodes alike (module doc)."""
    return (tuple(sorted(ask.resource.items())), ask.task_group_name,
            tuple(sorted(ask.tags.items())) if ask.tags else (), ask.required_node, ask.placeholder)


class NodeGroupings:
    """The groupings of one answer, computed once per kind of ask and scope."""

    __slots__ = ("_partition", "_predicates", "_seen", "_first_only")

    def __init__(self, partition: Partition, predicates: PredicatesFunc | None, *, first_only: bool = False) -> None:
        """``first_only``: each grouping stops at the first node that takes the ask (an answer
        without the grouping, ``nodes=false``, needs only whether one does)."""
        self._partition = partition
        self._predicates = predicates
        self._first_only = first_only
        self._seen: dict[tuple[object, ...], NodeGrouping] = {}

    def of(self, ask: Allocation, scope: frozenset[str] | None) -> NodeGrouping:
        key = (ask_kind(ask), scope)
        found = self._seen.get(key)
        if found is None:
            found = self._seen[key] = group_nodes(self._partition, ask, self._predicates, scope,
                                                  first_only=self._first_only)
        return found
