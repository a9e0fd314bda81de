"""Partitions: one queue tree, its nodes and applications, and every change to them.

Every mutation of a partition runs under the partition's lock, which guards its whole object
graph (:mod:`pyscheduler.objects.locking`), so an RM message is applied whole or not at all:
each operation checks everything it needs before it changes anything. Outcomes for the RM
(state updates, releases) are collected in :attr:`Partition.outbox` and sent by the cluster
context after the lock is released, so the RM may call back in without deadlocking.

Where the parts live (each module imports only those listed before it, and none imports this
one at run time):

- :mod:`~pyscheduler.objects.partition_outbox`: what the RM is told (:class:`Released`, the
  termination types, :data:`TERMINATION_DETAIL`, :class:`Outbox`);
- :mod:`~pyscheduler.objects.partition_base`: the partition's fields and its per-allocation
  bookkeeping outside its own tables (role history, user usage, reservations);
- :mod:`~pyscheduler.objects.partition_gangs`: placeholder replacement and timeouts;
- this module: :class:`Partition` (queues, nodes, foreign allocations, applications, asks and
  allocations, timers and clean-up) and :class:`PartitionError`. Every public name of the
  modules above that this one had is importable from here too.

:class:`Partition` is one class built in layers (``Partition`` -> ``PartitionGangs`` ->
``PartitionBase``): a method of a lower layer is an ordinary method of the partition, so the
split costs no call on the scheduling cycle's per-allocation paths.
"""

from __future__ import annotations

import heapq
from operator import attrgetter
from collections.abc import Iterator, Mapping

from pyscheduler.common.errors import SchedulerError
from pyscheduler.common.resources import Resource
from pyscheduler.si.events import EventChangeDetail
from pyscheduler.objects.allocation import Allocation
from pyscheduler.objects.application import RUNNING_STATES, Application
from pyscheduler.objects.application_state import TERMINAL_STATES, AppEvent, AppState
from pyscheduler.config.queue_preemption import quota_preemption_delay_ns
from pyscheduler.config.validator import MAX_QUEUE_DEPTH
from pyscheduler.objects.node import NODE_PARTITION, Node
from pyscheduler.objects.partition_gangs import PartitionGangs
from pyscheduler.objects.partition_outbox import (
    PLACEHOLDER_REPLACED,
    PREEMPTED_BY_SCHEDULER,
    STOPPED_BY_RM,
    TERMINATION_DETAIL,
    TIMEOUT,
    Outbox,
    Released,
)
from pyscheduler.objects.queue import ObjectState, Queue, QueueSettings
from pyscheduler.policies.member_cluster_tags import ClusterTagError, parse_cluster_request
from pyscheduler.policies.topology_tags import TopologyTagError, parse_topology_request
from pyscheduler.objects.topology_slices import Slices
from pyscheduler.policies.placement import PlacementRejected
from pyscheduler.si.vocabulary import CLUSTER_ATTRIBUTE

__all__ = [
    "Outbox",
    "PLACEHOLDER_REPLACED",
    "PREEMPTED_BY_SCHEDULER",
    "Partition",
    "PartitionError",
    "Released",
    "STOPPED_BY_RM",
    "TERMINATION_DETAIL",
    "TIMEOUT",
]

class PartitionError(SchedulerError):
    """A request the partition refuses; the message is the reason sent to the RM."""


class Partition(PartitionGangs):
    """One queue tree, its nodes and applications (see the module docstring)."""

    # -- queues ---------------------------------------------------------------------------------

    def get_queue(self, path: str) -> Queue | None:
        """The queue at a fully qualified path (the placement rules' view)."""
        parts = path.lower().split(".")
        if not parts or parts[0] != "root":
            return None
        queue = self.root
        for name in parts[1:]:
            child = queue.children.get(name)
            if child is None:
                return None
            queue = child
        return queue

    def queues(self) -> Iterator[Queue]:
        return self.root.walk()

    def _create_dynamic(self, path: str) -> Queue:
        """Creates every missing level of ``path`` as a dynamic queue (from child templates).
        Raises PlacementRejected, creating nothing, for a path deeper than the configuration may
        make a tree (every REST endpoint must be able to render it)."""
        parts = path.lower().split(".")
        if len(parts) > MAX_QUEUE_DEPTH:
            raise PlacementRejected(f"queue {path} is more than {MAX_QUEUE_DEPTH} levels deep")
        queue = self.root
        for depth, name in enumerate(parts[1:], start=1):
            child = queue.children.get(name)
            if child is None:
                is_last = depth == len(parts) - 1
                template = queue.child_template()
                settings = template if is_last else QueueSettings(
                    parent=True, properties=template.properties, submit_acl=template.submit_acl
                )
                child = Queue(name, queue, self.events.queue, settings, managed=False)
            queue = child
        return queue

    # -- nodes ------------------------------------------------------------------------------------

    def add_node(self, node_id: str, capacity: Resource, attributes: dict[str, str], *, schedulable: bool = True,
                 occupied: Resource | None = None) -> Node:
        with self.lock:
            if self.state is not ObjectState.ACTIVE:
                raise PartitionError(f"partition {self.name} is {self.state.value.lower()}: no new nodes")
            if node_id in self.nodes:
                raise PartitionError(f"node {node_id} already exists")
            if capacity.has_negative():
                raise PartitionError(f"node {node_id} has a negative capacity: {capacity}")
            node = Node(node_id, capacity, attributes, self.events.node, schedulable=schedulable, occupied=occupied)
            node.graph_lock = self.lock
            node.add_listener(self._node_changed)
            self._node_changed(node)
            self.nodes[node_id] = node
            self._sorted_node_ids = None
            self._set_total(self.total + node.total)
            self.events.node.added(node_id, node.total)
            self.role_histories.node_state(node_id, schedulable)
            if CLUSTER_ATTRIBUTE in node.attributes:
                self.member_clusters.node_added(node, self.applications)
            if self.topology.levels:
                self.topology.node_added(node, self.applications)
        self.on_change()
        return node

    def _node_changed(self, node: Node) -> None:
        # The node order is told of every change of a node's resources or state.
        self.node_ordering.upsert(node.node_id, node.total, node.available, node.schedulable)

    def sorted_node_ids(self) -> list[str]:
        """The node ids in order, kept between node additions and removals (do not change it)."""
        if self._sorted_node_ids is None:
            self._sorted_node_ids = sorted(self.nodes)
        return self._sorted_node_ids

    def fitting_node_ids(self, resource: Resource) -> Iterator[str]:
        """The ids of the schedulable nodes whose free room holds ``resource``, reserved or not,
        from the node index (no scan of the nodes when none fits)."""
        cursor = self.node_ordering.first_fit(resource, skip_reserved=False)
        while cursor is not None:
            yield cursor[1]
            cursor = self.node_ordering.first_fit(resource, after=cursor, skip_reserved=False)

    def set_node_sort_policy(self, policy: str, weights: dict[str, float]) -> None:
        with self.lock:
            self.node_sort_policy = policy
            self.resource_weights = dict(weights)
            self.node_ordering.set_policy(policy, weights)
            self.member_clusters.set_policy(policy, weights)
            self.topology.set_policy(policy, weights)

    def set_topology_levels(self, levels: tuple[str, ...]) -> None:
        """The configuration's topology levels (outermost first; empty: none)."""
        with self.lock:
            self.topology.set_levels(levels, self.nodes, self.applications)

    def update_node(self, node_id: str, *, capacity: Resource | None = None,
                    attributes: Mapping[str, str] | None = None, reported_attributes: Mapping[str, str] | None = None,
                    occupied: Resource | None = None) -> None:
        """An RM's (or the reporter manager's) UPDATE: whatever is not None replaces the
        node's capacity, RM attributes, reported attributes or occupied resources. Everything
        is checked before anything changes; a node cannot change partitions."""
        with self.lock:
            node = self._node(node_id)
            if capacity is not None and capacity.has_negative():
                raise PartitionError(f"node {node_id} has a negative capacity: {capacity}")
            if attributes is not None:
                wanted = attributes.get(NODE_PARTITION, "")
                current = node.attributes.get(NODE_PARTITION, "")
                if wanted and wanted != current:
                    raise PartitionError(f"node {node_id} cannot move from partition {current or 'default'!r} "
                                         f"to {wanted!r}")
            if capacity is not None:
                delta = node.set_capacity(capacity)
                if not delta.is_zero():
                    self._set_total(self.total + delta)
            if occupied is not None:
                node.set_occupied(occupied)
            if (attributes is not None or reported_attributes is not None) and \
                    node.set_attributes(attributes, reported_attributes) and \
                    (CLUSTER_ATTRIBUTE in node.attributes or node_id in self.member_clusters.cluster_of_node):
                self.member_clusters.node_added(node, self.applications)  # joins, moves or leaves its cluster
            if self.topology.levels and (attributes is not None or reported_attributes is not None):
                self.topology.node_added(node, self.applications)  # joins, moves or leaves its domains
        self.on_change()

    def set_node_schedulable(self, node_id: str, schedulable: bool) -> None:
        with self.lock:
            self._node(node_id).set_schedulable(schedulable)
            self.role_histories.node_state(node_id, schedulable)
        self.on_change()

    def remove_node(self, node_id: str) -> list[Released]:
        """Removes a node, releasing every allocation on it (ALLOC_NODEREMOVED)."""
        with self.lock:
            node = self._node(node_id)
            for reservation in self.reservations.on_node(node_id):
                self.reservations.unreserve(reservation.allocation_key, node)
            released = []
            for alloc in sorted(node.allocations.values(), key=lambda a: a.allocation_key):
                app = self.applications.get(alloc.application_id)
                if app is not None and alloc.replacing is not None:
                    # A real member placed here while its placeholder is elsewhere: undone, it
                    # waits again (the RM never heard of it).
                    self._undo_replacement(app, alloc.replacing)
                    continue
                if app is not None and alloc.replaced_by is not None and alloc.replaced_by.node_id != node_id:
                    # A placeholder whose member is on another node: the replacement completes.
                    self._finish_replacement(app, alloc)
                    released.append(Released(alloc.application_id, alloc.allocation_key, STOPPED_BY_RM, "node removed"))
                    continue
                if app is not None:
                    if alloc.replaced_by is not None:
                        self._undo_replacement(app, alloc)
                    app.remove_allocation(alloc.allocation_key, EventChangeDetail.ALLOC_NODEREMOVED, self._usage_removed(app))
                    self._role_stopped(app, alloc, failed=True)
                node.remove_allocation(alloc.allocation_key)
                released.append(Released(alloc.application_id, alloc.allocation_key, STOPPED_BY_RM, "node removed"))
            del self.nodes[node_id]
            self._sorted_node_ids = None
            self.role_histories.node_state(node_id, False)
            self.node_ordering.remove(node_id)
            if self.member_clusters.clusters:
                self.member_clusters.node_removed(node_id, self.applications)
            if self.topology.levels:
                self.topology.node_removed(node_id, self.applications)
            self._set_total(self.total - node.total)
            self.events.node.removed(node_id)
            self.outbox.released.extend(released)
        self.on_change()
        return released

    def add_foreign(self, key: str, node_id: str, resource: Resource) -> None:
        """A pod the scheduler did not place: it occupies part of its node."""
        with self.lock:
            node = self._node(node_id)
            old = self.foreign.get(key)
            if old is not None:
                node_of_old = self.nodes.get(old[0])
                if node_of_old is not None:
                    node_of_old.set_occupied(node_of_old.occupied - old[1])
            self.foreign[key] = (node_id, resource)
            node.set_occupied(node.occupied + resource)
        self.on_change()

    def release_foreign(self, key: str) -> None:
        with self.lock:
            entry = self.foreign.pop(key, None)
            if entry is None:
                raise PartitionError(f"unknown foreign allocation {key}")
            node = self.nodes.get(entry[0])
            if node is not None:
                node.set_occupied(node.occupied - entry[1])
        self.on_change()

    def _node(self, node_id: str) -> Node:
        node = self.nodes.get(node_id)
        if node is None:
            raise PartitionError(f"unknown node {node_id}")
        return node

    def _set_total(self, total: Resource) -> None:
        self.total = total
        # Root's maximum is always the sum of the node capacities.
        self.root.set_max_resource(total)

    # -- applications -------------------------------------------------------------------------------

    def add_application(self, app: Application) -> None:
        """Places the application in a leaf queue, or rejects it (raising PartitionError with
        the reason, after the app was moved to the rejected applications)."""
        with self.lock:
            app.graph_lock = self.lock
            app.on_timer = self._timer_set
            app.gang_counts = self.gang_counts
            try:
                if self.state is not ObjectState.ACTIVE:
                    raise PlacementRejected(f"partition {self.name} is {self.state.value.lower()}: no new applications")
                if app.app_id in self.applications:
                    raise PlacementRejected(f"application {app.app_id} already exists")
                result = self.placement.place(app.app_id, app.queue_name, app.user, app.groups, app.tags, self)
                queue = self.get_queue(result.queue_path)
                if queue is None:
                    queue = self._create_dynamic(result.queue_path)
                if not queue.is_leaf:
                    raise PlacementRejected(f"queue {queue.path} is not a leaf queue")
                if not app.placeholder_ask.is_zero():
                    self._check_gang(app, queue)
                try:
                    app.cluster_request = parse_cluster_request(app.tags)
                    app.topology_request = parse_topology_request(app.tags, self.topology.levels)
                    if app.topology_request.slice_size:
                        app.topology_slices = Slices(app.topology_request.slice_size)
                except (ClusterTagError, TopologyTagError) as err:
                    raise PlacementRejected(f"application {app.app_id}: {err}") from None
            except PlacementRejected as err:
                app.reject(str(err))
                self.rejected_applications[app.app_id] = app
                app.table_order = next(self._table_stamps)
                raise PartitionError(str(err)) from None
            app.queue = queue
            self.applications[app.app_id] = app
            app.table_order = next(self._table_stamps)
            queue.add_application(app)
            app.on_replacement_readiness = self._replacement_readiness

    @staticmethod
    def _check_gang(app: Application, queue: Queue) -> None:
        """A gang app needs a FIFO leaf (placeholders are replaced in order) whose max over the
        whole path, root's cluster size included, fits all its placeholders: otherwise the gang
        could never be complete. Raises PlacementRejected with YuniKorn's messages."""
        if queue.sort_policy != "fifo":
            raise PlacementRejected(
                f"queue {queue.path} cannot run application {app.app_id} with task group request: unsupported sort type"
            )
        maximum = queue.effective_max()
        if not app.placeholder_ask.fits_in_max_undef(maximum):
            raise PlacementRejected(
                f"queue {queue.path} cannot fit application {app.app_id}: task group request "
                f"{app.placeholder_ask} larger than max queue allocation {maximum}"
            )

    def remove_application(self, app_id: str) -> list[Released]:
        """Removes an application, releasing its asks and allocations (STOPPED_BY_RM)."""
        with self.lock:
            app = self._app(app_id)
            for reservation in self.reservations.of_app(app_id):
                self.reservations.unreserve(reservation.allocation_key, self.nodes.get(reservation.node_id))
            released = self._release_all(app, STOPPED_BY_RM, "application removed")
            for ask in app.sorted_asks():
                app.remove_ask(ask.allocation_key, EventChangeDetail.REQUEST_CANCEL)
                self._role_ask_removed(app, ask)
            if app.queue is not None:
                app.queue.remove_application(app)
                # A removed app never reaches Completed (no one ticks it any more): if it still
                # counts as running (Running or Completing), its queues get the slot back now,
                # otherwise maxApplications would stay used forever.
                if app.state in RUNNING_STATES:
                    app.queue.dec_running_apps()
            del self.applications[app_id]
            self.gang_apps.pop(app_id, None)
            if app.member_cluster:
                self.member_clusters.forget(app)
            if app.topology_domain:
                self.topology.forget(app)
            self.events.app.removed(app_id)
            self.ugm.remove_app(app.app_id, app.user)
            self.outbox.released.extend(released)
        self.on_change()
        return released

    def _app(self, app_id: str) -> Application:
        app = self.applications.get(app_id)
        if app is None:
            raise PartitionError(f"unknown application {app_id}")
        return app

    # -- asks and allocations -------------------------------------------------------------------------

    def update_allocation(self, alloc: Allocation) -> str:
        """A new ask, a recovered or bound allocation, or a new size. Returns what happened:
        "ask", "recovered", "bound" or "updated". Raises PartitionError with the reason."""
        with self.lock:
            if not alloc.resource.strictly_greater_than_zero():
                raise PartitionError(f"allocation {alloc.allocation_key}: resource must be positive, got {alloc.resource}")
            app = self._app(alloc.application_id)
            node = self._node(alloc.node_id) if alloc.node_id else None
            existing = app.allocations.get(alloc.allocation_key)
            if existing is not None:
                if existing.resource != alloc.resource:
                    self._resize_allocation(app, existing, alloc.resource)
                return "updated"
            if node is None:
                app.add_ask(alloc)
                self.on_change()
                return "ask"
            pending = app.asks.get(alloc.allocation_key)
            if pending is not None:
                # The RM bound a pending ask itself: it becomes an allocation on that node (and
                # a reservation it held is over, like when the cycle places it).
                self.unreserve(alloc.allocation_key)
                if self.member_clusters.clusters:
                    self.member_clusters.pin_to_node(app, node, "the RM bound an allocation there")
                if app.topology_request.level:
                    self.topology.pin_to_node(app, node, "the RM bound an allocation there")
                node.add_allocation(pending)
                app.allocate(pending, node.node_id, self._usage_added(app), node.instance_type)
                self._role_landed(app, pending, node.node_id)
                self.allocation_count += 1
                self._arm_quota_preemption(app.queue)
                return "bound"
            alloc.place(node.node_id, self.clock.now_ns(), node.instance_type)
            if self.member_clusters.clusters:
                self.member_clusters.pin_to_node(app, node, "an allocation the RM reported runs there")
            if app.topology_request.level:
                self.topology.pin_to_node(app, node, "an allocation the RM reported runs there")
            node.add_allocation(alloc)
            app.recover_allocation(alloc, self._usage_added(app))
            self._role_landed(app, alloc, node.node_id)
            self.allocation_count += 1
            self._arm_quota_preemption(app.queue)
        self.on_change()
        return "recovered"

    def _arm_quota_preemption(self, queue: Queue | None) -> None:
        """YuniKorn's IncAllocatedResource rule: usage counted without a headroom check (an
        allocation the RM reports or binds, or grows) that takes a managed queue over its max
        arms its quota preemption at now plus its ``quota.preemption.delay``, when the partition
        has quota preemption on, the delay is set and the queue is not armed already. Checked on
        the queue and each ancestor (each counts the usage)."""
        if not self.quota_preemption_enabled or queue is None:
            return
        for ancestor in queue.ancestors():
            if not ancestor.is_managed or ancestor.quota_preemption_start_ns:
                continue
            delay = quota_preemption_delay_ns(ancestor.properties)
            if delay > 0 and ancestor.over_max():
                ancestor.quota_preemption_start_ns = self.clock.now_ns() + delay
                ancestor.quota_preemption_delay_armed_ns = delay

    def _resize_allocation(self, app: Application, alloc: Allocation, resource: Resource) -> None:
        """An existing key with a new size (YuniKorn's UpdateAllocation; K8s in-place pod
        resize): the node, the application, its queues and its user's usage all move by the
        difference."""
        delta = app.resize_allocation(alloc.allocation_key, resource)
        if alloc.preempted and app.queue is not None:
            # A victim the RM has not killed yet: its queues' preempting resource follows its size
            # (the confirmed release takes away the new size).
            app.queue.inc_preempting(delta)
        node = self.nodes.get(alloc.node_id)
        if node is not None:
            node.resize_allocation(alloc.allocation_key, delta)
        # User usage only ever grows by increases and shrinks by decreases (its events say which).
        grow = Resource({k: v for k, v in delta.items() if v > 0})
        shrink = Resource({k: -v for k, v in delta.items() if v < 0})
        queue_path = app.queue.path if app.queue else ""
        if not grow.is_zero():
            self.ugm.increase_usage(queue_path, app.app_id, app.user, app.groups, grow)
            self._arm_quota_preemption(app.queue)
        if not shrink.is_zero():
            self.ugm.decrease_usage(queue_path, app.app_id, app.user, app.groups, shrink)

    def commit_allocation(self, app: Application, ask: Allocation, node: Node) -> None:
        """Places a pending ask on a node: node, application, queues and user usage updated
        and the events emitted in YuniKorn's order. The scheduling cycle's commit.

        Raises PartitionError, changing nothing, when the decision went stale before the lock
        was taken (the app or node was removed, the ask released or already placed): placing it
        anyway would put an allocation on a node or app the partition no longer has."""
        with self.lock:
            if (
                self.applications.get(app.app_id) is not app
                or app.asks.get(ask.allocation_key) is not ask
                or self.nodes.get(node.node_id) is not node
            ):
                raise PartitionError(f"allocation {ask.allocation_key} of {app.app_id} on {node.node_id} is stale")
            self.unreserve(ask.allocation_key)
            if self.member_clusters.clusters and not app.member_cluster:
                self.member_clusters.pin_to_node(app, node, f"first allocation {ask.allocation_key} on {node.node_id}")
            if app.topology_request.level and not app.topology_domain:
                self.topology.pin_to_node(app, node, f"first allocation {ask.allocation_key} on {node.node_id}")
            if app.topology_slices is not None:
                slice_domain = self.topology.domain_of(node.node_id, app.topology_request.slice_level)
                app.topology_slices.landed(ask.allocation_key, slice_domain.name if slice_domain is not None else "")
            node.add_allocation(ask)
            app.allocate(ask, node.node_id, self._usage_added(app), node.instance_type)
            self._role_landed(app, ask, node.node_id)
            self.allocation_count += 1
            # Told to the RM through the outbox, in order with the releases that may follow.
            self.outbox.allocated.append(ask)
        self.on_change()

    def release(self, app_id: str, allocation_key: str, termination_type: int, message: str = "", *,
                failed: bool = False) -> list[Released]:
        """Releases one allocation or ask by key, or all of the app's allocations (empty key).
        ``failed``: the RM says the instances failed (role history counts it against the node)."""
        with self.lock:
            app = self._app(app_id)
            placeholder = app.allocations.get(allocation_key) if allocation_key else None
            if termination_type == PLACEHOLDER_REPLACED and (placeholder is None or placeholder.placeholder):
                # The RM confirms a placeholder's release; a second confirmation finds nothing.
                if placeholder is not None:
                    self._finish_replacement(app, placeholder)
                released = []
            elif not allocation_key:
                released = self._release_all(app, termination_type, message, failed)
            elif allocation_key in app.allocations:
                released = [self._release_one(app, allocation_key, termination_type, message, failed)]
            elif allocation_key in app.asks:
                self.unreserve(allocation_key)
                ask = app.remove_ask(allocation_key)
                if ask is not None:
                    self._role_ask_removed(app, ask)
                released = []
            elif self._withdraw_member(app, allocation_key):
                released = []
            else:
                raise PartitionError(f"application {app_id} has no allocation {allocation_key}")
        self.on_change()
        return released

    def _release_all(self, app: Application, termination_type: int, message: str, failed: bool = False) -> list[Released]:
        keys = sorted(app.allocations)
        return [self._release_one(app, key, termination_type, message, failed) for key in keys]

    def _release_one(self, app: Application, key: str, termination_type: int, message: str,
                     failed: bool = False) -> Released:
        detail = TERMINATION_DETAIL.get(termination_type, EventChangeDetail.ALLOC_CANCEL)
        placeholder = app.allocations[key]
        if placeholder.replaced_by is not None:
            self._undo_replacement(app, placeholder)  # it ends otherwise: its member waits again
        alloc = app.remove_allocation(key, detail, self._usage_removed(app))
        assert alloc is not None
        self._role_stopped(app, alloc, failed=failed, preempted=termination_type == PREEMPTED_BY_SCHEDULER)
        node = self.nodes.get(alloc.node_id)
        if node is not None:
            node.remove_allocation(key)
        return Released(app.app_id, key, termination_type, message)

    # -- timers and clean-up ------------------------------------------------------------------------

    def tick(self) -> None:
        """Fires due application timers, moves terminated apps aside, removes expired ones and
        empty draining or dynamic queues. Only applications with a due timer are looked at, in
        the order of their tables (live, then completed, then rejected; each in insertion order)."""
        with self.lock:
            due = self._due_applications()
            by_order = attrgetter("table_order")
            # Sorted out before any fires: one that completes now is not ticked again as completed.
            completed, rejected = self.completed_applications, self.rejected_applications
            live_due = sorted((a for a in due if self.applications.get(a.app_id) is a), key=by_order)
            completed_due = sorted((a for a in due if completed.get(_completed_key(a)) is a), key=by_order)
            rejected_due = sorted((a for a in due if rejected.get(a.app_id) is a), key=by_order)
            for app in live_due:
                if app.placeholder_timeout_due():
                    self._time_out_placeholders(app)
                state = app.tick()
                if state in (AppState.COMPLETED, AppState.FAILED):
                    self._move_terminated(app)
            for app in completed_due:
                if app.tick() is AppState.EXPIRED:
                    del completed[_completed_key(app)]
            for app in rejected_due:
                if app.tick() is AppState.EXPIRED:
                    del rejected[app.app_id]
            self._clean_queues()

    def _timer_set(self, app: Application, due: float) -> None:
        heapq.heappush(self._timers, (due, next(self._timer_sequence), app))

    def _due_applications(self) -> list[Application]:
        """The applications with a timer due now (each once), taken off the timer heap."""
        now = self.clock.monotonic()
        timers = self._timers
        due: dict[int, Application] = {}
        while timers and timers[0][0] <= now:
            app = heapq.heappop(timers)[2]
            due[id(app)] = app
        return list(due.values())

    def _move_terminated(self, app: Application) -> None:
        del self.applications[app.app_id]
        self.gang_apps.pop(app.app_id, None)
        if app.member_cluster:
            self.member_clusters.forget(app)
        if app.topology_domain:
            self.topology.forget(app)
        if app.queue is not None:
            app.queue.remove_application(app)
        self.ugm.remove_app(app.app_id, app.user)
        self.completed_applications[_completed_key(app)] = app
        app.table_order = next(self._table_stamps)

    def _clean_queues(self) -> None:
        """Bottom-up: removes empty draining managed queues and empty dynamic queues."""
        for queue in reversed(list(self.root.walk())):
            if queue.parent is None or not queue.is_empty():
                continue
            if queue.is_draining or not queue.managed:
                queue.parent.remove_child(queue.name)

    def fail_all(self, message: str) -> None:
        """Partition removal: every application fails."""
        with self.lock:
            for app in list(self.applications.values()):
                if app.state not in TERMINAL_STATES and app.state is not AppState.FAILING:
                    app.handle(AppEvent.FAIL, message)


def _completed_key(app: Application) -> str:
    """An application's key among the completed ones (an id may come back after it completed)."""
    return f"{app.app_id}-{app.terminated_at_s}"
