"""The application state machine (YuniKorn's ``application_state.go``).

States and transitions are YuniKorn's; an event that leaves the state unchanged ("no
transition" in looplab/fsm) is accepted silently. The effects of entering a state (timers,
moving terminated apps, notifying the RM) belong to :class:`~pyscheduler.objects.application.Application`.
"""

from __future__ import annotations

from enum import Enum

from pyscheduler.common.errors import SchedulerError
from pyscheduler.si.events import EventChangeDetail
from pyscheduler.si.messages import ApplicationState

__all__ = ["AppEvent", "AppState", "InvalidTransition", "STATE_EVENT_DETAIL", "TERMINAL_STATES", "next_state"]


#: Application states: the SI's enum (its values are what YuniKorn reports, REST and the RM),
#: one definition for the core and every RM.
AppState = ApplicationState


class AppEvent(str, Enum):
    REJECT = "rejectApplication"
    RUN = "runApplication"
    COMPLETE = "completeApplication"
    FAIL = "failApplication"
    RESUME = "resumeApplication"
    EXPIRE = "expireApplication"


_S = AppState
_TRANSITIONS: dict[AppEvent, dict[AppState, AppState]] = {
    AppEvent.REJECT: {_S.NEW: _S.REJECTED},
    AppEvent.RUN: {
        _S.NEW: _S.ACCEPTED,
        _S.RESUMING: _S.ACCEPTED,
        _S.ACCEPTED: _S.RUNNING,
        _S.RUNNING: _S.RUNNING,
        _S.COMPLETING: _S.RUNNING,
    },
    AppEvent.COMPLETE: {_S.ACCEPTED: _S.COMPLETING, _S.RUNNING: _S.COMPLETING, _S.COMPLETING: _S.COMPLETED},
    AppEvent.FAIL: {_S.NEW: _S.FAILING, _S.ACCEPTED: _S.FAILING, _S.RUNNING: _S.FAILING, _S.FAILING: _S.FAILED},
    AppEvent.RESUME: {_S.NEW: _S.RESUMING, _S.ACCEPTED: _S.RESUMING},
    AppEvent.EXPIRE: {_S.COMPLETED: _S.EXPIRED, _S.FAILED: _S.EXPIRED, _S.REJECTED: _S.EXPIRED},
}

#: States an application never leaves except to Expired.
TERMINAL_STATES = frozenset({_S.COMPLETED, _S.FAILED, _S.REJECTED, _S.EXPIRED})

#: The change detail of the APP SET event that reports entering each state.
STATE_EVENT_DETAIL: dict[AppState, EventChangeDetail] = {
    _S.NEW: EventChangeDetail.APP_NEW,
    _S.ACCEPTED: EventChangeDetail.APP_ACCEPTED,
    _S.RUNNING: EventChangeDetail.APP_RUNNING,
    _S.REJECTED: EventChangeDetail.APP_REJECT,
    _S.COMPLETING: EventChangeDetail.APP_COMPLETING,
    _S.COMPLETED: EventChangeDetail.APP_COMPLETED,
    _S.FAILING: EventChangeDetail.APP_FAILING,
    _S.FAILED: EventChangeDetail.APP_FAILED,
    _S.EXPIRED: EventChangeDetail.APP_EXPIRED,
    _S.RESUMING: EventChangeDetail.APP_RESUMING,
}


class InvalidTransition(SchedulerError):
    """An event that the application's current state does not accept."""

    def __init__(self, app_id: str, state: AppState, event: AppEvent) -> None:
        super().__init__(f"application {app_id}: event {event.value} inappropriate in current state {state.value}")
        self.state = state
        self.event = event


def next_state(app_id: str, state: AppState, event: AppEvent) -> AppState:
    """The state after ``event``; raises InvalidTransition when ``state`` does not accept it."""
    target = _TRANSITIONS[event].get(state)
    if target is None:
        raise InvalidTransition(app_id, state, event)
    return target
