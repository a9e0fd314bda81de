"""Topology-aware placement through the RM interface (issue 34, first part): a partition names
its topology levels by node label (``topology.levels``); an application asking for a level
(``pyscheduler.io/topology-required`` / ``-preferred``) is placed in one domain of it, the
tightest where all its members fit (best fit), or waits with the reason; the domains' sums are
kept incrementally (checked against the nodes after every test); a random test with its own
checker: no application with a required level ever spans two domains."""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping

import pytest
from rm_helpers import World, check_invariants, res
from scheduling_helpers import config

from pyscheduler.config.loader import load_config
from pyscheduler.config.validator import ConfigValidationError
from pyscheduler.scheduler.cycle import SchedulingCycle
from pyscheduler.si import messages as si
from pyscheduler.si.vocabulary import APP_TAG_TOPOLOGY_PREFERRED, APP_TAG_TOPOLOGY_REQUIRED, HISTORY_KEY_TAG, ROLE_TAG

ZONE, BLOCK, RACK = "topology.kubernetes.io/zone", "example.com/block", "example.com/rack"
TOPOLOGY = f"    topology: {{levels: [{ZONE}, {BLOCK}, {RACK}]}}\n"
QUEUES = """\
          - name: a
          - name: gang
            properties: {application.sort.policy: fifo}
"""
NODE = 1000  # vcore per node: a member of 1000 takes a node


@pytest.fixture
def w() -> Iterator[World]:
    made = World(config(QUEUES, policy="binpacking", partition_extra=TOPOLOGY))
    yield made
    check_invariants(made.context)
    made.close()


def rack(w: World, name: str, nodes: int, *, block: str = "b1", zone: str = "z1", vcore: int = NODE) -> list[str]:
    ids = [f"{name}-n{i}" for i in range(nodes)]
    for node_id in ids:
        w.add_node(node_id, memory=1_000_000, vcore=vcore, **{ZONE: zone, BLOCK: block, RACK: name})
    return ids


def gang(w: World, app_id: str, members: int, level: str = RACK, *, required: bool = True, vcore: int = NODE,
         queue: str = "root.gang") -> None:
    tag = APP_TAG_TOPOLOGY_REQUIRED if required else APP_TAG_TOPOLOGY_PREFERRED
    w.apps(si.AddApplicationRequest(
        application_id=app_id, queue_name=queue, partition_name="default", ugi=si.UserGroupInformation(user="u"),
        tags={tag: level}, placeholder_ask=res(vcore=vcore * members)))
    for i in range(members):
        w.ask(f"{app_id}-ph{i}", app_id, res(vcore=vcore), placeholder=True, task_group_name="tg")


def fill(w: World, app_id: str, nodes: list[str]) -> None:
    """Occupies ``nodes`` whole with an application of its own (allocations the RM reports)."""
    w.apps(si.AddApplicationRequest(application_id=app_id, queue_name="root.a", partition_name="default",
                                    ugi=si.UserGroupInformation(user="u")))
    for node_id in nodes:
        w.ask(f"{app_id}-{node_id}", app_id, res(vcore=NODE), node_id=node_id)


def run(w: World, cycles: int = 20) -> None:
    cycle = SchedulingCycle(w.context)
    for _ in range(cycles):
        cycle.run()


def nodes_of(w: World, app_id: str) -> set[str]:
    return {a.node_id for a in w.rm.allocations.values() if a.application_id == app_id}


def racks_of(w: World, app_id: str) -> set[str]:
    return {node_id.split("-n")[0] for node_id in nodes_of(w, app_id)}


def test_a_gang_takes_the_rack_with_exactly_its_room_over_a_larger_one(w: World) -> None:
    rack(w, "r8", 8)
    rack(w, "r4", 4)
    rack(w, "r3", 3)
    gang(w, "job", 4)
    run(w)
    assert racks_of(w, "job") == {"r4"} and len(nodes_of(w, "job")) == 4
    assert w.app("job").topology_domain == "r4"


def test_a_gang_waits_rather_than_spread_and_says_why_then_runs_when_a_rack_has_room(w: World) -> None:
    r1, r2 = rack(w, "r1", 4), rack(w, "r2", 4)
    fill(w, "busy", [r1[0], r2[0]])  # 3 free nodes in each rack: 6 in all, 4 in none
    run(w)
    gang(w, "job", 4)
    run(w)
    assert nodes_of(w, "job") == set()  # nothing placed, not even one placeholder
    said = [u for u in w.rm.scheduling_states if u.application_id == "job"]
    assert said and "no example.com/rack domain has room for the whole application 'job'" in said[-1].reason
    assert "the most free: example.com/rack=" in said[-1].reason
    w.release("busy", f"busy-{r2[0]}")
    run(w)
    assert racks_of(w, "job") == {"r2"} and len(nodes_of(w, "job")) == 4


def test_sums_are_not_enough_every_member_must_fit_on_a_node(w: World) -> None:
    # r-half: 8 nodes each half used (sum: 4 free nodes' worth), r-whole: 4 free nodes.
    half = rack(w, "r-half", 8, vcore=2 * NODE)
    rack(w, "r-whole", 5, vcore=NODE)
    w.apps(si.AddApplicationRequest(application_id="half", queue_name="root.a", partition_name="default",
                                    ugi=si.UserGroupInformation(user="u")))
    for node_id in half:
        w.ask(f"half-{node_id}", "half", res(vcore=int(1.5 * NODE)), node_id=node_id)
    gang(w, "job", 4, vcore=NODE)
    run(w)
    assert racks_of(w, "job") == {"r-whole"}


def test_the_rm_predicates_choose_the_rack_with_the_resources(w: World) -> None:
    """The members' own constraints count (on Kubernetes a node selector, affinity, taints): r1
    is the tightest rack with room, but the RM refuses the gang's members there, so the gang
    lands in r2; when the RM refuses them everywhere it waits, saying so."""
    rack(w, "r1", 2)
    rack(w, "r2", 4)
    w.rm.set_predicates(lambda key, node_id, allocate: "node(s) didn't match Pod's node affinity/selector"
                        if node_id.startswith("r1-") and key.startswith("picky-") else None)
    gang(w, "picky", 2)
    run(w)
    assert racks_of(w, "picky") == {"r2"} and len(nodes_of(w, "picky")) == 2
    w.rm.set_predicates(lambda key, node_id, allocate: "refused" if key.startswith("nowhere-") else None)
    gang(w, "nowhere", 2)
    run(w)
    assert nodes_of(w, "nowhere") == set()
    said = [u for u in w.rm.scheduling_states if u.application_id == "nowhere"]
    assert said and "domain(s) with room refuse its members" in said[-1].reason, said[-1].reason


def test_levels_block_and_zone_and_the_preferred_request(w: World) -> None:
    rack(w, "r1", 2, block="b1")
    rack(w, "r2", 2, block="b1")
    rack(w, "r3", 2, block="b2", zone="z2")
    gang(w, "in-block", 4, BLOCK)
    run(w)
    assert racks_of(w, "in-block") == {"r1", "r2"}  # block b1 (4 nodes) holds it, no rack does
    assert w.app("in-block").topology_domain == "b1"
    # Preferred: no rack has room for 3 (r3 has 2 free): placed anyway, across racks.
    rack(w, "r4", 1, block="b2", zone="z2")
    gang(w, "anywhere", 3, RACK, required=False)
    run(w)
    assert len(nodes_of(w, "anywhere")) == 3 and len(racks_of(w, "anywhere")) == 2


def test_members_replace_placeholders_inside_the_domain(w: World) -> None:
    rack(w, "r1", 4)
    rack(w, "r2", 2)
    gang(w, "job", 2)
    run(w)
    assert racks_of(w, "job") == {"r2"}
    for i in range(2):
        w.ask(f"job-m{i}", "job", res(vcore=NODE), task_group_name="tg")
    cycle = SchedulingCycle(w.context)
    replaced_on: list[str] = []
    for _ in range(10):
        for decision in cycle.run():
            if decision.replaced is not None:
                replaced_on.append(decision.node.node_id)
                w.release("job", decision.replaced.allocation_key, termination=si.TerminationType.PLACEHOLDER_REPLACED)
    assert len(replaced_on) == 2 and {n.split("-n")[0] for n in replaced_on} == {"r2"}


@pytest.mark.parametrize("tags, problem", [
    ({APP_TAG_TOPOLOGY_REQUIRED: "example.com/row"}, "is not a topology level"),
    ({APP_TAG_TOPOLOGY_REQUIRED: ""}, "empty"),
    ({APP_TAG_TOPOLOGY_REQUIRED: RACK, APP_TAG_TOPOLOGY_PREFERRED: RACK}, "together"),
])
def test_a_request_the_partition_cannot_honour_rejects_the_application(w: World, tags: Mapping[str, str],
                                                                        problem: str) -> None:
    w.apps(si.AddApplicationRequest(application_id="bad", queue_name="root.a", partition_name="default",
                                    ugi=si.UserGroupInformation(user="u"), tags=dict(tags)))
    assert problem in w.rm.rejected_apps["bad"]


@pytest.mark.parametrize("levels, problem", [
    ("[a, a]", "named twice"),
    ("[bad key!]", "not a node label key"),
    ("[a, b, c, d, e, f, g, h, i]", "at most 8"),
    ("{rack: x}", "expected a list"),
])
def test_a_broken_topology_configuration_is_refused(levels: str, problem: str) -> None:
    with pytest.raises(ConfigValidationError, match=problem):
        load_config(config(QUEUES, partition_extra=f"    topology: {{levels: {levels}}}\n"))


def test_levels_changed_by_a_new_configuration_rebuild_the_domains(w: World) -> None:
    rack(w, "r1", 2)
    w.reload(config(QUEUES, policy="binpacking", partition_extra=f"    topology: {{levels: [{ZONE}]}}\n"))
    partition = w.partition()
    with partition.lock:
        assert partition.topology.levels == (ZONE,) and set(partition.topology.domains[ZONE]) == {"z1"}
    w.reload(config(QUEUES, policy="binpacking"))
    with partition.lock:
        assert partition.topology.levels == () and partition.topology.domains == {}


def test_no_required_gang_ever_spans_two_domains_random(w: World) -> None:
    """Random racks, gangs, releases and node removals; an independent checker after every
    step: each placed application asking for racks holds nodes of one rack only (read from the
    nodes' own labels, not from the index)."""
    rng = random.Random(34)
    node_rack: dict[str, str] = {}
    for r in range(6):
        for node_id in rack(w, f"r{r}", rng.randint(1, 5)):
            node_rack[node_id] = f"r{r}"
    live: list[str] = []
    cycle = SchedulingCycle(w.context)
    for step in range(60):
        roll = rng.random()
        if roll < 0.5:
            app_id = f"g{step}"
            gang(w, app_id, rng.randint(1, 5), vcore=rng.choice([NODE // 2, NODE]))
            live.append(app_id)
        elif roll < 0.8 and live:
            app_id = live.pop(rng.randrange(len(live)))
            for key in [k for k, a in w.rm.allocations.items() if a.application_id == app_id]:
                w.release(app_id, key)
            w.remove_app(app_id)
        elif roll < 0.9:
            node_id = f"extra{step}"
            w.add_node(node_id, memory=1_000_000, vcore=NODE, **{ZONE: "z1", BLOCK: "b1", RACK: f"r{rng.randrange(6)}"})
            node_rack[node_id] = w.partition().nodes[node_id].attributes[RACK]
        for _ in range(3):
            cycle.run()
        for app_id in live:
            racks = {node_rack[a.node_id] for a in w.rm.allocations.values() if a.application_id == app_id}
            assert len(racks) <= 1, (step, app_id, racks)
        check_invariants(w.context)


def test_a_gang_whose_placeholders_arrive_one_by_one_is_placed_for_all_of_them(w: World) -> None:
    """An RM sends a gang's placeholders one by one: the domain is chosen once they add up to the
    gang's placeholder ask, never for the first few (the K8s shim creates them one by one)."""
    rack(w, "r8", 8)
    rack(w, "r2", 2)
    w.apps(si.AddApplicationRequest(
        application_id="job", queue_name="root.gang", partition_name="default", ugi=si.UserGroupInformation(user="u"),
        tags={APP_TAG_TOPOLOGY_REQUIRED: RACK}, placeholder_ask=res(vcore=4 * NODE)))
    for i in range(4):
        w.ask(f"job-ph{i}", "job", res(vcore=NODE), placeholder=True, task_group_name="tg")
        run(w, 3)
        if i < 3:
            assert nodes_of(w, "job") == set()  # r2 would hold the first two, not all four
    run(w)
    assert racks_of(w, "job") == {"r8"} and len(nodes_of(w, "job")) == 4


# -- preemption inside one domain, and a member's node lost ------------------------------------------

PREEMPT = si.PreemptionPolicy(allow_preempt_self=True, allow_preempt_other=True)
GUARANTEED = config("""\
          - name: greedy
            properties: {preemption.delay: 1ms}
            resources:
              guaranteed: {vcore: 1}
          - name: needy
            properties: {preemption.delay: 1ms, application.sort.policy: fifo}
            resources:
              guaranteed: {vcore: 100000}
""", policy="binpacking", partition_extra=TOPOLOGY)


def _preempting_gang(greedy: Mapping[str, list[tuple[int, int]]]) -> tuple[World, set[str]]:
    """Racks of 2 nodes, each node full of ``root.greedy`` (over its guarantee) allocations
    given per rack as (vcore, priority) per node; a gang of 2 one-node members (priority 100)
    requiring a rack; cycles run while the RM confirms each victim gone. The world (closed by
    the caller) and the victims' keys."""
    made = World(GUARANTEED)
    made.add_app("greedy", "root.greedy")
    for name, per_node in greedy.items():
        for node in rack(made, name, 2):
            made.allocs(*(made.alloc_msg(f"greedy-{node}-{i}", "greedy", res(vcore=vcore), node_id=node,
                                         preemption_policy=PREEMPT, priority=priority)
                          for i, (vcore, priority) in enumerate(per_node)))
    made.apps(si.AddApplicationRequest(
        application_id="job", queue_name="root.needy", partition_name="default",
        ugi=si.UserGroupInformation(user="u"), tags={APP_TAG_TOPOLOGY_REQUIRED: RACK},
        placeholder_ask=res(vcore=2 * NODE)))
    for i in range(2):
        made.ask(f"job-ph{i}", "job", res(vcore=NODE), placeholder=True, task_group_name="tg",
                 preemption_policy=PREEMPT, priority=100)
    cycle = SchedulingCycle(made.context)
    confirmed: set[str] = set()
    for _ in range(10):
        made.advance(1.0)
        cycle.run()
        for victim in made.rm.released:  # the RM confirms each victim gone
            if (victim.termination_type is si.TerminationType.PREEMPTED_BY_SCHEDULER
                    and victim.allocation_key not in confirmed):
                confirmed.add(victim.allocation_key)
                made.release("greedy", victim.allocation_key, termination=si.TerminationType.PREEMPTED_BY_SCHEDULER)
    return made, {r.allocation_key for r in made.rm.released
                  if r.termination_type is si.TerminationType.PREEMPTED_BY_SCHEDULER}


def test_a_waiting_gang_preempts_inside_one_rack_only() -> None:
    """Two racks of 2 nodes, all four full of ``greedy``. A gang of 2 that requires a rack: its
    victims are the two allocations of one rack, never one in each (which a partition-wide
    choice could make: both racks' nodes sort alike)."""
    made, victims = _preempting_gang({"r1": [(NODE, 0)], "r2": [(NODE, 0)]})
    try:
        assert len(victims) == 2 and len({v.split("-")[1] for v in victims}) == 1, victims  # one rack's two
        assert len(racks_of(made, "job")) == 1 and len(nodes_of(made, "job")) == 2
        check_invariants(made.context)
    finally:
        made.close()


@pytest.mark.parametrize(("greedy", "why"), [
    ({"r1": [(NODE, 50)], "r2": [(NODE, 10)]}, "r2's victims have the lower priority"),
    ({"r1": [(NODE // 2, 0), (NODE // 2, 0)], "r2": [(NODE, 0)]}, "r2 needs 2 victims, r1 4"),
    ({"r1": [(NODE, 5)], "r2": [(NODE // 2, 1), (NODE // 2, 1)], "r3": [(NODE, 1)]}, "r3: lower than r1, fewer than r2"),
])
def test_a_waiting_gang_preempts_in_the_rack_with_the_fewest_lowest_priority_victims(
        greedy: Mapping[str, list[tuple[int, int]]], why: str) -> None:
    """kube-scheduler's order for a preemption node, over racks: the lowest highest-priority
    victim, then the fewest victims. Every rack sorts alike for the nodes (all full), and r1
    comes first by name: a first-plan-wins choice would take r1 every time."""
    made, victims = _preempting_gang(greedy)
    try:
        best = "r3" if "r3" in greedy else "r2"
        assert {v.split("-")[1] for v in victims} == {best}, (why, victims)
        assert len(victims) == 2, why
        assert racks_of(made, "job") == {best} and len(nodes_of(made, "job")) == 2
        check_invariants(made.context)
    finally:
        made.close()


def test_a_member_whose_node_is_lost_comes_back_inside_its_rack_when_there_is_room(w: World) -> None:
    rack(w, "r1", 3)
    rack(w, "r2", 8)
    w.apps(si.AddApplicationRequest(application_id="svc", queue_name="root.a", partition_name="default",
                                    ugi=si.UserGroupInformation(user="u"), tags={APP_TAG_TOPOLOGY_REQUIRED: RACK}))
    for i in range(2):
        w.ask(f"svc-{i}", "svc", res(vcore=NODE))
    run(w)
    assert racks_of(w, "svc") == {"r1"}  # the tightest rack with room for both: 3 nodes
    lost = next(iter(nodes_of(w, "svc")))
    w.nodes(si.NodeInfo(node_id=lost, action=si.NodeAction.DECOMISSION))
    w.ask("svc-again", "svc", res(vcore=NODE))  # the RM asks for a replacement
    run(w)
    assert racks_of(w, "svc") == {"r1"} and len(nodes_of(w, "svc")) == 2


# -- slices -------------------------------------------------------------------------------------------------


def sliced_gang(w: World, app_id: str, members: int, size: int, level: str | None = BLOCK) -> None:
    tags = {"pyscheduler.io/topology-slice-required": RACK, "pyscheduler.io/topology-slice-size": str(size)}
    if level is not None:
        tags[APP_TAG_TOPOLOGY_REQUIRED] = level
    w.apps(si.AddApplicationRequest(
        application_id=app_id, queue_name="root.gang", partition_name="default", ugi=si.UserGroupInformation(user="u"),
        tags=tags, placeholder_ask=res(vcore=NODE * members)))
    for i in range(members):
        w.ask(f"{app_id}-ph{i:02d}", app_id, res(vcore=NODE), placeholder=True, task_group_name="tg")


def by_rack(w: World, app_id: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node_id in (a.node_id for a in w.rm.allocations.values() if a.application_id == app_id):
        counts[node_id.split("-n")[0]] = counts.get(node_id.split("-n")[0], 0) + 1
    return counts


def _ranked_job(w: World, app_id: str, ranks: int, *, reverse: bool = False) -> dict[int, str]:
    """A gang of ``ranks`` one-node members requiring a rack, history key ``train``, member
    ``i`` with its own role ``train#i`` (``reverse``: the members' keys sort last rank first);
    runs until every member replaced a placeholder. Rank -> node."""
    w.apps(si.AddApplicationRequest(
        application_id=app_id, queue_name="root.gang", partition_name="default",
        ugi=si.UserGroupInformation(user="u"), tags={APP_TAG_TOPOLOGY_REQUIRED: RACK, HISTORY_KEY_TAG: "train"},
        placeholder_ask=res(vcore=NODE * ranks)))
    for i in range(ranks):
        w.ask(f"{app_id}-ph{i}", app_id, res(vcore=NODE), placeholder=True, task_group_name="tg")
    run(w)
    for i in range(ranks):
        key = f"{app_id}-m{ranks - 1 - i if reverse else i}"
        w.ask(key, app_id, res(vcore=NODE), task_group_name="tg", allocation_tags={ROLE_TAG: f"train#{i}"})
    cycle = SchedulingCycle(w.context)
    for _ in range(3 * ranks):
        for decision in cycle.run():
            if decision.replaced is not None:
                w.release(app_id, decision.replaced.allocation_key, termination=si.TerminationType.PLACEHOLDER_REPLACED)
    placed = {int(a.allocation_tags[ROLE_TAG].split("#")[1]): a.node_id for a in w.rm.allocations.values()
              if a.application_id == app_id and ROLE_TAG in a.allocation_tags}
    assert len(placed) == ranks, placed
    return placed


def test_a_job_started_again_goes_back_to_its_rack_and_each_rank_to_its_node(w: World) -> None:
    """Role history across a restart: the job first ran in r2 (r1 was full); started again
    (a new application, the same history key) while r1 is free and the tightest, it goes back
    to r2, and each rank to the node it had, though its members now come in another order."""
    r1 = rack(w, "r1", 4)
    rack(w, "r2", 8)
    fill(w, "filler", r1)
    run(w)
    first = _ranked_job(w, "train-1", 4)
    assert {n.split("-n")[0] for n in first.values()} == {"r2"}
    for alloc in [a for a in w.rm.allocations.values() if a.application_id in ("train-1", "filler")]:
        w.release(alloc.application_id, alloc.allocation_key, termination=si.TerminationType.STOPPED_BY_RM)
    w.remove_app("train-1")
    w.remove_app("filler")
    run(w)
    again = _ranked_job(w, "train-2", 4, reverse=True)
    assert again == first


def test_a_new_job_without_history_takes_the_tightest_rack(w: World) -> None:
    """The same layout with another history key: best fit as usual (r1, exactly 4 free)."""
    rack(w, "r1", 4)
    rack(w, "r2", 8)
    w.partition().role_histories.get_or_create("other").add_entry("r2-n0", "tg", 1)
    placed = _ranked_job(w, "fresh", 4)
    assert {n.split("-n")[0] for n in placed.values()} == {"r1"}


def test_slices_of_a_gang_each_land_in_one_rack_of_its_block(w: World) -> None:
    # Block b2: 8 free nodes as 3 + 3 + 2 (no rack holds a slice of 4); block b1: 4 + 3 + 4.
    for name, nodes in (("p1", 3), ("p2", 3), ("p3", 2)):
        rack(w, name, nodes, block="b2")
    for name, nodes in (("q1", 4), ("q2", 3), ("q3", 4)):
        rack(w, name, nodes, block="b1")
    sliced_gang(w, "job", 8, 4)
    run(w, 30)
    assert by_rack(w, "job") == {"q1": 4, "q3": 4}  # b1, a slice in each 4-node rack, none in q2
    assert w.app("job").topology_domain == "b1"


def test_slices_without_a_level_and_a_last_smaller_slice(w: World) -> None:
    rack(w, "r1", 3)
    rack(w, "r2", 2)
    rack(w, "r3", 1)
    sliced_gang(w, "job", 5, 2, level=None)  # slices of 2, 2 and 1
    run(w, 30)
    counts = by_rack(w, "job")
    assert sum(counts.values()) == 5
    slices = w.app("job").topology_slices
    assert slices is not None and sorted(slices.counts) == [1, 2, 2]
    # Each slice of two on one rack: the two slices of 2 are in racks holding 2 or more of them.
    racks_of_slice: dict[int, set[str]] = {}
    for alloc in w.rm.allocations.values():
        if alloc.application_id == "job":
            racks_of_slice.setdefault(slices.of_member[alloc.allocation_key], set()).add(alloc.node_id.split("-n")[0])
    assert all(len(racks) == 1 for racks in racks_of_slice.values()), racks_of_slice


@pytest.mark.parametrize("tags, problem", [
    ({"pyscheduler.io/topology-slice-required": RACK}, "go together"),
    ({"pyscheduler.io/topology-slice-size": "4"}, "go together"),
    ({"pyscheduler.io/topology-slice-required": RACK, "pyscheduler.io/topology-slice-size": "0"}, "whole number"),
    ({"pyscheduler.io/topology-slice-required": RACK, "pyscheduler.io/topology-slice-size": "-1"}, "whole number"),
    ({"pyscheduler.io/topology-slice-required": RACK, "pyscheduler.io/topology-slice-size": "1e9"}, "whole number"),
    ({APP_TAG_TOPOLOGY_REQUIRED: RACK, "pyscheduler.io/topology-slice-required": ZONE,
      "pyscheduler.io/topology-slice-size": "2"}, "outside"),
])
def test_slice_tags_the_partition_cannot_honour_reject_the_application(w: World, tags: Mapping[str, str],
                                                                        problem: str) -> None:
    w.apps(si.AddApplicationRequest(application_id="bad", queue_name="root.a", partition_name="default",
                                    ugi=si.UserGroupInformation(user="u"), tags=dict(tags)))
    assert problem in w.rm.rejected_apps["bad"]
