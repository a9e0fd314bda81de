"""One history key's role history: node map, recent lists and outstanding placements.

- **Node map**: node id -> role -> :class:`NodeEntry`. Nodes stay in the map when they go
  away (offline), so an application that comes back after a node returns still finds it.
- **Recent lists**: per role, an ordered set of the nodes whose entry is *available* (no live
  instance, no pending ask headed there), newest ``lastUsed`` first, ties by node id: the
  order is deterministic and a node is never listed twice (Slider's list could hold a node
  twice). A node leaves its role's list when an instance lands or an ask targets it, and comes
  back (at its ``lastUsed`` place) when it is available again.
- **Outstanding placements**: by allocation key (asks have unique keys, so Slider's matching
  of allocations to requests by priority and fit is not needed): the node an ask targets and
  since when, so the placement timeout can send it to the normal node order.

:meth:`RoleHistory.choose` gives a pending ask its history node. The cycle tries the ask
there; if it does not fit, the ask waits for that node (as a reservation does) until the
placement timeout, then falls back to the normal node order (``default`` policy) or keeps
waiting (``strict``). Failures: a node with more recent failures of the role than the
threshold is skipped for it (not under ``strict``); recent failures are forgotten every
failure window.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from pyscheduler.policies.role_history.entry import NodeEntry
from pyscheduler.policies.role_history.file_format import SavedEntry
from pyscheduler.policies.role_history.settings import PlacementPolicy, RoleSettings, role_settings

__all__ = ["Placement", "RoleHistory"]


class Placement(NamedTuple):
    """What the history says about a pending ask (a tuple: one is made per pending ask and
    cycle, and a frozen dataclass costs several times more to build)."""

    #: The history node to try (None: the normal node order).
    node_id: str | None = None
    #: The ask left its history node for the normal order (its placement timeout passed).
    escalated: bool = False
    #: The ask may only go to ``node_id`` (strict policy).
    strict: bool = False
    #: Nodes the normal order must skip for this ask: its role failed there more often than
    #: the threshold allows (the blacklist of Slider's tests), until the failure window resets.
    avoid: frozenset[str] = frozenset()


@dataclass(slots=True)
class _Target:
    role: str
    node_id: str
    since: float


class _RecentList:
    """Nodes newest ``lastUsed`` first, ties by node id; each node at most once."""

    __slots__ = ("_keys", "_by_node")

    def __init__(self) -> None:
        self._keys: list[tuple[int, str]] = []
        self._by_node: dict[str, tuple[int, str]] = {}

    def add(self, node_id: str, last_used_ns: int) -> None:
        self.discard(node_id)
        key = (-last_used_ns, node_id)
        bisect.insort(self._keys, key)
        self._by_node[node_id] = key

    def discard(self, node_id: str) -> None:
        key = self._by_node.pop(node_id, None)
        if key is not None:
            del self._keys[bisect.bisect_left(self._keys, key)]

    def __iter__(self) -> Iterator[str]:
        return (node_id for _, node_id in self._keys)

    def __len__(self) -> int:
        return len(self._keys)


class RoleHistory:
    """Changed only under the owning partition's lock."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.nodes: dict[str, dict[str, NodeEntry]] = {}
        #: Nodes the partition does not have now, or that are unschedulable.
        self.offline: set[str] = set()
        self._recent: dict[str, _RecentList] = {}
        self._targets: dict[str, _Target] = {}
        #: Asks that left their history node (they are not given another).
        self._escalated: set[str] = set()
        #: Per role: when its recent failures were last forgotten (monotonic seconds).
        self._failures_reset: dict[str, float] = {}
        #: Bumped by every change that a save keeps (persistence compares it with the last save's).
        self.version = 0
        #: Asks sent to the normal node order by the placement timeout.
        self.escalations = 0
        # Per role: the settings and the tags and properties they were read from (the cycle
        # asks for them per pending ask; a new tags or properties object means a new reading).
        self._settings: dict[str, tuple[Mapping[str, str], Mapping[str, str], RoleSettings]] = {}

    # -- reads ----------------------------------------------------------------------------------

    def entry(self, node_id: str, role: str) -> NodeEntry | None:
        return self.nodes.get(node_id, {}).get(role)

    def recent(self, role: str) -> list[str]:
        """The role's recent list, newest first."""
        return list(self._recent.get(role, ()))

    def roles(self) -> list[str]:
        return sorted({role for entries in self.nodes.values() for role in entries})

    def targets(self) -> list[tuple[str, str, str]]:
        """Pending asks headed for a history node: (allocation key, role, node id), by key."""
        return sorted((key, t.role, t.node_id) for key, t in self._targets.items())

    def target_of(self, allocation_key: str) -> str | None:
        target = self._targets.get(allocation_key)
        return target.node_id if target is not None else None

    def target_since(self, allocation_key: str) -> float | None:
        """When the ask was sent to its history node (monotonic seconds), None: it was not."""
        target = self._targets.get(allocation_key)
        return target.since if target is not None else None

    def settings(self, role: str, app_tags: Mapping[str, str], queue_properties: Mapping[str, str]) -> RoleSettings:
        """The role's settings (:func:`role_settings`), read again only when the application's
        tags or the queue's properties are other objects than last time (a queue's properties
        are replaced, never changed in place, when its configuration changes)."""
        cached = self._settings.get(role)
        if cached is not None and cached[0] is app_tags and cached[1] is queue_properties:
            return cached[2]
        settings = role_settings(role, app_tags, queue_properties)
        self._settings[role] = (app_tags, queue_properties, settings)
        return settings

    # -- placement ------------------------------------------------------------------------------

    def choose(self, allocation_key: str, role: str, settings: RoleSettings, now: float,
               schedulable: Callable[[str], bool]) -> Placement:
        """The history node for a pending ask (targeting it), or None for the normal order."""
        if settings.policy is PlacementPolicy.ANYWHERE:
            return Placement()
        if allocation_key in self._escalated:
            return Placement(escalated=True, avoid=self._failing_nodes(role, settings))
        strict = settings.policy is PlacementPolicy.STRICT
        target = self._targets.get(allocation_key)
        if target is not None:
            if not strict and now > target.since + settings.placement_timeout:
                # One tick after the deadline, never at it (Slider's escalation).
                self._drop_target(allocation_key)
                self._escalated.add(allocation_key)
                self.escalations += 1
                return Placement(escalated=True, avoid=self._failing_nodes(role, settings))
            return Placement(target.node_id, strict=strict)
        self._forget_failures(role, settings, now)
        node_id = self._find(role, settings, strict, schedulable)
        if node_id is None:
            return Placement(avoid=self._failing_nodes(role, settings))
        self._targets[allocation_key] = _Target(role, node_id, now)
        self._entry(node_id, role).requested += 1
        self._recent[role].discard(node_id)
        return Placement(node_id, strict=strict)

    def _find(self, role: str, settings: RoleSettings, strict: bool, schedulable: Callable[[str], bool]) -> str | None:
        """The newest node on the role's list that may take it: any (strict), else one that is
        online, schedulable and not over the failure threshold."""
        for node_id in self._recent.get(role, ()):
            if strict:
                return node_id
            entry = self.nodes[node_id][role]
            if node_id in self.offline or settings.over_threshold(entry.failed_recently) or not schedulable(node_id):
                continue
            return node_id
        return None

    def _failing_nodes(self, role: str, settings: RoleSettings) -> frozenset[str]:
        if settings.failure_threshold < 0:
            return frozenset()
        return frozenset(
            node_id for node_id, entries in self.nodes.items()
            if (entry := entries.get(role)) is not None and settings.over_threshold(entry.failed_recently)
        )

    def _forget_failures(self, role: str, settings: RoleSettings, now: float) -> None:
        last = self._failures_reset.setdefault(role, now)
        if now - last < settings.failure_window:
            return
        self._failures_reset[role] = now
        for entries in self.nodes.values():
            entry = entries.get(role)
            if entry is not None:
                entry.failed_recently = 0

    # -- what the partition sees -------------------------------------------------------------------

    def allocated(self, allocation_key: str, role: str, node_id: str) -> bool:
        """An instance of ``role`` landed on ``node_id`` (placed, bound or recovered). True when
        that was the node its ask targeted."""
        # Live first: dropping the target then does not put this node back on the list.
        entry = self._entry(node_id, role)
        entry.live += 1
        target = self._drop_target(allocation_key)
        self._escalated.discard(allocation_key)
        self._recent[role].discard(node_id)
        self.version += 1
        return target is not None and target.node_id == node_id

    def ask_removed(self, allocation_key: str) -> None:
        """A pending ask went away without an allocation."""
        self._drop_target(allocation_key)
        self._escalated.discard(allocation_key)

    def released(self, role: str, node_id: str, now_ns: int, *, failed: bool = False, preempted: bool = False) -> None:
        """An instance ended: it failed (the RM said so), was preempted, or simply stopped."""
        entry = self._entry(node_id, role)
        entry.stopped(now_ns)
        if failed:
            entry.failed += 1
            entry.failed_recently += 1
        if preempted:
            entry.preempted += 1
        self._relist(node_id, role, entry)
        self.version += 1

    def node_state(self, node_id: str, online: bool) -> None:
        """A node came, went, or changed schedulability (known nodes only matter)."""
        if online:
            self.offline.discard(node_id)
        else:
            self.offline.add(node_id)

    # -- internals ------------------------------------------------------------------------------------

    def _entry(self, node_id: str, role: str) -> NodeEntry:
        # Hot (twice per placed ask): no setdefault, whose default would be built every call.
        entries = self.nodes.get(node_id)
        if entries is None:
            entries = self.nodes[node_id] = {}
        entry = entries.get(role)
        if entry is None:
            entry = entries[role] = NodeEntry()
            if role not in self._recent:
                self._recent[role] = _RecentList()
        return entry

    def _drop_target(self, allocation_key: str) -> _Target | None:
        target = self._targets.pop(allocation_key, None)
        if target is not None:
            entry = self.nodes[target.node_id][target.role]
            entry.decrement_requested()
            self._relist(target.node_id, target.role, entry)
        return target

    def _relist(self, node_id: str, role: str, entry: NodeEntry) -> None:
        if entry.available:
            self._recent[role].add(node_id, entry.last_used_ns)

    def add_entry(self, node_id: str, role: str, last_used_ns: int) -> None:
        """An entry loaded from a saved history: available, used at ``last_used_ns``."""
        entry = self._entry(node_id, role)
        entry.last_used_ns = max(entry.last_used_ns, last_used_ns)
        self._relist(node_id, role, entry)
        self.version += 1

    def saved_entries(self) -> list[SavedEntry]:
        """What a save keeps of this history: every (node, role) that ran an instance, with
        whether one runs now and when one last stopped."""
        return [
            SavedEntry(self.key, node_id, role, entry.live > 0, entry.last_used_ns // 1_000_000)
            for node_id, entries in self.nodes.items()
            for role, entry in entries.items()
            if entry.live > 0 or entry.last_used_ns > 0
        ]
