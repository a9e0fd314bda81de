"""Node UPDATE through the RM interface: the RM's attributes replaced, the reported layer (the
node reporter manager's pyscheduler extension) and reported occupied resources; everything
checked before anything applies."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from rm_helpers import World, res

from pyscheduler.common.resources import Resource
from pyscheduler.dao import node as node_dao
from pyscheduler.objects.node import NODE_PARTITION
from pyscheduler.si import messages as si


@pytest.fixture
def w() -> Iterator[World]:
    world = World()
    world.add_node("n1", memory=1000, vcore=100, **{si.HOST_NAME: "host-1", "zone": "rm-zone"})
    yield world
    world.close()


def update(world: World, **fields: object) -> None:
    world.nodes(si.NodeInfo(node_id="n1", action=si.NodeAction.UPDATE, **fields))  # type: ignore[arg-type]


def test_reported_attributes_are_a_layer_under_the_rm_s(w: World) -> None:
    update(w, reported_attributes={"rack": "r7", "zone": "reported-zone"})
    node = w.partition().nodes["n1"]
    assert node.attributes == {si.HOST_NAME: "host-1", "zone": "rm-zone", "rack": "r7"}
    assert node_dao(w.context, "default", "n1")["attributes"]["rack"] == "r7"
    # A capacity-only update leaves both layers alone.
    update(w, schedulable_resource=res(memory=2000, vcore=100))
    assert node.attributes["rack"] == "r7" and node.total == Resource({"memory": 2000, "vcore": 100})
    # An empty layer removes every reported attribute.
    update(w, reported_attributes={})
    assert node.attributes == {si.HOST_NAME: "host-1", "zone": "rm-zone"}


def test_the_rm_s_attributes_are_replaced_and_the_reported_layer_stays(w: World) -> None:
    update(w, reported_attributes={"rack": "r7"})
    update(w, attributes={si.HOST_NAME: "host-1b"})
    assert w.partition().nodes["n1"].attributes == {si.HOST_NAME: "host-1b", "rack": "r7"}


def test_reported_occupied_resources_shrink_what_is_available(w: World) -> None:
    update(w, reported_occupied=res(memory=300, vcore=10))
    node = w.partition().nodes["n1"]
    assert node.available == Resource({"memory": 700, "vcore": 90})


def test_a_bad_update_changes_nothing(w: World) -> None:
    before = dict(w.partition().nodes["n1"].attributes)
    update(w, attributes={NODE_PARTITION: "other"}, schedulable_resource=res(memory=5000, vcore=5))
    assert "cannot move from partition" in w.rm.rejected_nodes["n1"]
    node = w.partition().nodes["n1"]
    assert node.attributes == before and node.total == Resource({"memory": 1000, "vcore": 100})
    update(w, reported_occupied=Resource({"memory": -1}))
    assert "negative" in w.rm.rejected_nodes["n1"]
    assert node.available == Resource({"memory": 1000, "vcore": 100})
