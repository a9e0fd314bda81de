"""Applications, their asks and allocations (YuniKorn's ApplicationDAOInfo, AllocationAskDAOInfo,
AllocationDAOInfo) and the application endpoints.

Locks: the partition's lock is held while a partition's applications are read (it orders every
change to them, reservations included); each application is then read under its own lock, one
at a time (partition -> application). Nothing is changed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pyscheduler.dao._common import INT32_MIN, find_partition, put, res_map, sorted_map, validate_queue_path
from pyscheduler.dao.errors import (
    ALLOWED_ACTIVE_STATUSES,
    ALLOWED_QUEUE_STATES,
    ALLOWED_STATES,
    APPLICATION_NOT_FOUND,
    QUEUE_NOT_FOUND,
    BadRequest,
    NotFound,
)
from pyscheduler.objects.application_state import AppState
from pyscheduler.scheduler.context import external_name

if TYPE_CHECKING:
    from pyscheduler.objects.allocation import Allocation
    from pyscheduler.objects.application import Application
    from pyscheduler.objects.partition import Partition
    from pyscheduler.objects.queue import Queue
    from pyscheduler.scheduler.context import ClusterContext

__all__ = [
    "allocation_dao",
    "application",
    "application_dao",
    "applications_by_state",
    "ask_dao",
    "queue_application",
    "queue_applications",
    "queue_applications_by_state",
]

STATE_ACTIVE = "active"
STATE_REJECTED = "rejected"
STATE_COMPLETED = "completed"
#: The statuses ``?status=`` accepts on ``applications/active`` (lower case).
ACTIVE_STATUSES = frozenset(
    s.value.lower()
    for s in (
        AppState.NEW, AppState.ACCEPTED, AppState.RUNNING, AppState.COMPLETING, AppState.FAILING, AppState.RESUMING
    )
)
_FINISHED_STATES = (AppState.COMPLETED, AppState.FAILED, AppState.REJECTED)


# -- DAO builders ---------------------------------------------------------------------------------


def allocation_dao(alloc: Allocation) -> dict[str, Any]:
    """AllocationDAOInfo of a placed allocation (caller holds its application's lock)."""
    out: dict[str, Any] = {"allocationKey": alloc.allocation_key}
    put(out, "allocationTags", sorted_map(alloc.tags))
    request_time = alloc.create_time_ns
    allocation_time = alloc.allocation_time_ns
    put(out, "requestTime", request_time)
    put(out, "allocationTime", allocation_time)
    put(out, "allocationDelay", allocation_time - request_time)
    put(out, "resource", res_map(alloc.resource))
    put(out, "priority", str(alloc.priority))
    put(out, "nodeId", alloc.node_id)
    put(out, "applicationId", alloc.application_id)
    put(out, "placeholder", alloc.placeholder)
    # placeholderUsed and preempted: no placeholder replacement or preemption here yet.
    put(out, "taskGroupName", alloc.task_group_name)
    put(out, "originator", alloc.originator)
    return out


def _allocation_log(ask: Allocation) -> list[dict[str, Any]]:
    """``[{message, lastOccurrence, count}]`` oldest last occurrence first. The log keeps its
    entries in last-occurrence order; ``alloc_log_time`` has the time when the caller gave one."""
    times = ask.alloc_log_time
    entries = []
    for message, count in list(ask.alloc_log.items()):
        entry: dict[str, Any] = {}
        put(entry, "message", message)
        put(entry, "lastOccurrence", int(times.get(message, 0)))
        put(entry, "count", int(count))
        entries.append(entry)
    # A stable sort: entries without a time keep the log's last-occurrence order.
    entries.sort(key=lambda e: e.get("lastOccurrence", 0))
    return entries


def ask_dao(ask: Allocation) -> dict[str, Any]:
    """AllocationAskDAOInfo of a pending ask (caller holds its application's lock)."""
    out: dict[str, Any] = {"allocationKey": ask.allocation_key}
    put(out, "allocationTags", sorted_map(ask.tags))
    put(out, "requestTime", ask.create_time_ns)
    put(out, "resource", res_map(ask.resource))
    put(out, "priority", str(ask.priority))
    put(out, "requiredNodeId", ask.required_node)
    put(out, "applicationId", ask.application_id)
    put(out, "placeholder", ask.placeholder)
    put(out, "taskGroupName", ask.task_group_name)
    log = _allocation_log(ask)
    put(out, "allocationLog", log)
    # triggeredPreemption / triggeredScaleUp: no preemption or autoscaler signal here yet.
    put(out, "originator", ask.originator)
    # An ask the cycle tried and refused has a log entry: that is the attempt we know of.
    put(out, "schedulingAttempted", bool(log))
    return out


def _placeholder_data(asks: Iterable[Allocation], allocations: Iterable[Allocation]) -> list[dict[str, Any]]:
    """Per task group: the placeholders the application has now (asks and allocations)."""
    groups: dict[str, tuple[int, Any]] = {}
    for alloc in list(asks) + list(allocations):
        if not alloc.placeholder:
            continue
        count, minimum = groups.get(alloc.task_group_name, (0, alloc.resource))
        groups[alloc.task_group_name] = (count + 1, minimum)
    out = []
    for name in sorted(groups):
        count, minimum = groups[name]
        entry: dict[str, Any] = {}
        put(entry, "taskGroupName", name)
        put(entry, "count", count)
        put(entry, "minResource", res_map(minimum))
        out.append(entry)
    return out


def application_dao(partition: Partition, app: Application) -> dict[str, Any]:
    """ApplicationDAOInfo. The caller holds the partition's lock; the application is read under
    its own lock."""
    reservations = sorted(r.allocation_key for r in partition.reservations.of_app(app.app_id))
    with app.lock:
        queue = app.queue
        asks = app.sorted_asks()
        allocations = sorted(app.allocations.values(), key=lambda a: (a.allocation_time_ns, a.allocation_key))
        requests = [ask_dao(ask) for ask in asks if not ask.allocated]
        allocation_daos = [allocation_dao(a) for a in allocations]
        placeholders = _placeholder_data(asks, allocations)
        state_log = list(app.state_log)
        max_priority = app.max_ask_priority
        out: dict[str, Any] = {"applicationID": app.app_id}
        put(out, "usedResource", res_map(app.allocated, prune=True))
        put(out, "maxUsedResource", res_map(app.max_allocated(), prune=True))
        put(out, "pendingResource", res_map(app.pending, prune=True))
        out["partition"] = external_name(app.partition)
        out["queueName"] = queue.path if queue is not None else app.queue_name
        put(out, "submissionTime", app.submission_time_ns)
        # The first entry is the application's creation (New): YuniKorn logs transitions only.
        transitions = state_log[1:]
        finished = next((t for s, t in transitions if s in _FINISHED_STATES), 0)
        put(out, "finishedTime", finished)
        put(out, "requests", requests)
        put(out, "allocations", allocation_daos)
        put(out, "applicationState", app.state.value)
        put(out, "user", app.user)
        put(out, "groups", list(app.groups))
        put(out, "rejectedMessage", app.rejected_message)
        put(out, "stateLog", [{"time": t, "applicationState": s.value} for s, t in transitions])
        put(out, "placeholderData", placeholders)
        put(out, "hasReserved", bool(reservations))
        put(out, "reservations", reservations)
        # YuniKorn keeps the minimum int32 priority while no ask is pending.
        put(out, "maxRequestPriority", max_priority if max_priority is not None else INT32_MIN)
        started = next((t for s, t in transitions if s is AppState.RUNNING), 0)
        put(out, "startTime", started // 1_000_000)
        # A Go struct value: always encoded, even with omitempty; its empty maps are left out.
        history: dict[str, Any] = {}
        for key, tracked in (
            ("resourceUsage", app.used_history),
            ("preemptedResource", app.preempted_history),
            ("placeholderResource", app.placeholder_history),
        ):
            if tracked:
                history[key] = tracked.as_map()
        out["resourceHistory"] = history
    return out


def _daos(partition: Partition, apps: Iterable[Application]) -> list[dict[str, Any]]:
    return [application_dao(partition, app) for app in sorted(apps, key=lambda a: a.app_id)]


def all_application_daos(partition: Partition) -> list[dict[str, Any]]:
    """Live, completed and rejected applications of a partition (the state dump's list)."""
    with partition.lock:
        return (
            _daos(partition, partition.applications.values())
            + _daos(partition, partition.completed_applications.values())
            + _daos(partition, partition.rejected_applications.values())
        )


# -- endpoints ------------------------------------------------------------------------------------


def _queue_of(partition: Partition, queue_name: str) -> Queue:
    queue = partition.get_queue(queue_name) if queue_name else None
    if queue is None:
        raise NotFound(QUEUE_NOT_FOUND)
    return queue


def _queue_apps(queue: Queue) -> list[Application]:
    with queue.lock:
        return list(queue.applications.values())


def queue_applications(ctx: ClusterContext, partition: str, queue_name: str) -> list[dict[str, Any]]:
    """``/partition/{p}/queue/{q}/applications``: the queue's live applications."""
    validate_queue_path(queue_name)
    part = find_partition(ctx, partition)
    with part.lock:
        queue = _queue_of(part, queue_name)
        return _daos(part, _queue_apps(queue))


def queue_application(ctx: ClusterContext, partition: str, queue_name: str, app_id: str) -> dict[str, Any]:
    """``/partition/{p}/queue/{q}/application/{a}``: a live application of the queue (an empty
    queue name looks the application up in the whole partition, as YuniKorn does)."""
    part = find_partition(ctx, partition)
    with part.lock:
        if not queue_name:
            app = part.applications.get(app_id)
        else:
            validate_queue_path(queue_name)
            queue = _queue_of(part, queue_name)
            with queue.lock:
                app = queue.applications.get(app_id)
        if app is None:
            raise NotFound(APPLICATION_NOT_FOUND)
        return application_dao(part, app)


def application(ctx: ClusterContext, partition: str, app_id: str) -> dict[str, Any]:
    """``/partition/{p}/application/{a}``: a live application of the partition."""
    return queue_application(ctx, partition, "", app_id)


def _status_filter(status: str | None) -> str:
    wanted = (status or "").lower()
    if wanted and wanted not in ACTIVE_STATUSES:
        raise BadRequest(ALLOWED_ACTIVE_STATUSES)
    return wanted


def applications_by_state(
    ctx: ClusterContext, partition: str, state: str, status: str | None = None
) -> list[dict[str, Any]]:
    """``/partition/{p}/applications/{state}``: ``active`` (live, optionally one ``status``),
    ``rejected`` or ``completed`` (Completed, Failed and Expired kept after termination)."""
    part = find_partition(ctx, partition)
    kind = state.lower()
    with part.lock:
        if kind == STATE_ACTIVE:
            wanted = _status_filter(status)
            apps = [a for a in part.applications.values() if not wanted or a.state.value.lower() == wanted]
        elif kind == STATE_REJECTED:
            apps = list(part.rejected_applications.values())
        elif kind == STATE_COMPLETED:
            apps = list(part.completed_applications.values())
        else:
            raise BadRequest(ALLOWED_STATES)
        return _daos(part, apps)


def queue_applications_by_state(
    ctx: ClusterContext, partition: str, queue_name: str, state: str, status: str | None = None
) -> list[dict[str, Any]]:
    """``/partition/{p}/queue/{q}/applications/{state}``: only ``active`` is allowed."""
    part = find_partition(ctx, partition)
    validate_queue_path(queue_name)
    with part.lock:
        queue = _queue_of(part, queue_name)
        if state.lower() != STATE_ACTIVE:
            raise BadRequest(ALLOWED_QUEUE_STATES)
        wanted = _status_filter(status)
        apps = [a for a in _queue_apps(queue) if not wanted or a.state.value.lower() == wanted]
        return _daos(part, apps)
