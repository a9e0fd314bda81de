"""``events``: one line per event record (``/ws/v1/events/batch`` and the NDJSON stream). Pure.

A record's ``type``, ``eventChangeType`` and ``eventChangeDetail`` are the SI's numbers; they are
printed by their SI names (:mod:`pyscheduler.si.events`, the one list of them), a number the
list does not know as the number. The stream's first line (``InstanceUUID``) and its closing line
(``status_code``, ``message``) are not events: :func:`stream_line` says what they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyscheduler.si.events import EventChangeDetail, EventChangeType, EventRecordType

from pyscheduler_k8s.kubectl.units import format_resource, plain_resource, timestamp

__all__ = ["format_event", "stream_line"]


def _name(enum: type[EventRecordType] | type[EventChangeType] | type[EventChangeDetail], value: Any,
           prefix: str = "") -> str:
    try:
        name = enum(int(value)).name
    except (TypeError, ValueError):
        return str(value)
    return name.removeprefix(prefix) if prefix else name


def format_event(record: Mapping[str, Any]) -> str:
    """``2026-11-28T01:02:03.456Z  APP      ADD     APP_ALLOC  demo-app-1 (task-3)  ... vcore 0.44``."""
    kind = _name(EventRecordType, record.get("type", 0))
    if kind == "UNKNOWN_EVENTRECORD_TYPE":
        kind = "UNKNOWN"
    change = _name(EventChangeType, record.get("eventChangeType", 0))
    detail = _name(EventChangeDetail, record.get("eventChangeDetail", 0))
    parts = [timestamp(int(record.get("timestampNano", 0))), kind.ljust(9), change.ljust(6), detail.ljust(22),
             str(record.get("objectID", ""))]
    if record.get("referenceID"):
        parts[-1] += f" ({record['referenceID']})"
    if record.get("message"):
        parts.append(str(record["message"]))
    resource = plain_resource(record.get("resource"))
    if resource:
        parts.append(format_resource(resource))
    return " ".join(parts[:4]) + " " + "  ".join(parts[4:])


def stream_line(line: Mapping[str, Any]) -> tuple[str, str | None]:
    """What a line of the stream is: (``event``, its text), (``start``, None) for the instance
    line, or (``closed``, the server's reason) for the closing line."""
    if "InstanceUUID" in line and "type" not in line:
        return "start", None
    if "status_code" in line:
        reason = str(line.get("message", ""))
        if line.get("description"):
            reason += f": {line['description']}"
        return "closed", reason
    return "event", format_event(line)
