"""Futile shapes (pyscheduler.scheduler.cycle_shapes), through the RM interface: within one
cycle, an ask shaped like one that found no node skips the node search (and the search for a
node to reserve), yet still reports why it waits and still gets its own preemption attempt; an
ask the RM's predicates refused is no twin to skip, and a reservation given up makes the cycle
look again.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from rm_helpers import World, res
from scheduling_helpers import config

from pyscheduler.scheduler.cycle import SchedulingCycle
from pyscheduler.scheduler.cycle_shapes import NO_AVOID, FutileShapes
from pyscheduler.si import messages as si

FAILED, NO_NODE_FITS = si.ContainerSchedulingState.FAILED, si.SchedulingReason.NO_NODE_FITS

CONFIG = config("""\
          - name: parent
            resources:
              guaranteed: {vcore: 10}
            queues:
              - name: leaf1
                properties: {preemption.delay: 1ms}
                resources:
                  guaranteed: {vcore: 1}
              - name: leaf2
                properties: {preemption.delay: 1ms}
                resources:
                  guaranteed: {vcore: 5}
""")


@pytest.fixture
def w() -> Iterator[World]:
    """Two nodes of 5 vcore, 3 used on each by app-1 in leaf1 (over its guarantee of 1): the
    cluster has room for an ask of 3 vcore (its queues' headroom), no node has."""
    world = World(CONFIG)
    world.add_node("node-1", memory=100, vcore=5000)
    world.add_node("node-2", memory=100, vcore=5000)
    world.add_app("app-1", "root.parent.leaf1")
    world.add_app("app-2", "root.parent.leaf2")
    world.ask("alloc-1", "app-1", res(vcore=3000), priority=2)
    world.ask("alloc-2", "app-1", res(vcore=3000), priority=0)
    cycle = SchedulingCycle(world.context)
    assert len(cycle.run()) == 1 and len(cycle.run()) == 1
    yield world
    world.close()


def test_identical_asks_that_fit_nowhere_skip_the_search_and_each_reports_why(w: World) -> None:
    for i in range(5):
        w.ask(f"wait-{i}", "app-2", res(vcore=3000))
        w.clock.advance(0.001)  # in key order
    w.advance(10.0)  # past the reservation delay: each ask also looks for a node to reserve
    cycle = SchedulingCycle(w.context)
    assert cycle.run() == []
    # wait-0 searched the nodes (none has room) and reserved node-1 (fits its capacity), wait-1
    # reserved node-2; the other asks skipped the node search, and from wait-3 on (wait-2 found
    # every node reserved) the search for a node to reserve as well.
    assert sorted(r.allocation_key for r in w.partition().reservations.by_key.values()) == ["wait-0", "wait-1"]
    assert cycle.futile_searches_skipped == 4 + 2
    states = {s.allocation_key: (s.state, s.code) for s in w.rm.scheduling_states}
    assert states == {f"wait-{i}": (FAILED, NO_NODE_FITS) for i in range(5)}, "every skipped ask still reports"


def test_a_twin_the_predicates_refused_is_not_skipped(w: World) -> None:
    w.release("app-1", "alloc-2")  # node-2 has room again
    w.rm.set_predicates(lambda key, node, allocate: "refused" if key == "first" else None)
    w.ask("first", "app-2", res(vcore=1000))
    w.clock.advance(0.001)
    w.ask("second", "app-2", res(vcore=1000))
    cycle = SchedulingCycle(w.context)
    decisions = cycle.run()
    # Same resource, but the RM told them apart: the second is placed in the same cycle.
    assert [(d.ask.allocation_key, d.node.node_id) for d in decisions] == [("second", "node-2")]
    assert cycle.futile_searches_skipped == 0


def test_the_eligible_twin_still_preempts(w: World) -> None:
    # Same shape; the first may not preempt (no allow_preempt_other), the second may.
    w.ask("plain", "app-2", res(vcore=3000))
    w.clock.advance(0.001)
    w.ask("preemptor", "app-2", res(vcore=3000),
          preemption_policy=si.PreemptionPolicy(allow_preempt_self=True, allow_preempt_other=True))
    w.advance(1.0)
    cycle = SchedulingCycle(w.context)
    assert cycle.run() == []
    assert cycle.futile_searches_skipped == 1, "the preemptor's node search was skipped"
    assert [r.allocation_key for r in w.rm.released] == ["alloc-2"]
    assert w.partition().applications["app-2"].asks["preemptor"].triggered_preemption


def test_a_reservation_given_up_makes_the_memo_forget(w: World) -> None:
    partition = w.partition()
    w.ask("holder", "app-2", res(vcore=3000))
    futile = FutileShapes(partition.reservations)
    shape = (res(vcore=3000), NO_AVOID)
    futile.found_no_node(shape)
    futile.found_no_reservation(shape)
    holder = partition.applications["app-2"].asks["holder"]
    # A new reservation only hides a node: what was futile stays so.
    partition.reservations.reserve(holder, partition.nodes["node-1"], required=False, now=0.0)
    assert futile.no_node(shape) and futile.no_reservation(shape)
    # Giving one up shows a node again: look again.
    partition.reservations.unreserve("holder", partition.nodes["node-1"])
    assert not futile.no_node(shape) and not futile.no_reservation(shape)


def test_no_skip_across_cycles(w: World) -> None:
    w.ask("a", "app-2", res(vcore=3000))
    w.clock.advance(0.001)
    w.ask("b", "app-2", res(vcore=3000))
    cycle = SchedulingCycle(w.context)
    assert cycle.run() == [] and cycle.futile_searches_skipped == 1
    w.release("app-1", "alloc-2")  # room between cycles: the next cycle searches again
    decisions = cycle.run()
    assert [d.ask.allocation_key for d in decisions] == ["a"]
