"""User and group usage tracking with limits (YuniKorn's ``pkg/scheduler/ugm``).

One :class:`UserGroupManager` per partition keeps, per user and per group, a tree that mirrors
the queue paths the user's (group's) applications run in. Each level holds the resources in use
below it and the applications running below it; the limits configured for that user or group at
that queue give each level its max resources and max applications.

Tracking
--------
- Every user with usage is tracked. A group is tracked for an application only when a group limit
  applies: walking from the application's leaf queue up to ``root``, the first level with group
  limits where one of the configured groups (in configuration order) is one of the user's groups
  selects that group; a level with only a wildcard (``*``) group limit selects the shared ``*``
  group. A user without groups is never group-tracked. The selection is made when the application
  first uses resources and kept until it is done (``app_done``), unless a configuration change
  removes every limit of the selected group on the application's path: then the application is
  re-linked and its usage moved to the new selection (if any).
- An application is *running* for a user or group from its first usage increase until the decrease
  that says it is done (``app_done``) or :meth:`~UserGroupManager.remove_app`, which also drops
  whatever usage it still holds.
- Levels and trackers left with no usage and nothing running are removed at once; limits live in
  the manager, not in the trackers, so a tracker never outlives its usage.

Limits
------
- :meth:`UserGroupManager.set_limits` sets the limits of one queue path (partition limits are
  root's). A user (group) without an explicit limit at a queue gets that queue's wildcard limit;
  an explicit limit that leaves a field unset (no max resources, max applications 0) also takes
  that field from the wildcard, as YuniKorn does.
- :meth:`~UserGroupManager.headroom` is the minimum over the path of ``max - used``, per resource
  type; types missing from a max are unlimited, None means unlimited altogether.
- :meth:`~UserGroupManager.can_run_app`: at every level with a max, an application that is not yet
  running there needs ``running + 1 <= max``; for the user and, if linked, the group.
- Usage increases are never refused: the scheduler checks headroom and can_run_app first, and
  recovered allocations must be tracked even past the limits.

Events (USERGROUP records)
--------------------------
``usage_added`` / ``usage_removed`` for the user on every change, then the same for the linked
group (objectID the user or group, referenceID the leaf queue path, the resource delta);
``app_linked`` / ``app_unlinked`` when an application is linked to or unlinked from a group;
``limit_set`` / ``limit_removed`` when a configured limit for a user or group at a queue changes.

Locking
-------
None of its own: the manager belongs to one partition and its callers hold that partition's
lock (:mod:`pyscheduler.objects.locking`), which its mutating methods check when lock checks
are on. The only call out is the non-blocking event ``add``.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyscheduler.common.resources import NO_RESOURCE, Resource, component_min_undef
from pyscheduler.objects.locking import CHECK_LOCKS, check_held
from pyscheduler.objects.object_events import UserGroupEvents

__all__ = ["WILDCARD", "Limit", "LimitSpec", "UserGroupManager"]

#: Matches every user (group) without an explicit limit.
WILDCARD = "*"

_ROOT = "root"
_DOT = "."


@dataclass(frozen=True, slots=True)
class LimitSpec:
    """One configured limit entry of a queue: who it applies to and the maximums.
    ``max_resources`` None (or all zero) and ``max_applications`` 0 mean unlimited."""

    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    max_resources: Resource | None = None
    max_applications: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "users", tuple(self.users))
        object.__setattr__(self, "groups", tuple(self.groups))
        if self.max_applications < 0:
            raise ValueError(f"max applications cannot be negative: {self.max_applications}")


@dataclass(frozen=True, slots=True)
class Limit:
    """The limit that applies to one user or group at one queue (None / 0: unlimited)."""

    max_resources: Resource | None
    max_applications: int

    @classmethod
    def of(cls, spec: LimitSpec) -> Limit:
        # YuniKorn treats an all-zero max as "not set".
        maximum = spec.max_resources
        return cls(None if maximum is None or maximum.is_zero() else maximum, spec.max_applications)


@dataclass(frozen=True, slots=True)
class _LevelLimits:
    """The limits configured at one queue path, wildcards under the key ``*``."""

    users: Mapping[str, Limit]
    groups: Mapping[str, Limit]
    #: Named groups in configuration order: the order in which they are matched.
    group_order: tuple[str, ...]


_NO_LIMITS = _LevelLimits({}, {}, ())


@functools.lru_cache(maxsize=4096)
def _levels(queue_path: str) -> tuple[str, ...]:
    """``root.a.b`` -> ``("root", "root.a", "root.a.b")``. Remembered (bounded): every
    allocation and every headroom check asks it of the same few paths."""
    parts = queue_path.split(_DOT)
    if parts[0] != _ROOT or not all(parts):
        raise ValueError(f"not a fully-qualified queue path: {queue_path!r}")
    return tuple(_DOT.join(parts[: i + 1]) for i in range(len(parts)))


@functools.lru_cache(maxsize=4096)
def _steps(queue_path: str) -> tuple[tuple[str, str], ...]:
    """The levels below the root as (path, name): a tracker walks them from its root on every
    usage change (``root.a.b`` -> ``(("root.a", "a"), ("root.a.b", "b"))``)."""
    return tuple((path, path.rsplit(_DOT, 1)[1]) for path in _levels(queue_path)[1:])


class _QueueUsage:
    """One level of a tracker tree."""

    __slots__ = ("path", "usage", "apps", "children")

    def __init__(self, path: str) -> None:
        self.path = path
        self.usage = NO_RESOURCE
        self.apps: set[str] = set()
        self.children: dict[str, _QueueUsage] = {}

    @property
    def idle(self) -> bool:
        """Nothing in use, nothing running, nothing below: the level can go."""
        return self.usage.is_zero() and not self.apps and not self.children

    def walk(self) -> Iterator[_QueueUsage]:
        yield self
        for child in self.children.values():
            yield from child.walk()


class _Tracker:
    """The usage tree of one user or group, and the applications it tracks."""

    __slots__ = ("name", "is_group", "root", "apps")

    def __init__(self, name: str, is_group: bool) -> None:
        self.name = name
        self.is_group = is_group
        self.root = _QueueUsage(_ROOT)
        #: User: application -> linked group (None: not group-tracked). Group: application -> user.
        self.apps: dict[str, str | None] = {}

    def node(self, path: str) -> _QueueUsage | None:
        node: _QueueUsage | None = self.root
        for part in path.split(_DOT)[1:]:
            if node is None:
                return None
            node = node.children.get(part)
        return node

    def add(self, steps: Sequence[tuple[str, str]], app_id: str, delta: Resource) -> None:
        """Adds ``delta`` on every level of ``steps`` (:func:`_steps`), creating missing levels."""
        node = self.root
        node.usage += delta
        node.apps.add(app_id)
        for path, name in steps:
            child = node.children.get(name)
            if child is None:
                child = node.children[name] = _QueueUsage(path)
            node = child
            node.usage += delta
            node.apps.add(app_id)

    def remove(self, steps: Sequence[tuple[str, str]], app_id: str, delta: Resource, app_done: bool) -> None:
        """Takes ``delta`` off every level (creating none) and drops idle levels bottom-up."""
        trail = [self.root]
        for _, name in steps:
            child = trail[-1].children.get(name)
            if child is None:
                break
            trail.append(child)
        for node in trail:
            node.usage -= delta
            if app_done:
                node.apps.discard(app_id)
        for parent, child in zip(reversed(trail[:-1]), reversed(trail[1:])):
            if child.idle:
                del parent.children[child.path.rsplit(_DOT, 1)[1]]

    @property
    def idle(self) -> bool:
        return self.root.idle and not self.apps


class _AppUsage:
    """What the manager tracks for one application."""

    __slots__ = ("user", "groups", "queue_path", "levels", "steps", "group", "usage")

    def __init__(self, user: str, groups: tuple[str, ...], queue_path: str, group: str | None) -> None:
        self.user = user
        self.groups = groups
        self.queue_path = queue_path
        self.levels = _levels(queue_path)
        self.steps = _steps(queue_path)
        self.group = group
        self.usage = NO_RESOURCE


class UserGroupManager:
    """Usage, running applications and limits per user and group, for one partition."""

    def __init__(self, events: UserGroupEvents, graph_lock: threading.RLock | None = None) -> None:
        #: The partition's lock (see pyscheduler.objects.locking).
        self.graph_lock = graph_lock
        self._events = events
        self._users: dict[str, _Tracker] = {}
        self._groups: dict[str, _Tracker] = {}
        self._apps: dict[str, _AppUsage] = {}
        self._limits: dict[str, _LevelLimits] = {}

    # -- usage ----------------------------------------------------------------------------------

    def increase_usage(
        self, queue_path: str, app_id: str, user: str, groups: Sequence[str], resource: Resource
    ) -> None:
        """Adds ``resource`` to the application's user (and group) at every level of its leaf
        queue's path. The first increase links the application to its group."""
        if CHECK_LOCKS:
            check_held(self.graph_lock, "user and group usage")
        _require(queue_path, app_id, user)
        app = self._apps.get(app_id)
        if app is None:
            app = self._track(queue_path, app_id, user, tuple(groups))
        else:
            _same_app(app, app_id, user, queue_path)
        app.usage += resource
        self._users[user].add(app.steps, app_id, resource)
        # The native event store reads the Resource itself (no dict in between).
        self._events.usage_added(user, queue_path, resource)
        if app.group is not None:
            self._groups[app.group].add(app.steps, app_id, resource)
            self._events.usage_added(app.group, queue_path, resource, group=True)

    def decrease_usage(
        self,
        queue_path: str,
        app_id: str,
        user: str,
        groups: Sequence[str],
        resource: Resource,
        app_done: bool = False,
    ) -> bool:
        """Takes ``resource`` off the application's user (and group). ``app_done``: the
        application stops running and is unlinked from its group. False for an application that
        is not tracked. Trackers and levels left with no usage and nothing running are removed."""
        if CHECK_LOCKS:
            check_held(self.graph_lock, "user and group usage")
        _require(queue_path, app_id, user)
        app = self._apps.get(app_id)
        if app is None:
            return False
        _same_app(app, app_id, user, queue_path)
        self._decrease(app_id, app, resource, app_done, announce=True)
        return True

    def remove_app(self, app_id: str, user: str) -> bool:
        """Stops tracking an application that goes away (removed or terminated) whatever it still
        uses: what is left is taken off its user and group and it is unlinked from its group.
        False when it is not tracked (its last decrease already said it was done)."""
        if CHECK_LOCKS:
            check_held(self.graph_lock, "user and group usage")
        app = self._apps.get(app_id)
        if app is None:
            return False
        if app.user != user:
            raise ValueError(f"application {app_id} is tracked for user {app.user}, not {user}")
        self._decrease(app_id, app, app.usage, True, announce=not app.usage.is_zero())
        return True

    def _decrease(self, app_id: str, app: _AppUsage, resource: Resource, app_done: bool, *, announce: bool) -> None:
        """The decrease itself; ``announce``: emit the usage events (the link event always goes)."""
        app.usage -= resource
        user_tracker = self._users[app.user]
        user_tracker.remove(app.steps, app_id, resource, app_done)
        if announce:
            self._events.usage_removed(app.user, app.queue_path, resource)
        if app_done:
            del user_tracker.apps[app_id]
            del self._apps[app_id]
            if app.group is not None:
                self._events.app_unlinked(app.group, app_id)
        if app.group is not None:
            group_tracker = self._groups[app.group]
            group_tracker.remove(app.steps, app_id, resource, app_done)
            if app_done:
                del group_tracker.apps[app_id]
            if announce:
                self._events.usage_removed(app.group, app.queue_path, resource, group=True)
            self._drop_if_idle(self._groups, app.group)
        self._drop_if_idle(self._users, app.user)

    def _track(self, queue_path: str, app_id: str, user: str, groups: tuple[str, ...]) -> _AppUsage:
        app = _AppUsage(user, groups, queue_path, self._select_group(groups, queue_path))
        self._apps[app_id] = app
        self._tracker(self._users, user, False).apps[app_id] = app.group
        if app.group is not None:
            self._tracker(self._groups, app.group, True).apps[app_id] = user
            self._events.app_linked(app.group, app_id)
        return app

    @staticmethod
    def _tracker(table: dict[str, _Tracker], name: str, is_group: bool) -> _Tracker:
        tracker = table.get(name)
        if tracker is None:
            tracker = table[name] = _Tracker(name, is_group)
        return tracker

    @staticmethod
    def _drop_if_idle(table: dict[str, _Tracker], name: str) -> None:
        tracker = table.get(name)
        if tracker is not None and tracker.idle:
            del table[name]

    # -- checks ---------------------------------------------------------------------------------

    def headroom(self, queue_path: str, app_id: str, user: str, groups: Sequence[str]) -> Resource | None:
        """What the application may still use in ``queue_path`` under the user's and group's
        limits: per type the minimum over the path of max - used (may be negative). Types no
        max names are unlimited and absent; None: no resource limit applies at all."""
        if not self._limits:
            return None  # no limit configured anywhere (the common case): nothing to compute
        levels = _levels(queue_path)
        room = self._headroom(user, False, levels)
        group = self._group_for(app_id, tuple(groups), queue_path)
        if group is None:
            return room
        return component_min_undef(room, self._headroom(group, True, levels))

    def can_run_app(self, queue_path: str, app_id: str, user: str, groups: Sequence[str]) -> bool:
        """Whether the application may run in ``queue_path`` under the max applications of its
        user and group at every level of the path (an application already running counts)."""
        levels = _levels(queue_path)
        if not self._can_run(user, False, levels, app_id):
            return False
        group = self._group_for(app_id, tuple(groups), queue_path)
        return group is None or self._can_run(group, True, levels, app_id)

    def group_for(self, app_id: str, groups: Sequence[str], queue_path: str) -> str | None:
        """The group whose limits apply to the application in ``queue_path`` (None: none); a
        query, linking nothing (the why answer names the group whose limit binds)."""
        return self._group_for(app_id, tuple(groups), queue_path)

    def _group_for(self, app_id: str, groups: tuple[str, ...], queue_path: str) -> str | None:
        """The application's linked group, or the group it would be linked to (queries link
        nothing: an application that never runs leaves no trace)."""
        app = self._apps.get(app_id)
        return app.group if app is not None else self._select_group(groups, queue_path)

    def _select_group(self, groups: tuple[str, ...], queue_path: str) -> str | None:
        if not groups:
            return None
        for path in reversed(_levels(queue_path)):
            level = self._limits.get(path)
            if level is None:
                continue
            for candidate in level.group_order:
                if candidate in groups:
                    return candidate
            if WILDCARD in level.groups:
                return WILDCARD
        return None

    def _headroom(self, name: str, is_group: bool, levels: Sequence[str]) -> Resource | None:
        tracker = (self._groups if is_group else self._users).get(name)
        room: Resource | None = None
        for path in levels:
            limit = self._limit(name, is_group, path)
            if limit is None or limit.max_resources is None:
                continue
            node = tracker.node(path) if tracker is not None else None
            used = node.usage if node is not None else NO_RESOURCE
            here = limit.max_resources.room_above(used)
            room = component_min_undef(room, here)
        return room

    def _can_run(self, name: str, is_group: bool, levels: Sequence[str], app_id: str) -> bool:
        tracker = (self._groups if is_group else self._users).get(name)
        for path in levels:
            limit = self._limit(name, is_group, path)
            if limit is None or limit.max_applications == 0:
                continue
            node = tracker.node(path) if tracker is not None else None
            running = node.apps if node is not None else set()
            if app_id not in running and len(running) + 1 > limit.max_applications:
                return False
        return True

    # -- limits ---------------------------------------------------------------------------------

    def set_limits(self, queue_path: str, limits: Sequence[LimitSpec]) -> None:
        """Replaces the limits configured at ``queue_path`` (an empty sequence clears them)."""
        _levels(queue_path)
        self._set_level(queue_path, limits)
        self._relink_orphans()

    def update_limits(self, limits: Mapping[str, Sequence[LimitSpec]]) -> None:
        """Replaces every configured limit (a configuration reload): paths not in ``limits``
        lose theirs."""
        if CHECK_LOCKS:
            check_held(self.graph_lock, "user and group usage")
        for path in limits:
            _levels(path)
        for path in [p for p in self._limits if p not in limits]:
            self._set_level(path, ())
        for path, specs in limits.items():
            self._set_level(path, specs)
        self._relink_orphans()

    def limit_for_user(self, user: str, queue_path: str) -> Limit | None:
        """The limit that applies to ``user`` at exactly ``queue_path`` (None: none)."""
        return self._limit(user, False, queue_path)

    def limit_for_group(self, group: str, queue_path: str) -> Limit | None:
        return self._limit(group, True, queue_path)

    def _limit(self, name: str, is_group: bool, path: str) -> Limit | None:
        level = self._limits.get(path)
        if level is None:
            return None
        table = level.groups if is_group else level.users
        own, wildcard = table.get(name), table.get(WILDCARD)
        if own is None or wildcard is None or own is wildcard:
            return own if own is not None else wildcard
        # Fields the explicit limit leaves unset come from the wildcard.
        return Limit(
            own.max_resources if own.max_resources is not None else wildcard.max_resources,
            own.max_applications or wildcard.max_applications,
        )

    def _set_level(self, path: str, specs: Sequence[LimitSpec]) -> None:
        users: dict[str, Limit] = {}
        groups: dict[str, Limit] = {}
        order: list[str] = []
        for spec in specs:
            limit = Limit.of(spec)
            for user in spec.users:
                if user:
                    users[user] = limit
            for group in spec.groups:
                if group:
                    groups[group] = limit
                    if group != WILDCARD and group not in order:
                        order.append(group)
        old = self._limits.get(path, _NO_LIMITS)
        self._announce(path, old.users, users, group=False)
        self._announce(path, old.groups, groups, group=True)
        if users or groups:
            self._limits[path] = _LevelLimits(users, groups, tuple(order))
        else:
            self._limits.pop(path, None)

    def _announce(self, path: str, old: Mapping[str, Limit], new: Mapping[str, Limit], *, group: bool) -> None:
        for name in old:
            if name not in new:
                self._events.limit_removed(name, path, group=group)
        for name, limit in new.items():
            if old.get(name) != limit:
                self._events.limit_set(name, path, group=group)

    def _relink_orphans(self) -> None:
        """Moves applications whose group lost every limit on their path to the group the
        current limits select (or to none), usage included."""
        for app_id, app in self._apps.items():
            if app.group is None or self._group_limited(app.group, app.levels):
                continue
            old, new = app.group, self._select_group(app.groups, app.queue_path)
            old_tracker = self._groups[old]
            old_tracker.remove(app.steps, app_id, app.usage, app_done=True)
            del old_tracker.apps[app_id]
            if not app.usage.is_zero():
                self._events.usage_removed(old, app.queue_path, app.usage, group=True)
            self._events.app_unlinked(old, app_id)
            self._drop_if_idle(self._groups, old)
            app.group = new
            self._users[app.user].apps[app_id] = new
            if new is None:
                continue
            new_tracker = self._tracker(self._groups, new, True)
            new_tracker.apps[app_id] = app.user
            self._events.app_linked(new, app_id)
            new_tracker.add(app.steps, app_id, app.usage)
            if not app.usage.is_zero():
                self._events.usage_added(new, app.queue_path, app.usage, group=True)

    def _group_limited(self, group: str, levels: Sequence[str]) -> bool:
        return any(group in self._limits.get(path, _NO_LIMITS).groups for path in levels)

    # -- reading --------------------------------------------------------------------------------

    def user_usage(self, user: str, queue_path: str = _ROOT) -> Resource:
        """The user's usage at ``queue_path`` (empty if none)."""
        return _usage_at(self._users.get(user), queue_path)

    def group_usage(self, group: str, queue_path: str = _ROOT) -> Resource:
        return _usage_at(self._groups.get(group), queue_path)

    def app_group(self, app_id: str) -> str | None:
        """The group the application is linked to (None: not tracked or no group)."""
        app = self._apps.get(app_id)
        return app.group if app is not None else None

    def tracked_users(self) -> list[str]:
        return sorted(self._users)

    def tracked_groups(self) -> list[str]:
        return sorted(self._groups)

    def usage_dao(self) -> dict[str, list[dict[str, Any]]]:
        """Every tracker as plain data for the REST layer, sorted by name:
        ``{"users": [user_dao...], "groups": [group_dao...]}``."""
        return {
            "users": [self._user_dao(self._users[name]) for name in sorted(self._users)],
            "groups": [self._group_dao(self._groups[name]) for name in sorted(self._groups)],
        }

    def user_dao(self, user: str) -> dict[str, Any] | None:
        """``{userName, groups: {appID: group}, queues: usage tree}``; None if not tracked."""
        tracker = self._users.get(user)
        return self._user_dao(tracker) if tracker is not None else None

    def group_dao(self, group: str) -> dict[str, Any] | None:
        """``{groupName, applications: [...], queues: usage tree}``; None if not tracked."""
        tracker = self._groups.get(group)
        return self._group_dao(tracker) if tracker is not None else None

    def _user_dao(self, tracker: _Tracker) -> dict[str, Any]:
        return {
            "userName": tracker.name,
            "groups": {app: group for app, group in sorted(tracker.apps.items()) if group is not None},
            "queues": self._node_dao(tracker, tracker.root),
        }

    def _group_dao(self, tracker: _Tracker) -> dict[str, Any]:
        return {
            "groupName": tracker.name,
            "applications": sorted(tracker.apps),
            "queues": self._node_dao(tracker, tracker.root),
        }

    def _node_dao(self, tracker: _Tracker, node: _QueueUsage) -> dict[str, Any]:
        """``{queuePath, resourceUsage, runningApplications, maxResources (None: unlimited),
        maxApplications (0: unlimited), children}``."""
        limit = self._limit(tracker.name, tracker.is_group, node.path)
        maximum = limit.max_resources if limit is not None else None
        return {
            "queuePath": node.path,
            "resourceUsage": node.usage.to_dict(),
            "runningApplications": sorted(node.apps),
            "maxResources": maximum.to_dict() if maximum is not None else None,
            "maxApplications": limit.max_applications if limit is not None else 0,
            "children": [self._node_dao(tracker, node.children[name]) for name in sorted(node.children)],
        }

    # -- consistency ----------------------------------------------------------------------------

    def check_consistency(self) -> list[str]:
        """Problems found when rebuilding every tree from the tracked applications (empty when
        consistent): usage or running applications that differ, negative usage, dangling links."""
        problems: list[str] = []
        expected: dict[tuple[bool, str], dict[str, tuple[Resource, set[str]]]] = {}
        for app_id, app in self._apps.items():
            owners = [(False, app.user)] + ([(True, app.group)] if app.group is not None else [])
            for owner in owners:
                tree = expected.setdefault(owner, {})
                for path in app.levels:
                    used, apps = tree.get(path, (NO_RESOURCE, set()))
                    tree[path] = (used + app.usage, apps | {app_id})
            user_tracker = self._users.get(app.user)
            if user_tracker is None or app_id not in user_tracker.apps:
                problems.append(f"application {app_id} is not tracked for user {app.user}")
            group_tracker = self._groups.get(app.group) if app.group is not None else None
            if app.group is not None and (group_tracker is None or app_id not in group_tracker.apps):
                problems.append(f"application {app_id} is not tracked for group {app.group}")
        for is_group, table in ((False, self._users), (True, self._groups)):
            kind = "group" if is_group else "user"
            for name, tracker in table.items():
                want = expected.pop((is_group, name), {})
                have = {n.path: (n.usage, n.apps) for n in tracker.root.walk() if not n.usage.is_zero() or n.apps}
                want = {p: v for p, v in want.items() if not v[0].is_zero() or v[1]}
                for path in sorted(set(want) | set(have)):
                    if want.get(path) != have.get(path):
                        problems.append(f"{kind} {name} at {path}: tracked {have.get(path)}, expected {want.get(path)}")
                problems.extend(
                    f"{kind} {name} at {n.path}: negative usage {n.usage}" for n in tracker.root.walk() if n.usage.has_negative()
                )
                stale = [a for a in tracker.apps if a not in self._apps]
                if stale:
                    problems.append(f"{kind} {name} links finished applications {sorted(stale)}")
        for (is_group, name), tree in expected.items():
            if any(not used.is_zero() or apps for used, apps in tree.values()):
                problems.append(f"{'group' if is_group else 'user'} {name} has usage but no tracker")
        return problems

    def is_consistent(self) -> bool:
        return not self.check_consistency()


def _usage_at(tracker: _Tracker | None, queue_path: str) -> Resource:
    node = tracker.node(queue_path) if tracker is not None else None
    return node.usage if node is not None else NO_RESOURCE


def _require(queue_path: str, app_id: str, user: str) -> None:
    if not (queue_path and app_id and user):
        raise ValueError(
            f"mandatory parameters are missing. queuepath: {queue_path}, application id: {app_id}, user: {user}"
        )


def _same_app(app: _AppUsage, app_id: str, user: str, queue_path: str) -> None:
    # An application has one user and one leaf queue for its whole life.
    if app.user != user or app.queue_path != queue_path:
        raise ValueError(
            f"application {app_id} is tracked for user {app.user} in {app.queue_path}, not {user} in {queue_path}"
        )
