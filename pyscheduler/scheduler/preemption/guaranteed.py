"""Guaranteed-share preemption: an ask whose queue is below its guarantee frees room by
preempting allocations of queues above theirs (YuniKorn's ``objects/preemption.go``, the
guaranteed branch; ``shared/spec/yunikorn/preemption.md`` §1.2).

One attempt (:meth:`GuaranteedPreemptor.try_preemption`, which returns a
:class:`~.preemptor.PreemptionOutcome`; the policy around it is
:class:`.policies.GuaranteedPreemption`), all under the partition's lock:

1. **Queue check**: on copies of the queue snapshots (:mod:`.victims`), the ask is added to its
   queue and victims are removed one by one; unless the ask's queue then gets within its
   guarantee, nothing is done ("Preemption queue guarantees check failed").
2. **Per node** (schedulable, the ask fits its capacity, no other ask's reservation): the
   node's victims sorted (opted in first, then non-originators, newest first) are filtered in
   two passes: a victim is kept only while its queue stays above its guarantee and the ask's
   queue does not go above its own; victims that do not reduce the node's shortfall go last.
   The node's candidate list starts at the first index where the ask fits. A node where the ask
   already fits gets an empty list (checked only when the nodes were not tried).
3. **RM check**: candidates sorted by (start index, node id) go to the RM's
   ``preemption_predicates`` (or ``predicates`` for an empty list) in batches of 10; the best
   is the lowest score (2^33 for an originator among the victims, 2^34 for one that did not opt
   in, plus index + 1), and a batch whose best scores under 2^32 ends the search. An RM without
   ``preemption_predicates`` gets the first candidate, as YuniKorn does without an RM plugin.
4. **Finish**: more victims from anywhere below the fence while the ask's queue stays above its
   guarantee; if the chosen node cannot take the ask without them, only that node's victims
   count; they are trimmed once they cover the ask in the types they hold
   (:func:`.snapshot.covers`); a shortfall fails ("Preemption helped but short of resources").

**Asks already preempting count as used** (a deliberate difference from YuniKorn's code, for
the outcome its documentation describes): an ask that triggered preemption holds its reserved
node until its victims are gone, and until then its queue's usage does not show it. YuniKorn
snapshots the ask's queue from its allocated resource alone, so each further ask of the same
queue passes the queue check again and, on another node free of reservations, preempts again:
on a cluster of several nodes its preemption example (``deployments/examples/preemption`` in
yunikorn-k8shim: a queue guaranteed 3 of 10 pods' worth) loses all 5 low-priority pods in a
second and the preempting queue ends far above its guarantee; on the one node of YuniKorn's own
demo the node's reservation serialises the asks and it stops at 3. Here the attempt's
snapshots (and typed queues) of the ask's queue and its ancestors count, as allocated, the
asks below each of them that triggered preemption and still hold their reservation
(:func:`claimed_by_preemptors`): preemption stops once the queue's usage plus what is already
being freed for it reaches its guarantee, whatever the number of nodes. Nothing changes while no
such ask waits; an ask whose reservation ended (allocated, removed, its node gone) no longer
counts.

"Above" and "below its guarantee" look at the ask's resource types only, as YuniKorn's
isAskQueueUnderGuaranteed and isVictimQueueOverGuaranteed do: a queue over its guarantee in
memory may still preempt for vcores, and a queue under its guarantee in GPUs may still give up
vcores. A queue's remaining guarantee is bounded by its parent's only in the types both name
(:meth:`.snapshot.QueueSnapshot.remaining_guaranteed`).
   Then each victim is marked preempted and its queue's preempting resource grows, the ask is
   marked as having triggered preemption (it never preempts again), and the caller releases
   the victims through the RM in one message and reserves the node for the ask.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from pyscheduler.common.resources import Resource
from pyscheduler.scheduler.preemption.snapshot import (
    Quantities,
    QueueSnapshot,
    add_into,
    ask_queue_under_guaranteed,
    covers,
    victim_queue_over_guaranteed,
)
from pyscheduler.scheduler.preemption.memo import PreemptionMemo
from pyscheduler.scheduler.preemption.node_plan import plan_node
from pyscheduler.scheduler.preemption.preemptor import (
    DOES_NOT_HELP,
    PreemptionOutcome,
    PreemptionPlan,
    PreemptionReason,
)
from pyscheduler.scheduler.preemption.typed import TypedQueue, TypedQueues
from pyscheduler.scheduler.preemption.victims import EligibleLeaf, Victims
from pyscheduler.si.callback import PredicatesFunc, PreemptionPredicatesFunc, check_predicates
from pyscheduler.si.messages import PredicatesArgs, PreemptionPredicatesArgs

if TYPE_CHECKING:
    from pyscheduler.objects.allocation import Allocation
    from pyscheduler.objects.application import Application
    from pyscheduler.objects.node import Node
    from pyscheduler.objects.queue import Queue
    from pyscheduler.objects.reservation import Reservation

__all__ = [
    "ATTEMPT_INTERVAL_NS",
    "GUARANTEES_CHECK_FAILED",
    "GuaranteedPreemptor",
    "PREEMPTION_DOES_NOT_HELP",
    "PREEMPTION_GUARANTEES_CHECK_FAILED",
    "PREEMPTION_MAX_ATTEMPTS_EXHAUSTED",
    "PREEMPTION_PRECONDITIONS_FAILED",
    "PREEMPTION_SHORTFALL",
    "SHORTFALL",
    "check_preconditions",
    "claimed_by_preemptors",
]

#: YuniKorn's preemptAttemptFrequency: an ask passes the preconditions at most this often.
ATTEMPT_INTERVAL_NS: Final = 15 * 1_000_000_000
#: RM checks made per batch (YuniKorn's preemptCheckConcurrency).
CHECK_BATCH: Final = 10
SCORE_FIT_MAX: Final = 1 << 32
SCORE_ORIGINATOR: Final = 1 << 33
SCORE_NO_PREEMPT: Final = 1 << 34
SCORE_UNFIT: Final = 1 << 35
#: Allocation log entries (YuniKorn's pkg/common/errors.go).
PREEMPTION_PRECONDITIONS_FAILED: Final = "Preemption preconditions failed"
PREEMPTION_GUARANTEES_CHECK_FAILED: Final = "Preemption queue guarantees check failed"
PREEMPTION_SHORTFALL: Final = "Preemption helped but short of resources"
PREEMPTION_DOES_NOT_HELP: Final = "Preemption does not help"
#: The leaf visit's 10 attempts are used up (the spec's "max attempts exhausted").
PREEMPTION_MAX_ATTEMPTS_EXHAUSTED: Final = "Preemption max attempts exhausted"
#: The attempt's fixed outcomes (with their allocation log entries), made once.
GUARANTEES_CHECK_FAILED: Final = PreemptionOutcome(
    None, PreemptionReason.GUARANTEES_CHECK_FAILED, PREEMPTION_GUARANTEES_CHECK_FAILED)
SHORTFALL: Final = PreemptionOutcome(None, PreemptionReason.SHORTFALL, PREEMPTION_SHORTFALL)


def check_preconditions(ask: Allocation, delay_ns: int, now_ns: int) -> bool:
    """YuniKorn's CheckPreconditions, in its order: the ask may preempt others, has not
    triggered preemption before, has no required node, is older than the queue's
    ``preemption.delay``, and was not checked in the last 15 s. Passing stamps the check time
    (failing does not)."""
    if not ask.allow_preempt_other or ask.triggered_preemption or ask.required_node:
        return False
    if now_ns < ask.create_time_ns + delay_ns:
        return False
    if ask.preempt_check_time_ns and now_ns < ask.preempt_check_time_ns + ATTEMPT_INTERVAL_NS:
        return False
    ask.preempt_check_time_ns = now_ns
    return True


def claimed_by_preemptors(leaf: Queue, reservations: Iterable[Reservation],
                          applications: Mapping[str, Application]) -> dict[str, Quantities]:
    """Per queue on ``leaf``'s path (the leaf and its ancestors), the resources of the asks below
    it that triggered preemption and still hold their reservation: room already being freed for
    them, which the attempt counts as that queue's usage (see the module doc). Queues without
    such asks are left out. Costs O(reservations x depth): a partition holds at most about one
    reservation per node."""
    on_path: set[str] = set()
    walk: Queue | None = leaf
    while walk is not None:
        on_path.add(walk.path)
        walk = walk.parent
    claimed: dict[str, Quantities] = {}
    for reservation in reservations:
        app = applications.get(reservation.app_id)
        holder = app.asks.get(reservation.allocation_key) if app is not None else None
        if app is None or holder is None or not holder.triggered_preemption:
            continue
        amounts = holder.resource.view()
        queue = app.queue
        while queue is not None:
            if queue.path in on_path:
                add_into(claimed.setdefault(queue.path, {}), amounts)
            queue = queue.parent
    return claimed


def _score(victim: Allocation) -> int:
    return (SCORE_ORIGINATOR if victim.originator else 0) | (0 if victim.allow_preempt_self else SCORE_NO_PREEMPT)


@dataclass
class _Check:
    node_id: str
    keys: tuple[str, ...]
    start_index: int


class GuaranteedPreemptor:
    """One attempt for one ask. ``applications`` are the partition's applications by id,
    ``nodes`` its nodes by id and ``sorted_ids``
    their ids in order; ``fitting(resource)`` lists the ids of the schedulable nodes whose
    free room holds ``resource`` (the partition's node index answers it without a scan;
    None: the nodes are scanned). ``memo`` is the partition's (:mod:`.memo`; None: one for
    this attempt only). ``claimed``: per queue on the ask's path, what asks already preempting
    below it wait for (:func:`claimed_by_preemptors`; None: nothing), counted as its usage."""

    def __init__(self, leaf: Queue, ask: Allocation, applications: Mapping[str, Application],
                 nodes: Mapping[str, Node], sorted_ids: Sequence[str], *,
                 nodes_tried: bool, predicates: PredicatesFunc | None,
                 preemption_predicates: PreemptionPredicatesFunc | None,
                 reserved_by_others: Callable[[Node], bool],
                 fitting: Callable[[Resource], Iterable[str]] | None = None,
                 memo: PreemptionMemo | None = None,
                 claimed: Mapping[str, Quantities] | None = None) -> None:
        self.leaf = leaf
        self.ask = ask
        self.nodes = nodes
        self.sorted_ids = sorted_ids
        self.nodes_tried = nodes_tried
        self.predicates = predicates
        self.preemption_predicates = preemption_predicates
        self.reserved_by_others = reserved_by_others
        self.fitting = fitting
        self._memo = (memo or PreemptionMemo()).for_ask_leaf(leaf)
        self.claimed: Mapping[str, Quantities] = claimed or {}
        self.victims = Victims(leaf, ask, applications, self._memo.verdicts, self.claimed)
        self.snapshots = self.victims.snapshots
        #: Victim key -> its queue's path, for the victims looked at so far.
        self.queue_of: dict[str, str] = {}
        #: Victim key -> its queue, for the same victims.
        self._leaf_of: dict[str, Queue] = {}
        #: The snapshots on the ask's types, for the per-node plans (made when first needed).
        self._typed: TypedQueues | None = None
        #: A victim queue -> its lowest common ancestor with the ask's queue (typed; the
        #: pure-Python node plan's shortcut, see :mod:`.node_plan`).
        self._common_ancestors: dict[TypedQueue, TypedQueue | None] = {}
        #: Free room of the nodes planned so far.
        self.available: dict[str, Resource] = {}

    # -- the attempt -------------------------------------------------------------------------

    def try_preemption(self) -> PreemptionOutcome:
        """The plan, or why there is none (with its allocation log entry; none when no node
        works: DOES_NOT_HELP)."""
        if not self._queue_check():
            return GUARANTEES_CHECK_FAILED
        chosen = self._try_nodes()
        if chosen is None:
            return DOES_NOT_HELP
        node_id, victims = chosen
        if self._short_of_guarantee(victims):
            return DOES_NOT_HELP  # no additional victims can bring the ask's queue within its guarantee
        ask = self.ask.resource
        fits_already = ask.fits_in(self.available[node_id])
        final, total = _trim(ask, victims, node_id, fits_already)
        if fits_already or not covers(total, ask):
            # The node's own victims do not cover the ask: YuniKorn's additional victims count.
            extra, _ = self._additional_victims(victims)
            if not victims and not extra:
                return DOES_NOT_HELP
            final, total = _trim(ask, victims + extra, node_id, fits_already)
        if not covers(total, ask):
            return SHORTFALL
        return PreemptionOutcome.planned(PreemptionPlan(node_id, tuple(final)))

    def _queue_check(self) -> bool:
        copies = _LazyCopies(self.snapshots, self.victims.snapshot)
        ask_queue = copies.require(self.leaf.path)
        wanted = self.ask.resource.view()
        ask_queue.add_allocation(wanted)
        for eligible in self.victims.leaves:
            queue = copies.require(eligible.queue.path)
            for victim in self.victims.in_leaf(eligible):
                queue.remove_allocation(victim.resource)
                remaining = ask_queue.remaining_guaranteed()
                if remaining is not None and ask_queue_under_guaranteed(wanted, remaining):
                    return True
        return False

    def _usable(self, node: Node) -> bool:
        return node.schedulable and not self.reserved_by_others(node) and node.fits_capacity(self.ask.resource)

    def _candidates(self, node: Node) -> list[Allocation]:
        """The node's victims in YuniKorn's per-node order (their queues noted)."""
        found = []
        queue_of, leaf_of = self.queue_of, self._leaf_of
        for eligible, alloc in self.victims.on_node_for_plan(node):
            key = alloc.allocation_key
            queue_of[key] = eligible.queue.path
            leaf_of[key] = eligible.queue
            found.append(alloc)
        return found

    def _victims_on_node(self, available: Resource, candidates: list[Allocation]) -> tuple[int, list[Allocation]] | None:
        """YuniKorn's calculateVictimsByNode: (start index, victims) or None for no use. This
        runs for every candidate of every node planned, so the queues are played on the ask's
        types only (:mod:`.typed`) and the free room is summed in plain dicts.

        Moving a victim's resources from its queue to the ask's changes only the queues below
        their common ancestor (above it the two changes cancel), and whether the ask's queue
        then goes over its guarantee depends only on the ask's side: so that answer is kept per
        (common ancestor, resources) until a victim is actually taken. A victim that does not
        reduce the node's shortfall is moved back at once in YuniKorn; here it is not moved."""
        if self.ask.resource.fits_in(available):
            return -1, []
        if not candidates:
            return None
        return self._plan_node(available, candidates)

    def _typed_queues(self) -> TypedQueues:
        """The queues on the ask's types, from the memo (made when first needed)."""
        typed = self._typed
        if typed is None:
            typed = self._typed = self._memo.typed_queues(self.leaf, list(self.ask.resource.view()), self.claimed)
        return typed

    def _plan_node(self, available: Resource, candidates: list[Allocation]) -> tuple[int, list[Allocation]] | None:
        """The two passes of :meth:`_victims_on_node` over a node's candidates, on the typed
        queues (:mod:`.node_plan`: natively, or in its pure-Python twin when the one native
        switch, :mod:`pyscheduler.common.native`, was off as the typed queues were made). The
        slow oracle of the tests (``pyscheduler.testing.preemption_reference``) overrides it."""
        return plan_node(self._typed_queues(), self.leaf, self._leaf_of, self.ask.resource, available, candidates,
                         self._common_ancestors)

    def _try_nodes(self) -> tuple[str, list[Allocation]] | None:
        """YuniKorn's tryNodes and checkPreemptionPredicates: the nodes' checks in (start index,
        node id) order, to the RM in batches (or the first one without the RM's hook)."""
        victims_by_node: dict[str, list[Allocation]] = {}
        checks = self._sorted_checks(victims_by_node)
        best: tuple[int, str, int] | None = None
        if self.preemption_predicates is None:
            first = next(checks, None)
            if first is not None:
                best = (0, first.node_id, first.start_index)
        else:
            while True:
                batch = list(itertools.islice(checks, CHECK_BATCH))
                if not batch:
                    break
                for check in batch:
                    accepted = self._rm_check(check)
                    if accepted is None:
                        continue
                    score = self._solution_score(victims_by_node[check.node_id], accepted)
                    if best is None or score < best[0]:
                        best = (score, check.node_id, accepted)
                if best is not None and best[0] < SCORE_FIT_MAX:
                    break
        if best is None:
            return None
        _, node_id, last = best
        victims = victims_by_node[node_id]
        if last >= len(victims):
            return None
        return node_id, victims[:last + 1]

    def _fitting_now(self) -> list[tuple[int, str]]:
        """(-1, id) of the usable nodes where the ask fits as they are, in id order."""
        ask = self.ask.resource
        if self.fitting is not None:
            ids: Iterable[str] = self.fitting(ask)
        else:
            ids = (node_id for node_id, node in self.nodes.items() if node.schedulable and ask.fits_in(node.available))
        found = []
        for node_id in ids:
            node = self.nodes[node_id]
            if self._usable(node) and ask.fits_in(node.available):
                self.available[node_id] = node.available
                found.append((-1, node_id))
        found.sort()
        return found

    def _sorted_checks(self, victims_by_node: dict[str, list[Allocation]]) -> Iterator[_Check]:
        """The checks YuniKorn would sort, yielded in that order while looking at as few nodes
        as possible. Every node starts with a lower bound on its start index: -1 where the ask
        fits as the node is (listed by ``fitting``), 0 elsewhere. Nodes are taken in (bound, id)
        order; a node taken with bound 0 gets a better one (the fewest of its candidates,
        largest first, that cover its shortfall in every type) and goes back if that is
        higher; a node taken with its better bound is planned. A planned check is yielded once
        no node left can precede it. Each yielded node's victims go to ``victims_by_node``."""
        ask = self.ask.resource
        fitting = self._fitting_now() if not self.nodes_tried else []
        fitting_ids = {node_id for _, node_id in fitting}
        fit_position = 0
        ids = iter(self.sorted_ids)
        next_id = next(ids, None)
        refined: list[tuple[int, str]] = []
        candidates_of: dict[str, list[Allocation]] = {}
        planned: list[tuple[int, str, list[Allocation]]] = []

        def plan(node_id: str) -> None:
            found = self._victims_on_node(self.available[node_id], candidates_of.pop(node_id, []))
            if found is not None and (found[1] or not self.nodes_tried):
                heapq.heappush(planned, (found[0], node_id, found[1]))

        while True:
            # The smallest key left among the three sources (fitting, refined, coarse ids).
            key: tuple[int, str] | None = fitting[fit_position] if fit_position < len(fitting) else None
            if refined and (key is None or refined[0] < key):
                key = refined[0]
            if next_id is not None and (key is None or (0, next_id) < key):
                key = (0, next_id)
            if key is None or (planned and key > planned[0][:2]):
                if not planned:
                    return
                index, node_id, victims = heapq.heappop(planned)
                victims_by_node[node_id] = victims
                yield _Check(node_id, tuple(v.allocation_key for v in victims), index)
                continue
            bound, node_id = key
            if fit_position < len(fitting) and key == fitting[fit_position]:
                fit_position += 1
                plan(node_id)
            elif refined and key == refined[0]:
                heapq.heappop(refined)
                plan(node_id)
            else:
                next_id = next(ids, None)
                if node_id in fitting_ids:
                    continue
                node = self.nodes[node_id]
                if not self._usable(node):
                    continue
                free = node.available
                if ask.fits_in(free):
                    continue  # nodes already tried, or one the fitting list missed: not a preemption
                candidates = self._candidates(node)
                better = _start_index_bound(ask, free, candidates)
                if better is None:
                    continue
                self.available[node_id] = free
                candidates_of[node_id] = candidates
                if better > 0:
                    heapq.heappush(refined, (better, node_id))
                else:
                    plan(node_id)

    def _rm_check(self, check: _Check) -> int | None:
        """The index the RM says is enough (-1: no victim needed), or None when it refuses."""
        if not check.keys:
            reason = check_predicates(self.predicates, PredicatesArgs(self.ask.allocation_key, check.node_id, True))
            return None if reason else -1
        assert self.preemption_predicates is not None
        try:
            response = self.preemption_predicates(PreemptionPredicatesArgs(
                self.ask.allocation_key, check.node_id, check.keys, check.start_index))
        except Exception:  # a broken RM refuses the node, as check_predicates does
            return None
        return response.index if response.success else None

    @staticmethod
    def _solution_score(victims: list[Allocation], index: int) -> int:
        if index < 0:
            return 0
        if index >= len(victims):
            return SCORE_UNFIT
        score = 0
        for victim in victims[:index + 1]:
            score |= _score(victim)
        return score + index + 1

    def _short_of_guarantee(self, chosen: list[Allocation]) -> bool:
        """Whether the ask's queue, once the chosen victims are gone, is over its guarantee in
        some type: then YuniKorn's additional victims never bring it within (each one they
        take only lowers its remaining guarantee) and the attempt fails."""
        copies = _LazyCopies(self.snapshots, self.victims.snapshot)
        ask_queue = copies.require(self.leaf.path)
        for victim in chosen:
            queue = copies.get(self.queue_of.get(victim.allocation_key, ""))
            if queue is not None:
                queue.remove_allocation(victim.resource)
        return _over_guarantee(ask_queue, self.ask.resource.view())

    def _additional_victims(self, chosen: list[Allocation]) -> tuple[list[Allocation], bool]:
        """YuniKorn's calculateAdditionalVictims: victims from anywhere below the fence, oldest
        last, while the ask's queue stays within its guarantee, and whether it ends within it
        (YuniKorn fails the attempt if not; :meth:`_short_of_guarantee` knows that beforehand).
        Only needed when the chosen node's victims do not cover the ask. YuniKorn reads and sorts
        every victim below the fence; here the leaves' age orders are merged lazily
        (:meth:`.victims.Victims.in_age_order`), so the loop reads only the victims it looks at
        before the ask's queue would go over its guarantee."""
        return self._take_additional(chosen, self.victims.in_age_order(self._memo.orders))

    def _take_additional(self, chosen: list[Allocation],
                         ordered: Iterable[tuple[EligibleLeaf, Allocation]]) -> tuple[list[Allocation], bool]:
        """The loop of :meth:`_additional_victims` over victims in YuniKorn's order."""
        copies = _LazyCopies(self.snapshots, self.victims.snapshot)
        ask_queue = copies.require(self.leaf.path)
        wanted = self.ask.resource.view()
        seen = set()
        for victim in chosen:
            queue = copies.get(self.queue_of.get(victim.allocation_key, ""))
            if queue is not None:
                queue.remove_allocation(victim.resource)
                seen.add(victim.allocation_key)
        extra: list[Allocation] = []
        nodes = self.nodes
        for eligible, victim in ordered:
            key = victim.allocation_key
            if key in seen or victim.node_id not in nodes:
                continue  # taken already, or on a node out of this attempt (another member cluster)
            self.queue_of[key] = eligible.queue.path
            self._leaf_of[key] = eligible.queue
            queue = copies.get(eligible.queue.path)
            if queue is not None and _remove_if_over(queue, victim, wanted):
                ask_before = ask_queue.remaining_guaranteed()
                ask_queue.add_allocation(victim.resource)
                if _over_guarantee(ask_queue, wanted):
                    _give_back(victim, ask_queue, queue)
                    break
                if not _equals_or_empty(ask_before, ask_queue.remaining_guaranteed()):
                    extra.append(victim)
                else:
                    _give_back(victim, ask_queue, queue)
        return extra, not _over_guarantee(ask_queue, wanted)


def _trim(ask: Resource, victims: list[Allocation], node_id: str, fits_already: bool) -> tuple[list[Allocation], Quantities]:
    """YuniKorn's final trim: victims (only the chosen node's unless the ask fits there already)
    until they cover the ask (:func:`covers`); returns them and their total."""
    wanted = ask.view()
    final: list[Allocation] = []
    total: Quantities = {}
    for victim in victims:
        if not fits_already and victim.node_id != node_id:
            continue
        if not covers(total, wanted):
            final.append(victim)
        add_into(total, victim.resource.view())
    return final, total


class _LazyCopies:
    """Copies of an attempt's snapshots, each made when first asked for (with its parents): a
    node's plan touches its victims' queues and the ask's, not every queue with victims."""

    def __init__(self, snapshots: dict[str, QueueSnapshot],
                 make: Callable[[str], QueueSnapshot | None] | None = None) -> None:
        self._snapshots = snapshots
        self._make = make
        self._copies: dict[str, QueueSnapshot] = {}

    def get(self, path: str) -> QueueSnapshot | None:
        found = self._copies.get(path)
        if found is None:
            original = self._snapshots.get(path)
            if original is None and self._make is not None:
                original = self._make(path)
            if original is None:
                return None
            found = original.duplicate(self._copies)
        return found

    def require(self, path: str) -> QueueSnapshot:
        found = self.get(path)
        assert found is not None, f"no snapshot of {path}"
        return found


def _start_index_bound(ask: Resource, free: Resource, candidates: list[Allocation]) -> int | None:
    """A lower bound on the start index of a node's plan (its kept victims are some of its
    candidates): the fewest candidates, largest first in each type, that cover the shortfall in
    every type, minus one; None when all of them together cannot."""
    shortfall = ask.sub_eliminate_negative(free)
    needed = 0
    for name, missing in shortfall.items():
        if missing <= 0:
            continue
        covered = 0
        count = 0
        for size in sorted((c.resource.get(name, 0) for c in candidates), reverse=True):
            if covered >= missing or size <= 0:
                break
            covered += size
            count += 1
        if covered < missing:
            return None
        needed = max(needed, count)
    return needed - 1


def _remove_if_over(queue: QueueSnapshot, victim: Allocation, wanted: Mapping[str, int]) -> bool:
    """Removes the victim from its queue's copy when the queue was over its guarantee before in
    a type of the ask (:func:`victim_queue_over_guaranteed`), or has no guarantee on its path;
    otherwise leaves it. YuniKorn then also requires the queue's preemptable resource to be at
    least zero after the removal: that resource only ever holds positive quantities
    (:meth:`QueueSnapshot.preemptable`, pinned by a test), so the check always passes and is not
    computed here."""
    before = queue.remaining_guaranteed()
    if before is None or victim_queue_over_guaranteed(wanted, before):
        queue.remove_allocation(victim.resource.view())
        return True
    return False


def _over_guarantee(queue: QueueSnapshot, wanted: Mapping[str, int]) -> bool:
    """The ask's queue is over its guarantee in a type of the ask (not over without one)."""
    remaining = queue.remaining_guaranteed()
    return remaining is not None and not ask_queue_under_guaranteed(wanted, remaining)


def _give_back(victim: Allocation, ask_queue: QueueSnapshot, queue: QueueSnapshot) -> None:
    """Undoes moving a victim's resources from its queue's copy to the ask queue's."""
    ask_queue.remove_allocation(victim.resource)
    queue.add_allocation(victim.resource)


def _equals_or_empty(left: Quantities | None, right: Quantities | None) -> bool:
    """YuniKorn's EqualsOrEmpty: both empty (or nil), or equal with a missing type as 0."""
    if not left and not right:
        return True
    if left is None or right is None:
        return False
    return {k: v for k, v in left.items() if v} == {k: v for k, v in right.items() if v}
