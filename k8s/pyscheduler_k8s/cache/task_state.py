"""The states of the shim's pod records and gangs, and their ONE transition table (the shim's
``task_state.go``, table-driven as the core's :mod:`pyscheduler.objects.application_state`).

**Tasks** (one per pod the shim knows). A record is born in the state :func:`initial_task_state`
gives (from what the pod is when first seen); afterwards only :func:`next_task_state` changes it,
through :data:`TASK_TRANSITIONS`:

- ``ASK``: pending in the core; ``ALLOCATED``: the core placed it (binding or bound);
  ``RELEASED``: the core ended its allocation without the pod ending (its node went away, or a
  placeholder's ask timed out); ``FOREIGN``: another scheduler's pod on a node (occupies it);
  ``HELD``: ours, but not schedulable as it is (its problem is on the pod, or its application was
  refused); ``GATED``: ours, its ``spec.schedulingGates`` not empty yet (no ask; its last gate
  going makes it a new pod); ``WAITING``: a gang member waiting for its gang to run (no ask);
  ``GANG_GATED``: ours, not gated itself, but the first of a gang (its application not made yet)
  while other known members of the gang are gated: no application, no placeholders, no ask (the
  gang waits as a whole, :mod:`.tasks`); the last gated member going makes it a new pod again.

An event the state does not accept raises :class:`InvalidTaskTransition` (the cache logs it and
leaves the record as it is: a watch and a callback racing must not kill either thread). An
event that leaves the state unchanged is a transition like any other, listed in the table.

**Gangs** (one per gang application, :class:`GangState`): ``RESERVING`` while its placeholders
are placed and its members wait; ``RUNNING`` once the core runs it (or resumed it after a Soft
timeout); ``FAILED`` after a Hard timeout. :data:`GANG_TRANSITIONS` is their table.

Pure: no I/O, no locks (the cache holds its lock around every use).
"""

from __future__ import annotations

from enum import Enum
from typing import Final

from pyscheduler.si import messages as si

__all__ = [
    "APPLICATION_MEMBER_STATES", "CoreAppState", "GANG_TRANSITIONS", "GangEvent", "GangState", "InvalidTaskTransition",
    "RELEASE_ON_END_STATES", "TASK_TRANSITIONS", "TaskEvent", "TaskState", "gang_accepts", "initial_task_state",
    "next_gang_state", "next_task_state", "task_accepts",
]


class TaskState(str, Enum):
    """A pod record's state; the values are what ``KubeShim.pod_state`` reports."""

    ASK = "ask"
    ALLOCATED = "allocated"
    RELEASED = "released"
    FOREIGN = "foreign"
    HELD = "held"
    GATED = "gated"
    WAITING = "waiting"
    GANG_GATED = "gangGated"


class TaskEvent(str, Enum):
    #: The core placed the ask (``update_allocation``'s new allocations).
    ALLOCATE = "allocate"
    #: The watch saw the pending pod bound by another binder.
    BOUND_ELSEWHERE = "boundElsewhere"
    #: Binding it failed: its room is given back and it asks again.
    BIND_FAILED = "bindFailed"
    #: The core ended its allocation and the pod stays (its node was removed).
    ALLOCATION_RELEASED = "allocationReleased"
    #: The core dropped a placeholder's pending ask (its gang's timeout): the pod is deleted.
    PLACEHOLDER_ASK_DROPPED = "placeholderAskDropped"
    #: The core dropped a member's pending ask (its gang's timeout): it waits for its gang.
    MEMBER_ASK_DROPPED = "memberAskDropped"
    #: Its gang runs (or resumed): the waiting member asks.
    GANG_RUNS = "gangRuns"
    #: The core refused its application: the pod is held with the core's reason.
    APPLICATION_REJECTED = "applicationRejected"
    #: A hub's member cluster was lost: the pod placed there asks again (:mod:`..hub`).
    REQUEUE = "requeue"


_T = TaskState
#: event -> {state it is accepted in: the state after it}
TASK_TRANSITIONS: Final[dict[TaskEvent, dict[TaskState, TaskState]]] = {
    TaskEvent.ALLOCATE: {_T.ASK: _T.ALLOCATED},
    TaskEvent.BOUND_ELSEWHERE: {_T.ASK: _T.ALLOCATED},
    # RELEASED too: the core may release it (its node went) while its binding fails.
    TaskEvent.BIND_FAILED: {_T.ALLOCATED: _T.ASK, _T.RELEASED: _T.ASK},
    TaskEvent.ALLOCATION_RELEASED: {_T.ALLOCATED: _T.RELEASED},
    TaskEvent.PLACEHOLDER_ASK_DROPPED: {_T.ASK: _T.RELEASED},
    TaskEvent.MEMBER_ASK_DROPPED: {_T.ASK: _T.WAITING},
    TaskEvent.GANG_RUNS: {_T.WAITING: _T.ASK},
    TaskEvent.APPLICATION_REJECTED: {_T.ASK: _T.HELD, _T.WAITING: _T.HELD, _T.ALLOCATED: _T.HELD,
                                     _T.RELEASED: _T.HELD, _T.HELD: _T.HELD},
    TaskEvent.REQUEUE: {_T.ALLOCATED: _T.ASK, _T.RELEASED: _T.ASK},
}


class InvalidTaskTransition(ValueError):
    """An event the record's current state does not accept."""

    def __init__(self, what: str, state: Enum, event: Enum) -> None:
        super().__init__(f"{what}: event {event.value} inappropriate in state {state.value}")
        self.state = state
        self.event = event


def task_accepts(state: TaskState, event: TaskEvent) -> bool:
    """Whether ``state`` accepts ``event`` (for a caller to whom a refusal is no error: an
    allocation for a pod deleted meanwhile)."""
    return state in TASK_TRANSITIONS[event]


def next_task_state(uid: str, state: TaskState, event: TaskEvent) -> TaskState:
    """The state after ``event``; raises :class:`InvalidTaskTransition` when ``state`` does not
    accept it."""
    target = TASK_TRANSITIONS[event].get(state)
    if target is None:
        raise InvalidTaskTransition(f"pod {uid}", state, event)
    return target


def initial_task_state(*, ours: bool, bound: bool, gated: bool, problem: bool, gang_waits: bool,
                       gang_gated: bool = False) -> TaskState:
    """The state of a pod first seen, the first that applies: another scheduler's is FOREIGN;
    ours with a problem (or of a refused application) HELD; gated GATED; bound ALLOCATED
    (recovered, never bound again); the would-be first of a gang whose other known members are
    gated (``gang_gated``) GANG_GATED; a member of a gang not running yet (``gang_waits``)
    WAITING; else ASK."""
    if not ours:
        return _T.FOREIGN
    if problem:
        return _T.HELD
    if gated:
        return _T.GATED
    if bound:
        return _T.ALLOCATED
    if gang_gated:
        return _T.GANG_GATED
    return _T.WAITING if gang_waits else _T.ASK


#: The states in which the pod counts as a member of its application in the core.
APPLICATION_MEMBER_STATES: Final = frozenset({_T.ASK, _T.ALLOCATED, _T.RELEASED, _T.WAITING})
#: The states whose pod's end sends the core a release (its ask withdrawn or allocation ended).
RELEASE_ON_END_STATES: Final = frozenset({_T.ASK, _T.ALLOCATED, _T.FOREIGN})


#: An application's state as the core reports it: the SI's enum, parsed once at the boundary.
CoreAppState = si.ApplicationState


class GangState(str, Enum):
    RESERVING = "reserving"
    RUNNING = "running"
    FAILED = "failed"


class GangEvent(str, Enum):
    #: The core runs the application (Running, or Accepted again after Resuming).
    RUN = "run"
    #: The core failed the application (a Hard timeout).
    FAIL = "fail"


_G = GangState
GANG_TRANSITIONS: Final[dict[GangEvent, dict[GangState, GangState]]] = {
    GangEvent.RUN: {_G.RESERVING: _G.RUNNING},
    GangEvent.FAIL: {_G.RESERVING: _G.FAILED, _G.RUNNING: _G.FAILED},
}


def gang_accepts(state: GangState, event: GangEvent) -> bool:
    """Whether ``state`` accepts ``event`` (the core says Running again: nothing to do)."""
    return state in GANG_TRANSITIONS[event]


def next_gang_state(app_id: str, state: GangState, event: GangEvent) -> GangState:
    """The gang's state after ``event``; raises :class:`InvalidTaskTransition` when refused."""
    target = GANG_TRANSITIONS[event].get(state)
    if target is None:
        raise InvalidTaskTransition(f"gang {app_id}", state, event)
    return target
