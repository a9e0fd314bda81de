"""Nodes: capacity, what is allocated and occupied, and whether new work may land there.

``available = total - allocated - occupied``: ``allocated`` is what this scheduler placed,
``occupied`` what runs there without it (foreign pods). Every change emits its NODE event and
tells the node's listeners (the node index re-scores the node).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Final

from pyscheduler.common.resources import NO_RESOURCE, Resource
from pyscheduler.objects.allocation import Allocation
from pyscheduler.objects.locking import CHECK_LOCKS, check_held
from pyscheduler.objects.object_events import NodeEvents
from pyscheduler.si.vocabulary import HOST_NAME, INSTANCE_TYPE, NODE_PARTITION, RACK_NAME

__all__ = ["Node", "HOSTNAME", "RACKNAME", "NODE_PARTITION", "INSTANCE_TYPE"]

# The SI's node attribute names (one definition: :mod:`pyscheduler.si.vocabulary`).
HOSTNAME: Final = HOST_NAME
RACKNAME: Final = RACK_NAME

NodeListener = Callable[["Node"], None]


class Node:
    """One node of a partition (guarded by the partition's lock)."""

    # Slots: a cluster has tens of thousands of nodes (no per-node attribute dict).
    __slots__ = ("node_id", "_rm_attributes", "_reported_attributes", "attributes", "graph_lock", "_events", "_total",
                 "_occupied", "_allocated", "_available", "allocations", "reservations", "_listeners", "_schedulable")

    def __init__(
        self,
        node_id: str,
        capacity: Resource,
        attributes: Mapping[str, str],
        events: NodeEvents,
        *,
        schedulable: bool = True,
        occupied: Resource | None = None,
    ) -> None:
        self.node_id = node_id
        #: What the RM reported, and what the node reporter manager reported
        #: (pyscheduler.reporter); :attr:`attributes` is both, the RM's winning a shared key.
        self._rm_attributes = dict(attributes)
        self._reported_attributes: dict[str, str] = {}
        self.attributes: dict[str, str] = dict(attributes)
        #: The partition's lock, set when the partition adds the node (see
        #: pyscheduler.objects.locking).
        self.graph_lock: threading.RLock | None = None
        self._events = events
        self._total = capacity.pruned()
        # Resources are immutable: an idle node shares the empty ones, and its available is its
        # total (a 50,000-node cluster keeps three fewer dicts per node).
        #: NO_RESOURCE itself when nothing is occupied (most nodes: an identity test then).
        self._occupied = occupied or NO_RESOURCE
        self._allocated = NO_RESOURCE
        #: total - allocated - occupied, kept with them (read on every change by the node index
        #: and by every fit check).
        self._available = self._total - self._occupied if self._occupied is not NO_RESOURCE else self._total
        self.allocations: dict[str, Allocation] = {}
        #: Reserved allocation keys -> reserved resource (the scheduling cycle manages them).
        self.reservations: dict[str, Resource] = {}
        self._listeners: list[NodeListener] = []
        self._schedulable = schedulable
        # YuniKorn reports the schedulable state first, as the node is built.
        events.schedulable(node_id, schedulable)

    # -- read ----------------------------------------------------------------------------------

    @property
    def total(self) -> Resource:
        return self._total

    @property
    def allocated(self) -> Resource:
        return self._allocated

    @property
    def occupied(self) -> Resource:
        return self._occupied

    @property
    def available(self) -> Resource:
        return self._available

    @property
    def schedulable(self) -> bool:
        return self._schedulable

    @property
    def hostname(self) -> str:
        return self.attributes.get(HOSTNAME, "")

    @property
    def rackname(self) -> str:
        return self.attributes.get(RACKNAME, "")

    @property
    def instance_type(self) -> str:
        return self.attributes.get(INSTANCE_TYPE, "UNKNOWN")

    def fits(self, resource: Resource) -> bool:
        """Whether ``resource`` fits in what is available now."""
        return resource.fits_in(self.available)

    def fits_capacity(self, resource: Resource) -> bool:
        """Whether ``resource`` could ever fit (a reservation needs this)."""
        return resource.fits_in(self._total)

    # -- change --------------------------------------------------------------------------------

    def set_attributes(self, rm: Mapping[str, str] | None = None, reported: Mapping[str, str] | None = None) -> bool:
        """Replaces the RM's attributes and/or the reported ones (None: that layer unchanged);
        True when the node's attributes changed."""
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"node {self.node_id}")
        if rm is not None:
            self._rm_attributes = dict(rm)
        if reported is not None:
            self._reported_attributes = dict(reported)
        merged = {**self._reported_attributes, **self._rm_attributes}
        if merged == self.attributes:
            return False
        self.attributes = merged
        return True

    @property
    def reported_attributes(self) -> Mapping[str, str]:
        return self._reported_attributes

    def add_listener(self, listener: NodeListener) -> None:
        self._listeners.append(listener)

    def _changed(self) -> None:
        for listener in self._listeners:
            listener(self)

    def _refresh_available(self) -> None:
        """available = total - allocated - occupied, after any of them changed (most nodes have
        nothing occupied: one subtraction then, with the same result)."""
        available = self._total - self._allocated
        self._available = available - self._occupied if self._occupied is not NO_RESOURCE else available

    def add_allocation(self, alloc: Allocation) -> None:
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"node {self.node_id}")
        self.allocations[alloc.allocation_key] = alloc
        self._allocated = self._allocated + alloc.resource
        self._refresh_available()
        self._events.allocation_added(self.node_id, alloc.allocation_key, alloc.resource)
        self._changed()

    def remove_allocation(self, allocation_key: str) -> Allocation | None:
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"node {self.node_id}")
        alloc = self.allocations.pop(allocation_key, None)
        if alloc is None:
            return None
        self._allocated = self._allocated - alloc.resource
        self._refresh_available()
        self._events.allocation_removed(self.node_id, allocation_key, alloc.resource)
        self._changed()
        return alloc

    def resize_allocation(self, allocation_key: str, delta: Resource) -> None:
        """An allocation on this node changed size by ``delta`` (the RM resized a running pod);
        its application resizes the allocation itself."""
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"node {self.node_id}")
        if allocation_key not in self.allocations:
            return
        self._allocated = self._allocated + delta
        self._refresh_available()
        self._changed()

    def set_capacity(self, capacity: Resource) -> Resource:
        """Returns the change (new - old) so the partition can adjust its total."""
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"node {self.node_id}")
        capacity = capacity.pruned()
        delta = capacity - self._total
        if delta.is_zero():
            return delta
        self._total = capacity
        self._refresh_available()
        self._events.capacity(self.node_id, capacity)
        self._changed()
        return delta

    def set_occupied(self, occupied: Resource) -> None:
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"node {self.node_id}")
        if occupied == self._occupied:
            return
        self._occupied = occupied or NO_RESOURCE
        self._refresh_available()
        self._events.occupied(self.node_id, occupied)
        self._changed()

    def set_schedulable(self, schedulable: bool) -> None:
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"node {self.node_id}")
        if schedulable == self._schedulable:
            return
        self._schedulable = schedulable
        self._events.schedulable(self.node_id, schedulable)
        self._changed()

    def is_consistent(self) -> bool:
        """Allocated equals the sum of the allocations (a health check)."""
        total = Resource()
        for alloc in self.allocations.values():
            total = total + alloc.resource
        return total == self._allocated
