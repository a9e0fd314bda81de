"""kube-scheduler's inter-pod constraints honoured on a real API server (issue 30): required pod
anti-affinity (a StatefulSet's replicas on distinct nodes, the one too many Pending with the
reason), required pod affinity (a pod beside the pod it needs), topology spread by zone,
scheduling gates, and the pods of an application the placement rules refuse marked Failed as
YuniKorn marks them.

The nodes are sized so that the core's own node order would choose otherwise: two large nodes in
zone ``a`` and two small ones in zone ``b`` (the fair policy prefers the emptiest, so without the
constraints the pods would pile into zone ``a``)."""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from kube_cluster import KubeCluster, start_cluster
from kube_served import Served, delete_pods, served_while

NAMESPACE = "shop"
ZONE = "topology.kubernetes.io/zone"
NODES = {"big-0": ("a", "32"), "big-1": ("a", "32"), "small-0": ("b", "4"), "small-1": ("b", "4")}
pytestmark = pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeCluster]:
    cluster = start_cluster(tmp_path_factory.mktemp("kube"))
    try:
        for name, (zone, cpu) in NODES.items():
            cluster.add_node(name, cpu=cpu, memory="64Gi")
            pool = {"pool": "stateful"} if name in ("big-0", "small-0") else {}
            answer = cluster.session.patch(f"{cluster.server}/api/v1/nodes/{name}", verify=False, timeout=10,
                                           json={"metadata": {"labels": {ZONE: zone, **pool}}},
                                           headers={"Content-Type": "application/merge-patch+json"})
            assert answer.status_code == 200, answer.text
        cluster.ensure_namespace(NAMESPACE)
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def served(kube: KubeCluster) -> Iterator[Served]:
    with served_while(kube, then=lambda: delete_pods(kube, NAMESPACE)) as running:
        yield running


_names = itertools.count()


def _pod(kube: KubeCluster, name: str, labels: dict[str, str], *, cpu: str = "500m", app: str = "shop-app",
         queue: str = "root.default", **spec: Any) -> dict[str, Any]:
    body = {"metadata": {"name": name, "labels": {"yunikorn.apache.org/app-id": app, "queue": queue, **labels}},
            "spec": {"schedulerName": "pyscheduler", "containers": [
                {"name": "c", "image": "registry.k8s.io/pause:3.7", "resources": {"requests": {"cpu": cpu}}}],
                     **spec}}
    answer = kube.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", body)
    assert answer.status_code == 201, answer.text
    created: dict[str, Any] = answer.json()
    return created


def _get(kube: KubeCluster, name: str) -> dict[str, Any]:
    found: dict[str, Any] = kube.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods/{name}").json()
    return found


def _node_of(kube: KubeCluster, name: str) -> str:
    """The node the pod is bound to (the binding is ours; kwok reports Running up to seconds
    later, which says nothing about the scheduler)."""
    return str(_get(kube, name).get("spec", {}).get("nodeName") or "")


def _condition(kube: KubeCluster, name: str) -> dict[str, Any] | None:
    for condition in _get(kube, name).get("status", {}).get("conditions", []):
        if condition["type"] == "PodScheduled":
            return condition  # type: ignore[no-any-return]
    return None


def _events(kube: KubeCluster, name: str) -> list[dict[str, Any]]:
    items = kube.request("GET", f"/api/v1/namespaces/{NAMESPACE}/events").json().get("items", [])
    return [e for e in items if e.get("involvedObject", {}).get("name") == name]


def _anti_affinity(app: str, key: str = "kubernetes.io/hostname") -> dict[str, Any]:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}]}}


def test_a_statefulset_with_required_anti_affinity_leaves_the_third_replica_pending(
        kube: KubeCluster, served: Served) -> None:
    # A StatefulSet (Parallel pod management) of 3 on the 2 nodes its selector allows; no
    # controller manager runs here, so the pods it would create are created as it would.
    names = [f"web-{n}" for n in range(3)]
    for name in names:
        _pod(kube, name, {"app": "web", "statefulset.kubernetes.io/pod-name": name},
             nodeSelector={"pool": "stateful"}, affinity=_anti_affinity("web"), hostname=name)

    def two_running() -> dict[str, str] | None:
        nodes = {n: _node_of(kube, n) for n in names}
        return nodes if sum(1 for v in nodes.values() if v) == 2 else None

    placed = kube.wait_for("two replicas bound", two_running, timeout=60)
    pending = [n for n, node in placed.items() if not node]
    assert len(pending) == 1
    assert sorted(v for v in placed.values() if v) == ["big-0", "small-0"]  # one per node
    condition = kube.wait_for("the third is marked", lambda: _condition(kube, pending[0]), timeout=30)
    assert condition["status"] == "False" and condition["reason"] == "Unschedulable"
    assert "anti-affinity" in condition["message"], condition["message"]
    # It stays so: no node takes it while its twins run.
    time.sleep(1.0)
    assert not _node_of(kube, pending[0])
    # A twin goes: the third takes its node.
    gone = next(n for n, node in placed.items() if node)
    kube.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods/{gone}?gracePeriodSeconds=0")
    kube.wait_for("the third runs where its twin was", lambda: _node_of(kube, pending[0]) == placed[gone], timeout=60)


def test_a_pod_with_required_affinity_goes_beside_the_pod_it_needs(kube: KubeCluster, served: Served) -> None:
    # The cache lands on a small node (its selector says so); the fair policy would put the web
    # pod on an emptier big node, its affinity puts it beside the cache.
    _pod(kube, "cache", {"app": "cache"}, cpu="2", nodeSelector={"kubernetes.io/hostname": "small-1"})
    kube.wait_for("cache bound", lambda: _node_of(kube, "cache") == "small-1", timeout=60)
    _pod(kube, "front", {"app": "front"}, affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": "kubernetes.io/hostname"}]}})
    kube.wait_for("front beside the cache", lambda: _node_of(kube, "front") == "small-1", timeout=60)
    # Affinity to a zone: a pod needing the cache's zone goes to zone b, whichever node.
    _pod(kube, "zonal", {"app": "zonal"}, affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": ZONE}]}})
    kube.wait_for("zonal in zone b", lambda: _node_of(kube, "zonal") in ("small-0", "small-1"), timeout=60)
    # The symmetric rule: a pod that anti-affines the cache's zone is kept out of zone b, and a
    # plain pod matching an existing pod's anti-affinity is kept away from it.
    _pod(kube, "loner", {"app": "loner"}, affinity=_anti_affinity("loner", ZONE))
    kube.wait_for("loner bound", lambda: _node_of(kube, "loner"), timeout=60)
    loner_zone = NODES[_node_of(kube, "loner")][0]
    _pod(kube, "follower", {"app": "loner"})
    kube.wait_for("follower bound", lambda: _node_of(kube, "follower"), timeout=60)
    assert NODES[_node_of(kube, "follower")][0] != loner_zone


def test_a_deployment_spread_by_zone_with_max_skew_1_is_balanced(kube: KubeCluster, served: Served) -> None:
    spread = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "spread"}}}]
    names = [f"spread-{n}" for n in range(6)]
    for name in names:
        _pod(kube, name, {"app": "spread", "pod-template-hash": "abc"}, topologySpreadConstraints=spread)

    def all_running() -> dict[str, str] | None:
        nodes = {n: _node_of(kube, n) for n in names}
        return nodes if all(nodes.values()) else None

    placed = kube.wait_for("6 replicas bound", all_running, timeout=60)
    per_zone = Counter(NODES[node][0] for node in placed.values())
    assert per_zone == {"a": 3, "b": 3}, placed


def test_a_gated_pod_waits_until_its_gates_are_gone(kube: KubeCluster, served: Served) -> None:
    _pod(kube, "gated", {"app": "gated"}, schedulingGates=[{"name": "example.com/quota-check"}])
    condition = kube.wait_for("SchedulingGated", lambda: _condition(kube, "gated"), timeout=30)
    assert condition["reason"] == "SchedulingGated" and condition["status"] == "False"
    time.sleep(1.0)
    assert not _get(kube, "gated")["spec"].get("nodeName")
    assert served.shim.pod_state(_get(kube, "gated")["metadata"]["uid"]) == "gated"
    answer = kube.session.patch(f"{kube.server}/api/v1/namespaces/{NAMESPACE}/pods/gated", verify=False, timeout=10,
                                json=[{"op": "replace", "path": "/spec/schedulingGates", "value": []}],
                                headers={"Content-Type": "application/json-patch+json"})
    assert answer.status_code == 200, answer.text
    kube.wait_for("bound once ungated", lambda: _node_of(kube, "gated"), timeout=60)


# No root.default: YuniKorn's placement falls back to it when every rule fails.
REFUSING = """\
partitions:
  - name: default
    placementrules:
      - name: provided
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: team
"""


def test_the_pods_of_a_rejected_application_are_marked_failed(kube: KubeCluster) -> None:
    served = Served(kube, queues=REFUSING)
    try:
        _pod(kube, "lost", {"app": "lost"}, app="lost-app", queue="root.nowhere")

        def failed() -> dict[str, Any] | None:
            status = _get(kube, "lost").get("status", {})
            return status if status.get("phase") == "Failed" else None

        status = kube.wait_for("Failed", failed, timeout=30)
        assert status["reason"] == "ApplicationRejected" and "lost-app" in status["message"]
        events = kube.wait_for("event", lambda: [e for e in _events(kube, "lost") if e["reason"] == "ApplicationRejected"],
                               timeout=10)
        assert events[0]["type"] == "Warning"
        # A pod of an accepted application next to it runs.
        _pod(kube, "found", {"app": "found"}, app="found-app", queue="root.team")
        kube.wait_for("found bound", lambda: _node_of(kube, "found"), timeout=60)
    finally:
        served.stop()
        kube.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods?gracePeriodSeconds=0")


def test_a_pod_no_node_has_room_for_is_marked_within_seconds_during_a_burst(
        kube: KubeCluster, served: Served) -> None:
    # 40 cpus fit the cluster's 72 (the queue has room) but no node (32 at most).
    started = time.monotonic()
    _pod(kube, "wide", {"app": "wide"}, cpu="40", app="wide-app")
    for n in range(300):
        _pod(kube, f"burst-{n}", {"app": "burst"}, cpu="10m", app=f"burst-{n % 20}")
    condition = kube.wait_for("wide marked", lambda: _condition(kube, "wide"), timeout=30, interval=0.2)
    assert condition["reason"] == "Unschedulable" and "no node has room" in condition["message"], condition
    marked_after = time.monotonic() - started
    assert marked_after < 20, marked_after
    kube.wait_for("FailedScheduling", lambda: [e for e in _events(kube, "wide") if e["reason"] == "FailedScheduling"],
                  timeout=10)


def test_preferred_terms_steer_the_choice_where_the_node_policy_would_not(kube: KubeCluster, served: Served) -> None:
    # The fair policy prefers the emptier big nodes of zone a; each preference below says b.
    zone_b = {"small-0", "small-1"}
    _pod(kube, "likes-b", {"app": "likes-b"}, affinity={"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "preference": {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["b"]}]}}]}})
    kube.wait_for("likes-b in zone b", lambda: _node_of(kube, "likes-b") in zone_b, timeout=60)
    _pod(kube, "db", {"app": "db"}, cpu="1", nodeSelector={"kubernetes.io/hostname": "small-1"})
    kube.wait_for("db bound", lambda: _node_of(kube, "db") == "small-1", timeout=60)
    _pod(kube, "near-db", {"app": "near-db"}, affinity={"podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": {
            "labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}}]}})
    kube.wait_for("near-db beside db", lambda: _node_of(kube, "near-db") == "small-1", timeout=60)
    spread = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway",
               "labelSelector": {"matchLabels": {"app": "soft"}}}]
    for n in range(4):  # one at a time: each sees where the others went
        _pod(kube, f"soft-{n}", {"app": "soft"}, topologySpreadConstraints=spread)
        kube.wait_for(f"soft-{n} bound", lambda: _node_of(kube, f"soft-{n}"), timeout=60)
    per_zone = Counter(NODES[_node_of(kube, f"soft-{n}")][0] for n in range(4))
    assert per_zone == {"a": 2, "b": 2}, per_zone
