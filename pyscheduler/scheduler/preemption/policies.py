"""The three preemption policies behind the :class:`~.preemptor.Preemptor` protocol, and the
tuple the scheduler runs (:func:`default_preemptors`).

- :class:`GuaranteedPreemption` (YuniKorn's guaranteed-share preemption, :mod:`.guaranteed`):
  an ask over its queue's headroom, or that no node took, frees room from queues over their
  guarantees. Off unless the partition's ``preemption.enabled``; spends the leaf visit's
  attempt budget once past its preconditions.
- :class:`RequiredNodePreemption` (:mod:`.required_node`): a reserved daemon set ask frees
  room on its node, whatever the partition's settings.
- :class:`QuotaPreemption` (:mod:`.quota`): no ask drives it; on the tick, a queue whose max
  was lowered below its usage gives up allocations once its delay has passed.

Each logs its own reasons on the ask's allocation log, as YuniKorn's do; the cycle applies the
plan and reports what the RM must hear (see :mod:`pyscheduler.scheduler.cycle`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Final

from pyscheduler.common.gc_pause import collector_paused
from pyscheduler.scheduler.preemption import quota
from pyscheduler.scheduler.preemption.domains import rank_domains
from pyscheduler.scheduler.preemption.guaranteed import (
    PREEMPTION_DOES_NOT_HELP,
    PREEMPTION_MAX_ATTEMPTS_EXHAUSTED,
    PREEMPTION_PRECONDITIONS_FAILED,
    GuaranteedPreemptor,
    check_preconditions,
    claimed_by_preemptors,
)
from pyscheduler.scheduler.preemption.memo import PreemptionMemo
from pyscheduler.scheduler.preemption.preemptor import (
    NOT_APPLICABLE,
    PreemptionAttempt,
    PreemptionOutcome,
    PreemptionPlan,
    PreemptionReason,
    PreemptionTrigger,
    Preemptor,
)
from pyscheduler.scheduler.preemption.required_node import NO_VICTIM_FOR_REQUIRED_NODE, required_node_victims
from pyscheduler.scheduler.preemption.victims import Victims

if TYPE_CHECKING:
    from pyscheduler.common.resources import Resource
    from pyscheduler.objects.allocation import Allocation
    from pyscheduler.objects.node import Node
    from pyscheduler.objects.partition import Partition
    from pyscheduler.objects.reservation import Reservation

__all__ = [
    "GuaranteedPreemption",
    "PREEMPTION_RELEASE",
    "QuotaPreemption",
    "RESERVATION_WAIT_TIMEOUT",
    "REQUIRED_NODE_PREEMPTION_RELEASE",
    "RequiredNodePreemption",
    "default_preemptors",
]

#: The message of the victims' release (YuniKorn's, the ask's key appended).
PREEMPTION_RELEASE: Final = "preempting allocations to free up resources to run ask: "
REQUIRED_NODE_PREEMPTION_RELEASE: Final = "preempting allocations to free up resources to run daemon set ask: "
#: YuniKorn's reservationWaitTimeout: another ask's reservation older than the reservation
#: delay plus twice this may be cancelled for a preempting ask (see _cancellable_for).
RESERVATION_WAIT_TIMEOUT: Final = 3600.0

_MAX_ATTEMPTS_EXHAUSTED: Final = PreemptionOutcome(
    None, PreemptionReason.MAX_ATTEMPTS_EXHAUSTED, PREEMPTION_MAX_ATTEMPTS_EXHAUSTED)
_PRECONDITIONS_FAILED: Final = PreemptionOutcome(
    None, PreemptionReason.PRECONDITIONS_FAILED, PREEMPTION_PRECONDITIONS_FAILED)
_NO_VICTIM: Final = PreemptionOutcome(None, PreemptionReason.NO_VICTIM, NO_VICTIM_FOR_REQUIRED_NODE)
_GUARANTEED_TRIGGERS: Final = frozenset({PreemptionTrigger.QUEUE_HEADROOM, PreemptionTrigger.NO_NODE_FITS})


class GuaranteedPreemption:
    """Guaranteed-share preemption (see the module doc); each attempt is one
    :class:`.guaranteed.GuaranteedPreemptor`. What attempts keep for the next ones is kept per
    partition name (:mod:`.memo`), used under that partition's lock as the attempts are; a
    recreated partition's queues change the tree's shape version, which starts its memo again."""

    def __init__(self) -> None:
        self._memos: dict[str, PreemptionMemo] = {}

    def try_preempt(self, attempt: PreemptionAttempt) -> PreemptionOutcome:
        if attempt.trigger not in _GUARANTEED_TRIGGERS:
            return NOT_APPLICABLE
        partition, ask = attempt.partition, attempt.ask
        if not partition.preemption_enabled:
            return NOT_APPLICABLE
        now = partition.clock.now_ns()
        if attempt.budget.left <= 0:
            # The leaf visit's attempts are used up (YuniKorn's maxPreemptionsPerQueue): said
            # on the ask, whose allocation log shows why it did not even try.
            ask.log_failure(PREEMPTION_MAX_ATTEMPTS_EXHAUSTED, now)
            return _MAX_ATTEMPTS_EXHAUSTED
        queue = attempt.queue
        if not check_preconditions(ask, queue.preemption_delay_ns, now):
            # YuniKorn logs both: the attempt's reason, then that preemption did not help.
            ask.log_failure(PREEMPTION_PRECONDITIONS_FAILED, now)
            ask.log_failure(PREEMPTION_DOES_NOT_HELP, now)
            return _PRECONDITIONS_FAILED
        # Only an attempt that passed its preconditions takes one of the visit's (as YuniKorn
        # since 1.8): asks that may not preempt yet do not use up the others' chances.
        attempt.budget.left -= 1
        reservations = partition.reservations
        monotonic = partition.clock.monotonic()
        delay = attempt.reservation_delay

        def reserved_by_others(node: Node) -> bool:
            return any(r.allocation_key != ask.allocation_key and not _cancellable_for(partition, r, ask, monotonic, delay)
                       for r in reservations.on_node(node.node_id))

        partition.preemption_attempts += 1
        started = time.perf_counter()
        memo = self._memos.setdefault(partition.name, PreemptionMemo())
        # Earlier asks still waiting for their victims count as their queues' usage: the queue
        # stops at its guarantee however many nodes let asks preempt at once.
        claimed = claimed_by_preemptors(queue, reservations.by_key.values(), partition.applications) \
            if reservations.by_key else None
        # Member clusters: one decision over them all, its victims on one cluster's nodes (the
        # first, in the ask's order, with a plan). Otherwise: every node of the partition.
        # A gang waiting for a topology domain: the domains by their victims (.domains).
        groups = attempt.clusters if attempt.domain_need is None or len(attempt.clusters) < 2 else rank_domains(
            attempt.clusters, Victims(queue, ask, partition.applications, memo.for_ask_leaf(queue).verdicts, claimed), attempt.domain_need)
        scopes: tuple[tuple[Mapping[str, Node], Sequence[str], Callable[[Resource], Iterable[str]]], ...] = tuple(
            (c.nodes, c.sorted_node_ids(), c.fitting_node_ids) for c in groups
        ) if attempt.clusters else ((partition.nodes, partition.sorted_node_ids(), partition.fitting_node_ids),)
        outcome = NOT_APPLICABLE
        # A decision makes thousands of short-lived dicts: a collection meeting them would
        # promote them and bring a full collection (the whole heap) closer.
        with collector_paused():
            for nodes, sorted_ids, fitting in scopes:
                planner = GuaranteedPreemptor(
                    queue, ask, partition.applications, nodes, sorted_ids,
                    nodes_tried=attempt.trigger is PreemptionTrigger.NO_NODE_FITS,
                    predicates=attempt.predicates, preemption_predicates=attempt.preemption_predicates,
                    reserved_by_others=reserved_by_others, fitting=fitting, memo=memo, claimed=claimed,
                )
                outcome = planner.try_preemption()
                if outcome.plan is not None:
                    break
        partition.preemption_latency.observe((time.perf_counter() - started) * 1e3)
        if outcome.plan is None:
            if outcome.message:
                ask.log_failure(outcome.message, now)
            ask.log_failure(PREEMPTION_DOES_NOT_HELP, now)
        return outcome

    def on_tick(self, partition: Partition, now_ns: int) -> None:
        """Driven by asks only."""


def _cancellable_for(partition: Partition, reservation: Reservation, ask: Allocation, monotonic: float,
                     reservation_delay: float) -> bool:
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
            and monotonic - reservation.since >= reservation_delay + 2 * RESERVATION_WAIT_TIMEOUT)


class RequiredNodePreemption:
    """Required-node preemption (see the module doc): the victims on the ask's node; the ask
    keeps its reservation there (``reserve_node`` False)."""

    def try_preempt(self, attempt: PreemptionAttempt) -> PreemptionOutcome:
        node = attempt.node
        if attempt.trigger is not PreemptionTrigger.REQUIRED_NODE or node is None:
            return NOT_APPLICABLE
        if attempt.clusters and not any(node.node_id in c.nodes for c in attempt.clusters):
            return NOT_APPLICABLE  # the node is in another member cluster than the ask's
        victims = required_node_victims(attempt.ask, node, attempt.preemption_predicates)
        if not victims:
            attempt.ask.log_failure(NO_VICTIM_FOR_REQUIRED_NODE, attempt.partition.clock.now_ns())
            return _NO_VICTIM
        return PreemptionOutcome.planned(PreemptionPlan(
            node.node_id, tuple(victims), REQUIRED_NODE_PREEMPTION_RELEASE, reserve_node=False))

    def on_tick(self, partition: Partition, now_ns: int) -> None:
        """Driven by asks only."""


class QuotaPreemption:
    """Quota-change preemption (see the module doc): no ask drives it."""

    def try_preempt(self, attempt: PreemptionAttempt) -> PreemptionOutcome:
        return NOT_APPLICABLE

    def on_tick(self, partition: Partition, now_ns: int) -> None:
        """Releases the victims of every queue due (:func:`.quota.fire_due`), under the
        partition's lock, through its outbox; only where the partition enables it."""
        if not partition.quota_preemption_enabled:
            return
        with partition.lock:
            for result in quota.fire_due(partition, now_ns):
                quota.apply(partition, result)


def default_preemptors() -> tuple[Preemptor, ...]:
    """The policies the scheduler runs, in the order it offers them an ask."""
    return (GuaranteedPreemption(), RequiredNodePreemption(), QuotaPreemption())
