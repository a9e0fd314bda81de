"""Topology-aware gangs on a real API server (issue 34, first part): the ConfigMap's partition
names its topology levels (``topology.levels``), kwok nodes carry a rack label, and a gang
written for YuniKorn (task-groups annotations) with ``pyscheduler.io/topology-required: <rack
label>`` lands whole in one rack, the tightest with room (its placeholders and its members);
without the annotation the same gang may spread. Through ``pyscheduler serve --rm
pyscheduler_k8s:attach``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kube_cluster import KubeCluster
from kube_served import create_pods, delete_pods, labelled_cluster, list_pods, pod_body, running, serving, \
    topology_queues
from web_helpers import Server

pytestmark = pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")

NAMESPACE = "train"
RACK = "example.com/rack"
#: Rack -> its nodes (2 cpu each): r-big has room for 4 one-cpu pairs, r-fit for exactly 2 nodes.
RACKS = {"r-big": ["big-0", "big-1", "big-2", "big-3"], "r-fit": ["fit-0", "fit-1"]}
QUEUES = topology_queues(RACK, node_sort="fair")


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeCluster]:
    labels = {node: {RACK: rack} for rack, nodes in RACKS.items() for node in nodes}
    with labelled_cluster(tmp_path_factory.mktemp("kube-topology"), labels, NAMESPACE) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def server(kube: KubeCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(kube, tmp_path_factory.mktemp("serve-topology"), QUEUES) as running_server:
        yield running_server


@pytest.fixture(autouse=True)
def clean(kube: KubeCluster) -> Iterator[None]:
    yield
    delete_pods(kube, NAMESPACE)


def _gang(app: str, members: int, annotations: dict[str, str]) -> list[dict[str, Any]]:
    """A training job as YuniKorn's docs write one: ``members`` workers of 2 cpu (a node each)."""
    groups = json.dumps([{"name": "worker", "minMember": members, "minResource": {"cpu": "2"}}])
    return [pod_body(f"{app}-{n}", app, "root.train", "2", annotations={
        "yunikorn.apache.org/task-groups": groups, "yunikorn.apache.org/task-group-name": "worker", **annotations})
        for n in range(members)]


def _rack_of(node: str) -> str:
    return next(rack for rack, nodes in RACKS.items() if node in nodes)


def _members_running(kube: KubeCluster, app: str, count: int) -> list[dict[str, Any]]:
    def done() -> list[dict[str, Any]] | None:
        pods = [p for p in list_pods(kube, NAMESPACE, f"applicationId={app}")
                if p["metadata"].get("labels", {}).get("placeholder") != "true"]
        return pods if len(pods) == count and all(running(p) for p in pods) else None

    return list(kube.wait_for(f"the members of {app} running", done, timeout=90))


def test_a_gang_with_a_required_rack_lands_whole_in_the_tightest_rack(kube: KubeCluster, server: Server) -> None:
    create_pods(kube, NAMESPACE, _gang("ranked", 2, {"pyscheduler.io/topology-required": RACK}))
    members = _members_running(kube, "ranked", 2)
    assert {_rack_of(p["spec"]["nodeName"]) for p in members} == {"r-fit"}  # best fit: exactly its room
    app = server.get("/ws/v1/partition/default/queue/root.train/application/ranked").json()
    nodes = {a["nodeId"] for a in app["allocations"]}
    assert nodes and {_rack_of(n) for n in nodes} == {"r-fit"}


def test_a_required_rack_that_no_rack_holds_makes_the_gang_wait_with_the_reason(kube: KubeCluster,
                                                                                server: Server) -> None:
    create_pods(kube, NAMESPACE, _gang("too-big", 5, {"pyscheduler.io/topology-required": RACK}))

    def said() -> str:
        for pod in list_pods(kube, NAMESPACE, "applicationId=too-big"):  # its placeholders say it
            for condition in pod.get("status", {}).get("conditions", []):
                if condition.get("type") == "PodScheduled" and "domain has room" in condition.get("message", ""):
                    return str(condition["message"])
        return ""

    message = kube.wait_for("the reason on a pod", said, timeout=60)
    assert f"no {RACK} domain has room for the whole application 'too-big'" in message
    assert not [p for p in list_pods(kube, NAMESPACE) if p["spec"].get("nodeName")]  # nothing placed


def test_a_gang_in_the_same_partition_without_the_request_may_spread(kube: KubeCluster, server: Server) -> None:
    create_pods(kube, NAMESPACE, _gang("free", 5, {}))
    members = _members_running(kube, "free", 5)
    assert len({_rack_of(p["spec"]["nodeName"]) for p in members}) == 2


def test_task_group_topology_fields_keep_the_gang_in_one_rack(kube: KubeCluster, server: Server) -> None:
    """The same request from the task groups themselves (``topologyRequired``), no annotation."""
    groups = json.dumps([{"name": "worker", "minMember": 2, "minResource": {"cpu": "2"}, "topologyRequired": RACK}])
    create_pods(kube, NAMESPACE, [pod_body(f"fields-{n}", "fields", "root.train", "2", annotations={
        "yunikorn.apache.org/task-groups": groups, "yunikorn.apache.org/task-group-name": "worker"}) for n in range(2)])
    members = _members_running(kube, "fields", 2)
    assert {_rack_of(p["spec"]["nodeName"]) for p in members} == {"r-fit"}
