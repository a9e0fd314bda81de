"""Applications, their asks and allocations (YuniKorn's ApplicationDAOInfo, AllocationAskDAOInfo,
AllocationDAOInfo) and the application endpoints.

Locks: the partition's lock is held only while the applications' values are copied
(:mod:`pyscheduler.dao.views`), a chunk of applications at a time (each application is
consistent in itself, as YuniKorn reads each under its own lock); the JSON is built after it is
released. Nothing is changed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pyscheduler.dao._common import (
    INT32_MIN,
    build_chunked,
    cluster_id,
    find_partition,
    put,
    res_map,
    sorted_map,
    validate_queue_path,
)
from pyscheduler.dao.queue_position import Position, position_of, positions_by_app
from pyscheduler.dao.views import AllocationView, AppView, app_view
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
    from pyscheduler.objects.application import Application
    from pyscheduler.objects.partition import Partition
    from pyscheduler.objects.queue import Queue
    from pyscheduler.scheduler.context import ClusterContext
    from pyscheduler.scheduler.read_pacing import ReadPacer

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


# -- DAO builders (from views copied under the partition's lock; no lock held here) ----------------


def allocation_dao(alloc: AllocationView) -> dict[str, Any]:
    """AllocationDAOInfo of a placed allocation."""
    out: dict[str, Any] = {"allocationKey": alloc.allocation_key}
    put(out, "allocationTags", sorted_map(alloc.tags))
    # A member that took a placeholder's place was asked for when its placeholder was.
    request_time = alloc.placeholder_create_time_ns if alloc.placeholder_used else alloc.create_time_ns
    allocation_time = alloc.allocation_time_ns
    put(out, "requestTime", request_time)
    put(out, "allocationTime", allocation_time)
    put(out, "allocationDelay", allocation_time - request_time)
    put(out, "resource", res_map(alloc.resource))
    put(out, "priority", str(alloc.priority))
    put(out, "nodeId", alloc.node_id)
    put(out, "applicationId", alloc.application_id)
    put(out, "placeholder", alloc.placeholder)
    put(out, "placeholderUsed", alloc.placeholder_used)
    put(out, "preempted", alloc.preempted)
    put(out, "taskGroupName", alloc.task_group_name)
    put(out, "originator", alloc.originator)
    return out


def _allocation_log(ask: AllocationView) -> list[dict[str, Any]]:
    """``[{message, lastOccurrence, count}]`` oldest last occurrence first. The log keeps its
    entries in last-occurrence order; an entry has its time when the caller gave one."""
    entries = []
    for message, count, last in ask.log:
        entry: dict[str, Any] = {}
        put(entry, "message", message)
        put(entry, "lastOccurrence", int(last))
        put(entry, "count", int(count))
        entries.append(entry)
    # A stable sort: entries without a time keep the log's last-occurrence order.
    entries.sort(key=lambda e: e.get("lastOccurrence", 0))
    return entries


def ask_dao(ask: AllocationView) -> dict[str, Any]:
    """AllocationAskDAOInfo of a pending ask."""
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
    put(out, "triggeredPreemption", ask.triggered_preemption)
    # triggeredScaleUp: no autoscaler signal here.
    put(out, "originator", ask.originator)
    # An ask the cycle tried and refused has a log entry: that is the attempt we know of.
    put(out, "schedulingAttempted", bool(log))
    return out


def _placeholder_data(app: AppView) -> list[dict[str, Any]]:
    """PlaceholderDAOInfo per task group, by name."""
    out = []
    for name, count, minimum, replaced, timed_out in app.placeholder_data:
        entry: dict[str, Any] = {}
        put(entry, "taskGroupName", name)
        put(entry, "count", count)
        put(entry, "minResource", res_map(minimum))
        put(entry, "replaced", replaced)
        put(entry, "timedout", timed_out)
        out.append(entry)
    return out


def application_dao(app: AppView, position: Position | None = None) -> dict[str, Any]:
    """ApplicationDAOInfo; ``position``: its place in the next cycle's order when it has
    pending asks (pyscheduler's ``queuePosition``, issue 35)."""
    out: dict[str, Any] = {"applicationID": app.app_id}
    # YuniKorn's allocatedResource: the real allocations, placeholders apart.
    put(out, "usedResource", res_map(app.allocated - app.allocated_placeholder, prune=True))
    put(out, "maxUsedResource", res_map(app.max_allocated, prune=True))
    put(out, "pendingResource", res_map(app.pending, prune=True))
    out["partition"] = external_name(app.partition)
    # pyscheduler's addition: the RM (cluster) of the partition, so that two clusters'
    # ``default`` partitions stay apart in flat lists (the state dump).
    out["clusterId"] = cluster_id(app.partition)
    out["queueName"] = app.queue_path
    # pyscheduler's addition (issue 33 level 2): the member cluster a hub placed it in.
    put(out, "memberCluster", app.member_cluster)
    put(out, "submissionTime", app.submission_time_ns)
    # The first entry is the application's creation (New): YuniKorn logs transitions only.
    transitions = app.state_log[1:]
    finished = next((t for s, t in transitions if s in _FINISHED_STATES), 0)
    put(out, "finishedTime", finished)
    put(out, "requests", [ask_dao(ask) for ask in app.asks if not ask.allocated])
    put(out, "allocations", [allocation_dao(a) for a in app.allocations])
    put(out, "applicationState", app.state.value)
    put(out, "user", app.user)
    put(out, "groups", list(app.groups))
    put(out, "rejectedMessage", app.rejected_message)
    put(out, "stateLog", [{"time": t, "applicationState": s.value} for s, t in transitions])
    put(out, "placeholderData", _placeholder_data(app))
    put(out, "hasReserved", bool(app.reservations))
    put(out, "reservations", list(app.reservations))
    # YuniKorn keeps the minimum int32 priority while no ask is pending.
    max_priority = app.max_ask_priority
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
            history[key] = tracked
    out["resourceHistory"] = history
    if position is not None:
        # pyscheduler's addition (issue 35), absent without pending asks: YuniKorn clients
        # ignore unknown fields.
        out["queuePosition"] = {"inQueue": position.in_queue, "inPartition": position.in_partition}
    return out


def _daos(partition: Partition, apps: Iterable[Application], pacer: ReadPacer | None = None) -> list[dict[str, Any]]:
    """ApplicationDAOInfo of ``apps`` by id. The caller listed them under the partition's lock;
    their values are copied under it a chunk at a time and built after."""
    listed = sorted(apps, key=lambda a: a.app_id)
    # The partition's order once per request, not per application (queue_position), and only
    # when some listed application has pending asks.
    with partition.lock:
        positions = positions_by_app(partition) if any(app.asks for app in listed) else {}
    if not positions:
        return build_chunked(partition.lock, listed, lambda app: app_view(partition, app), application_dao, pacer)
    return build_chunked(partition.lock, listed, lambda app: app_view(partition, app),
                         lambda view: application_dao(view, positions.get(view.app_id)), pacer)


def all_application_daos(partition: Partition, pacer: ReadPacer | None = None) -> list[dict[str, Any]]:
    """Live, completed and rejected applications of a partition (the state dump's list)."""
    with partition.lock:
        tables = [
            list(partition.applications.values()),
            list(partition.completed_applications.values()),
            list(partition.rejected_applications.values()),
        ]
    return [dao for table in tables for dao in _daos(partition, table, pacer)]


# -- endpoints ------------------------------------------------------------------------------------


def _queue_of(partition: Partition, queue_name: str) -> Queue:
    queue = partition.get_queue(queue_name) if queue_name else None
    if queue is None:
        raise NotFound(QUEUE_NOT_FOUND)
    return queue


def _queue_apps(queue: Queue) -> list[Application]:
    return list(queue.applications.values())


def queue_applications(ctx: ClusterContext, partition: str, queue_name: str) -> list[dict[str, Any]]:
    """``/partition/{p}/queue/{q}/applications``: the queue's live applications."""
    validate_queue_path(queue_name)
    part = find_partition(ctx, partition)
    with part.lock:
        queue = _queue_of(part, queue_name)
        apps = _queue_apps(queue)
    return _daos(part, apps, ctx.read_pacer)


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
            app = queue.applications.get(app_id)
        if app is None:
            raise NotFound(APPLICATION_NOT_FOUND)
        view = app_view(part, app)
        position = position_of(part, app_id)[0] if app.asks else None
    return application_dao(view, position)


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
    return _daos(part, apps, ctx.read_pacer)


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
    return _daos(part, apps, ctx.read_pacer)
