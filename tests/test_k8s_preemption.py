"""Preemption on a real API server (kwok nodes), through ``pyscheduler serve --rm
pyscheduler_k8s:attach``: a queue with a guarantee, starved by a cluster that another queue
filled, gets its guarantee back by preemption within its preemption delay plus a few cycles. The
victims are the ones YuniKorn's rules pick (priority no higher than the ask's; pods that allow
preemption before those that opted out), each deleted gracefully with a ``Preempted`` event
naming the pod that took its place; a pod that opted out (its own annotation or its
PriorityClass's) is never a victim; a pod whose PriorityClass says ``preemptionPolicy: Never``
preempts nobody. The REST API shows the preemptions (the core's events, the applications'
preempted resource history)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kube_cluster import KubeCluster
from kube_served import create_pods, delete_pods, events_of, list_pods, pod_body, running, serving, small_cluster
from web_helpers import Server

from pyscheduler.si.events import EventChangeDetail, EventRecordType

pytestmark = pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")

NAMESPACE = "shared"
NODES = 4  # of 4 cpu: 16 cpu in all
DELAY = 3.0
QUEUES = f"""\
partitions:
  - name: default
    placementrules:
      - name: provided
        create: false
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: prod
            properties: {{preemption.delay: {DELAY:g}s}}
            resources:
              guaranteed: {{vcore: 4}}
          - name: batch
"""
#: name -> (value, allow-preemption annotation or None, preemptionPolicy)
CLASSES = {"low": (0, None, "PreemptLowerPriority"), "low-opted-out": (0, "false", "PreemptLowerPriority"),
           "high": (1000, None, "PreemptLowerPriority"), "prod": (100, None, "PreemptLowerPriority"),
           "prod-never": (100, None, "Never")}


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeCluster]:
    with small_cluster(tmp_path_factory.mktemp("kube-preemption"), [f"pre-{n}" for n in range(NODES)],
                       NAMESPACE) as cluster:
        for name, (value, allow, policy) in CLASSES.items():
            meta: dict[str, Any] = {"name": name}
            if allow is not None:
                meta["annotations"] = {"yunikorn.apache.org/allow-preemption": allow}
            answer = cluster.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses",
                                     {"metadata": meta, "value": value, "preemptionPolicy": policy})
            assert answer.status_code == 201, answer.text
        yield cluster


@pytest.fixture(scope="module")
def server(kube: KubeCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(kube, tmp_path_factory.mktemp("serve-preemption"), QUEUES) as running_server:
        yield running_server


@pytest.fixture(autouse=True)
def clean(kube: KubeCluster) -> Iterator[None]:
    yield
    delete_pods(kube, NAMESPACE)


def _fill(kube: KubeCluster) -> dict[str, str]:
    """The batch queue takes all 16 cpu, each node holding one pod that may be preempted
    (``low-N`` on node N), three holding one that opted out (``kept-0`` and ``kept-1`` by their
    PriorityClass, ``kept-2`` by its own annotation), the rest above the prod pods' priority (never
    victims). Pinned to their nodes so what each node offers is known. Returns name -> uid."""
    def on(node: int, name: str, app: str, **extra: Any) -> dict[str, Any]:
        return pod_body(name, app, "root.batch", nodeSelector={"kubernetes.io/hostname": f"pre-{node}"}, **extra)

    bodies = [on(n, f"low-{n}", "batch-low", priorityClassName="low") for n in range(NODES)]
    bodies += [on(0, "kept-0", "batch-low", priorityClassName="low-opted-out", labels={"tier": "cache"}),
               on(1, "kept-1", "batch-low", priorityClassName="low-opted-out", labels={"tier": "cache"}),
               on(2, "kept-2", "batch-low", priorityClassName="low", labels={"tier": "cache"},
                  annotations={"yunikorn.apache.org/allow-preemption": "false"})]
    high = [n for n in range(NODES) for _ in range(2 if n < 3 else 3)]
    bodies += [on(node, f"high-{i}", "batch-high", priorityClassName="high") for i, node in enumerate(high)]
    pods = create_pods(kube, NAMESPACE, bodies)
    kube.wait_for("the batch pods bound", lambda: len([p for p in list_pods(kube, NAMESPACE)
                                                       if p["spec"].get("nodeName")]) == 16, timeout=60)
    return {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods}


def test_a_starved_guaranteed_queue_gets_its_guarantee_back(kube: KubeCluster, server: Server) -> None:
    batch = _fill(kube)
    started = time.monotonic()
    prod = create_pods(kube, NAMESPACE, [pod_body(f"prod-{n}", "prod", "root.prod", priorityClassName="prod")
                                         for n in range(4)])
    names = [p["metadata"]["name"] for p in prod]
    kube.wait_for("the prod pods bound", lambda: all(
        p["spec"].get("nodeName") for p in list_pods(kube, NAMESPACE) if p["metadata"]["name"] in names), timeout=DELAY + 30)
    took = time.monotonic() - started
    kube.wait_for("the prod pods running", lambda: all(
        running(p) for p in list_pods(kube, NAMESPACE) if p["metadata"]["name"] in names), timeout=60)
    left = {p["metadata"]["name"] for p in list_pods(kube, NAMESPACE)}
    victims = sorted(set(batch) - left)
    # YuniKorn's rules: only pods of priority <= the ask's, those allowing preemption first (an
    # opted-out pod only when nothing else can make room: here something always can).
    assert victims == [f"low-{n}" for n in range(4)], victims
    assert {"kept-0", "kept-1", "kept-2"} <= left and all(f"high-{n}" in left for n in range(9))
    # The delay, a few cycles, and the victims' graceful deletion by the API server and kwok.
    assert took < DELAY + 10, f"guarantee back after {took:.1f} s"
    # Each victim was told who took its place; the core's events say the same.
    preemptors = {p["metadata"]["uid"]: f"{NAMESPACE}/{p['metadata']['name']}" for p in prod}
    for victim in victims:
        said = [e["message"] for e in events_of(kube, NAMESPACE, victim) if e["reason"] == "Preempted"]
        assert len(said) == 1 and any(name in said[0] for name in preemptors.values()), said
    # In the REST API: each victim's allocation removed as preempted (APP REMOVE ALLOC_PREEMPT),
    # once its pod was gone and the shim confirmed it.
    events = server.get("/ws/v1/events/batch?count=10000").json()["EventRecords"]
    preempted = {e.get("referenceID") for e in events
                 if e.get("type") == EventRecordType.APP and e.get("eventChangeDetail") == EventChangeDetail.ALLOC_PREEMPT}
    assert preempted == {batch[v] for v in victims}
    history = server.get("/ws/v1/partition/default/queue/root.batch/application/batch-low").json()
    assert history["resourceHistory"]["preemptedResource"]
    print(f"guarantee of 4 cpu back (prod pods bound) {took:.1f} s after they were created (delay {DELAY:g} s)")


def test_preemption_frees_a_node_the_pod_s_anti_affinity_allows(kube: KubeCluster, server: Server) -> None:
    """The prod pod keeps away from the ``tier: cache`` pods (on nodes 0-2, never victims): only
    node 3 can take it, so that node's low pod is the victim, not the first node's: preemption
    asks the shim whether the pod would fit once the victims are gone, anti-affinity included
    (kube-scheduler's preemption runs its filters the same way)."""
    batch = _fill(kube)
    away = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"tier": "cache"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    create_pods(kube, NAMESPACE, [pod_body("prod-away", "prod", "root.prod", priorityClassName="prod", affinity=away)])
    node = kube.wait_for("prod-away bound", lambda: next(
        (p["spec"].get("nodeName") for p in list_pods(kube, NAMESPACE) if p["metadata"]["name"] == "prod-away"), None),
        timeout=DELAY + 30)
    assert node == "pre-3"
    left = {p["metadata"]["name"] for p in list_pods(kube, NAMESPACE)}
    assert sorted(set(batch) - left) == ["low-3"]


def test_a_pod_that_may_not_preempt_waits(kube: KubeCluster, server: Server) -> None:
    _fill(kube)
    create_pods(kube, NAMESPACE, [pod_body("never-0", "prod-never", "root.prod", priorityClassName="prod-never")])
    time.sleep(DELAY + 6)
    pods = {p["metadata"]["name"]: p for p in list_pods(kube, NAMESPACE)}
    assert len(pods) == 17 and not pods["never-0"]["spec"].get("nodeName")
    uids = {p["metadata"]["uid"] for p in pods.values()}
    events = kube.request("GET", f"/api/v1/namespaces/{NAMESPACE}/events").json()["items"]
    assert not [e for e in events if e["reason"] == "Preempted" and e["involvedObject"]["uid"] in uids]
