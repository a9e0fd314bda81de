"""Why was it preempted (issue 35): ``GET /ws/v1/partition/{p}/application/{app}/preempted
?allocationKey=K``, who took an allocation's place and under which rule.

A victim carries its note (:mod:`pyscheduler.scheduler.preemption.note`: the preemptor's
application, ask and queue, the rule, its own queue) from the moment the cycle or the quota
enforcement chooses it; the note becomes the message of the APP REMOVE ALLOC_PREEMPT event that
records its end once the RM confirms it is gone. So the answer comes from:

1. the live allocation, while the RM has not confirmed yet (``released`` false);
2. else the event ring, newest first, read a chunk at a time (never the whole ring at once):
   the ALLOC_PREEMPT event of that application and key (``released`` true, ``time`` the event's).

404 when neither holds it: never preempted, or its event dropped from the bounded ring since
(the message says which event ids the ring still holds), or event tracking disabled.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from pyscheduler.dao._common import find_partition
from pyscheduler.dao.errors import BadRequest, NotFound
from pyscheduler.dao.why_details import iso_time
from pyscheduler.scheduler.preemption.note import PreemptionNote, parse_note
from pyscheduler.si.events import EventChangeDetail, EventChangeType, EventRecordType

if TYPE_CHECKING:
    from pyscheduler.scheduler.context import ClusterContext

__all__ = ["why_preempted"]

_KEY = re.compile(r"[A-Za-z0-9._:/@+=~-]{1,256}")
#: Events decoded per read of the ring, newest first.
_CHUNK = 4096


def _answer(app_id: str, key: str, note: PreemptionNote, released: bool, time_ns: int) -> dict[str, Any]:
    return {
        "applicationID": app_id,
        "allocationKey": key,
        "queueName": note.victim_queue,
        "preemptorApplicationID": note.preemptor_application_id,
        "preemptorAllocationKey": note.preemptor_allocation_key,
        "preemptorQueueName": note.preemptor_queue,
        "rule": note.rule,
        "released": released,
        "time": iso_time(time_ns) if time_ns else None,
    }


def why_preempted(ctx: ClusterContext, partition: str, app_id: str, allocation_key: str | None) -> dict[str, Any]:
    """The answer (see the module doc). 400: ``allocationKey`` missing or malformed; 404:
    unknown partition, or no preemption of it known."""
    if not allocation_key:
        raise BadRequest('"allocationKey" is required')
    if not _KEY.fullmatch(allocation_key):
        raise BadRequest('"allocationKey" must be an allocation key: 1 to 256 letters, digits or ._:/@+=~-')
    part = find_partition(ctx, partition)
    with part.lock:
        app = part.applications.get(app_id)
        alloc = app.allocations.get(allocation_key) if app is not None else None
        live = parse_note(alloc.preemption_note) if alloc is not None and alloc.preempted else None
    if live is not None:
        return _answer(app_id, allocation_key, live, False, 0)
    events = ctx.event_system
    if not events.tracking_enabled:
        raise NotFound(f"No preemption of allocation {allocation_key} is known: event tracking is disabled")
    events.flush(1.0)  # the events queued for the ring first (one still queued after 1 s: the next request)
    lowest, highest = events.id_range()
    app_type, remove = int(EventRecordType.APP), int(EventChangeType.REMOVE)
    preempt = int(EventChangeDetail.ALLOC_PREEMPT)
    end = highest + 1
    while end > lowest and len(events) > 0:
        start = max(lowest, end - _CHUNK)
        for record in reversed(events.records(start, end - start)):
            _id, typ, change, detail, timestamp, obj, ref, message, _res = record
            if typ == app_type and change == remove and detail == preempt and obj == app_id and ref == allocation_key:
                note = parse_note(message)
                if note is not None:
                    return _answer(app_id, allocation_key, note, True, timestamp)
        end = start
    raise NotFound(f"No preemption of allocation {allocation_key} of application {app_id} in the event history "
                   f"(it holds events {lowest} to {highest}; older ones were dropped)")
