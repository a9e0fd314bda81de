"""The test kit's kube-apiserver (v1.37.2) serves Kubernetes' own gang objects, the
``scheduling.k8s.io/v1beta1`` Workload and PodGroup, when started with :data:`WORKLOAD_API_FLAGS`
(issue 34; ``docs/design/workload-api.md`` has the sources): the group is discovered, both objects
round-trip with their gang and topology fields, a PodGroup's status is written through its own
``/status`` subresource only, a pod names its PodGroup in ``spec.schedulingGroup.podGroupName``
(validated as a DNS subdomain, immutable, the group's existence not checked), and a PodGroup
carries the protection finalizer that only kube-controller-manager's
``podgroup-protection-controller`` removes.

No kwok and no controller manager: this is about what the API server accepts and stores.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import pytest
import requests
from kube_cluster import KubeCluster, start_cluster

pytestmark = pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")

#: What kube-apiserver v1.37.2 needs to serve the objects: the GenericWorkload gate (beta, off by
#: default) and the beta group version (beta APIs are off by default too); the topology fields
#: are kept only while the alpha TopologyAwareWorkloadScheduling gate is on (dropped otherwise).
#: A second ``--feature-gates`` adds to the kit's own ``WatchList=false`` (the flag is repeatable).
WORKLOAD_API_FLAGS: Final = (
    "--feature-gates=GenericWorkload=true,TopologyAwareWorkloadScheduling=true",
    "--runtime-config=scheduling.k8s.io/v1beta1=true",
)
GROUP: Final = "/apis/scheduling.k8s.io/v1beta1"
NAMESPACE: Final = "wl"
RACK: Final = "example.com/rack"
PROTECTION_FINALIZER: Final = "scheduling.k8s.io/podgroup-protection"


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeCluster]:
    cluster = start_cluster(tmp_path_factory.mktemp("kube-workload-api"), kwok=False, api_flags=WORKLOAD_API_FLAGS)
    try:
        cluster.ensure_namespace(NAMESPACE)
        yield cluster
    finally:
        cluster.stop()


def _path(resource: str, name: str = "") -> str:
    return f"{GROUP}/namespaces/{NAMESPACE}/{resource}" + (f"/{name}" if name else "")


def _merge_patch(kube: KubeCluster, path: str, body: Mapping[str, Any]) -> requests.Response:
    return kube.session.request("PATCH", kube.server + path, json=body, timeout=10, verify=False,
                                headers={"Content-Type": "application/merge-patch+json"})


def _created(answer: requests.Response) -> dict[str, Any]:
    assert answer.status_code == 201, answer.text
    body: dict[str, Any] = answer.json()
    return body


def _refused(answer: requests.Response, field: str) -> None:
    """422 Invalid, with a cause naming ``field`` (the API's path of the offending field)."""
    assert answer.status_code == 422, answer.text
    causes = answer.json().get("details", {}).get("causes", [])
    assert any(field in cause.get("field", "") for cause in causes), answer.text


def _workload(name: str, min_count: int = 4, **template: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": name},
        "spec": {
            "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": name},
            "podGroupTemplates": [{
                "name": "workers", "schedulingPolicy": {"gang": {"minCount": min_count}},
                "schedulingConstraints": {"topology": [{"key": RACK}]}, **template,
            }],
        },
    }


def _pod_group(name: str, workload: str = "train", min_count: int = 4) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": name},
        "spec": {
            "workloadRef": {"workloadName": workload, "templateName": "workers"},
            "schedulingPolicy": {"gang": {"minCount": min_count}},
            "schedulingConstraints": {"topology": [{"key": RACK}]},
        },
    }


def _pod(name: str, scheduling_group: Mapping[str, Any] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "pyscheduler", "containers": [
        {"name": "c", "image": "registry.k8s.io/pause:3.7", "resources": {"requests": {"cpu": "100m"}}}]}
    if scheduling_group is not None:
        spec["schedulingGroup"] = dict(scheduling_group)
    return {"metadata": {"name": name}, "spec": spec}


def test_the_beta_group_serves_workloads_and_pod_groups_with_a_status_subresource(kube: KubeCluster) -> None:
    answer = kube.request("GET", GROUP)
    assert answer.status_code == 200, answer.text
    resources = {r["name"]: r for r in answer.json()["resources"]}
    assert {"workloads", "podgroups", "podgroups/status"} <= set(resources)
    assert "workloads/status" not in resources  # a Workload has no status
    assert resources["workloads"]["namespaced"] and resources["podgroups"]["namespaced"]
    assert resources["podgroups"]["kind"] == "PodGroup" and resources["workloads"]["kind"] == "Workload"
    # Only the version asked for: the alpha one (with CompositePodGroup) needs its own runtime-config.
    versions = {v["version"] for v in kube.request("GET", "/apis/scheduling.k8s.io").json()["versions"]}
    assert {"v1", "v1beta1"} <= versions and "v1alpha3" not in versions
    assert kube.request("GET", "/apis/scheduling.k8s.io/v1alpha3").status_code == 404


def test_the_second_feature_gates_flag_adds_to_the_kits_own(kube: KubeCluster) -> None:
    metrics = kube.request("GET", "/metrics").text
    enabled = {m.group(1): m.group(2) == "1" for m in re.finditer(
        r'^kubernetes_feature_enabled\{name="(\w+)",stage="\w*"\} (\d)', metrics, re.MULTILINE)}
    assert enabled["GenericWorkload"] and enabled["TopologyAwareWorkloadScheduling"]
    assert enabled["WatchList"] is False  # the kit's --feature-gates=WatchList=false still holds
    assert enabled["CompositePodGroup"] is False and enabled["WorkloadWithJob"] is False


def test_a_workload_round_trips_and_only_its_gang_minimum_changes(kube: KubeCluster) -> None:
    stored = _created(kube.request("POST", _path("workloads"), _workload("train")))
    again = kube.request("GET", _path("workloads", "train")).json()
    assert again["spec"] == stored["spec"]
    assert stored["spec"]["controllerRef"] == {"apiGroup": "batch", "kind": "Job", "name": "train"}
    (template,) = stored["spec"]["podGroupTemplates"]
    assert template["name"] == "workers"
    assert template["schedulingPolicy"] == {"gang": {"minCount": 4}}
    assert template["schedulingConstraints"] == {"topology": [{"key": RACK}]}
    assert "status" not in stored

    # minCount is the one mutable field (workload scaling); the template list is fixed.
    resized = _merge_patch(kube, _path("workloads", "train"), {"spec": {"podGroupTemplates": [
        {**template, "schedulingPolicy": {"gang": {"minCount": 6}}}]}})
    assert resized.status_code == 200, resized.text
    assert resized.json()["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"]["minCount"] == 6
    extra = {"name": "driver", "schedulingPolicy": {"basic": {}}}
    grown = _merge_patch(kube, _path("workloads", "train"), {"spec": {"podGroupTemplates": [
        resized.json()["spec"]["podGroupTemplates"][0], extra]}})
    _refused(grown, "spec.podGroupTemplates")
    moved = _merge_patch(kube, _path("workloads", "train"), {"spec": {"podGroupTemplates": [
        {**resized.json()["spec"]["podGroupTemplates"][0], "schedulingConstraints": {"topology": [{"key": "zone"}]}}]}})
    _refused(moved, "schedulingConstraints")


def test_a_workload_without_exactly_one_policy_or_with_a_zero_minimum_is_refused(kube: KubeCluster) -> None:
    _refused(kube.request("POST", _path("workloads"), _workload("zero", min_count=0)), "minCount")
    both = _workload("both", schedulingPolicy={"gang": {"minCount": 2}, "basic": {}})
    _refused(kube.request("POST", _path("workloads"), both), "schedulingPolicy")
    neither = _workload("neither", schedulingPolicy={})
    _refused(kube.request("POST", _path("workloads"), neither), "schedulingPolicy")


def test_a_pod_group_round_trips_with_defaults_and_the_protection_finalizer(kube: KubeCluster) -> None:
    body = _pod_group("train-workers-0")
    # A status written on create is dropped: only the /status subresource writes it.
    body["status"] = {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "True", "reason": "Scheduled",
                                      "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    stored = _created(kube.request("POST", _path("podgroups"), body))
    spec = stored["spec"]
    assert spec["workloadRef"] == {"workloadName": "train", "templateName": "workers"}
    assert spec["schedulingPolicy"] == {"gang": {"minCount": 4}}
    assert spec["schedulingConstraints"] == {"topology": [{"key": RACK}]}
    assert spec["disruptionMode"] == {"single": {}}  # defaulted
    assert spec["priority"] == 0  # the Priority admission plugin resolves it (no class: 0)
    assert PROTECTION_FINALIZER in stored["metadata"]["finalizers"]  # the PodGroupProtection admission plugin
    assert not stored.get("status", {}).get("conditions")

    resized = _merge_patch(kube, _path("podgroups", "train-workers-0"),
                           {"spec": {"schedulingPolicy": {"gang": {"minCount": 3}}}})
    assert resized.status_code == 200, resized.text
    assert resized.json()["spec"]["schedulingPolicy"]["gang"]["minCount"] == 3
    _refused(_merge_patch(kube, _path("podgroups", "train-workers-0"),
                          {"spec": {"schedulingConstraints": {"topology": [{"key": "zone"}]}}}), "schedulingConstraints")
    _refused(_merge_patch(kube, _path("podgroups", "train-workers-0"),
                          {"spec": {"workloadRef": {"workloadName": "other", "templateName": "workers"}}}), "workloadRef")
    _refused(kube.request("POST", _path("podgroups"), _pod_group("zero", min_count=0)), "minCount")
    two_levels = _pod_group("two-levels")
    two_levels["spec"]["schedulingConstraints"]["topology"].append({"key": "topology.kubernetes.io/zone"})
    _refused(kube.request("POST", _path("podgroups"), two_levels), "spec.schedulingConstraints.topology")
    # A standalone PodGroup: no Workload behind it, none needed.
    standalone = _created(kube.request("POST", _path("podgroups"), {
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "standalone"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}))
    assert "workloadRef" not in standalone["spec"] and "schedulingConstraints" not in standalone["spec"]


def test_a_pod_group_status_is_written_through_its_subresource_only(kube: KubeCluster) -> None:
    _created(kube.request("POST", _path("podgroups"), _pod_group("status-pg")))
    condition = {"type": "PodGroupInitiallyScheduled", "status": "False", "reason": "Unschedulable",
                 "message": "no rack of example.com/rack has 4 free", "lastTransitionTime": "2026-11-27T23:00:00Z"}
    # Through the main resource the status is kept as it was.
    ignored = _merge_patch(kube, _path("podgroups", "status-pg"), {"status": {"conditions": [condition]}})
    assert ignored.status_code == 200, ignored.text
    assert not ignored.json().get("status", {}).get("conditions")
    written = _merge_patch(kube, _path("podgroups", "status-pg") + "/status", {"status": {"conditions": [condition]}})
    assert written.status_code == 200, written.text
    (stored,) = kube.request("GET", _path("podgroups", "status-pg")).json()["status"]["conditions"]
    assert {k: stored[k] for k in condition} == condition
    # A condition is validated as metav1.Condition: a reason is required.
    _refused(_merge_patch(kube, _path("podgroups", "status-pg") + "/status",
                          {"status": {"conditions": [{**condition, "reason": ""}]}}), "status.conditions")


def test_a_pod_names_its_pod_group_in_its_scheduling_group(kube: KubeCluster) -> None:
    pods = f"/api/v1/namespaces/{NAMESPACE}/pods"
    member = _created(kube.request("POST", pods, _pod("member-0", {"podGroupName": "train-workers-0"})))
    assert member["spec"]["schedulingGroup"] == {"podGroupName": "train-workers-0"}
    assert kube.request("GET", f"{pods}/member-0").json()["spec"]["schedulingGroup"] == {
        "podGroupName": "train-workers-0"}
    # The group need not exist yet (controllers may create pods first): not checked on create.
    early = _created(kube.request("POST", pods, _pod("early-0", {"podGroupName": "not-yet-created"})))
    assert early["spec"]["schedulingGroup"] == {"podGroupName": "not-yet-created"}
    # A name that is no DNS subdomain, or no name at all, is refused.
    _refused(kube.request("POST", pods, _pod("bad-0", {"podGroupName": "Not_A_Name"})),
             "spec.schedulingGroup.podGroupName")
    _refused(kube.request("POST", pods, _pod("bad-1", {})), "spec.schedulingGroup.podGroupName")
    # Immutable: a pod cannot move to another group, nor join one later.
    moved = _merge_patch(kube, f"{pods}/member-0", {"spec": {"schedulingGroup": {"podGroupName": "status-pg"}}})
    assert moved.status_code == 422, moved.text
    _created(kube.request("POST", pods, _pod("loner-0", None)))
    joined = _merge_patch(kube, f"{pods}/loner-0", {"spec": {"schedulingGroup": {"podGroupName": "status-pg"}}})
    assert joined.status_code == 422, joined.text


def test_a_deleted_pod_group_stays_until_its_protection_finalizer_is_removed(kube: KubeCluster) -> None:
    _created(kube.request("POST", _path("podgroups"), _pod_group("doomed")))
    answer = kube.request("DELETE", _path("podgroups", "doomed"))
    assert answer.status_code in (200, 202), answer.text
    # Without kube-controller-manager's podgroup-protection-controller nothing removes it.
    time.sleep(0.5)
    pending = kube.request("GET", _path("podgroups", "doomed")).json()
    assert pending["metadata"]["deletionTimestamp"] and PROTECTION_FINALIZER in pending["metadata"]["finalizers"]
    released = _merge_patch(kube, _path("podgroups", "doomed"), {"metadata": {"finalizers": None}})
    assert released.status_code == 200, released.text
    kube.wait_for("PodGroup gone", lambda: kube.request("GET", _path("podgroups", "doomed")).status_code == 404,
                  timeout=10)


def test_flags_are_what_the_document_names() -> None:
    """The design note and this kit agree on the flags (the note is the next engineer's source)."""
    note = (Path(__file__).resolve().parent.parent / "docs" / "design" / "workload-api.md").read_text()
    for flag in WORKLOAD_API_FLAGS:
        assert flag in note, flag
