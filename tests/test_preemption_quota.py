"""Quota-change preemption through the RM interface (issue 13; YuniKorn's
TestUpdateAllocationWithQuotaPreemption, TestTriggerQuotaPreemption, the parent split and the
decided victim order; shared/spec/yunikorn/preemption.md §1.4)."""

from __future__ import annotations

import pytest
from rm_helpers import C, D, T, World, res
from scheduling_helpers import config as queues_yaml

from pyscheduler.scheduler.cycle import SchedulingCycle
from pyscheduler.scheduler.preemption.quota import QUOTA_RELEASE
from pyscheduler.si import messages as si


def quota_switch(enabled: bool = True) -> str:
    """The partition's preemption section, for scheduling_helpers.config's partition_extra."""
    return f"""    preemption:
      quotapreemptionenabled: {str(enabled).lower()}
"""


def config(max_vcore: int, *, delay: str = "1s", enabled: bool = True) -> str:
    return queues_yaml(f"""\
          - name: leaf
            properties: {{quota.preemption.delay: {delay}}}
            resources:
              max: {{vcore: {max_vcore}}}
""", partition_extra=quota_switch(enabled))


def filled(**kwargs: object) -> World:
    """Five allocations of 2 cores in root.leaf (max 12 cores), one of them grown to 3: 11."""
    w = World(config(12, **kwargs))  # type: ignore[arg-type]
    w.add_node("node-1", memory=100, vcore=100_000)
    w.add_app("app-1", "root.leaf")
    cycle = SchedulingCycle(w.context)
    for i in range(5):
        w.ask(f"a-{i}", "app-1", res(vcore=3000 if i == 4 else 2000))
        assert len(cycle.run()) == 1
        w.advance(1.0)
    return w


@pytest.mark.parametrize("max_vcore,delay,enabled,expected", [
    (5, "1s", True, 3),      # 11 cores, max 5: 6 to release, greedily 2+2+2 (the 3 does not fit after)
    (5, "0s", True, 0),      # no delay: never
    (12, "1s", True, 0),     # max above usage: nothing to do
    (5, "1s", False, 0),     # the partition's switch is off
])
def test_a_lowered_max_releases_enough_after_the_delay(max_vcore: int, delay: str, enabled: bool, expected: int) -> None:
    w = filled(delay=delay, enabled=enabled)
    try:
        w.reload(config(max_vcore, delay=delay, enabled=enabled))
        w.advance(0.5)
        assert w.rm.released == [], "not before the delay"
        mark = w.mark()
        w.advance(0.7)
        released = w.rm.released
        assert len(released) == expected
        if expected:
            assert {r.termination_type for r in released} == {si.TerminationType.PREEMPTED_BY_SCHEDULER}
            assert {r.message for r in released} == {QUOTA_RELEASE + "root.leaf"}
            # Quota enforcement, not an ask, preempts: the releases name no preemptor.
            assert {(r.preemptor_application_id, r.preemptor_allocation_key) for r in released} == {("", "")}
            assert w.queue("root.leaf").preempting == res(vcore=6000)
            summary = [e for e in w.events(mark) if e[0] == T.QUEUE and e[2] == D.QUEUE_PREEMPTION]
            assert [(e[1], e[3], e[5]) for e in summary] == [(C.SET, "root.leaf",
                "Quota Preemption results summary: preemptable resources: map[vcore:6000], "
                "claimed resources: map[vcore:6000], selected victims: 3, preempted victims: 3")]
            # One shot: nothing more on later ticks, and the confirmations are not echoed.
            w.advance(5.0)
            assert len(w.rm.released) == expected
            for r in released:
                w.release("app-1", r.allocation_key, termination=si.TerminationType.PREEMPTED_BY_SCHEDULER)
            assert len(w.rm.released) == expected and w.queue("root.leaf").preempting == res()
    finally:
        w.close()


def test_the_smallest_victims_that_fit_go_first() -> None:
    w = filled()
    try:
        w.reload(config(9))
        w.advance(1.5)
        # 2 cores over: one 2-core allocation (the 3-core a-4 does not fit in 2); within the
        # hour ages tie, so the smaller share first, then the order of the allocations.
        assert [r.allocation_key for r in w.rm.released] == ["a-0"]
    finally:
        w.close()


def test_originators_and_opted_out_allocations_go_last() -> None:
    # Decided (issue 13): the protective order of the other preemptors, not YuniKorn's inverse.
    from pyscheduler.objects.allocation import Allocation
    from pyscheduler.common.resources import Resource
    from pyscheduler.scheduler.preemption.ordering import sort_for_quota as sort_victims

    def alloc(key: str, **kwargs: object) -> Allocation:
        return Allocation(key, "app", Resource({"vcore": 2000}), **kwargs)  # type: ignore[arg-type]

    order = sort_victims([alloc("driver", originator=True), alloc("opted-out", allow_preempt_self=False),
                          alloc("high", priority=5), alloc("plain")], Resource({"vcore": 10000}), Resource({"vcore": 4000}))
    assert [a.allocation_key for a in order] == ["plain", "high", "opted-out", "driver"]


def parent_config(max_vcore: int) -> str:
    return queues_yaml(f"""\
          - name: parent
            properties: {{quota.preemption.delay: 1s}}
            resources:
              max: {{vcore: {max_vcore}}}
            queues:
              - name: c1
                resources:
                  guaranteed: {{vcore: 2}}
              - name: c2
""", partition_extra=quota_switch())


def test_a_parent_splits_the_amount_among_children_over_their_guarantees() -> None:
    # c1 uses 6 cores (guaranteed 2: 4 over), c2 uses 4 (no guarantee: all 4 count); the
    # parent's max goes from 12 to 6: 4 over, split 4:4, so 2 cores (one allocation) from each.
    w = World(parent_config(12))
    try:
        w.add_node("node-1", memory=100, vcore=100_000)
        w.add_app("app-1", "root.parent.c1")
        w.add_app("app-2", "root.parent.c2")
        cycle = SchedulingCycle(w.context)
        for i in range(3):
            w.ask(f"c1-{i}", "app-1", res(vcore=2000))
        for i in range(2):
            w.ask(f"c2-{i}", "app-2", res(vcore=2000))
        for _ in range(5):
            assert len(cycle.run()) == 1
        w.reload(parent_config(6))
        mark = w.mark()
        w.advance(1.5)
        released = w.rm.released
        assert sorted(r.application_id for r in released) == ["app-1", "app-2"]
        assert {r.message for r in released} == {QUOTA_RELEASE + "root.parent.c1", QUOTA_RELEASE + "root.parent.c2"}
        summary = [e[5] for e in w.events(mark) if e[0] == T.QUEUE and e[2] == D.QUEUE_PREEMPTION and e[3] == "root.parent"]
        assert summary == ["Quota Preemption results summary: preemptable resources: map[vcore:4000], "
                           "claimed resources: map[vcore:4000], selected victims: 2, preempted victims: 2"]
    finally:
        w.close()


@pytest.mark.parametrize("enabled", [True, False])
def test_allocations_the_rm_reports_over_the_max_arm_quota_preemption(enabled: bool) -> None:
    # YuniKorn's IncAllocatedResource rule: recovered allocations are counted past the max and
    # arm the queue (now + delay) when the partition's switch is on; none is scheduled here.
    w = World(config(5, enabled=enabled))
    try:
        w.add_node("node-1", memory=100, vcore=100_000)
        w.add_app("app-1", "root.leaf")
        w.allocs(*(w.alloc_msg(f"r-{i}", "app-1", res(vcore=2000), node_id="node-1") for i in range(4)))
        leaf = w.queue("root.leaf")
        assert leaf.allocated == res(vcore=8000)
        assert bool(leaf.quota_preemption_start_ns) is enabled
        w.advance(0.5)
        assert w.rm.released == [], "not before the delay"
        w.advance(0.7)
        released = w.rm.released
        if not enabled:
            assert released == []
            return
        # 3 cores over: greedily the 2-core victims that fit in what is left, one of them.
        assert [(r.termination_type, r.message) for r in released] == [
            (si.TerminationType.PREEMPTED_BY_SCHEDULER, QUOTA_RELEASE + "root.leaf")]
        assert leaf.quota_preemption_start_ns == 0, "fired once, disarmed"
    finally:
        w.close()


def test_an_allocation_grown_by_the_rm_past_the_max_arms_quota_preemption() -> None:
    w = World(config(5))
    try:
        w.add_node("node-1", memory=100, vcore=100_000)
        w.add_app("app-1", "root.leaf")
        w.allocs(w.alloc_msg("r-0", "app-1", res(vcore=2000), node_id="node-1"),
                 w.alloc_msg("r-1", "app-1", res(vcore=2000), node_id="node-1"))
        leaf = w.queue("root.leaf")
        assert leaf.quota_preemption_start_ns == 0, "4 cores: within the max of 5"
        w.allocs(w.alloc_msg("r-1", "app-1", res(vcore=5000), node_id="node-1"))  # an in-place resize
        assert leaf.allocated == res(vcore=7000) and leaf.quota_preemption_start_ns > 0
        w.advance(1.2)
        # 2 cores over: the 2-core allocation fits what is to be released, the 5-core one not.
        assert [r.allocation_key for r in w.rm.released] == ["r-0"]
    finally:
        w.close()



@pytest.mark.parametrize("steps,quiet_until,fired_by", [
    # TestQueue_setPreemptionTime: the start is set once, when the max first drops below the
    # usage; lowering it again 2 s later keeps that start (delay 4 s: fires at t + 4).
    pytest.param([(8, "4s", 2.0), (5, "4s", 0.0)], 1.8, 2.3, id="a further lowering keeps the start"),
    # TestOverrideAndResetPreemptionTime: armed at t with 4 s, the delay set to 2 s at t + 1
    # moves the start to t + 2 (not to t + 1 + 2).
    pytest.param([(5, "4s", 1.0), (5, "2s", 0.0)], 0.8, 1.3, id="a changed delay shifts the start"),
    # A max raised above the usage clears the start; lowered again, the delay counts from then.
    pytest.param([(5, "4s", 1.0), (12, "4s", 1.0), (5, "4s", 0.0)], 3.8, 4.3, id="back within the max disarms"),
])
def test_quota_preemption_arming(steps: list[tuple[int, str, float]], quiet_until: float, fired_by: float) -> None:
    """YuniKorn's quota arming through config reloads: after the steps (max, delay, seconds
    waited after the reload), nothing is released for ``quiet_until`` seconds and the quota
    release has come by ``fired_by``."""
    w = filled(delay="4s")
    try:
        for max_vcore, delay, wait in steps:
            w.reload(config(max_vcore, delay=delay))
            w.advance(wait)
        w.advance(quiet_until)
        assert w.rm.released == [], f"released before {quiet_until} s"
        w.advance(fired_by - quiet_until)
        assert len(w.rm.released) == 3
    finally:
        w.close()
