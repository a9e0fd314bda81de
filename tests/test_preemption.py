"""Guaranteed-share preemption through the RM interface (issue 13; YuniKorn's
partition_test::TestPreemption and the preconditions, shared/spec/yunikorn/preemption.md §1.2).

The scenario: parent max 10 vcore; leaf1 and leaf2 guaranteed 5 vcore each, preemption.delay
1ms; two nodes of 10 vcore. app1 in leaf1 holds alloc-1 (priority 2) and alloc-2 (priority 1),
5 vcore each, so the parent is full; app2 in leaf2 asks 5 vcore at priority 1. After the delay
the cycle preempts alloc-2 (alloc-1's priority is above the ask's), leaf1 is preempting 5, the
ask is reserved; the RM confirms the release, and the ask is allocated on the reserved node.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from rm_helpers import C, D, T, World, res
from scheduling_helpers import config

from pyscheduler.scheduler.cycle import MAX_PREEMPTIONS_PER_LEAF, PREEMPTION_RELEASE, SchedulingCycle
from pyscheduler.scheduler.preemption.guaranteed import (
    PREEMPTION_DOES_NOT_HELP,
    PREEMPTION_GUARANTEES_CHECK_FAILED,
    PREEMPTION_MAX_ATTEMPTS_EXHAUSTED,
)
from pyscheduler.si import messages as si

CONFIG = config("""\
          - name: parent
            resources:
              max: {vcore: 10}
            queues:
              - name: leaf1
                properties: {preemption.delay: 1ms}
                resources:
                  guaranteed: {vcore: 5}
              - name: leaf2
                properties: {preemption.delay: 1ms}
                resources:
                  guaranteed: {vcore: 5}
""")


@pytest.fixture
def w() -> Iterator[World]:
    world = World(CONFIG)
    world.add_node("node-1", memory=100, vcore=10000)
    world.add_node("node-2", memory=100, vcore=10000)
    world.add_app("app-1", "root.parent.leaf1")
    world.add_app("app-2", "root.parent.leaf2")
    world.ask("alloc-1", "app-1", res(vcore=5000), priority=2)
    world.ask("alloc-2", "app-1", res(vcore=5000), priority=1)
    cycle = SchedulingCycle(world.context)
    assert len(cycle.run()) == 1 and len(cycle.run()) == 1
    yield world
    world.close()


def preemptor_ask(w: World, **kwargs: object) -> None:
    w.ask("alloc-3", "app-2", res(vcore=5000), priority=1,
          preemption_policy=si.PreemptionPolicy(allow_preempt_self=True, allow_preempt_other=True), **kwargs)


def test_the_lower_priority_allocation_is_preempted_and_the_ask_placed_after_the_release(w: World) -> None:
    preemptor_ask(w)
    w.advance(1.0)
    cycle = SchedulingCycle(w.context)
    assert cycle.run() == [], "no allocation: the parent is full"
    released = w.rm.released
    assert [(r.allocation_key, r.termination_type) for r in released] == [
        ("alloc-2", si.TerminationType.PREEMPTED_BY_SCHEDULER)]
    assert released[0].message == PREEMPTION_RELEASE + "alloc-3"
    partition = w.partition()
    assert partition.applications["app-1"].allocations["alloc-2"].preempted
    assert not partition.applications["app-1"].allocations["alloc-1"].preempted
    assert w.queue("root.parent.leaf1").preempting == res(vcore=5000)
    ask = partition.applications["app-2"].asks["alloc-3"]
    assert ask.triggered_preemption
    # The queue, not a node, was full: both nodes take the ask without victims, so the first by
    # (start index, node id) is reserved and the victim counts at queue level, as in YuniKorn.
    node_id = partition.reservations.by_key["alloc-3"].node_id
    assert node_id == "node-1"
    # Nothing more while the RM has not confirmed: the ask preempts at most once.
    w.advance(20.0)
    assert cycle.run() == [] and len(w.rm.released) == 1
    # The RM kills the victim and confirms with the same termination type: no echo.
    w.release("app-1", "alloc-2", termination=si.TerminationType.PREEMPTED_BY_SCHEDULER)
    assert len(w.rm.released) == 1
    assert w.queue("root.parent.leaf1").preempting == res()
    decisions = cycle.run()
    assert [(d.ask.allocation_key, d.node.node_id, d.from_reservation) for d in decisions] == [("alloc-3", node_id, True)]
    assert len(partition.reservations) == 0
    history = partition.applications["app-1"].preempted_history.as_map()
    assert list(history) == ["UNKNOWN"] and set(history["UNKNOWN"]) == {"vcore"}
    # What the metrics export: one attempt past the preconditions, one preemption, one victim.
    assert (partition.preemption_attempts, partition.preemptions, partition.preemption_victims) == (1, 1, 1)
    assert partition.preemption_latency.count == 1 and partition.preemption_latency.cumulative()[-1] == ("+Inf", 1)


def test_the_victim_gets_yunikorn_s_request_event(w: World) -> None:
    # Request events reach the RM (not REST) when enabled, as every ask event does.
    w.reload(CONFIG, extra_config={"service.event.requestEventsEnabled": "true"})
    preemptor_ask(w)
    w.advance(1.0)
    SchedulingCycle(w.context).run()
    before = len(w.rm.events)
    w.context.event_system.publish_request_events()
    sent = [(e.type, e.change_type, e.change_detail, e.object_id, e.reference_id, e.message)
            for e in w.rm.events[before:]]
    assert (T.REQUEST, C.NONE, D.DETAILS_NONE, "alloc-2", "app-1",
            "Preempted by alloc-3 from application app-2 in root.parent.leaf2") in sent


@pytest.mark.parametrize("case", ["no allow_preempt_other", "delay not passed", "partition disabled"])
def test_preconditions_stop_preemption(w: World, case: str) -> None:
    if case == "no allow_preempt_other":
        w.ask("alloc-3", "app-2", res(vcore=5000), priority=1)
        w.advance(1.0)
    elif case == "delay not passed":
        preemptor_ask(w)  # created now: the 1 ms delay has not passed on the manual clock
    else:
        w.partition().preemption_enabled = False
        preemptor_ask(w)
        w.advance(1.0)
    SchedulingCycle(w.context).run()
    assert w.rm.released == []
    assert not w.partition().applications["app-1"].allocations["alloc-2"].preempted


def test_a_failed_check_is_tried_again_only_after_15_seconds(w: World) -> None:
    # Both of app-1's allocations get a priority above the ask: nothing is eligible.
    preemptor_ask(w)
    w.partition().applications["app-1"].allocations["alloc-2"].priority = 5
    w.advance(1.0)
    cycle = SchedulingCycle(w.context)
    cycle.run()
    ask = w.partition().applications["app-2"].asks["alloc-3"]
    checked = ask.preempt_check_time_ns
    assert checked and w.rm.released == []
    assert PREEMPTION_DOES_NOT_HELP in ask.alloc_log and PREEMPTION_GUARANTEES_CHECK_FAILED in ask.alloc_log
    w.advance(10.0)
    cycle.run()
    assert ask.preempt_check_time_ns == checked, "within 15 s the preconditions fail"
    w.partition().applications["app-1"].allocations["alloc-2"].priority = 1
    w.advance(6.0)
    cycle.run()
    assert [r.allocation_key for r in w.rm.released] == ["alloc-2"]


def test_no_guarantee_means_no_preemption(w: World) -> None:
    # YUNIKORN-1951: an ask in a queue without a guarantee anywhere on its path never preempts.
    w.reload(CONFIG.replace("""                resources:
                  guaranteed: {vcore: 5}
              - name: leaf2
                properties: {preemption.delay: 1ms}
                resources:
                  guaranteed: {vcore: 5}""", """                resources:
                  guaranteed: {vcore: 5}
              - name: leaf2
                properties: {preemption.delay: 1ms}"""))
    preemptor_ask(w)
    w.advance(1.0)
    SchedulingCycle(w.context).run()
    assert w.rm.released == []


NODES_FULL = config("""\
          - name: busy
            properties: {preemption.delay: 5s}
          - name: starved
            properties: {preemption.delay: 5s}
            resources:
              guaranteed: {vcore: 6}
""")


def _starved_world(node_vcores: tuple[int, ...], busy: tuple[tuple[str, int], ...]) -> tuple[World, SchedulingCycle]:
    w = World(NODES_FULL)
    for i, vcore in enumerate(node_vcores):
        w.add_node(f"node-{i + 1}", memory=100, vcore=vcore)
    w.add_app("app-busy", "root.busy")
    w.add_app("app-starved", "root.starved")
    cycle = SchedulingCycle(w.context)
    for key, vcore in busy:  # one second apart: the later ones are newer
        w.ask(key, "app-busy", res(vcore=vcore))
        assert len(cycle.run()) == 1
        w.advance(1.0)
    w.ask("starved-0", "app-starved", res(vcore=5000),
          preemption_policy=si.PreemptionPolicy(allow_preempt_self=True, allow_preempt_other=True))
    return w, cycle


def test_a_full_cluster_preempts_the_newest_victim_once_the_delay_passed() -> None:
    # The root's max is the cluster: the ask fails the headroom at root until preemption.
    w, cycle = _starved_world((10000,), (("busy-0", 5000), ("busy-1", 5000)))
    try:
        w.advance(3.0)
        cycle.run()
        assert w.rm.released == []
        w.advance(3.0)
        cycle.run()
        assert [r.allocation_key for r in w.rm.released] == ["busy-1"], "the newest victim first"
        w.release("app-busy", "busy-1", termination=si.TerminationType.PREEMPTED_BY_SCHEDULER)
        assert [d.ask.allocation_key for d in cycle.run()] == ["starved-0"]
        assert w.queue("root.busy").preempting == res()
    finally:
        w.close()


def test_an_ask_that_reserved_a_node_still_preempts_once_its_delay_passed() -> None:
    # Fragmented: 4,000 free on each node, the ask needs 5,000. It reserves the closest node
    # after the 2 s reservation delay, then preempts from its reserved state after 5 s. (A
    # victim counts in full against the ask's queue: with a guarantee of 5 rather than 6 the
    # 6,000 victim would take it over its guarantee, and YuniKorn preempts nothing.)
    w, cycle = _starved_world((10000, 10000), (("busy-0", 6000), ("busy-1", 6000)))
    try:
        w.advance(2.5)
        cycle.run()
        assert "starved-0" in w.partition().reservations.by_key and w.rm.released == []
        w.advance(3.0)
        cycle.run()
        # One victim per node, both with start index 0: the first node by id wins (YuniKorn's
        # order of the checks), and the reservation moves there.
        assert [r.allocation_key for r in w.rm.released] == ["busy-0"]
        victim_node = w.partition().applications["app-busy"].allocations["busy-0"].node_id
        assert w.partition().reservations.by_key["starved-0"].node_id == victim_node == "node-1"
        w.release("app-busy", "busy-0", termination=si.TerminationType.PREEMPTED_BY_SCHEDULER)
        assert [(d.ask.allocation_key, d.node.node_id) for d in cycle.run()] == [("starved-0", victim_node)]
    finally:
        w.close()


def test_the_streamed_checks_are_yunikorn_s_sorted_checks() -> None:
    # The bounded search must yield exactly what planning every node and sorting gives (the
    # oracle), on random clusters: nodes of mixed sizes, some with room for the ask, allocations
    # of mixed sizes, ages and flags over four queues over their guarantees; the nodes where
    # the ask fits come from the node index or from a scan.
    import random

    from pyscheduler.scheduler.preemption.guaranteed import GuaranteedPreemptor

    queues = config("""\
          - name: starved
            resources:
              guaranteed: {vcore: 40}
""" + "".join(f"""          - name: q{i}
            resources:
              guaranteed: {{vcore: 1}}
""" for i in range(4)))
    sizes: list[int] = []
    fitting_seen = False
    for seed in range(8):
        rng = random.Random(seed)
        w = World(queues)
        try:
            for n in range(12):
                w.add_node(f"node-{n:02d}", memory=100, vcore=rng.choice([4000, 8000, 12000]))
            for q in range(4):
                w.add_app(f"app-{q}", f"root.q{q}")
            key = 0
            for n in range(12):
                node = w.partition().nodes[f"node-{n:02d}"]
                while True:
                    size = rng.choice([1000, 2000, 3000])
                    if not res(vcore=size).fits_in(node.available) or rng.random() < 0.04:
                        break  # full, or (now and then) left with room for the ask
                    key += 1
                    w.allocs(w.alloc_msg(f"a{key}", f"app-{rng.randrange(4)}", res(vcore=size), node_id=node.node_id,
                                         allocation_tags={"creationTime": str(1_600_000_000 + rng.randrange(100))}))
            w.add_app("starved", "root.starved")
            w.ask("s", "starved", res(vcore=rng.choice([3000, 5000, 7000])),
                  preemption_policy=si.PreemptionPolicy(allow_preempt_self=True, allow_preempt_other=True))
            part = w.partition()
            ask = part.applications["starved"].asks["s"]
            for nodes_tried in (False, True):
                def preemptor_for(fitting: object) -> GuaranteedPreemptor:
                    return GuaranteedPreemptor(
                        w.queue("root.starved"), ask, part.applications, part.nodes, part.sorted_node_ids(), nodes_tried=nodes_tried,
                        predicates=None, preemption_predicates=None, reserved_by_others=lambda node: False,
                        fitting=fitting)  # type: ignore[arg-type]
                whole = preemptor_for(None)
                oracle = []
                for node_id in sorted(part.nodes):
                    node = part.nodes[node_id]
                    if not whole._usable(node):
                        continue
                    found = whole._victims_on_node(node.available, whole._candidates(node))
                    if found is not None and (found[1] or not nodes_tried):
                        oracle.append((found[0], node_id, [v.allocation_key for v in found[1]]))
                oracle.sort(key=lambda c: (c[0], c[1]))
                for fitting in (None, part.fitting_node_ids):
                    streamed = [(c.start_index, c.node_id, list(c.keys))
                                for c in preemptor_for(fitting)._sorted_checks({})]
                    assert streamed == oracle, seed
                fitting_seen = fitting_seen or any(c[0] == -1 for c in oracle)
                assert streamed == oracle, seed
                sizes.append(len(oracle))
        finally:
            w.close()
    assert sum(sizes) > 20 and max(sizes) > 3, sizes  # the oracle had nodes to order
    assert fitting_seen, "no cluster had a node where the ask fits"


@pytest.mark.parametrize("holder_priority,held_for,victim,holder_kept", [
    (-1, 60.0, "busy-1", True),      # held for a minute: not cancellable, node-1 is out
    (-1, 7300.0, "busy-0", False),   # held past 2 s + 2 x 60 min, lower priority: gives way
    (5, 7300.0, "busy-1", True),     # a higher priority holder never gives way
])
def test_another_ask_s_reservation_gives_way_only_by_yunikorn_s_rule(holder_priority: int, held_for: float,
                                                                    victim: str, holder_kept: bool) -> None:
    # YuniKorn's TestTryAllocatePreemptNodeWithReservations(WithHighPriority/NotPossibleToCancel):
    # two nodes with 4,000 free each; a 5,000 ask of the busy queue reserved node-1 (closest
    # fit, first by id). The starved ask (priority 0) may preempt on node-1 only when that
    # reservation can be cancelled; otherwise it preempts on node-2 (its own reservation).
    w = World(NODES_FULL)
    try:
        for node in ("node-1", "node-2"):
            w.add_node(node, memory=100, vcore=10000)
        w.add_app("app-busy", "root.busy")
        w.add_app("app-starved", "root.starved")
        cycle = SchedulingCycle(w.context)
        for key in ("busy-0", "busy-1"):
            w.ask(key, "app-busy", res(vcore=6000))
            assert len(cycle.run()) == 1
            w.advance(1.0)
        w.ask("holder", "app-busy", res(vcore=5000), priority=holder_priority)
        w.advance(2.5)
        cycle.run()
        reservations = w.partition().reservations.by_key
        assert reservations["holder"].node_id == "node-1"
        w.advance(held_for)
        w.ask("starved-0", "app-starved", res(vcore=5000),
              preemption_policy=si.PreemptionPolicy(allow_preempt_self=True, allow_preempt_other=True))
        w.advance(2.5)
        cycle.run()
        assert w.rm.released == [] and reservations["starved-0"].node_id == "node-2"
        w.advance(3.0)
        cycle.run()
        assert [r.allocation_key for r in w.rm.released] == [victim]
        assert ("holder" in reservations) is holder_kept
        assert reservations["starved-0"].node_id == ("node-2" if holder_kept else "node-1")
    finally:
        w.close()


def test_a_reserved_ask_whose_queue_headroom_fails_still_preempts() -> None:
    # Found by the state machine: an ask reserved while nothing fitted (the 2 s reservation
    # delay is shorter than its preemption delay) that then fails the root's headroom was
    # skipped by the walk (reserved) and by the reserved phase (headroom) and never preempted.
    w = World(config("""\
          - name: busy
          - name: starved
            properties: {preemption.delay: 5s}
            resources:
              guaranteed: {vcore: 6}
"""))
    try:
        w.add_node("node-1", memory=100, vcore=10000)
        w.add_node("node-2", memory=100, vcore=10000)
        w.add_app("app-busy", "root.busy")
        w.add_app("app-starved", "root.starved")
        cycle = SchedulingCycle(w.context)
        for i in range(2):
            w.ask(f"busy-{i}", "app-busy", res(vcore=6000))
            assert len(cycle.run()) == 1
        w.ask("starved-0", "app-starved", res(vcore=5000),
              preemption_policy=si.PreemptionPolicy(allow_preempt_self=True, allow_preempt_other=True))
        w.advance(2.5)
        cycle.run()
        assert "starved-0" in w.partition().reservations.by_key
        w.ask("busy-2", "app-busy", res(vcore=4000))  # node-2: the root's headroom is now 4,000
        assert len(cycle.run()) == 1
        w.advance(3.0)
        cycle.run()
        assert [r.allocation_key for r in w.rm.released] == ["busy-0"]
        assert w.partition().applications["app-starved"].asks["starved-0"].triggered_preemption
    finally:
        w.close()


@pytest.mark.parametrize("new_size", [3000, 6000])
def test_a_victim_resized_before_it_is_killed_keeps_preempting_exact(new_size: int) -> None:
    # Found by the state machine: the RM resizes a victim in place before killing it; its
    # queues' preempting resource follows, and nothing is left once the RM confirms.
    w, cycle = _starved_world((10000,), (("busy-0", 5000), ("busy-1", 5000)))
    try:
        w.advance(6.0)
        cycle.run()
        victim = w.rm.released[0].allocation_key
        w.allocs(w.alloc_msg(victim, "app-busy", res(vcore=new_size), node_id="node-1"))
        assert w.queue("root.busy").preempting == res(vcore=new_size) == w.queue("root").preempting
        w.release("app-busy", victim, termination=si.TerminationType.PREEMPTED_BY_SCHEDULER)
        assert w.queue("root.busy").preempting == res() and w.queue("root").preempting == res()
    finally:
        w.close()


def test_unconfigured_resource_types_are_unlimited_for_preemption() -> None:
    # YUNIKORN-1685: the queues configure vcore only; the asks and victims also use memory.
    # Types a max or a guarantee does not name are unlimited: they neither fence the search
    # nor count against the guarantees, and the victim is found on vcore.
    w = World(CONFIG)
    try:
        w.add_node("node-1", memory=1000, vcore=10000)
        w.add_app("app-1", "root.parent.leaf1")
        w.add_app("app-2", "root.parent.leaf2")
        cycle = SchedulingCycle(w.context)
        for key in ("alloc-1", "alloc-2"):
            w.ask(key, "app-1", {"vcore": 5000, "memory": 400})
            assert len(cycle.run()) == 1
            w.advance(1.0)
        w.ask("alloc-3", "app-2", {"vcore": 5000, "memory": 400},
              preemption_policy=si.PreemptionPolicy(allow_preempt_self=True, allow_preempt_other=True))
        w.advance(1.0)
        cycle.run()
        assert [r.allocation_key for r in w.rm.released] == ["alloc-2"], "the newest victim"
        w.release("app-1", "alloc-2", termination=si.TerminationType.PREEMPTED_BY_SCHEDULER)
        assert [d.ask.allocation_key for d in cycle.run()] == ["alloc-3"]
    finally:
        w.close()


def test_a_triggered_ask_never_preempts_again() -> None:
    # YUNIKORN-2270 (a GPU ask): the ask preempts, the RM confirms, but another pod the RM
    # binds itself takes the freed GPU first. The ask stays pending and, as in YuniKorn, never
    # preempts a second time, however long it waits (an ask preempts at most once).
    w = World(config("""\
          - name: busy
          - name: starved
            properties: {preemption.delay: 1ms}
            resources:
              guaranteed: {nvidia.com/gpu: 2}
"""))
    try:
        w.nodes(si.NodeInfo(node_id="node-1", action=si.NodeAction.CREATE,
                            schedulable_resource=res(vcore=100_000, memory=1000, **{"nvidia.com/gpu": 2})))
        w.add_app("app-busy", "root.busy")
        w.add_app("app-starved", "root.starved")
        cycle = SchedulingCycle(w.context)
        for key in ("busy-0", "busy-1"):
            w.ask(key, "app-busy", res(vcore=1000, **{"nvidia.com/gpu": 1}))
            assert len(cycle.run()) == 1
            w.advance(1.0)
        w.ask("gpu-ask", "app-starved", res(vcore=1000, **{"nvidia.com/gpu": 1}),
              preemption_policy=si.PreemptionPolicy(allow_preempt_self=True, allow_preempt_other=True))
        w.advance(1.0)
        cycle.run()
        assert [r.allocation_key for r in w.rm.released] == ["busy-1"]
        w.release("app-busy", "busy-1", termination=si.TerminationType.PREEMPTED_BY_SCHEDULER)
        w.allocs(w.alloc_msg("other", "app-busy", res(vcore=1000, **{"nvidia.com/gpu": 1}), node_id="node-1"))
        for _ in range(4):
            w.advance(20.0)
            assert cycle.run() == []
        ask = w.partition().applications["app-starved"].asks["gpu-ask"]
        assert ask.triggered_preemption and len(w.rm.released) == 1
    finally:
        w.close()


def test_the_eleventh_attempt_of_a_leaf_visit_says_the_attempts_are_used_up() -> None:
    """YuniKorn's maxPreemptionsPerQueue: 10 attempts per leaf visit, each one an ask that
    passed the preconditions (asks that did not pass take none); the next ask's allocation log
    says "max attempts exhausted". Here 11 asks of 2 cores cannot fit a 1-core cluster and
    find no victim."""
    w = World(config("""\
          - name: a
            properties: {preemption.delay: 1ms}
            resources: {guaranteed: {vcore: 100}}
"""))
    try:
        w.add_node("node-1", memory=1000, vcore=1000)
        w.add_app("app-1", "root.a")
        policy = si.PreemptionPolicy(allow_preempt_self=True, allow_preempt_other=True)
        keys = [f"ask-{i:02d}" for i in range(MAX_PREEMPTIONS_PER_LEAF + 1)]
        for key in keys:
            w.ask(key, "app-1", {"vcore": 2000}, preemption_policy=policy)
        w.advance(1.0)
        SchedulingCycle(w.context).run()
        logs = {key: dict(w.app("app-1").asks[key].alloc_log) for key in keys}
        tried = [k for k in keys if PREEMPTION_GUARANTEES_CHECK_FAILED in logs[k]]
        exhausted = [k for k in keys if PREEMPTION_MAX_ATTEMPTS_EXHAUSTED in logs[k]]
        assert tried == keys[:MAX_PREEMPTIONS_PER_LEAF] and exhausted == keys[MAX_PREEMPTIONS_PER_LEAF:]
    finally:
        w.close()


def test_the_release_names_its_preemptor(w: World) -> None:
    """The RM sees which ask preempted each victim (AllocationRelease.preemptor_*), not only
    in the message's prose."""
    preemptor_ask(w)
    w.advance(1.0)
    SchedulingCycle(w.context).run()
    (release,) = w.rm.released
    assert release.termination_type is si.TerminationType.PREEMPTED_BY_SCHEDULER
    assert (release.preemptor_application_id, release.preemptor_allocation_key) == ("app-2", "alloc-3")
    assert release.validate() is None
