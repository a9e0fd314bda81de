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
