"""batch/v1 Jobs on a test cluster serving Kubernetes' Workload API with ``WorkloadWithJob``
(issue 34; ``docs/design/workload-api.md``): the flags for kube-apiserver and
kube-controller-manager (tests/kube_cluster.py's ``api_flags`` and ``controller_flags``, with
``controllers=WORKLOAD_CONTROLLERS``), and an Indexed Job's body for pyscheduler."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

#: kube-apiserver: the Workload API (as tests/test_kube_kit_workload_api.py) and ``Job.spec.scheduling``
#: (gate ``WorkloadWithJob``: without it the API server drops the field).
API_FLAGS: Final = (
    "--feature-gates=GenericWorkload=true,TopologyAwareWorkloadScheduling=true,WorkloadWithJob=true",
    "--runtime-config=scheduling.k8s.io/v1beta1=true",
)
#: kube-controller-manager: its own gates (a gate is per process): the Job controller's Workload
#: and PodGroup informers and their creation (``WorkloadWithJob``), and
#: ``podgroup-protection-controller`` (``GenericWorkload``).
CONTROLLER_FLAGS: Final = ("--feature-gates=GenericWorkload=true,WorkloadWithJob=true",)


def job_body(name: str, pods: int, scheduling: Mapping[str, Any] | None = None, *,
             pod_group: str = "", labels: Mapping[str, str] | None = None,
             annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
    """An Indexed Job of ``pods`` pods (parallelism = completions) of 1 cpu for pyscheduler;
    ``scheduling``: its ``spec.scheduling``; ``pod_group``: a PodGroup its pod template names
    (bring your own); ``labels`` on the Job and its pod template, ``annotations`` on the Job."""
    pod_spec: dict[str, Any] = {
        "schedulerName": "pyscheduler", "restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.7", "resources": {"requests": {"cpu": "1"}}}]}
    if pod_group:
        pod_spec["schedulingGroup"] = {"podGroupName": pod_group}
    spec: dict[str, Any] = {"completionMode": "Indexed", "completions": pods, "parallelism": pods, "backoffLimit": 0,
                            "template": {"metadata": {"labels": dict(labels or {})}, "spec": pod_spec}}
    if scheduling is not None:
        spec["scheduling"] = dict(scheduling)
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "labels": dict(labels or {}), "annotations": dict(annotations or {})},
            "spec": spec}
