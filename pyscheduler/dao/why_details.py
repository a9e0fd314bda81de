"""The numbers behind a why answer's codes (issue 35, docs/design/why.md): which user, group or
queue limit binds an ask, what its last preemption attempt came to, its allocation log, times.

Helpers of :mod:`pyscheduler.dao.why`, called under the partition's lock with live objects; they
read only public, side-effect-free queries of the objects (``UserGroupManager.limit_for_user``,
``user_usage``, ``group_for``; ``Queue.max_resource``, ``allocated``) and return plain values.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from pyscheduler.common.resources import Resource, readable
from pyscheduler.dao._common import res_map
from pyscheduler.scheduler.preemption.guaranteed import (
    PREEMPTION_DOES_NOT_HELP,
    PREEMPTION_GUARANTEES_CHECK_FAILED,
    PREEMPTION_MAX_ATTEMPTS_EXHAUSTED,
    PREEMPTION_PRECONDITIONS_FAILED,
    PREEMPTION_SHORTFALL,
)
from pyscheduler.scheduler.preemption.required_node import NO_VICTIM_FOR_REQUIRED_NODE

if TYPE_CHECKING:
    from pyscheduler.objects.allocation import Allocation
    from pyscheduler.objects.application import Application
    from pyscheduler.objects.partition import Partition
    from pyscheduler.objects.queue import Queue

__all__ = ["Stop", "iso_time", "log_dao", "preemption_dao", "queue_limit", "user_limit"]


class Stop(NamedTuple):
    """The first thing that stops an ask: its code, a sentence, the numbers."""

    code: str
    message: str
    details: dict[str, Any]


def iso_time(ns: int) -> str:
    """Nanoseconds since the epoch as ``2026-11-28T01:02:03Z``."""
    moment = datetime.datetime.fromtimestamp(ns / 1e9, tz=datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _levels(queue_path: str) -> list[str]:
    parts = queue_path.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def _limit_stop(kind: str, name: str, path: str, maximum: Resource, used: Resource, ask: Allocation) -> Stop:
    room = maximum.room_above(used)
    code = "USER_LIMIT" if kind == "user" else "GROUP_LIMIT"
    message = (f"the {kind} {name} has no room for it under its limit in queue {path}: used ({readable(used)}) "
               f"of the limit ({readable(maximum)}); the ask needs ({readable(ask.resource)})")
    return Stop(code, message, {"queue": path, kind: name, "limit": res_map(maximum), "used": res_map(used),
                                "headroom": res_map(room)})


def user_limit(partition: Partition, queue: Queue, app: Application, ask: Allocation,
               combined: Resource | None) -> Stop:
    """Which limit refuses ``ask`` (the ugm's ``headroom`` said one does): the user's, from the
    leaf up, then the group's; ``combined`` is that headroom, for the rare case where no single
    level explains it."""
    ugm = partition.ugm
    levels = list(reversed(_levels(queue.path)))
    for path in levels:
        limit = ugm.limit_for_user(app.user, path)
        if limit is None or limit.max_resources is None:
            continue
        used = ugm.user_usage(app.user, path)
        if not ask.resource.fits_in_max_undef(limit.max_resources.room_above(used)):
            return _limit_stop("user", app.user, path, limit.max_resources, used, ask)
    group = ugm.group_for(app.app_id, app.groups, queue.path)
    if group is not None:
        for path in levels:
            limit = ugm.limit_for_group(group, path)
            if limit is None or limit.max_resources is None:
                continue
            used = ugm.group_usage(group, path)
            if not ask.resource.fits_in_max_undef(limit.max_resources.room_above(used)):
                return _limit_stop("group", group, path, limit.max_resources, used, ask)
    return Stop("USER_LIMIT", f"the user {app.user}'s limits leave {readable(combined or Resource())}",
                {"queue": queue.path, "user": app.user, "limit": {}, "used": {}, "headroom": res_map(combined)})


def queue_limit(queue: Queue, ask: Allocation) -> Stop:
    """Which queue's max refuses ``ask`` (``queue.headroom()`` said one does), leaf first."""
    current: Queue | None = queue
    while current is not None:
        maximum = current.max_resource
        if maximum is not None:
            room = maximum.room_above(current.allocated)
            if not ask.resource.fits_in_max_undef(room):
                code = "QUEUE_MAX" if current is queue else "PARENT_MAX"
                message = (f"queue {current.path} has no room for it under its max: used ({readable(current.allocated)})"
                           f" of the max ({readable(maximum)}); the ask needs ({readable(ask.resource)})")
                return Stop(code, message, {"queue": current.path, "max": res_map(maximum),
                                            "used": res_map(current.allocated), "headroom": res_map(room)})
        current = current.parent
    headroom = queue.headroom()
    return Stop("QUEUE_MAX", f"queue {queue.path} has no room for the ask",
                {"queue": queue.path, "max": {}, "used": res_map(queue.allocated), "headroom": res_map(headroom)})


#: The allocation log's preemption entries and their PreemptionReason names; on a tie of last
#: occurrence (one attempt logs several), the earlier in this table wins (the more specific).
_PREEMPTION_LOG: Final = (
    (NO_VICTIM_FOR_REQUIRED_NODE, "NO_VICTIM", "No victim on its required node frees enough room"),
    (PREEMPTION_MAX_ATTEMPTS_EXHAUSTED, "MAX_ATTEMPTS_EXHAUSTED", "Preemption attempts of its queue were used up"),
    (PREEMPTION_GUARANTEES_CHECK_FAILED, "GUARANTEES_CHECK_FAILED",
     "Removing every eligible victim does not bring its queue within its guarantee"),
    (PREEMPTION_SHORTFALL, "SHORTFALL", "Preemption helped but is short of resources"),
    (PREEMPTION_PRECONDITIONS_FAILED, "PRECONDITIONS_FAILED",
     "The ask may not preempt now (opted out, too young, or checked recently)"),
    (PREEMPTION_DOES_NOT_HELP, "DOES_NOT_HELP", "Preemption did not help"),
)


def preemption_dao(ask: Allocation) -> dict[str, Any] | None:
    """The ask's last preemption attempt (``triggeredPreemption``, else its log), None without one."""
    if ask.triggered_preemption:
        return {"attempted": True, "code": "PLANNED",
                "message": "Preemption chose victims for it: it waits for them to go"}
    best: tuple[int, int] | None = None
    found: tuple[str, str] | None = None
    for rank, (entry, code, message) in enumerate(_PREEMPTION_LOG):
        if entry not in ask.alloc_log:
            continue
        key = (ask.alloc_log_time.get(entry, 0), -rank)
        if best is None or key > best:
            best, found = key, (code, message)
    if found is None:
        return None
    return {"attempted": True, "code": found[0], "message": found[1]}


def log_dao(ask: Allocation) -> list[dict[str, Any]]:
    """The allocation log, most recent last."""
    out = []
    for message, count in ask.alloc_log.items():
        entry: dict[str, Any] = {"message": message, "count": count}
        last = ask.alloc_log_time.get(message, 0)
        if last:
            entry["lastOccurrence"] = iso_time(last)
        out.append(entry)
    return out
