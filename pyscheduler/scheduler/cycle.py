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

What the walk sorts by is kept up to date as asks come and go, not recomputed per cycle: each
queue's highest pending ask priority and each leaf's applications with asks (and their fifo
order) live in the queues (:meth:`Queue.app_asks_changed`), so a cycle costs the queues and
applications on its path, not every queue and application of the partition.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from pyscheduler.common.enums import member_table
from pyscheduler.common.gc_pause import collector_paused
from pyscheduler.common.resources import Resource
from pyscheduler.si.events import EventChangeDetail
from pyscheduler.objects.allocation import Allocation
from pyscheduler.objects.application import Application
from pyscheduler.objects.application_state import AppState
from pyscheduler.objects.node import Node
from pyscheduler.objects.partition import PREEMPTED_BY_SCHEDULER, Partition, Released
from pyscheduler.objects.queue import ObjectState, Queue, queue_shape_version
from pyscheduler.policies.node_ordering import Cursor
from pyscheduler.policies.role_history import Placement, history_key_of, role_of
from pyscheduler.policies.sorting import app_sorter
from pyscheduler.scheduler.preemption.memo import PreemptionMemo
from pyscheduler.scheduler.preemption.required_node import NO_VICTIM_FOR_REQUIRED_NODE, required_node_victims
from pyscheduler.scheduler.preemption.guaranteed import (
    PREEMPTION_DOES_NOT_HELP,
    PREEMPTION_MAX_ATTEMPTS_EXHAUSTED,
    PREEMPTION_PRECONDITIONS_FAILED,
    GuaranteedPreemptor,
    PreemptionPlan,
    check_preconditions,
    claimed_by_preemptors,
)
from pyscheduler.si.callback import check_predicates
from pyscheduler.si.messages import TAG_SCORE_NODES, PredicatesArgs, ScoreNodesArgs
from pyscheduler.scheduler.node_preference import best_candidate, feasible_nodes_to_find

if TYPE_CHECKING:
    from pyscheduler.objects.reservation import Reservation
    from pyscheduler.scheduler.context import ClusterContext

__all__ = ["Decision", "SchedulingCycle", "QUEUE_QUOTA", "USER_QUOTA", "DEFAULT_RESERVATION_DELAY"]

#: Seconds an ask must wait before it may reserve a node (YuniKorn's reservationDelay).
DEFAULT_RESERVATION_DELAY = 2.0
#: YuniKorn's reservationWaitTimeout: another ask's reservation older than the reservation
#: delay plus twice this may be cancelled for a preempting ask (see _cancellable_for).
RESERVATION_WAIT_TIMEOUT = 3600.0
#: Reservation candidates checked with the RM per pass over the nodes (most asks take the first).
RESERVATION_CANDIDATE_BATCH = 16
#: Seconds between two "predicates failed" request events of one ask (YuniKorn: 15 s, burst 1).
PREDICATES_EVENT_INTERVAL = 15.0
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
#: The message of the victims' release (YuniKorn's, the ask's key appended).
PREEMPTION_RELEASE = "preempting allocations to free up resources to run ask: "
REQUIRED_NODE_PREEMPTION_RELEASE = "preempting allocations to free up resources to run daemon set ask: "


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
    def __init__(self, context: ClusterContext, *, reservation_delay: float = DEFAULT_RESERVATION_DELAY) -> None:
        self.context = context
        self.reservation_delay = reservation_delay
        #: Preemption attempts left in the current leaf visit (YuniKorn's maxPreemptionsPerQueue),
        #: and whether this partition's walk preempted (it then ends, as a reservation would).
        self._preemptions_left = MAX_PREEMPTIONS_PER_LEAF
        self._preempted = False
        #: Partition name -> what its preemption attempts keep for the next ones (used under the
        #: partition's lock, as the attempts are; a recreated partition's queues change the shape
        #: version, which starts the memo again).
        self._preemption_memos: dict[str, PreemptionMemo] = {}

    def run(self) -> list[Decision]:
        """One cycle over every partition; returns the allocations it made."""
        decisions = []
        for name in sorted(self.context.partitions):
            partition = self.context.partitions.get(name)
            if partition is None or partition.state is ObjectStates.STOPPED or not partition.nodes:
                continue
            self._preempted = False
            with partition.lock:
                decision = self._schedule(partition)
            if decision is not None:
                decisions.append(decision)
                self.context.notify_allocated(partition, decision.ask)
            elif self._preempted or partition.outbox.released:
                # The victims' release, or placeholders too small for their members, to the RM.
                self.context.send_outbox(partition)
        return decisions

    # -- per partition -----------------------------------------------------------------------------

    def _schedule(self, partition: Partition) -> Decision | None:
        if partition.reservations.by_key:
            self._preemptions_left = MAX_PREEMPTIONS_PER_LEAF
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
        self._preemptions_left = MAX_PREEMPTIONS_PER_LEAF
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
        for ask in app.iter_asks():
            if ask.allocation_key in reserved or app.can_replace(ask):
                continue  # a member of a task group waits for one of its placeholders
            resource = ask.resource
            # Request events go out when a check starts or stops failing (YuniKorn's ask events).
            if not resource.fits_in_max_undef(user_room):
                ask.log_failure(USER_QUOTA, now)
                if not ask.user_quota_failed:
                    ask.user_quota_failed = True
                    events.request_exceeds_user_quota(ask.allocation_key, app.app_id, user_room, resource)
                continue
            if ask.user_quota_failed:
                ask.user_quota_failed = False
                events.request_fits_in_user_quota(ask.allocation_key, app.app_id, resource)
            if not resource.fits_in_max_undef(queue_room):
                if self._try_preemption(partition, queue, app, ask, nodes_tried=False):
                    return None
                ask.log_failure(QUEUE_QUOTA, now)
                if not ask.queue_headroom_failed:
                    ask.queue_headroom_failed = True
                    events.request_exceeds_queue_headroom(ask.allocation_key, app.app_id, queue_room, resource, queue.path)
                continue
            if ask.queue_headroom_failed:
                ask.queue_headroom_failed = False
                events.request_fits_in_queue(ask.allocation_key, app.app_id, queue.path, resource)
            if ask.required_node:
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
        group's placeholders that are neither released nor preempted. A member larger than a
        placeholder in some type releases that placeholder; otherwise the member takes the
        placeholder on its node when the RM accepts it there (the reservation check: the room
        is the placeholder's). Failing that, the first compatible pair is tried on the nodes in
        order, the member holding room of its own there until the placeholder goes."""
        first: tuple[Allocation, Allocation] | None = None
        placeholders = app.placeholders()
        for real in list(app.iter_asks()):
            if real.placeholder or not real.task_group_name:
                continue
            for placeholder in placeholders:
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
        node = self._first_node(partition, real, skip_reserved=True)
        if node is None:
            return None
        return self._replace(partition, app, real, placeholder, node)

    @staticmethod
    def _replace(partition: Partition, app: Application, real: Allocation, placeholder: Allocation,
                 node: Node) -> Decision:
        partition.start_replacement(app, real, placeholder, node)
        return Decision(partition, app, real, node, replaced=placeholder)

    # -- preemption ----------------------------------------------------------------------------------

    def _try_preemption(self, partition: Partition, queue: Queue, app: Application, ask: Allocation, *,
                        nodes_tried: bool) -> bool:
        """Guaranteed-share preemption for an ask that does not fit its queue's headroom or any
        node (pyscheduler.scheduler.preemption.guaranteed): when the partition allows it, the
        leaf visit has attempts left and the ask passes the preconditions. A plan marks its
        victims, releases them through the RM and reserves its node for the ask."""
        if not partition.preemption_enabled:
            return False
        now = self.context.clock.now_ns()
        if self._preemptions_left <= 0:
            # The leaf visit's attempts are used up (YuniKorn's maxPreemptionsPerQueue): said
            # on the ask, whose allocation log shows why it did not even try.
            ask.log_failure(PREEMPTION_MAX_ATTEMPTS_EXHAUSTED, now)
            return False
        if not check_preconditions(ask, queue.preemption_delay_ns, now):
            # YuniKorn logs both: the attempt's reason, then that preemption did not help.
            ask.log_failure(PREEMPTION_PRECONDITIONS_FAILED, now)
            ask.log_failure(PREEMPTION_DOES_NOT_HELP, now)
            return False
        # Only an attempt that passed its preconditions takes one of the visit's (as YuniKorn
        # since 1.8): asks that may not preempt yet do not use up the others' chances.
        self._preemptions_left -= 1
        reservations = partition.reservations
        monotonic = self.context.clock.monotonic()

        def reserved_by_others(node: Node) -> bool:
            return any(r.allocation_key != ask.allocation_key and not self._cancellable_for(partition, r, ask, monotonic)
                       for r in reservations.on_node(node.node_id))

        partition.preemption_attempts += 1
        started = time.perf_counter()
        # A decision makes thousands of short-lived dicts: a collection meeting them would
        # promote them and bring a full collection (the whole heap) closer.
        with collector_paused():
            preemptor = GuaranteedPreemptor(
                queue, ask, partition.applications, partition.nodes, partition.sorted_node_ids(), nodes_tried=nodes_tried,
                predicates=self.context.predicates_for(partition),
                preemption_predicates=self.context.preemption_predicates_for(partition),
                reserved_by_others=reserved_by_others, fitting=partition.fitting_node_ids,
                memo=self._preemption_memos.setdefault(partition.name, PreemptionMemo()),
                # Earlier asks still waiting for their victims count as their queues' usage: the
                # queue stops at its guarantee however many nodes let asks preempt at once.
                claimed=claimed_by_preemptors(queue, reservations.by_key.values(), partition.applications)
                if reservations.by_key else None,
            )
            outcome = preemptor.try_preemption()
        partition.preemption_latency.observe((time.perf_counter() - started) * 1e3)
        if isinstance(outcome, str):
            if outcome:
                ask.log_failure(outcome, now)
            ask.log_failure(PREEMPTION_DOES_NOT_HELP, now)
            return False
        self._apply_preemption(partition, queue, app, ask, outcome)
        return True

    def _cancellable_for(self, partition: Partition, reservation: Reservation, ask: Allocation, monotonic: float) -> bool:
        """Whether another ask's reservation gives way to a preempting ask (YuniKorn's rule): the
        reserving ask has a lower priority, no required node (nor a role history hold), did not
        trigger preemption itself, and has held the node longer than the reservation delay plus
        twice the reservation wait timeout. A reservation whose ask is gone is stale: it gives way."""
        if reservation.required:
            return False
        holder_app = partition.applications.get(reservation.app_id)
        holder = holder_app.asks.get(reservation.allocation_key) if holder_app is not None else None
        if holder is None:
            return True
        return (holder.priority < ask.priority and not holder.required_node and not holder.triggered_preemption
                and monotonic - reservation.since >= self.reservation_delay + 2 * RESERVATION_WAIT_TIMEOUT)

    def _apply_preemption(self, partition: Partition, queue: Queue, app: Application, ask: Allocation,
                          plan: PreemptionPlan) -> None:
        self._release_victims(partition, queue, app, ask, plan.victims, PREEMPTION_RELEASE)
        node = partition.nodes[plan.node_id]
        for reservation in partition.reservations.on_node(node.node_id):
            if reservation.allocation_key != ask.allocation_key:
                partition.unreserve(reservation.allocation_key)  # gave way (the node was usable)
        if ask.allocation_key in partition.reservations.by_key:
            partition.unreserve(ask.allocation_key)
        partition.reservations.reserve(ask, node, required=False, now=self.context.clock.monotonic())

    def _release_victims(self, partition: Partition, queue: Queue, app: Application, ask: Allocation,
                         victims: Sequence[Allocation], release_message: str) -> None:
        """Marks the victims preempted (their queues' preempting resource grows, each gets
        YuniKorn's request event), marks the ask as having triggered preemption, and puts one
        release of them all in the outbox for the RM."""
        events = partition.events.app
        message = f"Preempted by {ask.allocation_key} from application {app.app_id} in {queue.path}"
        for victim in victims:
            victim_app = partition.applications.get(victim.application_id)
            if victim_app is not None and victim_app.queue is not None:
                victim_app.queue.inc_preempting(victim.resource)
            victim.preempted = True
            events.request_diagnostic(victim.allocation_key, victim.application_id, message, victim.resource)
        ask.triggered_preemption = True
        partition.outbox.released.extend(
            Released(v.application_id, v.allocation_key, PREEMPTED_BY_SCHEDULER, release_message + ask.allocation_key)
            for v in victims
        )
        partition.preemptions += 1
        partition.preemption_victims += len(victims)
        self._preempted = True

    def _try_required_node_preemption(self, partition: Partition, queue: Queue, app: Application,
                                      ask: Allocation, node: Node) -> bool:
        """A reserved daemon set ask that fits its queue but not its node (see
        pyscheduler.scheduler.preemption.required_node); on failure the allocation log entry
        and a request event, at most one every PREDICATES_EVENT_INTERVAL per ask."""
        victims = required_node_victims(ask, node, self.context.preemption_predicates_for(partition))
        if victims:
            self._release_victims(partition, queue, app, ask, victims, REQUIRED_NODE_PREEMPTION_RELEASE)
            return True
        ask.log_failure(NO_VICTIM_FOR_REQUIRED_NODE, self.context.clock.now_ns())
        now = self.context.clock.monotonic()
        if ask.preemption_event_at is None or now - ask.preemption_event_at >= PREDICATES_EVENT_INTERVAL:
            ask.preemption_event_at = now
            partition.events.app.request_diagnostic(
                ask.allocation_key, app.app_id,
                f"Unschedulable request '{ask.allocation_key}' with required node '{node.node_id}', "
                "no preemption victim found", ask.resource)
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
                   avoid: frozenset[str] = frozenset()) -> Decision | None:
        failures: dict[str, int] = {}
        node = self._first_node(partition, ask, skip_reserved=True, failures=failures, avoid=avoid)
        if node is not None:
            return self._commit(partition, app, ask, node)
        if failures:
            self._predicates_failed(partition, app, ask, failures)
        else:
            self._no_node_fits(partition, app, ask)
        if self._try_preemption(partition, queue, app, ask, nodes_tried=True):
            return None
        if (now_ns - ask.create_time_ns) / 1e9 >= self.reservation_delay:
            self._reserve_closest(partition, ask)
        return None

    def _predicates_failed(self, partition: Partition, app: Application, ask: Allocation,
                           failures: dict[str, int]) -> None:
        """The RM's predicates refused every node that fitted: a request event, at most one per
        ask every PREDICATES_EVENT_INTERVAL (YuniKorn's per-ask rate limiter, burst 1)."""
        now = self.context.clock.monotonic()
        last = ask.predicates_event_at
        if last is not None and now - last < PREDICATES_EVENT_INTERVAL:
            return
        ask.predicates_event_at = now
        partition.events.app.request_predicates_failed(ask.allocation_key, app.app_id, failures, ask.resource)

    def _no_node_fits(self, partition: Partition, app: Application, ask: Allocation) -> None:
        """No node had room for the ask: a request event, rate-limited as the predicates one."""
        now = self.context.clock.monotonic()
        last = ask.predicates_event_at
        if last is not None and now - last < PREDICATES_EVENT_INTERVAL:
            return
        ask.predicates_event_at = now
        partition.events.app.request_no_node_fits(ask.allocation_key, app.app_id, ask.resource)

    def _first_node(self, partition: Partition, ask: Allocation, *, skip_reserved: bool,
                    exclude: str = "", failures: dict[str, int] | None = None,
                    avoid: frozenset[str] = frozenset()) -> Node | None:
        """The first node in order that fits and passes the RM's predicates, other than
        ``exclude`` and ``avoid`` (nodes the ask's role failed on too often); each refusal is
        logged on the ask and counted by reason in ``failures``."""
        ordering = partition.node_ordering
        predicates = self.context.predicates_for(partition)
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
        predicates = self.context.predicates_for(partition)
        if predicates is None:
            return True
        reason = check_predicates(predicates, PredicatesArgs(ask.allocation_key, node.node_id, allocate))
        if reason:
            ask.log_failure(reason, self.context.clock.now_ns())
        return not reason

    def _reserve_closest(self, partition: Partition, ask: Allocation) -> None:
        """Reserves the schedulable node whose capacity holds the ask and whose available
        resources come closest to fitting it (YuniKorn's FitInScore), among the nodes the RM's
        predicates accept for a reservation (``allocate=False``, YuniKorn's preReserveConditions):
        a node the RM refuses would otherwise stay reserved, and hidden, for nothing."""
        if partition.reservations.reserved_nodes >= len(partition.nodes):
            # Every node holds a reservation already, so none can take a normal one: an
            # overloaded cluster would otherwise pay this scan on every cycle for every ask.
            return
        node_id = self._closest_accepted(partition, ask)
        if node_id is not None:
            node = partition.nodes[node_id]
            partition.reservations.reserve(ask, node, required=False, now=self.context.clock.monotonic())

    def _closest_accepted(self, partition: Partition, ask: Allocation) -> str | None:
        """The first node, closest to fitting first, that the RM accepts for a reservation.
        The node order scores every node (natively) and hands over a few candidates at a time;
        a node holding a reservation is no candidate (``can_reserve(node, required=False)``)."""
        predicates = self.context.predicates_for(partition)
        demand = ask.resource
        batch_size = RESERVATION_CANDIDATE_BATCH
        after: Cursor | None = None
        while True:
            candidates = partition.node_ordering.closest_fits(demand, batch_size, after, skip_reserved=True)
            for _, node_id in candidates:
                if predicates is None:
                    return node_id
                reason = check_predicates(predicates, PredicatesArgs(ask.allocation_key, node_id, False))
                if not reason:
                    return node_id
                ask.log_failure(reason, self.context.clock.now_ns())
            if len(candidates) < batch_size:
                return None
            after = candidates[-1]
            # Every candidate was refused: ask for more, twice as many each time, so an RM that
            # refuses most nodes costs a few passes over the nodes rather than one per batch.
            batch_size *= 2

    # -- reservations ---------------------------------------------------------------------------------

    def _try_reserved(self, partition: Partition) -> Decision | None:
        for reservation in partition.reservations.ordered():
            app = partition.applications.get(reservation.app_id)
            ask = app.asks.get(reservation.allocation_key) if app is not None else None
            node = partition.nodes.get(reservation.node_id)
            if app is None or ask is None or node is None:
                partition.reservations.unreserve(reservation.allocation_key, node)
                continue
            queue = app.queue
            if reservation.history and queue is not None:
                placement = self._history_placement(partition, queue, app, ask)
                if placement is None or placement.node_id != node.node_id:
                    # Its placement timeout passed: the hold ends, the ask takes the normal order.
                    partition.reservations.unreserve(reservation.allocation_key, node)
                    continue
            if queue is None:
                continue
            if not self._fits_headroom(partition, queue, app, ask):
                # YuniKorn tries preemption for an ask its queue's headroom refuses, reserved or
                # not (the walk skips reserved asks, so this is their only chance).
                if (not reservation.required and not ask.triggered_preemption
                        and ask.resource.fits_in_max_undef(self._user_headroom(partition, queue, app))
                        and self._try_preemption(partition, queue, app, ask, nodes_tried=False)):
                    return None
                continue
            # An app that is not running yet may have become unrunnable since it reserved
            # (YuniKorn's TryReservedAllocate skips it too, without a runnable event).
            if app.state is AppState.ACCEPTED and not (
                queue.can_run_app() and partition.ugm.can_run_app(queue.path, app.app_id, app.user, app.groups)
            ):
                continue
            if node.schedulable and node.fits(ask.resource) and self._predicates_pass(partition, ask, node):
                return self._commit(partition, app, ask, node, from_reservation=True)
            if (ask.required_node and not reservation.history and not ask.triggered_preemption
                    and node.schedulable and not node.fits(ask.resource)):
                if self._try_required_node_preemption(partition, queue, app, ask, node):
                    return None
                continue
            if not reservation.required:
                other = self._first_node(partition, ask, skip_reserved=True, exclude=node.node_id)
                if other is not None:
                    return self._commit(partition, app, ask, other, from_reservation=True)
                # Reserved while nothing fitted (the reservation delay is shorter than the
                # preemption delay): it may still preempt, which moves its reservation.
                if not ask.triggered_preemption and self._try_preemption(partition, queue, app, ask, nodes_tried=True):
                    return None
        return None

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
