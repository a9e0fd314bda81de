"""Futile shapes: within one partition's cycle, what an ask's twin already learnt about nodes.

A partition's cycle runs under its lock, so nothing the RM sends (nodes, allocations, releases)
changes the partition while it runs, and the cycle's own walk ends at its first allocation or
preemption. What else the walk changes before that is reservations: a new one only hides a
node from the node search (``skip_reserved``), an ask's reservation given up (a required-node
ask displacing normal reservations, an ask unreserved to take a new one) shows one again.

So an ask whose **node search** found no node at all, without the RM's predicates having been
asked about any node (no node had room; nodes the ask's role avoids are part of the shape), is
answered the same for every later ask of the same shape, until a reservation is given up: the
shape is the ask's resource, the nodes it avoids and the node order searched (the partition's;
member clusters and topology domains do not use this memo). The same holds for the **search for
a node to reserve**, when it found no candidate at all (not when the RM refused candidates:
the RM's predicates may tell asks apart, by pod spec, node selector or affinity).

Everything else an ask does in the cycle stays per ask: headroom and quota checks, role
history, its reports (the same reason as its twin, each at its own rate), and preemption, whose
preconditions (age, delay, allow-preemption flags, attempts already made) are the ask's own.
One :class:`FutileShapes` is made per partition per cycle; a reservation given up since the
last look empties it (:attr:`Reservations.unreserved`).
"""

from __future__ import annotations

from typing import Final

from pyscheduler.common.resources import Resource
from pyscheduler.objects.reservation import Reservations

__all__ = ["FutileShapes", "NO_AVOID", "ShapeKey"]

#: The nodes an ask without a role avoids.
NO_AVOID: Final[frozenset[str]] = frozenset()
#: An ask's shape for the partition's node order: its resource and the nodes it avoids.
ShapeKey = tuple[Resource, frozenset[str]]


class FutileShapes:
    """The shapes that found no node (:meth:`no_node`) and no node to reserve
    (:meth:`no_reservation`) in this partition's cycle so far; see the module doc."""

    __slots__ = ("_reservations", "_unreserved", "_no_node", "_no_reservation")

    def __init__(self, reservations: Reservations) -> None:
        self._reservations = reservations
        self._unreserved = reservations.unreserved
        self._no_node: set[ShapeKey] = set()
        self._no_reservation: set[ShapeKey] = set()

    def _current(self) -> None:
        if self._reservations.unreserved != self._unreserved:  # a node shows again: forget
            self._unreserved = self._reservations.unreserved
            self._no_node.clear()
            self._no_reservation.clear()

    def no_node(self, key: ShapeKey) -> bool:
        """Whether an ask of this shape already found no node with room in this cycle."""
        if not self._no_node:  # the common case on the path of an ask that is placed
            return False
        self._current()
        return key in self._no_node

    def found_no_node(self, key: ShapeKey) -> None:
        self._current()
        self._no_node.add(key)

    def no_reservation(self, key: ShapeKey) -> bool:
        """Whether an ask of this shape already found no node to reserve in this cycle."""
        if not self._no_reservation:
            return False
        self._current()
        return key in self._no_reservation

    def found_no_reservation(self, key: ShapeKey) -> None:
        self._current()
        self._no_reservation.add(key)
