"""The Kubernetes shim at the issue's scale, through ``pyscheduler serve --rm
pyscheduler_k8s:attach`` against a real API server with 100 kwok nodes: 1,000 pods of 20
applications in two queues; the REST API agrees with ``kubectl get pods -o wide``; a queue's max
holds (the pods beyond it Pending and Unschedulable) until a ConfigMap edit raises it; a pod
written for YuniKorn is scheduled unchanged; a deleted node's allocations are released; SIGKILL
and a restart bind nothing twice and finish what was submitted meanwhile."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from kube_cluster import KubeCluster, fake_node, start_cluster

sys.path.insert(0, str(Path(__file__).resolve().parent / "web"))
from web_helpers import Server, launch  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")

NODES = 100
APPS = 20
PODS_PER_APP = 50
NAMESPACE = "scale"
CONFIG_NAMESPACE = "pyscheduler"


def _queues(max_a: int) -> str:
    return f"""\
partitions:
  - name: default
    placementrules:
      - name: provided
        create: false
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
            resources: {{max: {{vcore: {max_a}}}}}
          - name: b
"""


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeCluster]:
    cluster = start_cluster(tmp_path_factory.mktemp("kube-scale"))
    try:
        cluster.add_nodes([f"node-{n:03d}" for n in range(NODES)], cpu="4", memory="16Gi")
        cluster.ensure_namespace(NAMESPACE)
        cluster.ensure_namespace(CONFIG_NAMESPACE)
        yield cluster
    finally:
        cluster.stop()


def _serve(kube: KubeCluster, tmp: Path) -> Server:
    return launch(tmp, ["--rm", "pyscheduler_k8s:attach"],
                  {"PYSCHEDULER_K8S_KUBECONFIG": str(kube.kubeconfig), "PYSCHEDULER_K8S_NAMESPACE": CONFIG_NAMESPACE})


def _pods(kube: KubeCluster) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = kube.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods", timeout=60).json()["items"]
    return items


def _create(kube: KubeCluster, bodies: list[dict[str, Any]]) -> None:
    def post(body: dict[str, Any]) -> None:
        answer = kube.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", body, timeout=30)
        assert answer.status_code == 201, answer.text

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(post, bodies))


def _pod(name: str, app: str, queue: str, cpu: str = "250m") -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"applicationId": app, "queue": queue}},
            "spec": {"schedulerName": "pyscheduler", "containers": [
                {"name": "c", "image": "registry.k8s.io/pause:3.7", "resources": {"requests": {"cpu": cpu}}}]}}


def _unschedulable(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "PodScheduled" and c["status"] == "False" and c.get("reason") == "Unschedulable"
               for c in pod.get("status", {}).get("conditions", []))


def _rest_allocations(server: Server) -> dict[str, str]:
    """Allocation key (pod uid) -> node, from the REST API."""
    found: dict[str, str] = {}
    for queue in ("root.a", "root.b"):
        for app in server.get(f"/ws/v1/partition/default/queue/{queue}/applications", timeout=30).json():
            for alloc in app.get("allocations") or ():
                found[alloc["allocationKey"]] = alloc["nodeId"]
    return found


def test_a_thousand_pods_on_a_hundred_nodes(kube: KubeCluster, tmp_path: Path) -> None:
    maps = f"/api/v1/namespaces/{CONFIG_NAMESPACE}/configmaps"
    answer = kube.request("POST", maps, {"metadata": {"name": "pyscheduler-configs"}, "data": {"queues.yaml": _queues(100)}})
    assert answer.status_code == 201, answer.text
    server = _serve(kube, tmp_path)
    try:
        # 20 applications of 50 pods of 250m: queue a (10 applications, 125 cpus asked) has a max
        # of 100 cpus, queue b none; the nodes hold 400 cpus.
        bodies = [_pod(f"app{a:02d}-{p:02d}", f"app{a:02d}", "root.a" if a < APPS // 2 else "root.b")
                  for a in range(APPS) for p in range(PODS_PER_APP)]
        # In the middle of the burst, a pod no node has room for (5 cpus, nodes of 4; queue b
        # has room): marked Unschedulable within seconds, not after the burst.
        bodies.insert(len(bodies) // 2, _pod("wide", "wide", "root.b", cpu="5"))
        started = time.monotonic()
        _create(kube, bodies)
        wide = kube.wait_for("the wide pod marked", lambda: _unschedulable(kube.request(
            "GET", f"/api/v1/namespaces/{NAMESPACE}/pods/wide").json()), timeout=30, interval=0.2)
        assert wide
        print(f"the wide pod marked {time.monotonic() - started:.1f} s after the burst began")

        def settled() -> list[dict[str, Any]] | None:
            pods = _pods(kube)
            bound = [p for p in pods if p["spec"].get("nodeName")]
            waiting = [p for p in pods if not p["spec"].get("nodeName")]
            return pods if len(bound) == 900 and all(_unschedulable(p) for p in waiting) else None

        pods = kube.wait_for("900 pods bound, 100 over queue a's max and the wide one Unschedulable", settled,
                             timeout=180, interval=1.0)
        wide_condition = next(c for p in pods if p["metadata"]["name"] == "wide"
                              for c in p["status"]["conditions"] if c["type"] == "PodScheduled")
        assert "no node has room" in wide_condition["message"], wide_condition
        pods = [p for p in pods if p["metadata"]["name"] != "wide"]
        print(f"1,000 pods created and settled in {time.monotonic() - started:.1f} s")
        in_a = [p for p in pods if p["metadata"]["labels"]["queue"] == "root.a" and p["spec"].get("nodeName")]
        assert len(in_a) == 400  # 100 cpus / 250m
        waiting = [p for p in pods if not p["spec"].get("nodeName")]
        assert "does not fit in queue 'root.a'" in next(
            c["message"] for c in waiting[0]["status"]["conditions"] if c["type"] == "PodScheduled")

        # kubectl and the REST API agree on every pod's node, and on the nodes.
        wide = subprocess.run(["kubectl", f"--kubeconfig={kube.kubeconfig}", "-n", NAMESPACE, "get", "pods", "-o", "wide",
                               "--no-headers"], capture_output=True, text=True, timeout=60, check=True).stdout
        kubectl_nodes = {line.split()[0]: line.split()[6] for line in wide.splitlines()}
        uid_to_name = {p["metadata"]["uid"]: p["metadata"]["name"] for p in pods}
        rest = _rest_allocations(server)
        assert {uid_to_name[uid]: node for uid, node in rest.items()} == {
            name: node for name, node in kubectl_nodes.items() if node != "<none>"}
        assert len(server.get("/ws/v1/partition/default/nodes", timeout=30).json()) == NODES
        per_node: dict[str, int] = {}
        for node in rest.values():
            per_node[node] = per_node.get(node, 0) + 1
        assert max(per_node.values()) <= 16  # 4 cpus of 250m pods

        # A ConfigMap edit raises queue a's max live: the waiting pods are placed.
        answer = kube.request("PUT", f"{maps}/pyscheduler-configs", {
            "metadata": {"name": "pyscheduler-configs"}, "data": {"queues.yaml": _queues(125)}})
        assert answer.status_code == 200, answer.text
        kube.wait_for("all 1,000 bound after the edit", lambda: all(
            p["spec"].get("nodeName") for p in _pods(kube) if p["metadata"]["name"] != "wide"), timeout=120, interval=1.0)

        # A pod written for YuniKorn: its labels and scheduler name, unchanged.
        yunikorn = {"metadata": {"name": "from-yunikorn", "labels": {"yunikorn.apache.org/app-id": "yk-app",
                                                                     "yunikorn.apache.org/queue": "root.b"}},
                    "spec": {"schedulerName": "yunikorn", "containers": [
                        {"name": "c", "image": "registry.k8s.io/pause:3.7", "resources": {"requests": {"cpu": "100m"}}}]}}
        _create(kube, [yunikorn])
        kube.wait_for("the YuniKorn pod bound", lambda: kube.request(
            "GET", f"/api/v1/namespaces/{NAMESPACE}/pods/from-yunikorn").json()["spec"].get("nodeName"), timeout=30)

        # A deleted node's allocations are released in the core.
        victim_node = next(iter(per_node))
        on_it = {uid for uid, node in _rest_allocations(server).items() if node == victim_node}
        assert on_it
        kube.request("DELETE", f"/api/v1/nodes/{victim_node}")
        kube.wait_for("the deleted node's allocations released", lambda: not (on_it & set(_rest_allocations(server))),
                      timeout=30, interval=0.5)
        before = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in _pods(kube)}

        # SIGKILL; pods submitted while it is down; a new process binds them and nothing else.
        os.killpg(server.process.pid, signal.SIGKILL)
        server.process.wait(10)
        _create(kube, [_pod(f"late-{n:02d}", "late", "root.b") for n in range(50)])
        kube.request("POST", "/api/v1/nodes", fake_node(victim_node, cpu="4", memory="16Gi"))  # keeps the count
        server = _serve(kube, tmp_path)
        kube.wait_for("the late pods bound by the new process", lambda: all(
            p["spec"].get("nodeName") for p in _pods(kube) if p["metadata"]["name"].startswith("late-")),
            timeout=120, interval=1.0)
        after = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in _pods(kube)}
        assert {n: after[n] for n in before} == before  # nothing moved, nothing bound twice
        log = server.log()
        assert not [line for line in log.splitlines() if "binding" in line and "failed" in line], log[-3000:]
        # Every bound pod is an allocation of the new process, those on the node created again
        # (same name) too.
        assert len(_rest_allocations(server)) == len([p for p in _pods(kube) if p["spec"].get("nodeName")]) == 1051
    finally:
        if server.process.poll() is None:
            os.killpg(server.process.pid, signal.SIGTERM)
            server.process.wait(20)
