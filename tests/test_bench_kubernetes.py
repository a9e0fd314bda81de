"""The kubernetes family's workloads and the interpod micro-benchmark (issue 30), at tiny sizes
and without a cluster: the pods each workload creates, the report's shape, and that the node
check's figures come from checks that refuse the nodes they should (no timing assertions: the
machine is shared)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from benchmarks import interpod
from benchmarks.__main__ import FAMILIES, build_parser
from benchmarks.kubernetes import (
    HOSTNAME_LABEL,
    WORKLOADS,
    ZONE_LABEL,
    ZONES,
    KubernetesReport,
    PhaseResult,
    violations,
    workloads_for,
    zone_labels,
)
from kube_cluster import fake_node

from pyscheduler_k8s.cluster_index import pod_constraints


def test_the_workloads_shape_their_pods_as_scheduler_perf() -> None:
    plain, anti, spread = workloads_for(1_000, 10_000)
    assert (plain.pods, anti.pods, spread.pods) == (10_000, 5_000, 5_000) and anti.group == 500
    assert [w.name for w in workloads_for(50, 500, ["spread"])] == ["spread"]
    assert "affinity" not in json.dumps(plain.pod("p", 0, "app", "pyscheduler"))

    groups = Counter(anti.pod(f"p{i}", i, "app", "pyscheduler")["metadata"]["labels"]["color"] for i in range(5_000))
    assert len(groups) == 10 and set(groups.values()) == {500}  # each group fills half the nodes
    pod = anti.pod("p", 1_234, "app", "pyscheduler")
    pod["metadata"]["namespace"] = "bench"
    (term,) = pod_constraints(pod).anti_affinity
    assert term.topology_key == HOSTNAME_LABEL and term.namespaces == {"bench"}
    assert term.selector.matches({"color": "green-2"}) and not term.selector.matches({"color": "green-3"})

    pod = spread.pod("p", 7, "app", "pyscheduler")
    (constraint,) = pod_constraints(pod).spread
    assert (constraint.max_skew, constraint.topology_key) == (5, ZONE_LABEL)
    assert constraint.selector.matches(pod["metadata"]["labels"])


def test_nodes_carry_scheduler_perf_zones_and_fake_node_stays_compatible() -> None:
    labels = zone_labels([f"n{i}" for i in range(6)])
    assert [labels[f"n{i}"][ZONE_LABEL] for i in range(6)] == [*ZONES, *ZONES]
    assert fake_node("a")["metadata"]["labels"] == {"kubernetes.io/hostname": "a", "type": "kwok"}
    assert fake_node("a", labels={ZONE_LABEL: "moon-1"})["metadata"]["labels"][ZONE_LABEL] == "moon-1"


def test_report_gives_a_ratio_per_workload_and_phase() -> None:
    report = KubernetesReport(nodes=50, pods=500, workloads=workloads_for(50, 500))

    def result(scheduler: str, workload: str, rate: float) -> PhaseResult:
        pods = 500 if workload == "plain" else 250
        return PhaseResult(scheduler, "backlog", pods, pods, pods, 1.0, rate, rate, None, None, None, None, "", 0.0,
                           0.0, workload=workload)

    report.results += [result("pyscheduler", "spread", 300.0), result("kube-scheduler", "spread", 200.0),
                       result("pyscheduler", "plain", 100.0)]
    assert report.ratio("backlog", "spread") == 1.5 and report.ratio("backlog") is None
    document = report.to_dict()
    assert document["ratios"]["spread"]["backlog"] == 1.5 and set(document["ratios"]) == set(WORKLOADS)
    text = report.format()
    assert "## kubernetes, spread:" in text and "- backlog: pyscheduler / kube-scheduler bound/s = 1.50x" in text


def test_cli_selects_kubernetes_workloads_and_registers_interpod() -> None:
    assert "interpod" in FAMILIES
    args = build_parser().parse_args(["kubernetes", "--kube-workloads", "spread, anti-affinity"])
    assert args.kube_workloads == ["spread", "anti-affinity"]
    assert build_parser().parse_args(["kubernetes"]).kube_workloads is None


def test_interpod_checks_refuse_the_nodes_they_should() -> None:
    report = interpod.run(nodes=200, runs=2)
    assert report.failures == []
    refused = {(t.case, t.path): t.refused for t in report.timings}
    assert len(refused) == len(interpod.CASES) * len(interpod.PATHS)
    # web-0 runs on 24 nodes (600 at 5,000); cache in zones 0-2 (60 of 200 nodes);
    # spread-0 has one pod more in zone-0 (20 nodes); a pod without constraints goes anywhere.
    expected = {"anti-affinity": 24, "affinity": 140, "spread": 20, "none": 0}
    assert {case: refused[case, path] for case, path in refused} == expected
    assert all(t.median_us > 0 and len(t.runs_us) == 2 for t in report.timings)
    assert "## Inter-pod node check: 200 nodes" in report.format()
    json.dumps(report.to_dict())


def test_violations_are_counted_from_the_bound_pods() -> None:
    anti = workloads_for(4, 8)[1]
    spread = workloads_for(4, 8)[2]

    def bound(node: str, color: str) -> dict[str, Any]:
        return {"metadata": {"labels": {"color": color}}, "spec": {"nodeName": node}}

    pods = [bound("a", "green-0"), bound("b", "green-0"), bound("a", "green-1"), bound("a", "green-0"),
            {"metadata": {"labels": {"color": "green-0"}}, "spec": {}}]
    assert violations(anti, pods, {}) == (1, "at most 2 of a group on a node")
    zones = {"a": "moon-1", "b": "moon-2", "c": "moon-3"}
    even = [bound(node, "blue") for node in "abc" for _ in range(4)]
    assert violations(spread, even, zones) == (0, "zones 4 / 4 / 4")
    assert violations(spread, even + [bound("a", "blue")] * 6, zones) == (1, "zones 10 / 4 / 4")
