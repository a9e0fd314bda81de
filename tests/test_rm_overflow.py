"""Resources near int64 max from an RM: every update is applied whole, never half.

Resource arithmetic saturates at the int64 bounds, as YuniKorn's does (``addVal``: "resource
calculation wrapped: returned maximum value possible"), so a sum that overflows cannot fail an
update half-way. Quantities outside int64 are refused when the message is built. Unlike
YuniKorn, the RM hears of a clamped total (issue 31): an event naming the type, the field and
the object, through ``send_event``, before the update returns.
"""

from __future__ import annotations

import logging

import pytest
from rm_helpers import BASIC, World, check_invariants, res

from pyscheduler import dao
from pyscheduler.common.resources import Resource, ResourceError
from pyscheduler.scheduler.health import check_health
from pyscheduler.si import messages as si
from pyscheduler.si.events import EventChangeDetail, EventChangeType, EventRecord, EventRecordType

INT64_MAX = (1 << 63) - 1
INT64_MIN = -(1 << 63)
NEAR = INT64_MAX - 10


def test_resource_arithmetic_saturates() -> None:
    big = Resource({"memory": NEAR})
    assert (big + big)["memory"] == INT64_MAX
    assert (Resource({"memory": INT64_MIN + 5}) - big)["memory"] == INT64_MIN
    assert (-Resource({"memory": INT64_MIN}))["memory"] == INT64_MAX
    assert big.multiply(3)["memory"] == INT64_MAX
    assert (big + {"memory": 5})["memory"] == NEAR + 5  # in range: exact
    with pytest.raises(ResourceError, match="outside the int64 range"):
        Resource({"memory": INT64_MAX + 1})  # what an RM sends is checked


def _consistent(world: World) -> None:
    check_invariants(world.context)
    result = check_health(world.context, None)
    assert result.healthy, result.explain()


def test_a_second_huge_node_is_added_whole() -> None:
    world = World()
    world.add_node("n1", memory=NEAR)
    world.add_node("n2", memory=NEAR)
    assert world.rm.rejected_nodes == {}  # nothing refused
    partition = world.partition()
    assert set(partition.nodes) == {"n1", "n2"}
    assert partition.total["memory"] == INT64_MAX  # saturated, not a failure
    assert [n["nodeID"] for n in dao.nodes(world.context, "default")] == ["n1", "n2"]
    assert dao.partitions(world.context)[0]["capacity"]["capacity"]["memory"] == INT64_MAX
    _consistent(world)


def test_a_capacity_update_near_the_bound_is_applied() -> None:
    world = World()
    world.add_node("n1", memory=NEAR)
    world.add_node("n2", memory=100)
    world.node("n2", si.NodeAction.UPDATE, resource={"memory": NEAR, "vcore": 10})
    partition = world.partition()
    assert partition.nodes["n2"].total["memory"] == NEAR
    assert partition.total["memory"] == INT64_MAX
    _consistent(world)


def test_asks_and_recovered_allocations_near_the_bound_are_applied_whole() -> None:
    world = World()
    world.add_node("n1", memory=NEAR, vcore=NEAR)
    world.add_node("n2", memory=NEAR, vcore=NEAR)
    world.add_app("app-1", "root.a")
    # Two recovered allocations whose sum overflows the queue's and the app's usage.
    world.allocs(
        world.alloc_msg("r1", "app-1", {"memory": NEAR}, node_id="n1"),
        world.alloc_msg("r2", "app-1", {"memory": NEAR}, node_id="n2"),
    )
    app = world.app("app-1")
    assert set(app.allocations) == {"r1", "r2"}
    assert app.allocated["memory"] == INT64_MAX
    assert world.queue("root.a").allocated["memory"] == INT64_MAX
    # Two asks whose pending sum overflows.
    world.ask("k1", "app-1", {"memory": NEAR})
    world.ask("k2", "app-1", {"memory": NEAR})
    assert set(app.asks) >= {"k1", "k2"}
    assert app.pending["memory"] == INT64_MAX
    assert world.queue("root.a").pending["memory"] == INT64_MAX
    body = dao.application(world.context, "default", "app-1")
    assert body["pendingResource"]["memory"] == INT64_MAX
    assert {r["allocationKey"] for r in body["requests"]} == {"k1", "k2"}
    check_invariants(world.context)


def test_an_out_of_range_quantity_is_refused_and_changes_nothing() -> None:
    world = World()
    world.add_node("n1", memory=1000)
    before = world.partition().total
    with pytest.raises(ResourceError):
        si.NodeInfo(node_id="n2", action=si.NodeAction.CREATE, schedulable_resource={"memory": INT64_MAX + 1})
    assert world.partition().total == before and set(world.partition().nodes) == {"n1"}
    assert res(memory=1000)["memory"] == before["memory"]


# -- the RM hears that its numbers were clamped (issue 31) ------------------------------------------


def _clamped_events(world: World) -> list[EventRecord]:
    return [e for e in world.rm.events if "took a total past the int64" in e.message]


def test_the_rm_hears_which_node_field_was_clamped() -> None:
    world = World()
    world.add_node("n1", memory=NEAR)
    assert _clamped_events(world) == []  # in range: nothing to tell
    world.add_node("n2", memory=NEAR)
    [event] = _clamped_events(world)  # heard before the update returned
    assert (event.type, event.object_id, event.change_type, event.change_detail) == (
        EventRecordType.NODE, "n2", EventChangeType.NONE, EventChangeDetail.DETAILS_NONE)
    assert "'memory'" in event.message and "schedulable_resource" in event.message
    assert f"clamped to {INT64_MAX}" in event.message
    assert dict(event.resource) == {"memory": NEAR}
    assert world.partition().total["memory"] == INT64_MAX  # applied whole, as before


def test_the_rm_hears_which_ask_was_clamped_naming_its_application() -> None:
    world = World()
    world.add_node("n1", memory=1000)
    world.add_app("app-1", "root.a")
    world.ask("k1", "app-1", {"memory": NEAR})
    world.ask("k2", "app-1", {"memory": NEAR, "vcore": 1})
    [event] = _clamped_events(world)
    assert (event.type, event.object_id, event.reference_id) == (EventRecordType.REQUEST, "k2", "app-1")
    assert "ask 'k2'" in event.message and "resource_per_alloc" in event.message
    assert set(world.app("app-1").asks) >= {"k1", "k2"}


def test_of_equal_carriers_in_one_update_the_last_is_named() -> None:
    world = World()
    world.add_node("n1", memory=NEAR)
    world.add_node("n2", memory=NEAR)
    world.add_app("app-1", "root.a")
    world.rm.clear()
    world.allocs(
        world.alloc_msg("r1", "app-1", {"memory": NEAR}, node_id="n1"),
        world.alloc_msg("r2", "app-1", {"memory": NEAR}, node_id="n2"),
    )
    [event] = _clamped_events(world)
    assert event.object_id == "r2" and "allocation 'r2'" in event.message


def test_the_rm_hears_of_clamping_whatever_the_log_level(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("pyscheduler")
    level = logger.level
    logger.setLevel(logging.ERROR)  # saturation warnings silenced
    try:
        world = World()
        world.add_node("n1", memory=NEAR)
        with caplog.at_level(logging.ERROR, logger="pyscheduler"):
            world.add_node("n2", memory=NEAR)
        assert [e.object_id for e in _clamped_events(world)] == ["n2"]
        assert not [r for r in caplog.records if "wrapped" in r.getMessage()]  # and they stay silenced
    finally:
        logger.setLevel(level)


def test_a_failing_send_event_does_not_fail_the_update() -> None:
    world = World(register=False)
    calls: list[object] = []

    def broken(events: object) -> None:
        calls.append(events)
        raise RuntimeError("RM down")

    # Before registering: the core binds the RM's methods once, at registration.
    world.rm.send_event = broken  # type: ignore[method-assign]
    world.register(BASIC)
    world.add_node("n1", memory=NEAR)
    world.add_node("n2", memory=NEAR)
    assert set(world.partition().nodes) == {"n1", "n2"}
    assert calls, "the clamped total was sent to the broken send_event"
