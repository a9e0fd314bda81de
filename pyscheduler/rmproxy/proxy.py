"""The RM proxy: the scheduler's API for resource managers (YuniKorn's ``SchedulerAPI``).

A resource manager (a Kubernetes or YARN shim, the simulator, a test) registers with a
callback and then sends updates. Every update is applied before the call returns, and its
outcome (accepted, rejected with a reason, state changes, allocations) arrives through the
callback. The only errors raised are the SI's: an unknown RM id, and on registration or
configuration update a configuration that does not parse or validate (nothing is changed).

**Totals past int64** (issue 31). Quantities an RM sends are checked when the message is built
(outside int64: ``ResourceError``), but their sums can still pass the bound: a second huge node,
asks or recovered allocations near int64 max. Such an update is applied whole with YuniKorn's
saturating arithmetic (the total is clamped at the bound, never an error), and the RM is told:
before the update call returns, its ``send_event`` gets one event per resource type clamped,
naming the type, the field and the object of the update carrying the largest quantity of it
(of equals the last), with that quantity as the event's resource: a node is a NODE event
(object: its id), an ask or allocation a REQUEST event (its key, the application as
reference), a gang's placeholder ask an APP event (its id). Change type and detail are NONE,
as for the core's other messages to the RM. YuniKorn only logs the saturation; clamping an RM's
numbers silently would leave it believing totals the core does not hold.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pyscheduler.common.resources import saturations
from pyscheduler.si import messages as si
from pyscheduler.si.callback import ResourceManagerCallback
from pyscheduler.si.events import EventChangeDetail, EventChangeType, EventRecord, EventRecordType
from pyscheduler.scheduler.context import ClusterContext

__all__ = ["RMProxy"]

log = logging.getLogger(__name__)

_INT64_BOUND = {"maximum": (1 << 63) - 1, "minimum": -(1 << 63)}


class RMProxy:
    def __init__(self, context: ClusterContext | None = None) -> None:
        self.context = context or ClusterContext()
        #: The registered RMs' ``send_event``, bound at registration (to tell them of clamped totals).
        self._send_event: dict[str, Callable[[Sequence[EventRecord]], None]] = {}

    def register_resource_manager(
        self, request: si.RegisterResourceManagerRequest, callback: ResourceManagerCallback
    ) -> si.RegisterResourceManagerResponse:
        """Registers (or re-registers, dropping its old partitions) an RM. Raises ConfigError."""
        self.context.register_rm(request, callback)
        self._send_event[request.rm_id] = callback.send_event
        return si.RegisterResourceManagerResponse()

    def update_allocation(self, request: si.AllocationRequest) -> None:
        """New asks, recovered or bound allocations, and releases."""
        with saturations() as clamped:
            self.context.update_allocation(request)
        if clamped:
            self._tell_clamped(request.rm_id, clamped, _allocation_carriers(request))

    def update_application(self, request: si.ApplicationRequest) -> None:
        """Applications to add (placed, then accepted or rejected) and to remove."""
        with saturations() as clamped:
            self.context.update_application(request)
        if clamped:
            self._tell_clamped(request.rm_id, clamped, _application_carriers(request))

    def update_node(self, request: si.NodeRequest) -> None:
        """Node actions: CREATE, UPDATE, DRAIN_NODE, DRAIN_TO_SCHEDULABLE, DECOMISSION, CREATE_DRAIN."""
        with saturations() as clamped:
            self.context.update_node(request)
        if clamped:
            self._tell_clamped(request.rm_id, clamped, _node_carriers(request))

    def update_configuration(self, request: si.UpdateConfigurationRequest) -> None:
        """Reloads queues.yaml and the extra settings. Raises ConfigError; the old config stays."""
        self.context.update_configuration(request)

    def stop(self) -> None:
        self.context.stop()

    # -- totals past int64 -------------------------------------------------------------------

    def _tell_clamped(self, rm_id: str, clamped: Mapping[str, str], carriers: list[_Carrier]) -> None:
        """One event per clamped type to the RM (see the module doc); the RM's own failure is
        logged, as for every callback."""
        send_event = self._send_event.get(rm_id)
        now = self.context.clock.now_ns()
        events = [event for name, bound in clamped.items() if (event := _clamped_event(name, bound, carriers, now))]
        if send_event is None or not events:
            return
        try:
            send_event(events)
        except Exception:  # the RM's own failure must not fail its update
            log.exception("RM %s callback send_event failed for %d clamped-total events", rm_id, len(events))


@dataclass(frozen=True, slots=True)
class _Carrier:
    """An object of an update and one of its resources: what a clamped total is traced to."""

    type: EventRecordType
    kind: str
    object_id: str
    reference_id: str
    field: str
    resource: Mapping[str, int]


def _node_carriers(request: si.NodeRequest) -> list[_Carrier]:
    return [
        _Carrier(EventRecordType.NODE, "node", info.node_id, "", name, resource)
        for info in request.nodes
        for name, resource in (("schedulable_resource", info.schedulable_resource),
                               ("reported_occupied", info.reported_occupied))
        if resource
    ]


def _allocation_carriers(request: si.AllocationRequest) -> list[_Carrier]:
    return [
        _Carrier(EventRecordType.REQUEST, "allocation" if alloc.node_id else "ask", alloc.allocation_key,
                 alloc.application_id, "resource_per_alloc", alloc.resource_per_alloc)
        for alloc in request.allocations
        if alloc.resource_per_alloc
    ]


def _application_carriers(request: si.ApplicationRequest) -> list[_Carrier]:
    return [
        _Carrier(EventRecordType.APP, "application", app.application_id, "", "placeholder_ask", app.placeholder_ask)
        for app in request.new
        if app.placeholder_ask
    ]


def _largest(name: str, carriers: list[_Carrier]) -> _Carrier | None:
    """The carrier of the largest quantity of ``name``, if any; of equals the last (objects are
    applied in order, so the last is the one whose addition passed the bound)."""
    having = [(abs(c.resource[name]), i, c) for i, c in enumerate(carriers) if c.resource.get(name)]
    return max(having, key=lambda t: t[:2])[2] if having else None


def _clamped_event(name: str, bound: str, carriers: list[_Carrier], now_ns: int) -> EventRecord | None:
    carrier = _largest(name, carriers)
    if carrier is None:  # nothing in the update carries the type (a total it only touched): logged
        return None
    quantity = carrier.resource[name]
    return EventRecord(
        carrier.type,
        EventChangeType.NONE,
        EventChangeDetail.DETAILS_NONE,
        carrier.object_id,
        carrier.reference_id,
        f"Resource '{name}' of {carrier.kind} '{carrier.object_id}' ({carrier.field} {quantity}) took a total "
        f"past the int64 {bound}: the total was clamped to {_INT64_BOUND[bound]} (saturating arithmetic) "
        "and the update applied",
        now_ns,
        {name: quantity},
    )
