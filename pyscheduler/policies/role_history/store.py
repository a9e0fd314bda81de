"""Where role histories are saved: a directory named by a URL, one sub-directory per partition.

The URL goes through fsspec, so ``/var/lib/pyscheduler/rolehistory`` and ``file://...`` are
local, ``memory://...`` is fsspec's in-memory file system (tests), and ``s3://``, ``gs://``,
``hdfs://`` work where the user has installed the driver (s3fs, gcsfs, pyarrow).

**Saving** (:meth:`HistoryStore.save`) writes the whole file under a temporary name in the
same directory (``.rolehistory-<ms>.json.tmp``), then renames it to its final name. On a local
file system the data and then the directory are fsynced, so after a crash the newest file is
either complete or absent: a crash in the middle of a save loses nothing an earlier save
committed. On object stores a rename is a copy; a partial copy is still refused by the reader
(no footer), so the loader falls back. Every save gets a name newer than the newest file there,
even when the clock stepped back. After a save, all but the newest ``keep`` history files are
deleted, and temporary files of crashed saves with them.

**Loading** (:meth:`HistoryStore.load`) tries files newest first and uses the first one that
reads (:mod:`.file_format` says what a bad file is); a bad newer file is reported and left in
place (it is purged with the old ones by a later save). Entries last used longer than
``max_age`` ago are dropped (the seed's age-out). Nothing is raised for a missing, unreadable or
corrupt directory or file: the result lists what was skipped and why, and the caller logs it.
"""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass, field
from typing import Any, Final

import fsspec
from fsspec.implementations.local import LocalFileSystem

from pyscheduler.policies.role_history.file_format import (
    HistoryFileError,
    SavedEntry,
    decode,
    encode,
    file_name,
    saved_ms_of,
)

__all__ = ["DEFAULT_KEEP", "DEFAULT_MAX_AGE", "HistoryStore", "LoadResult", "MAX_FILE_BYTES"]

DEFAULT_KEEP: Final = 5
DEFAULT_MAX_AGE: Final = 7 * 24 * 3600.0
#: A history file larger than this is refused unread (about 20 times 1,000,000 entries' worth):
#: a hostile or broken file must not exhaust the scheduler's memory at start.
MAX_FILE_BYTES: Final = 256 * 1024 * 1024
_TMP_PATTERN: Final = re.compile(r"^\.rolehistory-[0-9a-f]{16}\.json\.tmp$")
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(slots=True)
class LoadResult:
    #: The entries to restore (aged-out entries dropped).
    entries: list[SavedEntry] = field(default_factory=list)
    #: The file they came from ("" when none could be read).
    path: str = ""
    #: Files tried before it that could not be used, with the reason.
    skipped: list[tuple[str, str]] = field(default_factory=list)
    #: Entries of the loaded file whose role was not in its role map.
    unknown_roles: int = 0
    #: Entries of the loaded file older than the maximum age.
    aged_out: int = 0


class HistoryStore:
    """The directory at ``url``; safe to use from one thread at a time per partition."""

    def __init__(self, url: str, *, keep: int = DEFAULT_KEEP, max_age: float = DEFAULT_MAX_AGE) -> None:
        if keep < 1:
            raise ValueError(f"keep must be at least 1, not {keep}")
        if not max_age > 0:
            raise ValueError(f"max_age must be positive, not {max_age}")
        self.url = url
        self.keep = keep
        self.max_age = max_age
        fs, root = fsspec.core.url_to_fs(url)
        self._fs: Any = fs
        self._root: str = root.rstrip("/") or "/"
        self._local = isinstance(fs, LocalFileSystem)
        self._last_saved_ms: dict[str, int] = {}

    def directory(self, partition: str) -> str:
        """The partition's sub-directory (its name with unsafe characters replaced)."""
        return posixpath.join(self._root, _UNSAFE.sub("_", partition) or "_")

    # -- saving ---------------------------------------------------------------------------------------

    def save(self, partition: str, now_ms: int, entries: list[SavedEntry]) -> str:
        """Writes one history file and purges old ones; returns its path. Raises OSError (or the
        file system's error) when the file could not be committed: nothing older is touched then."""
        directory = self.directory(partition)
        self._fs.makedirs(directory, exist_ok=True)
        names = self._history_files(directory)
        newest = max([self._last_saved_ms.get(partition, -1), *(ms for ms, _ in names)], default=-1)
        saved_ms = max(now_ms, newest + 1)
        data = encode(partition, saved_ms, entries)
        final = posixpath.join(directory, file_name(saved_ms))
        tmp = posixpath.join(directory, f".{file_name(saved_ms)}.tmp")
        if self._local:
            _write_local(tmp, final, data)
        else:
            with self._fs.open(tmp, "wb") as out:
                out.write(data)
            self._fs.mv(tmp, final)
        self._last_saved_ms[partition] = saved_ms
        self._purge(directory, keep_newest=[ms for ms, _ in names] + [saved_ms])
        return str(final)

    def _purge(self, directory: str, keep_newest: list[int]) -> None:
        kept = set(sorted(keep_newest, reverse=True)[: self.keep])
        for name in self._listing(directory):
            ms = saved_ms_of(name)
            if (ms is not None and ms not in kept) or _TMP_PATTERN.match(name):
                try:
                    self._fs.rm(posixpath.join(directory, name))
                except (OSError, FileNotFoundError):
                    pass  # gone already, or kept until the next save

    # -- loading --------------------------------------------------------------------------------------

    def load(self, partition: str, now_ms: int) -> LoadResult:
        """The newest readable history of the partition (see the module doc); never raises for
        what is in the directory."""
        result = LoadResult()
        directory = self.directory(partition)
        try:
            names = self._history_files(directory)
        except OSError as err:
            result.skipped.append((directory, f"cannot list the directory: {err}"))
            return result
        for _, name in sorted(names, reverse=True):
            path = posixpath.join(directory, name)
            try:
                loaded = decode(self._read(path))
            except (HistoryFileError, OSError, ValueError) as err:
                result.skipped.append((path, str(err) or type(err).__name__))
                continue
            oldest_ms = now_ms - int(self.max_age * 1000)
            result.entries = [e for e in loaded.entries if e.last_used_ms >= oldest_ms]
            result.aged_out = len(loaded.entries) - len(result.entries)
            result.unknown_roles = loaded.unknown_roles
            result.path = path
            self._last_saved_ms[partition] = max(self._last_saved_ms.get(partition, -1), loaded.saved_ms)
            break
        return result

    def _read(self, path: str) -> bytes:
        size = self._fs.size(path)
        if size is not None and size > MAX_FILE_BYTES:
            raise HistoryFileError(f"{size} bytes, more than the {MAX_FILE_BYTES} a history file may have")
        with self._fs.open(path, "rb") as source:
            data: bytes = source.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise HistoryFileError(f"more than the {MAX_FILE_BYTES} bytes a history file may have")
        return data

    # -- listing --------------------------------------------------------------------------------------

    def files(self, partition: str) -> list[str]:
        """The partition's history file names, newest first."""
        return [name for _, name in sorted(self._history_files(self.directory(partition)), reverse=True)]

    def _history_files(self, directory: str) -> list[tuple[int, str]]:
        found = []
        for name in self._listing(directory):
            ms = saved_ms_of(name)
            if ms is not None:
                found.append((ms, name))
        return found

    def _listing(self, directory: str) -> list[str]:
        if not self._fs.exists(directory):
            return []
        return [posixpath.basename(str(p).rstrip("/")) for p in self._fs.ls(directory, detail=False)]


def _write_local(tmp: str, final: str, data: bytes) -> None:
    """tmp + fsync + rename + fsync of the directory: the newest file is whole or absent."""
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, final)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    dir_fd = os.open(os.path.dirname(final) or ".", os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
