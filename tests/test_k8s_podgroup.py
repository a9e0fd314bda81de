"""Kubernetes' PodGroups mapped to the shim's gangs, without an API server (issue 34): the pure
mapping (:mod:`pyscheduler_k8s.podgroup`: PodGroup objects and member pods to an application id,
a gang spec and tags), the PodGroup cache (pods waiting for their group, the condition written
once per change and never after True), and the pod handlers with a fake core (a member of a gang
group is a gang application whatever its label says; a basic group is one application; a pod
whose group is missing waits, gated, until the group appears)."""

from __future__ import annotations

import re
import threading
from typing import Any

import orjson
import pytest
from k8s_shim_fakes import FakeCore, FakeRecorder, FakeWrites

from pyscheduler.si.vocabulary import APP_TAG_TOPOLOGY_REQUIRED
from pyscheduler_k8s.cache import ShimCache
from pyscheduler_k8s.cache.podgroups import PodGroupCache
from pyscheduler_k8s.cache.task_state import TaskState
from pyscheduler_k8s.gang import GangError, placeholder_ask, placeholder_pods
from pyscheduler_k8s.kubeapi import KubeApiError
from pyscheduler_k8s.pod_events import PodEvents
from pyscheduler_k8s.podgroup import (MAX_APP_ID, PodGroupSpec, application_id, condition_patch, gang_spec,
                                     group_name_of, member_view, podgroup_of, status_path)
from pyscheduler_k8s.podgroup_writes import PodGroupStatus
from pyscheduler_k8s.pods import pod_view

RACK = "example.com/rack"


def _group(name: str = "train", *, gang: int | None = 4, key: str = "", scheduled: bool = False,
           namespace: str = "ml") -> dict[str, Any]:
    policy: dict[str, Any] = {"gang": {"minCount": gang}} if gang is not None else {"basic": {}}
    spec: dict[str, Any] = {"schedulingPolicy": policy, "disruptionMode": {"single": {}}, "priority": 0}
    if key:
        spec["schedulingConstraints"] = {"topology": [{"key": key}]}
    status = {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "True", "reason": "Scheduled"}]} \
        if scheduled else {}
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace, "generation": 3, "uid": f"uid-{name}"},
            "spec": spec, "status": status}


def _pod(name: str, group: str | None = "train", *, cpu: str = "2", memory: str = "1Gi", app: str = "my-app",
         namespace: str = "ml", gates: bool = False, **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "pyscheduler", "containers": [
        {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu, "memory": memory}}}], **extra}
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    if gates:
        spec["schedulingGates"] = [{"name": "example.com/wait"}]
    return {"metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}", "labels": {"applicationId": app},
                         "annotations": {}},
            "spec": spec, "status": {"phase": "Pending"}}


# -- the pure mapping ----------------------------------------------------------------------------------


def test_a_gang_podgroup_is_read_with_its_minimum_topology_key_and_generation() -> None:
    spec = podgroup_of(_group(gang=4, key=RACK))
    assert spec == PodGroupSpec("ml", "train", gang=True, min_count=4, topology_key=RACK, generation=3)
    assert spec.app_id == "podgroup-ml-train" == application_id("ml", "train")
    assert status_path("ml", "train") == "/apis/scheduling.k8s.io/v1beta1/namespaces/ml/podgroups/train/status"


#: A PodGroup name as v1.37.2's Job controller makes it for Job ``llama-finetune-workers``:
#: ``<job>-<hash>-<job>-pgt-0-<hash>`` (``computePodGroupName`` in job_scheduling_manager.go).
JOB_GROUP = "llama-finetune-workers-7858d98ffc-llama-finetune-workers-pgt-0-7bb65865bf"
#: Kubernetes' label values (``IsValidLabelValue``): at most 63 characters of this shape.
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def test_an_application_id_past_a_label_values_length_is_cut_and_ends_in_a_hash() -> None:
    """The id is the placeholders' ``applicationId`` label: the Job controller's PodGroup names
    would make one of 88 characters, which the API server refuses on every placeholder."""
    long_id = application_id("train", JOB_GROUP)
    assert len(long_id) == MAX_APP_ID and LABEL_VALUE.match(long_id)
    assert long_id.startswith("podgroup-train-llama-finetune-workers-7858d98ffc-")
    assert long_id == application_id("train", JOB_GROUP)  # the same after a restart
    assert long_id != application_id("other", JOB_GROUP) != application_id("train", JOB_GROUP + "x")
    # Two names that share the start differ by the hash.
    assert application_id("train", JOB_GROUP[:-1] + "a") != application_id("train", JOB_GROUP[:-1] + "b")
    # The cut never ends in a separator before the hash; a short id is kept whole.
    dotted = application_id("ns", "a" * 40 + "." + "b" * 60)
    assert LABEL_VALUE.match(dotted) and ".-" not in dotted and len(dotted) <= MAX_APP_ID
    fits = "x" * (MAX_APP_ID - len("podgroup-ns-"))
    assert application_id("ns", fits) == f"podgroup-ns-{fits}"
    group = podgroup_of(_group(JOB_GROUP, gang=8, namespace="train"))
    member = _pod("w-0", JOB_GROUP, namespace="train")
    view = member_view(pod_view(member), JOB_GROUP, group)
    assert view.app_id == long_id
    for placeholder in placeholder_pods(gang_spec(group, member, view), view.app_id, "", member):
        assert all(LABEL_VALUE.match(value) for value in placeholder["metadata"]["labels"].values())
        assert pod_view(placeholder).app_id == long_id  # read back into the same application


def test_a_basic_podgroup_is_no_gang_and_a_true_condition_is_read_as_scheduled() -> None:
    basic = podgroup_of(_group(gang=None))
    assert not basic.gang and basic.min_count == 0 and basic.topology_key == ""
    assert podgroup_of(_group(scheduled=True)).scheduled
    assert not podgroup_of(_group()).scheduled


def test_the_pod_names_its_group_in_its_scheduling_group() -> None:
    assert group_name_of(_pod("a", "workers")) == "workers"
    assert group_name_of(_pod("a", None)) == ""
    assert group_name_of({"spec": {"schedulingGroup": {}}}) == ""


def test_a_member_of_a_gang_group_is_in_the_groups_application_whatever_its_label() -> None:
    view = member_view(pod_view(_pod("a")), "train", podgroup_of(_group(key=RACK)))
    assert view.app_id == "podgroup-ml-train"
    assert view.task_group == "train"
    assert dict(view.app_tags) == {APP_TAG_TOPOLOGY_REQUIRED: RACK}


def test_a_member_of_a_basic_group_has_the_application_but_no_task_group() -> None:
    view = member_view(pod_view(_pod("a")), "train", podgroup_of(_group(gang=None)))
    assert (view.app_id, view.task_group, view.app_tags) == ("podgroup-ml-train", "", ())


def test_a_member_of_a_missing_group_has_its_application_id_already() -> None:
    view = member_view(pod_view(_pod("a")), "train", None)
    assert (view.app_id, view.task_group) == ("podgroup-ml-train", "")


def test_the_gang_is_one_task_group_of_min_count_sized_by_the_member() -> None:
    pod = _pod("a", cpu="1500m", memory="1Gi", nodeSelector={"pool": "gpu"},
               tolerations=[{"key": "gpu", "operator": "Exists"}])
    group = podgroup_of(_group(gang=4))
    gang = gang_spec(group, pod, pod_view(pod))
    assert len(gang.groups) == 1
    task_group = gang.groups[0]
    assert (task_group.name, task_group.min_member) == ("train", 4)
    assert task_group.min_resource == {"vcore": 1500, "memory": 1 << 30}
    assert task_group.min_resource_k8s == {"cpu": "1500m", "memory": str(1 << 30)}
    assert task_group.node_selector == {"pool": "gpu"}
    assert task_group.tolerations == ({"key": "gpu", "operator": "Exists"},)
    assert (gang.style, gang.timeout) == ("Soft", 0)
    assert orjson.loads(gang.definition) == [{"name": "train", "minMember": 4,
                                              "minResource": {"cpu": "1500m", "memory": str(1 << 30)}}]
    # The core's placeholder ask: 4 x (the member's request + one pod).
    assert placeholder_ask(gang) == {"vcore": 6000, "memory": 4 << 30, "pods": 4}
    placeholders = placeholder_pods(gang, "podgroup-ml-train", "root.ml", pod)
    assert len(placeholders) == 4
    first = placeholders[0]
    assert first["metadata"]["labels"]["applicationId"] == "podgroup-ml-train"
    assert first["metadata"]["annotations"]["yunikorn.apache.org/task-group-name"] == "train"
    assert first["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1500m", "memory": str(1 << 30)}
    assert first["spec"]["nodeSelector"] == {"pool": "gpu"}


def test_the_members_scheduling_policy_parameters_apply_and_a_bad_one_is_an_error() -> None:
    pod = _pod("a")
    pod["metadata"]["annotations"]["yunikorn.apache.org/schedulingPolicyParameters"] = \
        "placeholderTimeoutInSeconds=30 gangSchedulingStyle=Hard"
    gang = gang_spec(podgroup_of(_group()), pod, pod_view(pod))
    assert (gang.timeout, gang.style) == (30, "Hard")
    pod["metadata"]["annotations"]["yunikorn.apache.org/schedulingPolicyParameters"] = "placeholderTimeoutInSeconds=x"
    with pytest.raises(GangError):
        gang_spec(podgroup_of(_group()), pod, pod_view(pod))


def test_the_condition_patch_is_kube_schedulers() -> None:
    group = podgroup_of(_group())
    patch = condition_patch(group, False, "no node fits", "2026-11-27T00:00:00Z")
    assert patch == {"status": {"conditions": [{
        "type": "PodGroupInitiallyScheduled", "status": "False", "reason": "Unschedulable", "message": "no node fits",
        "lastTransitionTime": "2026-11-27T00:00:00Z", "observedGeneration": 3}]}}
    assert condition_patch(group, True, "placed", "t")["status"]["conditions"][0]["reason"] == "Scheduled"
    # kube-apiserver v1.37.2 gives PodGroups no generation: then none is observed.
    without = podgroup_of({**_group(), "metadata": {"name": "train", "namespace": "ml"}})
    assert "observedGeneration" not in condition_patch(without, False, "m", "t")["status"]["conditions"][0]


# -- the cache ------------------------------------------------------------------------------------------


def test_pods_waiting_for_a_group_are_handed_back_when_it_appears() -> None:
    cache = PodGroupCache(threading.Lock())
    assert cache.set_groups([]) == []
    assert cache.followed
    assert cache.lookup_or_wait("p1", "ml", "train") is None
    assert cache.lookup_or_wait("p2", "ml", "train") is None
    cache.forget("p2")  # deleted while waiting
    assert cache.group_event("ADDED", _group("other")) == []
    assert cache.group_event("ADDED", _group()) == ["p1"]
    assert cache.lookup_or_wait("p3", "ml", "train") == podgroup_of(_group())
    assert cache.group_event("MODIFIED", _group()) == []  # nobody waits any more


def test_pods_waiting_are_handed_back_when_groups_are_no_longer_followed() -> None:
    cache = PodGroupCache(threading.Lock())
    cache.set_groups([])
    cache.lookup_or_wait("p1", "ml", "train")
    assert cache.set_groups(None) == ["p1"]
    assert not cache.followed


def test_a_groups_condition_is_written_once_per_change_and_never_after_true() -> None:
    cache = PodGroupCache(threading.Lock())
    cache.set_groups([_group()])
    assert cache.condition("podgroup-ml-train", False, "waits", "t0") is None  # not a gang added yet
    group = cache.lookup("ml", "train")
    assert group is not None
    cache.gang_added("podgroup-ml-train", group)
    first = cache.condition("podgroup-ml-train", False, "waits", "t0")
    assert first is not None and (first.scheduled, first.message, first.since) == (False, "waits", "t0")
    assert cache.condition("podgroup-ml-train", False, "waits", "t1") is None
    second = cache.condition("podgroup-ml-train", False, "still waits", "t2")
    assert second is not None and second.since == "t0"  # the same status: its transition time stays
    done = cache.condition("podgroup-ml-train", True, "placed", "t3")
    assert done is not None and done.scheduled and done.since == "t3"
    assert cache.condition("podgroup-ml-train", False, "waits again", "t4") is None
    assert cache.written("ml", "train") == (True, "placed")


def test_a_failed_write_is_written_again_and_a_scheduled_group_is_never_written() -> None:
    cache = PodGroupCache(threading.Lock())
    cache.set_groups([_group(), _group("done", scheduled=True)])
    for name in ("train", "done"):
        group = cache.lookup("ml", name)
        assert group is not None
        cache.gang_added(group.app_id, group)
    write = cache.condition("podgroup-ml-train", False, "waits", "t0")
    assert write is not None
    cache.condition_failed(write)
    assert cache.condition("podgroup-ml-train", False, "waits", "t1") is not None
    assert cache.condition("podgroup-ml-done", False, "waits", "t0") is None


# -- the pod handlers, with a fake core --------------------------------------------------------------------


def _handlers(groups: list[dict[str, Any]] | None) -> tuple[PodEvents, ShimCache, FakeCore, FakeRecorder, FakeWrites]:
    cache = ShimCache()
    core, recorder, writes = FakeCore(), FakeRecorder(), FakeWrites()
    cache.podgroups.set_groups(groups)
    events = PodEvents(None, cache.tasks, core, recorder, writes, ("pyscheduler",),  # type: ignore[arg-type]
                       groups=cache.podgroups)
    return events, cache, core, recorder, writes


def test_members_of_a_gang_group_make_one_gang_application_with_placeholders() -> None:
    events, cache, core, _, writes = _handlers([_group(key=RACK)])
    for n in range(4):
        events.handle("ADDED", _pod(f"w-{n}", app=f"label-{n}"))
    assert len(core.added) == 1
    view, gang = core.added[0]
    assert view.app_id == "podgroup-ml-train" and dict(view.app_tags) == {APP_TAG_TOPOLOGY_REQUIRED: RACK}
    assert gang is not None and gang.groups[0].min_member == 4 and gang.groups[0].name == "train"
    assert writes.submitted == ["create_placeholders"]
    assert core.asks == []  # the members wait for their gang
    assert {cache.tasks.pod_state(f"uid-w-{n}") for n in range(4)} == {TaskState.WAITING}
    assert cache.tasks.applications() == {"podgroup-ml-train": {f"uid-w-{n}" for n in range(4)}}


def test_a_basic_group_is_one_application_without_a_gang() -> None:
    events, cache, core, _, writes = _handlers([_group(gang=None)])
    events.handle("ADDED", _pod("a", app="x"))
    events.handle("ADDED", _pod("b", app="y"))
    assert [(view.app_id, gang) for view, gang in core.added] == [("podgroup-ml-train", None)]
    assert core.asks == ["uid-a", "uid-b"]
    assert writes.submitted == []


def test_a_pod_whose_group_is_missing_waits_gated_until_the_group_appears() -> None:
    events, cache, core, recorder, _ = _handlers([])
    events.handle("ADDED", _pod("a"))
    assert cache.tasks.pod_state("uid-a") is TaskState.GATED
    assert recorder.pending["uid-a"] == ("waiting for PodGroup ml/train to appear", "SchedulingGated")
    assert core.apps == [] and core.asks == []
    events.handle("MODIFIED", _pod("a"))  # seen again: still waiting
    assert cache.tasks.pod_state("uid-a") is TaskState.GATED
    for uid in cache.podgroups.group_event("ADDED", _group(gang=1)):
        events.rehandle(uid)
    assert core.apps == ["podgroup-ml-train"]
    assert cache.tasks.pod_state("uid-a") is TaskState.WAITING  # a gang of one: its placeholder first


def test_a_gated_member_whose_gates_go_while_its_group_is_missing_says_so() -> None:
    events, cache, _, recorder, _ = _handlers([])
    events.handle("ADDED", _pod("a", gates=True))
    assert recorder.pending["uid-a"][0] == "Scheduling is blocked due to non-empty scheduling gates"
    events.handle("MODIFIED", _pod("a"))
    assert recorder.pending["uid-a"] == ("waiting for PodGroup ml/train to appear", "SchedulingGated")
    assert cache.tasks.pod_state("uid-a") is TaskState.GATED


def test_without_podgroups_followed_a_member_is_an_ordinary_pod() -> None:
    events, cache, core, _, _ = _handlers(None)
    events.handle("ADDED", _pod("a", app="x"))
    assert core.apps == ["x"]
    assert core.asks == ["uid-a"]


def test_a_members_application_stays_when_its_label_changes() -> None:
    events, cache, core, _, _ = _handlers([_group(gang=None)])
    events.handle("ADDED", _pod("a", app="x"))
    events.handle("MODIFIED", _pod("a", app="y"))
    assert cache.tasks.applications() == {"podgroup-ml-train": {"uid-a"}}


# -- the status writer, with a fake API ---------------------------------------------------------------------


class _Api:
    def __init__(self, failures: int = 0) -> None:
        self.calls: list[tuple[str, str, Any, str]] = []
        self.failures = failures
        self.done = threading.Event()

    def request(self, method: str, path: str, body: Any = None, *, content_type: str = "") -> None:
        self.calls.append((method, path, body, content_type))
        if self.failures:
            self.failures -= 1
            raise KubeApiError(500, "InternalError", "try again")
        self.done.set()


def _status(api: _Api) -> tuple[PodGroupStatus, PodGroupCache]:
    cache = PodGroupCache(threading.Lock())
    cache.set_groups([_group()])
    group = cache.lookup("ml", "train")
    assert group is not None
    cache.gang_added(group.app_id, group)
    status = PodGroupStatus(api, cache, clock=lambda: 0.0)  # type: ignore[arg-type]
    status.start()
    return status, cache


def test_the_status_writer_patches_the_groups_status_subresource() -> None:
    api = _Api()
    status, cache = _status(api)
    try:
        status.unschedulable("podgroup-ml-other", "not a group's gang")  # nothing to write
        status.scheduled("podgroup-ml-train")
        assert api.done.wait(5)
    finally:
        status.stop()
    assert len(api.calls) == 1
    method, path, body, content_type = api.calls[0]
    assert (method, path, content_type) == ("PATCH", "/apis/scheduling.k8s.io/v1beta1/namespaces/ml/podgroups/train/status",
                                            "application/strategic-merge-patch+json")
    condition = body["status"]["conditions"][0]
    assert (condition["status"], condition["reason"], condition["lastTransitionTime"]) == \
        ("True", "Scheduled", "1970-01-01T00:00:00Z")
    assert cache.written("ml", "train") == (True, "the gang's minimum count of members is placed")


def test_a_failing_status_write_is_tried_again() -> None:
    api = _Api(failures=1)
    status, cache = _status(api)
    try:
        status.unschedulable("podgroup-ml-train", "no node fits the pod")
        assert api.done.wait(5)
    finally:
        status.stop()
    assert len(api.calls) == 2
    assert cache.written("ml", "train") == (False, "no node fits the pod")
