"""Required-node (daemon set) preemption through the RM interface (issue 13; YuniKorn's
TestPreemptionForRequiredNodeReservedAlloc, ...MultipleAttemptsAvoided, TestRequiredNodePreemption
(Failed), required_node_preemptor_test; shared/spec/yunikorn/preemption.md §1.3)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from rm_helpers import World, res
from scheduling_helpers import config

from pyscheduler.common.resources import Resource
from pyscheduler.objects.allocation import Allocation
from pyscheduler.scheduler.cycle import REQUIRED_NODE_PREEMPTION_RELEASE, SchedulingCycle
from pyscheduler.scheduler.preemption.ordering import sort_for_required_node as sort_allocations
from pyscheduler.scheduler.preemption.required_node import NO_VICTIM_FOR_REQUIRED_NODE
from pyscheduler.si import messages as si

CONFIG = config("""\
          - name: a
          - name: b
""")


@pytest.fixture
def w() -> Iterator[World]:
    world = World(CONFIG)
    world.add_node("node-1", memory=100, vcore=8000)
    world.add_node("node-2", memory=100, vcore=8000)
    world.add_app("app-1", "root.a")
    world.add_app("app-2", "root.b")
    world.ask("alloc-1", "app-1", res(vcore=8000))
    world.commit("app-1", "alloc-1", "node-1")
    yield world
    world.close()


def daemon_ask(w: World, priority: int = 0) -> None:
    # The partition switch and allow_preempt_other do not matter for a daemon set's ask.
    w.partition().preemption_enabled = False
    w.ask("ds-1", "app-2", res(vcore=8000), priority=priority, allocation_tags={si.TAG_REQUIRED_NODE: "node-1"})


def test_a_daemon_set_ask_frees_its_node_once_and_runs_there(w: World) -> None:
    daemon_ask(w)
    cycle = SchedulingCycle(w.context)
    assert cycle.run() == []
    assert w.partition().reservations.by_key["ds-1"].node_id == "node-1"
    assert cycle.run() == []
    assert [(r.allocation_key, r.termination_type, r.message) for r in w.rm.released] == [
        ("alloc-1", si.TerminationType.PREEMPTED_BY_SCHEDULER, REQUIRED_NODE_PREEMPTION_RELEASE + "ds-1")]
    # The release names its preemptor, the daemon set's ask.
    assert [(r.preemptor_application_id, r.preemptor_allocation_key) for r in w.rm.released] == [("app-2", "ds-1")]
    assert w.partition().applications["app-1"].allocations["alloc-1"].preempted
    assert w.queue("root.a").preempting == res(vcore=8000)
    for _ in range(4):  # more reserved cycles: no second release
        assert cycle.run() == []
    assert len(w.rm.released) == 1
    w.release("app-1", "alloc-1", termination=si.TerminationType.PREEMPTED_BY_SCHEDULER)
    assert [(d.ask.allocation_key, d.node.node_id) for d in cycle.run()] == [("ds-1", "node-1")]
    assert len(w.partition().reservations) == 0 and w.queue("root.a").preempting == res()


def test_a_higher_priority_allocation_is_not_a_victim(w: World) -> None:
    w.partition().applications["app-1"].allocations["alloc-1"].priority = 1000
    daemon_ask(w, priority=0)
    cycle = SchedulingCycle(w.context)
    cycle.run()
    cycle.run()
    assert w.rm.released == []
    ask = w.partition().applications["app-2"].asks["ds-1"]
    assert NO_VICTIM_FOR_REQUIRED_NODE in ask.alloc_log and not ask.triggered_preemption


def _alloc(key: str, *, priority: int = 0, created: int = 0, vcore: int = 1, self_ok: bool = True,
           originator: bool = False) -> Allocation:
    return Allocation(key, "app", Resource({"vcore": vcore}), priority=priority, create_time_ns=created,
                      allow_preempt_self=self_ok, originator=originator)


def test_victims_are_sorted_as_yunikorn_sorts_them() -> None:
    allocations = [
        _alloc("originator", originator=True),
        _alloc("opted-out", self_ok=False),
        _alloc("high", priority=5),
        _alloc("old", created=1),
        _alloc("new-big", created=2, vcore=3),
        _alloc("new-small", created=2, vcore=2),
    ]
    assert [a.allocation_key for a in sort_allocations(allocations)] == [
        "new-small", "new-big", "old", "high", "opted-out", "originator"]
