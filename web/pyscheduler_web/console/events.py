"""``GET /ui/events``: the newest events of the event ring, newest first.

Query: ``type`` (``APP``, ``NODE``, ``QUEUE``, ``REQUEST``, ``USERGROUP``; all when absent),
``refresh`` (0, 5, 10 or 30: the page reloads itself every that many seconds through a
``<meta http-equiv="refresh">``, no script). The page looks at the newest
:data:`SCAN_LIMIT` events the ring holds and shows up to :data:`SHOW_LIMIT` of them that match,
so one request costs the same however large the ring is configured. Tracking disabled is the
API's answer (500 ``Event tracking is disabled``) as a page; an unknown ``type`` is a 400.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Final

from flask import Response, request

from pyscheduler.si.events import EventChangeDetail, EventChangeType, EventRecordType
from pyscheduler_web.console.common import bp, partition_choices, render_page, selected_partition, service
from pyscheduler_web.http import HTTPError

__all__ = ["EventLine", "SCAN_LIMIT", "SHOW_LIMIT"]

SCAN_LIMIT: Final = 5000
SHOW_LIMIT: Final = 200
REFRESH_CHOICES: Final = (0, 5, 10, 30)
TYPE_CHOICES: Final = tuple(t.name for t in EventRecordType if t is not EventRecordType.UNKNOWN_EVENTRECORD_TYPE)


@dataclass(frozen=True)
class EventLine:
    event_id: int
    time: str
    type: str
    change: str
    detail: str
    object_id: str
    reference_id: str
    message: str
    resource: dict[str, int]


def _name(enum: type[EventRecordType] | type[EventChangeType] | type[EventChangeDetail], value: int) -> str:
    try:
        return enum(value).name
    except ValueError:
        return str(value)


def _utc(timestamp_ns: int) -> str:
    seconds, ns = divmod(timestamp_ns, 1_000_000_000)
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds)) + f".{ns // 1_000_000:03d}"


@bp.get("/ui/events")
def events_page() -> Response:
    wanted = request.args.get("type", "").upper()
    if wanted and wanted not in TYPE_CHOICES:
        raise HTTPError(400, f"unknown event type {wanted!r}: one of {', '.join(TYPE_CHOICES)}")
    try:
        refresh = int(request.args.get("refresh", "0"))
    except ValueError:
        refresh = -1
    if refresh not in REFRESH_CHOICES:
        raise HTTPError(400, f"refresh must be one of {', '.join(map(str, REFRESH_CHOICES))}")
    events = service().event_system
    if not events.tracking_enabled:
        raise HTTPError(500, "Event tracking is disabled")
    lowest, highest = events.id_range()
    start = max(lowest, highest - SCAN_LIMIT + 1)
    records = events.records(start, highest - start + 1) if len(events) else []
    lines: list[EventLine] = []
    for event_id, kind, change, detail, stamp, object_id, reference_id, message, resource in reversed(records):
        type_name = _name(EventRecordType, kind)
        if wanted and type_name != wanted:
            continue
        lines.append(EventLine(event_id, _utc(stamp), type_name, _name(EventChangeType, change),
                               _name(EventChangeDetail, detail), object_id, reference_id, message, dict(resource)))
        if len(lines) == SHOW_LIMIT:
            break
    choices = partition_choices()
    return render_page("console/events.html", choices=choices, partition=selected_partition(choices),
                       lines=lines, wanted=wanted, types=TYPE_CHOICES, refresh=refresh,
                       refresh_choices=REFRESH_CHOICES, lowest=lowest, highest=highest)
