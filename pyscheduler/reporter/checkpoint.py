"""The reporter manager's checkpoint: every plugin's last good report, so a restart does not
wipe what the plugins reported (Katalyst's checkpoint, with its checksum).

One JSON file, written whole under a temporary name, fsynced and renamed over the old one::

    {"version": 1, "checksum": "<sha256 of the data's canonical JSON>",
     "data": {"plugins": [{"name": "zones", "order": 0,
                           "report": {"node-1": [{"group": "", "version": "v1", "kind": "Node",
                                                  "fields": [{"type": 2, "name": "Labels",
                                                              "value": "<base64>"}]}]}}]}}

Field values are base64 (they are bytes: JSON from a well-behaved plugin, anything from
another). :func:`load` raises :class:`CheckpointError` for a file that does not parse, has
another version, or whose checksum does not match; a missing file is an empty checkpoint.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pyscheduler.common.errors import SchedulerValueError
from pyscheduler.reporter.content import FieldType, GroupVersionKind, ReportContent, ReportField
from pyscheduler.reporter.plugin import NodeReport

__all__ = ["CHECKPOINT_VERSION", "CheckpointError", "SavedPlugin", "load", "save"]

CHECKPOINT_VERSION: Final = 1


class CheckpointError(SchedulerValueError):
    """A checkpoint that cannot be used (the manager starts empty and says why)."""


@dataclass(frozen=True)
class SavedPlugin:
    name: str
    order: int
    report: NodeReport


def save(path: str | os.PathLike[str], plugins: Sequence[SavedPlugin]) -> None:
    data = {"plugins": [{"name": p.name, "order": p.order, "report": _report_json(p.report)} for p in plugins]}
    document = {"version": CHECKPOINT_VERSION, "checksum": _checksum(data), "data": data}
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    with open(tmp, "wb") as out:
        out.write(json.dumps(document, separators=(",", ":")).encode())
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, target)


def load(path: str | os.PathLike[str]) -> list[SavedPlugin]:
    target = Path(path)
    if not target.exists():
        return []
    try:
        document = json.loads(target.read_bytes())
    except (OSError, ValueError) as err:
        raise CheckpointError(f"{target}: unreadable ({err})") from None
    if not isinstance(document, dict) or document.get("version") != CHECKPOINT_VERSION:
        raise CheckpointError(f"{target}: not a version {CHECKPOINT_VERSION} reporter checkpoint")
    data = document.get("data")
    if not isinstance(data, dict) or _checksum(data) != document.get("checksum"):
        raise CheckpointError(f"{target}: checksum mismatch (a damaged checkpoint)")
    try:
        return [SavedPlugin(str(p["name"]), int(p["order"]), _report_of(p["report"])) for p in data["plugins"]]
    except (KeyError, TypeError, ValueError, binascii.Error) as err:
        raise CheckpointError(f"{target}: malformed ({type(err).__name__}: {err})") from None


def _checksum(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _report_json(report: NodeReport) -> dict[str, Any]:
    return {
        node_id: [
            {"group": c.gvk.group, "version": c.gvk.version, "kind": c.gvk.kind,
             "fields": [{"type": int(f.field_type), "name": f.name, "value": base64.b64encode(f.value).decode()}
                        for f in c.fields]}
            for c in contents
        ]
        for node_id, contents in report.items()
    }


def _report_of(data: dict[str, Any]) -> NodeReport:
    return {
        str(node_id): [
            ReportContent(
                GroupVersionKind(str(c["group"]), str(c["version"]), str(c["kind"])),
                tuple(ReportField(FieldType(int(f["type"])), str(f["name"]), base64.b64decode(f["value"], validate=True))
                      for f in c["fields"]),
            )
            for c in contents
        ]
        for node_id, contents in data.items()
    }
