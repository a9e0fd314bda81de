"""What the RM hears about an ask that waits: YuniKorn's request events and, with the same
text, the ask's scheduling state (``update_container_scheduling_state``) with a typed
:class:`~pyscheduler.si.messages.SchedulingReason`, so an RM acts on the code and never on the
prose.

Each report goes out at the request event's pace: the quota ones when the check starts failing
(the caller keeps the edge flag on the ask), the node ones at most once per ask every
:data:`PREDICATES_EVENT_INTERVAL` (YuniKorn's per-ask rate limiter, burst 1). The states wait
in the partition's outbox and reach the RM once its lock is released, as every other outcome.
Called by the scheduling cycle under the partition's lock, on failure paths only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from pyscheduler.common.resources import Resource
from pyscheduler.objects.allocation import Allocation
from pyscheduler.objects.partition import Partition
from pyscheduler.si.messages import ContainerSchedulingState, SchedulingReason, UpdateContainerSchedulingStateRequest

__all__ = [
    "PREDICATES_EVENT_INTERVAL",
    "no_member_cluster",
    "no_node_fits",
    "over_queue_headroom",
    "over_user_quota",
    "predicates_failed",
    "required_node_refuses",
]

#: Seconds between two "unschedulable" reports of one ask (YuniKorn: 15 s, burst 1).
PREDICATES_EVENT_INTERVAL: Final = 15.0
_SKIPPED: Final = ContainerSchedulingState.SKIPPED
_FAILED: Final = ContainerSchedulingState.FAILED


def over_user_quota(partition: Partition, app_id: str, ask: Allocation, headroom: Resource | None) -> None:
    """The ask's user (or group) check started failing: SKIPPED, USER_QUOTA."""
    message = partition.events.app.request_exceeds_user_quota(ask.allocation_key, app_id, headroom, ask.resource)
    _tell(partition, app_id, ask.allocation_key, _SKIPPED, SchedulingReason.USER_QUOTA, message)


def over_queue_headroom(partition: Partition, app_id: str, ask: Allocation, headroom: Resource | None,
                        queue_path: str) -> None:
    """The ask's queue headroom check started failing: SKIPPED, QUEUE_QUOTA."""
    message = partition.events.app.request_exceeds_queue_headroom(
        ask.allocation_key, app_id, headroom, ask.resource, queue_path)
    _tell(partition, app_id, ask.allocation_key, _SKIPPED, SchedulingReason.QUEUE_QUOTA, message)


def predicates_failed(partition: Partition, app_id: str, ask: Allocation, failures: Mapping[str, int],
                      now: float) -> None:
    """The RM's predicates refused every node that had room (``failures``: each reason with how
    many nodes gave it): FAILED, PREDICATES, rate-limited (``now``: monotonic seconds)."""
    if _due(ask.predicates_event_at, now):
        ask.predicates_event_at = now
        message = partition.events.app.request_predicates_failed(ask.allocation_key, app_id, failures, ask.resource)
        _tell(partition, app_id, ask.allocation_key, _FAILED, SchedulingReason.PREDICATES, message)


def no_node_fits(partition: Partition, app_id: str, ask: Allocation, now: float) -> None:
    """No node had room for the ask: FAILED, NO_NODE_FITS, rate-limited with the predicates'
    report (one limiter: whichever comes first)."""
    if _due(ask.predicates_event_at, now):
        ask.predicates_event_at = now
        message = partition.events.app.request_no_node_fits(ask.allocation_key, app_id, ask.resource)
        _tell(partition, app_id, ask.allocation_key, _FAILED, SchedulingReason.NO_NODE_FITS, message)


def no_member_cluster(partition: Partition, app_id: str, ask: Allocation, reason: str, now: float) -> None:
    """The ask's application waits for a member cluster (pyscheduler.scheduler.cluster_choice:
    no cluster has room for the whole of it, or none is allowed): FAILED, NO_NODE_FITS with
    ``reason``, rate-limited with the node reports."""
    if _due(ask.predicates_event_at, now):
        ask.predicates_event_at = now
        message = f"Unschedulable request '{ask.allocation_key}': {reason}"
        partition.events.app.request_diagnostic(ask.allocation_key, app_id, message, ask.resource)
        _tell(partition, app_id, ask.allocation_key, _FAILED, SchedulingReason.NO_NODE_FITS, message)


def required_node_refuses(partition: Partition, app_id: str, ask: Allocation, node_id: str, now: float) -> None:
    """A reserved required-node ask fits neither its node nor by preemption: FAILED,
    REQUIRED_NODE, rate-limited on its own limiter."""
    if _due(ask.preemption_event_at, now):
        ask.preemption_event_at = now
        message = partition.events.app.request_required_node_refuses(ask.allocation_key, app_id, node_id, ask.resource)
        _tell(partition, app_id, ask.allocation_key, _FAILED, SchedulingReason.REQUIRED_NODE, message)


def _due(last: float | None, now: float) -> bool:
    return last is None or now - last >= PREDICATES_EVENT_INTERVAL


def _tell(partition: Partition, app_id: str, allocation_key: str, state: ContainerSchedulingState,
          code: SchedulingReason, reason: str) -> None:
    partition.outbox.scheduling_states.append(
        UpdateContainerSchedulingStateRequest(app_id, allocation_key, state, reason, code))
