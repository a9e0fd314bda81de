"""The test kit's kube-controller-manager (``start_cluster(..., controller_manager=True)``) and its
hub with members (tests/kube_hub.py), which the multi-cluster tests stand on (issue 33).

A batch/v1 Job's pods are created by the controller manager (no scheduler runs: the test binds
them); a Job whose pods kwok runs completes by kwok's ``pod-complete`` stage (it completes the
Running pods a Job owns); a Job whose pods are never bound completes when their status is
patched to Succeeded, as the hub shim mirrors a member's copy back; deleting a Job deletes its
pods (the garbage collector). The namespace's ``default`` service account and ``kube-root-ca.crt``
come from the controllers, not from the kit. The hub and members start together, each its own
control plane, and the clusters file names them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kube_cluster import CONTROLLERS, KubeCluster, start_cluster
from kube_hub import HUB, HubAndMembers, hub_and_members, write_clusters_file

pytestmark = pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
NAMESPACE = "jobs"
NODE = "kwok-0"


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeCluster]:
    cluster = start_cluster(tmp_path_factory.mktemp("kube-cm"), controller_manager=True)
    try:
        cluster.add_node(NODE)
        # The namespace alone: its service account is the controller manager's to make.
        answer = cluster.request("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
        assert answer.status_code == 201, answer.text
        yield cluster
    finally:
        cluster.stop()


def _job(name: str, pods: int) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"completions": pods, "parallelism": pods, "backoffLimit": 0, "template": {"spec": {
                "schedulerName": "default-scheduler", "restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.7",
                                "resources": {"requests": {"cpu": "100m"}}}]}}}}


def _pods_of(kube: KubeCluster, job: str) -> list[dict[str, Any]]:
    answer = kube.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods?labelSelector=job-name={job}")
    items: list[dict[str, Any]] = answer.json()["items"]
    return items


def _run_job(kube: KubeCluster, name: str, pods: int) -> list[dict[str, Any]]:
    """The Job created; its pods, once the controller manager has made them all."""
    answer = kube.request("POST", f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs", _job(name, pods))
    assert answer.status_code == 201, answer.text
    made: list[dict[str, Any]] = kube.wait_for(
        f"{name}'s {pods} pods", lambda: (found if len(found := _pods_of(kube, name)) == pods else None), timeout=30)
    assert all(not p["spec"].get("nodeName") for p in made)  # nobody schedules them
    assert all(p["metadata"]["ownerReferences"][0]["kind"] == "Job" for p in made)
    return made


def _job_status(kube: KubeCluster, name: str) -> dict[str, Any]:
    status: dict[str, Any] = kube.request("GET", f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs/{name}").json()["status"]
    return status


def _complete(kube: KubeCluster, name: str, pods: int) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        status = _job_status(kube, name)
        conditions = {c["type"]: c["status"] for c in status.get("conditions", [])}
        return status if conditions.get("Complete") == "True" else None

    status: dict[str, Any] = kube.wait_for(f"job {name} Complete", done, timeout=60, interval=0.2)
    assert status["succeeded"] == pods and not status.get("failed")
    return status


def test_the_controllers_make_the_namespace_service_account_and_root_ca(kube: KubeCluster) -> None:
    assert "job" in CONTROLLERS
    kube.wait_for("default service account", lambda: kube.request(
        "GET", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/default").status_code == 200, timeout=30)
    root_ca = kube.wait_for("kube-root-ca.crt", lambda: kube.request(
        "GET", f"/api/v1/namespaces/{NAMESPACE}/configmaps/kube-root-ca.crt").json().get("data"), timeout=30)
    assert root_ca["ca.crt"] == (kube.workdir / "certs" / "apiserver.crt").read_text()


def test_a_job_whose_pods_are_bound_to_a_kwok_node_completes(kube: KubeCluster) -> None:
    pods = _run_job(kube, "bound", 3)
    for pod in pods:
        name = pod["metadata"]["name"]
        binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                   "target": {"apiVersion": "v1", "kind": "Node", "name": NODE}}
        answer = kube.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods/{name}/binding", binding)
        assert answer.status_code == 201, answer.text
    _complete(kube, "bound", 3)  # kwok: Running, then Succeeded (pod-complete: pods a Job owns)
    assert {p["status"]["phase"] for p in _pods_of(kube, "bound")} == {"Succeeded"}


def test_a_job_whose_unbound_pods_are_marked_succeeded_completes_and_goes_with_its_pods(kube: KubeCluster) -> None:
    """What the hub does: its pods are never bound there; their status copies the member's."""
    pods = _run_job(kube, "mirrored", 3)
    status = {"status": {"phase": "Succeeded", "containerStatuses": [{
        "name": "c", "image": "registry.k8s.io/pause:3.7", "imageID": "", "ready": False, "restartCount": 0,
        "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}}
    for pod in pods[:2]:
        answer = kube.session.patch(f"{kube.server}/api/v1/namespaces/{NAMESPACE}/pods/{pod['metadata']['name']}/status",
                                    json=status, verify=False, timeout=10,
                                    headers={"Content-Type": "application/merge-patch+json"})
        assert answer.status_code == 200, answer.text
    kube.wait_for("two of three counted", lambda: _job_status(kube, "mirrored").get("succeeded") == 2, timeout=30)
    assert "completionTime" not in _job_status(kube, "mirrored")  # one pod still to go
    answer = kube.session.patch(f"{kube.server}/api/v1/namespaces/{NAMESPACE}/pods/{pods[2]['metadata']['name']}/status",
                                json=status, verify=False, timeout=10,
                                headers={"Content-Type": "application/merge-patch+json"})
    assert answer.status_code == 200, answer.text
    _complete(kube, "mirrored", 3)

    answer = kube.request("DELETE", f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs/mirrored",
                          {"propagationPolicy": "Background"})
    assert answer.status_code == 200, answer.text
    kube.wait_for("its pods collected", lambda: not _pods_of(kube, "mirrored"), timeout=60, interval=0.2)


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[HubAndMembers]:
    with hub_and_members(tmp_path, ("east", "west")) as clusters:
        yield clusters


def test_the_hub_and_its_members_are_three_control_planes_named_by_the_clusters_file(
        hub: HubAndMembers, tmp_path: Path) -> None:
    assert list(hub.members) == ["east", "west"]
    assert len({c.server for c in hub.all()}) == 3
    assert "kube-controller-manager" in hub.hub.processes and "kwok" not in hub.hub.processes
    assert all("kwok" in m.processes and "kube-controller-manager" not in m.processes for m in hub.members.values())
    names = hub.add_member_nodes(2, labels={"east": {"region": "eu"}}, cpu="4")
    assert names == {"east": ["east-0", "east-1"], "west": ["west-0", "west-1"]}
    east_nodes = hub.members["east"].request("GET", "/api/v1/nodes").json()["items"]
    assert {n["metadata"]["labels"].get("region") for n in east_nodes} == {"eu"}
    assert not hub.hub.request("GET", "/api/v1/nodes").json()["items"]  # the hub has no nodes

    path = write_clusters_file(tmp_path / "clusters.yaml", hub, labels={"east": {"region": "eu"}}, lost_after=30)
    document = yaml.safe_load(path.read_text())
    assert document == {
        "hub": {"name": HUB, "kubeconfig": str(hub.hub.kubeconfig)},
        "members": [{"name": "east", "kubeconfig": str(hub.members["east"].kubeconfig), "labels": {"region": "eu"}},
                    {"name": "west", "kubeconfig": str(hub.members["west"].kubeconfig)}],
        "lostAfter": 30, "onLost": "requeue"}
    with pytest.raises(ValueError, match="onLost"):
        write_clusters_file(tmp_path / "bad.yaml", hub, on_lost="retry")
