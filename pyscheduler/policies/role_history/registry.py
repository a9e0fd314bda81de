"""Every role history of a partition, by history key."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, nullcontext
from typing import Final

from pyscheduler.policies.role_history.file_format import SavedEntry
from pyscheduler.policies.role_history.history import RoleHistory

__all__ = ["SNAPSHOT_ENTRIES_PER_HOLD", "RoleHistories"]

#: Entries a snapshot walks per hold of the partition's lock.
SNAPSHOT_ENTRIES_PER_HOLD: Final = 2_000


class RoleHistories:
    """History keys -> :class:`RoleHistory`; a history is created by the first instance or ask
    of a role that uses it. Changed only under the owning partition's lock."""

    def __init__(self) -> None:
        self._histories: dict[str, RoleHistory] = {}
        #: Instances of a role that landed on the history node their ask targeted, and those
        #: that landed anywhere else (no history yet, no usable history node, escalated, or
        #: reported by the RM); asks sent to the normal node order by their placement timeout.
        self.history_placements = 0
        self.other_placements = 0
        self.escalations = 0
        # What the last snapshot saw of each history: its version and its entries, so a
        # snapshot (taken under the partition's lock) only rebuilds the histories that changed.
        self._saved: dict[str, tuple[int, list[SavedEntry]]] = {}

    def get(self, key: str) -> RoleHistory | None:
        return self._histories.get(key)

    def get_or_create(self, key: str) -> RoleHistory:
        history = self._histories.get(key)
        if history is None:
            history = self._histories[key] = RoleHistory(key)
        return history

    def __iter__(self) -> Iterator[RoleHistory]:
        return iter(list(self._histories.values()))

    def __len__(self) -> int:
        return len(self._histories)

    def node_state(self, node_id: str, online: bool) -> None:
        for history in self._histories.values():
            if node_id in history.nodes:
                history.node_state(node_id, online)

    # -- persistence ---------------------------------------------------------------------------------

    def changed_since_snapshot(self) -> bool:
        return len(self._saved) != len(self._histories) or any(
            self._saved[key][0] != history.version for key, history in self._histories.items()
        )

    def snapshot(self, lock: AbstractContextManager[object] | None = None,
                 entries_per_hold: int = SNAPSHOT_ENTRIES_PER_HOLD) -> list[SavedEntry]:
        """Every history's saved entries, by key. Only histories changed since the last
        snapshot are walked again. With the partition's ``lock`` given, it is taken for one
        chunk of histories (about ``entries_per_hold`` entries) at a time, so a large history
        never holds up the scheduling cycle for long; each history is read whole under it.
        Without it, the caller holds the lock."""
        hold: AbstractContextManager[object] = lock if lock is not None else nullcontext()
        with hold:
            keys = sorted(self._histories)
        saved: dict[str, tuple[int, list[SavedEntry]]] = {}
        position = 0
        while position < len(keys):
            walked = 0
            with hold:
                while position < len(keys) and walked < entries_per_hold:
                    key = keys[position]
                    position += 1
                    history = self._histories.get(key)
                    if history is None:
                        continue  # removed meanwhile
                    previous = self._saved.get(key)
                    if previous is not None and previous[0] == history.version:
                        saved[key] = previous
                        continue
                    saved[key] = (history.version, history.saved_entries())
                    walked += len(saved[key][1])
        with hold:
            self._saved = saved
        return [entry for key in keys if key in saved for entry in saved[key][1]]

    def restore(self, entries: Iterable[SavedEntry]) -> int:
        """Loads saved entries (each available again, used at its ``last_used``); returns how
        many were loaded. Caller holds the partition's lock."""
        count = 0
        for entry in entries:
            self.get_or_create(entry.key).add_entry(entry.node_id, entry.role, entry.last_used_ms * 1_000_000)
            count += 1
        return count
