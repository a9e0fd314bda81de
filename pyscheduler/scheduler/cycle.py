"""The scheduling cycle: one allocation decision per partition per cycle (YuniKorn's
``ClusterContext.schedule``).

Per partition, under its lock:

1. reserved asks: each reservation's ask is tried on its node, then (for normal reservations)
   on any other unreserved node; stale reservations are dropped;
2. placeholder replacement (gang scheduling, pyscheduler.objects.placeholders): a real member
   of a task group takes one of its group's placeholders, on the placeholder's node when the
   RM's predicates accept it there, else on the first node that fits; a member larger than
   the placeholders releases them; the RM is asked to release the placeholder, and the member
   counts (and goes to the RM as new) once it confirms;
3. regular allocation: a depth-first walk from root through the queues with pending asks.
   Parents sort those children fairly (by YuniKorn's currentPriority: offsets and fences
   applied), leaves sort their applications with asks (fifo or fair; priority second where
   ``application.sort.priority`` is disabled), applications walk their asks by priority then age. An ask must fit the user headroom and the queue headroom; a required-node ask
   only tries its node and otherwise reserves it at once; an ask with a role tries its role
   history node first (pyscheduler.policies.role_history) and, when it does not fit there,
   holds it with a reservation until its placement timeout; any other ask takes the first node
   in the node order that fits and that the RM's predicates accept (an ask the RM ranks nodes
   for: the best of the first few such nodes, pyscheduler.scheduler.node_preference). An ask that fits no node
   and is older than the reservation delay reserves the node it fits best.

The allocation is committed in the same cycle (node, application, queues, user usage,
events) and the RM is told once the partition's lock is released.

**Preemption** is an extension point (:mod:`pyscheduler.scheduler.preemption.preemptor`): where
an ask cannot be placed (over its queue's headroom, no node takes it, a reserved daemon set ask
whose node lacks room) the cycle builds one attempt and offers it to its preemptors in order
(guaranteed share, required node, quota change by default); the first plan is applied here
(victims marked and released through the RM naming the ask as their preemptor, the node
reserved when the plan says so) and ends the partition's walk, as a reservation would.

**Member clusters** (issue 33 level 2: a hub partition whose nodes name their cluster,
:mod:`pyscheduler.objects.member_clusters`): each application is placed whole in one cluster.
The walk decides once per application visit which clusters it may use, in order
(:mod:`pyscheduler.scheduler.cluster_choice`), and its asks take the steps above within them
(:mod:`pyscheduler.scheduler.cycle_clusters`): node search, reservations, placeholder
replacement, role history, required nodes and preemption use those clusters' nodes only. A
partition without clusters pays one check per application visit. **Topology domains** (issue 34,
:mod:`pyscheduler.scheduler.topology_choice`) are groups of nodes of the same kind: an
application asking for a level is kept to one domain of it the same way.

**Reserved asks** (step 1) are :mod:`pyscheduler.scheduler.cycle_reservations`.

**Futile shapes** (:mod:`pyscheduler.scheduler.cycle_shapes`): within a partition's cycle, an
ask shaped like one whose node search (or search for a node to reserve) found nothing, without
the RM's predicates being asked, skips that search; it still reports and tries preemption as
its own (``futile_searches_skipped`` counts the skips).

**Scheduling states.** Where a request event says why an ask waits (YuniKorn's ask events),
the RM also hears ``update_container_scheduling_state`` with the same text and a typed code
(:mod:`pyscheduler.scheduler.ask_reports`): SKIPPED with QUEUE_QUOTA or USER_QUOTA when the
check starts failing, FAILED with NO_NODE_FITS, PREDICATES or REQUIRED_NODE at most once per
ask every :data:`PREDICATES_EVENT_INTERVAL`. They go through the partition's outbox, after its
lock is released, like every other outcome; nothing is added on the path of an ask that is
placed.

What the walk sorts by is kept up to date as asks come and go, not recomputed per cycle: each
queue's highest pending ask priority and each leaf's applications with asks (and their fifo
order) live in the queues (:meth:`Queue.app_asks_changed`), so a cycle costs the queues and
applications on its path, not every queue and application of the partition.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from pyscheduler.common.enums import member_table
from pyscheduler.common.resources import Resource
from pyscheduler.si.events import EventChangeDetail
from pyscheduler.objects.allocation import Allocation
from pyscheduler.objects.application import Application
from pyscheduler.objects.application_state import AppState
from pyscheduler.objects.node import Node
from pyscheduler.objects.node_groups import NodeGroup
from pyscheduler.objects.partition import PREEMPTED_BY_SCHEDULER, Partition, Released
from pyscheduler.objects.queue import ObjectState, Queue, queue_shape_version
from pyscheduler.policies.node_ordering import Cursor, NodeOrdering
from pyscheduler.policies.role_history import Placement, history_key_of, role_of
from pyscheduler.policies.sorting import app_sorter
from pyscheduler.scheduler.preemption import note
from pyscheduler.scheduler.preemption.policies import PREEMPTION_RELEASE, REQUIRED_NODE_PREEMPTION_RELEASE
from pyscheduler.scheduler.preemption.preemptor import (
    AttemptBudget,
    PreemptionAttempt,
    PreemptionPlan,
    PreemptionTrigger,
    Preemptor,
)
from pyscheduler.si.callback import PredicatesFunc, PreemptionPredicatesFunc, check_predicates
from pyscheduler.si.messages import TAG_SCORE_NODES, PredicatesArgs, ScoreNodesArgs
from pyscheduler.scheduler import ask_reports
from pyscheduler.scheduler.ask_reports import PREDICATES_EVENT_INTERVAL
from pyscheduler.scheduler.cluster_choice import ClusterScope, choose_scope
from pyscheduler.scheduler.history_gangs import placeholders_in_order, remembered_nodes
from pyscheduler.scheduler.topology_choice import acceptance, choose_domain_scope, choose_slice_scope
from pyscheduler.scheduler.cycle_clusters import pin_by_plan, try_in_clusters
from pyscheduler.scheduler.cycle_reservations import try_reserved
from pyscheduler.scheduler.cycle_shapes import FutileShapes
from pyscheduler.scheduler.node_preference import best_candidate, feasible_nodes_to_find

if TYPE_CHECKING:
    from pyscheduler.scheduler.context import ClusterContext

__all__ = [
    "DEFAULT_RESERVATION_DELAY",
    "Decision",
    "PREDICATES_EVENT_INTERVAL",
    "MAX_PREEMPTIONS_PER_LEAF",
    "PREEMPTION_RELEASE",
    "QUEUE_QUOTA",
    "REQUIRED_NODE_PREEMPTION_RELEASE",
    "SchedulingCycle",
    "USER_QUOTA",
]

#: Seconds an ask must wait before it may reserve a node (YuniKorn's reservationDelay).
DEFAULT_RESERVATION_DELAY = 2.0
#: Reservation candidates checked with the RM per pass over the nodes (most asks take the first).
RESERVATION_CANDIDATE_BATCH = 16
QUEUE_QUOTA = "Not enough queue quota"
#: Allocation log entries of role history: waiting for the history node, leaving it.
HISTORY_WAIT_PREFIX = "Waiting for its history node "
HISTORY_TIMEOUT = "Left its history node after the placement timeout"
USER_QUOTA = "Not enough user quota"
#: Preemption attempts per leaf visit (YuniKorn's maxPreemptionsPerQueue).
MAX_PREEMPTIONS_PER_LEAF = 10
#: Member tables (common.enums) for the states the walk reads of every queue and application.
ObjectStates = member_table(ObjectState)
AppStates = member_table(AppState)


class Decision(NamedTuple):
    """An allocation made in a cycle (a named tuple: one is made per allocation, and a frozen
    dataclass's field-by-field ``object.__setattr__`` took three times as long)."""

    partition: Partition
    app: Application
    ask: Allocation
    node: Node
    from_reservation: bool = False
    #: The placeholder whose place ``ask`` takes (gang scheduling), when this is a replacement.
    replaced: Allocation | None = None


class SchedulingCycle:
    """One scheduling pass per :meth:`run`. ``preemptors`` are the preemption policies offered
    an ask that cannot be placed, in order (default: the context's,
    :func:`pyscheduler.scheduler.preemption.policies.default_preemptors`)."""

    def __init__(self, context: ClusterContext, *, reservation_delay: float = DEFAULT_RESERVATION_DELAY,
                 preemptors: Sequence[Preemptor] | None = None) -> None:
        self.context = context
        self.reservation_delay = reservation_delay
        self.preemptors: tuple[Preemptor, ...] = tuple(preemptors) if preemptors is not None else context.preemptors
        #: Preemption attempts left in the current leaf visit (YuniKorn's maxPreemptionsPerQueue),
        #: and whether this partition's walk preempted (it then ends, as a reservation would).
        self._budget = AttemptBudget(MAX_PREEMPTIONS_PER_LEAF)
        self._preempted = False
        #: The RM's predicates of the partition being scheduled, resolved once per partition
        #: and cycle (``_hooks_of``: that partition; None outside a cycle, when they are looked up).
        self._hooks_of: Partition | None = None
        self._predicates: PredicatesFunc | None = None
        #: The same for the RM's preemption predicates, resolved at the cycle's first attempt.
        self._preemption_hooks_of: Partition | None = None
        self._preemption_predicates: PreemptionPredicatesFunc | None = None
        #: The shapes of asks that found no node in this partition's cycle (cycle_shapes),
        #: made when the first ask finds none (a cycle that places its first ask pays nothing).
        self._futile: FutileShapes | None = None
        #: Node searches (and reservation searches) skipped because an ask of the same shape
        #: found nothing earlier in the same cycle, since this cycle object was made.
        self.futile_searches_skipped = 0
        #: Whether the last reservation search had a candidate the RM refused (_reserve_closest).
        self._rm_refused = False

    def run(self) -> list[Decision]:
        """One cycle over every partition; returns the allocations it made."""
        decisions = []
        for name in sorted(self.context.partitions):
            partition = self.context.partitions.get(name)
            if partition is None or partition.state is ObjectStates.STOPPED or not partition.nodes:
                continue
            self._preempted = False
            with partition.lock:
                self._hooks_of = partition
                self._predicates = self.context.predicates_for(partition)
                try:
                    decision = self._schedule(partition)
                finally:
                    self._hooks_of = self._preemption_hooks_of = None
                    self._futile = None
            if decision is not None:
                decisions.append(decision)
                self.context.notify_allocated(partition, decision.ask)
            elif self._preempted or partition.outbox.released or partition.outbox.scheduling_states:
                # The victims' release, placeholders too small for their members, or the asks
                # skipped or failed, to the RM.
                self.context.send_outbox(partition)
        return decisions

    # -- per partition -----------------------------------------------------------------------------

    def _schedule(self, partition: Partition) -> Decision | None:
        if partition.reservations.by_key:
            self._budget.left = MAX_PREEMPTIONS_PER_LEAF
            decision = self._try_reserved(partition)
            if decision is not None or self._preempted:
                return decision
        if not partition.root.pending.strictly_greater_than_zero():
            return None
        decision = self._try_placeholders(partition)
        if decision is not None:
            return decision
        return self._walk(partition, partition.root)

    def _walk(self, partition: Partition, queue: Queue) -> Decision | None:
        if queue.is_leaf:
            return self._try_leaf(partition, queue)
        # The children in fair order, kept by the queue between cycles (ChildOrder).
        for child in queue.child_order.ordered(queue, queue_shape_version()):
            if child.state is ObjectStates.STOPPED or not child.pending.strictly_greater_than_zero():
                continue
            decision = self._walk(partition, child)
            if decision is not None or self._preempted:
                return decision
        return None

    def _try_leaf(self, partition: Partition, queue: Queue) -> Decision | None:
        self._budget.left = MAX_PREEMPTIONS_PER_LEAF
        for app in self._sorted_apps(queue):
            if not self._runnable(partition, queue, app):
                continue
            decision = self._try_app(partition, queue, app)
            if decision is not None or self._preempted:
                return decision
        return None

    @staticmethod
    def _sorted_apps(queue: Queue) -> list[Application]:
        """The leaf's applications with asks in its sort order. The fifo order only changes when
        an application's priority, submission time or asks-or-not does, so the queue keeps it
        until then; the fair order depends on usage, which every allocation changes."""
        policy = queue.sort_policy
        if policy != "fifo":
            return app_sorter(policy).sort(list(queue.apps_with_asks.values()), queue)
        order = queue.fifo_order
        if order is None:
            order = queue.fifo_order = app_sorter(policy).sort(list(queue.apps_with_asks.values()), queue)
        return order

    def _runnable(self, partition: Partition, queue: Queue, app: Application) -> bool:
        """maxApplications of the queue path and of the user/group limits, for apps that are
        not running yet; the 213-216 events report each change of the verdict."""
        if app.state is not AppStates.ACCEPTED:
            return True
        in_queue = queue.can_run_app()
        by_quota = partition.ugm.can_run_app(queue.path, app.app_id, app.user, app.groups)
        app_events = partition.events.app
        if in_queue != app.runnable_in_queue:
            app.runnable_in_queue = in_queue
            detail = EventChangeDetail.APP_RUNNABLE_QUEUE if in_queue else EventChangeDetail.APP_CANNOTRUN_QUEUE
            app_events.runnable(app.app_id, detail)
        if by_quota != app.runnable_by_quota:
            app.runnable_by_quota = by_quota
            detail = EventChangeDetail.APP_RUNNABLE_QUOTA if by_quota else EventChangeDetail.APP_CANNOTRUN_QUOTA
            app_events.runnable(app.app_id, detail)
        return in_queue and by_quota

    def _try_app(self, partition: Partition, queue: Queue, app: Application) -> Decision | None:
        user_room = partition.ugm.headroom(queue.path, app.app_id, app.user, app.groups)
        queue_room = queue.headroom()
        reserved = partition.reservations.by_key
        now = self.context.clock.now_ns()
        events = partition.events.app
        # Member clusters (cycle_clusters): where this application may go, decided once per visit.
        scope = choose_scope(partition.member_clusters, app) if partition.member_clusters.clusters else None
        if app.topology_request.level and (scope is None or scope.search_nodes):
            # A topology domain (topology_choice), inside the member clusters allowed: a preferred
            # request that no domain takes keeps the clusters' scope.
            scope = choose_domain_scope(partition.topology, app, lambda: remembered_nodes(partition, app),
                                        scope, acceptance(self.context.predicates_for(partition))) or scope
        for ask in app.iter_asks():
            if ask.allocation_key in reserved or app.can_replace(ask):
                continue  # a member of a task group waits for one of its placeholders
            resource = ask.resource
            # Request events go out when a check starts or stops failing (YuniKorn's ask events),
            # and the RM hears the ask was skipped, with the same message, at the same moments.
            if not resource.fits_in_max_undef(user_room):
                ask.log_failure(USER_QUOTA, now)
                if not ask.user_quota_failed:
                    ask.user_quota_failed = True
                    ask_reports.over_user_quota(partition, app.app_id, ask, user_room)
                continue
            if ask.user_quota_failed:
                ask.user_quota_failed = False
                events.request_fits_in_user_quota(ask.allocation_key, app.app_id, resource)
            if not resource.fits_in_max_undef(queue_room):
                if self._preempt(partition, queue, app, ask, PreemptionTrigger.QUEUE_HEADROOM, scope=scope):
                    return None
                ask.log_failure(QUEUE_QUOTA, now)
                if not ask.queue_headroom_failed:
                    ask.queue_headroom_failed = True
                    ask_reports.over_queue_headroom(partition, app.app_id, ask, queue_room, queue.path)
                continue
            if ask.queue_headroom_failed:
                ask.queue_headroom_failed = False
                events.request_fits_in_queue(ask.allocation_key, app.app_id, queue.path, resource)
            ask_scope = scope
            if app.topology_slices is not None and (scope is None or scope.search_nodes) and (
                    ask.placeholder or app.placeholder_ask.is_zero()):  # a member of a slice (topology_choice)
                ask_scope = choose_slice_scope(partition.topology, app, ask, scope, acceptance(self.context.predicates_for(partition)))
            if ask_scope is not None:
                decision = try_in_clusters(self, partition, queue, app, ask, now, ask_scope)
            elif ask.required_node:
                decision = self._try_required_node(partition, app, ask)
            else:
                placement = self._history_placement(partition, queue, app, ask)
                if placement is not None and placement.node_id is not None:
                    decision = self._try_history_node(partition, app, ask, placement.node_id, now)
                    if decision is not None:
                        return decision
                    continue  # it waits for its history node
                avoid = placement.avoid if placement is not None else frozenset()
                decision = self._try_nodes(partition, queue, app, ask, now, avoid)
            if decision is not None or self._preempted:
                return decision
        return None

    # -- placeholder replacement ----------------------------------------------------------------

    def _try_placeholders(self, partition: Partition) -> Decision | None:
        """Gang applications ready for replacement (``Partition.gang_apps``, in the order they
        became ready): the first replacement made. Only
        once the whole gang is placed (the application runs): YuniKorn's core replaces as soon
        as a placeholder and a member meet and leaves it to the Kubernetes shim to submit
        members only then; an RM that submits them early would otherwise start the job half."""
        if not partition.gang_apps:
            return None  # every cycle asks: most partitions run no gang
        for app_id in list(partition.gang_apps):
            app = partition.applications.get(app_id)
            if app is None or not app.asks or not app.ready_for_replacement:
                continue
            decision = self._try_replace(partition, app)
            if decision is not None:
                return decision
        return None

    def _try_replace(self, partition: Partition, app: Application) -> Decision | None:
        """YuniKorn's tryPlaceholderAllocate: each real member (asks in order) against its
        group's placeholders that are neither released nor preempted (a member with a role of
        its own tries first the one on its role's history node: history_gangs). A member larger than a
        placeholder in some type releases that placeholder; otherwise the member takes the
        placeholder on its node when the RM accepts it there (the reservation check: the room
        is the placeholder's). Failing that, the first compatible pair is tried on the nodes in
        order, the member holding room of its own there until the placeholder goes."""
        first: tuple[Allocation, Allocation] | None = None
        placeholders = app.placeholders()
        for real in list(app.iter_asks()):
            if real.placeholder or not real.task_group_name:
                continue
            for placeholder in placeholders_in_order(partition, app, real, placeholders):
                if (placeholder.released or placeholder.preempted
                        or placeholder.task_group_name != real.task_group_name):
                    continue
                if not real.resource.fits_in(placeholder.resource):
                    partition.release_incompatible(app, placeholder, real)
                    continue
                if first is None:
                    first = (real, placeholder)
                node = partition.nodes.get(placeholder.node_id)
                if node is not None and self._predicates_pass(partition, real, node, allocate=False):
                    return self._replace(partition, app, real, placeholder, node)
        if first is None:
            return None
        real, placeholder = first
        # A gang placed in a topology domain, or in a member cluster, stays there whole (a
        # domain is inside one cluster).
        cluster: NodeGroup | None = partition.topology.placed_domain(app) if app.topology_domain else None
        if cluster is None and app.member_cluster:
            cluster = partition.member_clusters.clusters.get(app.member_cluster)
        node = self._first_node(partition, real, skip_reserved=True,
                                ordering=cluster.ordering if cluster is not None else None)
        if node is None:
            return None
        return self._replace(partition, app, real, placeholder, node)

    @staticmethod
    def _replace(partition: Partition, app: Application, real: Allocation, placeholder: Allocation,
                 node: Node) -> Decision:
        partition.start_replacement(app, real, placeholder, node)
        return Decision(partition, app, real, node, replaced=placeholder)

    # -- preemption ----------------------------------------------------------------------------------

    def _preempt(self, partition: Partition, queue: Queue, app: Application, ask: Allocation,
                 trigger: PreemptionTrigger, node: Node | None = None, *, scope: ClusterScope | None = None) -> bool:
        """Offers the ask to the preemptors in order (pyscheduler.scheduler.preemption.preemptor);
        the first plan is applied. Whether one was: the walk then ends, as a reservation would.
        ``scope``: the member clusters the ask may run in, in order; the victims are all in one
        of them, where the application is then placed."""
        if scope is not None and not scope.clusters:
            return False  # no member cluster is allowed: nowhere to free room
        context = self.context
        if self._hooks_of is partition:
            predicates = self._predicates
            if self._preemption_hooks_of is not partition:  # the first attempt of the cycle
                self._preemption_predicates = context.preemption_predicates_for(partition)
                self._preemption_hooks_of = partition
            preemption_predicates = self._preemption_predicates
        else:
            predicates, preemption_predicates = context.predicates_for(partition), context.preemption_predicates_for(partition)
        attempt = PreemptionAttempt(
            partition, queue, app, ask, trigger, predicates, preemption_predicates, self._budget, self.reservation_delay, node,
            scope.clusters if scope is not None else (), scope.preempt_for if scope is not None else None)
        for preemptor in self.preemptors:
            plan = preemptor.try_preempt(attempt).plan
            if plan is not None:
                if scope is not None and not (app.member_cluster and app.topology_domain):
                    pin_by_plan(partition, app, ask, plan.node_id)
                self._apply_plan(partition, queue, app, ask, plan)
                return True
        return False

    def _apply_plan(self, partition: Partition, queue: Queue, app: Application, ask: Allocation,
                    plan: PreemptionPlan) -> None:
        """Marks the victims preempted (their queues' preempting resource grows, each gets
        YuniKorn's request event), marks the ask as having triggered preemption, puts one
        release of them all in the outbox for the RM (naming the ask as their preemptor) and,
        when the plan says so, reserves its node for the ask (other asks' reservations there
        gave way)."""
        events = partition.events.app
        message = f"Preempted by {ask.allocation_key} from application {app.app_id} in {queue.path}"
        rule = note.REQUIRED_NODE if plan.release_message == REQUIRED_NODE_PREEMPTION_RELEASE else note.GUARANTEED
        victims = plan.victims
        for victim in victims:
            victim_app = partition.applications.get(victim.application_id)
            if victim_app is not None and victim_app.queue is not None:
                victim_app.queue.inc_preempting(victim.resource)
            victim.preempted = True
            victim.preemption_note = note.format_note(note.PreemptionNote(
                app.app_id, ask.allocation_key, queue.path, rule,
                victim_app.queue.path if victim_app is not None and victim_app.queue is not None else ""))
            events.request_diagnostic(victim.allocation_key, victim.application_id, message, victim.resource)
        ask.triggered_preemption = True
        release_message = plan.release_message + ask.allocation_key
        partition.outbox.released.extend(
            Released(v.application_id, v.allocation_key, PREEMPTED_BY_SCHEDULER, release_message,
                     app.app_id, ask.allocation_key)
            for v in victims
        )
        partition.preemptions += 1
        partition.preemption_victims += len(victims)
        self._preempted = True
        if not plan.reserve_node:
            return
        node = partition.nodes[plan.node_id]
        for reservation in partition.reservations.on_node(node.node_id):
            if reservation.allocation_key != ask.allocation_key:
                partition.unreserve(reservation.allocation_key)  # gave way (the node was usable)
        if ask.allocation_key in partition.reservations.by_key:
            partition.unreserve(ask.allocation_key)
        partition.reservations.reserve(ask, node, required=False, now=self.context.clock.monotonic())

    def _try_required_node_preemption(self, partition: Partition, queue: Queue, app: Application,
                                      ask: Allocation, node: Node, scope: ClusterScope | None = None) -> bool:
        """A reserved daemon set ask that fits its queue but not its node (see
        pyscheduler.scheduler.preemption.required_node); when no preemptor frees its node, a
        request event and a FAILED scheduling state (REQUIRED_NODE) for the RM, at most one
        every PREDICATES_EVENT_INTERVAL per ask."""
        if self._preempt(partition, queue, app, ask, PreemptionTrigger.REQUIRED_NODE, node, scope=scope):
            return True
        ask_reports.required_node_refuses(partition, app.app_id, ask, node.node_id, self.context.clock.monotonic())
        return False

    # -- role history --------------------------------------------------------------------------------

    def _history_placement(self, partition: Partition, queue: Queue, app: Application, ask: Allocation) -> Placement | None:
        """The ask's history node (pyscheduler.policies.role_history), for an ask with a role."""
        role = role_of(ask.tags, ask.task_group_name)
        if not role:
            return None
        history = partition.role_histories.get_or_create(history_key_of(app.app_id, app.tags, ask.tags))
        settings = history.settings(role, app.tags, queue.properties)
        escalated_before = history.escalations
        placement = history.choose(
            ask.allocation_key, role, settings, self.context.clock.monotonic(),
            lambda node_id: (node := partition.nodes.get(node_id)) is not None and node.schedulable,
        )
        if history.escalations != escalated_before:
            partition.role_histories.escalations += 1
            ask.log_failure(HISTORY_TIMEOUT, self.context.clock.now_ns())
        return placement

    def _try_history_node(self, partition: Partition, app: Application, ask: Allocation, node_id: str,
                          now_ns: int) -> Decision | None:
        """The ask on its history node, or it waits there (logged on the ask), holding the node
        with a reservation when its capacity can take the ask: other asks are not placed there
        while it waits, so the node frees up for it (the reserved-asks phase tries it again and
        ends the hold at the placement timeout)."""
        node = partition.nodes.get(node_id)
        if node is not None and node.schedulable and node.fits(ask.resource) and self._predicates_pass(partition, ask, node):
            return self._commit(partition, app, ask, node)
        ask.log_failure(HISTORY_WAIT_PREFIX + node_id, now_ns)
        if (node is not None and node.schedulable and node.fits_capacity(ask.resource)
                and partition.reservations.can_reserve(node, required=True)):
            partition.reservations.reserve(ask, node, required=True, now=self.context.clock.monotonic(), history=True)
        return None

    # -- nodes ---------------------------------------------------------------------------------------

    def _try_nodes(self, partition: Partition, queue: Queue, app: Application, ask: Allocation, now_ns: int,
                   avoid: frozenset[str] = frozenset(), scope: ClusterScope | None = None) -> Decision | None:
        """The ask on the first node in order that takes it (``scope``: the nodes of its member
        clusters, cluster by cluster in its order), else preemption, else a reservation."""
        failures: dict[str, int] = {}
        # An ask shaped like one that found no node earlier in this cycle finds none either
        # (cycle_shapes); only the partition's own node order is remembered.
        futile = self._futile if scope is None else None
        if futile is not None and futile.no_node((ask.resource, avoid)):
            self.futile_searches_skipped += 1
            node = None
        elif scope is None:
            node = self._first_node(partition, ask, skip_reserved=True, failures=failures, avoid=avoid)
            if node is None and not failures and self._hooks_of is partition:
                # No node had room: the RM was asked about none.
                if futile is None:
                    futile = self._futile = FutileShapes(partition.reservations)
                futile.found_no_node((ask.resource, avoid))
        else:
            node = None
            for cluster in scope.clusters:
                node = self._first_node(partition, ask, skip_reserved=True, failures=failures, avoid=avoid,
                                        ordering=cluster.ordering)
                if node is not None:
                    break
        if node is not None:
            return self._commit(partition, app, ask, node)
        if failures:
            ask_reports.predicates_failed(partition, app.app_id, ask, failures, self.context.clock.monotonic())
        else:
            ask_reports.no_node_fits(partition, app.app_id, ask, self.context.clock.monotonic())
        if self._preempt(partition, queue, app, ask, PreemptionTrigger.NO_NODE_FITS, scope=scope):
            return None
        if (now_ns - ask.create_time_ns) / 1e9 >= self.reservation_delay:
            if scope is None:
                if futile is not None and futile.no_reservation((ask.resource, avoid)):
                    self.futile_searches_skipped += 1
                elif not self._reserve_closest(partition, ask) and futile is not None and not self._rm_refused:
                    futile.found_no_reservation((ask.resource, avoid))
            else:
                for cluster in scope.clusters:
                    if self._reserve_closest(partition, ask, cluster.ordering):
                        break
        return None

    def _first_node(self, partition: Partition, ask: Allocation, *, skip_reserved: bool,
                    exclude: str = "", failures: dict[str, int] | None = None,
                    avoid: frozenset[str] = frozenset(), ordering: NodeOrdering | None = None) -> Node | None:
        """The first node in order (``ordering``: a member cluster's, else the partition's)
        that fits and passes the RM's predicates, other than ``exclude`` and ``avoid`` (nodes
        the ask's role failed on too often); each refusal is logged on the ask and counted by
        reason in ``failures``."""
        if ordering is None:
            ordering = partition.node_ordering
        predicates = self._predicates if self._hooks_of is partition else self.context.predicates_for(partition)
        scorer = self.context.node_scores_for(partition)
        # An ask the RM ranks nodes for gathers candidates first (node_preference).
        wanted = 1 if scorer is None or ask.tags.get(TAG_SCORE_NODES) != "true" else \
            feasible_nodes_to_find(len(partition.nodes))
        candidates: list[Node] = []
        demand = ask.resource
        cursor = None
        while True:
            hit = ordering.first_fit(demand, cursor, skip_reserved)
            if hit is None:
                break
            cursor = hit
            if hit[1] == exclude or hit[1] in avoid:
                continue
            node = partition.nodes[hit[1]]
            if predicates is not None:
                reason = check_predicates(predicates, PredicatesArgs(ask.allocation_key, node.node_id, True))
                if reason:
                    ask.log_failure(reason, self.context.clock.now_ns())
                    if failures is not None:
                        failures[reason] = failures.get(reason, 0) + 1
                    continue
            if wanted == 1:
                return node
            candidates.append(node)
            if len(candidates) >= wanted:
                break
        if len(candidates) <= 1 or scorer is None:
            return candidates[0] if candidates else None
        try:
            scores = scorer(ScoreNodesArgs(ask.allocation_key, tuple(n.node_id for n in candidates)))
        except Exception:  # a broken RM expresses no preference
            scores = None
        return candidates[best_candidate(scores, len(candidates))]

    def _try_required_node(self, partition: Partition, app: Application, ask: Allocation) -> Decision | None:
        node = partition.nodes.get(ask.required_node)
        if node is None or not node.schedulable:
            return None
        # A required-node ask displaces the normal reservations on its node.
        for reservation in partition.reservations.on_node(node.node_id):
            if not reservation.required:
                partition.reservations.unreserve(reservation.allocation_key, node)
        if node.fits(ask.resource) and self._predicates_pass(partition, ask, node):
            return self._commit(partition, app, ask, node)
        if ask.allocation_key not in partition.reservations.by_key and node.fits_capacity(ask.resource):
            partition.reservations.reserve(ask, node, required=True, now=self.context.clock.monotonic())
        return None

    def _predicates_pass(self, partition: Partition, ask: Allocation, node: Node, *, allocate: bool = True) -> bool:
        predicates = self._predicates if self._hooks_of is partition else self.context.predicates_for(partition)
        if predicates is None:
            return True
        reason = check_predicates(predicates, PredicatesArgs(ask.allocation_key, node.node_id, allocate))
        if reason:
            ask.log_failure(reason, self.context.clock.now_ns())
        return not reason

    def _reserve_closest(self, partition: Partition, ask: Allocation, ordering: NodeOrdering | None = None) -> bool:
        """Reserves the schedulable node whose capacity holds the ask and whose available
        resources come closest to fitting it (YuniKorn's FitInScore), among the nodes the RM's
        predicates accept for a reservation (``allocate=False``, YuniKorn's preReserveConditions):
        a node the RM refuses would otherwise stay reserved, and hidden, for nothing.
        ``_rm_refused`` tells afterwards whether the RM refused a candidate."""
        self._rm_refused = False
        if partition.reservations.reserved_nodes >= len(partition.nodes):
            # Every node holds a reservation already, so none can take a normal one: an
            # overloaded cluster would otherwise pay this scan on every cycle for every ask.
            return False
        node_id = self._closest_accepted(partition, ask, ordering or partition.node_ordering)
        if node_id is None:
            return False
        node = partition.nodes[node_id]
        partition.reservations.reserve(ask, node, required=False, now=self.context.clock.monotonic())
        return True

    def _closest_accepted(self, partition: Partition, ask: Allocation, ordering: NodeOrdering) -> str | None:
        """The first node, closest to fitting first, that the RM accepts for a reservation.
        The node order scores every node (natively) and hands over a few candidates at a time;
        a node holding a reservation is no candidate (``can_reserve(node, required=False)``)."""
        predicates = self._predicates if self._hooks_of is partition else self.context.predicates_for(partition)
        demand = ask.resource
        batch_size = RESERVATION_CANDIDATE_BATCH
        after: Cursor | None = None
        while True:
            candidates = ordering.closest_fits(demand, batch_size, after, skip_reserved=True)
            for _, node_id in candidates:
                if predicates is None:
                    return node_id
                reason = check_predicates(predicates, PredicatesArgs(ask.allocation_key, node_id, False))
                if not reason:
                    return node_id
                self._rm_refused = True
                ask.log_failure(reason, self.context.clock.now_ns())
            if len(candidates) < batch_size:
                return None
            after = candidates[-1]
            # Every candidate was refused: ask for more, twice as many each time, so an RM that
            # refuses most nodes costs a few passes over the nodes rather than one per batch.
            batch_size *= 2

    # -- reservations ---------------------------------------------------------------------------------

    def _try_reserved(self, partition: Partition) -> Decision | None:
        return try_reserved(self, partition)

    @staticmethod
    def _user_headroom(partition: Partition, queue: Queue, app: Application) -> Resource | None:
        return partition.ugm.headroom(queue.path, app.app_id, app.user, app.groups)

    @classmethod
    def _fits_headroom(cls, partition: Partition, queue: Queue, app: Application, ask: Allocation) -> bool:
        return (ask.resource.fits_in_max_undef(cls._user_headroom(partition, queue, app))
                and ask.resource.fits_in_max_undef(queue.headroom()))

    # -- commit -------------------------------------------------------------------------------------------

    @staticmethod
    def _commit(partition: Partition, app: Application, ask: Allocation, node: Node, *,
                from_reservation: bool = False) -> Decision:
        partition.commit_allocation(app, ask, node)
        return Decision(partition, app, ask, node, from_reservation)
