"""Jobs and JobSet-style Jobs as Kubernetes' Workload API makes them gangs (issue 34), on a real
API server: kube-apiserver v1.37.2 with the Workload API and ``WorkloadWithJob``,
kube-controller-manager with the same gates (its Job controller makes a Job's Workload and
PodGroup; ``podgroup-protection-controller`` lets a deleted PodGroup go), kwok nodes in racks and
``pyscheduler serve --rm pyscheduler_k8s:attach``. Nothing here carries a YuniKorn annotation or a
queue label: the PodGroup makes the gang, the namespace the queue.

- An Indexed Job with ``spec.scheduling`` (gang ``minCount`` 8, topology key the rack label) gets
  a Workload and PodGroup from the Job controller; its 8 pods all run, in the one rack with 8
  free nodes, and the PodGroup says ``PodGroupInitiallyScheduled`` True.
- A JobSet-style Indexed Job (JobSet's labels and annotations, as JobSet writes a child Job for
  a Kubeflow Trainer TrainJob) whose pod template names a PodGroup made first by the test (the
  JobSet/TrainJob controller's part in KEP-969/KEP-3015; the Job controller leaves such a Job
  alone) lands whole in that rack too.
- A gang of 10, which no rack holds but the cluster does, runs spread over racks without the
  constraint; with it, it waits, its PodGroup naming the rack level and the most free rack.
- A gang whose pods' node selector matches only a larger rack's nodes runs there, not in the
  tightest rack with room.

The cluster: racks ``r-2``, ``r-4``, ``r-8`` (2, 4 and 8 nodes); every node has 2 cpu and every
pod asks 2 (a node each), so a gang of 8 fits in one rack only in ``r-8``, and a gang of 10 in
none. kwok runs a Job's pods, then completes them (its ``pod-complete`` stage), so a Job here
runs to Complete.

Placement: no queue label on the pods; the partition's rules are ``provided`` (none here), then
``tag: namespace`` (YuniKorn's usual rule): the pods of namespace ``train`` go to ``root.train``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

import pytest
from kube_cluster import WORKLOAD_CONTROLLERS, KubeCluster
from kube_jobs import API_FLAGS, CONTROLLER_FLAGS, job_body
from kube_served import labelled_cluster, list_pods, serving, topology_queues
from web_helpers import Server

from pyscheduler.si.events import EventChangeDetail, EventChangeType, EventRecordType
from pyscheduler_k8s.podgroup import MAX_APP_ID, application_id

pytestmark = pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")

GROUP: Final = "/apis/scheduling.k8s.io/v1beta1"
JOBS: Final = "/apis/batch/v1/namespaces/train/jobs"
NAMESPACE: Final = "train"
RACK: Final = "example.com/rack"
RACKS: Final = {"r-2": 2, "r-4": 4, "r-8": 8}
#: The gang that fits in one rack (``r-8``), and the one that fits in none (but in the cluster).
GANG: Final = 8
WIDE: Final = 10
QUEUES: Final = topology_queues(RACK, namespace_rule=True)
#: The annotation prefixes of YuniKorn's and pyscheduler's own vocabulary: none on these pods.
OWN_PREFIXES: Final = ("yunikorn.apache.org/", "pyscheduler.io/")


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeCluster]:
    # Rack r-4's nodes are also pool "wide" (a node selector's target, last test).
    labels = {f"{rack}-{n}": {RACK: rack, **({"pool": "wide"} if rack == "r-4" else {})}
              for rack, size in RACKS.items() for n in range(size)}
    with labelled_cluster(tmp_path_factory.mktemp("kube-workload-jobs"), labels, NAMESPACE, api_flags=API_FLAGS,
                          controller_manager=True, controllers=WORKLOAD_CONTROLLERS,
                          controller_flags=CONTROLLER_FLAGS) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def server(kube: KubeCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(kube, tmp_path_factory.mktemp("serve-workload-jobs"), QUEUES) as running_server:
        yield running_server


@pytest.fixture(autouse=True)
def clean(kube: KubeCluster) -> Iterator[None]:
    """After each test: its Jobs deleted with their pods (the garbage collector), and every
    PodGroup gone (the Job's by the garbage collector, the test's own deleted here; each goes
    once ``podgroup-protection-controller`` sees no pod naming it), so the racks are free again."""
    yield
    kube.request("DELETE", f"{JOBS}?propagationPolicy=Background")
    kube.request("DELETE", f"{GROUP}/namespaces/{NAMESPACE}/podgroups")
    kube.wait_for("the namespace empty", lambda: not list_pods(kube, NAMESPACE) and not _pod_groups(kube), timeout=60)


def _pod_groups(kube: KubeCluster) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = kube.request("GET", f"{GROUP}/namespaces/{NAMESPACE}/podgroups").json()["items"]
    return items


def _gang(size: int = GANG, topology: bool = True) -> dict[str, Any]:
    """``spec.scheduling`` of a gang of ``size``, in one rack when ``topology``."""
    scheduling: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": size}}}
    if topology:
        scheduling["schedulingConstraints"] = {"topology": [{"key": RACK}]}
    return scheduling


def _two_cpu(body: dict[str, Any], **spec: Any) -> dict[str, Any]:
    """The Job's pods ask 2 cpu (a whole node here), with ``spec`` added to their template."""
    pod_spec = body["spec"]["template"]["spec"]
    pod_spec["containers"][0]["resources"]["requests"]["cpu"] = "2"
    pod_spec.update(spec)
    return body


def _create_job(kube: KubeCluster, body: Mapping[str, Any]) -> None:
    answer = kube.request("POST", JOBS, body)
    assert answer.status_code == 201, answer.text


def _job_pods(kube: KubeCluster, job: str) -> list[dict[str, Any]]:
    return list_pods(kube, NAMESPACE, f"batch.kubernetes.io/job-name={job}")


def _placed(pod: Mapping[str, Any]) -> bool:
    """Bound and run (kwok completes a Job's running pod at once: Succeeded counts)."""
    return bool(pod["spec"].get("nodeName")) and pod.get("status", {}).get("phase") in ("Running", "Succeeded")


def _all_placed(kube: KubeCluster, job: str, count: int = GANG, timeout: float = 60) -> list[dict[str, Any]]:
    def done() -> list[dict[str, Any]] | None:
        pods = _job_pods(kube, job)
        return pods if len(pods) == count and all(map(_placed, pods)) else None

    found: list[dict[str, Any]] = kube.wait_for(f"the {count} pods of {job} placed", done, timeout=timeout)
    return found


def _rack_of(node: str) -> str:
    return node.rsplit("-", 1)[0]


def _condition(group: Mapping[str, Any]) -> dict[str, Any] | None:
    for condition in group.get("status", {}).get("conditions", []):
        if condition.get("type") == "PodGroupInitiallyScheduled":
            return dict(condition)
    return None


def _group_condition(kube: KubeCluster, name: str, status: str, timeout: float = 30,
                     containing: str = "") -> dict[str, Any]:
    """The PodGroup's ``PodGroupInitiallyScheduled`` once it has ``status`` (and a message
    ``containing``: a waiting gang's reason changes while its placeholders arrive)."""
    def said() -> dict[str, Any] | None:
        answer = kube.request("GET", f"{GROUP}/namespaces/{NAMESPACE}/podgroups/{name}")
        condition = _condition(answer.json()) if answer.status_code == 200 else None
        return condition if condition is not None and condition["status"] == status \
            and containing in condition["message"] else None

    found: dict[str, Any] = kube.wait_for(f"PodGroup {name}: PodGroupInitiallyScheduled={status}", said,
                                          timeout=timeout)
    return found


def _complete(kube: KubeCluster, job: str) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        status: dict[str, Any] = kube.request("GET", f"{JOBS}/{job}").json().get("status", {})
        return status if any(c["type"] == "Complete" and c["status"] == "True"
                             for c in status.get("conditions", [])) else None

    found: dict[str, Any] = kube.wait_for(f"Job {job} Complete", done, timeout=60)
    return found


def _queue_of(server: Server, app_id: str) -> str:
    """The queue application ``app_id`` was added to, by the queue's event (kwok completes a
    Job's pods at once: the application may be gone already)."""
    records = server.get("/ws/v1/events/batch?count=10000").json()["EventRecords"]
    for record in records:
        if record["type"] == EventRecordType.QUEUE and record.get("eventChangeDetail") == EventChangeDetail.QUEUE_APP \
                and record.get("referenceID") == app_id:
            return str(record["objectID"])
    return ""


def _replaced_placeholders(server: Server, app_id: str) -> int:
    """How many of application ``app_id``'s placeholders the core counted replaced by a member
    (its APP REMOVE ALLOC_REPLACED events)."""
    records = server.get("/ws/v1/events/batch?count=10000").json()["EventRecords"]
    return sum(1 for r in records if r["type"] == EventRecordType.APP and r.get("objectID") == app_id
               and r.get("eventChangeType") == EventChangeType.REMOVE
               and r.get("eventChangeDetail") == EventChangeDetail.ALLOC_REPLACED)


def _without_our_vocabulary(pods: list[dict[str, Any]]) -> bool:
    keys = [k for p in pods for k in (*p["metadata"].get("annotations", {}), *p["metadata"].get("labels", {}))]
    return not [k for k in keys if k.startswith(OWN_PREFIXES)]


def test_an_indexed_job_asking_for_a_rack_runs_whole_in_the_one_rack_that_holds_it(kube: KubeCluster,
                                                                                   server: Server) -> None:
    _create_job(kube, _two_cpu(job_body("llama-finetune-workers", GANG, _gang())))
    pods = _all_placed(kube, "llama-finetune-workers")
    assert {_rack_of(p["spec"]["nodeName"]) for p in pods} == {"r-8"}
    assert len({p["spec"]["nodeName"] for p in pods}) == GANG
    assert _without_our_vocabulary(pods)
    (name,) = {p["spec"]["schedulingGroup"]["podGroupName"] for p in pods}  # the Job controller's PodGroup
    # Every member took a placeholder's place (so its node: the placeholders hold 8 nodes).
    # A placeholder whose binding failed as it was being deleted for its replacement used to be
    # released by the shim as failed: counted timed out, its member placed as a plain ask, once
    # on a node a completed member had freed (7 nodes for 8 members).
    assert _replaced_placeholders(server, application_id(NAMESPACE, name)) == GANG
    (group,) = [g for g in _pod_groups(kube) if g["metadata"]["name"] == name]
    assert group["spec"]["workloadRef"]["templateName"] == "llama-finetune-workers-pgt-0"
    assert group["spec"]["schedulingConstraints"] == {"topology": [{"key": RACK}]}
    assert _group_condition(kube, name, "True")["reason"] == "Scheduled"
    # The name (<job>-<hash>-<job>-pgt-0-<hash>) is too long for the placeholders' applicationId
    # label as it is: the application's id is cut to fit, with a hash.
    assert len(f"podgroup-{NAMESPACE}-{name}") > MAX_APP_ID
    assert _queue_of(server, application_id(NAMESPACE, name)) == "root.train"  # the namespace's queue
    status = _complete(kube, "llama-finetune-workers")
    assert status["succeeded"] == GANG and not status.get("failed")


def _jobset_child(jobset: str, replicated_job: str, index: int, pod_group: str, pods: int) -> dict[str, Any]:
    """Child Job ``index`` of a JobSet's replicated job, as JobSet writes it for a Kubeflow
    Trainer TrainJob: named ``<jobset>-<replicatedJob>-<index>``, JobSet's labels and annotations
    on the Job and its pod template, the pods' hostnames under the JobSet's headless service
    (``subdomain``), the TrainJob's ``node`` container with torchrun's ``PET_*`` environment, and
    the pod template naming the PodGroup its parent made (KEP-3015's injection of
    ``schedulingGroup.podGroupName``)."""
    name = f"{jobset}-{replicated_job}-{index}"
    marks = {"jobset.sigs.k8s.io/jobset-name": jobset, "jobset.sigs.k8s.io/replicatedjob-name": replicated_job,
             "jobset.sigs.k8s.io/replicatedjob-replicas": "1", "jobset.sigs.k8s.io/job-index": str(index),
             "jobset.sigs.k8s.io/job-global-index": str(index), "jobset.sigs.k8s.io/global-replicas": "1",
             "jobset.sigs.k8s.io/job-key": "3f1e6b0c9d2a4e5f8a7b6c5d4e3f2a1b0c9d8e7f",
             "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
    body = _two_cpu(job_body(name, pods, pod_group=pod_group, labels=marks, annotations=marks),
                    subdomain=jobset)
    body["spec"]["template"]["metadata"]["annotations"] = dict(marks)
    container = body["spec"]["template"]["spec"]["containers"][0]
    container["name"] = "node"
    container["env"] = [
        {"name": "PET_NNODES", "value": str(pods)}, {"name": "PET_NPROC_PER_NODE", "value": "1"},
        {"name": "PET_NODE_RANK", "valueFrom": {"fieldRef": {
            "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}},
        {"name": "PET_MASTER_ADDR", "value": f"{name}-0.{jobset}"}, {"name": "PET_MASTER_PORT", "value": "29400"}]
    return body


def _create_pod_group(kube: KubeCluster, name: str, min_count: int, key: str) -> None:
    """The PodGroup a JobSet/TrainJob controller makes before its Jobs (KEP-969/KEP-3015)."""
    answer = kube.request("POST", f"{GROUP}/namespaces/{NAMESPACE}/podgroups", {
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
        "metadata": {"name": name, "labels": {"jobset.sigs.k8s.io/jobset-name": "mnist"}},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}},
                 "schedulingConstraints": {"topology": [{"key": key}]}}})
    assert answer.status_code == 201, answer.text


def test_a_jobset_style_job_naming_its_own_pod_group_runs_whole_in_one_rack(kube: KubeCluster,
                                                                            server: Server) -> None:
    _create_pod_group(kube, "mnist-trainer", GANG, RACK)
    _create_job(kube, _jobset_child("mnist", "node", 0, "mnist-trainer", GANG))
    pods = _all_placed(kube, "mnist-node-0")
    assert {_rack_of(p["spec"]["nodeName"]) for p in pods} == {"r-8"}
    assert {p["spec"]["schedulingGroup"]["podGroupName"] for p in pods} == {"mnist-trainer"}
    assert all(p["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"] == "mnist" for p in pods)
    assert _without_our_vocabulary(pods)
    # Bring your own PodGroup: the Job controller made neither a PodGroup nor a Workload for it.
    assert [g["metadata"]["name"] for g in _pod_groups(kube)] == ["mnist-trainer"]
    workloads = kube.request("GET", f"{GROUP}/namespaces/{NAMESPACE}/workloads").json()["items"]
    assert not [w for w in workloads if w["spec"]["controllerRef"]["name"] == "mnist-node-0"]
    assert _group_condition(kube, "mnist-trainer", "True")["reason"] == "Scheduled"
    assert _queue_of(server, application_id(NAMESPACE, "mnist-trainer")) == "root.train"
    _complete(kube, "mnist-node-0")


def test_a_gang_no_rack_holds_spreads_over_racks_without_the_constraint(kube: KubeCluster, server: Server) -> None:
    _create_job(kube, _two_cpu(job_body("spread", WIDE, _gang(WIDE, topology=False))))
    pods = _all_placed(kube, "spread", WIDE)
    seen = [(p["metadata"]["name"], p["spec"]["nodeName"], p["status"].get("phase")) for p in pods]
    assert len({p["spec"]["nodeName"] for p in pods}) == WIDE, seen
    assert len({_rack_of(p["spec"]["nodeName"]) for p in pods}) >= 2, seen  # no rack has 10 nodes
    (name,) = {p["spec"]["schedulingGroup"]["podGroupName"] for p in pods}
    assert _group_condition(kube, name, "True")["reason"] == "Scheduled"
    _complete(kube, "spread")


def test_with_the_constraint_it_waits_naming_the_rack_level(kube: KubeCluster, server: Server) -> None:
    _create_job(kube, _two_cpu(job_body("packed", WIDE, _gang(WIDE))))
    pods = kube.wait_for("the Job's pods", lambda: (p if len(p := _job_pods(kube, "packed")) == WIDE else None),
                         timeout=30)
    (name,) = {p["spec"]["schedulingGroup"]["podGroupName"] for p in pods}
    condition = _group_condition(kube, name, "False", timeout=60, containing=f"no {RACK} domain has room")
    assert condition["reason"] == "Unschedulable"
    assert f"{RACK}=r-8" in condition["message"], condition["message"]  # the most free rack named
    assert not [p for p in _job_pods(kube, "packed") if p["spec"].get("nodeName")]  # none placed


def test_the_members_node_selector_chooses_among_the_racks_with_room(kube: KubeCluster, server: Server) -> None:
    """A gang of 2 asking for a rack: r-2 is the tightest with room, but its pods select pool
    "wide", which only r-4's nodes are: it runs whole in r-4 (a rack chosen by free room alone
    would hold it in r-2, where its pods can never run)."""
    _create_job(kube, _two_cpu(job_body("selective", 2, _gang(2)), nodeSelector={"pool": "wide"}))
    pods = _all_placed(kube, "selective", 2)
    assert {_rack_of(p["spec"]["nodeName"]) for p in pods} == {"r-4"}
    _complete(kube, "selective")
