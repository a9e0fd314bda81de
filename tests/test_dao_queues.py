"""Partitions, placement rules and queues through the query functions (pyscheduler.dao), checked
with the strict decoder of test_dao_strict."""

from __future__ import annotations

from typing import Any

import pytest

from pyscheduler import dao
from pyscheduler.dao.errors import INVALID_QUEUE_NAME
from rm_helpers import World, world  # noqa: F401  (world: the fixture)
from test_dao_strict import PARTITION, QUEUE, RULE, ListOf, Rich, decode, rich  # noqa: F401

T0 = 1_700_000_000_000_000_000  # the rich world's clock at its start

INT32_MIN = -(2**31)


def _find(queue: dict[str, Any], path: str) -> dict[str, Any]:
    if queue["queuename"] == path:
        return queue
    for child in queue.get("children", []):
        if path == child["queuename"] or path.startswith(child["queuename"] + "."):
            return _find(child, path)
    raise KeyError(path)


# -- partitions -------------------------------------------------------------------------------------


def test_partitions(rich: Rich) -> None:
    [info] = decode(dao.partitions(rich.ctx), ListOf(PARTITION))
    assert info == {
        "clusterId": "rm-1",
        "name": "default",
        "capacity": {
            "capacity": {"memory": 6000, "vcore": 60000},
            "usedCapacity": {"memory": 2600, "vcore": 2100},
            "utilization": {"memory": 43, "vcore": 3},
        },
        "nodeSortingPolicy": {"type": "binpacking", "resourceWeights": {"memory": 2.0, "vcore": 1.5}},
        "preemptionEnabled": True,
        "quotaPreemptionEnabled": False,
        "totalNodes": 2,
        "applications": {"Completed": 1, "New": 1, "Rejected": 1, "Running": 2, "total": 5},
        "totalContainers": 3,
        "state": "Active",
        "lastStateTransitionTime": T0,
    }


def test_partitions_empty_and_fresh() -> None:
    world = World(register=False)
    try:
        assert decode(dao.partitions(world.context), ListOf(PARTITION)) == []
        world.register("partitions: [{name: default, queues: [{name: root}]}, {name: gpu, queues: [{name: root}]}]")
        infos = decode(dao.partitions(world.context), ListOf(PARTITION))
        # Nothing registered yet: zero values are left out, the always-emitted keys stay.
        assert [i["name"] for i in infos] == ["default", "gpu"]
        assert infos[0] == {
            "clusterId": "rm-1",
            "name": "default",
            "capacity": {},
            "nodeSortingPolicy": {"type": "fair", "resourceWeights": {"memory": 1.0, "vcore": 1.0}},
            "preemptionEnabled": True,
            "quotaPreemptionEnabled": False,
            "applications": {"total": 0},
            "state": "Active",
            "lastStateTransitionTime": world.clock.now_ns(),
        }
    finally:
        world.close()


# -- placement rules ---------------------------------------------------------------------------------


def test_placement_rules(rich: Rich) -> None:
    rules = decode(dao.placement_rules(rich.ctx, "default"), ListOf(RULE))
    assert rules == [
        {"name": "provided", "parameters": {"create": "false"}},
        {
            "name": "user",
            "parameters": {"create": "true"},
            "filter": {"type": "allow", "userList": ["alice", "bob"]},
            "parentRule": {"name": "fixed", "parameters": {"create": "false", "qualified": "false", "queue": "users"}},
        },
        {
            "name": "tag",
            "parameters": {"create": "true", "tagName": "namespace"},
            "filter": {"type": "deny", "groupExp": "^sys.*$"},
        },
        {"name": "recovery"},
    ]


def test_placement_rules_default_and_unknown_partition(world: World) -> None:
    assert decode(dao.placement_rules(world.context, "default"), ListOf(RULE)) == [
        {"name": "provided", "parameters": {"create": "false"}},
        {"name": "recovery"},
    ]
    with pytest.raises(dao.NotFound) as err:
        dao.placement_rules(world.context, "nope")
    assert (err.value.status, err.value.message) == (404, "Partition not found")
    # The qualified name (the RM id in brackets) names the same partition; another RM's is not found.
    assert dao.placement_rules(world.context, "[rm-1]default") == dao.placement_rules(world.context, "default")
    with pytest.raises(dao.NotFound):
        dao.placement_rules(world.context, "[rm-2]default")


# -- queues --------------------------------------------------------------------------------------------


def test_queues_tree(rich: Rich) -> None:
    root = decode(dao.queues(rich.ctx, "default"), QUEUE)
    assert root["queuename"] == "root"
    assert root["childNames"] == ["root.a", "root.b", "root.users"]
    assert [c["queuename"] for c in root["children"]] == root["childNames"]
    assert "parent" not in root
    assert root["maxResource"] == {"memory": 6000, "vcore": 60000}
    assert root["allocatedResource"] == {"memory": 2600, "vcore": 2100}
    assert root["absUsedCapacity"] == {"memory": 43, "vcore": 3}
    assert root["headroom"] == {"memory": 3400, "vcore": 57900}
    assert root["sortingPolicy"] == "fair"
    assert root["runningApps"] == 2
    # The highest pending priority below root: app-run's r2 (0) raised by root.a's offset (5).
    assert root["currentPriority"] == 5
    users = _find(root, "root.users")
    assert users["childNames"] == ["root.users.bob"]
    assert _find(root, "root.users.bob")["isManaged"] is False


def test_queue_leaf_with_properties(rich: Rich) -> None:
    leaf = decode(dao.queue(rich.ctx, "default", "root.a"), QUEUE)
    assert leaf == {
        "queuename": "root.a",
        "status": "Active",
        "partition": "default",
        "clusterId": "rm-1",
        "pendingResource": {"memory": 6000, "vcore": 1000},
        "maxResource": {"memory": 5000, "vcore": 50000},
        "guaranteedResource": {"memory": 1000, "vcore": 10000},
        "allocatedResource": {"memory": 1100, "vcore": 1100},
        "headroom": {"memory": 3400, "vcore": 48900},  # root: 6000 - 2600
        "isLeaf": True,
        "isManaged": True,
        "properties": {"preemption.delay": "1m30s", "priority.offset": "5"},
        "parent": "root",
        "absUsedCapacity": {"memory": 22, "vcore": 2},
        "maxRunningApps": 5,
        "runningApps": 1,
        "currentPriority": 5,
        "sortingPolicy": "fifo",
        "prioritySorting": True,
        "preemptionEnabled": True,
        "isPreemptionFence": False,
        "preemptionDelay": "1m30s",
        "quotaPreemptionDelay": "0s",
        "isPriorityFence": False,
        "priorityOffset": 5,
    }


def test_queue_fences_and_fair_sorting(rich: Rich) -> None:
    leaf = decode(dao.queue(rich.ctx, "default", "root.b"), QUEUE)
    assert leaf["sortingPolicy"] == "fair"
    assert leaf["isPriorityFence"] is True and leaf["isPreemptionFence"] is True
    assert leaf["preemptionEnabled"] is True
    assert leaf["preemptionDelay"] == "30s"
    # b2 is pending (reserved) with priority 0: a fenced queue shows its priority, offset 0.
    assert leaf["currentPriority"] == 0


def test_queue_without_pending_work_has_the_minimum_priority(rich: Rich) -> None:
    bob = decode(dao.queue(rich.ctx, "default", "root.users.bob"), QUEUE)
    assert bob["currentPriority"] == INT32_MIN
    assert bob["maxResource"] == {"memory": 1000, "vcore": 10000}
    assert bob["maxRunningApps"] == 3
    assert bob["properties"] == {"application.sort.policy": "fair"}
    assert "template" not in bob  # a dynamic leaf gets the template's settings, not the template


def test_queue_subtree_and_child_names(rich: Rich) -> None:
    plain = decode(dao.queue(rich.ctx, "default", "root.users"), QUEUE)
    assert "children" not in plain
    assert plain["childNames"] == ["root.users.bob"]
    assert plain["template"] == {
        "maxApplications": 3,
        "maxResource": {"memory": 1000, "vcore": 10000},
        "properties": {"application.sort.policy": "fair"},
    }
    full = decode(dao.queue(rich.ctx, "default", "root.users", subtree=True), QUEUE)
    assert [c["queuename"] for c in full["children"]] == ["root.users.bob"]
    assert {k: v for k, v in full.items() if k != "children"} == plain
    # A leaf's subtree has nothing to add.
    assert dao.queue(rich.ctx, "default", "root.a", subtree=True) == dao.queue(rich.ctx, "default", "root.a")


def test_queue_path_is_case_insensitive(rich: Rich) -> None:
    assert dao.queue(rich.ctx, "default", "ROOT.A")["queuename"] == "root.a"


def test_queue_errors(rich: Rich) -> None:
    cases = [
        (("nope", "root"), 404, "Partition not found"),
        (("nope", "root.a!"), 404, "Partition not found"),  # the partition is looked up first
        (("default", "root.a!"), 400, INVALID_QUEUE_NAME),
        (("default", "root..a"), 400, INVALID_QUEUE_NAME),
        (("default", "root." + "x" * 65), 400, INVALID_QUEUE_NAME),
        (("default", "root.zzz"), 404, "Queue not found"),
        (("default", "a"), 404, "Queue not found"),
        (("default", ""), 404, "Queue not found"),
    ]
    for args, status, message in cases:
        with pytest.raises(dao.DAOError) as err:
            dao.queue(rich.ctx, *args)
        assert (err.value.status, err.value.message) == (status, message), args
    with pytest.raises(dao.NotFound, match="Partition not found"):
        dao.queues(rich.ctx, "nope")
    # Names YuniKorn's queue regexp allows beyond alphanumerics are valid (only not found).
    with pytest.raises(dao.NotFound, match="Queue not found"):
        dao.queue(rich.ctx, "default", "root.@recovery@")
    assert INVALID_QUEUE_NAME == (
        "invalid queue name, max 64 characters consisting of alphanumeric characters and "
        "'-', '_', '#', '@', '/', ':' allowed"
    )


def test_queue_state_draining(world: World) -> None:
    world.add_app("app-1", "root.b")
    world.reload("""
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
""")
    leaf = decode(dao.queue(world.context, "default", "root.b"), QUEUE)
    assert leaf["status"] == "Draining"
    assert leaf["isLeaf"] is True and leaf["isManaged"] is True


def test_invalid_preemption_delay_falls_back_to_the_default() -> None:
    world = World("""
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
            properties: {preemption.delay: "-5s", priority.offset: "x"}
          - name: b
            properties: {preemption.delay: "1.5s", preemption.policy: disabled, application.sort.priority: disabled,
                         quota.preemption.delay: 2h}
""")
    try:
        a = decode(dao.queue(world.context, "default", "root.a"), QUEUE)
        assert a["preemptionDelay"] == "30s" and "priorityOffset" not in a
        # YuniKorn always shows quotaPreemptionDelay: "0s" unless the queue sets it.
        assert a["quotaPreemptionDelay"] == "0s"
        b = decode(dao.queue(world.context, "default", "root.b"), QUEUE)
        assert b["preemptionDelay"] == "1.5s"
        assert b["quotaPreemptionDelay"] == "2h0m0s"
        assert b["preemptionEnabled"] is False and b["prioritySorting"] is False
    finally:
        world.close()

