"""The test kit's kube-controller-manager with the Workload API's gates (issue 34): the in-tree Job
controller of v1.37.2 (gate ``WorkloadWithJob``, ``pkg/controller/job/job_scheduling_manager.go``)
makes Kubernetes' own gang objects for a batch/v1 Job, as ``docs/design/workload-api.md`` §4 says:

- a root Job with ``spec.scheduling`` gets a Workload ``<job>-<hash>`` (``controllerRef`` the Job,
  one template ``<job>-pgt-0`` compiled from ``spec.scheduling``) and a PodGroup
  ``<workload>-<template>-<hash>`` (``workloadRef`` the template; owned by the Job, and by the
  Workload without being its controller); its pods name that PodGroup in
  ``spec.schedulingGroup.podGroupName``;
- a gang without ``minCount`` gets the Job's parallelism, and a Job scaled later has its
  PodGroup's ``minCount`` patched; a Job without ``spec.scheduling`` gets a ``basic`` PodGroup;
- a Job whose pod template already names a PodGroup (bring your own: a JobSet or TrainJob
  controller made it) gets nothing made;
- a child Job annotated ``scheduling.k8s.io/group-template-name`` (controlled by a parent that
  owns a Workload, as JobSet's KEP-969 plans) gets only its PodGroup, from that template;
- deleting a Job deletes its Workload and PodGroup: the garbage collector, then
  ``podgroup-protection-controller`` removing the protection finalizer once no pod names it.

No kwok and no scheduler: the pods stay pending; this is about what the controllers make.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import pytest
import requests
from kube_cluster import WORKLOAD_CONTROLLERS, KubeCluster, start_cluster
from kube_jobs import API_FLAGS, CONTROLLER_FLAGS, job_body

pytestmark = pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")

GROUP: Final = "/apis/scheduling.k8s.io/v1beta1"
NAMESPACE: Final = "wj"
RACK: Final = "example.com/rack"
PROTECTION_FINALIZER: Final = "scheduling.k8s.io/podgroup-protection"
TEMPLATE_ANNOTATION: Final = "scheduling.k8s.io/group-template-name"


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeCluster]:
    cluster = start_cluster(tmp_path_factory.mktemp("kube-workload-jobs"), kwok=False, api_flags=API_FLAGS,
                            controller_manager=True, controllers=WORKLOAD_CONTROLLERS,
                            controller_flags=CONTROLLER_FLAGS)
    try:
        cluster.ensure_namespace(NAMESPACE)
        yield cluster
    finally:
        cluster.stop()


def _items(kube: KubeCluster, path: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = kube.request("GET", path).json()["items"]
    return items


def _created(answer: requests.Response) -> dict[str, Any]:
    assert answer.status_code == 201, answer.text
    body: dict[str, Any] = answer.json()
    return body


def _create_job(kube: KubeCluster, body: Mapping[str, Any]) -> dict[str, Any]:
    return _created(kube.request("POST", f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs", body))


def _owned_by(obj: Mapping[str, Any], uid: str) -> list[dict[str, Any]]:
    return [ref for ref in obj["metadata"].get("ownerReferences", []) if ref["uid"] == uid]


def _workloads_of(kube: KubeCluster, job: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [w for w in _items(kube, f"{GROUP}/namespaces/{NAMESPACE}/workloads")
            if _owned_by(w, job["metadata"]["uid"])]


def _pod_groups_of(kube: KubeCluster, job: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [g for g in _items(kube, f"{GROUP}/namespaces/{NAMESPACE}/podgroups")
            if _owned_by(g, job["metadata"]["uid"])]


def _pods_of(kube: KubeCluster, job: str, count: int) -> list[dict[str, Any]]:
    """The Job's pods once the controller made ``count`` of them."""
    def made() -> list[dict[str, Any]] | None:
        pods = _items(kube, f"/api/v1/namespaces/{NAMESPACE}/pods?labelSelector=batch.kubernetes.io/job-name={job}")
        return pods if len(pods) == count else None

    found: list[dict[str, Any]] = kube.wait_for(f"{job}'s {count} pods", made, timeout=30)
    return found


def _one(kube: KubeCluster, what: str, find: Any) -> dict[str, Any]:
    found: list[dict[str, Any]] = kube.wait_for(what, lambda: (f if len(f := find()) == 1 else None), timeout=30)
    return found[0]


def test_a_job_asking_for_a_gang_gets_a_workload_and_a_pod_group_its_pods_name(kube: KubeCluster) -> None:
    job = _create_job(kube, job_body("train", 4, {"schedulingPolicy": {"gang": {"minCount": 4}},
                                                  "schedulingConstraints": {"topology": [{"key": RACK}]}}))
    assert job["spec"]["scheduling"]["schedulingConstraints"] == {"topology": [{"key": RACK}]}  # kept: the gates
    workload = _one(kube, "the Job's Workload", lambda: _workloads_of(kube, job))
    assert workload["metadata"]["name"].startswith("train-") and workload["metadata"]["name"] != "train"
    assert workload["spec"]["controllerRef"] == {"apiGroup": "batch", "kind": "Job", "name": "train"}
    (owner,) = workload["metadata"]["ownerReferences"]
    assert owner["kind"] == "Job" and owner["controller"] is True
    (template,) = workload["spec"]["podGroupTemplates"]
    assert template["name"] == "train-pgt-0"
    assert template["schedulingPolicy"] == {"gang": {"minCount": 4}}
    assert template["schedulingConstraints"] == {"topology": [{"key": RACK}]}

    group = _one(kube, "the Job's PodGroup", lambda: _pod_groups_of(kube, job))
    name = group["metadata"]["name"]
    assert name.startswith(f"{workload['metadata']['name']}-train-pgt-0-")  # <workload>-<template>-<hash>
    assert group["spec"]["workloadRef"] == {"workloadName": workload["metadata"]["name"], "templateName": "train-pgt-0"}
    assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 4}}
    assert group["spec"]["schedulingConstraints"] == {"topology": [{"key": RACK}]}
    assert PROTECTION_FINALIZER in group["metadata"]["finalizers"]
    owners = {ref["kind"]: ref for ref in group["metadata"]["ownerReferences"]}
    assert owners["Job"]["controller"] is True and not owners["Workload"].get("controller")

    pods = _pods_of(kube, "train", 4)
    assert {p["spec"]["schedulingGroup"]["podGroupName"] for p in pods} == {name}
    assert sorted(p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] for p in pods) == \
        ["0", "1", "2", "3"]
    # The pods' one owner is their Job (the PodGroup is named, not an owner).
    assert all([ref["kind"] for ref in p["metadata"]["ownerReferences"]] == ["Job"] for p in pods)


def test_a_gang_without_a_minimum_gets_the_parallelism_and_follows_it(kube: KubeCluster) -> None:
    job = _create_job(kube, job_body("elastic", 3, {"schedulingPolicy": {"gang": {}}}))
    group = _one(kube, "the PodGroup", lambda: _pod_groups_of(kube, job))
    assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}
    assert "schedulingConstraints" not in group["spec"]
    answer = kube.session.patch(f"{kube.server}/apis/batch/v1/namespaces/{NAMESPACE}/jobs/elastic",
                                json={"spec": {"parallelism": 5}}, verify=False, timeout=10,
                                headers={"Content-Type": "application/merge-patch+json"})
    assert answer.status_code == 200, answer.text
    kube.wait_for("minCount patched to the new parallelism", lambda: _pod_groups_of(kube, job)[0]["spec"][
        "schedulingPolicy"]["gang"]["minCount"] == 5, timeout=30)
    (workload,) = _workloads_of(kube, job)
    assert workload["spec"]["podGroupTemplates"][0]["schedulingPolicy"] == {"gang": {"minCount": 5}}
    # An explicit minimum above the parallelism is refused.
    refused = kube.request("POST", f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs",
                           job_body("too-many", 2, {"schedulingPolicy": {"gang": {"minCount": 3}}}))
    assert refused.status_code == 422 and "must not be greater than parallelism" in refused.text, refused.text


def test_a_job_without_scheduling_gets_a_basic_pod_group(kube: KubeCluster) -> None:
    job = _create_job(kube, job_body("plain", 2))
    group = _one(kube, "the PodGroup", lambda: _pod_groups_of(kube, job))
    assert group["spec"]["schedulingPolicy"] == {"basic": {}}
    pods = _pods_of(kube, "plain", 2)
    assert {p["spec"]["schedulingGroup"]["podGroupName"] for p in pods} == {group["metadata"]["name"]}


def test_a_job_whose_pods_name_their_own_pod_group_gets_nothing_made(kube: KubeCluster) -> None:
    _created(kube.request("POST", f"{GROUP}/namespaces/{NAMESPACE}/podgroups", {
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "byo-workers"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 3}}}}))
    job = _create_job(kube, job_body("byo", 3, pod_group="byo-workers"))
    pods = _pods_of(kube, "byo", 3)
    assert {p["spec"]["schedulingGroup"]["podGroupName"] for p in pods} == {"byo-workers"}
    assert not _workloads_of(kube, job) and not _pod_groups_of(kube, job)
    group = kube.request("GET", f"{GROUP}/namespaces/{NAMESPACE}/podgroups/byo-workers").json()
    assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}  # untouched
    assert not group["metadata"].get("ownerReferences")


def test_a_child_job_delegated_a_template_gets_only_its_pod_group(kube: KubeCluster) -> None:
    """As JobSet's KEP-969 plans: the parent (here a ConfigMap stands in for a JobSet: the Job
    controller only matches the child's controller reference against the Workload's
    ``controllerRef``) owns a Workload; its child Job names a template of it."""
    parent = _created(kube.request("POST", f"/api/v1/namespaces/{NAMESPACE}/configmaps",
                                   {"metadata": {"name": "jobset-stand-in"}}))
    _created(kube.request("POST", f"{GROUP}/namespaces/{NAMESPACE}/workloads", {
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "jobset-stand-in"},
        "spec": {"controllerRef": {"kind": "ConfigMap", "name": "jobset-stand-in"},
                 "podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 2}},
                                        "schedulingConstraints": {"topology": [{"key": RACK}]}}]}}))
    body = job_body("child-workers-0", 2, annotations={TEMPLATE_ANNOTATION: "workers"})
    body["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "jobset-stand-in",
                                            "uid": parent["metadata"]["uid"], "controller": True}]
    job = _create_job(kube, body)
    group = _one(kube, "the child's PodGroup", lambda: _pod_groups_of(kube, job))
    assert group["spec"]["workloadRef"] == {"workloadName": "jobset-stand-in", "templateName": "workers"}
    assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}
    assert group["spec"]["schedulingConstraints"] == {"topology": [{"key": RACK}]}
    assert [ref["kind"] for ref in group["metadata"]["ownerReferences"]] == ["Job"]  # not the parent's Workload
    assert not _workloads_of(kube, job)  # the parent's Workload only
    pods = _pods_of(kube, "child-workers-0", 2)
    assert {p["spec"]["schedulingGroup"]["podGroupName"] for p in pods} == {group["metadata"]["name"]}


def test_deleting_a_job_deletes_its_workload_and_pod_group(kube: KubeCluster) -> None:
    job = _create_job(kube, job_body("doomed", 2, {"schedulingPolicy": {"gang": {"minCount": 2}}}))
    group = _one(kube, "the PodGroup", lambda: _pod_groups_of(kube, job))
    _pods_of(kube, "doomed", 2)
    answer = kube.request("DELETE", f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs/doomed",
                          {"propagationPolicy": "Background"})
    assert answer.status_code == 200, answer.text
    # The garbage collector deletes the pods, the Workload and the PodGroup; the PodGroup goes
    # only when podgroup-protection-controller removes its finalizer (no pod names it then).
    kube.wait_for("the PodGroup gone", lambda: kube.request(
        "GET", f"{GROUP}/namespaces/{NAMESPACE}/podgroups/{group['metadata']['name']}").status_code == 404, timeout=60)
    kube.wait_for("the Workload gone", lambda: not _workloads_of(kube, job), timeout=30)


def test_the_controller_flags_are_what_the_document_names() -> None:
    """The design note names the controller manager's flags and controllers the kit passes."""
    note = (Path(__file__).resolve().parent.parent / "docs" / "design" / "workload-api.md").read_text()
    for flag in CONTROLLER_FLAGS:
        assert flag in note, flag
    assert all(controller in note for controller in WORKLOAD_CONTROLLERS)
    assert "WorkloadWithJob=true" in API_FLAGS[0] and "WorkloadWithJob" in note


def test_controllers_or_their_flags_without_a_controller_manager_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="controller_manager=True"):
        start_cluster(tmp_path, controllers=WORKLOAD_CONTROLLERS)
    with pytest.raises(ValueError, match="controller_manager=True"):
        start_cluster(tmp_path, controller_flags=CONTROLLER_FLAGS)
    assert not list(tmp_path.iterdir())  # refused before anything started
