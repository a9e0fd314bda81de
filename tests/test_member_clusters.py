"""Member clusters through the RM interface (issue 33 level 2): a hub RM registers one partition
whose nodes carry ``pyscheduler.io/cluster``; each application is placed whole in one member
cluster (pyscheduler.objects.member_clusters, pyscheduler.scheduler.cluster_choice): room for
the whole application first, then the user's preference, then the node policy; gangs never
split; required and preferred tags; quotas across clusters; the index kept incrementally; a
cluster's last node gone unpins its applications. Preemption: test_member_clusters_preemption."""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping

import pytest
from rm_helpers import World, check_invariants, res
from scheduling_helpers import config

from pyscheduler.dao.applications import application_dao
from pyscheduler.dao.views import app_view
from pyscheduler.policies.role_history import HISTORY_KEY_TAG, ROLE_TAG
from pyscheduler.scheduler.cycle import SchedulingCycle
from pyscheduler.si import messages as si
from pyscheduler.si.events import EventChangeDetail as D
from pyscheduler.si.events import EventRecordType as T
from pyscheduler.si.vocabulary import (
    APP_TAG_CLUSTER_SELECTOR,
    APP_TAG_CLUSTERS,
    APP_TAG_PREFERRED_CLUSTER_SELECTOR,
    APP_TAG_PREFERRED_CLUSTERS,
    CLUSTER_ATTRIBUTE,
    CLUSTER_LABELS_ATTRIBUTE,
)

QUEUES = """\
          - name: a
            resources:
              max: {vcore: 100000}
          - name: gang
            properties: {application.sort.policy: fifo}
          - name: capped
            resources:
              max: {vcore: 2}
"""
POD = {"vcore": 1000}


@pytest.fixture
def w() -> Iterator[World]:
    made = World(config(QUEUES))
    yield made
    check_invariants(made.context)
    made.close()


def cnode(w: World, node_id: str, cluster: str, vcore: int = 1000, labels: str | None = None) -> None:
    """A node of member cluster ``cluster`` (``labels``: the cluster's, "k=v,k=v")."""
    attributes = {CLUSTER_ATTRIBUTE: cluster}
    if labels is not None:
        attributes[CLUSTER_LABELS_ATTRIBUTE] = labels
    w.add_node(node_id, memory=1_000_000, vcore=vcore, **attributes)


def app(w: World, app_id: str, queue: str = "root.a", tags: Mapping[str, str] | None = None,
        gang: Mapping[str, int] | None = None) -> None:
    w.apps(si.AddApplicationRequest(
        application_id=app_id, queue_name=queue, partition_name="default", ugi=si.UserGroupInformation(user="alice"),
        tags=dict(tags or {}), placeholder_ask=res(**gang) if gang else None))


def pods(w: World, app_id: str, count: int, prefix: str = "", *, placeholder: bool = False) -> None:
    for i in range(count):
        w.ask(f"{prefix or app_id}-{i}", app_id, res(**POD), placeholder=placeholder,
              task_group_name="tg" if placeholder else "")


def run(w: World, cycles: int = 10) -> None:
    cycle = SchedulingCycle(w.context)
    for _ in range(cycles):
        cycle.run()


def nodes_of(w: World, app_id: str) -> set[str]:
    return {a.node_id for a in w.rm.allocations.values() if a.application_id == app_id}


# -- choosing the cluster -----------------------------------------------------------------------------


def test_a_job_lands_where_all_of_it_fits_not_on_the_first_node_with_room_for_one_pod(w: World) -> None:
    cnode(w, "[east]n1", "east", vcore=1000)  # first in the node order, room for one pod
    cnode(w, "[west]n1", "west", vcore=4000)
    app(w, "job")
    pods(w, "job", 3)
    run(w)
    assert nodes_of(w, "job") == {"[west]n1"} and len(w.rm.allocations) == 3
    assert w.app("job").member_cluster == "west"
    # Visible: the REST application and an application event.
    partition = w.partition()
    with partition.lock:
        dao = application_dao(app_view(partition, w.app("job")))
    assert dao["memberCluster"] == "west"
    pinned = [e for e in w.events()
              if e[0] == T.APP and e[2] == D.DETAILS_NONE and e[3] == "job" and "member cluster" in e[5]]
    assert len(pinned) == 1 and "'west'" in pinned[0][5]


def test_without_the_cluster_attribute_nothing_changes() -> None:
    made = World(config(QUEUES))
    try:
        made.add_node("[east]n1", memory=1_000_000, vcore=1000)
        made.add_node("[west]n1", memory=1_000_000, vcore=4000)
        app(made, "job")
        pods(made, "job", 3)
        run(made)
        # Today's behaviour: the first node in order that fits takes the first pod.
        assert made.rm.allocations["job-0"].node_id == "[east]n1"
        assert not made.partition().member_clusters.clusters and made.app("job").member_cluster == ""
        partition = made.partition()
        with partition.lock:
            assert "memberCluster" not in application_dao(app_view(partition, made.app("job")))
    finally:
        made.close()


def test_a_gang_is_never_split(w: World) -> None:
    cnode(w, "[east]n1", "east", vcore=2000)
    for i in range(3):
        cnode(w, f"[west]n{i}", "west", vcore=1000)
    app(w, "g", "root.gang", gang={"vcore": 3000})
    pods(w, "g", 3, placeholder=True)
    run(w)
    placed = nodes_of(w, "g")
    assert len(w.rm.allocations) == 3 and placed == {"[west]n0", "[west]n1", "[west]n2"}
    assert w.app("g").member_cluster == "west"


def test_a_gang_that_fits_no_cluster_waits_with_the_reason_then_is_placed(w: World) -> None:
    for cluster in ("east", "west"):
        for i in range(2):
            cnode(w, f"[{cluster}]n{i}", cluster, vcore=1000)
    app(w, "g", "root.gang", gang={"vcore": 3000})
    pods(w, "g", 3, placeholder=True)
    run(w)
    assert w.rm.allocations == {} and w.app("g").member_cluster == ""
    states = [s for s in w.rm.scheduling_states if s.allocation_key == "g-0"]
    assert states and states[-1].state is si.ContainerSchedulingState.FAILED
    assert states[-1].code is si.SchedulingReason.NO_NODE_FITS
    assert "no member cluster has room for the whole application 'g'" in states[-1].reason
    assert "largest available: cluster 'east'" in states[-1].reason
    cnode(w, "[west]n2", "west", vcore=1000)  # room appears in west
    run(w)
    assert nodes_of(w, "g") == {"[west]n0", "[west]n1", "[west]n2"} and w.app("g").member_cluster == "west"


def test_a_job_whose_whole_need_fits_nowhere_is_placed_where_its_first_pod_fits(w: World) -> None:
    cnode(w, "[east]n1", "east", vcore=1000)
    cnode(w, "[west]n1", "west", vcore=2000)
    app(w, "job")
    pods(w, "job", 4)  # 4000 fits no cluster; fair: west (most room) first
    run(w)
    assert nodes_of(w, "job") == {"[west]n1"} and len(w.rm.allocations) == 2
    assert w.app("job").member_cluster == "west"


def test_the_required_cluster_pins_and_waits_for_its_cluster(w: World) -> None:
    cnode(w, "[east]n1", "east", vcore=4000)
    cnode(w, "[west]n1", "west", vcore=1000)
    app(w, "filler", tags={APP_TAG_CLUSTERS: "west"})
    pods(w, "filler", 1)
    run(w)
    assert nodes_of(w, "filler") == {"[west]n1"}
    app(w, "pinned", tags={APP_TAG_CLUSTERS: "west"})
    pods(w, "pinned", 1)
    run(w)
    assert nodes_of(w, "pinned") == set(), "east has room, but the application may only run in west"
    w.release("filler", "filler-0")
    run(w)
    assert nodes_of(w, "pinned") == {"[west]n1"} and w.app("pinned").member_cluster == "west"


def test_a_cluster_selector_chooses_by_labels(w: World) -> None:
    cnode(w, "[east]n1", "east", vcore=4000, labels="region=us,tier=gold")
    cnode(w, "[west]n1", "west", vcore=4000, labels="region=eu,tier=gold")
    app(w, "eu", tags={APP_TAG_CLUSTER_SELECTOR: "tier=gold,region=eu"})
    pods(w, "eu", 2)
    app(w, "nowhere", tags={APP_TAG_CLUSTER_SELECTOR: "region=asia"})
    pods(w, "nowhere", 1)
    run(w)
    assert nodes_of(w, "eu") == {"[west]n1"} and nodes_of(w, "nowhere") == set()
    states = [s for s in w.rm.scheduling_states if s.allocation_key == "nowhere-0"]
    assert states and "no member cluster matches" in states[-1].reason


@pytest.mark.parametrize("tags", [
    {APP_TAG_PREFERRED_CLUSTERS: "west,east"},
    {APP_TAG_PREFERRED_CLUSTER_SELECTOR: "region=eu"},
])
def test_preferences_steer_among_the_clusters_with_room(w: World, tags: dict[str, str]) -> None:
    cnode(w, "[east]n1", "east", vcore=4000, labels="region=us")
    cnode(w, "[west]n1", "west", vcore=2000, labels="region=eu")
    app(w, "job", tags=tags)
    pods(w, "job", 2)
    run(w)
    # Fair would take east (more room left); the preference takes west, which has room for it.
    assert nodes_of(w, "job") == {"[west]n1"}
    # A preferred cluster without room for the whole job comes after the ones with room.
    app(w, "big", tags=tags)
    pods(w, "big", 3)
    run(w)
    assert nodes_of(w, "big") == {"[east]n1"}


@pytest.mark.parametrize(("policy", "expected"), [("fair", "west"), ("binpacking", "east")])
def test_the_node_policy_orders_the_clusters(policy: str, expected: str) -> None:
    made = World(config(QUEUES, policy=policy))
    try:
        cnode(made, "[east]n1", "east", vcore=4000)
        cnode(made, "[west]n1", "west", vcore=4000)
        app(made, "half", tags={APP_TAG_CLUSTERS: "east"})
        pods(made, "half", 2)
        run(made)
        app(made, "job")
        pods(made, "job", 1)
        run(made)
        # fair: the cluster with the most room left (west); binpacking: the tightest that fits.
        assert made.app("job").member_cluster == expected
        assert nodes_of(made, "job") == {f"[{expected}]n1"}
    finally:
        made.close()


def test_a_queue_max_counts_usage_in_every_cluster(w: World) -> None:
    cnode(w, "[east]n1", "east", vcore=4000)
    cnode(w, "[west]n1", "west", vcore=4000)
    app(w, "in-east", "root.capped", tags={APP_TAG_CLUSTERS: "east"})
    pods(w, "in-east", 1)
    app(w, "in-west", "root.capped", tags={APP_TAG_CLUSTERS: "west"})
    pods(w, "in-west", 2)
    run(w)
    # root.capped's max is 2000: one pod in east and one in west, the third waits for quota.
    assert len(nodes_of(w, "in-east")) == 1 and len(w.rm.allocations) == 2
    assert w.queue("root.capped").allocated == res(vcore=2000)
    codes = {s.code for s in w.rm.scheduling_states if s.allocation_key == "in-west-1"}
    assert si.SchedulingReason.QUEUE_QUOTA in codes


def test_a_required_node_pins_to_its_cluster_and_its_cluster_only(w: World) -> None:
    cnode(w, "[east]n1", "east", vcore=4000)
    cnode(w, "[west]n1", "west", vcore=4000)
    app(w, "ds")
    w.ask("ds-0", "ds", res(**POD), allocation_tags={"yunikorn.apache.org/requiredNode": "[east]n1"})
    run(w)
    assert nodes_of(w, "ds") == {"[east]n1"} and w.app("ds").member_cluster == "east"
    w.ask("ds-1", "ds", res(**POD), allocation_tags={"yunikorn.apache.org/requiredNode": "[west]n1"})
    run(w)
    assert "ds-1" not in w.rm.allocations, "its node is in another cluster than its application's"


@pytest.mark.parametrize(("tags", "reserved_in"), [({APP_TAG_CLUSTERS: "west"}, "[west]n1"), ({}, "[east]n1")])
def test_a_reservation_stays_in_the_application_s_clusters(w: World, tags: dict[str, str], reserved_in: str) -> None:
    cnode(w, "[east]n1", "east", vcore=4000)
    cnode(w, "[west]n1", "west", vcore=4000)
    for cluster, used in (("east", 2500), ("west", 3000)):
        app(w, f"filler-{cluster}", tags={APP_TAG_CLUSTERS: cluster})
        w.ask(f"filler-{cluster}-0", f"filler-{cluster}", res(vcore=used))
    run(w)
    app(w, "big", tags=tags)
    w.ask("big-0", "big", res(vcore=2000))
    run(w, 1)
    w.advance(3.0)  # past the reservation delay
    run(w, 1)
    # East is closer to fitting it (1500 free against 1000); west when the app may only use west.
    assert w.partition().reservations.by_key["big-0"].node_id == reserved_in
    w.release(f"filler-{reserved_in[1:5]}", f"filler-{reserved_in[1:5]}-0")
    run(w, 1)
    assert w.rm.allocations["big-0"].node_id == reserved_in


def test_a_history_node_in_another_cluster_is_ignored(w: World) -> None:
    cnode(w, "[east]n1", "east", vcore=4000)
    cnode(w, "[west]n1", "west", vcore=4000)
    for app_id, tags in (("old", {APP_TAG_CLUSTERS: "east"}), ("new", {APP_TAG_CLUSTERS: "west"})):
        app(w, app_id, tags={HISTORY_KEY_TAG: "svc", **tags})
        w.ask(f"{app_id}-0", app_id, res(**POD), allocation_tags={ROLE_TAG: "worker"})
        run(w)
        if app_id == "old":
            assert nodes_of(w, "old") == {"[east]n1"}
            w.remove_app("old")
    # Its history says [east]n1, but the application may only use west: it does not wait there.
    assert nodes_of(w, "new") == {"[west]n1"}


# -- clusters that go, the index, hostile values ---------------------------------------------------------


def test_a_cluster_losing_its_last_node_unpins_its_applications(w: World) -> None:
    cnode(w, "[east]n1", "east", vcore=4000)
    cnode(w, "[west]n1", "west", vcore=2000)
    app(w, "job")
    pods(w, "job", 2)
    run(w)
    assert nodes_of(w, "job") == {"[east]n1"} and w.app("job").member_cluster == "east"
    w.node("[east]n1", si.NodeAction.DECOMISSION)
    assert w.app("job").member_cluster == "" and "east" not in w.partition().member_clusters.clusters
    assert nodes_of(w, "job") == set()
    unpinned = [e for e in w.events() if e[0] == T.APP and e[3] == "job" and "no longer placed" in e[5]]
    assert len(unpinned) == 1
    pods(w, "job", 2, prefix="job-again")  # the RM re-adds the pods' asks
    run(w)
    assert nodes_of(w, "job") == {"[west]n1"} and w.app("job").member_cluster == "west"


def test_the_index_follows_nodes_and_allocations(w: World) -> None:
    cnode(w, "[east]n1", "east", vcore=4000, labels="region=eu")
    cnode(w, "[east]n2", "east", vcore=2000, labels="region=us")  # the latest labels win
    plain = "plain-node"
    w.add_node(plain, memory=1_000_000, vcore=8000)  # in no cluster
    clusters = w.partition().member_clusters
    east = clusters.clusters["east"]
    assert east.labels == {"region": "us"} and set(east.nodes) == {"[east]n1", "[east]n2"}
    assert east.total.get("vcore") == 6000 and east.available.get("vcore") == 6000
    app(w, "job", tags={APP_TAG_CLUSTERS: "east"})
    pods(w, "job", 2)
    run(w)
    assert east.allocated.get("vcore") == 2000 and east.available.get("vcore") == 4000
    w.release("job", "job-0")
    assert east.allocated.get("vcore") == 1000 and east.available.get("vcore") == 5000
    # Unschedulable nodes add no available room; a node moving clusters moves its sums.
    w.node("[east]n2", si.NodeAction.DRAIN_NODE)
    assert east.available.get("vcore") == 4000 - east.nodes["[east]n1"].allocated.get("vcore", 0)
    w.node("[east]n2", si.NodeAction.DRAIN_TO_SCHEDULABLE)
    w.nodes(si.NodeInfo(node_id="[east]n2", action=si.NodeAction.UPDATE,
                        attributes={CLUSTER_ATTRIBUTE: "west"}, schedulable_resource=res(memory=1_000_000, vcore=2000)))
    west = clusters.clusters["west"]
    assert set(east.nodes) == {"[east]n1"} and set(west.nodes) == {"[east]n2"}
    assert east.total.get("vcore") == 4000 and west.total.get("vcore") == 2000 and west.labels == {}
    assert clusters.cluster_of(plain) is None


@pytest.mark.parametrize(("tag", "value"), [
    (APP_TAG_CLUSTERS, ""),
    (APP_TAG_CLUSTERS, "east,,west"),
    (APP_TAG_CLUSTERS, "east, west"),
    (APP_TAG_CLUSTERS, "east=1"),
    (APP_TAG_CLUSTER_SELECTOR, "region"),
    (APP_TAG_CLUSTER_SELECTOR, "a=b=c"),
    (APP_TAG_CLUSTER_SELECTOR, "=eu"),
    (APP_TAG_CLUSTER_SELECTOR, "region=eu,region=us"),
    (APP_TAG_PREFERRED_CLUSTERS, ","),
    (APP_TAG_PREFERRED_CLUSTER_SELECTOR, "region =eu"),
])
def test_a_malformed_cluster_tag_rejects_the_application(w: World, tag: str, value: str) -> None:
    cnode(w, "[east]n1", "east")
    app(w, "bad", tags={tag: value})
    reason = w.rm.rejected_apps["bad"]
    assert tag in reason and "bad" in reason
    assert "bad" not in w.partition().applications


def test_malformed_cluster_labels_are_skipped_not_refused(w: World) -> None:
    cnode(w, "[east]n1", "east", labels="=x,a=b=c,,  ,region=eu,novalue")
    assert "[east]n1" in w.rm.accepted_nodes
    assert w.partition().member_clusters.clusters["east"].labels == {"region": "eu"}


@pytest.mark.parametrize("seed", range(8))
def test_random_traffic_never_splits_an_application(seed: int) -> None:
    """Random nodes, jobs, gangs, releases and node removals over three clusters: every
    application's allocations stay in its one member cluster, and the bookkeeping holds."""
    rng = random.Random(seed)
    made = World(config(QUEUES, policy=rng.choice(["fair", "binpacking"])))
    try:
        clusters = ("east", "west", "north")
        next_node = 0
        cycle = SchedulingCycle(made.context)
        for step in range(80):
            choice = rng.random()
            partition = made.partition()
            if choice < 0.2 or not partition.nodes:
                cnode(made, f"n{next_node}", rng.choice(clusters), vcore=rng.choice((1000, 2000, 3000)))
                next_node += 1
            elif choice < 0.45:
                app_id = f"app{step}"
                count = rng.randint(1, 4)
                if rng.random() < 0.4:
                    app(made, app_id, "root.gang", gang={"vcore": 1000 * count})
                    pods(made, app_id, count, placeholder=True)
                else:
                    tags = {APP_TAG_PREFERRED_CLUSTERS: rng.choice(clusters)} if rng.random() < 0.3 else {}
                    app(made, app_id, tags=tags)
                    pods(made, app_id, count)
            elif choice < 0.6 and made.rm.allocations:
                alloc = rng.choice(list(made.rm.allocations.values()))
                made.release(alloc.application_id, alloc.allocation_key)
            elif choice < 0.68:
                made.node(rng.choice(sorted(partition.nodes)), si.NodeAction.DECOMISSION)
            for _ in range(3):
                cycle.run()
            partition = made.partition()
            with partition.lock:
                for application in partition.applications.values():
                    where = {partition.member_clusters.cluster_of_node.get(a.node_id)
                             for a in application.allocations.values()}
                    assert len(where) <= 1, f"{application.app_id} split over {where}"
                    if where:
                        assert where == {application.member_cluster}, (application.app_id, where)
            check_invariants(made.context)
    finally:
        made.close()
