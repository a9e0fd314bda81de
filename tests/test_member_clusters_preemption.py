"""Preemption over member clusters (issue 33 level 2): one decision over all clusters, its victims
only on the nodes of the cluster where the preemptor will run.

The scene: two clusters of one 10-vcore node each, both full of ``greedy``'s allocations (a queue
far over its 1-vcore guarantee). West's node ``a-west`` sorts first by id and holds one 10-vcore
allocation at priority 0: over the whole partition it is the victim YuniKorn's order picks (start
index 0, then node id). East's node ``z-east`` holds two 5-vcore allocations at priority 0.
``needy`` (guaranteed 10 vcore, using nothing) asks for 5 vcore."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pytest
from rm_helpers import World, check_invariants, res
from scheduling_helpers import config

from pyscheduler.scheduler.cycle import SchedulingCycle
from pyscheduler.si import messages as si
from pyscheduler.si.vocabulary import APP_TAG_CLUSTERS, CLUSTER_ATTRIBUTE

QUEUES = config("""\
          - name: greedy
            properties: {preemption.delay: 1ms}
            resources:
              guaranteed: {vcore: 1}
          - name: needy
            properties: {preemption.delay: 1ms}
            resources:
              guaranteed: {vcore: 10}
""")
PREEMPT = si.PreemptionPolicy(allow_preempt_self=True, allow_preempt_other=True)


def scene(clustered: bool) -> World:
    """The scene; ``clustered`` False: the same nodes without the cluster attribute."""
    made = World(QUEUES)
    for node_id, cluster in (("a-west", "west"), ("z-east", "east")):
        attributes = {CLUSTER_ATTRIBUTE: cluster} if clustered else {}
        made.add_node(node_id, memory=1000, vcore=10_000, **attributes)
    # Allocations the RM reports as running (each places its application in its node's cluster).
    for app_id, node_id, sizes in (("greedy-west", "a-west", (10_000,)), ("greedy-east", "z-east", (5_000, 5_000))):
        made.add_app(app_id, "root.greedy")
        made.allocs(*(made.alloc_msg(f"{app_id}-{i}", app_id, res(vcore=vcore), node_id=node_id,
                                     preemption_policy=PREEMPT) for i, vcore in enumerate(sizes)))
    return made


@pytest.fixture
def w() -> Iterator[World]:
    made = scene(clustered=True)
    yield made
    check_invariants(made.context)
    made.close()


def needy(w: World, tags: Mapping[str, str] | None = None) -> None:
    w.add_app("needy", "root.needy", tags=dict(tags or {}))
    w.ask("needy-0", "needy", res(vcore=5000), preemption_policy=PREEMPT)
    w.advance(1.0)
    SchedulingCycle(w.context).run()


def preempted(w: World) -> list[str]:
    return [r.allocation_key for r in w.rm.released if r.termination_type is si.TerminationType.PREEMPTED_BY_SCHEDULER]


def untouched(w: World) -> bool:
    """West's allocation is still there and not marked preempted."""
    alloc = w.app("greedy-west").allocations.get("greedy-west-0")
    return alloc is not None and not alloc.preempted


def test_reported_allocations_place_their_applications(w: World) -> None:
    assert (w.app("greedy-west").member_cluster, w.app("greedy-east").member_cluster) == ("west", "east")


def test_without_clusters_the_victim_is_west_s() -> None:
    """The control: one partition-wide decision picks a-west's allocation (so the next test's
    assertion could fail)."""
    made = scene(clustered=False)
    try:
        needy(made)
        assert preempted(made) == ["greedy-west-0"]
    finally:
        made.close()


def test_a_pinned_preemptor_takes_victims_in_its_cluster_only(w: World) -> None:
    needy(w, {APP_TAG_CLUSTERS: "east"})
    victims = preempted(w)
    assert len(victims) == 1 and victims[0].startswith("greedy-east-")
    assert untouched(w), "the other cluster's cheapest victim is untouched"
    partition = w.partition()
    assert partition.reservations.by_key["needy-0"].node_id == "z-east"
    # The RM confirms the release: the ask lands in east.
    w.release("greedy-east", victims[0], termination=si.TerminationType.PREEMPTED_BY_SCHEDULER)
    SchedulingCycle(w.context).run()
    assert w.rm.allocations["needy-0"].node_id == "z-east" and w.app("needy").member_cluster == "east"


def test_an_unplaced_preemptor_is_placed_in_the_first_cluster_with_a_plan(w: World) -> None:
    # Both clusters are full and equal for the fair policy: east comes first by name.
    needy(w)
    victims = preempted(w)
    assert len(victims) == 1 and victims[0].startswith("greedy-east-")
    assert w.app("needy").member_cluster == "east"
    assert untouched(w)


def test_a_preferred_cluster_decides_where_the_victims_are(w: World) -> None:
    needy(w, {"pyscheduler.io/preferred-clusters": "west"})
    assert preempted(w) == ["greedy-west-0"] and w.app("needy").member_cluster == "west"
