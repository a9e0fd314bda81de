"""What a partition tells its RM: releases, termination types, and the outbox that carries them.

Plain data, no partition logic. :class:`Released` is one allocation the core released, to be
sent as an ``AllocationRelease``; the termination-type constants are the SI's, named for the
partition's code; :data:`TERMINATION_DETAIL` maps them to the APP REMOVE event's change detail.
:class:`Outbox` collects, under the partition's lock, everything the RM must hear about once
that lock is released (:mod:`pyscheduler.scheduler.rm_delivery` sends it). All of these are
importable from :mod:`pyscheduler.objects.partition` as well.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from pyscheduler.si.events import EventChangeDetail
from pyscheduler.si.messages import UpdateContainerSchedulingStateRequest
from pyscheduler.objects.allocation import Allocation
from pyscheduler.objects.application import StateUpdate

__all__ = [
    "Outbox",
    "PLACEHOLDER_REPLACED",
    "PREEMPTED_BY_SCHEDULER",
    "Released",
    "STOPPED_BY_RM",
    "TERMINATION_DETAIL",
    "TIMEOUT",
]


@dataclass(frozen=True)
class Released:
    """An allocation the core released, to report to the RM (``AllocationRelease``)."""

    application_id: str
    allocation_key: str
    termination_type: int
    message: str
    #: The ask that preempted it (PREEMPTED_BY_SCHEDULER by an ask; empty otherwise).
    preemptor_application_id: str = ""
    preemptor_allocation_key: str = ""


#: SI termination type -> the change detail of the APP REMOVE event.
TERMINATION_DETAIL: dict[int, EventChangeDetail] = {
    0: EventChangeDetail.ALLOC_CANCEL,
    1: EventChangeDetail.ALLOC_CANCEL,
    2: EventChangeDetail.ALLOC_TIMEOUT,
    3: EventChangeDetail.ALLOC_PREEMPT,
    4: EventChangeDetail.ALLOC_REPLACED,
}
STOPPED_BY_RM = 1
TIMEOUT = 2
PREEMPTED_BY_SCHEDULER = 3
PLACEHOLDER_REPLACED = 4


@dataclass
class Outbox:
    """What the RM must hear about once the partition's lock is released: state updates, new
    allocations, releases and asks' scheduling states (skipped or failed, with their code),
    each collected under the partition's lock as it happens.

    ``sending`` orders the deliveries: whoever takes the outbox sends what it took before anyone
    else may take more, so a release can never reach the RM ahead of the "new" of the same
    allocation taken by another thread (the RM would keep an allocation the core released).
    """

    updates: list[StateUpdate] = field(default_factory=list)
    allocated: list[Allocation] = field(default_factory=list)
    released: list[Released] = field(default_factory=list)
    scheduling_states: list[UpdateContainerSchedulingStateRequest] = field(default_factory=list)
    sending: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)

    def add_update(self, update: StateUpdate) -> None:
        # A method, not a bound list.append: take() replaces the lists.
        self.updates.append(update)

    def take(self) -> tuple[list[StateUpdate], list[Allocation], list[Released],
                            list[UpdateContainerSchedulingStateRequest]]:
        taken = self.updates, self.allocated, self.released, self.scheduling_states
        self.updates, self.allocated, self.released, self.scheduling_states = [], [], [], []
        return taken
