"""The query functions over several RMs (clusters) in one context, each with a ``default``
partition (pyscheduler.dao._common.find_partition): the qualified name ``[clusterId]name``
always names one partition, a plain name only when one RM has it (a 400 naming the qualified
names otherwise, never silently the first), and the answers carry each partition's cluster.
The same over HTTP, with real gunicorn: tests/web/test_rest_several_clusters.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pyscheduler import dao
from pyscheduler.dao.node_snapshots import node_snapshot
from pyscheduler.si import messages as si
from pyscheduler.testing import RecordingRM
from rm_helpers import BASIC, World, res

#: West has a second partition that only it has.
WEST = BASIC + """\
  - name: gpu
    queues:
      - name: root
        submitacl: "*"
"""


@pytest.fixture
def twins() -> Iterator[World]:
    """RM ``east`` (the world's) and RM ``west`` on one context; a node each, one shared id."""
    world = World(rm_id="east")
    world.proxy.register_resource_manager(
        si.RegisterResourceManagerRequest(rm_id="west", policy_group="queues", config=WEST),
        RecordingRM(timeout=2.0))
    world.add_node("east-node", memory=1000)
    world.add_node("twin", memory=1000)
    world.proxy.update_node(si.NodeRequest(rm_id="west", nodes=(
        si.NodeInfo(node_id="twin", action=si.NodeAction.CREATE, schedulable_resource=res(memory=3000, vcore=100)),
    )))
    world.add_app("east-app", queue="root.a")
    yield world
    world.close()


def test_a_plain_name_two_rms_have_is_a_400_naming_both(twins: World) -> None:
    queries = (
        dao.nodes, dao.queues, dao.placement_rules, lambda ctx, p: dao.node(ctx, p, "twin"),
        lambda ctx, p: dao.applications_by_state(ctx, p, "active"), lambda ctx, p: dao.application(ctx, p, "east-app"),
        lambda ctx, p: dao.role_history(ctx, p, "any"), lambda ctx, p: node_snapshot(ctx, p, "twin"),
    )
    for query in queries:
        with pytest.raises(dao.BadRequest) as err:
            query(twins.context, "default")
        assert err.value.status == 400
        assert err.value.message == "Partition default is ambiguous: use one of [east]default, [west]default"


def test_the_qualified_name_names_each_rms_partition(twins: World) -> None:
    assert dao.node(twins.context, "[east]default", "twin")["capacity"]["memory"] == 1000
    assert dao.node(twins.context, "[west]default", "twin")["capacity"]["memory"] == 3000
    assert [n["nodeID"] for n in dao.nodes(twins.context, "[east]default")] == ["east-node", "twin"]
    assert [n["nodeID"] for n in dao.nodes(twins.context, "[west]default")] == ["twin"]
    (app,) = dao.applications_by_state(twins.context, "[east]default", "active")
    assert (app["applicationID"], app["partition"], app["clusterId"]) == ("east-app", "default", "east")
    assert dao.applications_by_state(twins.context, "[west]default", "active") == []
    west_root = dao.queues(twins.context, "[west]default")
    assert (west_root["partition"], west_root["clusterId"]) == ("default", "west")
    snapshot = node_snapshot(twins.context, "[west]default", "twin")
    assert (snapshot.partition, snapshot.rm_id, snapshot.capacity["memory"]) == ("default", "west", 3000)


def test_a_plain_name_one_rm_has_still_names_it(twins: World) -> None:
    assert dao.queues(twins.context, "gpu")["clusterId"] == "west"
    assert dao.placement_rules(twins.context, "gpu") == dao.placement_rules(twins.context, "[west]gpu")


@pytest.mark.parametrize(
    "name", ["nope", "[north]default", "[east]gpu", "[east]", "[east", "east]default", "[]default"])
def test_names_no_partition_has_are_yunikorns_404(twins: World, name: str) -> None:
    with pytest.raises(dao.NotFound) as err:
        dao.queues(twins.context, name)
    assert (err.value.status, err.value.message) == (404, "Partition not found")


def test_every_partition_is_listed_with_its_cluster(twins: World) -> None:
    assert [(p["clusterId"], p["name"]) for p in dao.partitions(twins.context)] == [
        ("east", "default"), ("west", "default"), ("west", "gpu")]
    assert [(c["clusterId"], c["partition"]) for c in dao.clusters(twins.context)] == [
        ("east", "default"), ("west", "default"), ("west", "gpu")]
