"""What the Kubernetes shim reads from pods for gangs, preemption and role history
(pyscheduler_k8s.gang, .roles, .pods): YuniKorn's annotations as its shim reads them, hostile
annotations refused with a reason, placeholder pods as YuniKorn makes them, roles and history
keys from labels and owners. No cluster needed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pyscheduler_k8s.gang import HARD, MAX_MEMBERS, SOFT, GangError, gang_of, placeholder_ask, placeholder_pods
from pyscheduler_k8s.pods import pod_request, pod_view
from pyscheduler_k8s.roles import history_key_of, role_of

GROUPS = [{"name": "driver", "minMember": 1, "minResource": {"cpu": "1", "memory": "1Gi"}},
          {"name": "executor", "minMember": 3, "minResource": {"cpu": "500m", "memory": "2Gi", "nvidia.com/gpu": 1},
           "nodeSelector": {"pool": "gpu"}, "tolerations": [{"key": "gpu", "operator": "Exists"}],
           "labels": {"team": "ml"}, "annotations": {"note": "x"}}]


def _pod(annotations: dict[str, str] | None = None, labels: dict[str, str] | None = None,
         owners: list[dict[str, Any]] | None = None, name: str = "p", **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": "0123456789abcdef",
                            "annotations": annotations or {}, "labels": labels or {}}
    if owners is not None:
        meta["ownerReferences"] = owners
    return {"metadata": meta, "spec": {"schedulerName": "pyscheduler", "containers": [], **spec}}


def _gang_pod(groups: Any = GROUPS, parameters: str = "") -> dict[str, Any]:
    annotations = {"yunikorn.apache.org/task-groups": groups if isinstance(groups, str) else json.dumps(groups)}
    if parameters:
        annotations["yunikorn.apache.org/schedulingPolicyParameters"] = parameters
    return _pod(annotations)


def test_task_groups_and_parameters_read_as_yunikorn_s_shim_reads_them() -> None:
    gang = gang_of(_gang_pod(parameters="placeholderTimeoutInSeconds=30 gangSchedulingStyle=Hard"))
    assert gang is not None and gang.timeout == 30 and gang.style == HARD
    assert [(g.name, g.min_member) for g in gang.groups] == [("driver", 1), ("executor", 3)]
    assert gang.groups[1].min_resource == {"vcore": 500, "memory": 2 << 30, "nvidia.com/gpu": 1}
    # Each placeholder asks for its group's resources and one pod: the total is the gang's ask.
    assert placeholder_ask(gang) == {"vcore": 2500, "memory": (1 << 30) + 3 * (2 << 30), "nvidia.com/gpu": 3, "pods": 4}
    assert gang_of(_pod()) is None
    assert gang_of(_gang_pod(parameters="gangSchedulingStyle=whatever")).style == SOFT  # type: ignore[union-attr]
    assert gang_of(_gang_pod()).timeout == 0  # type: ignore[union-attr]


def test_placeholder_pods_are_yunikorn_s_owned_by_the_first_pod_and_ask_what_the_gang_asks() -> None:
    gang = gang_of(_gang_pod())
    assert gang is not None
    owner = _pod(name="Spark_Driver")
    pods = placeholder_pods(gang, "Spark.App_1", "root.gangs", owner)
    assert len(pods) == 4 and len({p["metadata"]["name"] for p in pods}) == 4
    executor = pods[1]
    meta, spec = executor["metadata"], executor["spec"]
    assert meta["name"] == "tg-spark-app-1-executor-01234567-0"  # a valid object name, deterministic
    assert meta["labels"] == {"team": "ml", "applicationId": "Spark.App_1", "queue": "root.gangs", "placeholder": "true"}
    assert meta["annotations"]["yunikorn.apache.org/placeholder"] == "true"
    assert meta["annotations"]["yunikorn.apache.org/task-group-name"] == "executor" and meta["annotations"]["note"] == "x"
    assert meta["ownerReferences"] == [{"apiVersion": "v1", "kind": "Pod", "name": "Spark_Driver",
                                        "uid": "0123456789abcdef", "controller": False, "blockOwnerDeletion": False}]
    assert spec["nodeSelector"] == {"pool": "gpu"} and spec["restartPolicy"] == "Never"
    assert spec["terminationGracePeriodSeconds"] == 0
    assert spec["containers"][0]["image"] == "registry.k8s.io/pause:3.7" and spec["containers"][0]["name"] == "pause"
    view = pod_view({**executor, "metadata": {**meta, "uid": "u"}})
    assert view.placeholder and view.task_group == "executor" and view.app_id == "Spark.App_1"
    total: dict[str, int] = {}
    for pod in pods:
        for name, value in pod_request(pod).items():
            total[name] = total.get(name, 0) + value
    assert total == placeholder_ask(gang)


@pytest.mark.parametrize(("groups", "parameters", "reason"), [
    ("not json", "", "is not JSON"),
    ('{"name": "a"}', "", "must be a list"),
    ([{"minMember": 1}], "", "needs a name"),
    ([{"name": "a", "minMember": -1}], "", "minMember must be an integer"),
    ([{"name": "a", "minMember": MAX_MEMBERS + 1}], "", "minMember must be an integer"),
    ([{"name": "a", "minMember": True}], "", "minMember must be an integer"),
    ([{"name": "a", "minMember": 1.5}], "", "minMember must be an integer"),
    ([{"name": "a", "minMember": MAX_MEMBERS}, {"name": "b", "minMember": 1}], "", "more than"),
    ([{"name": "a", "minMember": 1}, {"name": "a", "minMember": 1}], "", "unique"),
    ([{"name": "a", "minMember": 1, "minResource": {"cpu": "lots"}}], "", "minResource"),
    ([{"name": "a", "minMember": 1, "minResource": {"memory": "99999999Ei"}}], "", "minResource"),
    ([{"name": "a", "minMember": 1, "minResource": ["cpu"]}], "", "resource list"),
    ([{"name": "a", "minMember": 1, "nodeSelector": {"k": 1}}], "", "map of strings"),
    ([{"name": "a", "minMember": 1, "tolerations": {"key": "x"}}], "", "tolerations must be a list"),
    (GROUPS, "placeholderTimeoutInSeconds=-5", "whole number"),
    (GROUPS, "placeholderTimeoutInSeconds=1e9", "whole number"),
    (GROUPS, "placeholderTimeoutInSeconds=99999999999999999999999", "whole number"),
])
def test_hostile_task_groups_are_refused_with_the_reason(groups: Any, parameters: str, reason: str) -> None:
    with pytest.raises(GangError, match=reason):
        gang_of(_gang_pod(groups, parameters))


def test_preemption_flags_from_the_pod() -> None:
    assert pod_view(_pod()).allow_preemption is None and pod_view(_pod()).may_preempt
    assert pod_view(_pod({"yunikorn.apache.org/allow-preemption": "False"})).allow_preemption is False
    assert pod_view(_pod({"yunikorn.apache.org/allow-preemption": "true"})).allow_preemption is True
    assert not pod_view(_pod(preemptionPolicy="Never")).may_preempt
    assert pod_view(_pod(priorityClassName="gold")).priority_class == "gold"


def _owner(kind: str, name: str) -> list[dict[str, Any]]:
    return [{"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": "x", "controller": True}]


@pytest.mark.parametrize(("pod", "role", "key"), [
    (_pod(), "", ""),
    (_pod(labels={"pyscheduler.io/role": "worker", "pyscheduler.io/history-key": "svc-a"}), "worker", "svc-a"),
    (_pod(labels={"app.kubernetes.io/component": "cache"}), "cache", ""),
    (_pod(owners=_owner("StatefulSet", "db"), name="db-3"), "db#3", "statefulset/ns/db"),
    (_pod(owners=_owner("StatefulSet", "db"), name="db-x", labels={"apps.kubernetes.io/pod-index": "7"}),
     "db#7", "statefulset/ns/db"),
    (_pod(owners=_owner("StatefulSet", "db"), name="db-3", labels={"app.kubernetes.io/component": "primary"}),
     "primary#3", "statefulset/ns/db"),
    (_pod(owners=_owner("ReplicaSet", "web-5d8f7c9b4"), labels={"pod-template-hash": "5d8f7c9b4"}),
     "web", "deployment/ns/web"),
    (_pod(owners=_owner("ReplicaSet", "plain-rs")), "plain-rs", ""),
    (_pod(owners=_owner("Job", "nightly")), "nightly", "job/ns/nightly"),
    (_pod(owners=_owner("Job", "train"), labels={"batch.kubernetes.io/job-completion-index": "3"}),
     "train#3", "job/ns/train"),
    (_pod(owners=_owner("Job", "train"), labels={"batch.kubernetes.io/job-completion-index": "x"}),
     "train", "job/ns/train"),
    (_pod(owners=[{"kind": "StatefulSet"}, "junk"]), "", ""),  # type: ignore[list-item]
])
def test_roles_and_history_keys_from_labels_and_owners(pod: dict[str, Any], role: str, key: str) -> None:
    assert (role_of(pod), history_key_of(pod)) == (role, key)
    assert (pod_view({**pod, "metadata": {**pod["metadata"], "uid": "u"}}).role, history_key_of(pod)) == (role, key)
