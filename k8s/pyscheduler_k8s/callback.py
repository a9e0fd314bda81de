"""The core's callbacks to the shim (YuniKorn's ``scheduler_callback.go``): each turns the
core's answer into cache events and hands the work that follows (a binding, a deletion, a
condition, an event) to the module doing it. Nothing here decides by the core's prose: an ask's
state comes as :class:`~pyscheduler.si.messages.ContainerSchedulingState` with a
:class:`~pyscheduler.si.messages.SchedulingReason` code, a preemptor as the release's
``preemptor_allocation_key``, an application's state as :class:`.cache.task_state.CoreAppState`.

- ``update_allocation``: a new allocation is allocated in the cache and queued for binding; a
  rejected ask gets ``Unschedulable`` with the core's reason (unless its application was
  refused: that reason stays); a release is applied (a victim preempted gets a ``Preempted``
  event naming its preemptor, and is deleted like a placeholder replaced or timed out).
- ``update_application``: a gang's state (it runs: its members ask; it failed: they fail); a
  refused application's pods are held and failed with the core's reason.
- ``update_container_scheduling_state``: an ask skipped (its queue's or user's quota) or failed
  (no node fits, every node's predicates refused it, its required node refuses it) gets
  ``PodScheduled=False``/``Unschedulable`` with the core's message, once per message.
- A Kubernetes PodGroup's gang (:mod:`.podgroup_writes`): its ``PodGroupInitiallyScheduled``
  condition says True once the gang runs, False with the core's reason while an ask of it is
  skipped or failed, or its application was refused.
- ``send_event``: nothing to act on (why an ask waits comes typed, above); logged at debug.
- ``predicates``, ``score_nodes``, ``preemption_predicates``: answered by the cache
  (:mod:`.cache.filters`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Final

from pyscheduler.si import messages as si
from pyscheduler.si.events import EventRecord
from pyscheduler_k8s.binder import Binder
from pyscheduler_k8s.cache import ShimCache
from pyscheduler_k8s.cache.task_state import CoreAppState
from pyscheduler_k8s.core_client import CoreClient
from pyscheduler_k8s.event_recorder import EventRecorder
from pyscheduler_k8s.pod_writes import APPLICATION_REJECTED, PodWrites
from pyscheduler_k8s.podgroup_writes import PodGroupStatus

__all__ = ["ShimCallback"]

log = logging.getLogger(__name__)

#: The message on a pod the core skipped or failed without saying why.
_NO_REASON: Final = {
    si.SchedulingReason.QUEUE_QUOTA: "the ask does not fit in its queue",
    si.SchedulingReason.USER_QUOTA: "the ask exceeds its user's or group's limit",
    si.SchedulingReason.NO_NODE_FITS: "no node fits the pod",
    si.SchedulingReason.PREDICATES: "no node passes the pod's predicates",
    si.SchedulingReason.REQUIRED_NODE: "the pod's required node refuses it",
}
_PENDING_STATES: Final = frozenset({si.ContainerSchedulingState.SKIPPED, si.ContainerSchedulingState.FAILED})


class ShimCallback:
    """The shim's :class:`~pyscheduler.si.callback.ResourceManagerCallback` and its predicate
    plugins (see the module doc)."""

    def __init__(self, cache: ShimCache, core: CoreClient, binder: Binder, recorder: EventRecorder,
                 writes: PodWrites, *, component: str, groups: PodGroupStatus | None = None) -> None:
        """``groups``: the PodGroups' conditions (None: not written)."""
        self._cache = cache
        self._tasks = cache.tasks
        self._core = core
        self._binder = binder
        self._recorder = recorder
        self._writes = writes
        self._component = component
        self._groups = groups

    def update_allocation(self, response: si.AllocationResponse) -> None:
        checked_node = self._cache.cluster.checked_node
        for allocation in response.new:
            if self._tasks.allocated(allocation.allocation_key, allocation.node_id, checked_node):
                self._binder.bind(allocation.allocation_key, allocation.node_id)
        for rejected in response.rejected_allocations:
            if not self._tasks.is_held(rejected.allocation_key):  # a refused application's reason stays
                self._recorder.mark_unschedulable(rejected.allocation_key,
                                                  f"rejected by the scheduler: {rejected.reason}")
        for released in response.released:
            self._released_by_core(released)

    def _released_by_core(self, released: si.AllocationRelease) -> None:
        ended = self._tasks.released_by_core(released)
        if ended is None:
            return
        view, delete = ended
        if not delete:
            return
        if released.termination_type is si.TerminationType.PREEMPTED_BY_SCHEDULER:
            self._recorder.event(view.namespace, view.name, view.uid, "Normal", "Preempted",
                                 self._preempted_message(released))
        self._writes.submit(self._writes.delete_pod, view.uid)

    def _preempted_message(self, released: si.AllocationRelease) -> str:
        """The core's reason, with the preempting pod named by its namespace and name (the core
        names it by its uid, ``preemptor_allocation_key``)."""
        message = released.message or "preempted by the scheduler"
        uid = released.preemptor_allocation_key
        key = self._tasks.pod_key(uid) if uid else None
        if key is not None:
            named = f"{key} (uid {uid})"
            message = f"{message[:-len(uid)]}{named}" if message.endswith(uid) else f"{message} (by {named})"
        return f"Preempted by {self._component}: {message}"

    def update_application(self, response: si.ApplicationResponse) -> None:
        for updated in response.updated:
            state = CoreAppState.parse(updated.state)
            change = self._tasks.gang_event(updated.application_id, state) if state is not None else None
            if change is None:
                continue
            if change.runs:
                self._writes.submit(self._core.ask_all, list(change.members))
                if self._groups is not None:
                    self._groups.scheduled(updated.application_id)
            else:
                self._writes.submit(self._writes.fail_pods, [view.uid for view in change.members])
        for rejected in response.rejected:
            reason = f"application {rejected.application_id} rejected: {rejected.reason}"
            if self._groups is not None:
                self._groups.unschedulable(rejected.application_id, reason)
            uids = self._tasks.application_rejected(rejected.application_id, reason)
            # As YuniKorn's shim: the pods fail (Job controllers and alerts act on that).
            self._writes.submit(self._writes.fail_pods, uids, APPLICATION_REJECTED, reason)

    def update_node(self, response: si.NodeResponse) -> None:
        for rejected in response.rejected:
            log.warning("node %s rejected by the scheduler: %s", rejected.node_id, rejected.reason)

    def update_container_scheduling_state(self, request: si.UpdateContainerSchedulingStateRequest) -> None:
        """An ask skipped or failed this cycle: ``Unschedulable`` with the core's message (or,
        without one, what its code means)."""
        if request.state in _PENDING_STATES:
            message = request.reason or _NO_REASON.get(request.code, "no node fits the pod")
            self._recorder.mark_unschedulable(request.allocation_key, message)
            if self._groups is not None:
                self._groups.unschedulable(request.application_id, message)

    def send_event(self, events: Sequence[EventRecord]) -> None:
        """The core's events for the RM (its request events every ~2 s, totals clamped): the
        request events' reasons reach the pods typed, through
        :meth:`update_container_scheduling_state`, so none is read here."""
        log.debug("%d events from the core", len(events))

    def predicates(self, args: si.PredicatesArgs) -> str | None:
        return self._cache.filters.predicates(args)

    def score_nodes(self, args: si.ScoreNodesArgs) -> list[int]:
        return self._cache.filters.score_nodes(args)

    def preemption_predicates(self, args: si.PreemptionPredicatesArgs) -> si.PreemptionPredicatesResponse:
        return self._cache.filters.preemption_predicates(args)
