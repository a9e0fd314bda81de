"""Role history for a topology-aware gang on a real API server (issue 34): a training job's
ranks come back to their nodes when the job is started again. The pods are written as the Job
controller writes an Indexed Job's (an owner reference to the Job, the completion index label)
plus YuniKorn's task-group annotations and a required rack; no controller manager is needed to
show what the scheduler does with them.

The first run finds the small rack full (a filler holds it) and lands in the big rack. The job
is deleted and started again as a new application with the same Job name (its history key,
``job/<namespace>/<name>``) while the small rack, now free, is the tightest fit: the gang goes
back to the big rack and every rank to the node it had, though its pods now arrive in reverse
order. Through ``pyscheduler serve --rm pyscheduler_k8s:attach``."""

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

NAMESPACE = "ranks"
RACK = "example.com/rack"
RACKS = {"r-small": [f"small-{i}" for i in range(4)], "r-big": [f"big-{i}" for i in range(8)]}
RANKS = 4
QUEUES = topology_queues(RACK, node_sort="fair")


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeCluster]:
    labels = {node: {RACK: rack} for rack, nodes in RACKS.items() for node in nodes}
    with labelled_cluster(tmp_path_factory.mktemp("kube-ranks"), labels, NAMESPACE) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def server(kube: KubeCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(kube, tmp_path_factory.mktemp("serve-ranks"), QUEUES) as running_server:
        yield running_server


def _indexed_job_pods(app: str, prefix: str, *, reverse: bool = False) -> list[dict[str, Any]]:
    """The pods of Indexed Job ``train`` (one node each), as its controller names and labels
    them, in application ``app``, gang of all ranks requiring one rack."""
    groups = json.dumps([{"name": "worker", "minMember": RANKS, "minResource": {"cpu": "2"},
                          "topologyRequired": RACK}])
    pods = []
    for index in range(RANKS):
        body = pod_body(f"{prefix}-{index}", app, "root.train", "2",
                        labels={"batch.kubernetes.io/job-completion-index": str(index), "job-name": "train"},
                        annotations={"yunikorn.apache.org/task-groups": groups,
                                     "yunikorn.apache.org/task-group-name": "worker"})
        body["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "train",
                                                "uid": "00000000-0000-0000-0000-00000000a11c", "controller": True}]
        pods.append(body)
    return pods[::-1] if reverse else pods


def _ranks_placed(kube: KubeCluster, app: str) -> dict[int, str]:
    def done() -> dict[int, str] | None:
        pods = [p for p in list_pods(kube, NAMESPACE, f"applicationId={app}")
                if p["metadata"].get("labels", {}).get("placeholder") != "true"]
        # kwok's pod-complete stage ends a Job's pods soon after they run (tools/k8s/build.sh).
        if len(pods) != RANKS or not all(running(p) or p["status"].get("phase") == "Succeeded" for p in pods):
            return None
        return {int(p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"]): p["spec"]["nodeName"]
                for p in pods}

    return dict(kube.wait_for(f"the ranks of {app} placed", done, timeout=90))


def _rack_of(node: str) -> str:
    return next(rack for rack, nodes in RACKS.items() if node in nodes)


def test_a_training_job_started_again_puts_each_rank_back_on_its_node(kube: KubeCluster, server: Server) -> None:
    filler = [pod_body(f"filler-{i}", "filler", "root.train", "2", nodeSelector={RACK: "r-small"})
              for i in range(len(RACKS["r-small"]))]
    create_pods(kube, NAMESPACE, filler)
    kube.wait_for("the filler running", lambda: len([p for p in list_pods(kube, NAMESPACE, "applicationId=filler")
                                                     if running(p)]) == len(filler), timeout=60)
    create_pods(kube, NAMESPACE, _indexed_job_pods("train-1", "train-a"))
    first = _ranks_placed(kube, "train-1")
    assert {_rack_of(node) for node in first.values()} == {"r-big"}  # the small rack was full

    delete_pods(kube, NAMESPACE)  # the job and the filler end; the small rack is free and tightest
    kube.wait_for("the pods gone", lambda: not list_pods(kube, NAMESPACE), timeout=60)
    kube.wait_for("the scheduler seeing them gone", lambda: not server.get(
        "/ws/v1/partition/default/queue/root.train/applications").json() or all(
        app.get("allocations") in (None, []) for app in server.get(
            "/ws/v1/partition/default/queue/root.train/applications").json()), timeout=60)

    create_pods(kube, NAMESPACE, _indexed_job_pods("train-2", "train-b", reverse=True))
    again = _ranks_placed(kube, "train-2")
    assert again == first
