"""The PodGroups the shim knows (Kubernetes' Workload API, :mod:`..podgroup`), the pods waiting
for theirs to appear, and what was last written in each group's ``PodGroupInitiallyScheduled``
condition. Behind the cache's one lock, no I/O: each method answers with what its caller does
next (pods to handle again, a status patch to write).

- :attr:`PodGroupCache.followed` is False while the API server has no PodGroups or the shim may
  not list them: pods naming a group are then ordinary pods (the shim as before the API).
- A pod of ours naming a group that is not known waits (:meth:`PodGroupCache.lookup_or_wait`); the group
  appearing (or PodGroups ceasing to be followed) hands back the waiting pods' uids, to be
  handled again.
- Conditions: a gang PodGroup's condition is written when it changes only; once True (here or
  read from the object) never again.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pyscheduler_k8s.podgroup import PodGroupSpec, podgroup_of

__all__ = ["ConditionWrite", "PodGroupCache"]

GroupKey = tuple[str, str]


@dataclass(frozen=True)
class ConditionWrite:
    """A condition to write on ``group``: ``since`` is its ``lastTransitionTime`` (kept while
    the status stays the same)."""

    group: PodGroupSpec
    scheduled: bool
    message: str
    since: str


class PodGroupCache:
    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock
        self.followed = False
        self._groups: dict[GroupKey, PodGroupSpec] = {}
        #: Pods waiting for their group: group -> uids, and uid -> group.
        self._waiting: dict[GroupKey, set[str]] = {}
        self._waits_for: dict[str, GroupKey] = {}
        #: Gang applications made from a group: application id -> group.
        self._gang_apps: dict[str, GroupKey] = {}
        #: The last condition written per group: (scheduled, message, since).
        self._written: dict[GroupKey, tuple[bool, str, str]] = {}

    # -- the PodGroups' list and watch ---------------------------------------------------------------

    def set_groups(self, items: Iterable[dict[str, Any]] | None) -> list[str]:
        """A fresh list (None: PodGroups not followed); the uids of the pods to handle again
        (their group appeared, or groups are no longer followed)."""
        with self._lock:
            self.followed = items is not None
            self._groups = {spec.key: spec for spec in map(podgroup_of, items or ())}
            ready = [key for key in self._waiting if key in self._groups or items is None]
            return self._release(ready)

    def group_event(self, kind: str, obj: dict[str, Any]) -> list[str]:
        """One watch event; the uids of the pods to handle again (see :meth:`set_groups`)."""
        spec = podgroup_of(obj)
        with self._lock:
            if kind == "DELETED":
                self._groups.pop(spec.key, None)
                self._written.pop(spec.key, None)
                return []
            self._groups[spec.key] = spec
            return self._release([spec.key])

    def _release(self, keys: list[GroupKey]) -> list[str]:
        uids: list[str] = []
        for key in keys:
            for uid in self._waiting.pop(key, ()):
                self._waits_for.pop(uid, None)
                uids.append(uid)
        return uids

    # -- the pods ------------------------------------------------------------------------------------

    def lookup(self, namespace: str, name: str) -> PodGroupSpec | None:
        with self._lock:
            return self._groups.get((namespace, name))

    def lookup_or_wait(self, uid: str, namespace: str, name: str) -> PodGroupSpec | None:
        """The group; None when it is not known, and then the pod waits for it (both in one
        step: a group appearing meanwhile hands the pod back)."""
        with self._lock:
            group = self._groups.get((namespace, name))
            if group is None:
                self._waiting.setdefault((namespace, name), set()).add(uid)
                self._waits_for[uid] = (namespace, name)
            return group

    def forget(self, uid: str) -> None:
        """The pod is gone: it waits no more."""
        with self._lock:
            key = self._waits_for.pop(uid, None)
            if key is not None:
                waiting = self._waiting.get(key)
                if waiting is not None:
                    waiting.discard(uid)
                    if not waiting:
                        del self._waiting[key]

    def gang_added(self, app_id: str, group: PodGroupSpec) -> None:
        """The gang application of ``group`` was added to the core (its condition is written)."""
        with self._lock:
            self._gang_apps[app_id] = group.key

    def application_left(self, app_id: str) -> None:
        with self._lock:
            self._gang_apps.pop(app_id, None)

    # -- the condition -------------------------------------------------------------------------------

    def condition(self, app_id: str, scheduled: bool, message: str, now: str) -> ConditionWrite | None:
        """The write that says ``scheduled``/``message`` on the group of gang ``app_id``; None
        when it is not a group's gang, the condition is True already, or it says that already."""
        with self._lock:
            key = self._gang_apps.get(app_id)
            group = self._groups.get(key) if key is not None else None
            if key is None or group is None or group.scheduled:
                return None
            last = self._written.get(key)
            if last is not None and (last[0] or last[:2] == (scheduled, message)):
                return None
            since = last[2] if last is not None and last[0] == scheduled else now
            self._written[key] = (scheduled, message, since)
            return ConditionWrite(group, scheduled, message, since)

    def condition_failed(self, write: ConditionWrite) -> None:
        """Writing ``write`` failed for good: the next call writes it again."""
        with self._lock:
            if self._written.get(write.group.key) == (write.scheduled, write.message, write.since):
                del self._written[write.group.key]

    def written(self, namespace: str, name: str) -> tuple[bool, str] | None:
        """(scheduled, message) last written on the group, for tests and the status."""
        with self._lock:
            last = self._written.get((namespace, name))
            return None if last is None else (last[0], last[1])
