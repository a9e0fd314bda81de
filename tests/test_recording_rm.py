"""RecordingRM: records every callback (from many threads), waits for outcomes, times out clearly.

Every wait here is bounded (at most a second, usually 50 ms) so a broken helper fails fast.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pyscheduler.si.events import EventChangeDetail, EventChangeType, EventRecord, EventRecordType
from pyscheduler.si.callback import PredicatesPlugin, ResourceManagerCallback, check_predicates, predicates_of
from pyscheduler.testing import RecordingRM, WaitTimeout
from pyscheduler.si.messages import (
    AcceptedApplication,
    AcceptedNode,
    Allocation,
    AllocationRelease,
    AllocationResponse,
    ApplicationResponse,
    ContainerSchedulingState,
    NodeResponse,
    PredicatesArgs,
    RejectedAllocation,
    RejectedApplication,
    RejectedNode,
    TerminationType,
    UpdateContainerSchedulingStateRequest,
    UpdatedApplication,
)

# Long enough for a waiting thread to be parked before the callback arrives, short enough to keep
# each test far under its budget.
DELAY = 0.05
SHORT = 0.05
BOUND = 1.0


def _alloc(key: str, app: str = "app-1", node: str = "node-1") -> Allocation:
    return Allocation(allocation_key=key, application_id=app, node_id=node, resource_per_alloc={"memory": 1})


def _new(*keys: str, app: str = "app-1") -> AllocationResponse:
    return AllocationResponse(new=tuple(_alloc(k, app) for k in keys))


def _release(key: str, app: str = "app-1", kind: TerminationType = TerminationType.STOPPED_BY_RM) -> AllocationResponse:
    release = AllocationRelease(application_id=app, allocation_key=key, termination_type=kind)
    return AllocationResponse(released=(release,))


def _event(object_id: str = "ask-1") -> EventRecord:
    return EventRecord(EventRecordType.REQUEST, EventChangeType.NONE, EventChangeDetail.DETAILS_NONE, object_id)


@pytest.fixture
def later() -> Iterator[Callable[..., None]]:
    """``later(fn, *args)`` runs ``fn(*args)`` on another thread after DELAY; joined at teardown."""
    threads: list[threading.Thread] = []

    def schedule(fn: Callable[..., Any], *args: Any) -> None:
        def run() -> None:
            time.sleep(DELAY)
            fn(*args)

        thread = threading.Thread(target=run, daemon=True)
        threads.append(thread)
        thread.start()

    yield schedule
    for thread in threads:
        thread.join(BOUND)


# -- protocol and recording -------------------------------------------------------------------------


def test_implements_the_callback_and_the_predicates_plugin() -> None:
    rm = RecordingRM()
    assert isinstance(rm, ResourceManagerCallback)
    assert isinstance(rm, PredicatesPlugin)
    assert predicates_of(rm) is not None
    assert rm.timeout == 5.0  # the documented default


def test_records_every_callback_in_order() -> None:
    rm = RecordingRM()
    apps = ApplicationResponse(
        accepted=(AcceptedApplication("app-1"),),
        rejected=(RejectedApplication("app-2", "no queue"),),
        updated=(UpdatedApplication("app-1", "Accepted", 1), UpdatedApplication("app-1", "Running", 2)),
    )
    nodes = NodeResponse(accepted=(AcceptedNode("node-1"),), rejected=(RejectedNode("node-2", "duplicate"),))
    allocs = AllocationResponse(
        new=(_alloc("ask-1"),),
        rejected_allocations=(RejectedAllocation("ask-2", "app-1", "too big"),),
    )
    state = UpdateContainerSchedulingStateRequest("app-1", "ask-3", ContainerSchedulingState.SKIPPED, "no headroom")
    args = PredicatesArgs("ask-1", "node-1", True)

    rm.update_application(apps)
    rm.update_node(nodes)
    rm.update_allocation(allocs)
    assert rm.predicates(args) is None
    rm.send_event([_event(), _event("ask-2")])
    rm.update_container_scheduling_state(state)

    assert [name for name, _ in rm.calls] == [
        "update_application",
        "update_node",
        "update_allocation",
        "predicates",
        "send_event",
        "update_container_scheduling_state",
    ]
    assert rm.calls[0] == ("update_application", apps)
    assert rm.calls_of("update_node") == [nodes]
    assert rm.accepted_apps == ["app-1"]
    assert rm.rejected_apps == {"app-2": "no queue"}
    assert rm.app_states("app-1") == ["Accepted", "Running"]
    assert rm.app_state("app-1") == "Running"
    assert rm.app_state("app-2") is None
    assert rm.app_updates == list(apps.updated)
    assert rm.accepted_nodes == ["node-1"]
    assert rm.rejected_nodes == {"node-2": "duplicate"}
    assert rm.allocations == {"ask-1": allocs.new[0]}
    assert rm.rejected_allocations == {"ask-2": "too big"}
    assert [e.object_id for e in rm.events] == ["ask-1", "ask-2"]
    assert rm.calls_of("send_event") == [(_event(), _event("ask-2"))]
    assert rm.scheduling_states == [state]
    assert rm.scheduling_states_of("ask-3") == [ContainerSchedulingState.SKIPPED]
    assert rm.predicate_calls == [args]


def test_allocations_are_new_minus_released() -> None:
    rm = RecordingRM()
    rm.update_allocation(_new("a", "b", "c"))
    rm.update_allocation(_new("x", app="app-2"))
    rm.update_allocation(_release("b", kind=TerminationType.PREEMPTED_BY_SCHEDULER))
    assert list(rm.allocations) == ["a", "c", "x"]
    # An empty key releases every allocation of the application (SI semantics).
    rm.update_allocation(_release("", app="app-1"))
    assert list(rm.allocations) == ["x"]
    # Re-sending a key replaces it; a response that allocates and releases a key leaves it released.
    both = AllocationResponse(new=(_alloc("y"),), released=(AllocationRelease("", "app-1", allocation_key="y"),))
    rm.update_allocation(both)
    assert list(rm.allocations) == ["x"]
    assert rm.allocation_count == 5
    assert [r.allocation_key for r in rm.released] == ["b", "", "y"]
    assert rm.released[0].termination_type is TerminationType.PREEMPTED_BY_SCHEDULER


def test_accessors_return_snapshots() -> None:
    rm = RecordingRM()
    rm.update_allocation(_new("a"))
    snapshot = rm.allocations
    calls = rm.calls
    rm.update_allocation(_new("b"))
    snapshot.clear()
    assert list(rm.allocations) == ["a", "b"]
    assert len(calls) == 1 and len(rm.calls) == 2


def test_records_callbacks_from_many_threads() -> None:
    rm = RecordingRM()
    threads_n, per_thread = 8, 200
    start = threading.Barrier(threads_n)

    def worker(t: int) -> None:
        start.wait()
        for i in range(per_thread):
            if i % 4 == 3:
                rm.send_event([_event(f"t{t}-{i}")])
            else:
                rm.update_allocation(_new(f"t{t}-{i}"))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(threads_n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(BOUND * 10)
    assert not any(thread.is_alive() for thread in threads)

    calls = rm.calls
    assert len(calls) == threads_n * per_thread
    allocation_keys = [k for k in rm.allocations]
    assert len(allocation_keys) == threads_n * per_thread * 3 // 4
    assert len(rm.events) == threads_n * per_thread // 4
    # Each thread's callbacks are recorded in the order that thread made them.
    for t in range(threads_n):
        mine = []
        for name, message in calls:
            if name == "update_allocation":
                key = message.new[0].allocation_key  # type: ignore[attr-defined]
            else:
                key = message[0].object_id  # type: ignore[index]
            if key.startswith(f"t{t}-"):
                mine.append(int(key.split("-")[1]))
        assert mine == list(range(per_thread))


# -- predicates -------------------------------------------------------------------------------------


def test_predicates_default_lets_every_node_pass() -> None:
    rm = RecordingRM()
    args = PredicatesArgs("ask-1", "node-1", False)
    assert rm.predicates(args) is None
    assert check_predicates(predicates_of(rm), args) is None


def test_predicates_are_configurable() -> None:
    seen: list[tuple[str, str, bool]] = []

    def only_node_2(key: str, node: str, allocate: bool) -> str | None:
        seen.append((key, node, allocate))
        return None if node == "node-2" else f"{key} does not fit {node}"

    rm = RecordingRM(predicates=only_node_2)
    assert rm.predicates(PredicatesArgs("ask-1", "node-1", True)) == "ask-1 does not fit node-1"
    assert rm.predicates(PredicatesArgs("ask-1", "node-2", False)) is None
    assert seen == [("ask-1", "node-1", True), ("ask-1", "node-2", False)]
    rm.set_predicates(lambda key, node, allocate: "all full")
    assert rm.predicates(PredicatesArgs("ask-9", "node-2", True)) == "all full"
    rm.set_predicates(None)
    assert rm.predicates(PredicatesArgs("ask-9", "node-2", True)) is None
    assert [a.node_id for a in rm.predicate_calls] == ["node-1", "node-2", "node-2", "node-2"]


def test_check_predicates_turns_failures_into_refusals() -> None:
    def broken(args: PredicatesArgs) -> str | None:
        raise RuntimeError("shim down")

    args = PredicatesArgs("ask-1", "node-1", True)
    assert check_predicates(None, args) is None
    assert check_predicates(broken, args) == "predicates failed: RuntimeError: shim down"
    assert check_predicates(lambda a: "", args) is None
    assert check_predicates(lambda a: "taint", args) == "taint"
    assert predicates_of(object()) is None


def test_clear_forgets_everything_but_keeps_the_predicate() -> None:
    rm = RecordingRM(predicates=lambda key, node, allocate: "no")
    rm.update_application(ApplicationResponse(accepted=(AcceptedApplication("app-1"),)))
    rm.update_allocation(_new("a"))
    rm.update_allocation(_release("a"))
    rm.send_event([_event()])
    rm.clear()
    assert rm.calls == []
    assert rm.accepted_apps == [] and rm.allocations == {} and rm.released == [] and rm.events == []
    assert rm.allocation_count == 0
    assert rm.predicates(PredicatesArgs("a", "n", True)) == "no"


# -- waiting: success when the callback arrives later from another thread ---------------------------

APP_ACCEPTED = ApplicationResponse(accepted=(AcceptedApplication("app-1"),))
APP_REJECTED = ApplicationResponse(rejected=(RejectedApplication("app-1", "queue is full"),))
APP_RUNNING = ApplicationResponse(
    updated=(UpdatedApplication("app-1", "Accepted"), UpdatedApplication("app-1", "Running"))
)
NODE_ACCEPTED = NodeResponse(accepted=(AcceptedNode("node-1"),))
NODE_REJECTED = NodeResponse(rejected=(RejectedNode("node-1", "node already exists"),))
ALLOC_REJECTED = AllocationResponse(rejected_allocations=(RejectedAllocation("ask-1", "app-1", "unknown app"),))
SCHEDULED = UpdateContainerSchedulingStateRequest("app-1", "ask-1", ContainerSchedulingState.SCHEDULED)

# (name, callback to trigger, wait to run, expected result)
WAITS: list[tuple[str, Callable[[RecordingRM], None], Callable[[RecordingRM], Any], Any]] = [
    ("accepted app", lambda rm: rm.update_application(APP_ACCEPTED), lambda rm: rm.wait_for_accepted_app("app-1"), AcceptedApplication("app-1")),
    ("rejected app", lambda rm: rm.update_application(APP_REJECTED), lambda rm: rm.wait_for_rejected_app("app-1"), "queue is full"),
    ("app state", lambda rm: rm.update_application(APP_RUNNING), lambda rm: rm.wait_for_app_state("app-1", "Running"), UpdatedApplication("app-1", "Running")),
    ("accepted node", lambda rm: rm.update_node(NODE_ACCEPTED), lambda rm: rm.wait_for_accepted_node("node-1"), AcceptedNode("node-1")),
    ("rejected node", lambda rm: rm.update_node(NODE_REJECTED), lambda rm: rm.wait_for_rejected_node("node-1"), "node already exists"),
    ("allocation", lambda rm: rm.update_allocation(_new("ask-1")), lambda rm: rm.wait_for_allocation("ask-1"), _alloc("ask-1")),
    ("allocations", lambda rm: rm.update_allocation(_new("a", "b")), lambda rm: rm.wait_for_allocations(2), {"a": _alloc("a"), "b": _alloc("b")}),
    ("release", lambda rm: rm.update_allocation(_release("ask-1")), lambda rm: rm.wait_for_release("ask-1"), AllocationRelease("", "app-1", TerminationType.STOPPED_BY_RM, "", "ask-1")),
    ("rejected allocation", lambda rm: rm.update_allocation(ALLOC_REJECTED), lambda rm: rm.wait_for_rejected_allocation("ask-1"), "unknown app"),
    ("scheduling state", lambda rm: rm.update_container_scheduling_state(SCHEDULED), lambda rm: rm.wait_for_scheduling_state("ask-1", ContainerSchedulingState.SCHEDULED), SCHEDULED),
    ("events", lambda rm: rm.send_event([_event(), _event()]), lambda rm: rm.wait_for_events(2), [_event(), _event()]),
    ("custom", lambda rm: rm.update_allocation(_new("z")), lambda rm: rm.wait_for(lambda r: r.allocations.get("z"), "z"), _alloc("z")),
]  # fmt: skip


@pytest.mark.parametrize(("trigger", "wait", "expected"), [w[1:] for w in WAITS], ids=[w[0] for w in WAITS])
def test_wait_succeeds_when_the_callback_arrives_later(
    later: Callable[..., None],
    trigger: Callable[[RecordingRM], None],
    wait: Callable[[RecordingRM], Any],
    expected: Any,
) -> None:
    rm = RecordingRM(timeout=BOUND)
    started = time.monotonic()
    later(trigger, rm)
    assert wait(rm) == expected
    elapsed = time.monotonic() - started
    # It really waited for the other thread, and woke up on the notification rather than at
    # the timeout.
    assert DELAY * 0.9 <= elapsed < BOUND / 2


@pytest.mark.parametrize(("trigger", "wait", "expected"), [w[1:] for w in WAITS], ids=[w[0] for w in WAITS])
def test_wait_returns_at_once_when_already_recorded(
    trigger: Callable[[RecordingRM], None], wait: Callable[[RecordingRM], Any], expected: Any
) -> None:
    # A zero timeout probes exactly once: success proves the outcome was found without waiting.
    rm = RecordingRM(timeout=0)
    trigger(rm)
    assert wait(rm) == expected


def test_wait_ignores_unrelated_callbacks(later: Callable[..., None]) -> None:
    rm = RecordingRM(timeout=BOUND)
    later(rm.update_application, ApplicationResponse(accepted=(AcceptedApplication("other"),)))
    later(rm.update_application, APP_ACCEPTED)
    assert rm.wait_for_accepted_app("app-1") == AcceptedApplication("app-1")


def test_wait_for_allocations_counts_live_allocations(later: Callable[..., None]) -> None:
    rm = RecordingRM(timeout=BOUND)
    rm.update_allocation(_new("a", "b"))
    rm.update_allocation(_release("a"))
    later(rm.update_allocation, _new("c"))
    assert list(rm.wait_for_allocations(2)) == ["b", "c"]


# -- waiting: descriptive timeouts ------------------------------------------------------------------


def _timeout_message(wait: Callable[[], Any]) -> str:
    started = time.monotonic()
    with pytest.raises(WaitTimeout) as info:
        wait()
    elapsed = time.monotonic() - started
    assert SHORT * 0.9 <= elapsed < BOUND
    return str(info.value)


def test_wait_timeout_is_a_timeout_and_an_assertion() -> None:
    assert issubclass(WaitTimeout, TimeoutError)
    assert issubclass(WaitTimeout, AssertionError)


def test_app_waits_time_out_with_what_was_seen() -> None:
    rm = RecordingRM(timeout=SHORT)
    rm.update_application(APP_REJECTED)
    app_2 = ApplicationResponse(accepted=(AcceptedApplication("app-2"),), updated=(UpdatedApplication("app-2", "New"),))
    rm.update_application(app_2)

    msg = _timeout_message(lambda: rm.wait_for_accepted_app("app-1"))
    assert msg.startswith("timed out after 0.05 s waiting for application 'app-1' to be accepted; seen: ")
    assert "'app-1' was REJECTED: 'queue is full'" in msg
    assert "accepted apps ['app-2']" in msg

    msg = _timeout_message(lambda: rm.wait_for_rejected_app("app-2"))
    assert "application 'app-2' to be rejected" in msg and "'app-2' was accepted" in msg

    msg = _timeout_message(lambda: rm.wait_for_app_state("app-2", "Running"))
    assert "application 'app-2' to reach state 'Running'" in msg and "states of 'app-2': ['New']" in msg


def test_node_waits_time_out_with_what_was_seen() -> None:
    rm = RecordingRM(timeout=SHORT)
    rm.update_node(
        NodeResponse(accepted=(AcceptedNode("node-2"),), rejected=(RejectedNode("node-1", "bad partition"),))
    )
    msg = _timeout_message(lambda: rm.wait_for_accepted_node("node-1"))
    assert "node 'node-1' to be accepted" in msg
    assert "rejected nodes {'node-1': 'bad partition'}" in msg and "accepted nodes ['node-2']" in msg
    msg = _timeout_message(lambda: rm.wait_for_rejected_node("node-3"))
    assert "node 'node-3' to be rejected" in msg


def test_allocation_waits_time_out_with_what_was_seen() -> None:
    rm = RecordingRM(timeout=SHORT)
    rm.update_allocation(_new("ask-1", "ask-2"))
    rm.update_allocation(_release("ask-1", kind=TerminationType.PREEMPTED_BY_SCHEDULER))
    rm.update_allocation(AllocationResponse(rejected_allocations=(RejectedAllocation("ask-3", "app-1", "no such app"),)))
    failed = UpdateContainerSchedulingStateRequest("app-1", "ask-4", ContainerSchedulingState.FAILED)
    rm.update_container_scheduling_state(failed)

    msg = _timeout_message(lambda: rm.wait_for_allocation("ask-1"))
    assert "waiting for allocation 'ask-1'" in msg and "'ask-1' was released (PREEMPTED_BY_SCHEDULER)" in msg
    assert "live allocations ['ask-2']" in msg

    msg = _timeout_message(lambda: rm.wait_for_allocation("ask-3"))
    assert "'ask-3' was REJECTED: 'no such app'" in msg

    msg = _timeout_message(lambda: rm.wait_for_allocation("ask-4"))
    assert "scheduling states of 'ask-4': ['FAILED']" in msg

    msg = _timeout_message(lambda: rm.wait_for_allocations(3))
    assert "waiting for 3 live allocations" in msg and "1 live of 2 received" in msg

    msg = _timeout_message(lambda: rm.wait_for_release("ask-2"))
    assert "release of allocation 'ask-2'" in msg and "released ['ask-1']" in msg

    msg = _timeout_message(lambda: rm.wait_for_rejected_allocation("ask-2"))
    assert "rejection of allocation 'ask-2'" in msg and "rejected allocations ['ask-3']" in msg

    msg = _timeout_message(lambda: rm.wait_for_scheduling_state("ask-4", ContainerSchedulingState.SCHEDULED))
    assert "ask 'ask-4' to be SCHEDULED" in msg and "states of 'ask-4': ['FAILED']" in msg


def test_other_waits_time_out_with_a_summary_of_recent_calls() -> None:
    rm = RecordingRM(timeout=SHORT)
    rm.send_event([_event()])
    rm.predicates(PredicatesArgs("ask-1", "node-1", True))
    msg = _timeout_message(lambda: rm.wait_for_events(2))
    assert "waiting for 2 events" in msg and "events 1" in msg
    assert "last calls [send_event(1 events), predicates('ask-1' on 'node-1')]" in msg
    msg = _timeout_message(lambda: rm.wait_for(lambda r: len(r.events) > 5, "more than 5 events"))
    assert "waiting for more than 5 events" in msg
    assert "callbacks {'send_event': 1, 'predicates': 1}" in msg


def test_timeout_argument_overrides_the_default() -> None:
    rm = RecordingRM(timeout=BOUND * 10)
    started = time.monotonic()
    with pytest.raises(WaitTimeout, match="timed out after 0.05 s"):
        rm.wait_for_accepted_node("node-1", timeout=SHORT)
    assert time.monotonic() - started < BOUND


def test_a_waiter_is_woken_by_clear_and_keeps_waiting(later: Callable[..., None]) -> None:
    rm = RecordingRM(timeout=BOUND)

    def clear_then_accept() -> None:
        # One thread, in this order: two threads could run them the other way round, and the
        # clear would then wipe the node the waiter is waiting for.
        rm.clear()
        rm.update_node(NODE_ACCEPTED)

    later(clear_then_accept)
    assert rm.wait_for_accepted_node("node-1") == AcceptedNode("node-1")


def test_many_waiters_are_all_woken(later: Callable[..., None]) -> None:
    rm = RecordingRM(timeout=BOUND)
    results: list[object] = []
    lock = threading.Lock()

    def waiter(key: str) -> None:
        got = rm.wait_for_allocation(key)
        with lock:
            results.append(got.allocation_key)

    waiters = [threading.Thread(target=waiter, args=(f"k{i}",)) for i in range(5)]
    for thread in waiters:
        thread.start()
    later(rm.update_allocation, _new(*(f"k{i}" for i in range(5))))
    for thread in waiters:
        thread.join(BOUND * 2)
    assert sorted(results) == [f"k{i}" for i in range(5)]  # type: ignore[type-var]
