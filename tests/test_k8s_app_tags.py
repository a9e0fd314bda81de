"""The pod annotations that become the core's application tags (``pods.APPLICATION_TAG_ANNOTATIONS``):
a hub's member-cluster choice and the topology requests, slices included; nothing else."""

from __future__ import annotations

from pyscheduler_k8s.pods import APPLICATION_TAG_ANNOTATIONS, pod_view


def test_the_topology_and_cluster_annotations_become_application_tags_and_nothing_else() -> None:
    annotations = {
        "pyscheduler.io/topology-required": "example.com/block",
        "pyscheduler.io/topology-slice-required": "example.com/rack",
        "pyscheduler.io/topology-slice-size": "4",
        "pyscheduler.io/clusters": "east",
        "yunikorn.apache.org/task-group-name": "worker",  # read elsewhere, not a tag
        "unrelated": "x",
    }
    view = pod_view({"metadata": {"name": "p", "namespace": "ns", "uid": "u", "annotations": annotations},
                     "spec": {"schedulerName": "pyscheduler"}})
    assert dict(view.app_tags) == {key: annotations[key] for key in (
        "pyscheduler.io/topology-required", "pyscheduler.io/topology-slice-required",
        "pyscheduler.io/topology-slice-size", "pyscheduler.io/clusters")}
    assert "unrelated" not in APPLICATION_TAG_ANNOTATIONS


def _gang_pod(groups: list[dict[str, object]]) -> dict[str, object]:
    import json
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u", "annotations": {
        "yunikorn.apache.org/task-groups": json.dumps(groups), "yunikorn.apache.org/task-group-name": "a"}},
        "spec": {"schedulerName": "pyscheduler"}}


def test_task_group_topology_fields_become_the_gangs_application_tags() -> None:
    import pytest

    from pyscheduler_k8s.gang import GangError, gang_of

    group = {"name": "a", "minMember": 2, "minResource": {"cpu": "1"}, "topologyRequired": "example.com/block",
             "topologySliceRequired": "example.com/rack", "topologySliceSize": 2}
    gang = gang_of(_gang_pod([group, {"name": "b", "minMember": 1, "minResource": {"cpu": "1"}}]))
    assert gang is not None and gang.topology == {
        "pyscheduler.io/topology-required": "example.com/block",
        "pyscheduler.io/topology-slice-required": "example.com/rack", "pyscheduler.io/topology-slice-size": "2"}
    with pytest.raises(GangError, match="disagree"):
        gang_of(_gang_pod([group, {**group, "name": "b", "topologyRequired": "example.com/rack"}]))
    with pytest.raises(GangError, match="topologyRequired must be a string"):
        gang_of(_gang_pod([{**group, "topologyRequired": ["x"]}]))
