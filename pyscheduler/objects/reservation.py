"""Reservations: an ask that fits no node now holds one node until space frees up.

A reservation links an ask to a node. It is kept here (by ask and by node), on the node
(``node.reservations``) and in the node order (a reserved node is skipped by regular
allocation). A node holds at most one normal reservation; several are allowed only when all
are required-node reservations. Reserving and unreserving emit NODE ADD/REMOVE
NODE_RESERVATION events.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyscheduler.objects.allocation import Allocation
from pyscheduler.objects.node import Node
from pyscheduler.objects.object_events import NodeEvents
from pyscheduler.policies.node_ordering import NodeOrdering

__all__ = ["Reservation", "Reservations"]


@dataclass(frozen=True)
class Reservation:
    app_id: str
    allocation_key: str
    node_id: str
    #: For an ask with a required node (several may share a node).
    required: bool
    #: Monotonic time it was made.
    since: float
    #: Holds the node for an ask waiting for its role history node (placement timeout
    #: applies; made with ``required``, so only that node is tried and it is not displaced).
    history: bool = False


class Reservations:
    """The reservations of one partition (changed under the partition's lock)."""

    def __init__(self, events: NodeEvents, ordering: NodeOrdering) -> None:
        self._events = events
        self.ordering = ordering
        self.by_key: dict[str, Reservation] = {}
        self._by_node: dict[str, dict[str, Reservation]] = {}
        #: Told of every change of a node's reserved flag, as ``ordering`` is (the partition's
        #: member clusters keep node orders of their own).
        self.also_reserved: Callable[[str, bool], None] | None = None
        #: Reservations given up so far: a node may show again to the node search (the
        #: cycle's futile-shape memo, pyscheduler.scheduler.cycle_shapes, starts again).
        self.unreserved = 0

    def __len__(self) -> int:
        return len(self.by_key)

    @property
    def reserved_nodes(self) -> int:
        """How many nodes hold at least one reservation."""
        return len(self._by_node)

    def can_reserve(self, node: Node, required: bool) -> bool:
        """A node takes a normal reservation only when it has none; required-node
        reservations only share a node with each other. For normal reservations the node
        order applies the same rule (its reserved flag: ``closest_fits(skip_reserved=True)``)."""
        held = self._by_node.get(node.node_id)
        if not held:
            return True
        return required and all(r.required for r in held.values())

    def reserve(self, ask: Allocation, node: Node, required: bool, now: float, *, history: bool = False) -> Reservation:
        reservation = Reservation(ask.application_id, ask.allocation_key, node.node_id, required, now, history)
        self.by_key[ask.allocation_key] = reservation
        self._by_node.setdefault(node.node_id, {})[ask.allocation_key] = reservation
        node.reservations[ask.allocation_key] = ask.resource
        self.ordering.set_reserved(node.node_id, True)
        if self.also_reserved is not None:
            self.also_reserved(node.node_id, True)
        self._events.reserved(node.node_id, ask.allocation_key, ask.resource)
        return reservation

    def unreserve(self, allocation_key: str, node: Node | None) -> Reservation | None:
        reservation = self.by_key.pop(allocation_key, None)
        if reservation is None:
            return None
        self.unreserved += 1
        held = self._by_node.get(reservation.node_id, {})
        held.pop(allocation_key, None)
        if not held:
            self._by_node.pop(reservation.node_id, None)
            self.ordering.set_reserved(reservation.node_id, False)
            if self.also_reserved is not None:
                self.also_reserved(reservation.node_id, False)
        resource = None
        if node is not None:
            resource = node.reservations.pop(allocation_key, None)
        self._events.unreserved(reservation.node_id, allocation_key, resource)
        return reservation

    def on_node(self, node_id: str) -> list[Reservation]:
        return sorted(self._by_node.get(node_id, {}).values(), key=lambda r: r.allocation_key)

    def of_app(self, app_id: str) -> list[Reservation]:
        return sorted((r for r in self.by_key.values() if r.app_id == app_id), key=lambda r: r.allocation_key)

    def ordered(self) -> list[Reservation]:
        """Every reservation, oldest first (then by key): the order the cycle tries them."""
        return sorted(self.by_key.values(), key=lambda r: (r.since, r.allocation_key))
