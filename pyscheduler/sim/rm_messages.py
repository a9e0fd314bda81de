"""The SI messages the simulated RM sends, built from the workload's plans.

Pure functions of a plan (no RM state): a node of the simulated cluster, an application with
its tags, an ask (or a gang job's placeholder), a release. What the RM sends when, and what it
remembers of it, is :mod:`pyscheduler.sim.rm`'s business; how a plan becomes a message is this
module's, so a change of the SI or of the tags a simulated application carries lands here.
"""

from __future__ import annotations

from typing import Final

from pyscheduler.common.resources import MEMORY, VCORE, Resource
from pyscheduler.policies.role_history.settings import HISTORY_KEY_TAG, ROLE_TAG, TAG_PREFIX, PlacementPolicy
from pyscheduler.si import messages as si
from pyscheduler.sim.workload_types import AppPlan, AskPlan

__all__ = [
    "MAY_PREEMPT",
    "RM_ID",
    "USER",
    "ask_message",
    "new_application_message",
    "node_messages",
    "release_message",
]

RM_ID: Final = "sim"
USER: Final = "sim-user"

#: The late tenant's asks: they may preempt others, and opt in as victims themselves.
MAY_PREEMPT: Final = si.PreemptionPolicy(allow_preempt_self=True, allow_preempt_other=True)


def node_messages(count: int, memory: int, vcore: int) -> tuple[si.NodeInfo, ...]:
    """The simulated cluster: ``count`` nodes (``node-00000``, ...) of one size, created."""
    capacity = Resource({MEMORY: memory, VCORE: vcore})
    return tuple(
        si.NodeInfo(
            node_id=f"node-{i:05d}",
            action=si.NodeAction.CREATE,
            attributes={si.HOST_NAME: f"node-{i:05d}", si.INSTANCE_TYPE: "sim"},
            schedulable_resource=capacity,
        )
        for i in range(count)
    )


def new_application_message(app: AppPlan, *, role_history: bool) -> si.AddApplicationRequest:
    """The submission of one application; a gang job's carries its placeholders' total size,
    style and timeout."""
    return si.AddApplicationRequest(
        application_id=app.app_id,
        queue_name=app.queue,
        partition_name="default",
        ugi=si.UserGroupInformation(user=USER),
        tags=_service_tags(app, role_history),
        placeholder_ask=Resource({MEMORY: sum(a.memory for a in app.asks), VCORE: sum(a.vcore for a in app.asks)})
        if app.task_group else None,
        gang_scheduling_style=app.gang_style,
        execution_timeout_milli_seconds=round(app.gang_timeout * 1000),
    )


def _service_tags(app: AppPlan, role_history: bool) -> dict[str, str]:
    """A service's history key; with role history off, its roles placed anywhere."""
    if not app.history_key:
        return {}
    tags = {HISTORY_KEY_TAG: app.history_key}
    if not role_history:
        tags[f"{TAG_PREFIX}policy"] = PlacementPolicy.ANYWHERE.value
    return tags


def ask_message(app: AppPlan, ask: AskPlan, key: str, *, placeholder: bool = False) -> si.Allocation:
    """The SI ask for one planned ask under ``key``; the late tenant's asks may preempt; a
    gang job's members and placeholders carry its task group."""
    return si.Allocation(
        allocation_key=key,
        resource_per_alloc=Resource({MEMORY: ask.memory, VCORE: ask.vcore}),
        priority=app.priority,
        application_id=app.app_id,
        partition_name="default",
        allocation_tags={ROLE_TAG: ask.role} if ask.role else {},
        preemption_policy=MAY_PREEMPT if app.may_preempt else None,
        placeholder=placeholder,
        task_group_name=app.task_group,
    )


def release_message(app_id: str, key: str, termination: si.TerminationType, message: str) -> si.AllocationRelease:
    """The RM's release of one allocation."""
    return si.AllocationRelease(
        partition_name="default",
        application_id=app_id,
        termination_type=termination,
        message=message,
        allocation_key=key,
    )
