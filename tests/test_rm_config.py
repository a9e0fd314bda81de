"""Configuration through the RM interface: registration errors, reload (queues added, removed
queues draining until empty, changed limits), invalid reloads rejected whole (queues and event
settings), re-registration, partitions added and removed."""

from __future__ import annotations

import pytest
from rm_helpers import BASIC, RM_ID, C, D, T, World, check_invariants, res, world  # noqa: F401

from pyscheduler.common.errors import ConfigError
from pyscheduler.objects.application_state import AppState
from pyscheduler.si import messages as si
from pyscheduler.testing.recording import RecordingRM
from pyscheduler.scheduler.context import UnknownRMError

TWO_LEAVES = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
          - name: b
"""


def _queues(w: World, partition: str = "default") -> list[str]:
    return [q.path for q in w.partition(partition).queues()]


# -- registration ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "extra", "fragment"),
    [
        ("partitions: [", {}, ""),  # YAML syntax
        ("partitions:\n  - name: default\n    bogus: 1\n", {}, "bogus"),  # strict keys
        ("partitions:\n  - name: default\n    queues:\n      - name: root\n        resources:\n"
         "          max: {memory: 10}\n", {}, "root"),  # validation: root may not have resources
        (BASIC, {"event.trackingEnabled": "maybe"}, "event.trackingEnabled"),  # bad extra config
    ],
)
def test_registration_with_a_bad_config_raises_and_registers_nothing(config: str, extra: dict, fragment: str) -> None:
    w = World(register=False)
    try:
        with pytest.raises(ConfigError) as info:
            w.register(config, extra_config=extra)
        assert fragment in str(info.value)
        assert w.context.partitions == {}
        assert w.mark() == 0  # no event at all
        with pytest.raises(UnknownRMError):
            w.add_node("n1")
        assert w.rm.calls == []
    finally:
        w.close()


def test_empty_config_is_the_default_one() -> None:
    w = World("")
    try:
        assert _queues(w) == ["root", "root.default"]
        w.add_app("app-1", "root.whatever")
        assert w.app("app-1").queue.path == "root.default"
    finally:
        w.close()


def test_registration_emits_the_configured_queues(world: World) -> None:
    assert world.events(0) == [
        (T.QUEUE, C.ADD, D.DETAILS_NONE, "root", "", ""),
        (T.QUEUE, C.ADD, D.DETAILS_NONE, "root.a", "", ""),
        (T.QUEUE, C.ADD, D.DETAILS_NONE, "root.b", "", ""),
        (T.QUEUE, C.ADD, D.DETAILS_NONE, "root.parent", "", ""),
    ]


# -- reload ---------------------------------------------------------------------------------------


def test_reload_adds_queues_and_changes_limits() -> None:
    w = World(TWO_LEAVES)
    try:
        mark = w.mark()
        w.reload("""
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
            maxapplications: 5
            resources:
              max: {memory: 100, vcore: 10}
              guaranteed: {memory: 10}
          - name: b
            queues:
              - name: c
          - name: new
""")
        assert _queues(w) == ["root", "root.a", "root.b", "root.b.c", "root.new"]
        a = w.queue("root.a")
        assert a.max_resource == res(memory=100, vcore=10_000)
        assert a.guaranteed == res(memory=10)
        assert a.max_applications == 5
        assert not w.queue("root.b").is_leaf
        records = w.records(mark)
        tuples = [r[:6] for r in records]
        assert (T.QUEUE, C.SET, D.QUEUE_MAX, "root.a", "", "") in tuples
        assert (T.QUEUE, C.SET, D.QUEUE_GUARANTEED, "root.a", "", "") in tuples
        assert (T.QUEUE, C.SET, D.QUEUE_TYPE, "root.b", "", "parent") in tuples
        assert (T.QUEUE, C.ADD, D.DETAILS_NONE, "root.b.c", "", "") in tuples
        assert (T.QUEUE, C.ADD, D.DETAILS_NONE, "root.new", "", "") in tuples
        max_event = next(r for r in records if r[2] == D.QUEUE_MAX)
        assert max_event[6] == {"memory": 100, "vcore": 10_000}
        # Nothing else changed: no other queue event.
        assert len(tuples) == 5
        # A max removed again is a change too.
        mark = w.mark()
        w.reload(TWO_LEAVES.replace("- name: b", "- name: b\n            parent: true"))
        assert a.max_resource is None and a.guaranteed is None and a.max_applications == 0
        tuples = w.events(mark)
        assert (T.QUEUE, C.SET, D.QUEUE_MAX, "root.a", "", "") in tuples
        assert (T.QUEUE, C.SET, D.QUEUE_GUARANTEED, "root.a", "", "") in tuples
    finally:
        w.close()


def test_reload_keeps_root_max_equal_to_the_cluster(world: World) -> None:
    world.add_node("n1", memory=1000, vcore=100)
    root = world.partition().root
    assert root.max_resource == res(memory=1000, vcore=100)
    mark = world.mark()
    world.reload(BASIC + "          - name: extra\n")
    assert world.queue("root.extra") is not None
    assert root.max_resource == res(memory=1000, vcore=100)
    assert (T.QUEUE, C.SET, D.QUEUE_MAX, "root", "", "") not in world.events(mark)
    check_invariants(world.context)


def test_removed_queue_drains_and_goes_once_empty() -> None:
    w = World(TWO_LEAVES)
    try:
        w.add_node("n1")
        w.add_app("app-1", "root.b")
        w.allocate("k1", "app-1", "n1")
        w.reload(TWO_LEAVES.replace("          - name: b\n", ""))
        b = w.queue("root.b")
        assert b.is_draining
        w.advance(1)
        assert w.queue("root.b") is b  # still has an app
        w.release("app-1", "k1")
        w.advance(30)  # app completes and leaves the queue; the same tick removes it
        assert w.queue("root.b") is None
        removed = [e for e in w.events(0) if e[0] == T.QUEUE and e[1] == C.REMOVE]
        assert removed[-1] == (T.QUEUE, C.REMOVE, D.DETAILS_NONE, "root.b", "", "")
    finally:
        w.close()


def test_removed_parent_drains_with_its_children() -> None:
    nested = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
          - name: team
            queues:
              - name: x
              - name: y
"""
    w = World(nested)
    try:
        w.add_node("n1")
        w.add_app("app-1", "root.team.x")
        w.allocate("k1", "app-1", "n1")
        mark = w.mark()
        w.reload(TWO_LEAVES)
        for path in ("root.team", "root.team.x", "root.team.y"):
            assert w.queue(path).is_draining, path
        # New apps cannot go to a draining child either.
        w.add_app("app-2", "root.team.y")
        assert "app-2" in w.rm.rejected_apps
        w.advance(1)
        # y is empty and goes; x holds app-1, so team stays.
        assert w.queue("root.team.y") is None
        assert w.queue("root.team.x") is not None and w.queue("root.team") is not None
        w.remove_app("app-1")
        w.advance(1)
        assert w.queue("root.team") is None and w.queue("root.team.x") is None
        removed = [e[3] for e in w.events(mark) if e[0] == T.QUEUE and e[1] == C.REMOVE and e[2] == D.DETAILS_NONE]
        assert removed == ["root.team.y", "root.team.x", "root.team"]
    finally:
        w.close()


def test_queue_back_in_config_is_active_again() -> None:
    w = World(TWO_LEAVES)
    try:
        w.add_app("app-1", "root.b")
        w.reload(TWO_LEAVES.replace("          - name: b\n", ""))
        assert w.queue("root.b").is_draining
        w.reload(TWO_LEAVES)
        assert not w.queue("root.b").is_draining
        w.advance(10)
        assert w.queue("root.b") is not None
    finally:
        w.close()


def test_dynamic_queue_that_appears_in_config_becomes_managed() -> None:
    config = """
partitions:
  - name: default
    placementrules:
      - name: provided
        create: true
    queues:
      - name: root
        submitacl: "*"
"""
    w = World(config)
    try:
        w.add_app("app-1", "root.dyn")
        assert not w.queue("root.dyn").is_managed
        w.reload(config + "        queues:\n          - name: dyn\n")
        assert w.queue("root.dyn").is_managed
        w.remove_app("app-1")
        w.advance(1)
        assert w.queue("root.dyn") is not None  # managed now: not removed when empty
    finally:
        w.close()


def test_same_config_again_is_a_no_op(world: World) -> None:
    mark = world.mark()
    world.reload(BASIC)
    assert world.events(mark) == []


@pytest.mark.parametrize(
    ("config", "extra"),
    [
        ("partitions:\n  - name: default\n    queues:\n      - name: root\n        queues:\n          - name: a\n"
         "            queues: 7\n", {}),
        ("partitions:\n  - name: default\n    placementrules:\n      - name: fixed\n        value: root.nope\n"
         "    queues:\n      - name: root\n", {}),
        (BASIC + "          - name: c\n", {"event.ringBufferCapacity": "-1"}),
        (BASIC + "          - name: c\n", {"event.trackingEnabled": "nope"}),
    ],
)
def test_invalid_reload_is_rejected_whole(world: World, config: str, extra: dict) -> None:
    world.add_node("n1")
    world.add_app("app-1", "root.a")
    before = _queues(world)
    settings = world.context.event_system.settings
    placement = world.partition().placement
    mark = world.mark()
    with pytest.raises(ConfigError):
        world.reload(config, extra_config=extra)
    assert _queues(world) == before
    assert world.context.event_system.settings is settings
    assert world.partition().placement is placement
    assert world.events(mark) == []
    # And the old configuration still works.
    world.add_app("app-2", "root.b")
    assert "app-2" in world.partition().applications


def test_reload_for_an_unknown_rm_raises(world: World) -> None:
    with pytest.raises(UnknownRMError):
        world.proxy.update_configuration(si.UpdateConfigurationRequest(rm_id="nobody", config=BASIC))


def test_reload_replaces_placement_rules(world: World) -> None:
    world.add_app("app-1", "root.new")
    assert "app-1" in world.rm.rejected_apps
    world.reload(BASIC.replace("partitions:\n  - name: default\n",
                               "partitions:\n  - name: default\n    placementrules:\n"
                               "      - name: provided\n        create: true\n"))
    world.add_app("app-2", "root.new")
    assert world.app("app-2").queue.path == "root.new"


def test_reload_changes_node_sort_policy(world: World) -> None:
    world.reload(BASIC.replace("    queues:\n", "    nodesortpolicy:\n      type: binpacking\n    queues:\n", 1))
    assert world.partition().node_sort_policy == "binpacking"


def test_reload_changes_a_leafs_application_sort_policy(world: World) -> None:
    """Read on every visit of a leaf, parsed once per change: a reload that sets it, and one
    that takes it away again, both show (a parent's property is inherited)."""
    assert world.queue("root.a").sort_policy == "fifo"
    fair_under_root = BASIC.replace('        submitacl: "*"\n',
                                    '        submitacl: "*"\n        properties:\n          application.sort.policy: Fair\n', 1)
    world.reload(fair_under_root)
    assert world.queue("root.a").sort_policy == "fair" and world.queue("root.b").sort_policy == "fair"
    world.reload(fair_under_root.replace("Fair", "stateaware"))
    assert world.queue("root.a").sort_policy == "fifo"
    world.reload(BASIC)
    assert world.queue("root.b").sort_policy == "fifo"


# -- event settings through extra_config ----------------------------------------------------------------


def test_event_settings_from_registration_and_reload() -> None:
    w = World(BASIC, extra_config={"event.trackingEnabled": "false"})
    try:
        system = w.context.event_system
        assert not system.tracking_enabled
        w.add_node("n1")
        assert w.mark() == 0  # nothing recorded while disabled
        w.reload(BASIC, extra_config={"event.trackingEnabled": "true", "event.ringBufferCapacity": "50"})
        assert system.tracking_enabled and system.settings.ring_buffer_capacity == 50
        mark = w.mark()
        w.add_node("n2")
        assert [e[3] for e in w.events(mark) if e[0] == T.NODE] == ["n2", "n2"]
        # A bad value leaves every setting as it was, even with the same queues.
        with pytest.raises(ConfigError):
            w.reload(BASIC, extra_config={"event.trackingEnabled": "false", "event.requestCapacity": "x"})
        assert system.tracking_enabled and system.settings.ring_buffer_capacity == 50
        # A key that is left out goes back to its default.
        w.reload(BASIC, extra_config={})
        assert system.settings.ring_buffer_capacity == 100_000
    finally:
        w.close()


# -- partitions and re-registration -----------------------------------------------------------------


PARTS = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
  - name: {second}
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
"""


def test_reload_adds_and_removes_partitions() -> None:
    w = World(PARTS.format(second="one"))
    try:
        w.add_node("n1", **{si.NODE_PARTITION: "one"})
        w.add_app("app-1", "root.a", partition="one")
        w.allocate("k1", "app-1", "n1", partition="one")
        w.reload(PARTS.format(second="two"))
        assert set(w.context.partitions) == {f"[{RM_ID}]default", f"[{RM_ID}]two"}
        # The removed partition's apps failed, its nodes went, their allocations were released.
        assert w.rm.app_state("app-1") == "Failing"
        assert [(r.allocation_key, r.partition_name) for r in w.rm.released] == [("k1", "one")]
        w.add_node("n2", **{si.NODE_PARTITION: "two"})
        assert "n2" in w.partition("two").nodes
        w.add_node("n3", **{si.NODE_PARTITION: "one"})
        assert "unknown partition" in w.rm.rejected_nodes["n3"]
    finally:
        w.close()


def test_reregistration_removes_old_partitions_first(world: World) -> None:
    world.add_node("n1")
    world.add_app("app-1")
    world.allocate("k1", "app-1", "n1")
    old_partition = world.partition()
    new_rm = RecordingRM()
    mark = world.mark()
    world.register(TWO_LEAVES, rm=new_rm)
    new_partition = world.partition()
    assert new_partition is not old_partition
    assert _queues(world) == ["root", "root.a", "root.b"]
    assert new_partition.nodes == {} and new_partition.applications == {}
    assert old_partition.applications["app-1"].state is AppState.FAILING
    events = world.events(mark)
    # The old node went (after its allocation) before the new queues came.
    node_removed = events.index((T.NODE, C.REMOVE, D.NODE_DECOMISSION, "n1", "", "Node removed from the scheduler"))
    root_added = events.index((T.QUEUE, C.ADD, D.DETAILS_NONE, "root", "", ""))
    assert node_removed < root_added
    assert (T.APP, C.REMOVE, D.ALLOC_NODEREMOVED, "app-1", "k1", "") in events[:node_removed]
    # The new RM callback is used from now on.
    world.add_node("n2")
    assert new_rm.accepted_nodes == ["n2"]
    assert "n2" not in world.rm.accepted_nodes


def test_reregistration_with_a_bad_config_keeps_everything(world: World) -> None:
    world.add_node("n1")
    with pytest.raises(ConfigError):
        world.register("partitions: [")
    assert "n1" in world.partition().nodes
    world.add_node("n2")
    assert world.rm.accepted_nodes == ["n1", "n2"]


def test_two_rms_have_separate_partitions() -> None:
    w = World(BASIC)
    try:
        other = RecordingRM()
        w.proxy.register_resource_manager(
            si.RegisterResourceManagerRequest(rm_id="rm-2", policy_group="other", config=TWO_LEAVES), other
        )
        assert set(w.context.partitions) == {f"[{RM_ID}]default", "[rm-2]default"}
        w.proxy.update_node(si.NodeRequest(nodes=(si.NodeInfo(node_id="n1", action=si.NodeAction.CREATE,
                                                              schedulable_resource=res(memory=5)),), rm_id="rm-2"))
        assert other.accepted_nodes == ["n1"] and w.rm.accepted_nodes == []
        assert "n1" in w.context.partition("rm-2", "default").nodes
        assert w.partition().nodes == {}
        # Actions of one RM never find the other RM's nodes.
        w.node("n1", si.NodeAction.DRAIN_NODE)
        assert "unknown node n1" in w.rm.rejected_nodes["n1"]
    finally:
        w.close()
