"""The multicluster benchmark family (issue 33): its report, its command line, how the hub's
placements are told apart from the single cluster's, and its ``--quick`` run end to end on real
control planes (one cluster of 60 kwok nodes; a hub over three members of 20), so the code keeps
working. No timing assertions: the machine is shared."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from benchmarks.__main__ import FAMILIES, build_parser
from benchmarks.kube_contenders import PyschedulerContender
from benchmarks.kubernetes import PHASES
from benchmarks.multicluster import (
    HUB,
    MEMBERS,
    PODS_PER_APP,
    QUICK_NODES_PER_MEMBER,
    QUICK_PODS,
    SINGLE,
    HubContender,
    HubPodTimes,
    HubSide,
    MulticlusterReport,
    SideResult,
    app_name,
    run,
)
from kube_cluster import KubeCluster
from kube_hub import CLUSTER_LABEL, HUB_POD_UID_LABEL

pytestmark = pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")


def _result(side: str, phase: str, rate: float, placed: int = 200) -> SideResult:
    return SideResult(side, phase, 200, placed, placed, 1.0, rate, rate, 10.0, 20.0, 30.0, 40.0, 0.5, 1.5,
                      per_member={"east": 70, "west": 60, "south": 70} if side == HUB else {})


def test_report_gives_the_hubs_rate_over_the_single_clusters_per_phase() -> None:
    report = MulticlusterReport(members=list(MEMBERS), nodes_per_member=20, pods=200)
    report.results += [_result(SINGLE, "stream", 200.0), _result(HUB, "stream", 170.0),
                       _result(SINGLE, "backlog", 400.0), _result(HUB, "backlog", 300.0, placed=199)]
    assert report.ratio("stream") == pytest.approx(0.85)
    assert report.ratio("backlog") is None  # the hub missed a pod
    text = report.format()
    assert "## multicluster: a hub over 3 members of 20 kwok nodes vs one cluster of 60, 200 pods" in text
    assert "- stream: hub / single cluster placed/s = 0.85x (target >= 0.8x)" in text
    assert "- backlog: hub / single cluster placed/s = - (target >= 0.8x)" in text
    assert "east 70 / west 60 / south 70" in text
    document = json.loads(json.dumps(report.to_dict()))
    assert document["ratios"] == {"stream": pytest.approx(0.85), "backlog": None}
    assert document["pods_per_app"] == PODS_PER_APP and document["target_ratio"] == 0.8


def test_cli_registers_the_family_and_its_sizes() -> None:
    assert "multicluster" in FAMILIES
    assert list(FAMILIES).index("multicluster") > list(FAMILIES).index("kubernetes")
    args = build_parser().parse_args(["multicluster", "--multicluster-nodes", "7", "--multicluster-pods", "70"])
    assert (args.multicluster_nodes, args.multicluster_pods) == (7, 70)
    assert build_parser().parse_args(["multicluster"]).multicluster_nodes is None
    with pytest.raises(SystemExit):
        build_parser().parse_args(["multicluster", "--multicluster-pods", "0"])


def test_the_hub_contender_reads_the_clusters_file_not_a_kubeconfig(tmp_path: Path) -> None:
    cluster = KubeCluster("https://127.0.0.1:1", "t", tmp_path / "kubeconfig", tmp_path)
    single_args, single_env = PyschedulerContender(cluster, tmp_path).command()
    args, env = HubContender(cluster, tmp_path, tmp_path / "clusters.yaml").command()
    assert args[:5] == single_args[:5] and args[-2:] == ["--rm", "pyscheduler_k8s:attach"]  # the port differs
    assert env["PYSCHEDULER_K8S_CLUSTERS_FILE"] == str(tmp_path / "clusters.yaml")
    assert "PYSCHEDULER_K8S_KUBECONFIG" not in env and single_env["PYSCHEDULER_K8S_KUBECONFIG"]
    assert HubContender.tag != PyschedulerContender.tag and HubContender.scheduler_name == "pyscheduler"


def _hub_pod(name: str, uid: str, app: str, member: str = "") -> dict[str, Any]:
    labels = {"applicationId": app, **({CLUSTER_LABEL: member} if member else {})}
    return {"metadata": {"name": name, "uid": uid, "labels": labels}, "spec": {}, "status": {"phase": "Pending"}}


def _copy(uid: str, node: str = "", phase: str = "Pending") -> dict[str, Any]:
    return {"metadata": {"name": f"copy-{uid}", "labels": {HUB_POD_UID_LABEL: uid}}, "spec": {"nodeName": node},
            "status": {"phase": phase}}


def _unstarted(kind: type[Any], **fields: Any) -> Any:
    """A watcher without its watch (the record logic alone)."""
    made = object.__new__(kind)
    made.__dict__.update({"added": {}, "bound": {}, "running": {}, **fields})
    return made


class _ListedCopies:
    """A member's API as the check uses it: its copies listed by label."""

    def __init__(self, *copies: dict[str, Any]) -> None:
        self.copies = list(copies)

    def list(self, path: str, *, params: dict[str, str]) -> tuple[list[dict[str, Any]], str]:
        assert params == {"labelSelector": HUB_POD_UID_LABEL}
        return self.copies, "1"


def test_a_hub_pod_is_placed_when_seen_marked_and_splits_are_counted_from_the_copies() -> None:
    hub: HubPodTimes = _unstarted(HubPodTimes, prefix="hubs-stre", labelled={}, uids={}, apps={})
    hub.record(_hub_pod("hubs-stre-00000", "u0", "a0"), 1.0)
    hub.record(_hub_pod("hubs-stre-00001", "u1", "a0"), 1.0)
    hub.record(_hub_pod("hubs-stre-00002", "u2", "a1"), 1.5)
    hub.record(_hub_pod("warmup-hubs", "uw", "warmup", "east"), 1.5)  # not the phase's
    hub.record(_hub_pod("hubs-stre-00000", "u0", "a0", "east"), 2.6)
    hub.record(_hub_pod("hubs-stre-00001", "u1", "a0", "west"), 2.0)
    running = _hub_pod("hubs-stre-00000", "u0", "a0", "east")
    running["status"]["phase"] = "Running"
    hub.record(running, 3.0)

    side: HubSide = HubSide.__new__(HubSide)
    side.hub_times = hub
    side.pods_path = "/api/v1/namespaces/bench/pods"
    side.member_apis = {"east": _ListedCopies(_copy("u0", "east-1"), _copy("u2", "east-0")),  # type: ignore[dict-item]
                        "west": _ListedCopies(_copy("u1", "west-0"), _copy("u2", "west-0"))}  # u2 copied twice
    assert side.placed() == {"hubs-stre-00000": 2.6, "hubs-stre-00001": 2.0}
    assert side.running() == {"hubs-stre-00000": 3.0}
    assert side.is_placed(_hub_pod("p", "u", "a", "west")) and not side.is_placed(_hub_pod("p", "u", "a"))
    result = _result(HUB, "stream", 1.0)
    side.check(result)
    assert result.labelled == 2 and result.label_p50_ms == pytest.approx(1600.0)  # nearest rank of 1.0 s, 1.6 s
    assert result.per_member == {"east": 2, "west": 2}
    assert (result.split_apps, result.copied_twice) == (2, 1)  # a0 east+west, a1 east+west; u2 twice


def test_applications_are_groups_of_consecutive_pods() -> None:
    assert app_name("p", 0) == app_name("p", PODS_PER_APP - 1) != app_name("p", PODS_PER_APP)


def test_quick_run_measures_both_sides() -> None:
    """The family as ``make bench`` runs it with ``--quick``: every phase of both sides placed all
    its pods, each application whole in one member, no pod copied twice."""
    progress: list[str] = []
    report = run(quick=True, progress=progress.append)
    assert report.failures == [], (report.failures, progress[-20:])
    assert [(r.side, r.phase) for r in report.results] == [(s, p) for s in (SINGLE, HUB) for p in PHASES]
    for result in report.results:
        assert result.placed == result.running == QUICK_PODS, result
        assert result.place_p50_ms is not None and result.placed_per_second > 0
    for result in report.results[len(PHASES):]:
        assert sum(result.per_member.values()) == QUICK_PODS and set(result.per_member) == set(MEMBERS)
        assert result.labelled == QUICK_PODS and (result.split_apps, result.copied_twice) == (0, 0)
    assert all(report.ratio(phase) for phase in PHASES)
    assert report.nodes_per_member == QUICK_NODES_PER_MEMBER
    assert "hub / single cluster placed/s" in report.format()
