"""What the Kubernetes shim reads from pods and nodes (pyscheduler_k8s.pods, .nodes, .predicates):
YuniKorn's shim conventions (shared/spec/kubernetes.md) and kube-scheduler's filters, on the
objects as the API server serves them. Quantities themselves: tests/test_common_quantity.py."""

from __future__ import annotations

from typing import Any

import pytest

from pyscheduler.si import messages as si
from pyscheduler_k8s.nodes import node_view
from pyscheduler_k8s.pods import PodError, app_id_of, pod_request, pod_view, queue_of, user_of
from pyscheduler_k8s.predicates import check_node, host_ports


def _pod(**spec: Any) -> dict[str, Any]:
    meta = spec.pop("metadata", {"name": "p", "namespace": "ns", "uid": "u1"})
    return {"metadata": meta, "spec": {"schedulerName": "pyscheduler", **spec}, "status": {"phase": "Pending"}}


def _container(requests: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    return {"name": "c", "image": "i", "resources": {"requests": requests} if requests else {}, **extra}


def test_a_pod_asks_for_its_containers_its_largest_init_container_and_its_overhead() -> None:
    pod = _pod(containers=[_container({"cpu": "500m", "memory": "1Gi"}), _container({"cpu": "250m",
                                                                                     "nvidia.com/gpu": "1"})],
               initContainers=[_container({"cpu": "2", "memory": "64Mi"}), _container({"memory": "512Mi"})],
               overhead={"cpu": "10m", "memory": "1Mi"})
    # cpu: max(750, 2000) + 10; memory: max(1Gi, 512Mi) + 1Mi; one pod.
    assert pod_request(pod) == {"vcore": 2010, "memory": (1 << 30) + (1 << 20), "nvidia.com/gpu": 1, "pods": 1}
    assert pod_request(_pod(containers=[_container()])) == {"pods": 1}


def test_a_pod_with_a_broken_quantity_is_held_with_the_reason() -> None:
    pod = _pod(containers=[_container({"cpu": "lots"})])
    with pytest.raises(PodError, match="ns/p: quantity 'lots'"):
        pod_request(pod)
    view = pod_view(pod)
    assert view.problem.startswith("pod ns/p: quantity 'lots'") and view.request == {}


def test_application_queue_and_user_come_from_yunikorns_labels_and_annotations() -> None:
    meta = {"name": "p", "namespace": "team", "uid": "u",
            "labels": {"spark-app-selector": "spark-1", "queue": "root.spark"},
            "annotations": {"yunikorn.apache.org/app-id": "ignored", "yunikorn.apache.org/queue": "root.ignored",
                            "yunikorn.apache.org/user.info": '{"user": "alice", "groups": ["dev", 3]}'}}
    pod = _pod(metadata=meta)
    assert (app_id_of(pod), queue_of(pod), user_of(pod)) == ("spark-1", "root.spark", ("alice", ("dev",)))
    meta["labels"] = {"yunikorn.apache.org/app-id": "first", "applicationId": "third"}
    assert app_id_of(pod) == "first" and queue_of(pod) == "root.ignored"
    meta["labels"], meta["annotations"] = {}, {"yunikorn.apache.org/user.info": "not json"}
    assert (app_id_of(pod), queue_of(pod), user_of(pod)) == ("yunikorn-team-autogen", "", ("nobody", ()))


def test_a_pod_view_carries_priority_creation_time_and_node() -> None:
    pod = _pod(metadata={"name": "p", "namespace": "ns", "uid": "u", "creationTimestamp": "2026-11-26T01:02:03Z"},
               containers=[_container({"cpu": "1"})], priority=100, nodeName="n1")
    view = pod_view(pod)
    assert (view.priority, view.created, view.node_name, view.key) == (100, 1795654923, "n1", "ns/p")


def _node(name: str = "n1", **extra: Any) -> dict[str, Any]:
    labels = extra.pop("labels", {"node.kubernetes.io/instance-type": "m5.large", "zone": "a"})
    return {"metadata": {"name": name, "labels": labels},
            "spec": extra.pop("spec", {}),
            "status": {"allocatable": extra.pop("allocatable", {"cpu": "3900m", "memory": "15Gi", "pods": "110",
                                                                  "example.com/fpga": "2"})}}


def test_a_node_is_its_allocatable_resources_and_labels() -> None:
    view = node_view(_node())
    assert view.capacity == {"vcore": 3900, "memory": 15 << 30, "pods": 110, "example.com/fpga": 2}
    assert view.attributes[si.HOST_NAME] == "n1" and view.attributes[si.RACK_NAME] == "/rack-default"
    assert view.attributes[si.INSTANCE_TYPE] == "m5.large" and view.attributes["zone"] == "a"
    assert view.schedulable
    cordoned = node_view(_node(spec={"unschedulable": True}, allocatable={"cpu": "x", "memory": "1Gi"}))
    assert not cordoned.schedulable and cordoned.capacity == {"memory": 1 << 30}  # the broken cpu is left out


def test_node_selector_affinity_taints_and_host_ports() -> None:
    node = node_view(_node(labels={"zone": "a", "disk": "ssd", "cores": "16"},
                           spec={"taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"},
                                            {"key": "soft", "effect": "PreferNoSchedule"}]}))
    tolerate = [{"key": "gpu", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}]
    assert "taint gpu=yes:NoSchedule" in (check_node(_pod(), node) or "")
    assert check_node(_pod(tolerations=tolerate), node) is None
    assert check_node(_pod(tolerations=[{"operator": "Exists"}]), node) is None
    assert check_node(_pod(tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoExecute"}]), node)
    assert "node selector (zone=b)" in (check_node(_pod(tolerations=tolerate, nodeSelector={"zone": "b"}), node) or "")

    def affinity(*terms: dict[str, Any]) -> dict[str, Any]:
        return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}

    fits = {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd", "nvme"]},
                                 {"key": "cores", "operator": "Gt", "values": ["8"]},
                                 {"key": "gpu", "operator": "DoesNotExist"}]}
    misses = {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}
    by_name = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
    assert check_node(_pod(tolerations=tolerate, affinity=affinity(fits)), node) is None
    assert check_node(_pod(tolerations=tolerate, affinity=affinity(misses, by_name)), node) is None
    assert "required node affinity" in (check_node(_pod(tolerations=tolerate, affinity=affinity(misses)), node) or "")
    assert check_node(_pod(tolerations=tolerate, affinity=affinity({})), node)  # an empty term matches nothing

    web = _pod(tolerations=tolerate, containers=[_container(ports=[{"containerPort": 80, "hostPort": 8080}])])
    assert host_ports(web) == {("TCP", "", 8080)}
    assert "host port TCP/8080" in (check_node(web, node, [("TCP", "10.0.0.1", 8080)]) or "")
    assert check_node(web, node, [("UDP", "", 8080), ("TCP", "", 8081)]) is None
