"""What every partition operation shares: the partition's fields, and the bookkeeping that
follows an allocation's start and end outside the partition's own tables.

:class:`PartitionBase` holds the state (its ``__init__`` says what each field is) and, on the
per-allocation paths, the role-history hooks (where a role's instances ran), the user-usage
callbacks handed to the application (the user/group manager's counts) and
:meth:`PartitionBase.unreserve`. It is never used alone:
:class:`~pyscheduler.objects.partition.Partition` builds on it through
:class:`~pyscheduler.objects.partition_gangs.PartitionGangs`, so these are plain methods of a
partition, called without any extra layer. Callers hold the partition's lock.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from pyscheduler.common.clock import Clock
from pyscheduler.common.histogram import LatencyHistogram
from pyscheduler.common.resources import Resource
from pyscheduler.objects.allocation import Allocation
from pyscheduler.objects.application import Application, AppTimeouts
from pyscheduler.objects.locking import new_graph_lock
from pyscheduler.objects.member_clusters import MemberClusters
from pyscheduler.objects.topology import TopologyIndex
from pyscheduler.objects.node import Node
from pyscheduler.objects.object_events import ObjectEvents
from pyscheduler.objects.partition_outbox import Outbox
from pyscheduler.objects.placeholders import GangCounts
from pyscheduler.objects.queue import ObjectState, Queue, QueueSettings
from pyscheduler.objects.reservation import Reservations
from pyscheduler.objects.ugm import UserGroupManager
from pyscheduler.policies.node_ordering import NodeOrdering, make_node_ordering
from pyscheduler.policies.placement import PlacementManager
from pyscheduler.policies.role_history import RoleHistories, RoleHistory, history_key_of, role_of

__all__ = ["PartitionBase"]


class PartitionBase:
    """A partition's state and its per-allocation bookkeeping (see the module docstring)."""

    def __init__(
        self,
        name: str,
        rm_id: str,
        root_settings: QueueSettings,
        *,
        clock: Clock,
        events: ObjectEvents,
        timeouts: AppTimeouts | None = None,
        native_node_ordering: bool | None = None,
    ) -> None:
        self.name = name
        self.rm_id = rm_id
        #: Guards this partition's whole object graph (pyscheduler.objects.locking).
        self.lock = new_graph_lock()
        self.state = ObjectState.ACTIVE
        self.clock = clock
        #: When ``state`` last changed (its creation: a partition stays Active until removed).
        self.state_time_ns = clock.now_ns()
        self.events = events
        self.timeouts = timeouts or AppTimeouts()
        self.outbox = Outbox()
        self.root = Queue("root", None, events.queue, root_settings)
        self.root.graph_lock = self.lock
        self.nodes: dict[str, Node] = {}
        self._sorted_node_ids: list[str] | None = None
        self.applications: dict[str, Application] = {}
        #: Gang applications whose members may take placeholders' places now (running, with
        #: placeholders left: Application.ready_for_replacement), kept by the applications' own
        #: notifications: the only ones the cycle's placeholder phase looks at, in the order they
        #: became ready (a dict: insertion-ordered, so runs repeat exactly).
        self.gang_apps: dict[str, None] = {}
        self.completed_applications: dict[str, Application] = {}
        self.rejected_applications: dict[str, Application] = {}
        #: The applications' timers (completing, expiry, placeholder timeout) as a heap of (due,
        #: sequence, application): a tick looks at the due ones only, not at every application
        #: (terminated ones are kept three days: a busy cluster holds hundreds of thousands).
        #: A timer that was reset stays until due and then ticks its application for nothing.
        self._timers: list[tuple[float, int, Application]] = []
        self._timer_sequence = itertools.count()
        self._table_stamps = itertools.count(1)
        self.total = Resource()
        self.placement = PlacementManager([])
        self.ugm = UserGroupManager(events.ugm, self.lock)
        self.node_sort_policy = "fair"
        self.resource_weights: dict[str, float] = {"vcore": 1.0, "memory": 1.0}
        self.node_ordering: NodeOrdering = make_node_ordering(native=native_node_ordering)
        #: The member clusters of a hub partition (none: scheduling as without them).
        self.member_clusters = MemberClusters(events.app, native=native_node_ordering)
        self.reservations = Reservations(events.node, self.node_ordering)
        #: The topology levels and their domains (issue 34; no levels: scheduling as without them).
        self.topology = TopologyIndex(events.app, native=native_node_ordering)
        self.reservations.also_reserved = self._also_reserved
        self.preemption_enabled = True
        self.quota_preemption_enabled = False
        #: Preemption attempts (past the preconditions), preemptions made, victims chosen, and
        #: how long the guaranteed-share attempts took (YuniKorn's trypreemption latency).
        self.preemption_attempts = 0
        self.preemptions = 0
        self.preemption_victims = 0
        self.preemption_latency = LatencyHistogram()
        #: Placeholders asked, allocated, replaced and timed out (gang metrics), counted by the
        #: applications this partition added.
        self.gang_counts = GangCounts()
        self.allocation_count = 0
        #: Foreign allocations: key -> (node id, resource) counted as occupied on the node.
        self.foreign: dict[str, tuple[str, Resource]] = {}
        #: Called after a node or allocation change (the scheduler's wake-up, the node index).
        self.on_change: Callable[[], None] = lambda: None
        #: Where role instances ran, by history key (pyscheduler.policies.role_history).
        self.role_histories = RoleHistories()

    # -- reservations ---------------------------------------------------------------------------------

    def unreserve(self, allocation_key: str) -> None:
        """Ends the reservation the ask ``allocation_key`` holds, if any."""
        reservation = self.reservations.by_key.get(allocation_key)
        if reservation is not None:
            self.reservations.unreserve(allocation_key, self.nodes.get(reservation.node_id))

    # -- role history ---------------------------------------------------------------------------------

    def _role_history(self, app: Application, alloc: Allocation) -> tuple[RoleHistory, str] | None:
        role = role_of(alloc.tags, alloc.task_group_name)
        if not role:
            return None
        return self.role_histories.get_or_create(history_key_of(app.app_id, app.tags, alloc.tags)), role

    def _role_landed(self, app: Application, alloc: Allocation, node_id: str) -> None:
        found = self._role_history(app, alloc)
        if found is None:
            return
        if found[0].allocated(alloc.allocation_key, found[1], node_id):
            self.role_histories.history_placements += 1
        else:
            self.role_histories.other_placements += 1

    def _role_stopped(self, app: Application, alloc: Allocation, *, failed: bool, preempted: bool = False) -> None:
        found = self._role_history(app, alloc)
        if found is not None and alloc.node_id:
            found[0].released(found[1], alloc.node_id, self.clock.now_ns(), failed=failed, preempted=preempted)

    def _role_ask_removed(self, app: Application, ask: Allocation) -> None:
        found = self._role_history(app, ask)
        if found is not None:
            found[0].ask_removed(ask.allocation_key)

    # -- user and group usage ---------------------------------------------------------------------------

    def _usage_added(self, app: Application) -> Callable[[Allocation], None]:
        queue_path = app.queue.path if app.queue else ""
        return lambda alloc: self.ugm.increase_usage(queue_path, app.app_id, app.user, app.groups, alloc.resource)

    def _usage_removed(self, app: Application) -> Callable[[Allocation], None]:
        queue_path = app.queue.path if app.queue else ""

        def removed(alloc: Allocation) -> None:
            # Done only with nothing allocated and nothing pending (YuniKorn's
            # hasZeroAllocations): an app that still waits for asks keeps running for its user,
            # or another app could take its slot under maxapplications while it gets more.
            done = not app.allocations and not app.asks
            self.ugm.decrease_usage(queue_path, app.app_id, app.user, app.groups, alloc.resource, done)

        return removed

    def _also_reserved(self, node_id: str, reserved: bool) -> None:
        """The reservations on a node changed: the node orders of its member cluster and its
        topology domains skip it too."""
        self.member_clusters.set_reserved(node_id, reserved)
        if self.topology.levels:
            self.topology.set_reserved(node_id, reserved)
