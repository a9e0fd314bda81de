"""What the cluster context keeps of a registered RM, and how it delivers to it.

An RM registration (:class:`RMRegistration`) holds the RM's callback methods bound once
(:class:`~pyscheduler.si.callback.BoundCallbacks`): every delivery is a call of one of them
(:func:`deliver`), never a method looked up by name. :func:`deliver_outbox` turns what a
partition collected under its lock (:class:`~pyscheduler.objects.partition.Outbox`) into the
SI's messages and delivers them in a fixed order: application state updates, new
allocations, releases (naming their preemptor), then the asks' scheduling states (one request
each). Callers hold the outbox's ``sending`` lock and no object lock (see
:meth:`pyscheduler.scheduler.context.ClusterContext._flush`). An RM's failure is logged and
never stops the core.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from pyscheduler.objects.allocation import Allocation
from pyscheduler.objects.application import StateUpdate
from pyscheduler.objects.partition import Released
from pyscheduler.si import messages as si
from pyscheduler.si.callback import BoundCallbacks, ResourceManagerCallback

__all__ = ["RMRegistration", "RegisteredRM", "deliver", "deliver_outbox", "external_name"]

log = logging.getLogger(__name__)

_Message = TypeVar("_Message")


@functools.lru_cache(maxsize=256)
def external_name(name: str) -> str:
    """The RM's name of a partition (``[rm]name`` -> ``name``); remembered: every allocation
    message carries it."""
    return name.split("]", 1)[1] if name.startswith("[") and "]" in name else name


@dataclass(frozen=True, slots=True)
class RegisteredRM:
    """What the REST layer may know of a registered RM (a copy: changing it changes nothing)."""

    rm_id: str
    version: str
    policy_group: str
    #: The RM's build information as it registered it (YuniKorn: buildDate, buildVersion, ...).
    build_info: dict[str, str]
    #: The extra configuration (settings outside queues.yaml) last given by the RM.
    extra_config: dict[str, str]


@dataclass
class RMRegistration:
    """One registered RM, as the context keeps it."""

    rm_id: str
    callback: ResourceManagerCallback
    #: Its methods the core calls, bound once at registration. Among them the hooks: predicates
    #: (None: every node passes), preemption predicates (None: preemption takes its first
    #: candidate node), node scores (None: asks take the first node that fits).
    calls: BoundCallbacks
    policy_group: str
    checksum: str = ""
    version: str = ""
    build_info: Mapping[str, str] = field(default_factory=dict)
    #: The extra configuration of the registration or of the last update_configuration.
    extra_config: Mapping[str, str] = field(default_factory=dict)

    def info(self) -> RegisteredRM:
        return RegisteredRM(
            self.rm_id, self.version, self.policy_group, dict(self.build_info), dict(self.extra_config)
        )


def deliver(rm: RMRegistration, call: Callable[[_Message], None], message: _Message) -> None:
    """One message to one of the RM's bound callback methods (``rm.calls``)."""
    try:
        call(message)
    except Exception:  # the RM's own failure must not stop the scheduler
        log.exception("RM %s callback %s failed", rm.rm_id, getattr(call, "__name__", call))


def deliver_outbox(rm: RMRegistration, partition_name: str, updates: Sequence[StateUpdate],
                   allocated: Sequence[Allocation], released: Sequence[Released],
                   states: Sequence[si.UpdateContainerSchedulingStateRequest]) -> None:
    """What one partition (``partition_name``: its internal name) collected, to its RM, in the
    order of the module doc."""
    calls = rm.calls
    if updates:
        updated = tuple(
            si.UpdatedApplication(u.application_id, u.state, u.state_transition_timestamp, u.message)
            for u in updates
        )
        deliver(rm, calls.update_application, si.ApplicationResponse(updated=updated))
    if allocated:
        name = external_name(partition_name)
        new = tuple([_si_allocation(name, a) for a in allocated])
        deliver(rm, calls.update_allocation, si.AllocationResponse.of_new(new))
    if released:
        name = external_name(partition_name)
        deliver(rm, calls.update_allocation, si.AllocationResponse(released=tuple(_si_release(name, r) for r in released)))
    # Asks skipped or failed (one request each, as the SI's callback takes one).
    for state in states:
        deliver(rm, calls.update_container_scheduling_state, state)


def _si_allocation(partition_name: str, alloc: Allocation) -> si.Allocation:
    return si.Allocation.placed(
        alloc.allocation_key,
        alloc.tags,  # copied by the message
        alloc.resource,
        alloc.priority,
        alloc.node_id,
        alloc.application_id,
        partition_name,
        alloc.task_group_name,
        alloc.placeholder,
    )


def _si_release(partition_name: str, released: Released) -> si.AllocationRelease:
    return si.AllocationRelease(
        partition_name=partition_name,
        application_id=released.application_id,
        termination_type=si.TerminationType(released.termination_type),
        message=released.message,
        allocation_key=released.allocation_key,
        preemptor_application_id=released.preemptor_application_id,
        preemptor_allocation_key=released.preemptor_allocation_key,
    )
