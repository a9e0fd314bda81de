"""The preemption extension point: what a preemption policy implements, what an attempt is
given and what it returns.

A :class:`Preemptor` is one preemption policy. The scheduling cycle holds a tuple of them
(:func:`.policies.default_preemptors`: guaranteed share, required node, quota change, in that
order) and, wherever an ask cannot be placed and preemption may help, builds one
:class:`PreemptionAttempt` naming why (:class:`PreemptionTrigger`) and offers it to each
preemptor in turn until one returns a plan; the cycle then applies that plan (marks the
victims, releases them through the RM naming the ask as their preemptor, reserves the node
when the plan says so). A new policy is a new class in the tuple, not a new call site.

Contract of :meth:`Preemptor.try_preempt`: called under the partition's lock, on the cycle's
thread; it never calls the RM except through the attempt's predicates hooks; it changes nothing
in the partition except the ask's allocation log and its own bookkeeping on the ask (the
attempt budget, the preconditions' check time): applying a plan is the cycle's. A preemptor
that does not act on the attempt's trigger returns :data:`NOT_APPLICABLE` at once.

Contract of :meth:`Preemptor.on_tick`: called about once a second per partition by
``ClusterContext.tick``, *without* the partition's lock (a preemptor that changes the partition
takes it); the outcomes it puts in the partition's outbox are sent after it returns. Policies
driven by asks only do nothing there; quota-change enforcement, driven by time, does its work
there.

Outcomes are values (:class:`PreemptionOutcome`: the plan, or a :class:`PreemptionReason` code
and the allocation log message); the fixed ones are made once here, as attempts are frequent
on a busy cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, unique
from typing import TYPE_CHECKING, Final, Protocol

from pyscheduler.si.callback import PredicatesFunc, PreemptionPredicatesFunc

if TYPE_CHECKING:
    from pyscheduler.common.resources import Resource
    from pyscheduler.objects.allocation import Allocation
    from pyscheduler.objects.application import Application
    from pyscheduler.objects.node_groups import NodeGroup
    from pyscheduler.objects.node import Node
    from pyscheduler.objects.partition import Partition
    from pyscheduler.objects.queue import Queue

__all__ = [
    "AttemptBudget",
    "DOES_NOT_HELP",
    "NOT_APPLICABLE",
    "PreemptionAttempt",
    "PreemptionOutcome",
    "PreemptionPlan",
    "PreemptionReason",
    "PreemptionTrigger",
    "Preemptor",
]


@unique
class PreemptionTrigger(IntEnum):
    """Why the cycle offers an ask to the preemptors."""

    #: The ask does not fit its queue's headroom (the nodes were not tried).
    QUEUE_HEADROOM = 1
    #: The nodes were tried and none took the ask.
    NO_NODE_FITS = 2
    #: A reserved required-node ask (a daemon set's pod) fits its queue but not its node.
    REQUIRED_NODE = 3


@unique
class PreemptionReason(IntEnum):
    """What came of an attempt: PLANNED, or why there is no plan."""

    PLANNED = 0
    #: The preemptor does not act on this trigger, or is off for the partition.
    NOT_APPLICABLE = 1
    #: The leaf visit's attempts are used up (YuniKorn's maxPreemptionsPerQueue).
    MAX_ATTEMPTS_EXHAUSTED = 2
    #: The ask may not preempt (now): opted out, preempted before, too young, checked recently.
    PRECONDITIONS_FAILED = 3
    #: Removing every eligible victim does not bring the ask's queue within its guarantee.
    GUARANTEES_CHECK_FAILED = 4
    #: No node's victims would let the ask in, or they would take its queue over its guarantee.
    DOES_NOT_HELP = 5
    #: The victims found do not cover the ask.
    SHORTFALL = 6
    #: No victim on the required node frees enough room.
    NO_VICTIM = 7


@dataclass(frozen=True, slots=True)
class PreemptionPlan:
    """What an attempt decided: the node the ask goes to and the victims to release there.

    ``reserve_node``: the ask reserves ``node_id`` (guaranteed share: its victims free room
    there); False when the ask already holds its node (a required node). ``release_message``
    prefixes the ask's key in the victims' release (YuniKorn's wording, per preemptor)."""

    node_id: str
    victims: tuple[Allocation, ...]
    release_message: str = "preempting allocations to free up resources to run ask: "
    reserve_node: bool = True


@dataclass(frozen=True, slots=True)
class PreemptionOutcome:
    """A plan (``reason`` PLANNED), or none with the code and the allocation log message
    (``""`` when the attempt adds no entry of its own)."""

    plan: PreemptionPlan | None
    reason: PreemptionReason
    message: str = ""

    @classmethod
    def planned(cls, plan: PreemptionPlan) -> PreemptionOutcome:
        return cls(plan, PreemptionReason.PLANNED)


#: The fixed outcomes, made once.
NOT_APPLICABLE: Final = PreemptionOutcome(None, PreemptionReason.NOT_APPLICABLE)
DOES_NOT_HELP: Final = PreemptionOutcome(None, PreemptionReason.DOES_NOT_HELP)


class AttemptBudget:
    """The attempts left in the cycle's current leaf visit (YuniKorn's maxPreemptionsPerQueue):
    the cycle refills it per leaf visit, a preemptor that gets past its preconditions spends one."""

    __slots__ = ("left",)

    def __init__(self, left: int) -> None:
        self.left = left


@dataclass(slots=True)
class PreemptionAttempt:
    """One ask offered to the preemptors: where it is, why, and the cycle's means. Preemptors
    read it and never change it (not frozen only because the cycle builds one per attempt:
    a frozen dataclass sets each field through ``object.__setattr__``)."""

    partition: Partition
    queue: Queue
    app: Application
    ask: Allocation
    trigger: PreemptionTrigger
    #: The RM's hooks, resolved once per RM (None: every node passes / first candidate).
    predicates: PredicatesFunc | None
    preemption_predicates: PreemptionPredicatesFunc | None
    budget: AttemptBudget
    #: The cycle's reservation delay, seconds (another ask's old reservation may give way).
    reservation_delay: float
    #: REQUIRED_NODE: the ask's node.
    node: Node | None = None
    #: A partition with member clusters: the clusters the ask may run in, in the order to try
    #: them (pyscheduler.scheduler.cluster_choice); victims are chosen on one cluster's nodes
    #: only, the first with a plan. Empty: every node of the partition.
    clusters: tuple[NodeGroup, ...] = ()
    #: A gang waiting for a topology domain (``clusters`` are the domains that could hold it):
    #: its whole need in one; the guaranteed-share preemptor tries the domains by their victims
    #: (:mod:`.domains`) instead of in order.
    domain_need: Resource | None = None


class Preemptor(Protocol):
    """One preemption policy (see the module doc for the contracts)."""

    def try_preempt(self, attempt: PreemptionAttempt) -> PreemptionOutcome:
        """A plan for the attempt's ask, or why there is none."""
        ...

    def on_tick(self, partition: Partition, now_ns: int) -> None:
        """Time-driven work (quota change enforcement); nothing for ask-driven policies."""
        ...
