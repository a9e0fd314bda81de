"""Topology requests in a hub partition (issues 33 and 34) through the RM interface: nodes of
member clusters (``pyscheduler.io/cluster``) with rack labels; a domain never spans two members
(racks named alike in two clusters are two domains, ``[east]r1`` and ``[west]r1``); a gang
requiring a rack lands in one rack of one member, the tightest among the members it may use; a
preferred request no rack holds still stays in one member; members replace placeholders inside
the rack; the index is checked against the nodes after every test."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pytest
from rm_helpers import World, check_invariants, res
from scheduling_helpers import config

from pyscheduler.scheduler.cycle import SchedulingCycle
from pyscheduler.si import messages as si
from pyscheduler.si.vocabulary import APP_TAG_CLUSTERS, APP_TAG_TOPOLOGY_PREFERRED, APP_TAG_TOPOLOGY_REQUIRED, \
    CLUSTER_ATTRIBUTE

RACK = "example.com/rack"
NODE = 1000
QUEUES = """\
          - name: gang
            properties: {application.sort.policy: fifo}
"""


@pytest.fixture
def w() -> Iterator[World]:
    made = World(config(QUEUES, policy="binpacking", partition_extra=f"    topology: {{levels: [{RACK}]}}\n"))
    yield made
    check_invariants(made.context)
    assert made.partition().topology.problems(made.partition().nodes) == []
    made.close()


def racks(w: World, cluster: str, sizes: Mapping[str, int]) -> None:
    for rack, count in sizes.items():
        for i in range(count):
            w.add_node(f"{cluster}-{rack}-n{i}", memory=1_000_000, vcore=NODE, **{CLUSTER_ATTRIBUTE: cluster, RACK: rack})


def gang(w: World, app_id: str, members: int, tags: Mapping[str, str]) -> None:
    w.apps(si.AddApplicationRequest(
        application_id=app_id, queue_name="root.gang", partition_name="default", ugi=si.UserGroupInformation(user="u"),
        tags=dict(tags), placeholder_ask=res(vcore=NODE * members)))
    for i in range(members):
        w.ask(f"{app_id}-ph{i}", app_id, res(vcore=NODE), placeholder=True, task_group_name="tg")


def run(w: World) -> None:
    cycle = SchedulingCycle(w.context)
    for _ in range(20):
        cycle.run()


def placed(w: World, app_id: str) -> set[tuple[str, str]]:
    """(cluster, rack) of each node ``app_id`` holds."""
    return {tuple(a.node_id.split("-")[:2]) for a in w.rm.allocations.values()  # type: ignore[misc]
            if a.application_id == app_id}


def test_racks_named_alike_in_two_members_are_two_domains(w: World) -> None:
    racks(w, "east", {"r1": 2, "r2": 2})
    racks(w, "west", {"r1": 2})
    domains = w.partition().topology.domains[RACK]
    assert sorted(domains) == ["[east]r1", "[east]r2", "[west]r1"]
    assert {d.cluster for d in domains.values()} == {"east", "west"}
    # East has room for 4 and 4 nodes are named r1, but no rack of one cluster holds 4.
    gang(w, "four", 4, {APP_TAG_TOPOLOGY_REQUIRED: RACK})
    run(w)
    assert placed(w, "four") == set()
    said = [u for u in w.rm.scheduling_states if u.application_id == "four"]
    assert said and "no example.com/rack domain has room" in said[-1].reason
    assert "the most free: example.com/rack=[east]r" in said[-1].reason  # a domain of the member with room


def test_a_gang_takes_the_tightest_rack_of_the_members_it_may_use(w: World) -> None:
    racks(w, "east", {"r1": 2, "r2": 4})
    racks(w, "west", {"r1": 3, "r2": 8})
    gang(w, "three", 3, {APP_TAG_TOPOLOGY_REQUIRED: RACK})
    run(w)
    assert placed(w, "three") == {("west", "r1")}  # exactly 3 free: the tightest of all
    assert w.app("three").member_cluster == "west" and w.app("three").topology_domain == "[west]r1"
    gang(w, "pinned", 3, {APP_TAG_TOPOLOGY_REQUIRED: RACK, APP_TAG_CLUSTERS: "east"})
    run(w)
    assert placed(w, "pinned") == {("east", "r2")}  # east's only rack with room for 3


def test_a_preferred_request_no_rack_holds_stays_in_one_member(w: World) -> None:
    racks(w, "east", {"r1": 2, "r2": 2})
    racks(w, "west", {"r1": 1})
    gang(w, "spread", 4, {APP_TAG_TOPOLOGY_PREFERRED: RACK})
    run(w)
    assert placed(w, "spread") == {("east", "r1"), ("east", "r2")}


def test_members_replace_placeholders_inside_the_rack(w: World) -> None:
    racks(w, "east", {"r1": 2, "r2": 6})
    racks(w, "west", {"r1": 5})
    gang(w, "job", 2, {APP_TAG_TOPOLOGY_REQUIRED: RACK})
    run(w)
    assert placed(w, "job") == {("east", "r1")}
    for i in range(2):
        w.ask(f"job-m{i}", "job", res(vcore=NODE), task_group_name="tg")
    cycle = SchedulingCycle(w.context)
    for _ in range(10):
        for decision in cycle.run():
            if decision.replaced is not None:
                w.release("job", decision.replaced.allocation_key, termination=si.TerminationType.PLACEHOLDER_REPLACED)
    members = {a.node_id for a in w.rm.allocations.values() if a.application_id == "job" and not a.placeholder}
    assert len(members) == 2 and all(n.startswith("east-r1-") for n in members)
