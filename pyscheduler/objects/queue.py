"""Queues: the hierarchy rooted at ``root``, with quotas, properties and ACLs.

- Managed queues come from the configuration; dynamic ones are created by placement rules
  (from the parent's child template) and removed once empty.
- Only leaf queues hold applications. A queue is a parent when the configuration says so or
  when it has children.
- ``max`` None means unlimited, and a type missing from ``max`` is unlimited too; the effective
  maximum is the per-type minimum with every ancestor, headroom the minimum of
  ``max - allocated`` over the path.
- Usage changes walk the path from the queue up to root. Queues have no lock of their own: the
  partition's lock guards the whole tree (:mod:`pyscheduler.objects.locking`).
- For the scheduling cycle, each queue keeps its highest pending ask priority up to date
  (``pending_priority``) and each leaf its applications with pending asks (``apps_with_asks``)
  and their fifo order: an application reports its changes (:meth:`Queue.app_asks_changed`) and
  the change walks up the path only as far as a priority changes. Writers hold the partition's
  lock, as every change of asks, applications and queues does.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol

from pyscheduler.common.resources import Resource, component_min_undef, transferred
from pyscheduler.objects.locking import CHECK_LOCKS, check_held
from pyscheduler.objects.object_events import QueueEvents
from pyscheduler.policies.sorting import ChildOrder
from pyscheduler.config.queue_preemption import (
    DEFAULT_PREEMPTION_DELAY_NS,
    PREEMPTION_POLICY,
    PreemptionPolicy,
    preemption_delay_ns,
    preemption_policy,
)

if TYPE_CHECKING:
    from pyscheduler.objects.application import Application

__all__ = [
    "MIN_PRIORITY",
    "ObjectState",
    "PRIORITY_POLICY",
    "Queue",
    "QueueSettings",
    "RECOVERY_QUEUE",
    "SORT_POLICY",
    "SORT_PRIORITY",
    "parse_priority_offset",
    "priority_seen_by_parent",
    "qualify",
    "queue_shape_version",
]

RECOVERY_QUEUE = "root.@recovery@"
SORT_POLICY = "application.sort.policy"
SORT_PRIORITY = "application.sort.priority"
PRIORITY_OFFSET = "priority.offset"
PRIORITY_POLICY = "priority.policy"
#: YuniKorn's configs.MinPriority / MaxPriority (int32): the minimum also means "nothing pending".
MIN_PRIORITY = -(1 << 31)
MAX_PRIORITY = (1 << 31) - 1
_INT = re.compile(r"[+-]?[0-9]+")


class _ShapeVersion:
    """How many times any queue's settings, properties or place in the tree changed (in any
    partition): caches of facts derived from those (the preemptor's, across attempts) keep the
    value they were made at and start again when it moves. Bumped under the changed queue's
    partition lock; a cache is read under its own partition's lock, so a change in another
    partition may only make it start again for nothing."""

    value = 0

    @classmethod
    def bump(cls) -> None:
        cls.value += 1


def queue_shape_version() -> int:
    """The current :class:`_ShapeVersion` (see there)."""
    return _ShapeVersion.value


def parse_priority_offset(properties: Mapping[str, str]) -> int:
    """``priority.offset`` as Go's ParseInt(value, 10, 32); anything invalid is 0."""
    text = properties.get(PRIORITY_OFFSET, "")
    if not _INT.fullmatch(text):
        return 0
    value = int(text, 10)
    return value if MIN_PRIORITY <= value <= MAX_PRIORITY else 0


def priority_seen_by_parent(priority: int, offset: int, fence: bool) -> int:
    """YuniKorn's priorityValueByPolicy: a queue's priority as its parent sorts it. Nothing
    pending stays the minimum; a fenced queue shows only its offset; otherwise the offset is
    added, clamped to int32."""
    if priority == MIN_PRIORITY:
        return MIN_PRIORITY
    if fence:
        return offset
    return max(MIN_PRIORITY, min(MAX_PRIORITY, priority + offset))


class ObjectState(str, Enum):
    """Partition and managed-queue states (YuniKorn's ``object_state.go``)."""

    ACTIVE = "Active"
    DRAINING = "Draining"
    STOPPED = "Stopped"


class ACLLike(Protocol):
    def allows(self, user: str, groups: frozenset[str] | set[str] | tuple[str, ...]) -> bool: ...


@dataclass(frozen=True)
class QueueSettings:
    """What configuration (or a child template) sets on a queue."""

    parent: bool = False
    max_resource: Resource | None = None
    guaranteed: Resource | None = None
    max_applications: int = 0
    properties: Mapping[str, str] = field(default_factory=dict)
    submit_acl: ACLLike | None = None
    admin_acl: ACLLike | None = None
    child_template: QueueSettings | None = None


def qualify(path: str) -> str:
    """Lower-cases a queue path and roots it (``a.b`` -> ``root.a.b``)."""
    path = path.lower()
    return path if path == "root" or path.startswith("root.") else f"root.{path}"


class Queue:
    def __init__(
        self,
        name: str,
        parent: Queue | None,
        events: QueueEvents,
        settings: QueueSettings | None = None,
        *,
        managed: bool = True,
    ) -> None:
        self.name = name.lower()
        self.parent = parent
        self.path: str = self.name if parent is None else f"{parent.path}.{self.name}"
        #: The partition's lock (see pyscheduler.objects.locking): root gets it from its
        #: partition, every other queue from its parent.
        self.graph_lock: threading.RLock | None = parent.graph_lock if parent is not None else None
        self._events = events
        self.managed = managed
        self.state = ObjectState.ACTIVE
        self.children: dict[str, Queue] = {}
        self.applications: dict[str, Application] = {}
        self.allocated = Resource()
        self.pending = Resource()
        #: Allocations below chosen as preemption victims and not released yet (YuniKorn's
        #: preemptingResource), on the whole path.
        self.preempting = Resource()
        #: Accepted applications holding placeholders (counted as running for maxApplications).
        self.allocating_accepted: set[str] = set()
        #: Quota-change preemption: when an armed queue fires (ns, 0: not armed) and the delay
        #: it was armed with (pyscheduler.scheduler.preemption.quota).
        self.quota_preemption_start_ns = 0
        self.quota_preemption_delay_armed_ns = 0
        self.running_apps = 0
        #: The applications of this leaf with pending asks, and the priority each one is counted
        #: at in ``_app_priority_counts`` (its highest pending ask priority).
        self.apps_with_asks: dict[str, Application] = {}
        self._app_priorities: dict[str, int] = {}
        #: How many applications (a leaf) or children (a parent) sit at each priority: the
        #: highest key is this queue's priority, without looking at every application.
        self._app_priority_counts: dict[int, int] = {}
        self._child_priority_counts: dict[int, int] = {}
        #: YuniKorn's priority of this queue: a leaf's is its applications' highest pending ask
        #: priority, a parent's the highest of its children's ``current_priority``;
        #: ``MIN_PRIORITY`` with nothing pending.
        self.pending_priority = MIN_PRIORITY
        #: The priority its parent sorts it by and counts (YuniKorn's GetCurrentPriority, the REST
        #: ``currentPriority``): ``pending_priority`` with this queue's ``priority.offset`` added,
        #: or only the offset for a ``priority.policy: fence`` queue.
        self.current_priority = MIN_PRIORITY
        #: This queue's children in fair order for the scheduling walk, kept between cycles: every
        #: change of a child's allocated, pending or current priority below marks the child stale
        #: in it (``pyscheduler.policies.sorting.ChildOrder``).
        self.child_order = ChildOrder()
        self.priority_offset = 0
        self.priority_fence = False
        self.preemption_policy: PreemptionPolicy = PreemptionPolicy.DEFAULT
        self.preemption_delay_ns = DEFAULT_PREEMPTION_DELAY_NS
        #: ``application.sort.priority`` (default enabled): whether this queue sorts its
        #: applications (a leaf) or children (a parent) by priority first.
        self.priority_sorting = True
        #: Application sorting of a leaf (``application.sort.policy``): fifo (default) or fair;
        #: stateaware means fifo. Read on every visit of the leaf: parsed once per change.
        self.sort_policy = "fifo"
        #: The applications with asks in fifo order, or None once that order may have changed
        #: (the cycle sorts again then); replaced, never changed in place.
        self.fifo_order: list[Application] | None = None
        self._settings = settings or QueueSettings()
        self._is_leaf = not self._settings.parent
        self.properties: dict[str, str] = {}
        self._merge_properties()
        if parent is not None:
            parent._add_child(self)
        _ShapeVersion.bump()
        events.added(self.path, managed)
        # A queue's initial quotas are part of its creation; later changes are SET events.

    # -- structure -----------------------------------------------------------------------------

    @property
    def is_leaf(self) -> bool:
        return self._is_leaf

    @property
    def is_managed(self) -> bool:
        return self.managed

    @property
    def settings(self) -> QueueSettings:
        return self._settings

    @property
    def max_resource(self) -> Resource | None:
        return self._settings.max_resource

    @property
    def guaranteed(self) -> Resource | None:
        return self._settings.guaranteed

    @property
    def max_applications(self) -> int:
        return self._settings.max_applications

    def _add_child(self, child: Queue) -> None:
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"queue {self.path}")
        self.children[child.name] = child
        _ShapeVersion.bump()
        _move_count(self._child_priority_counts, None, child.current_priority)
        if self._is_leaf:
            self._is_leaf = False
            self._events.type_changed(self.path, is_leaf=False)
        self._refresh_priority()

    def remove_child(self, name: str) -> None:
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"queue {self.path}")
        child = self.children.pop(name, None)
        _ShapeVersion.bump()
        if child is not None:
            _move_count(self._child_priority_counts, child.current_priority, None)
        if child is not None:
            self._refresh_priority()
            self._events.removed(child.path, child.managed)

    def walk(self) -> Iterator[Queue]:
        """This queue and every descendant, parents before children, children by name."""
        yield self
        children = sorted(self.children.values(), key=lambda q: q.name)
        for child in children:
            yield from child.walk()

    def ancestors(self) -> Iterator[Queue]:
        """This queue, then its parent, up to root."""
        queue: Queue | None = self
        while queue is not None:
            yield queue
            queue = queue.parent

    # -- configuration -------------------------------------------------------------------------

    def apply_settings(self, settings: QueueSettings, *, managed: bool = True) -> None:
        """Applies (re)loaded settings, emitting an event for each quota or type change."""
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"queue {self.path}")
        old = self._settings
        self._settings = settings
        _ShapeVersion.bump()
        self.managed = managed or self.managed
        if self.state is ObjectState.DRAINING and managed:
            self.state = ObjectState.ACTIVE
        want_leaf = not settings.parent and not self.children
        type_changed = want_leaf != self._is_leaf
        self._is_leaf = want_leaf
        self._merge_properties()
        if old.max_resource != settings.max_resource:
            self._events.max_changed(self.path, settings.max_resource)
        if old.guaranteed != settings.guaranteed:
            self._events.guaranteed_changed(self.path, settings.guaranteed)
        # A leaf ranks by its applications, a parent by its children; the offset or fence may
        # have changed too.
        self._refresh_priority()
        if type_changed:
            self._events.type_changed(self.path, want_leaf)
        for child in list(self.children.values()):
            child._merge_properties()
            child._refresh_priority()

    def set_max_resource(self, maximum: Resource | None) -> None:
        """Root's maximum follows the partition's total node capacity."""
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"queue {self.path}")
        if maximum == self._settings.max_resource:
            return
        self._settings = replace(self._settings, max_resource=maximum)
        _ShapeVersion.bump()
        self._events.max_changed(self.path, maximum)

    def _merge_properties(self) -> None:
        inherited: dict[str, str] = {}
        if self.parent is not None:
            for key, value in self.parent.properties.items():
                # priority.offset is never inherited; of preemption.policy only "disabled" is.
                if key == PRIORITY_OFFSET or (key == PREEMPTION_POLICY and value != "disabled"):
                    continue
                inherited[key] = value
        inherited.update(self._settings.properties)
        self.properties = inherited
        _ShapeVersion.bump()
        self.priority_offset = parse_priority_offset(inherited)
        self.priority_fence = inherited.get(PRIORITY_POLICY, "").lower() == "fence"
        # Read by the cycle whenever an ask fails the headroom: parsed once per change here.
        self.preemption_policy = preemption_policy(inherited)
        self.preemption_delay_ns = preemption_delay_ns(inherited)
        self.sort_policy = "fair" if inherited.get(SORT_POLICY, "fifo").lower() == "fair" else "fifo"
        sorting = inherited.get(SORT_PRIORITY, "").lower() != "disabled"
        if sorting != self.priority_sorting:
            self.priority_sorting = sorting
            self.fifo_order = None

    def child_template(self) -> QueueSettings:
        """Settings of a dynamic child: the nearest ancestor's child template, if any."""
        for queue in self.ancestors():
            if queue._settings.child_template is not None:
                return queue._settings.child_template
        return QueueSettings()

    # -- state -----------------------------------------------------------------------------------

    @property
    def is_draining(self) -> bool:
        return self.state is ObjectState.DRAINING

    def mark_draining(self) -> None:
        """Removed from the configuration: this managed queue and the managed queues below it
        drain (YuniKorn's MarkQueueForRemoval), so the children go once empty and the queue after
        them. Dynamic queues are left alone: they go once empty anyway."""
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"queue {self.path}")
        if not self.managed:
            return
        self.state = ObjectState.DRAINING
        children = list(self.children.values())
        for child in children:
            child.mark_draining()

    def is_empty(self) -> bool:
        return not self.applications and not self.children and self.allocated.is_zero()

    def submit_allowed(self, user: str, groups: Iterable[str]) -> bool:
        """The submit or admin ACL of this queue or any ancestor allows the user."""
        member_of = frozenset(groups)
        for queue in self.ancestors():
            for acl in (queue._settings.submit_acl, queue._settings.admin_acl):
                if acl is not None and acl.allows(user, member_of):
                    return True
        return False

    # -- quotas ------------------------------------------------------------------------------------

    def effective_max(self) -> Resource | None:
        """Per-type minimum of the maximums on the path (None: unlimited)."""
        result: Resource | None = None
        for queue in self.ancestors():
            result = component_min_undef(result, queue.max_resource)
        return result

    def headroom(self) -> Resource | None:
        """Minimum over the path of ``max - allocated`` (None: unlimited; missing types too)."""
        result: Resource | None = None
        queue: Queue | None = self
        while queue is not None:  # asked on every try of an application: no generator
            maximum = queue._settings.max_resource
            if maximum is not None:
                result = component_min_undef(result, maximum.room_above(queue.allocated))
            queue = queue.parent
        return result

    def fits(self, resource: Resource) -> bool:
        """Whether ``resource`` fits in the headroom of every queue on the path."""
        return resource.fits_in_max_undef(self.headroom())

    def over_max(self) -> bool:
        """Whether its usage (allocated minus preempting) is above its max in some type."""
        maximum = self.max_resource
        if maximum is None:
            return False
        used = self.allocated - self.preempting
        return any(used.get(name, 0) > limit for name, limit in maximum.items())

    def inc_allocated(self, resource: Resource) -> None:
        """Adds to allocated on the whole path (no check: the caller checked, or recovers)."""
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"queue {self.path}")
        self._change_on_path("allocated", Resource.__add__, resource)

    def dec_allocated(self, resource: Resource) -> None:
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"queue {self.path}")
        self._change_on_path("allocated", Resource.__sub__, resource)

    def _change_on_path(self, field: str, change: Callable[[Resource, Resource], Resource], resource: Resource) -> None:
        """``field`` (allocated or pending) of every queue on the path changed by ``resource``;
        each queue is marked stale in its parent's child order (a sort key input changed)."""
        queue: Queue | None = self
        while queue is not None:
            setattr(queue, field, change(getattr(queue, field), resource))
            parent = queue.parent
            if parent is not None:
                parent.child_order.stale.add(queue)
            queue = parent

    def pending_allocated(self, resource: Resource) -> None:
        """A pending ``resource`` was allocated: off pending and onto allocated on the whole path
        in one walk (``dec_pending`` then ``inc_allocated``, as the scheduling cycle's commit)."""
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"queue {self.path}")
        queue: Queue | None = self
        while queue is not None:
            queue.pending, queue.allocated = transferred(queue.pending, queue.allocated, resource)
            parent = queue.parent
            if parent is not None:
                parent.child_order.stale.add(queue)
            queue = parent

    def inc_preempting(self, resource: Resource) -> None:
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"queue {self.path}")
        for queue in self.ancestors():
            queue.preempting = queue.preempting + resource

    def dec_preempting(self, resource: Resource) -> None:
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"queue {self.path}")
        for queue in self.ancestors():
            queue.preempting = queue.preempting - resource

    def inc_pending(self, resource: Resource) -> None:
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"queue {self.path}")
        self._change_on_path("pending", Resource.__add__, resource)

    def dec_pending(self, resource: Resource) -> None:
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"queue {self.path}")
        self._change_on_path("pending", Resource.__sub__, resource)

    # -- applications ----------------------------------------------------------------------------

    def add_application(self, app: Application) -> None:
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"queue {self.path}")
        self.applications[app.app_id] = app
        self.app_asks_changed(app, app.max_ask_priority)
        self._events.app_added(self.path, app.app_id)

    def remove_application(self, app: Application) -> None:
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"queue {self.path}")
        if self.applications.pop(app.app_id, None) is None:
            return
        self.clear_allocating_accepted(app.app_id)
        self.app_asks_changed(app, None)
        self._events.app_removed(self.path, app.app_id)

    # -- incremental scheduling state ---------------------------------------------------------------

    def app_asks_changed(self, app: Application, priority: int | None) -> None:
        """``app``'s highest pending ask priority is now ``priority`` (None: no pending asks), or
        another of its fifo keys changed (its submission time): the leaf's set of applications
        with asks, its fifo order and the priorities up the path follow. An application no longer
        in this queue counts as one without asks."""
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"queue {self.path}")
        if app.app_id not in self.applications:
            priority = None
        old = self._app_priorities.pop(app.app_id, None)
        if priority is None:
            self.apps_with_asks.pop(app.app_id, None)
        else:
            self._app_priorities[app.app_id] = priority
            self.apps_with_asks[app.app_id] = app
        _move_count(self._app_priority_counts, old, priority)
        self.fifo_order = None
        if old != priority:
            self._refresh_priority()

    def _refresh_priority(self) -> None:
        """Recomputes ``pending_priority`` from the counts and, when it changed, moves this
        queue's entry in its parent's counts; up the path while priorities change (one queue
        lock at a time)."""
        queue = self
        while True:
            old = queue.current_priority
            counts = queue._app_priority_counts if queue._is_leaf else queue._child_priority_counts
            queue.pending_priority = max(counts) if counts else MIN_PRIORITY
            new = priority_seen_by_parent(queue.pending_priority, queue.priority_offset, queue.priority_fence)
            queue.current_priority = new
            parent = queue.parent
            if new == old or parent is None:
                return
            parent.child_order.stale.add(queue)
            if parent.children.get(queue.name) is queue:
                _move_count(parent._child_priority_counts, old, new)
            queue = parent

    def priority_problems(self) -> list[str]:
        """Where the incremental state disagrees with the applications and children it counts
        (a health check for tests): empty when consistent."""
        apps = dict(self.applications)
        children = list(self.children.values())
        with_asks = dict(self.apps_with_asks)
        app_priorities = dict(self._app_priorities)
        app_counts, child_counts = dict(self._app_priority_counts), dict(self._child_priority_counts)
        priority, seen, is_leaf = self.pending_priority, self.current_priority, self._is_leaf
        offset, fence = self.priority_offset, self.priority_fence
        problems = []
        expected = {a.app_id: p for a in apps.values() if (p := a.max_ask_priority) is not None}
        if app_priorities != expected or set(with_asks) != set(expected):
            problems.append(f"queue {self.path} counts applications with asks {app_priorities}, expected {expected}")
        if app_counts != _counts(expected.values()):
            problems.append(f"queue {self.path} application priority counts {app_counts} are off")
        if child_counts != _counts(c.current_priority for c in children):
            problems.append(f"queue {self.path} child priority counts {child_counts} are off")
        counts = app_counts if is_leaf else child_counts
        if priority != (max(counts) if counts else MIN_PRIORITY):
            problems.append(f"queue {self.path} pending priority {priority} is not the highest of {counts}")
        if seen != priority_seen_by_parent(priority, offset, fence):
            problems.append(f"queue {self.path} current priority {seen} does not follow {priority} (offset, fence)")
        return problems

    def can_run_app(self) -> bool:
        """maxApplications on every level of the path allows one more running app; an
        Accepted gang application that holds placeholders counts as running (YuniKorn's
        allocatingAcceptedApps), or two half-placed gangs could share one slot."""
        for queue in self.ancestors():
            maximum = queue.max_applications
            if maximum > 0:
                if queue.running_apps + len(queue.allocating_accepted) + 1 > maximum:
                    return False
        return True

    def set_allocating_accepted(self, app_id: str) -> None:
        """An Accepted application got its first placeholder (on the whole path)."""
        for queue in self.ancestors():
            queue.allocating_accepted.add(app_id)

    def clear_allocating_accepted(self, app_id: str) -> None:
        """The application left Accepted (or its queue)."""
        for queue in self.ancestors():
            queue.allocating_accepted.discard(app_id)

    def inc_running_apps(self) -> None:
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"queue {self.path}")
        for queue in self.ancestors():
            queue.running_apps += 1

    def dec_running_apps(self) -> None:
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"queue {self.path}")
        for queue in self.ancestors():
            queue.running_apps -= 1

    def __repr__(self) -> str:
        kind = "leaf" if self._is_leaf else "parent"
        return f"Queue({self.path}, {kind}, {'managed' if self.managed else 'dynamic'}, {self.state.value})"


def _move_count(counts: dict[int, int], old: int | None, new: int | None) -> None:
    """One member of ``counts`` moves from priority ``old`` to ``new`` (None: not counted);
    priorities nobody sits at are dropped, so the highest key is always a live one."""
    if old == new:
        return
    if old is not None:
        left = counts[old] - 1
        if left:
            counts[old] = left
        else:
            del counts[old]
    if new is not None:
        counts[new] = counts.get(new, 0) + 1


def _counts(priorities: Iterable[int]) -> dict[int, int]:
    result: dict[int, int] = {}
    for priority in priorities:
        result[priority] = result.get(priority, 0) + 1
    return result
