"""What a resource manager implements so the core can talk back to it.

YuniKorn's ``api.ResourceManagerCallback`` is one Go interface. Here it is split by what is
required and what is optional:

- :class:`ResourceManagerCallback` (required): the results of the RM's requests and the core's
  own decisions (``update_allocation``, ``update_application``, ``update_node``), the request
  events (``send_event``) and the per-ask scheduling state
  (``update_container_scheduling_state``).
- :class:`PredicatesPlugin` (optional): ``predicates``, the RM's own node filter (K8s filter
  plugins). **An RM without it lets every node pass**; the core then relies on resources,
  reservations and the required-node tag only.
- :class:`PreemptionPredicatesPlugin` (optional): ``preemption_predicates``, used by
  preemption to ask whether removing some victims would let the ask fit.
- :class:`NodeScoresPlugin` (optional): ``score_nodes``, the RM's preference among the nodes an
  ask tagged :data:`~pyscheduler.si.messages.TAG_SCORE_NODES` may go on (Kubernetes' preferred
  terms). Like ``predicates`` it runs inside the cycle, under the partition's lock: fast, and
  never calling the core.

How the core calls an RM (the contract an implementation may rely on and must honour):

- Calls come from core threads (the proxy's dispatcher, the scheduling loop, the event
  publisher), possibly several at once: implementations must be thread-safe.
- The core never holds one of its object locks while calling an RM, so an RM may call back
  into the core (e.g. send an ``update_allocation`` from inside ``update_allocation``) on the
  same thread. It must not block inside a callback waiting for *another* thread's call into
  the core: deliveries to an RM are kept in order under a per-partition sending lock, and
  that other call may be waiting to deliver its own outcomes. ``predicates`` is the one
  exception to "no locks held": it runs inside the cycle, under the partition's lock.
- ``predicates`` is called synchronously inside the scheduling cycle for every node tried,
  so it must be fast and must not block on the core.
- The ``update_*`` methods, ``send_event`` and ``update_container_scheduling_state`` return
  nothing (YuniKorn's return an ``error`` that is only logged). An exception raised by one is
  logged by the caller and never stops the core.
- Messages are immutable (see :mod:`pyscheduler.si.messages`): an RM may keep them.
- The core binds an RM's methods once, at registration (:func:`bind_callbacks`): replacing a
  method on the RM object afterwards changes nothing; an RM lacking a required method is
  refused at registration.
- ``update_container_scheduling_state`` carries a :class:`~pyscheduler.si.messages.SchedulingReason`
  code: SKIPPED with QUEUE_QUOTA or USER_QUOTA when the ask's check starts failing, FAILED with
  NO_NODE_FITS, PREDICATES or REQUIRED_NODE at most once per ask every 15 s (the pace of the
  request events with the same text). An RM acts on the code, never on the ``reason`` text.

The Protocols are ``runtime_checkable`` so the proxy can test an RM with ``isinstance`` once,
at registration. :func:`bind_callbacks` resolves every method the core calls, required and
optional, once, into :class:`BoundCallbacks`: the core delivers through those bound methods
and never looks a method up by name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from pyscheduler.si.events import EventRecord
from pyscheduler.si.messages import (
    AllocationResponse,
    ApplicationResponse,
    NodeResponse,
    PredicatesArgs,
    PreemptionPredicatesArgs,
    PreemptionPredicatesResponse,
    ScoreNodesArgs,
    UpdateContainerSchedulingStateRequest,
)

__all__ = [
    "BoundCallbacks",
    "bind_callbacks",
    "NodeScoresFunc",
    "NodeScoresPlugin",
    "node_scores_of",
    "PredicatesFunc",
    "PredicatesPlugin",
    "PreemptionPredicatesPlugin",
    "ResourceManagerCallback",
    "check_predicates",
    "predicates_of",
    "preemption_predicates_of",
    "PreemptionPredicatesFunc",
]

# The resolved ``predicates`` hook: args -> None (the node passes) or the refusal reason.
PredicatesFunc = Callable[[PredicatesArgs], "str | None"]


@runtime_checkable
class ResourceManagerCallback(Protocol):
    """The callbacks every RM implements (YuniKorn's ``ResourceManagerCallback`` minus the
    optional plugins)."""

    def update_allocation(self, response: AllocationResponse) -> None:
        """New allocations, released allocations (with their termination type) and rejected
        asks/allocations."""
        ...

    def update_application(self, response: ApplicationResponse) -> None:
        """Accepted and rejected applications, and application state changes."""
        ...

    def update_node(self, response: NodeResponse) -> None:
        """Accepted and rejected node registrations."""
        ...

    def send_event(self, events: Sequence[EventRecord]) -> None:
        """Request events for the RM to surface (K8s: pod events), in batches, every ~2 s; and,
        before an update call returns, the totals that update took past int64 and that were
        clamped (see :mod:`pyscheduler.rmproxy.proxy`)."""
        ...

    def update_container_scheduling_state(self, request: UpdateContainerSchedulingStateRequest) -> None:
        """An ask the core skipped (its queue's or user's room) or failed (no node takes it),
        with the reason's code (see the module doc); one request per ask and call."""
        ...


@runtime_checkable
class PredicatesPlugin(Protocol):
    """Optional: the RM's node filter, consulted for every node the core tries for an ask."""

    def predicates(self, args: PredicatesArgs) -> str | None:
        """Return ``None`` if ``args.allocation_key`` may go on ``args.node_id``, else the reason
        it may not (shown to users in the ask's allocation log and events).

        YuniKorn's ``Predicates`` returns an ``error``; here the reason string plays that part,
        so "no reason" means "passes". ``args.allocate`` is False when the core checks a
        reservation rather than an allocation.
        """
        ...


@runtime_checkable
class PreemptionPredicatesPlugin(Protocol):
    """Optional: lets preemption ask whether removing victims would make an ask fit a node."""

    def preemption_predicates(self, args: PreemptionPredicatesArgs) -> PreemptionPredicatesResponse:
        ...


@runtime_checkable
class NodeScoresPlugin(Protocol):
    """Optional: the RM's preference among the nodes an ask may go on."""

    def score_nodes(self, args: ScoreNodesArgs) -> Sequence[int]:
        """One score per node of ``args.node_ids``, in their order, from 0 (no preference) to
        100 (the most preferred). The core combines it with its own node order (see
        :mod:`pyscheduler.scheduler.cycle`). A wrong length or an exception: no preference."""
        ...


#: The resolved ``score_nodes`` hook.
NodeScoresFunc = Callable[[ScoreNodesArgs], Sequence[int]]


def node_scores_of(rm: object) -> NodeScoresFunc | None:
    """The RM's bound ``score_nodes`` method, or ``None`` when it has none."""
    return rm.score_nodes if isinstance(rm, NodeScoresPlugin) else None


def predicates_of(rm: object) -> PredicatesFunc | None:
    """The RM's bound ``predicates`` method, or ``None`` when it has none (every node passes).

    Resolve this once at registration rather than testing the RM on every node tried.
    """
    return rm.predicates if isinstance(rm, PredicatesPlugin) else None


#: The resolved ``preemption_predicates`` hook.
PreemptionPredicatesFunc = Callable[[PreemptionPredicatesArgs], PreemptionPredicatesResponse]


def preemption_predicates_of(rm: object) -> PreemptionPredicatesFunc | None:
    """The RM's bound ``preemption_predicates`` method, or ``None`` when it has none (then
    preemption takes its first candidate node, as YuniKorn does without an RM plugin)."""
    return rm.preemption_predicates if isinstance(rm, PreemptionPredicatesPlugin) else None


def check_predicates(predicates: PredicatesFunc | None, args: PredicatesArgs) -> str | None:
    """Run a resolved ``predicates`` hook: ``None`` if the node passes, else the reason.

    No hook means every node passes. A hook that raises refuses the node, with the exception as
    the reason: a broken RM must not crash the scheduling cycle, and refusing is the safe
    choice (placing an ask where the RM cannot run it would fail later, on the RM side).
    """
    if predicates is None:
        return None
    try:
        reason = predicates(args)
    except Exception as exc:  # noqa: BLE001 - any RM failure refuses the node
        return f"predicates failed: {type(exc).__name__}: {exc}"
    # Treat "" like None: an empty reason cannot explain a refusal, and Go's nil error is "passes".
    return reason or None


@dataclass(frozen=True, slots=True)
class BoundCallbacks:
    """An RM's callback methods, bound once at registration (:func:`bind_callbacks`): what the
    core calls to deliver its outcomes, and the optional hooks (None where the RM has none)."""

    update_allocation: Callable[[AllocationResponse], None]
    update_application: Callable[[ApplicationResponse], None]
    update_node: Callable[[NodeResponse], None]
    send_event: Callable[[Sequence[EventRecord]], None]
    update_container_scheduling_state: Callable[[UpdateContainerSchedulingStateRequest], None]
    predicates: PredicatesFunc | None
    preemption_predicates: PreemptionPredicatesFunc | None
    node_scores: NodeScoresFunc | None


def bind_callbacks(rm: ResourceManagerCallback) -> BoundCallbacks:
    """Every method of ``rm`` the core calls, bound once (an attribute an RM lacks fails here,
    at registration, rather than on the first delivery)."""
    return BoundCallbacks(
        rm.update_allocation,
        rm.update_application,
        rm.update_node,
        rm.send_event,
        rm.update_container_scheduling_state,
        predicates_of(rm),
        preemption_predicates_of(rm),
        node_scores_of(rm),
    )
