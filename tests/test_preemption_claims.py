"""Asks already preempting count as their queue's usage (issue 30), through the RM interface.

YuniKorn's preemption example (``deployments/examples/preemption`` in yunikorn-k8shim, its
queues.yaml below unchanged): ``root.sandbox`` may hold 1000m/1000Mi; below it the fenced
``tenants`` with ``tenant-normal`` guaranteed 300m/300Mi and ``tenant-low`` (offset -1000), and,
outside the fence, ``system.system-low``. Five pods of 100m/100Mi run in system-low and five in
tenant-low, so the sandbox is full; then ten such pods come to tenant-normal. YuniKorn's
documented outcome: tenant-normal preempts until it reaches its guarantee, low keeps 2, normal
runs 3, the pods outside the fence are never touched.

Each ask that preempts reserves a node until its victim is gone. YuniKorn's queue check reads the
ask queue's allocated resource only, so with several nodes free of reservations every further ask
passed it again and preempted too (all 5 low pods in a second, normal at 500m); pyscheduler counts
the asks still waiting for their victims (``claimed_by_preemptors``) and stops at the guarantee
whatever the number of nodes (pyscheduler.scheduler.preemption.guaranteed, module doc).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from rm_helpers import World, res

from pyscheduler.common.resources import Resource
from pyscheduler.scheduler.cycle import SchedulingCycle
from pyscheduler.scheduler.preemption.guaranteed import PREEMPTION_GUARANTEES_CHECK_FAILED, claimed_by_preemptors
from pyscheduler.si import messages as si

MI = 1024 * 1024
#: The example's ConfigMap (deployments/examples/preemption in yunikorn-k8shim), key queues.yaml.
EXAMPLE_QUEUES = yaml.safe_load((Path(__file__).resolve().parent / "data" / "yunikorn_examples" / "examples"
                                 / "preemption" / "yunikorn-configs.yaml").read_text())["data"]["queues.yaml"]
#: A pod of the example's jobs as the Kubernetes shim asks for it: 100m, 100Mi and one pod.
POD = {"vcore": 100, "memory": 100 * MI, "pods": 1}
MAY_PREEMPT = si.PreemptionPolicy(allow_preempt_self=True, allow_preempt_other=True)
JOBS = {"outside": "root.sandbox.system.system-low", "low": "root.sandbox.tenants.tenant-low",
        "normal": "root.sandbox.tenants.tenant-normal"}


def _example(nodes: int) -> tuple[World, SchedulingCycle]:
    """The example up to the normal job's pods: nodes of 8 cpu and 32Gi, the two low jobs
    running (5 pods each, started a second apart), the normal job's 10 pods asked and older than
    the 10 s delay."""
    w = World(EXAMPLE_QUEUES)
    for n in range(nodes):
        w.node(f"node-{n}", si.NodeAction.CREATE, res(vcore=8000, memory=32 * 1024 * MI, pods=110))
    cycle = SchedulingCycle(w.context)
    for job in ("outside", "low"):
        w.add_app(job, JOBS[job])
        for i in range(5):
            w.ask(f"{job}-{i}", job, res(**POD), preemption_policy=MAY_PREEMPT)
            assert len(cycle.run()) == 1
            w.advance(1.0)  # one second apart: the later ones are newer
    w.add_app("normal", JOBS["normal"])
    for i in range(10):
        w.ask(f"normal-{i}", "normal", res(**POD), preemption_policy=MAY_PREEMPT)
    w.advance(11.0)
    return w, cycle


@pytest.fixture(params=[1, 6], ids=["one-node", "six-nodes"])
def example(request: pytest.FixtureRequest) -> Iterator[tuple[World, SchedulingCycle, int]]:
    w, cycle = _example(request.param)
    yield w, cycle, request.param
    w.close()


def _running(w: World) -> dict[str, int]:
    return {job: len(w.app(job).allocations) for job in JOBS}


def _confirm(w: World, keys: list[str]) -> None:
    """The RM killed these victims: it confirms their release (no echo back)."""
    w.allocs(releases=tuple(w.release_msg("low", key, termination=si.TerminationType.PREEMPTED_BY_SCHEDULER)
                            for key in keys))


def test_the_example_stops_at_the_guarantee_however_many_nodes(example: tuple[World, SchedulingCycle, int]) -> None:
    w, cycle, nodes = example
    released: list[str] = []
    # Cycles 0.5 s apart for 2 minutes (the example's "wait 1~2 minutes"); the RM takes 3 s to
    # kill a victim, so on several nodes the next asks try while the first victims still run.
    killed_at: dict[str, float] = {}
    now = 0.0
    while now < 120.0:
        cycle.run()
        for r in w.rm.released[len(released):]:
            released.append(r.allocation_key)
            killed_at[r.allocation_key] = now + 3.0
        gone = [key for key, at in killed_at.items() if at <= now]
        if gone:
            _confirm(w, gone)
            for key in gone:
                del killed_at[key]
        w.advance(0.5)
        now += 0.5
    # YuniKorn's documented outcome: 5 outside the fence, 2 low, 3 normal (its 300m guarantee).
    assert sorted(released) == ["low-2", "low-3", "low-4"], released  # the newest first
    assert _running(w) == {"outside": 5, "low": 2, "normal": 3}
    assert w.queue(JOBS["normal"]).allocated == res(vcore=300, memory=300 * MI, pods=3)
    assert w.queue(JOBS["low"]).preempting == Resource()
    assert not w.partition().reservations.by_key
    # The other asks were told why they did not preempt: their queue is at its guarantee.
    waiting = [ask for ask in w.app("normal").asks.values()]
    assert len(waiting) == 7 and all(PREEMPTION_GUARANTEES_CHECK_FAILED in ask.alloc_log for ask in waiting)


def test_on_several_nodes_the_three_preempt_at_once_and_no_fourth() -> None:
    # Each of the first three asks preempts in its own cycle, on its own node, before any victim
    # is gone; the fourth counts the three waiting (300m claimed) and fails the queue check.
    w, cycle = _example(6)
    try:
        for _ in range(10):
            cycle.run()
        assert [r.allocation_key for r in w.rm.released] == ["low-4", "low-3", "low-2"]
        reservations = w.partition().reservations.by_key
        assert sorted(reservations) == ["normal-0", "normal-1", "normal-2"]
        assert len({r.node_id for r in reservations.values()}) == 3
        assert PREEMPTION_GUARANTEES_CHECK_FAILED in w.app("normal").asks["normal-3"].alloc_log
        # Long after, while the RM has not killed them yet: still no fourth victim.
        w.advance(40.0)
        for _ in range(5):
            cycle.run()
        assert len(w.rm.released) == 3
        _confirm(w, ["low-2", "low-3", "low-4"])
        decisions = [d for _ in range(5) for d in cycle.run()]
        assert sorted((d.ask.allocation_key, d.from_reservation) for d in decisions) == [
            ("normal-0", True), ("normal-1", True), ("normal-2", True)]
        assert _running(w) == {"outside": 5, "low": 2, "normal": 3}
    finally:
        w.close()


def test_a_claim_ends_with_its_reservation() -> None:
    # A preempting ask that goes away (its pod deleted) no longer claims room: once its victim is
    # gone, the next ask's attempt (15 s after its last check) may preempt for the guarantee.
    w, cycle = _example(6)
    try:
        for _ in range(10):
            cycle.run()
        assert len(w.rm.released) == 3
        w.allocs(releases=(w.release_msg("normal", "normal-0"),))  # the ask itself, not an allocation
        assert "normal-0" not in w.partition().reservations.by_key
        _confirm(w, ["low-2", "low-3", "low-4"])
        w.advance(16.0)
        for _ in range(10):
            cycle.run()
        w.advance(0.5)
        assert [r.allocation_key for r in w.rm.released] == ["low-4", "low-3", "low-2"]
        # Freed room (the three victims) now runs two preemptors and one more normal ask: 3.
        assert _running(w) == {"outside": 5, "low": 2, "normal": 3}
    finally:
        w.close()


def test_claims_are_counted_on_the_queues_they_share_with_the_ask() -> None:
    # A waiting preemptor in tenant-low counts on tenants, sandbox and root for an ask of
    # tenant-normal, not on tenant-normal; one in tenant-normal counts on all four.
    w, cycle = _example(6)
    try:
        cycle.run()  # normal-0 preempts low-4 and waits on its node
        part = w.partition()
        assert list(part.reservations.by_key) == ["normal-0"]
        low_ask = Resource({"vcore": 50, "memory": 50 * MI, "pods": 1})
        w.ask("low-extra", "low", low_ask, preemption_policy=MAY_PREEMPT)
        part.applications["low"].asks["low-extra"].triggered_preemption = True
        part.reservations.reserve(part.applications["low"].asks["low-extra"], part.nodes["node-5"],
                                  required=False, now=0.0)
        claimed = claimed_by_preemptors(w.queue(JOBS["normal"]), part.reservations.by_key.values(), part.applications)
        one = {"vcore": 100, "memory": 100 * MI, "pods": 1}
        both = {"vcore": 150, "memory": 150 * MI, "pods": 2}
        assert claimed == {"root.sandbox.tenants.tenant-normal": one, "root.sandbox.tenants": both,
                           "root.sandbox": both, "root": both}
    finally:
        w.close()
