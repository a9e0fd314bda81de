"""Node ordering: which node the scheduling cycle tries first.

Two implementations behind one interface:

- :class:`NativeNodeOrdering` (the default): the Rust index (``pyscheduler._native.NodeIndex``),
  nodes in a B-tree by (score, node id), re-scored in O(log n) when a node changes.
- :class:`PythonNodeOrdering`: the same order and filters in pure Python (a sorted list kept
  with bisect), for comparison in ``pyscheduler bench scheduling``.

Policies (YuniKorn's ``nodesorting.go``): for every resource type with a non-zero weight
(default vcore 1, memory 1) and a non-zero node total, ``share = 1 - available / total``, and
``usage`` is the weighted mean of the shares. ``fair`` tries the least used node first,
``binpacking`` the most used. Equal scores are ordered by node id.

Reservations: an ask that fits no node reserves the one closest to fitting it, by YuniKorn's
FitInScore (:func:`fit_in_score`); ``closest_fits`` lists those candidates, best first, so
the cycle only checks a few of them with the RM instead of scoring every node in Python.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterable, Mapping
from typing import Protocol

from pyscheduler._native import NodeIndex
from pyscheduler.common import native as native_switch

__all__ = [
    "Cursor", "NativeNodeOrdering", "NodeOrdering", "PythonNodeOrdering", "fit_in_score", "make_node_ordering",
]

Cursor = tuple[float, str]
DEFAULT_WEIGHTS: Mapping[str, float] = {"vcore": 1.0, "memory": 1.0}


class NodeOrdering(Protocol):
    """What the scheduling cycle and the partition need of a node order."""

    @property
    def policy(self) -> str: ...

    def upsert(self, node_id: str, total: Mapping[str, int], available: Mapping[str, int], schedulable: bool) -> None:
        """Adds a node or records a change of its resources or schedulable state."""

    def remove(self, node_id: str) -> bool: ...

    def set_reserved(self, node_id: str, reserved: bool) -> bool: ...

    def set_policy(self, policy: str, weights: Mapping[str, float] | None = None) -> None: ...

    def first_fit(self, ask: Mapping[str, int], after: Cursor | None = None, skip_reserved: bool = True) -> Cursor | None:
        """The first node (after ``after``) that is schedulable, not reserved when
        ``skip_reserved``, and whose capacity and available resources fit ``ask``."""

    def closest_fits(self, ask: Mapping[str, int], limit: int, after: Cursor | None = None,
                     skip_reserved: bool = True) -> list[Cursor]:
        """Up to ``limit`` nodes ``ask`` could reserve, as (fit-in score, node id) in that order,
        after ``after`` (a cursor from this method): schedulable, not reserved when
        ``skip_reserved``, and whose capacity holds ``ask``."""

    def ordered(self) -> list[str]: ...


class NativeNodeOrdering:
    """The Rust node index."""

    def __init__(self, policy: str = "fair", weights: Mapping[str, float] | None = None) -> None:
        self._index = NodeIndex(policy, dict(weights) if weights else None)
        # Bound once: these run for every allocation.
        self.upsert = self._index.upsert
        self.first_fit = self._index.first_fit
        self.closest_fits = self._index.closest_fits
        self.remove = self._index.remove
        self.set_reserved = self._index.set_reserved

    @property
    def policy(self) -> str:
        return self._index.policy

    def set_policy(self, policy: str, weights: Mapping[str, float] | None = None) -> None:
        self._index.set_policy(policy, dict(weights) if weights else None)

    def ordered(self) -> list[str]:
        return self._index.ordered()

    def score(self, node_id: str) -> float | None:
        return self._index.score(node_id)


class _PyNode:
    __slots__ = ("total", "available", "schedulable", "reserved", "score")

    def __init__(self, total: dict[str, int], available: dict[str, int], schedulable: bool, score: float) -> None:
        self.total = total
        self.available = available
        self.schedulable = schedulable
        self.reserved = False
        self.score = score

    def is_candidate(self, skip_reserved: bool) -> bool:
        """Whether new work may be placed on, or reserve, this node at all."""
        return self.schedulable and not (skip_reserved and self.reserved)


class PythonNodeOrdering:
    """The same order and filters in pure Python (for comparison)."""

    def __init__(self, policy: str = "fair", weights: Mapping[str, float] | None = None) -> None:
        self._nodes: dict[str, _PyNode] = {}
        self._order: list[tuple[float, str]] = []
        self._saturated: set[str] = set()
        self._policy = "fair"
        self._weights: dict[str, float] = dict(DEFAULT_WEIGHTS)
        self.set_policy(policy, weights)

    @property
    def policy(self) -> str:
        return self._policy

    def _score(self, total: Mapping[str, int], available: Mapping[str, int]) -> float:
        weighted = weight_sum = 0.0
        for name, weight in self._weights.items():
            tot = total.get(name, 0)
            if weight == 0.0 or tot == 0:
                continue
            weighted += weight * (1.0 - available.get(name, 0) / tot)
            weight_sum += weight
        usage = weighted / weight_sum if weight_sum > 0 else 0.0
        return usage if self._policy == "fair" else 1.0 - usage

    def upsert(self, node_id: str, total: Mapping[str, int], available: Mapping[str, int], schedulable: bool = True) -> None:
        score = self._score(total, available)
        node = self._nodes.get(node_id)
        if node is None:
            node = self._nodes[node_id] = _PyNode(dict(total), dict(available), schedulable, score)
            self._walked(node, node_id, True)
            return
        if node.score != score or _saturated(node.available) != _saturated(available):
            self._walked(node, node_id, False)
            node.available, node.score = dict(available), score
            self._walked(node, node_id, True)
        node.total, node.available, node.schedulable = dict(total), dict(available), schedulable

    def _walked(self, node: _PyNode, node_id: str, add: bool) -> None:
        # Like the native index, nodes with nothing available stay out of the walk.
        if _saturated(node.available):
            (self._saturated.add if add else self._saturated.discard)(node_id)
        elif add:
            bisect.insort(self._order, (node.score, node_id))
        else:
            del self._order[bisect.bisect_left(self._order, (node.score, node_id))]

    def remove(self, node_id: str) -> bool:
        node = self._nodes.pop(node_id, None)
        if node is None:
            return False
        self._walked(node, node_id, False)
        return True

    def set_reserved(self, node_id: str, reserved: bool) -> bool:
        node = self._nodes.get(node_id)
        if node is None:
            return False
        node.reserved = reserved
        return True

    def set_policy(self, policy: str, weights: Mapping[str, float] | None = None) -> None:
        policy = policy.lower() or "fair"
        if policy not in ("fair", "binpacking"):
            raise ValueError(f"unknown node sort policy {policy!r} (fair or binpacking)")
        self._policy = policy
        self._weights = dict(weights) if weights else dict(DEFAULT_WEIGHTS)
        for node in self._nodes.values():
            node.score = self._score(node.total, node.available)
        self._order = sorted(
            (node.score, node_id) for node_id, node in self._nodes.items() if not _saturated(node.available)
        )
        self._saturated = {node_id for node_id, node in self._nodes.items() if _saturated(node.available)}

    def first_fit(self, ask: Mapping[str, int], after: Cursor | None = None, skip_reserved: bool = True) -> Cursor | None:
        start = 0 if after is None else bisect.bisect_right(self._order, after)
        wanted = _wanted(ask)
        for i in range(start, len(self._order)):
            score, node_id = self._order[i]
            node = self._nodes[node_id]
            if node.is_candidate(skip_reserved) and _fits_in(wanted, node.total) and _fits_in(wanted, node.available):
                return score, node_id
        return None

    def closest_fits(self, ask: Mapping[str, int], limit: int, after: Cursor | None = None,
                     skip_reserved: bool = True) -> list[Cursor]:
        wanted = _wanted(ask)
        candidates = (
            (fit_in_score(wanted, node.available), node_id)
            for node_id, node in self._nodes.items()
            if node.is_candidate(skip_reserved) and _fits_in(wanted, node.total)
        )
        if after is not None:
            candidates = (candidate for candidate in candidates if candidate > after)
        return heapq.nsmallest(limit, candidates)

    def ordered(self) -> list[str]:
        return [node_id for _, node_id in sorted((n.score, i) for i, n in self._nodes.items())]

    def score(self, node_id: str) -> float | None:
        node = self._nodes.get(node_id)
        return None if node is None else node.score


def _saturated(available: Mapping[str, int]) -> bool:
    return all(v <= 0 for v in available.values())


def _wanted(ask: Mapping[str, int]) -> list[tuple[str, int]]:
    """The quantities a node must hold (zero and negative ones ask for nothing)."""
    return [(name, value) for name, value in ask.items() if value > 0]


def _fits_in(wanted: Iterable[tuple[str, int]], resources: Mapping[str, int]) -> bool:
    return all(value <= resources.get(name, 0) for name, value in wanted)


def fit_in_score(wanted: Iterable[tuple[str, int]], available: Mapping[str, int]) -> float:
    """YuniKorn's FitInScore, how far ``available`` is from fitting an ask's ``wanted``
    (name, quantity) pairs: per positive quantity, the missing fraction (0 = fits). Summed in
    the ask's order: the native index sums the same way, so equal scores stay equal."""
    score = 0.0
    for name, value in wanted:
        if value <= 0:
            continue
        missing = value - max(available.get(name, 0), 0)
        if missing > 0:
            score += missing / value
    return score


def make_node_ordering(
    policy: str = "fair", weights: Mapping[str, float] | None = None, *, native: bool | None = None
) -> NodeOrdering:
    """The ordering for ``policy``: native or pure Python as ``native`` says, or as the one
    native/pure switch (:mod:`pyscheduler.common.native`) says when it is None."""
    if native is None:
        native = native_switch.enabled()
    return NativeNodeOrdering(policy, weights) if native else PythonNodeOrdering(policy, weights)
