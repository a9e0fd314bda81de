"""The hub's pure parts without a cluster (issue 33, level 2): the marks and copies
(``pyscheduler_k8s.hub.marks``), the clusters file (``hub.config``, hostile files included),
the task table's requeue, and ``pyscheduler serve --clusters-file``'s refusals."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pyscheduler_k8s.cache.task_state import TaskEvent, TaskState, next_task_state
from pyscheduler_k8s.hub.config import load_hub_config, parse_hub_config
from pyscheduler_k8s.hub.marks import CLUSTER_LABEL, HUB_POD_UID_LABEL, NODE_ANNOTATION, PLACEMENT_ANNOTATION, \
    delegate_of, hub_pod_as_bound, hub_status_of, member_node_as_hub, member_pod_as_foreign, placement_of, \
    qualified, source_of, split_qualified
from pyscheduler_k8s.nodes import node_view
from pyscheduler_k8s.pods import pod_view


def _hub_pod(**meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "team", "uid": "u-1", "resourceVersion": "9", "labels": {"app": "x"},
                     "annotations": {"a": "b"}, "ownerReferences": [{"kind": "Job", "name": "j", "uid": "j-1"}],
                     "finalizers": ["batch.kubernetes.io/job-tracking"], "creationTimestamp": "2026-11-27T00:00:00Z",
                     **meta},
        "spec": {"schedulerName": "pyscheduler", "priority": 100, "priorityClassName": "high",
                 "preemptionPolicy": "PreemptLowerPriority", "serviceAccountName": "default",
                 "containers": [{"name": "c", "image": "i", "volumeMounts": [
                     {"name": "kube-api-access-x7k2p", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"},
                     {"name": "data", "mountPath": "/data"}]}],
                 "volumes": [{"name": "kube-api-access-x7k2p", "projected": {}}, {"name": "data", "emptyDir": {}}]},
        "status": {"phase": "Pending"},
    }


def test_names_qualified_by_member() -> None:
    assert qualified("east", "node-3") == "[east]node-3"
    assert split_qualified("[east]node-3") == ("east", "node-3")
    assert split_qualified("node-3") is None and split_qualified("[east]") is None


def test_the_copy_is_the_hub_pod_bound_in_the_member_without_what_only_the_hub_has() -> None:
    copy = delegate_of(_hub_pod(), "node-3", "pl-1")
    meta, spec = copy["metadata"], copy["spec"]
    assert meta["name"] == "p" and meta["namespace"] == "team"
    assert meta["labels"] == {"app": "x", HUB_POD_UID_LABEL: "u-1"}
    assert meta["annotations"] == {"a": "b", PLACEMENT_ANNOTATION: "pl-1"}
    for gone in ("uid", "resourceVersion", "ownerReferences", "finalizers", "creationTimestamp"):
        assert gone not in meta
    assert spec["nodeName"] == "node-3"
    for gone in ("priority", "priorityClassName", "preemptionPolicy"):
        assert gone not in spec  # the member's admission sets them (a differing one is refused)
    assert [v["name"] for v in spec["volumes"]] == ["data"]
    assert [m["name"] for m in spec["containers"][0]["volumeMounts"]] == ["data"]
    assert "status" not in copy
    # The hub pod is left as it was.
    assert _hub_pod()["spec"]["containers"][0]["volumeMounts"][0]["name"] == "kube-api-access-x7k2p"


def test_a_placed_hub_pod_is_shown_bound_to_its_members_node() -> None:
    pod = _hub_pod()
    assert hub_pod_as_bound(pod) is pod and placement_of(pod) is None
    pod["metadata"]["labels"][CLUSTER_LABEL] = "east"
    pod["metadata"]["annotations"].update({NODE_ANNOTATION: "node-3", PLACEMENT_ANNOTATION: "pl-1"})
    shown = hub_pod_as_bound(pod)
    assert placement_of(pod) == ("east", "node-3", "pl-1")
    assert shown["spec"]["nodeName"] == "[east]node-3" and not pod["spec"].get("nodeName")
    assert pod_view(shown).node_name == "[east]node-3"
    assert source_of(shown) == ""


def test_a_members_node_and_pods_as_the_hub_sees_them() -> None:
    node = {"metadata": {"name": "n1", "labels": {"zone": "a"}},
            "spec": {}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi"}}}
    shown = member_node_as_hub("east", {"region": "eu", "tier": "gold"}, node)
    view = node_view(shown)
    assert view.name == "[east]n1" and view.schedulable and view.capacity["vcore"] == 4000
    assert view.attributes[CLUSTER_LABEL] == "east"
    assert view.attributes["pyscheduler.io/cluster-labels"] == "region=eu,tier=gold"
    assert view.labels["zone"] == "a" and source_of(shown) == "east"
    assert not node_view(member_node_as_hub("east", {}, node, unschedulable=True)).schedulable
    assert "pyscheduler.io/cluster-labels" not in node_view(member_node_as_hub("east", {}, node)).attributes

    own = {"metadata": {"name": "x", "uid": "m-1"}, "spec": {"schedulerName": "pyscheduler", "nodeName": "n1"}}
    foreign = pod_view(member_pod_as_foreign("east", own))
    assert foreign.node_name == "[east]n1" and foreign.scheduler_name != "pyscheduler"  # never one of ours
    assert source_of(member_pod_as_foreign("east", own)) == "east"


def test_the_hub_pods_status_from_its_copy() -> None:
    copy = {"spec": {"nodeName": "n1"}, "status": {"phase": "Running", "podIP": "10.0.0.1",
                                                  "conditions": [{"type": "Ready", "status": "True"}],
                                                  "qosClass": "BestEffort"}}
    status = hub_status_of(copy, "east")
    assert status["phase"] == "Running" and status["podIP"] == "10.0.0.1"
    assert status["message"] == "runs in cluster east on node n1"
    assert "qosClass" not in status  # the hub's own, not the copy's


def test_the_task_table_requeues_a_placed_pod_only() -> None:
    assert next_task_state("u", TaskState.ALLOCATED, TaskEvent.REQUEUE) is TaskState.ASK
    assert next_task_state("u", TaskState.RELEASED, TaskEvent.REQUEUE) is TaskState.ASK
    with pytest.raises(ValueError):
        next_task_state("u", TaskState.ASK, TaskEvent.REQUEUE)


# -- the clusters file ---------------------------------------------------------------------------


@pytest.fixture
def kubeconfig(tmp_path: Path) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text("apiVersion: v1\nkind: Config\n")
    return str(path)


def _document(kubeconfig: str, **extra: Any) -> dict[str, Any]:
    return {"hub": {"name": "hub", "kubeconfig": kubeconfig},
            "members": [{"name": "east", "kubeconfig": kubeconfig, "labels": {"region": "eu"}},
                        {"name": "west", "kubeconfig": kubeconfig}], **extra}


def test_a_clusters_file_parses_with_defaults(kubeconfig: str) -> None:
    config = parse_hub_config(_document(kubeconfig))
    assert config.hub.name == "hub" and [m.name for m in config.members] == ["east", "west"]
    assert dict(config.members[0].labels) == {"region": "eu"} and not config.members[1].labels
    assert (config.lost_after, config.on_lost, config.probe_interval) == (300.0, "requeue", 2.0)
    tuned = parse_hub_config(_document(kubeconfig, lostAfter=30, onLost="fail", probeInterval=0.5))
    assert (tuned.lost_after, tuned.on_lost, tuned.probe_interval) == (30.0, "fail", 0.5)


@pytest.mark.parametrize("change, problem", [
    ({"members": []}, "at least one member"),
    ({"members": "east"}, "at least one member"),
    ({"hub": None}, "hub: expected a mapping"),
    ({"extra": 1}, "unknown key"),
    ({"onLost": "retry"}, "onLost"),
    ({"lostAfter": -1}, "lostAfter"),
    ({"lostAfter": True}, "lostAfter"),
    ({"lostAfter": 1e30}, "lostAfter"),
    ({"probeInterval": 0}, "probeInterval"),
])
def test_a_broken_clusters_file_is_refused_with_what_is_wrong(kubeconfig: str, change: dict[str, Any],
                                                               problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_hub_config({**_document(kubeconfig), **change})


def test_broken_members_are_named(kubeconfig: str, tmp_path: Path) -> None:
    def members(*entries: Any) -> dict[str, Any]:
        return {**_document(kubeconfig), "members": list(entries)}

    with pytest.raises(ValueError, match=r"members\[0\]: .*not a DNS label"):
        parse_hub_config(members({"name": "East_1", "kubeconfig": kubeconfig}))
    with pytest.raises(ValueError, match="named twice"):
        parse_hub_config(members({"name": "hub", "kubeconfig": kubeconfig}))
    with pytest.raises(ValueError, match=r"members\[0\]: .*no kubeconfig file"):
        parse_hub_config(members({"name": "east", "kubeconfig": str(tmp_path / "missing")}))
    with pytest.raises(ValueError, match="label key"):
        parse_hub_config(members({"name": "east", "kubeconfig": kubeconfig, "labels": {"bad key": "x"}}))
    with pytest.raises(ValueError, match="label region: value"):
        parse_hub_config(members({"name": "east", "kubeconfig": kubeconfig, "labels": {"region": "a=b"}}))
    with pytest.raises(ValueError, match="at most 64"):
        parse_hub_config(members(*({"name": f"m{i}", "kubeconfig": kubeconfig} for i in range(65))))


def test_a_file_that_is_not_yaml_or_missing_is_refused(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("hub: [unclosed\n")
    with pytest.raises(ValueError, match="not YAML"):
        load_hub_config(str(broken))
    with pytest.raises(ValueError, match="missing.yaml"):
        load_hub_config(str(tmp_path / "missing.yaml"))


def _serve_refused(tmp_path: Path, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "pyscheduler.cli", "serve", *args], capture_output=True, text=True,
                          cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    return done.stderr


def test_serve_refuses_a_clusters_file_it_cannot_use(tmp_path: Path, kubeconfig: str) -> None:
    rm = ("--rm", "pyscheduler_k8s:attach")
    broken = tmp_path / "clusters.yaml"
    broken.write_text("hub: {name: hub, kubeconfig: /nowhere}\nmembers: []\n")
    assert "--clusters-file" in _serve_refused(tmp_path, *rm, "--clusters-file", str(broken))
    assert "needs --rm pyscheduler_k8s:attach" in _serve_refused(tmp_path, "--clusters-file", str(broken))
    assert "one or the other" in _serve_refused(tmp_path, *rm, "--clusters-file", str(broken),
                                                "--cluster", f"a={kubeconfig}")


def test_marks_naming_a_member_the_hub_does_not_have_are_not_a_placement() -> None:
    pod = _hub_pod()
    pod["metadata"]["labels"][CLUSTER_LABEL] = "elsewhere"
    pod["metadata"]["annotations"][NODE_ANNOTATION] = "node-3"
    assert hub_pod_as_bound(pod, members=("east", "west")) is pod  # a pod like any other: it asks
    assert hub_pod_as_bound(pod, members=("elsewhere",))["spec"]["nodeName"] == "[elsewhere]node-3"


def test_an_alias_bomb_or_a_huge_clusters_file_is_refused_quickly(tmp_path: Path, kubeconfig: str) -> None:
    """Aliases nested nine deep (a billion items if expanded) and a file past 1 MiB: refused with
    the reason, in well under a second, nothing expanded."""
    import time

    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x","x"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + f"\nhub: {{name: hub, kubeconfig: {kubeconfig}}}\nmembers: *a8\n")
    started = time.monotonic()
    with pytest.raises(ValueError, match="unknown key"):  # refused before anything walks the aliases
        load_hub_config(str(bomb))
    huge = tmp_path / "huge.yaml"
    huge.write_text("hub: {name: hub, kubeconfig: x}\n# " + "x" * (2 << 20) + "\nmembers: []\n")
    with pytest.raises(ValueError):
        load_hub_config(str(huge))
    assert time.monotonic() - started < 5
