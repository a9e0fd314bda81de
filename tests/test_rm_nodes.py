"""Node actions through the RM interface: CREATE, CREATE_DRAIN, UPDATE, DRAIN_NODE,
DRAIN_TO_SCHEDULABLE, DECOMISSION; foreign allocations; rejections; the events of each."""

from __future__ import annotations

import pytest
from rm_helpers import TWO_PARTITIONS, C, D, T, World, check_invariants, res, world  # noqa: F401

from pyscheduler.si import messages as si
from pyscheduler.scheduler.context import UnknownRMError

A = si.NodeAction


def test_create_accepts_node_sets_root_max_and_emits_events(world: World) -> None:
    mark = world.mark()
    world.add_node("n1", memory=1000, vcore=100, **{si.HOST_NAME: "host-1"})
    assert world.rm.accepted_nodes == ["n1"]
    assert world.rm.rejected_nodes == {}
    part = world.partition()
    node = part.nodes["n1"]
    assert node.schedulable and node.hostname == "host-1"
    assert node.total == res(memory=1000, vcore=100)
    assert part.root.max_resource == res(memory=1000, vcore=100)
    records = world.records(mark)
    assert [r[:6] for r in records] == [
        (T.NODE, C.SET, D.NODE_SCHEDULABLE, "n1", "", "schedulable: true"),
        (T.QUEUE, C.SET, D.QUEUE_MAX, "root", "", ""),
        (T.NODE, C.ADD, D.DETAILS_NONE, "n1", "", "Node added to the scheduler"),
    ]
    assert records[1][6] == {"memory": 1000, "vcore": 100}
    assert records[2][6] == {"memory": 1000, "vcore": 100}
    # A second node adds to root's max.
    world.add_node("n2", memory=500, vcore=50)
    assert part.root.max_resource == res(memory=1500, vcore=150)
    check_invariants(world.context)


def test_create_prunes_zero_quantities(world: World) -> None:
    world.node("n1", A.CREATE, {"memory": 100, "vcore": 0, "nvidia.com/gpu": 0})
    assert dict(world.partition().nodes["n1"].total) == {"memory": 100}


def test_create_drain_adds_unschedulable_node(world: World) -> None:
    mark = world.mark()
    world.node("n1", A.CREATE_DRAIN, res(memory=100))
    assert world.rm.accepted_nodes == ["n1"]
    assert not world.partition().nodes["n1"].schedulable
    assert world.events(mark)[0] == (T.NODE, C.SET, D.NODE_SCHEDULABLE, "n1", "", "schedulable: false")
    # It still counts towards the partition's size.
    assert world.partition().root.max_resource == res(memory=100)
    mark = world.mark()
    world.node("n1", A.DRAIN_TO_SCHEDULABLE)
    assert world.partition().nodes["n1"].schedulable
    assert world.events(mark) == [(T.NODE, C.SET, D.NODE_SCHEDULABLE, "n1", "", "schedulable: true")]


def test_node_partition_attribute_selects_the_partition() -> None:
    w = World(TWO_PARTITIONS)
    try:
        w.add_node("n1", memory=100, vcore=10, **{si.NODE_PARTITION: "gpu"})
        w.add_node("n2", memory=7, vcore=1)
        assert list(w.partition("gpu").nodes) == ["n1"]
        assert list(w.partition("default").nodes) == ["n2"]
        assert w.partition("gpu").root.max_resource == res(memory=100, vcore=10)
        assert w.partition("default").root.max_resource == res(memory=7, vcore=1)
        # Later actions find the node whatever its partition.
        w.node("n1", A.DRAIN_NODE)
        assert not w.partition("gpu").nodes["n1"].schedulable
        w.node("n1", A.DECOMISSION)
        assert not w.partition("gpu").nodes
        # An unknown partition is a rejection, not an error.
        w.add_node("n3", **{si.NODE_PARTITION: "nope"})
        assert "nope" in w.rm.rejected_nodes["n3"]
    finally:
        w.close()


def test_update_changes_capacity_and_root_max(world: World) -> None:
    world.add_node("n1", memory=1000, vcore=100)
    world.rm.clear()
    mark = world.mark()
    world.node("n1", A.UPDATE, res(memory=2000, vcore=100))
    part = world.partition()
    assert part.nodes["n1"].total == res(memory=2000, vcore=100)
    assert part.root.max_resource == res(memory=2000, vcore=100)
    records = world.records(mark)
    assert [r[:6] for r in records] == [
        (T.NODE, C.SET, D.NODE_CAPACITY, "n1", "", ""),
        (T.QUEUE, C.SET, D.QUEUE_MAX, "root", "", ""),
    ]
    assert records[0][6] == {"memory": 2000, "vcore": 100}
    # UPDATE is not answered with an acceptance (only CREATE is) and nothing is rejected.
    assert world.rm.accepted_nodes == [] and world.rm.rejected_nodes == {}
    # The same capacity again, or no capacity at all, changes nothing.
    mark = world.mark()
    world.node("n1", A.UPDATE, res(memory=2000, vcore=100))
    world.node("n1", A.UPDATE)
    assert world.events(mark) == []
    assert part.nodes["n1"].total == res(memory=2000, vcore=100)


def test_update_below_allocated_keeps_allocations(world: World) -> None:
    world.add_node("n1", memory=100, vcore=10)
    world.add_app("app-1")
    world.allocate("k1", "app-1", "n1", res(memory=80, vcore=1))
    world.node("n1", A.UPDATE, res(memory=50, vcore=10))
    node = world.partition().nodes["n1"]
    assert node.allocated == res(memory=80, vcore=1)
    assert node.available == res(memory=-30, vcore=9)
    check_invariants(world.context)


def test_drain_and_undrain(world: World) -> None:
    world.add_node("n1")
    node = world.partition().nodes["n1"]
    mark = world.mark()
    world.node("n1", A.DRAIN_NODE)
    assert not node.schedulable
    # Draining a drained node changes nothing and emits nothing.
    world.node("n1", A.DRAIN_NODE)
    world.node("n1", A.DRAIN_TO_SCHEDULABLE)
    assert node.schedulable
    assert world.events(mark) == [
        (T.NODE, C.SET, D.NODE_SCHEDULABLE, "n1", "", "schedulable: false"),
        (T.NODE, C.SET, D.NODE_SCHEDULABLE, "n1", "", "schedulable: true"),
    ]
    assert world.rm.rejected_nodes == {}


def test_drain_keeps_allocations(world: World) -> None:
    world.add_node("n1")
    world.add_app("app-1")
    world.allocate("k1", "app-1", "n1")
    world.node("n1", A.DRAIN_NODE)
    assert "k1" in world.partition().nodes["n1"].allocations
    assert world.rm.released == []


def test_decommission_releases_allocations_with_node_removed(world: World) -> None:
    world.add_node("n1", memory=1000, vcore=100)
    world.add_node("n2", memory=1000, vcore=100)
    world.add_app("app-1", user="alice")
    world.add_app("app-2", queue="root.b", user="bob")
    world.allocate("k1", "app-1", "n1", res(memory=10, vcore=1))
    world.allocate("k2", "app-1", "n2", res(memory=20, vcore=2))
    world.allocate("k3", "app-2", "n1", res(memory=30, vcore=3))
    assert set(world.rm.allocations) == {"k1", "k2", "k3"}
    mark = world.mark()
    world.node("n1", A.DECOMISSION)

    part = world.partition()
    assert "n1" not in part.nodes
    assert part.root.max_resource == res(memory=1000, vcore=100)
    # The RM hears about every allocation that was on the node, in its own partition name.
    released = {r.allocation_key: r for r in world.rm.released}
    assert set(released) == {"k1", "k3"}
    for release in released.values():
        assert release.termination_type is si.TerminationType.STOPPED_BY_RM
        assert release.partition_name == "default"
    assert set(world.rm.allocations) == {"k2"}
    # Queues, apps and users give the resources back.
    assert part.get_queue("root.a").allocated == res(memory=20, vcore=2)
    assert part.get_queue("root.b").allocated.is_zero()
    assert part.root.allocated == res(memory=20, vcore=2)
    assert part.ugm.user_usage("alice", "root.a") == res(memory=20, vcore=2)
    assert part.ugm.user_usage("bob").is_zero()
    # app-2 lost its only allocation: it starts completing; app-1 keeps running.
    assert world.rm.app_state("app-2") == "Completing"
    assert world.rm.app_state("app-1") == "Running"

    events = world.events(mark)
    alloc_removed = [e for e in events if e[0] == T.APP and e[1] == C.REMOVE]
    assert sorted(alloc_removed) == sorted([
        (T.APP, C.REMOVE, D.ALLOC_NODEREMOVED, "app-1", "k1", ""),
        (T.APP, C.REMOVE, D.ALLOC_NODEREMOVED, "app-2", "k3", ""),
    ])
    node_allocs = [e for e in events if e[2] == D.NODE_ALLOC]
    assert sorted(node_allocs) == [
        (T.NODE, C.REMOVE, D.NODE_ALLOC, "n1", "k1", ""),
        (T.NODE, C.REMOVE, D.NODE_ALLOC, "n1", "k3", ""),
    ]
    # The node goes last, after its allocations, and root's max follows.
    assert (T.QUEUE, C.SET, D.QUEUE_MAX, "root", "", "") in events
    assert events[-1] == (T.NODE, C.REMOVE, D.NODE_DECOMISSION, "n1", "", "Node removed from the scheduler")
    check_invariants(world.context)


def test_decommission_then_recreate(world: World) -> None:
    world.add_node("n1", memory=100)
    world.node("n1", A.DECOMISSION)
    assert world.partition().nodes == {}
    world.add_node("n1", memory=300)
    assert world.partition().nodes["n1"].total == res(memory=300, vcore=100)
    assert world.rm.rejected_nodes == {}


@pytest.mark.parametrize("action", [A.UPDATE, A.DRAIN_NODE, A.DRAIN_TO_SCHEDULABLE, A.DECOMISSION])
def test_action_on_unknown_node_is_rejected(world: World, action: si.NodeAction) -> None:
    mark = world.mark()
    world.node("ghost", action, res(memory=1))
    assert "unknown node ghost" in world.rm.rejected_nodes["ghost"]
    assert world.events(mark) == []


def test_bad_nodes_are_rejected_and_good_ones_applied(world: World) -> None:
    world.add_node("dup")
    world.rm.clear()
    mark = world.mark()
    world.nodes(
        si.NodeInfo(node_id="good-1", action=A.CREATE, schedulable_resource=res(memory=10)),
        si.NodeInfo(node_id="negative", action=A.CREATE, schedulable_resource=res(memory=-1)),
        si.NodeInfo(node_id="dup", action=A.CREATE, schedulable_resource=res(memory=10)),
        si.NodeInfo(node_id="noaction", action=A.UNKNOWN_ACTION_FROM_RM),
        si.NodeInfo(node_id="", action=A.CREATE, schedulable_resource=res(memory=10)),
        si.NodeInfo(node_id="good-2", action=A.CREATE_DRAIN, schedulable_resource=res(memory=5)),
    )
    # One answer for the whole request.
    responses = world.rm.calls_of("update_node")
    assert len(responses) == 1
    assert [a.node_id for a in responses[0].accepted] == ["good-1", "good-2"]
    rejected = world.rm.rejected_nodes
    assert set(rejected) == {"negative", "dup", "noaction", ""}
    assert "negative" in rejected["negative"]
    assert "already exists" in rejected["dup"]
    assert "UNKNOWN_ACTION_FROM_RM" in rejected["noaction"]
    assert "empty" in rejected[""]
    part = world.partition()
    assert set(part.nodes) == {"dup", "good-1", "good-2"}
    # The duplicate did not change the existing node; root max = the three nodes.
    assert part.nodes["dup"].total == res(memory=1000, vcore=100)
    assert part.root.max_resource == res(memory=1015, vcore=100)
    # Rejected nodes left no trace in the events.
    assert {e[3] for e in world.events(mark) if e[0] == T.NODE} == {"good-1", "good-2"}
    check_invariants(world.context)


def test_unknown_rm_raises(world: World) -> None:
    with pytest.raises(UnknownRMError):
        world.proxy.update_node(si.NodeRequest(nodes=(), rm_id="other"))
    with pytest.raises(UnknownRMError):
        world.proxy.update_application(si.ApplicationRequest(rm_id="other"))
    with pytest.raises(UnknownRMError):
        world.proxy.update_allocation(si.AllocationRequest(rm_id="other"))


def test_foreign_allocations_occupy_the_node(world: World) -> None:
    world.add_node("n1", memory=100, vcore=10)
    mark = world.mark()
    foreign = si.Allocation(allocation_key="pod-x", node_id="n1", resource_per_alloc=res(memory=30),
                            allocation_tags={si.FOREIGN: si.ALLOC_TYPE_DEFAULT})
    world.allocs(foreign)
    node = world.partition().nodes["n1"]
    assert node.occupied == res(memory=30)
    assert node.available == res(memory=70, vcore=10)
    records = world.records(mark)
    assert [r[:6] for r in records] == [(T.NODE, C.SET, D.NODE_OCCUPIED, "n1", "", "")]
    assert records[0][6] == {"memory": 30}
    # Foreign pods are not the scheduler's: no queue or user usage.
    assert world.partition().root.allocated.is_zero()
    # Released by key with no application id.
    world.allocs(releases=(si.AllocationRelease(partition_name="default", allocation_key="pod-x",
                                                termination_type=si.TerminationType.STOPPED_BY_RM),))
    assert node.occupied.is_zero()
    assert world.rm.rejected_allocations == {}
    # Unknown foreign release and foreign on an unknown node are rejected.
    world.allocs(
        si.Allocation(allocation_key="pod-y", node_id="ghost", resource_per_alloc=res(memory=1),
                      allocation_tags={si.FOREIGN: si.ALLOC_TYPE_STATIC}),
        releases=(si.AllocationRelease(partition_name="default", allocation_key="pod-z"),),
    )
    assert "unknown node ghost" in world.rm.rejected_allocations["pod-y"]
    assert "pod-z" in world.rm.rejected_allocations["pod-z"]


def test_a_failing_rm_callback_does_not_reach_the_caller(world: World) -> None:
    from pyscheduler.testing.recording import RecordingRM

    class BrokenRM(RecordingRM):
        def update_node(self, response: si.NodeResponse) -> None:
            super().update_node(response)
            raise RuntimeError("the RM is broken")

        def update_allocation(self, response: si.AllocationResponse) -> None:
            super().update_allocation(response)
            raise RuntimeError("the RM is broken")

    rm = BrokenRM()
    world.register("partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: '*'\n"
                   "        queues:\n          - name: a\n", rm=rm)
    world.rm = rm
    world.add_node("n1")
    world.add_node("n1")
    assert rm.accepted_nodes == ["n1"] and "n1" in rm.rejected_nodes
    world.add_app("app-1")
    world.allocate("k1", "app-1", "n1")
    world.node("n1", A.DECOMISSION)
    assert [r.allocation_key for r in rm.released] == ["k1"]
    assert world.partition().nodes == {}
    check_invariants(world.context)
