"""The saved form of a partition's role histories: versioned JSON lines.

One file per save, named ``rolehistory-%016x.json`` (the save time in ms, zero-padded hex, so
name order is time order: Slider's naming). One JSON object per line:

1. header: ``{"type": "header", "version": 1, "saved": ms, "savedate": "ISO 8601 UTC",
   "partition": name, "entries": count}``;
2. role map: ``{"type": "roles", "roles": {"name": id, ...}}``: entries refer to roles by id,
   and roles are matched **by name** when the file is read (Slider's ids drifted with the
   configuration; here a role is its name);
3. one line per (history key, node, role): ``{"type": "entry", "key": k, "node": n, "role": id,
   "active": bool, "last_used": ms}``. Only ``last_used`` and ``active`` persist; every counter
   is transient (Slider's rule). ``active``: an instance ran there when the file was saved; such
   an entry loads with ``last_used`` = the save time;
4. footer: ``{"type": "footer", "count": entries}``.

Reading is strict where a partial file could pass for a whole one: the header must come first
with a known version, a second header, a missing footer (the end of a truncated file), data
after the footer, a line that is not a JSON object, or a footer count that does not match the
entries are errors (:class:`HistoryFileError`), and the caller falls back to an older file. An
entry naming a role id missing from the role map is discarded and counted, not an error.

Writing builds each line with ``json``'s C string encoder and f-strings (100,000 entries in a
few tens of ms): the core does not depend on orjson.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from json.encoder import encode_basestring_ascii
from typing import Any, Final, NamedTuple

from pyscheduler.common.errors import SchedulerValueError

__all__ = [
    "FILE_PATTERN",
    "FORMAT_VERSION",
    "HistoryFileError",
    "LoadedFile",
    "SavedEntry",
    "decode",
    "encode",
    "file_name",
    "saved_ms_of",
]

FORMAT_VERSION: Final = 1
FILE_PATTERN: Final = re.compile(r"^rolehistory-([0-9a-f]{16})\.json$")


class HistoryFileError(SchedulerValueError):
    """A history file that must not be used (the loader falls back to an older one)."""


class SavedEntry(NamedTuple):
    """One (history key, node, role) as saved (a tuple: snapshots make 100,000 of them under
    the partition's lock, and a dataclass costs several times more to build)."""

    key: str
    node_id: str
    role: str
    #: An instance of the role ran on the node when the history was saved.
    active: bool
    #: Unix ms of the last time an instance stopped there (0: never).
    last_used_ms: int


@dataclass(slots=True)
class LoadedFile:
    saved_ms: int
    partition: str
    entries: list[SavedEntry] = field(default_factory=list)
    #: Entries whose role id is not in the file's role map.
    unknown_roles: int = 0


def file_name(saved_ms: int) -> str:
    return f"rolehistory-{saved_ms:016x}.json"


def saved_ms_of(name: str) -> int | None:
    """The save time of a history file's name; None for a name that is not one."""
    match = FILE_PATTERN.match(name)
    return int(match.group(1), 16) if match else None


def encode(partition: str, saved_ms: int, entries: Iterable[SavedEntry]) -> bytes:
    """The file for ``entries`` saved at ``saved_ms``."""
    role_ids: dict[str, int] = {}
    quoted: dict[str, str] = {}  # each key and node name JSON-encoded once
    lines: list[str] = []
    append = lines.append
    for key, node_id, role, active, last_used in entries:
        qk = quoted.get(key)
        if qk is None:
            qk = quoted[key] = encode_basestring_ascii(key)
        qn = quoted.get(node_id)
        if qn is None:
            qn = quoted[node_id] = encode_basestring_ascii(node_id)
        role_id = role_ids.get(role)
        if role_id is None:
            role_id = role_ids[role] = len(role_ids)
        append(f'{{"type":"entry","key":{qk},"node":{qn},"role":{role_id},'
               f'"active":{"true" if active else "false"},"last_used":{last_used}}}\n')
    savedate = datetime.fromtimestamp(saved_ms / 1000, tz=timezone.utc).isoformat()
    header = json.dumps({"type": "header", "version": FORMAT_VERSION, "saved": saved_ms, "savedate": savedate,
                         "partition": partition, "entries": len(lines)}, separators=(",", ":"))
    roles = json.dumps({"type": "roles", "roles": role_ids}, separators=(",", ":"))
    footer = json.dumps({"type": "footer", "count": len(lines)}, separators=(",", ":"))
    return "".join([header, "\n", roles, "\n", *lines, footer, "\n"]).encode("ascii")


def decode(data: bytes) -> LoadedFile:
    """The entries of a history file, or :class:`HistoryFileError` saying what is wrong with it."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise HistoryFileError(f"not UTF-8: {err}") from None
    records = _records(text)
    header = next(records, None)
    if header is None:
        raise HistoryFileError("empty file")
    if header.get("type") != "header":
        raise HistoryFileError("the first record is not a header")
    version = header.get("version")
    if version != FORMAT_VERSION:
        raise HistoryFileError(f"unsupported version {version!r} (this scheduler reads version {FORMAT_VERSION})")
    saved = header.get("saved")
    if not isinstance(saved, int) or isinstance(saved, bool) or saved < 0:
        raise HistoryFileError(f"bad save time {saved!r} in the header")
    loaded = LoadedFile(saved_ms=saved, partition=str(header.get("partition", "")))
    role_names: dict[int, str] = {}
    count = -1
    for record in records:
        kind = record.get("type")
        if count >= 0:
            raise HistoryFileError("data after the footer")
        if kind == "entry":
            entry = _entry(record, role_names, saved)
            if entry is None:
                loaded.unknown_roles += 1
            else:
                loaded.entries.append(entry)
        elif kind == "roles":
            role_names = _role_map(record.get("roles"))
        elif kind == "footer":
            count = record.get("count", -1)
            if count != len(loaded.entries) + loaded.unknown_roles:
                raise HistoryFileError(f"the footer counts {count!r} entries, the file has "
                                       f"{len(loaded.entries) + loaded.unknown_roles}")
        elif kind == "header":
            raise HistoryFileError("a second header")
        else:
            raise HistoryFileError(f"unknown record type {kind!r}")
    if count < 0:
        raise HistoryFileError("no footer (a truncated file)")
    return loaded


def _records(text: str) -> Iterator[dict[str, Any]]:
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as err:
            raise HistoryFileError(f"line {number} is not JSON: {err}") from None
        if not isinstance(record, dict):
            raise HistoryFileError(f"line {number} is not a JSON object")
        yield record


def _role_map(value: object) -> dict[int, str]:
    if not isinstance(value, dict):
        raise HistoryFileError("the role map is not an object")
    names: dict[int, str] = {}
    for name, role_id in value.items():
        if not isinstance(role_id, int) or isinstance(role_id, bool) or not name:
            raise HistoryFileError(f"bad role map entry {name!r}: {role_id!r}")
        if role_id in names:
            raise HistoryFileError(f"role id {role_id} is registered twice")
        names[role_id] = name
    return names


def _entry(record: dict[str, Any], role_names: dict[int, str], saved_ms: int) -> SavedEntry | None:
    key, node_id, role_id = record.get("key"), record.get("node"), record.get("role")
    active, last_used = record.get("active", False), record.get("last_used", 0)
    if not (isinstance(key, str) and key and isinstance(node_id, str) and node_id and isinstance(role_id, int)
            and isinstance(active, bool) and isinstance(last_used, int) and not isinstance(last_used, bool)
            and 0 <= last_used < 1 << 62):
        raise HistoryFileError(f"bad entry {record!r}")
    role = role_names.get(role_id)
    if role is None:
        return None
    return SavedEntry(key, node_id, role, active, saved_ms if active else last_used)
