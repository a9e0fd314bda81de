"""A named group of a partition's nodes with its resource sums and its own node order: what a
member cluster (:mod:`.member_clusters`) and a topology domain (:mod:`.topology`) are to the
scheduling cycle, which searches a group's nodes only, in policy order, through
:attr:`NodeGroup.ordering`.

The sums (``total``, ``allocated``, ``available``: the last over the schedulable nodes) follow
the nodes through their index's calls (:meth:`NodeGroup.join`, :meth:`NodeGroup.node_changed`,
:meth:`NodeGroup.leave`), never a scan. The order may be made at the group's first search
(a maker instead of an order): a group nobody searches pays only for its sums. Callers hold the
partition's lock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from pyscheduler.common.resources import NO_RESOURCE, Resource
from pyscheduler.objects.node import Node
from pyscheduler.policies.node_ordering import NodeOrdering

__all__ = ["NodeGroup"]


class NodeGroup:
    """A named group of nodes: its nodes, resource sums and node order."""

    __slots__ = ("name", "nodes", "_ordering", "_make_ordering", "total", "allocated", "available", "pinned",
                 "_counted", "_sorted_ids")

    def __init__(self, name: str, ordering: NodeOrdering | None = None, *,
                 make_ordering: Callable[[], NodeOrdering] | None = None) -> None:
        """``ordering``: the group's node order; or ``make_ordering``, made at the group's first
        search and kept up to date from then on (a group nobody searches pays only for its sums)."""
        if (ordering is None) == (make_ordering is None):
            raise ValueError("a node group takes an ordering or a maker of one")
        self.name = name
        self.nodes: dict[str, Node] = {}
        self._ordering = ordering
        self._make_ordering = make_ordering
        self.total = NO_RESOURCE
        self.allocated = NO_RESOURCE
        #: Summed over the schedulable nodes.
        self.available = NO_RESOURCE
        #: The ids of the applications placed here.
        self.pinned: set[str] = set()
        #: Per node, what it adds to the sums now: (total, allocated, available).
        self._counted: dict[str, tuple[Resource, Resource, Resource]] = {}
        self._sorted_ids: list[str] | None = None

    @property
    def ordering(self) -> NodeOrdering:
        """The group's node order (made now from its nodes when it was deferred)."""
        if self._ordering is None:
            assert self._make_ordering is not None
            ordering = self._ordering = self._make_ordering()
            for node in self.nodes.values():
                ordering.upsert(node.node_id, node.total, node.available, node.schedulable)
                if node.reservations:
                    ordering.set_reserved(node.node_id, True)
        return self._ordering

    @property
    def has_ordering(self) -> bool:
        return self._ordering is not None

    def fits(self, need: Resource) -> bool:
        """Whether ``need`` fits in the group's available resources (summed over its nodes)."""
        return need.fits_in(self.available)

    def usage_after(self, need: Resource, weights: Mapping[str, float]) -> float:
        """The weighted mean share of the group in use once ``need`` is placed (the node
        order's score, for a group): binpacking prefers the highest, fair the lowest."""
        total, available = self.total, self.available
        weighted = weight_sum = 0.0
        for name, weight in weights.items():
            capacity = total.get(name, 0)
            if weight == 0.0 or capacity <= 0:
                continue
            weighted += weight * (1.0 - (available.get(name, 0) - need.get(name, 0)) / capacity)
            weight_sum += weight
        return weighted / weight_sum if weight_sum > 0 else 0.0

    def sorted_node_ids(self) -> list[str]:
        """The group's node ids in id order, kept between node additions and removals."""
        if self._sorted_ids is None:
            self._sorted_ids = sorted(self.nodes)
        return self._sorted_ids

    def fitting_node_ids(self, resource: Resource) -> Iterator[str]:
        """The group's schedulable nodes whose free room holds ``resource``, reserved or not."""
        cursor = self.ordering.first_fit(resource, skip_reserved=False)
        while cursor is not None:
            yield cursor[1]
            cursor = self.ordering.first_fit(resource, after=cursor, skip_reserved=False)

    # -- changed by the group's index only ------------------------------------------------------

    def join(self, node: Node) -> None:
        self.nodes[node.node_id] = node
        self._sorted_ids = None
        if self._ordering is not None:
            self._ordering.upsert(node.node_id, node.total, node.available, node.schedulable)
            if node.reservations:
                self._ordering.set_reserved(node.node_id, True)
        self.recount(node)

    def node_changed(self, node: Node) -> None:
        """A node of the group changed (its room, its schedulability)."""
        if self._ordering is not None:
            self._ordering.upsert(node.node_id, node.total, node.available, node.schedulable)
        self.recount(node)

    def set_reserved(self, node_id: str, reserved: bool) -> None:
        if self._ordering is not None:
            self._ordering.set_reserved(node_id, reserved)

    def set_policy(self, policy: str, weights: Mapping[str, float]) -> None:
        if self._ordering is not None:
            self._ordering.set_policy(policy, weights)

    def recount(self, node: Node) -> None:
        """The node's share of the sums follows its current values."""
        now = (node.total, node.allocated, node.available if node.schedulable else NO_RESOURCE)
        before = self._counted.get(node.node_id)
        if before is not None:
            if before[0] is not now[0]:
                self.total = self.total - before[0] + now[0]
            self.allocated = self.allocated - before[1] + now[1]
            self.available = self.available - before[2] + now[2]
        else:
            self.total = self.total + now[0]
            self.allocated = self.allocated + now[1]
            self.available = self.available + now[2]
        self._counted[node.node_id] = now

    def leave(self, node_id: str) -> None:
        self.nodes.pop(node_id, None)
        self._sorted_ids = None
        if self._ordering is not None:
            self._ordering.remove(node_id)
        before = self._counted.pop(node_id, None)
        if before is not None:
            self.total = self.total - before[0]
            self.allocated = self.allocated - before[1]
            self.available = self.available - before[2]
