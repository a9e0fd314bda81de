"""The Kubernetes shim against a real API server (etcd, kube-apiserver and kwok on loopback,
tests/kube_cluster.py): the core places the pods that name it, kube-scheduler's way of saying so
on the pods, other schedulers' pods left alone but counted, pods that end giving their room back,
and a restart that recovers the cluster without binding anything twice.

The control plane's binaries are built once per machine into the user's cache directory
(tools/k8s/build.sh); the first run builds them."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kube_cluster import KubeCluster, start_cluster
from kube_served import PARTITION, QUEUES, Served, served_while

from pyscheduler_k8s.cnr import CNR_PATH
from pyscheduler_k8s.kubeapi import ClusterAccess, KubeApi, KubeApiError
from pyscheduler_k8s.leader import LeaseSettings
from pyscheduler_k8s.replica import Replica
from pyscheduler_k8s.shim import KubeShim, ShimOptions

NODES = 3
NAMESPACE = "team"
# The tests talk to a self-signed API server they started (see kube_cluster.py).
pytestmark = pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeCluster]:
    cluster = start_cluster(tmp_path_factory.mktemp("kube"))
    try:
        for n in range(NODES):
            cluster.add_node(f"kwok-{n}", cpu="4", memory="8Gi")
        cluster.ensure_namespace(NAMESPACE)
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def served(kube: KubeCluster) -> Iterator[Served]:
    with served_while(kube) as running:
        yield running


_names = itertools.count()


def _pod(kube: KubeCluster, cpu: str, *, scheduler: str = "pyscheduler", app: str = "app-1",
         queue: str = "root.batch", metadata_annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    name = f"p{next(_names)}"
    body = {"metadata": {"name": name, "labels": {"yunikorn.apache.org/app-id": app, "queue": queue},
                         "annotations": metadata_annotations or {}},
            "spec": {"schedulerName": scheduler, "containers": [
                {"name": "c", "image": "registry.k8s.io/pause:3.7", "resources": {"requests": {"cpu": cpu}}}], **spec}}
    answer = kube.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", body)
    assert answer.status_code == 201, answer.text
    created: dict[str, Any] = answer.json()
    return created


def _get(kube: KubeCluster, name: str) -> dict[str, Any]:
    found: dict[str, Any] = kube.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods/{name}").json()
    return found


def _events(kube: KubeCluster, name: str) -> list[dict[str, Any]]:
    items = kube.request("GET", f"/api/v1/namespaces/{NAMESPACE}/events",
                         ).json().get("items", [])
    return [e for e in items if e.get("involvedObject", {}).get("name") == name]


def _delete_all(kube: KubeCluster) -> None:
    kube.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods?gracePeriodSeconds=0")
    kube.wait_for("pods deleted", lambda: not kube.request(
        "GET", f"/api/v1/namespaces/{NAMESPACE}/pods").json().get("items"), timeout=30)


def test_the_core_places_our_pods_and_leaves_the_others(kube: KubeCluster, served: Served) -> None:
    try:
        ours = [_pod(kube, "1") for _ in range(9)] + [_pod(kube, "1", scheduler="yunikorn", app="app-2")]
        other = _pod(kube, "500m", scheduler="default-scheduler")
        names = [p["metadata"]["name"] for p in ours]

        def all_running() -> bool:
            return all(_get(kube, n).get("status", {}).get("phase") == "Running" for n in names)

        kube.wait_for("our pods Running", all_running, timeout=60)
        placed = {n: _get(kube, n)["spec"]["nodeName"] for n in names}
        per_node = {node: sum(1 for v in placed.values() if v == node) for node in set(placed.values())}
        assert sum(per_node.values()) == 10 and max(per_node.values()) <= 4, per_node  # 4 cpus per node
        assert served.app_allocations("app-1") == 9 and served.app_allocations("app-2") == 1
        scheduled = [e for e in _events(kube, names[0]) if e["reason"] == "Scheduled"]
        assert scheduled and scheduled[0]["message"] == f"Successfully assigned {NAMESPACE}/{names[0]} to " \
                                                         f"{placed[names[0]]}"
        # Another scheduler's pod is not ours to bind.
        assert not _get(kube, other["metadata"]["name"])["spec"].get("nodeName")
        kube.wait_for("10 bindings counted", lambda: served.shim.counts.bound == 10, timeout=10)
        assert served.shim.counts.bind_failures == 0
    finally:
        _delete_all(kube)


def test_a_pod_that_fits_nowhere_is_marked_unschedulable(kube: KubeCluster, served: Served) -> None:
    try:
        huge = _pod(kube, "64")["metadata"]["name"]

        def condition() -> dict[str, Any] | None:
            for c in _get(kube, huge).get("status", {}).get("conditions", []):
                if c["type"] == "PodScheduled":
                    return c  # type: ignore[no-any-return]
            return None

        found = kube.wait_for("PodScheduled=False", condition, timeout=30)
        assert found["status"] == "False" and found["reason"] == "Unschedulable" and found["message"]
        failed = kube.wait_for("FailedScheduling event", lambda: [
            e for e in _events(kube, huge) if e["reason"] == "FailedScheduling"], timeout=10)
        assert failed[0]["type"] == "Warning" and failed[0]["message"] == found["message"]
        # Written once for the same reason, however many cycles skip it.
        time.sleep(1.0)
        assert len([e for e in _events(kube, huge) if e["reason"] == "FailedScheduling"]) == 1
        # Bound by someone else while it waits: the ask goes, the pod is an allocation on that node.
        answer = kube.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods/{huge}/binding", {
            "apiVersion": "v1", "kind": "Binding", "metadata": {"name": huge},
            "target": {"apiVersion": "v1", "kind": "Node", "name": "kwok-1"}})
        assert answer.status_code == 201, answer.text
        kube.wait_for("recorded as an allocation", lambda: served.app_allocations("app-1") == 1, timeout=10)
        assert served.shim.counts.bound == 0
    finally:
        _delete_all(kube)


def test_node_selector_and_taints_are_checked_by_the_shim(kube: KubeCluster, served: Served) -> None:
    try:
        pinned = _pod(kube, "100m", nodeSelector={"kubernetes.io/hostname": "kwok-2"})["metadata"]["name"]
        nowhere = _pod(kube, "100m", nodeSelector={"kubernetes.io/hostname": "absent"})["metadata"]["name"]
        kube.wait_for("pinned pod bound", lambda: _get(kube, pinned)["spec"].get("nodeName"), timeout=30)
        assert _get(kube, pinned)["spec"]["nodeName"] == "kwok-2"

        def unschedulable() -> bool:
            return any(c["type"] == "PodScheduled" and c["status"] == "False"
                       for c in _get(kube, nowhere).get("status", {}).get("conditions", []))

        kube.wait_for("selector matching no node: unschedulable", unschedulable, timeout=30)
        assert not _get(kube, nowhere)["spec"].get("nodeName")
        # A tainted node takes only the pods that tolerate its taint.
        kube.add_node("kwok-tainted", cpu="4", memory="8Gi")
        taint = {"spec": {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}}
        answer = kube.session.patch(f"{kube.server}/api/v1/nodes/kwok-tainted", json=taint, verify=False, timeout=10,
                                    headers={"Content-Type": "application/merge-patch+json"})
        assert answer.status_code == 200, answer.text
        on_tainted = {"kubernetes.io/hostname": "kwok-tainted"}
        time.sleep(0.5)  # the shim has seen the taint
        intolerant = _pod(kube, "100m", nodeSelector=on_tainted)["metadata"]["name"]
        tolerant = _pod(kube, "100m", nodeSelector=on_tainted, tolerations=[
            {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}])["metadata"]["name"]
        kube.wait_for("the tolerating pod bound there", lambda: _get(kube, tolerant)["spec"].get("nodeName"), timeout=30)
        assert _get(kube, tolerant)["spec"]["nodeName"] == "kwok-tainted"
        assert not _get(kube, intolerant)["spec"].get("nodeName")

        # Host ports: a node's port is taken once, another port on the same node is free.
        def with_host_port(port: int) -> str:
            container = {"name": "c", "image": "registry.k8s.io/pause:3.7", "resources": {"requests": {"cpu": "100m"}},
                         "ports": [{"containerPort": 80, "hostPort": port}]}
            created = _pod(kube, "100m", nodeSelector={"kubernetes.io/hostname": "kwok-1"}, containers=[container])
            return str(created["metadata"]["name"])

        first = with_host_port(8080)
        kube.wait_for("the first 8080 bound", lambda: _get(kube, first)["spec"].get("nodeName"), timeout=30)
        clash, other = with_host_port(8080), with_host_port(8081)
        kube.wait_for("8081 bound beside it", lambda: _get(kube, other)["spec"].get("nodeName"), timeout=30)
        kube.wait_for("the second 8080 unschedulable", lambda: any(
            c["type"] == "PodScheduled" and c["status"] == "False"
            for c in _get(kube, clash).get("status", {}).get("conditions", [])), timeout=30)
        assert not _get(kube, clash)["spec"].get("nodeName")
    finally:
        _delete_all(kube)
        kube.request("DELETE", "/api/v1/nodes/kwok-tainted")


def test_ended_pods_give_their_room_back_and_a_restart_binds_nothing_twice(kube: KubeCluster,
                                                                           tmp_path: Path) -> None:
    first = Served(kube)
    try:
        names = [_pod(kube, "2", app="app-3")["metadata"]["name"] for _ in range(6)]  # fills 3 nodes of 4 cpus
        kube.wait_for("6 pods bound", lambda: all(_get(kube, n)["spec"].get("nodeName") for n in names), timeout=60)
        waiting = _pod(kube, "2", app="app-3")["metadata"]["name"]
        time.sleep(0.5)
        assert not _get(kube, waiting)["spec"].get("nodeName")
        first.stop()
        # A new scheduler recovers the 6 bound pods as allocations and the pending one as an ask.
        second = Served(kube)
        try:
            assert second.app_allocations("app-3") == 6
            assert second.shim.counts.bound == 0
            kube.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods/{names[0]}?gracePeriodSeconds=0")
            kube.wait_for("the waiting pod bound in the freed room",
                          lambda: _get(kube, waiting)["spec"].get("nodeName"), timeout=30)
            kube.wait_for("the binding counted", lambda: second.shim.counts.bound == 1, timeout=10)
            assert second.app_allocations("app-3") == 6
        finally:
            second.stop()
    finally:
        first.stop()
        _delete_all(kube)


def test_a_restart_recovers_a_running_gang_without_new_placeholders(kube: KubeCluster) -> None:
    groups = json.dumps([{"name": "driver", "minMember": 1, "minResource": {"cpu": "1"}},
                         {"name": "executor", "minMember": 3, "minResource": {"cpu": "1"}}])

    def member(group: str) -> str:
        return _pod(kube, "1", app="gang-r", metadata_annotations={
            "yunikorn.apache.org/task-groups": groups, "yunikorn.apache.org/task-group-name": group})["metadata"]["name"]

    first = Served(kube)
    try:
        names = [member("driver")] + [member("executor") for _ in range(3)]
        kube.wait_for("the gang running", lambda: all(_get(kube, n)["spec"].get("nodeName") for n in names), timeout=60)
        kube.wait_for("its placeholders gone", lambda: not kube.request(
            "GET", f"/api/v1/namespaces/{NAMESPACE}/pods?labelSelector=placeholder%3Dtrue").json()["items"], timeout=60)
        assert first.shim.counts.placeholders_created == 4
        # One more executor that fits nowhere, listed first (the API server lists by name).
        body = {"metadata": {"name": "a-pending", "labels": {"yunikorn.apache.org/app-id": "gang-r", "queue": "root.batch"},
                             "annotations": {"yunikorn.apache.org/task-groups": groups,
                                             "yunikorn.apache.org/task-group-name": "executor"}},
                "spec": {"schedulerName": "pyscheduler", "containers": [
                    {"name": "c", "image": "registry.k8s.io/pause:3.7", "resources": {"requests": {"cpu": "64"}}}]}}
        assert kube.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", body).status_code == 201
        first.stop()
        second = Served(kube)
        try:
            assert second.app_allocations("gang-r") == 4
            time.sleep(1.0)  # a second set of placeholders would be made by now
            assert second.shim.counts.placeholders_created == 0
            assert not kube.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods?labelSelector=placeholder%3Dtrue"
                                    ).json()["items"]
        finally:
            second.stop()
    finally:
        first.stop()
        _delete_all(kube)


def test_served_with_the_shim_attached(kube: KubeCluster, tmp_path: Path) -> None:
    """The real entry point: ``pyscheduler serve --rm pyscheduler_k8s:attach`` under gunicorn,
    the cluster from ``PYSCHEDULER_K8S_KUBECONFIG``; its REST API shows the cluster's nodes and
    the pod's application."""
    sys.path.insert(0, str(Path(__file__).resolve().parent / "web"))
    from web_helpers import launch, stop

    config = tmp_path / "queues.yaml"
    config.write_text(QUEUES)
    server = launch(tmp_path, ["--config", str(config), "--rm", "pyscheduler_k8s:attach"],
                    {"PYSCHEDULER_K8S_KUBECONFIG": str(kube.kubeconfig)})
    try:
        name = _pod(kube, "250m", app="served-app")["metadata"]["name"]
        kube.wait_for("pod bound by the served scheduler", lambda: _get(kube, name)["spec"].get("nodeName"),
                      timeout=30)
        nodes = server.get("/ws/v1/partition/default/nodes").json()
        assert sorted(n["nodeID"] for n in nodes) == [f"kwok-{n}" for n in range(NODES)]
        apps = server.get("/ws/v1/partition/default/queue/root.batch/applications").json()
        assert [a["applicationID"] for a in apps] == ["served-app"]
        assert apps[0]["allocations"][0]["nodeId"] == _get(kube, name)["spec"]["nodeName"]
        # A second replica stands by, and says so.
        leader = server.get("/ws/v1/k8s/leadership").json()
        assert leader["role"] == "leader" and leader["holder"] == leader["identity"]
        standby = launch(tmp_path, ["--config", str(config), "--rm", "pyscheduler_k8s:attach"],
                         {"PYSCHEDULER_K8S_KUBECONFIG": str(kube.kubeconfig)})
        try:
            status = kube.wait_for("the second replica saw the leader", lambda: (
                found if (found := standby.get("/ws/v1/k8s/leadership").json())["holder"] else None), timeout=10)
            assert status["role"] == "standby" and status["holder"] == leader["identity"]
            assert standby.get("/ws/v1/partition/default/nodes").status_code == 404  # it runs no shim
        finally:
            assert stop(standby) == 0
    finally:
        code = stop(server)
        _delete_all(kube)
        kube.request("DELETE", "/apis/coordination.k8s.io/v1/namespaces/default/leases/pyscheduler")
    log = server.log()
    assert code == 0 and "Traceback" not in log, log


def _node_in_core(served: Served, name: str) -> Any:
    partition = served.context.partitions["[pyscheduler-k8s]default"]
    with partition.lock:
        return partition.nodes.get(name)


def test_nodes_follow_the_cluster(kube: KubeCluster, served: Served) -> None:
    """Cordon, uncordon, a capacity change, a new node and a deleted node reach the core; a pod
    another scheduler placed occupies its node."""
    try:
        kube.add_node("kwok-extra", cpu="2", memory="4Gi")
        kube.wait_for("new node in the core", lambda: _node_in_core(served, "kwok-extra"), timeout=10)
        patch = {"spec": {"unschedulable": True}}
        answer = kube.session.patch(f"{kube.server}/api/v1/nodes/kwok-extra", json=patch, verify=False, timeout=10,
                                    headers={"Content-Type": "application/merge-patch+json"})
        assert answer.status_code == 200, answer.text
        kube.wait_for("cordoned node drained", lambda: not _node_in_core(served, "kwok-extra").schedulable, timeout=10)
        pinned = _pod(kube, "100m", nodeSelector={"kubernetes.io/hostname": "kwok-extra"})["metadata"]["name"]
        time.sleep(1.0)
        assert not _get(kube, pinned)["spec"].get("nodeName")  # not on a cordoned node
        patch = {"spec": {"unschedulable": False}}
        kube.session.patch(f"{kube.server}/api/v1/nodes/kwok-extra", json=patch, verify=False, timeout=10,
                           headers={"Content-Type": "application/merge-patch+json"})
        kube.wait_for("uncordoned: the waiting pod bound there",
                      lambda: _get(kube, pinned)["spec"].get("nodeName") == "kwok-extra", timeout=20)
        # Another scheduler's pod, bound by hand, occupies its node in the core.
        foreign = _pod(kube, "1", scheduler="default-scheduler")["metadata"]["name"]
        answer = kube.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods/{foreign}/binding", {
            "apiVersion": "v1", "kind": "Binding", "metadata": {"name": foreign},
            "target": {"apiVersion": "v1", "kind": "Node", "name": "kwok-extra"}})
        assert answer.status_code == 201, answer.text
        kube.wait_for("the foreign pod counted", lambda: _node_in_core(served, "kwok-extra").available.get("vcore")
                      == 2000 - 100 - 1000, timeout=10)
        # A capacity change (the node's allocatable) updates the core's node.
        status = {"status": {"allocatable": {"cpu": "3", "memory": "4Gi", "pods": "110"}}}
        answer = kube.session.patch(f"{kube.server}/api/v1/nodes/kwok-extra/status", json=status, verify=False,
                                    timeout=10, headers={"Content-Type": "application/merge-patch+json"})
        assert answer.status_code == 200, answer.text
        kube.wait_for("capacity updated", lambda: _node_in_core(served, "kwok-extra").total.get("vcore") == 3000,
                      timeout=10)
        kube.request("DELETE", "/api/v1/nodes/kwok-extra")
        kube.wait_for("deleted node decommissioned", lambda: _node_in_core(served, "kwok-extra") is None, timeout=10)
    finally:
        _delete_all(kube)
        kube.request("DELETE", "/api/v1/nodes/kwok-extra")


def test_an_expired_watch_lists_again(tmp_path: Path) -> None:
    """410 Gone from a real API server: no watch cache and etcd compacted every second, so a pod
    watch restarting from its list's version after other writes is too old. The shim lists
    again, and what happened meanwhile is taken in."""
    cluster = start_cluster(tmp_path / "kube", api_flags=("--watch-cache=false", "--etcd-compaction-interval=1s"))
    try:
        cluster.add_node("kwok-0", cpu="4", memory="8Gi")
        cluster.ensure_namespace(NAMESPACE)
        served = Served(cluster, ShimOptions(watch_timeout=1))
        shim = served.shim
        try:
            for n in range(20):  # other writes: the revision moves on, the pods' list version gets compacted
                cluster.request("POST", f"/api/v1/namespaces/{NAMESPACE}/configmaps", {"metadata": {"name": f"c{n}"}})
            cluster.wait_for("the pod watch expired and listed again", lambda: shim.counts.relists >= 1, timeout=30)
            name = _pod(cluster, "1")["metadata"]["name"]
            cluster.wait_for("a pod after the relist bound", lambda: _get(cluster, name)["spec"].get("nodeName"),
                             timeout=30)
            cluster.wait_for("the binding counted", lambda: shim.counts.bound == 1, timeout=10)
        finally:
            served.stop()
    finally:
        cluster.stop()


def _queue_in_core(served: Served, path: str) -> Any:
    partition = served.context.partitions["[pyscheduler-k8s]default"]
    with partition.lock:
        queue = partition.root
        for name in path.split(".")[1:]:
            queue = queue.children.get(name) if queue is not None else None
        return queue


def test_queues_come_from_the_config_map_and_follow_its_edits(kube: KubeCluster) -> None:
    namespace = "pyscheduler"
    kube.ensure_namespace(namespace)
    maps = f"/api/v1/namespaces/{namespace}/configmaps"
    with_extra = QUEUES.replace("          - name: batch\n", "          - name: batch\n          - name: extra\n")
    # Only YuniKorn's ConfigMap at first: it is read as it is.
    answer = kube.request("POST", maps, {"metadata": {"name": "yunikorn-configs"}, "data": {"queues.yaml": with_extra}})
    assert answer.status_code == 201, answer.text
    served = Served(kube, ShimOptions(namespace=namespace))
    try:
        assert _queue_in_core(served, "root.extra") is not None
        # pyscheduler's own ConfigMap wins once it exists; an edit reloads the queues.
        renamed = with_extra.replace("name: extra", "name: second")
        answer = kube.request("POST", maps, {"metadata": {"name": "pyscheduler-configs"},
                                              "data": {"queues.yaml": renamed}})
        assert answer.status_code == 201, answer.text
        kube.wait_for("root.second from pyscheduler-configs", lambda: _queue_in_core(served, "root.second"), timeout=10)
        assert served.shim.counts.config_reloads == 1
        # An invalid edit is refused: the running queues stay, the ConfigMap says why.
        answer = kube.request("PUT", f"{maps}/pyscheduler-configs", {
            "metadata": {"name": "pyscheduler-configs"}, "data": {"queues.yaml": "partitions: [not: {valid"}})
        assert answer.status_code == 200, answer.text
        kube.wait_for("refused", lambda: served.shim.counts.config_rejected == 1, timeout=10)
        assert _queue_in_core(served, "root.second") is not None
        warnings = kube.wait_for("a warning event on the ConfigMap", lambda: [
            e for e in kube.request("GET", f"/api/v1/namespaces/{namespace}/events").json().get("items", [])
            if e["involvedObject"]["name"] == "pyscheduler-configs" and e["reason"] == "InvalidConfiguration"])
        assert warnings[0]["type"] == "Warning" and "the running one stays" in warnings[0]["message"]
        # Pods are still placed under the running configuration.
        name = _pod(kube, "100m", queue="root.second")["metadata"]["name"]
        kube.wait_for("pod bound", lambda: _get(kube, name)["spec"].get("nodeName"), timeout=30)
    finally:
        served.stop()
        _delete_all(kube)
        for name in ("pyscheduler-configs", "yunikorn-configs"):
            kube.request("DELETE", f"{maps}/{name}")


def test_an_invalid_config_map_at_start_holds_the_leader_until_it_is_fixed(kube: KubeCluster) -> None:
    namespace = "pyscheduler-start"
    kube.ensure_namespace(namespace)
    maps = f"/api/v1/namespaces/{namespace}/configmaps"
    answer = kube.request("POST", maps, {"metadata": {"name": "pyscheduler-configs"},
                                          "data": {"queues.yaml": "partitions: [not: {valid"}})
    assert answer.status_code == 201, answer.text
    served = Served(kube, start_shim=False)
    options = ShimOptions(namespace=namespace)
    replica = Replica(lambda: KubeShim(served.proxy, served.api, QUEUES, options), served.api, "replica-c",
                      LeaseSettings(namespace=namespace, lease_duration=3.0, renew_deadline=2.0, retry_period=0.25),
                      start_retry=0.2)
    try:
        replica.start()
        # It leads (a standby would fail the same way) but places nothing, and says why: in its
        # status and on the ConfigMap.
        status = kube.wait_for("the start refused", lambda: replica.status().get("problem") and replica.status())
        assert status["role"] == "leader" and status["shim"] == "starting"
        assert "ConfigMap pyscheduler-start/pyscheduler-configs" in status["problem"]
        warnings = kube.wait_for("a warning event on the ConfigMap", lambda: [
            e for e in kube.request("GET", f"/api/v1/namespaces/{namespace}/events").json().get("items", [])
            if e["involvedObject"]["name"] == "pyscheduler-configs" and e["reason"] == "InvalidConfiguration"])
        assert "nothing is scheduled until it is fixed" in warnings[0]["message"]
        waiting = _pod(kube, "100m", queue="root.fixed")["metadata"]["name"]
        time.sleep(1.0)  # several attempts
        assert replica.shim is None and not _get(kube, waiting)["spec"].get("nodeName")
        assert "[pyscheduler-k8s]default" not in served.context.partitions
        # The ConfigMap fixed: the next attempt starts the shim with it, and the pod is placed.
        fixed = QUEUES.replace("          - name: batch\n", "          - name: batch\n          - name: fixed\n")
        answer = kube.request("PUT", f"{maps}/pyscheduler-configs", {
            "metadata": {"name": "pyscheduler-configs"}, "data": {"queues.yaml": fixed}})
        assert answer.status_code == 200, answer.text
        assert replica.leading.wait(20)
        assert replica.status()["shim"] == "running" and "problem" not in replica.status()
        kube.wait_for("pod bound", lambda: _get(kube, waiting)["spec"].get("nodeName"), timeout=30)
    finally:
        replica.stop()
        served.stop()
        _delete_all(kube)
        kube.request("DELETE", f"{maps}/pyscheduler-configs")


DEPLOY = Path(__file__).resolve().parent.parent / "k8s" / "deploy"


def test_the_manifests_apply_and_their_role_is_enough(kube: KubeCluster, tmp_path: Path) -> None:
    """k8s/deploy/ passes ``kubectl apply --dry-run=server``; applied for real, its service
    account's token (and so its ClusterRole and Role) is all the shim needs: pods bound, a pod
    marked unschedulable, events written, the ConfigMap read; and it may not read secrets."""
    kube.ensure_namespace("pyscheduler")  # a server-side dry run cannot create the namespace its objects go in
    kubectl = ["kubectl", f"--kubeconfig={kube.kubeconfig}"]
    done = subprocess.run([*kubectl, "apply", "--dry-run=server", "-f", str(DEPLOY)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "deployment.apps/pyscheduler created (server dry run)" in done.stdout, done.stdout
    for manifest in ("10-rbac.yaml", "20-configmap.yaml"):
        done = subprocess.run([*kubectl, "apply", "-f", str(DEPLOY / manifest)], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stderr
    answer = kube.request("POST", "/api/v1/namespaces/pyscheduler/serviceaccounts/pyscheduler/token",
                          {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}})
    assert answer.status_code == 201, answer.text
    token = answer.json()["status"]["token"]
    config = tmp_path / "kubeconfig"
    config.write_text(kube.kubeconfig.read_text().replace(kube.token, token))
    access = ClusterAccess.from_kubeconfig(str(config))
    denied = KubeApi(access)
    with pytest.raises(KubeApiError) as refused:
        denied.list("/api/v1/namespaces/pyscheduler/secrets")
    assert refused.value.status == 403
    served = Served(kube, ShimOptions(namespace="pyscheduler"), kubeconfig=config)
    shim = served.shim
    try:
        assert shim.counts.config_reloads == 0 and shim.synced.is_set()
        fits = _pod(kube, "100m", queue="")["metadata"]["name"]  # the ConfigMap's placement: tag namespace
        huge = _pod(kube, "64", queue="")["metadata"]["name"]
        kube.wait_for("pod bound with the role", lambda: _get(kube, fits)["spec"].get("nodeName"), timeout=30)
        kube.wait_for("pod marked unschedulable with the role", lambda: any(
            c["type"] == "PodScheduled" and c["status"] == "False"
            for c in _get(kube, huge).get("status", {}).get("conditions", [])), timeout=30)
        # The shim counts the mark once the API server answered; the test may see it first.
        kube.wait_for("the mark counted", lambda: shim.counts.unschedulable_marked == 1, timeout=10)
        assert shim.counts.bind_failures == 0 and shim.counts.unschedulable_marked == 1
        assert any(e["reason"] == "Scheduled" for e in _events(kube, fits))
    finally:
        served.stop()
        _delete_all(kube)
        kube.request("DELETE", "/api/v1/namespaces/pyscheduler/configmaps/pyscheduler-configs")


def _replica(kube: KubeCluster, identity: str) -> tuple[Replica, Served]:
    """A replica as attach() makes it, with short lease times (the defaults are kube-scheduler's)."""
    served = Served(kube, start_shim=False)
    replica = Replica(lambda: KubeShim(served.proxy, served.api, QUEUES), served.api, identity,
                      LeaseSettings(namespace=NAMESPACE, lease_duration=3.0, renew_deadline=2.0, retry_period=0.25))
    return replica, served


def test_two_replicas_one_leads_and_the_standby_takes_over(kube: KubeCluster) -> None:
    first, first_core = _replica(kube, "replica-a")
    second, second_core = _replica(kube, "replica-b")
    try:
        first.start()
        assert first.leading.wait(20)
        second.start()
        time.sleep(1.0)
        assert second.status()["role"] == "standby" and second.status()["holder"] == "replica-a"
        assert second.shim is None  # a standby runs no shim: it binds nothing
        names = [_pod(kube, "1", app="ha")["metadata"]["name"] for _ in range(4)]
        kube.wait_for("bound by the leader", lambda: all(_get(kube, n)["spec"].get("nodeName") for n in names),
                      timeout=30)
        first_shim = first.shim
        assert first_shim is not None
        kube.wait_for("4 bindings counted", lambda: first_shim.counts.bound == 4, timeout=10)
        # The leader dies without releasing its Lease: the standby takes over once it expires.
        died = time.monotonic()
        first.kill()
        first_core.scheduler.stop()
        assert second.leading.wait(20)
        took_over = time.monotonic() - died
        assert took_over < 3.0 + 2.0, took_over  # the lease duration, plus the retries and the recovery
        second_shim = second.shim
        assert second_shim is not None
        # It recovered the four bound pods (no binding twice) and places new ones.
        assert second_core.app_allocations("ha") == 4 and second_shim.counts.bound == 0
        late = _pod(kube, "1", app="ha")["metadata"]["name"]
        kube.wait_for("bound by the new leader", lambda: _get(kube, late)["spec"].get("nodeName"), timeout=30)
        kube.wait_for("the binding counted", lambda: second_shim.counts.bound == 1, timeout=10)
        lease = kube.request("GET", f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/pyscheduler").json()
        assert lease["spec"]["holderIdentity"] == "replica-b" and lease["spec"]["leaseTransitions"] == 1
        # A leader that stops releases the Lease at once.
        second.stop()
        lease = kube.request("GET", f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/pyscheduler").json()
        assert lease["spec"].get("holderIdentity", "") == ""
    finally:
        first.stop()
        second.stop()
        for core in (first_core, second_core):
            core.stop()
        kube.request("DELETE", f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/pyscheduler")
        _delete_all(kube)


def test_the_demo_schedules_a_pod() -> None:
    """``make k8s-demo``'s script (tools/k8s/demo.py) on 3 nodes with ``--check``: its own
    control plane, pyscheduler serving with the shim, a pod bound, everything stopped."""
    done = subprocess.run([sys.executable, str(DEPLOY.parent.parent / "tools" / "k8s" / "demo.py"), "--nodes", "3",
                           "--check"], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "export KUBECONFIG=" in done.stdout and "check: pod demo/hello bound to kwok-node-" in done.stdout


def test_a_refused_binding_is_tried_again_with_backoff(kube: KubeCluster, tmp_path: Path) -> None:
    """A binding the API server refuses for a reason other than the pod being gone or bound
    (here 403: the account may not bind yet) gives the room back and the pod asks again after
    a growing wait, until it is allowed."""
    kube.ensure_namespace("limited")
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "no-binding"},
            "rules": [{"apiGroups": [""], "resources": ["nodes", "pods", "configmaps"], "verbs": ["list", "watch"]},
                      {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["patch"]},
                      {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}]}
    subject = [{"kind": "ServiceAccount", "name": "default", "namespace": "limited"}]
    for path, body in (("/apis/rbac.authorization.k8s.io/v1/clusterroles", role),
                       ("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
                           "metadata": {"name": "no-binding"}, "subjects": subject,
                           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                       "name": "no-binding"}})):
        answer = kube.request("POST", path, body)
        assert answer.status_code == 201, answer.text
    answer = kube.request("POST", "/api/v1/namespaces/limited/serviceaccounts/default/token",
                          {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}})
    config = tmp_path / "kubeconfig"
    config.write_text(kube.kubeconfig.read_text().replace(kube.token, answer.json()["status"]["token"]))
    served = Served(kube, ShimOptions(namespace="limited"), kubeconfig=config)
    shim = served.shim
    try:
        name = _pod(kube, "100m")["metadata"]["name"]
        kube.wait_for("two refused bindings (1 s apart)", lambda: shim.counts.bind_failures >= 2, timeout=20)
        assert not _get(kube, name)["spec"].get("nodeName")
        answer = kube.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
            "metadata": {"name": "may-bind"}, "subjects": subject,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "pyscheduler-bind"}})
        assert answer.status_code == 201, answer.text
        answer = kube.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", {
            "metadata": {"name": "pyscheduler-bind"},
            "rules": [{"apiGroups": [""], "resources": ["pods/binding"], "verbs": ["create"]}]})
        assert answer.status_code == 201, answer.text
        kube.wait_for("bound once allowed", lambda: _get(kube, name)["spec"].get("nodeName"), timeout=30)
        kube.wait_for("the binding counted", lambda: shim.counts.bound == 1, timeout=10)
    finally:
        served.stop()
        _delete_all(kube)
        for kind, name in (("clusterrolebindings", "no-binding"), ("clusterrolebindings", "may-bind"),
                           ("clusterroles", "no-binding"), ("clusterroles", "pyscheduler-bind")):
            kube.request("DELETE", f"/apis/rbac.authorization.k8s.io/v1/{kind}/{name}")


CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/customnoderesources.node.katalyst.kubewharf.io"


def test_node_reports_are_followed_once_their_crd_is_installed_and_forgotten_when_it_goes(kube: KubeCluster) -> None:
    """The shim starts on a cluster without the CustomNodeResource CRD, so without node
    reporters; installed later, it is followed from then on (a reported label is a node
    attribute in the core and places pods by node selector); deleted, the reported layer goes."""
    kube.request("DELETE", CRD_PATH)  # an earlier test may have applied the manifests
    kube.wait_for("no CRD", lambda: kube.request("GET", CRD_PATH).status_code == 404, timeout=60)
    served = Served(kube, ShimOptions(optional_recheck=0.3))
    try:
        done = subprocess.run(["kubectl", f"--kubeconfig={kube.kubeconfig}", "apply", "-f",
                               str(DEPLOY / "40-customnoderesource-crd.yaml")], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stderr
        kube.wait_for("the CRD established", lambda: any(
            c["type"] == "Established" and c["status"] == "True"
            # status and its conditions are null until the API server fills them in.
            for c in (kube.request("GET", CRD_PATH).json().get("status") or {}).get("conditions") or []), timeout=30)
        cnr = {"apiVersion": "node.katalyst.kubewharf.io/v1alpha1", "kind": "CustomNodeResource",
               "metadata": {"name": "kwok-0", "labels": {"rack": "r7"}}, "status": {"topologyPolicy": "SingleNUMANode"}}
        answer = kube.request("POST", CNR_PATH, cnr)
        assert answer.status_code == 201, answer.text
        partition = served.context.partitions[PARTITION]

        def attributes() -> dict[str, str]:
            with partition.lock:
                return dict(partition.nodes["kwok-0"].attributes)

        kube.wait_for("the reported label in the core", lambda: attributes().get("rack") == "r7", timeout=30)
        assert attributes()["katalyst.kubewharf.io/topology-policy"] == "SingleNUMANode"
        pod = _pod(kube, "100m", nodeSelector={"rack": "r7"})
        kube.wait_for("bound by the reported label", lambda: _get(kube, pod["metadata"]["name"])["spec"].get("nodeName")
                      == "kwok-0", timeout=30)
        kube.request("DELETE", CRD_PATH)
        kube.wait_for("the reported layer gone", lambda: "rack" not in attributes(), timeout=60)
    finally:
        served.stop()
        _delete_all(kube)
