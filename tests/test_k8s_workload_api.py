"""Kubernetes' own gangs on a real API server (issue 34): kube-apiserver v1.37.2 serving the
``scheduling.k8s.io/v1beta1`` PodGroup (``GenericWorkload``, ``TopologyAwareWorkloadScheduling``),
kwok nodes, and ``pyscheduler serve --rm pyscheduler_k8s:attach``. Pods naming a PodGroup in
``spec.schedulingGroup.podGroupName`` (no YuniKorn annotations) are its gang: all ``minCount`` or
none placed, the PodGroup's ``PodGroupInitiallyScheduled`` condition saying why it waits and
then that it is scheduled; its topology key keeps the members in one rack; a pod whose
PodGroup does not exist yet waits until it is created.

One cluster: a ``pool=small`` of 3 nodes (2 cpu: room for 3 two-cpu members; a 4th node joins
in the test), two racks of 2 and 3 nodes (``example.com/rack``) and the partition's
``topology.levels`` naming the rack label. PodGroups are never deleted here (their protection
finalizer needs kube-controller-manager): each test uses its own names.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from kube_cluster import KubeCluster
from kube_served import create_pods, delete_pods, labelled_cluster, list_pods, pod_body, running, serving, \
    topology_queues
from web_helpers import Server

pytestmark = pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")

#: As tests/test_kube_kit_workload_api.py: the gates and the beta group version.
WORKLOAD_API_FLAGS: Final = (
    "--feature-gates=GenericWorkload=true,TopologyAwareWorkloadScheduling=true",
    "--runtime-config=scheduling.k8s.io/v1beta1=true",
)
GROUP: Final = "/apis/scheduling.k8s.io/v1beta1"
DEPLOY: Final = Path(__file__).resolve().parent.parent / "k8s" / "deploy"
NAMESPACE: Final = "train"
RACK: Final = "example.com/rack"
RACKS: Final = {"r-two": ["two-0", "two-1"], "r-three": ["three-0", "three-1", "three-2"]}
SMALL: Final = ["small-0", "small-1", "small-2"]
QUEUES: Final = topology_queues(RACK)


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeCluster]:
    labels: dict[str, dict[str, str]] = {node: {"pool": "small"} for node in SMALL}
    labels.update({node: {RACK: rack} for rack, nodes in RACKS.items() for node in nodes})
    with labelled_cluster(tmp_path_factory.mktemp("kube-workload"), labels, NAMESPACE,
                          api_flags=WORKLOAD_API_FLAGS) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def server(kube: KubeCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(kube, tmp_path_factory.mktemp("serve-workload"), QUEUES) as running_server:
        yield running_server


@pytest.fixture(autouse=True)
def clean(kube: KubeCluster) -> Iterator[None]:
    yield
    delete_pods(kube, NAMESPACE)


def _create_group(kube: KubeCluster, name: str, min_count: int, key: str = "") -> None:
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    if key:
        spec["schedulingConstraints"] = {"topology": [{"key": key}]}
    answer = kube.request("POST", f"{GROUP}/namespaces/{NAMESPACE}/podgroups",
                          {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                           "metadata": {"name": name}, "spec": spec})
    assert answer.status_code == 201, answer.text


def _condition(kube: KubeCluster, name: str) -> dict[str, Any] | None:
    group = kube.request("GET", f"{GROUP}/namespaces/{NAMESPACE}/podgroups/{name}").json()
    for condition in group.get("status", {}).get("conditions", []):
        if condition.get("type") == "PodGroupInitiallyScheduled":
            return dict(condition)
    return None


def _members(group: str, count: int, cpu: str = "2", **spec: Any) -> list[dict[str, Any]]:
    """``count`` pods naming ``group``, no YuniKorn annotations; each a different applicationId
    label (the group, not the label, makes the application)."""
    return [pod_body(f"{group}-{n}", f"{group}-label-{n}", "root.train", cpu, labels={"job": group},
                     schedulingGroup={"podGroupName": group}, **spec) for n in range(count)]


def _job_pods(kube: KubeCluster, group: str) -> list[dict[str, Any]]:
    return list_pods(kube, NAMESPACE, f"job={group}")


def _all_running(kube: KubeCluster, group: str, count: int, timeout: float = 90) -> list[dict[str, Any]]:
    def done() -> list[dict[str, Any]] | None:
        pods = _job_pods(kube, group)
        return pods if len(pods) == count and all(running(p) for p in pods) else None

    return list(kube.wait_for(f"the members of {group} running", done, timeout=timeout))


def _rack_of(node: str) -> str:
    return next(rack for rack, nodes in RACKS.items() if node in nodes)


def test_a_podgroup_gang_places_all_its_members_or_none(kube: KubeCluster, server: Server) -> None:
    _create_group(kube, "allreduce", 4)
    create_pods(kube, NAMESPACE, _members("allreduce", 4, nodeSelector={"pool": "small"}))

    def waits() -> dict[str, Any] | None:
        condition = _condition(kube, "allreduce")
        return condition if condition is not None and condition["status"] == "False" else None

    condition = kube.wait_for("the PodGroup's Unschedulable condition", waits, timeout=60)
    # The core's reason for the placeholder that fits nowhere (it carries the members' selector).
    assert condition["reason"] == "Unschedulable" and "pool=small" in condition["message"]
    assert "observedGeneration" not in condition  # v1.37.2 gives PodGroups no generation
    placeholders = [p for p in list_pods(kube, NAMESPACE, "applicationId=podgroup-train-allreduce")
                    if p["metadata"]["labels"].get("placeholder") == "true"]
    assert len(placeholders) == 4
    assert not [p for p in _job_pods(kube, "allreduce") if p["spec"].get("nodeName")]  # no member placed
    app = server.get("/ws/v1/partition/default/queue/root.train/application/podgroup-train-allreduce").json()
    assert app["applicationID"] == "podgroup-train-allreduce"

    kube.add_nodes(["small-3"], labels={"small-3": {"pool": "small"}}, cpu="2", memory="8Gi")  # room appears
    members = _all_running(kube, "allreduce", 4)
    assert len({p["spec"]["nodeName"] for p in members}) == 4

    def scheduled() -> dict[str, Any] | None:
        condition = _condition(kube, "allreduce")
        return condition if condition is not None and condition["status"] == "True" else None

    assert kube.wait_for("the PodGroup's Scheduled condition", scheduled, timeout=30)["reason"] == "Scheduled"
    kube.wait_for("no placeholder left", lambda: not [
        p for p in list_pods(kube, NAMESPACE, "placeholder=true") if "allreduce" in p["metadata"]["name"]], timeout=60)


def test_a_podgroups_topology_key_keeps_its_members_in_one_rack(kube: KubeCluster, server: Server) -> None:
    _create_group(kube, "ring", 2, RACK)
    _create_group(kube, "tree", 3, RACK)
    create_pods(kube, NAMESPACE, _members("ring", 2))
    ring = _all_running(kube, "ring", 2)
    assert {_rack_of(p["spec"]["nodeName"]) for p in ring} == {"r-two"}  # the tightest rack that holds it
    create_pods(kube, NAMESPACE, _members("tree", 3))
    tree = _all_running(kube, "tree", 3)
    assert {_rack_of(p["spec"]["nodeName"]) for p in tree} == {"r-three"}
    app = server.get("/ws/v1/partition/default/queue/root.train/application/podgroup-train-tree").json()
    nodes = {a["nodeId"] for a in app["allocations"]}
    assert nodes and {_rack_of(n) for n in nodes} == {"r-three"}


def test_a_pod_whose_podgroup_is_missing_waits_until_it_is_created(kube: KubeCluster, server: Server) -> None:
    create_pods(kube, NAMESPACE, _members("late", 1, cpu="1"))

    def said() -> str:
        for pod in _job_pods(kube, "late"):
            for condition in pod.get("status", {}).get("conditions", []):
                if condition.get("type") == "PodScheduled" and condition.get("reason") == "SchedulingGated":
                    return str(condition["message"])
        return ""

    assert kube.wait_for("the waiting pod's condition", said, timeout=30) == \
        f"waiting for PodGroup {NAMESPACE}/late to appear"
    assert not [p for p in _job_pods(kube, "late") if p["spec"].get("nodeName")]
    _create_group(kube, "late", 1)
    _all_running(kube, "late", 1)


def test_the_shims_role_may_follow_podgroups_and_write_their_status(kube: KubeCluster) -> None:
    """k8s/deploy/10-rbac.yaml, applied: the shim's service account may get, list and watch
    PodGroups and Workloads and patch a PodGroup's status, and no more of them."""
    kube.ensure_namespace("pyscheduler")
    done = subprocess.run(["kubectl", f"--kubeconfig={kube.kubeconfig}", "apply", "-f", str(DEPLOY / "10-rbac.yaml")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr

    def allowed(verb: str, resource: str, subresource: str = "") -> bool:
        answer = kube.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": "system:serviceaccount:pyscheduler:pyscheduler",
                     "groups": ["system:serviceaccounts", "system:serviceaccounts:pyscheduler"],
                     "resourceAttributes": {"group": "scheduling.k8s.io", "resource": resource,
                                            "subresource": subresource, "verb": verb, "namespace": NAMESPACE}}})
        assert answer.status_code == 201, answer.text
        return bool(answer.json()["status"].get("allowed"))

    for resource in ("podgroups", "workloads"):
        assert all(allowed(verb, resource) for verb in ("get", "list", "watch"))
        assert not allowed("delete", resource)
    assert allowed("patch", "podgroups", "status")
    assert not allowed("patch", "podgroups")


def test_a_topology_key_the_partition_does_not_list_rejects_the_gang_with_the_reason(kube: KubeCluster,
                                                                                  server: Server) -> None:
    _create_group(kube, "blocked", 2, "example.com/block")
    create_pods(kube, NAMESPACE, _members("blocked", 2, cpu="1"))

    def rejected() -> dict[str, Any] | None:
        condition = _condition(kube, "blocked")
        return condition if condition is not None and condition["status"] == "False" else None

    condition = kube.wait_for("the PodGroup's condition", rejected, timeout=60)
    assert condition["reason"] == "Unschedulable"
    assert "application podgroup-train-blocked rejected" in condition["message"]
    assert "example.com/block" in condition["message"]
    kube.wait_for("its pods failed", lambda: all(
        p["status"].get("phase") == "Failed" for p in _job_pods(kube, "blocked")), timeout=30)
