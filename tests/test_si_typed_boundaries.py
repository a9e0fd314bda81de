"""The typed boundary between the core and an RM: the scheduling-state codes and the
preemptor fields of the SI messages (defaults, coercion, validate), and the callbacks the core
binds once at registration (pyscheduler.si.callback.bind_callbacks)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from rm_helpers import World, res

from pyscheduler.scheduler.cycle import SchedulingCycle
from pyscheduler.si import messages as si
from pyscheduler.si.callback import BoundCallbacks, bind_callbacks
from pyscheduler.si.events import EventRecord
from pyscheduler.testing import RecordingRM


def test_the_scheduling_reason_codes_are_stable() -> None:
    # An RM in another process or language keys on these numbers: they never change.
    assert {code.name: int(code) for code in si.SchedulingReason} == {
        "UNKNOWN": 0, "QUEUE_QUOTA": 1, "USER_QUOTA": 2, "NO_NODE_FITS": 3, "PREDICATES": 4, "REQUIRED_NODE": 5}


def test_a_scheduling_state_request_defaults_coerces_and_validates() -> None:
    empty = si.UpdateContainerSchedulingStateRequest()
    assert (empty.state, empty.code, empty.reason) == (
        si.ContainerSchedulingState.UNKNOWN_SCHEDULING_STATE, si.SchedulingReason.UNKNOWN, "")
    assert empty.validate() == "allocation key is empty"
    assert si.UpdateContainerSchedulingStateRequest(allocation_key="k").validate() == (
        "scheduling state is not set (UNKNOWN_SCHEDULING_STATE)")
    request = si.UpdateContainerSchedulingStateRequest("app", "k", 1, "no room", 3)  # type: ignore[arg-type]
    assert request.state is si.ContainerSchedulingState.SKIPPED
    assert request.code is si.SchedulingReason.NO_NODE_FITS
    assert request.validate() is None
    with pytest.raises(ValueError):
        si.UpdateContainerSchedulingStateRequest(allocation_key="k", code=99)  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        request.code = si.SchedulingReason.UNKNOWN  # type: ignore[misc]


def test_a_release_names_its_preemptor_only_when_preempted() -> None:
    plain = si.AllocationRelease(application_id="app", allocation_key="k")
    assert (plain.preemptor_application_id, plain.preemptor_allocation_key) == ("", "")
    preempted = si.AllocationRelease(
        application_id="app", allocation_key="k", termination_type=si.TerminationType.PREEMPTED_BY_SCHEDULER,
        preemptor_application_id="other", preemptor_allocation_key="ask")
    assert preempted.validate() is None
    wrong = si.AllocationRelease(application_id="app", allocation_key="k",
                                 termination_type=si.TerminationType.STOPPED_BY_RM, preemptor_allocation_key="ask")
    assert wrong.validate() == "a preemptor is named on a release that is not PREEMPTED_BY_SCHEDULER"


class _Minimal:
    """The required callbacks only (no plugin)."""

    def __init__(self) -> None:
        self.states: list[si.UpdateContainerSchedulingStateRequest] = []

    def update_allocation(self, response: si.AllocationResponse) -> None: ...
    def update_application(self, response: si.ApplicationResponse) -> None: ...
    def update_node(self, response: si.NodeResponse) -> None: ...
    def send_event(self, events: Sequence[EventRecord]) -> None: ...

    def update_container_scheduling_state(self, request: si.UpdateContainerSchedulingStateRequest) -> None:
        self.states.append(request)


def test_bind_callbacks_resolves_every_method_once() -> None:
    rm = _Minimal()
    calls = bind_callbacks(rm)
    assert isinstance(calls, BoundCallbacks)
    assert calls.update_container_scheduling_state == rm.update_container_scheduling_state
    assert (calls.predicates, calls.preemption_predicates, calls.node_scores) == (None, None, None)
    recording = RecordingRM()
    hooks = bind_callbacks(recording)
    assert hooks.predicates == recording.predicates and hooks.node_scores is None


SMALL_QUEUE = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
            resources: {max: {memory: 10}}
"""


def test_the_core_delivers_to_the_methods_bound_at_registration() -> None:
    w = World(register=False)
    try:
        rm = _Minimal()
        w.register(SMALL_QUEUE, rm=rm)  # type: ignore[arg-type]
        # Replaced on the object after registration: the core keeps the bound original.
        replaced: list[object] = []
        rm.update_container_scheduling_state = replaced.append  # type: ignore[method-assign,assignment]
        w.add_node("n0", memory=100)
        w.add_app("app-1", "root.a")
        w.ask("big", "app-1", res(memory=50))
        SchedulingCycle(w.context).run()
        assert [s.code for s in rm.states] == [si.SchedulingReason.QUEUE_QUOTA] and replaced == []
    finally:
        w.close()


def test_an_rm_without_a_required_method_is_refused_at_registration() -> None:
    class Incomplete:
        def update_allocation(self, response: si.AllocationResponse) -> None: ...

    w = World(register=False)
    try:
        with pytest.raises(AttributeError):
            w.register(SMALL_QUEUE, rm=Incomplete())  # type: ignore[arg-type]
        # Refused whole: nothing registered, no partition made.
        assert w.context.registered_rms() == [] and w.context.partitions == {}
    finally:
        w.close()


def test_the_proxy_is_the_sis_scheduler_api() -> None:
    """An RM holds the core as ``si.api.SchedulerAPI``; the proxy is one (structurally)."""
    from pyscheduler.rmproxy.proxy import RMProxy
    from pyscheduler.si.api import SchedulerAPI

    proxy = RMProxy()
    try:
        assert isinstance(proxy, SchedulerAPI)
        assert not isinstance(object(), SchedulerAPI)
    finally:
        proxy.stop()
