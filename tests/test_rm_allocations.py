"""Asks, allocations and releases through the RM interface: new asks and their updates,
recovered and RM-bound allocations (even past the queue max), releases by key and for the whole
application, foreign-free rejections of bad input, partition naming inside and outside."""

from __future__ import annotations

import pytest
from rm_helpers import LIMITED, RM_ID, TWO_PARTITIONS, C, D, T, World, check_invariants, res, world  # noqa: F401

from pyscheduler.objects.application_state import AppState
from pyscheduler.si import messages as si

TT = si.TerminationType


def _app_with_node(world: World, app_id: str = "app-1", queue: str = "root.a") -> None:
    world.add_node("n1", memory=1000, vcore=100)
    world.add_app(app_id, queue)


# -- asks -------------------------------------------------------------------------------------------


def test_new_ask_is_pending_everywhere_and_announced(world: World) -> None:
    world.add_app("app-1")
    mark = world.mark()
    world.ask("k1", "app-1", res(memory=10, vcore=2))
    app = world.app("app-1")
    assert set(app.asks) == {"k1"}
    assert app.pending == res(memory=10, vcore=2)
    assert world.queue("root.a").pending == res(memory=10, vcore=2)
    assert world.partition().root.pending == res(memory=10, vcore=2)
    records = world.records(mark)
    assert [r[:6] for r in records] == [
        (T.APP, C.SET, D.APP_ACCEPTED, "app-1", "", ""),
        (T.APP, C.ADD, D.APP_REQUEST, "app-1", "k1", ""),
    ]
    assert records[1][6] == {"memory": 10, "vcore": 2}
    # An ask is not an allocation: the RM gets no allocation message, no rejection.
    assert world.rm.calls_of("update_allocation") == []
    assert world.rm.app_states("app-1") == ["Accepted"]


def test_ask_update_replaces_its_size(world: World) -> None:
    world.add_app("app-1")
    world.ask("k1", "app-1", res(memory=10, vcore=1))
    world.ask("k2", "app-1", res(memory=1, vcore=1))
    world.ask("k1", "app-1", res(memory=4, vcore=3))
    app = world.app("app-1")
    assert app.pending == res(memory=5, vcore=4)
    assert world.queue("root.a").pending == res(memory=5, vcore=4)
    assert app.asks["k1"].resource == res(memory=4, vcore=3)
    assert world.rm.rejected_allocations == {}
    check_invariants(world.context)


def test_ask_attributes_from_the_message(world: World) -> None:
    world.add_app("app-1")
    world.allocs(
        World.alloc_msg("low-old", "app-1", priority=1, allocation_tags={si.CREATION_TIME: "1000"}),
        World.alloc_msg("low-new", "app-1", priority=1, allocation_tags={si.CREATION_TIME: "2000"}),
        World.alloc_msg("high", "app-1", priority=10, allocation_tags={si.TAG_REQUIRED_NODE: "n7"}),
        World.alloc_msg("ph", "app-1", placeholder=True, task_group_name="tg-1",
                        preemption_policy=si.PreemptionPolicy(allow_preempt_self=False, allow_preempt_other=True)),
    )
    app = world.app("app-1")
    assert [a.allocation_key for a in app.sorted_asks()][:3] == ["high", "low-old", "low-new"]
    assert app.asks["high"].required_node == "n7"
    assert app.asks["low-old"].create_time_ns == 1000 * 1_000_000_000
    ph = app.asks["ph"]
    assert ph.placeholder and ph.task_group_name == "tg-1"
    assert not ph.allow_preempt_self and ph.allow_preempt_other


@pytest.mark.parametrize(
    ("alloc", "reason"),
    [
        (si.Allocation(allocation_key="zero", application_id="app-1", resource_per_alloc=si.Resource({"memory": 0})),
         "no positive quantity"),
        (si.Allocation(allocation_key="empty", application_id="app-1"), "no positive quantity"),
        (si.Allocation(allocation_key="neg", application_id="app-1",
                       resource_per_alloc=si.Resource({"memory": 10, "vcore": -1})), "negative"),
        (si.Allocation(allocation_key="", application_id="app-1",
                       resource_per_alloc=si.Resource({"memory": 1})), "allocation key is empty"),
        (si.Allocation(allocation_key="noapp", resource_per_alloc=si.Resource({"memory": 1})), "application"),
        (si.Allocation(allocation_key="ghostapp", application_id="ghost",
                       resource_per_alloc=si.Resource({"memory": 1})), "unknown application ghost"),
        (si.Allocation(allocation_key="ghostnode", application_id="app-1", node_id="ghost",
                       resource_per_alloc=si.Resource({"memory": 1})), "unknown node ghost"),
        (si.Allocation(allocation_key="ghostpart", application_id="app-1", partition_name="nope",
                       resource_per_alloc=si.Resource({"memory": 1})), "unknown partition"),
        (si.Allocation(allocation_key="ph", application_id="app-1", placeholder=True,
                       resource_per_alloc=si.Resource({"memory": 1})), "task group"),
        (si.Allocation(allocation_key="prio", application_id="app-1", priority=2**31,
                       resource_per_alloc=si.Resource({"memory": 1})), "int32"),
    ],
)
def test_bad_asks_are_rejected_and_change_nothing(world: World, alloc: si.Allocation, reason: str) -> None:
    world.add_node("n1")
    world.add_app("app-1")
    mark = world.mark()
    world.allocs(alloc)
    assert reason in world.rm.rejected_allocations[alloc.allocation_key]
    rejected = world.rm.calls_of("update_allocation")[0].rejected_allocations[0]
    assert rejected.application_id == alloc.application_id
    app = world.app("app-1")
    assert app.asks == {} and app.allocations == {} and app.state is AppState.NEW
    assert world.partition().root.pending.is_zero() and world.partition().root.allocated.is_zero()
    assert world.events(mark) == []


def test_one_bad_ask_does_not_stop_the_others(world: World) -> None:
    world.add_app("app-1")
    world.allocs(
        World.alloc_msg("ok-1", "app-1"),
        World.alloc_msg("bad", "app-1", res(memory=0)),
        World.alloc_msg("ghost", "nope"),
        World.alloc_msg("ok-2", "app-1"),
        releases=(World.release_msg("app-1", "never-there"),),
    )
    assert set(world.app("app-1").asks) == {"ok-1", "ok-2"}
    responses = world.rm.calls_of("update_allocation")
    assert len(responses) == 1
    assert {r.allocation_key for r in responses[0].rejected_allocations} == {"bad", "ghost", "never-there"}


# -- allocations ------------------------------------------------------------------------------------


def test_committed_allocation_goes_to_the_rm(world: World) -> None:
    _app_with_node(world)
    world.ask("k1", "app-1", res(memory=10, vcore=1), allocation_tags={"x": "y"}, priority=3)
    world.commit("app-1", "k1", "n1")
    alloc = world.rm.wait_for_allocation("k1")
    assert (alloc.node_id, alloc.application_id, alloc.partition_name) == ("n1", "app-1", "default")
    assert alloc.resource_per_alloc == res(memory=10, vcore=1)
    assert dict(alloc.allocation_tags) == {"x": "y"} and alloc.priority == 3
    part = world.partition()
    assert part.nodes["n1"].allocated == res(memory=10, vcore=1)
    assert world.queue("root.a").allocated == res(memory=10, vcore=1)
    assert world.queue("root.a").pending.is_zero()
    assert part.ugm.user_usage("alice", "root.a") == res(memory=10, vcore=1)
    check_invariants(world.context)


def test_recovered_allocation_is_counted_even_past_queue_max() -> None:
    w = World(LIMITED)
    try:
        w.add_node("n1", memory=1000, vcore=100)
        w.add_app("app-1", "root.a", user="alice")
        mark = w.mark()
        # root.a has max memory 100: the RM reports a running pod of 150 (recovery after restart).
        w.ask("k1", "app-1", res(memory=150, vcore=1), node_id="n1")
        assert w.rm.rejected_allocations == {}
        app = w.app("app-1")
        assert app.state is AppState.RUNNING
        assert w.rm.app_states("app-1") == ["Accepted", "Running"]
        assert app.allocations["k1"].node_id == "n1" and app.allocations["k1"].allocated
        queue = w.queue("root.a")
        assert queue.allocated == res(memory=150, vcore=1)
        assert not queue.fits(res(memory=1))
        assert w.partition().nodes["n1"].allocated == res(memory=150, vcore=1)
        assert w.partition().ugm.user_usage("alice") == res(memory=150, vcore=1)
        # The RM placed it: the core sends no "new allocation" back.
        assert w.rm.allocation_count == 0
        events = w.events(mark)
        assert (T.NODE, C.ADD, D.NODE_ALLOC, "n1", "k1", "") in events
        assert (T.USERGROUP, C.ADD, D.UG_USER_RESOURCE, "alice", "root.a", "") in events
        assert events[-1] == (T.APP, C.ADD, D.APP_ALLOC, "app-1", "k1", "")
        # The same report again is a no-op.
        mark = w.mark()
        w.ask("k1", "app-1", res(memory=150, vcore=1), node_id="n1")
        assert w.events(mark) == [] and w.rm.rejected_allocations == {}
        assert queue.allocated == res(memory=150, vcore=1)
        check_invariants(w.context)
    finally:
        w.close()


def test_rm_bound_ask_becomes_an_allocation(world: World) -> None:
    _app_with_node(world)
    world.ask("k1", "app-1", res(memory=10, vcore=1))
    world.ask("k1", "app-1", res(memory=10, vcore=1), node_id="n1")
    app = world.app("app-1")
    assert app.asks == {} and set(app.allocations) == {"k1"}
    assert app.pending.is_zero() and app.allocated == res(memory=10, vcore=1)
    assert world.queue("root.a").pending.is_zero()
    assert app.state is AppState.RUNNING
    check_invariants(world.context)


def test_allocation_resource_update_moves_usage_everywhere(world: World) -> None:
    """An existing key with a resource change updates allocated (scheduler.md, UpdateAllocation)."""
    _app_with_node(world)
    world.allocate("k1", "app-1", "n1", res(memory=10, vcore=1))
    world.ask("k1", "app-1", res(memory=30, vcore=1), node_id="n1")
    assert world.rm.rejected_allocations == {}
    part = world.partition()
    assert world.app("app-1").allocations["k1"].resource == res(memory=30, vcore=1)
    assert world.app("app-1").allocated == res(memory=30, vcore=1)
    assert part.nodes["n1"].allocated == res(memory=30, vcore=1)
    assert world.queue("root.a").allocated == res(memory=30, vcore=1)
    assert part.ugm.user_usage("alice", "root.a") == res(memory=30, vcore=1)
    world.ask("k1", "app-1", res(memory=5, vcore=1), node_id="n1")
    assert part.nodes["n1"].allocated == res(memory=5, vcore=1)
    assert part.root.allocated == res(memory=5, vcore=1)
    assert part.ugm.user_usage("alice", "root.a") == res(memory=5, vcore=1)
    check_invariants(world.context)
    world.release("app-1", "k1")
    assert part.nodes["n1"].allocated.is_zero() and part.root.allocated.is_zero()
    assert part.ugm.user_usage("alice").is_zero()
    check_invariants(world.context)


# -- releases ---------------------------------------------------------------------------------------


def test_release_by_key_is_confirmed_to_the_rm(world: World) -> None:
    _app_with_node(world)
    world.allocate("k1", "app-1", "n1")
    world.allocate("k2", "app-1", "n1")
    mark = world.mark()
    world.release("app-1", "k1")
    # YuniKorn tells the RM exactly what its release removed (STOPPED_BY_RM).
    assert [(r.allocation_key, r.termination_type, r.partition_name) for r in world.rm.released] == [
        ("k1", TT.STOPPED_BY_RM, "default")
    ]
    assert set(world.rm.allocations) == {"k2"}
    assert set(world.partition().nodes["n1"].allocations) == {"k2"}
    assert world.app("app-1").state is AppState.RUNNING
    assert world.events(mark) == [
        (T.USERGROUP, C.REMOVE, D.UG_USER_RESOURCE, "alice", "root.a", ""),
        (T.APP, C.REMOVE, D.ALLOC_CANCEL, "app-1", "k1", ""),
        (T.NODE, C.REMOVE, D.NODE_ALLOC, "n1", "k1", ""),
    ]
    check_invariants(world.context)


@pytest.mark.parametrize(
    ("termination", "detail"),
    [(TT.TIMEOUT, D.ALLOC_TIMEOUT), (TT.PREEMPTED_BY_SCHEDULER, D.ALLOC_PREEMPT),
     (TT.PLACEHOLDER_REPLACED, D.ALLOC_REPLACED)],
)
def test_release_confirmations_carry_their_detail_and_are_not_echoed(
    world: World, termination: si.TerminationType, detail: D
) -> None:
    _app_with_node(world)
    world.allocate("k1", "app-1", "n1")
    world.allocate("k2", "app-1", "n1")
    mark = world.mark()
    world.release("app-1", "k1", termination=termination)
    assert (T.APP, C.REMOVE, detail, "app-1", "k1", "") in world.events(mark)
    if termination in (TT.TIMEOUT, TT.PREEMPTED_BY_SCHEDULER):
        # The RM confirms what the core started: nothing goes back.
        assert world.rm.released == []
    assert "k1" not in world.partition().nodes["n1"].allocations
    check_invariants(world.context)


def test_release_whole_application(world: World) -> None:
    _app_with_node(world)
    world.add_node("n2")
    world.allocate("k1", "app-1", "n1")
    world.allocate("k2", "app-1", "n2")
    world.ask("k3", "app-1")
    world.release("app-1", "")
    assert sorted(r.allocation_key for r in world.rm.released) == ["k1", "k2"]
    app = world.app("app-1")
    assert app.allocations == {}
    # Only allocations go: the pending ask stays, so the app keeps running.
    assert set(app.asks) == {"k3"}
    assert app.state is AppState.RUNNING
    assert world.rm.allocations == {}
    check_invariants(world.context)


def test_release_of_an_ask_cancels_it(world: World) -> None:
    world.add_app("app-1")
    world.ask("k1", "app-1")
    world.ask("k2", "app-1")
    world.release("app-1", "k1")
    assert set(world.app("app-1").asks) == {"k2"}
    assert world.rm.released == [] and world.rm.rejected_allocations == {}
    assert world.queue("root.a").pending == res(memory=10, vcore=1)


def test_bad_releases_are_rejected(world: World) -> None:
    _app_with_node(world)
    world.allocate("k1", "app-1", "n1")
    world.allocs(releases=(
        World.release_msg("app-1", "nope"),
        World.release_msg("ghost-app", "k9"),
        World.release_msg("app-1", "k1", partition="nope"),
        si.AllocationRelease(partition_name="default"),
    ))
    rejected = world.rm.rejected_allocations
    assert "no allocation nope" in rejected["nope"]
    assert "unknown application ghost-app" in rejected["k9"]
    assert "unknown partition" in rejected["k1"]
    assert "neither" in rejected[""]
    # k1 is untouched.
    assert "k1" in world.partition().nodes["n1"].allocations
    # A release that already happened is not there any more the second time.
    world.release("app-1", "k1")
    world.rm.clear()
    world.release("app-1", "k1")
    assert "k1" in world.rm.rejected_allocations
    check_invariants(world.context)


def test_asks_and_releases_in_one_request(world: World) -> None:
    _app_with_node(world)
    world.allocate("k1", "app-1", "n1")
    world.allocs(World.alloc_msg("k2", "app-1"), releases=(World.release_msg("app-1", "k1"),))
    app = world.app("app-1")
    assert set(app.asks) == {"k2"} and app.allocations == {}
    assert app.state is AppState.RUNNING


# -- partition names ------------------------------------------------------------------------------


def test_partition_names_are_qualified_inside_and_plain_outside() -> None:
    w = World(TWO_PARTITIONS)
    try:
        assert set(w.context.partitions) == {f"[{RM_ID}]default", f"[{RM_ID}]gpu"}
        w.add_node("g1", **{si.NODE_PARTITION: "gpu"})
        w.add_app("app-g", "root.a", partition="gpu")
        w.add_app("app-d", "root.a", partition="")
        assert "app-d" in w.partition("default").applications
        assert "app-g" in w.partition("gpu").applications
        w.allocate("k1", "app-g", "g1", partition="gpu")
        assert w.rm.allocations["k1"].partition_name == "gpu"
        w.release("app-g", "k1", partition="gpu")
        assert [r.partition_name for r in w.rm.released] == ["gpu"]
        # An app is only found in its own partition.
        w.ask("k2", "app-g", partition="default")
        assert "unknown application app-g" in w.rm.rejected_allocations["k2"]
        # Names are case-insensitive, like YuniKorn's.
        w.ask("k3", "app-g", partition="GPU")
        assert "k3" in w.partition("gpu").applications["app-g"].asks
        # No RM-visible message ever carries the internal name.
        for name, message in w.rm.calls:
            assert "[" + RM_ID not in repr(message), (name, message)
    finally:
        w.close()


# -- commits that went stale, RMs that call back --------------------------------------------------------


@pytest.mark.parametrize("change", ["remove app", "remove node", "release ask", "commit twice"])
def test_a_stale_commit_is_refused_and_changes_nothing(world: World, change: str) -> None:
    from pyscheduler.objects.partition import PartitionError

    _app_with_node(world)
    world.ask("k1", "app-1")
    part = world.partition()
    app, node = part.applications["app-1"], part.nodes["n1"]
    ask = app.asks["k1"]
    if change == "remove app":
        world.remove_app("app-1")
    elif change == "remove node":
        world.node("n1", si.NodeAction.DECOMISSION)
    elif change == "release ask":
        world.release("app-1", "k1")
    else:
        world.context.commit_allocation(part, app, ask, node)
    world.rm.clear()
    mark = world.mark()
    with pytest.raises(PartitionError, match="stale"):
        world.context.commit_allocation(part, app, ask, node)
    assert world.rm.calls == [] and world.events(mark) == []
    assert len(node.allocations) == (1 if change == "commit twice" else 0)
    check_invariants(world.context)


def test_the_rm_may_call_back_from_a_callback(world: World) -> None:
    """An RM that releases every allocation as soon as it hears of it, from inside the callback."""
    from pyscheduler.testing.recording import RecordingRM

    class EagerRM(RecordingRM):
        def update_allocation(self, response: si.AllocationResponse) -> None:
            super().update_allocation(response)
            for alloc in response.new:
                world.release(alloc.application_id, alloc.allocation_key)

    rm = EagerRM()
    world.register(
        "partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: '*'\n"
        "        queues:\n          - name: a\n", rm=rm)
    world.rm = rm
    _app_with_node(world)
    world.ask("k1", "app-1")
    world.commit("app-1", "k1", "n1")
    assert rm.allocations == {}
    assert [r.allocation_key for r in rm.released] == ["k1"]
    assert world.app("app-1").state is AppState.COMPLETING
    check_invariants(world.context)
