"""The shim's task state machine without a cluster: the one transition table
(pyscheduler_k8s.cache.task_state) walked edge by edge, illegal events refused, the state a pod is
born in, the gang table; the cache refusing (and logging) an illegal event; and the callback acting
on the core's codes and preemptor fields, never its prose."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import pytest

from pyscheduler.si import messages as si
from pyscheduler_k8s.cache.task_state import GANG_TRANSITIONS, TASK_TRANSITIONS, CoreAppState, GangEvent, GangState, \
    InvalidTaskTransition, TaskEvent, TaskState, gang_accepts, initial_task_state, next_gang_state, next_task_state, \
    task_accepts
from pyscheduler_k8s.shim import KubeShim

_T = TaskState

#: Every legal edge, written out independently of the table (a change to the table must change this).
LEGAL = {
    (_T.ASK, TaskEvent.ALLOCATE, _T.ALLOCATED),
    (_T.ASK, TaskEvent.BOUND_ELSEWHERE, _T.ALLOCATED),
    (_T.ALLOCATED, TaskEvent.BIND_FAILED, _T.ASK),
    (_T.RELEASED, TaskEvent.BIND_FAILED, _T.ASK),
    (_T.ALLOCATED, TaskEvent.ALLOCATION_RELEASED, _T.RELEASED),
    (_T.ASK, TaskEvent.PLACEHOLDER_ASK_DROPPED, _T.RELEASED),
    (_T.ASK, TaskEvent.MEMBER_ASK_DROPPED, _T.WAITING),
    (_T.WAITING, TaskEvent.GANG_RUNS, _T.ASK),
    (_T.ASK, TaskEvent.APPLICATION_REJECTED, _T.HELD),
    (_T.WAITING, TaskEvent.APPLICATION_REJECTED, _T.HELD),
    (_T.ALLOCATED, TaskEvent.APPLICATION_REJECTED, _T.HELD),
    (_T.RELEASED, TaskEvent.APPLICATION_REJECTED, _T.HELD),
    (_T.HELD, TaskEvent.APPLICATION_REJECTED, _T.HELD),
    # A hub's member lost: its placed pods ask again (pyscheduler_k8s.hub.members).
    (_T.ALLOCATED, TaskEvent.REQUEUE, _T.ASK),
    (_T.RELEASED, TaskEvent.REQUEUE, _T.ASK),
}


def test_the_table_is_exactly_the_legal_edges() -> None:
    table = {(state, event, target) for event, edges in TASK_TRANSITIONS.items() for state, target in edges.items()}
    assert table == LEGAL
    assert set(TASK_TRANSITIONS) == set(TaskEvent)  # every event has its row


@pytest.mark.parametrize(("state", "event", "target"), sorted(LEGAL, key=str))
def test_every_legal_transition(state: TaskState, event: TaskEvent, target: TaskState) -> None:
    assert task_accepts(state, event)
    assert next_task_state("uid-1", state, event) is target


@pytest.mark.parametrize(("state", "event"), [
    (state, event) for state in TaskState for event in TaskEvent
    if not any(s is state and e is event for s, e, _ in LEGAL)])
def test_every_illegal_transition_is_refused(state: TaskState, event: TaskEvent) -> None:
    assert not task_accepts(state, event)
    refused = f"pod uid-1: event {event.value} inappropriate in state {state.value}"
    with pytest.raises(InvalidTaskTransition, match=refused):
        next_task_state("uid-1", state, event)


def test_foreign_and_gated_pods_accept_no_event() -> None:
    """Another scheduler's pod only ends; a gated one (or one held for its gang's gated members)
    only ends or is handed back as a new pod."""
    for state in (_T.FOREIGN, _T.GATED, _T.GANG_GATED):
        assert not [event for event in TaskEvent if task_accepts(state, event)]


@pytest.mark.parametrize(("flags", "state"), [
    ({"ours": False, "bound": True}, _T.FOREIGN),
    ({"ours": False, "bound": True, "problem": True}, _T.FOREIGN),
    ({"ours": True, "bound": True, "problem": True}, _T.HELD),  # a bound pod of a refused application
    ({"ours": True, "gated": True, "problem": True}, _T.HELD),
    ({"ours": True, "gated": True, "gang_waits": True}, _T.GATED),
    ({"ours": True, "bound": True, "gang_waits": True}, _T.ALLOCATED),  # recovered, never bound again
    ({"ours": True, "gang_waits": True}, _T.WAITING),
    ({"ours": True}, _T.ASK),
])
def test_the_state_a_pod_is_born_in(flags: dict[str, bool], state: TaskState) -> None:
    args = {"ours": False, "bound": False, "gated": False, "problem": False, "gang_waits": False, **flags}
    assert initial_task_state(**args) is state


def test_the_gang_table() -> None:
    assert next_gang_state("app", GangState.RESERVING, GangEvent.RUN) is GangState.RUNNING
    assert next_gang_state("app", GangState.RESERVING, GangEvent.FAIL) is GangState.FAILED
    assert next_gang_state("app", GangState.RUNNING, GangEvent.FAIL) is GangState.FAILED
    refused = [(s, e) for s in GangState for e in GangEvent if not gang_accepts(s, e)]
    assert refused == [(GangState.RUNNING, GangEvent.RUN), (GangState.FAILED, GangEvent.RUN),
                       (GangState.FAILED, GangEvent.FAIL)]
    assert {(s, e) for e, edges in GANG_TRANSITIONS.items() for s in edges} | set(refused) == \
        {(s, e) for s in GangState for e in GangEvent}
    with pytest.raises(InvalidTaskTransition, match="gang app: event run inappropriate in state failed"):
        next_gang_state("app", GangState.FAILED, GangEvent.RUN)


def test_the_core_s_application_states_are_read_once() -> None:
    assert CoreAppState.parse("Running") is CoreAppState.RUNNING
    assert CoreAppState.parse("running") is None and CoreAppState.parse("Sideways") is None


# -- the shim's parts without a cluster ---------------------------------------------------------------


class _Proxy:
    def __init__(self) -> None:
        self.requests: list[Any] = []

    def _record(self, request: object) -> None:
        self.requests.append(request)

    update_node = update_application = update_allocation = update_configuration = _record


class _Api:
    """What the shim writes, kept; nothing listed or watched."""

    def __init__(self) -> None:
        self.statuses: list[tuple[str, dict[str, Any]]] = []
        self.events: list[dict[str, Any]] = []
        self.deleted: list[str] = []
        self.created: list[str] = []

    def close_watches(self) -> None:
        pass

    def patch_pod_status(self, namespace: str, name: str, body: dict[str, Any]) -> None:
        self.statuses.append((name, body))

    def create_event(self, namespace: str, body: dict[str, Any]) -> None:
        self.events.append(body)

    def delete_pod(self, namespace: str, name: str, *, uid: str = "") -> None:
        self.deleted.append(name)

    def create_pod(self, namespace: str, body: dict[str, Any]) -> None:
        self.created.append(body["metadata"]["name"])


def _pod(name: str, *, node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "pyscheduler", "containers": [
        {"name": "c", "image": "pause", "resources": {"requests": {"cpu": "100m"}}}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": {"applicationId": "app"}},
            "spec": spec, "status": {"phase": "Running" if node else "Pending"}}


def _wait(what: str, check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 5
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


@pytest.fixture
def shim() -> Any:
    shim = KubeShim(_Proxy(), _Api(), "")  # type: ignore[arg-type]
    shim.cluster.on_node("ADDED", {"metadata": {"name": "n1"}, "spec": {},
                                   "status": {"allocatable": {"cpu": "4", "pods": "10"}}})
    shim.recorder.start()
    shim.writes.start()
    yield shim
    shim.stop()


def test_an_illegal_event_is_logged_and_leaves_the_record(shim: KubeShim, caplog: pytest.LogCaptureFixture) -> None:
    shim.pods.handle("ADDED", _pod("gated") | {"spec": {**_pod("gated")["spec"], "schedulingGates": [{"name": "g"}]}})
    assert shim.pod_state("uid-gated") == "gated"
    caplog.set_level(logging.WARNING, logger="pyscheduler_k8s.cache.tasks")
    shim.cache.tasks.binding_failed("uid-gated", retry=False)
    assert shim.pod_state("uid-gated") == "gated"
    assert any("event bindFailed inappropriate in state gated" in r.getMessage() for r in caplog.records)


def test_an_allocation_moves_an_ask_and_nothing_else(shim: KubeShim) -> None:
    shim.pods.handle("ADDED", _pod("a"))
    shim.pods.handle("ADDED", _pod("bound", node="n1"))
    assert (shim.pod_state("uid-a"), shim.pod_state("uid-bound")) == ("ask", "allocated")
    response = si.AllocationResponse(new=(si.Allocation(allocation_key="uid-a", node_id="n1"),
                                          si.Allocation(allocation_key="uid-bound", node_id="n1")))
    shim.binder.stop()  # nothing bound: the queue is dropped
    shim.callback.update_allocation(response)
    assert (shim.pod_state("uid-a"), shim.pod_state("uid-bound")) == ("allocated", "allocated")


@pytest.mark.parametrize(("code", "reason", "message"), [
    (si.SchedulingReason.QUEUE_QUOTA, "", "the ask does not fit in its queue"),
    (si.SchedulingReason.PREDICATES, "node n1: taint", "node n1: taint"),
])
def test_a_skipped_or_failed_ask_is_unschedulable_by_its_code(shim: KubeShim, code: si.SchedulingReason,
                                                              reason: str, message: str) -> None:
    shim.pods.handle("ADDED", _pod("a"))
    state = si.ContainerSchedulingState.SKIPPED if code is si.SchedulingReason.QUEUE_QUOTA \
        else si.ContainerSchedulingState.FAILED
    shim.callback.update_container_scheduling_state(si.UpdateContainerSchedulingStateRequest(
        application_id="app", allocation_key="uid-a", state=state, reason=reason, code=code))
    api: _Api = shim.api  # type: ignore[assignment]
    _wait("the condition written", lambda: bool(api.statuses))
    condition = api.statuses[0][1]["status"]["conditions"][0]
    assert (condition["reason"], condition["message"]) == ("Unschedulable", message)
    _wait("the FailedScheduling event", lambda: any(e["reason"] == "FailedScheduling" for e in api.events))
    # The same message again writes nothing more; a scheduled state writes nothing.
    shim.callback.update_container_scheduling_state(si.UpdateContainerSchedulingStateRequest(
        allocation_key="uid-a", state=si.ContainerSchedulingState.SCHEDULED))
    shim.callback.update_container_scheduling_state(si.UpdateContainerSchedulingStateRequest(
        allocation_key="uid-a", state=state, reason=reason, code=code))
    time.sleep(0.1)
    assert len(api.statuses) == 1


def test_a_victim_s_event_names_its_preemptor_from_the_release_fields(shim: KubeShim) -> None:
    shim.pods.handle("ADDED", _pod("victim", node="n1"))
    shim.pods.handle("ADDED", _pod("preemptor"))
    release = si.AllocationRelease(application_id="app", allocation_key="uid-victim",
                                   termination_type=si.TerminationType.PREEMPTED_BY_SCHEDULER,
                                   message="made room for a higher priority ask",
                                   preemptor_application_id="app", preemptor_allocation_key="uid-preemptor")
    shim.callback.update_allocation(si.AllocationResponse(released=(release,)))
    api: _Api = shim.api  # type: ignore[assignment]
    _wait("the victim deleted", lambda: api.deleted == ["victim"])
    _wait("the Preempted event", lambda: any(e["reason"] == "Preempted" for e in api.events))
    said = next(e["message"] for e in api.events if e["reason"] == "Preempted")
    assert "ns/preemptor (uid uid-preemptor)" in said, said
    assert shim.pod_state("uid-victim") == "allocated"  # until its end confirms the release


def test_a_gang_runs_on_the_core_s_running_state(shim: KubeShim) -> None:
    groups = '[{"name": "g", "minMember": 1, "minResource": {"cpu": "100m"}}]'
    member = _pod("member")
    member["metadata"]["annotations"] = {"yunikorn.apache.org/task-groups": groups,
                                         "yunikorn.apache.org/task-group-name": "g"}
    shim.pods.handle("ADDED", member)
    assert shim.pod_state("uid-member") == "waiting"
    api: _Api = shim.api  # type: ignore[assignment]
    _wait("its placeholder created", lambda: len(api.created) == 1)
    updated = si.UpdatedApplication(application_id="app", state=CoreAppState.ACCEPTED.value)
    shim.callback.update_application(si.ApplicationResponse(updated=(updated,)))
    assert shim.pod_state("uid-member") == "waiting"  # Accepted without Resuming: still reserving
    updated = si.UpdatedApplication(application_id="app", state=CoreAppState.RUNNING.value)
    shim.callback.update_application(si.ApplicationResponse(updated=(updated,)))
    assert shim.pod_state("uid-member") == "ask"
