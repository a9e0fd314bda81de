"""The kubernetes family's workloads and the interpod micro-benchmark (issue 30), at tiny sizes
and without a cluster: the pods each workload creates, the report's shape, and that the node
check's figures come from checks that refuse the nodes they should (no timing assertions: the
machine is shared)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from benchmarks import interpod
from benchmarks.__main__ import FAMILIES, build_parser
from benchmarks.baseline import BaselineError, packages_imported, served_baseline_environment
from benchmarks.kube_contenders import (
    BASELINE,
    CONTENDERS,
    KUBE_SCHEDULER,
    PYSCHEDULER,
    BaselineContender,
    KubeSchedulerContender,
    PyschedulerContender,
    contenders_to_run,
)
from benchmarks.kube_limit import LIMIT, LimitContender
from benchmarks.kube_memory import group_high_water_kib
from benchmarks.kube_report import NOT_DECIDING
from benchmarks.kube_workloads import GANG_JOBS, GANG_MEMBERS, HIGH_QUEUE, QUICK_GANG_JOBS, QUICK_GANG_MEMBERS
from benchmarks.kubernetes import (
    HOSTNAME_LABEL,
    PHASES,
    WORKLOADS,
    ZONE_LABEL,
    ZONES,
    Bench,
    KubernetesReport,
    PhaseResult,
    violations,
    workloads_for,
    zone_labels,
)
from kube_cluster import fake_node

from pyscheduler_k8s.cluster_index import pod_constraints


def test_the_workloads_shape_their_pods_as_scheduler_perf() -> None:
    plain, anti, spread = workloads_for(1_000, 10_000, ["plain", "anti-affinity", "spread"])
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


SERVED_PACKAGES = {"pyscheduler": "pyscheduler", "pyscheduler_web": "web/pyscheduler_web",
                   "pyscheduler_k8s": "k8s/pyscheduler_k8s"}


def _fake_baseline(root: Path, leave_out: str = "") -> Path:
    """A checkout's layout with the three served packages (empty ones) and a native module's
    file name; ``leave_out``: one package not there."""
    for name, where in SERVED_PACKAGES.items():
        if name != leave_out:
            (root / where).mkdir(parents=True)
            (root / where / "__init__.py").write_text("", encoding="utf-8")
    if leave_out != "pyscheduler":
        (root / "pyscheduler" / "_native.cpython-311-x86_64-linux-gnu.so").write_bytes(b"")
    return root


def test_a_served_baseline_imports_its_core_web_and_shim(tmp_path: Path) -> None:
    """A Python started from this checkout, where all three packages are installed, imports
    them from the baseline with the environment the baseline contender is started with."""
    root = _fake_baseline(tmp_path / "base")
    env = served_baseline_environment(root)
    assert env["PYTHONSAFEPATH"] == "1"
    assert packages_imported(list(SERVED_PACKAGES), env) == {
        name: (root / where).resolve() for name, where in SERVED_PACKAGES.items()}
    assert packages_imported(["pyscheduler_k8s"])["pyscheduler_k8s"] != (root / "k8s" / "pyscheduler_k8s").resolve()


@pytest.mark.parametrize("missing", list(SERVED_PACKAGES))
def test_a_served_baseline_without_one_of_its_packages_is_refused(tmp_path: Path, missing: str) -> None:
    with pytest.raises(BaselineError, match=f"no {missing} package"):
        served_baseline_environment(_fake_baseline(tmp_path, leave_out=missing))


def test_a_served_baseline_whose_shim_does_not_import_is_refused(tmp_path: Path) -> None:
    root = _fake_baseline(tmp_path)
    (root / "k8s" / "pyscheduler_k8s" / "__init__.py").write_text("raise ImportError('too old')\n", encoding="utf-8")
    with pytest.raises(BaselineError, match="cannot import"):
        served_baseline_environment(root)


def _backlog(scheduler: str, rate: float, workload: str = "plain", bound: int = 500) -> PhaseResult:
    return PhaseResult(scheduler, "backlog", 500, bound, bound, 1.0, rate, rate, None, None, None, None, "", 0.0, 0.0,
                       workload=workload)


def test_report_gives_the_ratio_to_the_baseline_next_to_kube_schedulers() -> None:
    report = KubernetesReport(nodes=50, pods=500, workloads=workloads_for(50, 500, ["plain"]),
                              contenders=[PYSCHEDULER, BASELINE, KUBE_SCHEDULER])
    report.results += [_backlog(PYSCHEDULER, 300.0), _backlog(BASELINE, 240.0), _backlog(KUBE_SCHEDULER, 400.0)]
    assert report.ratio("backlog", against=BASELINE) == 1.25 and report.ratio("backlog") == 0.75
    text = report.format()
    assert ("- backlog: pyscheduler / baseline bound/s = 1.25x; pyscheduler / kube-scheduler bound/s = 0.75x"
            in text)
    assert "- stream: pyscheduler / baseline bound/s = -; pyscheduler / kube-scheduler bound/s = -" in text
    rows = [line.split("|")[1].strip() for line in text.splitlines() if "| backlog |" in line]
    assert rows == [PYSCHEDULER, BASELINE, KUBE_SCHEDULER]
    document = json.loads(json.dumps(report.to_dict()))
    assert document["baseline_ratios"] == {"plain": {"stream": None, "backlog": 1.25}}
    assert document["ratios"] == {"plain": {"stream": None, "backlog": 0.75}}
    assert document["contenders"] == [PYSCHEDULER, BASELINE, KUBE_SCHEDULER]


def test_report_without_kube_scheduler_gives_only_the_baseline_ratio() -> None:
    report = KubernetesReport(nodes=50, pods=500, workloads=workloads_for(50, 500, ["plain"]),
                              contenders=[PYSCHEDULER, BASELINE])
    report.results += [_backlog(PYSCHEDULER, 300.0), _backlog(BASELINE, 240.0, bound=499)]
    text = report.format()
    assert "- backlog: pyscheduler / baseline bound/s = -" in text.splitlines()  # the baseline missed one pod
    assert "kube-scheduler bound/s" not in text


def test_contenders_run_in_a_fixed_order_and_keep_their_pods_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSCHEDULER_BENCH_YUNIKORN", raising=False)  # yunikorn: tests/test_bench_kube_yunikorn.py
    assert contenders_to_run(None, None) == ["limit", "pyscheduler", "kube-scheduler"]
    assert contenders_to_run(None, "/tmp/base") == [key for key in CONTENDERS if key != "yunikorn"]
    assert contenders_to_run(["kube-scheduler", "baseline", "pyscheduler"], "/b") == ["pyscheduler", "baseline",
                                                                                      "kube-scheduler"]
    with pytest.raises(ValueError, match="needs a baseline"):
        contenders_to_run(["pyscheduler", "baseline"], None)
    with pytest.raises(ValueError, match="unknown contenders"):
        contenders_to_run(["volcano"], None)
    kinds = (LimitContender, PyschedulerContender, BaselineContender, KubeSchedulerContender)
    assert [kind.name for kind in kinds] == list(CONTENDERS.values())[:len(kinds)]
    plain = workloads_for(50, 500, ["plain"])[0]
    prefixes = {Bench.prefix(kind.__new__(kind), plain, "stream") for kind in kinds}
    assert len(prefixes) == len(kinds) and all(prefix.islower() and " " not in prefix for prefix in prefixes)


def test_cli_selects_kubernetes_contenders() -> None:
    args = build_parser().parse_args(["kubernetes", "--kube-contenders", "baseline,pyscheduler"])
    assert args.kube_contenders == ["baseline", "pyscheduler"]
    assert build_parser().parse_args(["kubernetes"]).kube_contenders is None
    with pytest.raises(SystemExit):
        build_parser().parse_args(["kubernetes", "--kube-contenders", "volcano"])
    assert build_parser().parse_args(["kubernetes", "--kube-contenders", "yunikorn"]).kube_contenders == ["yunikorn"]


def test_the_preemption_and_gang_workloads_shape_their_pods() -> None:
    preemption, gangs = workloads_for(5_000, 10_000, ["preemption", "gangs"])
    # scheduler_perf's PreemptionBasic at 5,000 nodes: 20,000 low pods, a wave of 5,000.
    assert (preemption.fill, preemption.pods, preemption.least_preemptions) == (20_000, 5_000, 15_000)
    high = preemption.pod("h", 0, "app", "pyscheduler")
    low = preemption.fill_pod("l", "app", "pyscheduler")
    assert high["spec"]["priorityClassName"] == "bench-high" and low["spec"]["priorityClassName"] == "bench-low"
    assert high["metadata"]["labels"]["queue"] == HIGH_QUEUE and low["metadata"]["labels"]["queue"] == "root.bench"
    assert (gangs.pods, gangs.group, gangs.app_size) == (GANG_JOBS * GANG_MEMBERS, GANG_MEMBERS, GANG_MEMBERS)
    member = gangs.pod("g", 5, "app", "pyscheduler")["metadata"]["annotations"]
    (group,) = json.loads(member["yunikorn.apache.org/task-groups"])
    assert group["minMember"] == GANG_MEMBERS and member["yunikorn.apache.org/task-group-name"] == group["name"]
    assert "gangSchedulingStyle=Hard" in member["yunikorn.apache.org/schedulingPolicyParameters"]
    assert workloads_for(50, 500, ["gangs"], quick=True)[0].pods // QUICK_GANG_JOBS < GANG_MEMBERS


def test_report_gives_each_contender_a_ratio_to_the_limit() -> None:
    report = KubernetesReport(nodes=50, pods=500, workloads=workloads_for(50, 500, ["plain", "gangs"]),
                              contenders=[LIMIT, PYSCHEDULER, KUBE_SCHEDULER])
    report.results += [_backlog(LIMIT, 400.0), _backlog(PYSCHEDULER, 300.0), _backlog(KUBE_SCHEDULER, 200.0)]
    assert report.limit_ratios()[PYSCHEDULER]["plain"]["backlog"] == 0.75
    assert report.limit_ratios()[KUBE_SCHEDULER]["plain"]["backlog"] == 0.5
    text = report.format()
    assert "- backlog: pyscheduler / limit bound/s = 0.75x; pyscheduler / kube-scheduler bound/s = 1.50x" in text
    assert " 0.75x |" in text and "scheduler peak MiB" in text
    assert "ceiling for these bindings" in text.split("## kubernetes, gangs")[1]  # not for plain
    assert "ceiling" not in text.split("## kubernetes, gangs")[0]
    assert NOT_DECIDING[("gangs", KUBE_SCHEDULER)].startswith("no gangs")


def test_peak_memory_reads_the_process_groups_high_water_marks() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; b = bytearray(64 << 20); time.sleep(30)"],
                             start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while sum(group_high_water_kib(child.pid).values()) < 64 << 10:  # KiB: the 64 MiB it holds
            assert time.monotonic() < deadline, group_high_water_kib(child.pid)
            time.sleep(0.05)
        assert list(group_high_water_kib(child.pid)) == [child.pid]  # its group, not this process
        assert os.getpid() not in group_high_water_kib(child.pid)
    finally:
        child.kill()
        child.wait()


QUICK_RUN_PODS = 200


@pytest.fixture(scope="module")
def quick_run() -> KubernetesReport:
    """One quick run on a real API server (one cluster of 50 kwok nodes): the limit and
    pyscheduler, the plain (200 pods), preemption (a wave of 50 on 200 low pods) and gang (5 jobs
    of 20) workloads, both phases."""
    from benchmarks import kubernetes

    return kubernetes.run(quick=True, pods=QUICK_RUN_PODS, workloads=["plain", "preemption", "gangs"],
                          contenders=["limit", "pyscheduler"])


def _result(report: KubernetesReport, scheduler: str, workload: str, phase: str) -> PhaseResult:
    (found,) = [r for r in report.results if (r.scheduler, r.workload, r.phase) == (scheduler, workload, phase)]
    return found


@pytest.mark.timeout(600)
def test_the_limit_binds_every_pod_of_a_quick_plain_run(quick_run: KubernetesReport) -> None:
    assert quick_run.failures == []
    for phase in PHASES:
        limit = _result(quick_run, LIMIT, "plain", phase)
        assert limit.bound == limit.pods == QUICK_RUN_PODS and limit.bound_per_second > 0
        assert limit.scheduler_cpu_s > 0 and (limit.scheduler_peak_mib or 0) > 10
        ratio = quick_run.ratio(phase, "plain", LIMIT)
        assert ratio is not None and ratio > 0
    assert "pyscheduler / limit bound/s = " in quick_run.format()


@pytest.mark.timeout(600)
def test_a_quick_preemption_run_gives_its_figures(quick_run: KubernetesReport) -> None:
    workload = workloads_for(50, QUICK_RUN_PODS, ["preemption"])[0]
    for phase in PHASES:
        ours = _result(quick_run, PYSCHEDULER, "preemption", phase)
        assert ours.bound == ours.pods == workload.pods and ours.bound_per_second > 0
        # every high pod bound on a full cluster: at least 3 low pods of each node preempted
        assert ours.preemptions is not None and workload.least_preemptions <= ours.preemptions <= workload.fill
        assert (ours.scheduler_peak_mib or 0) > 10 and ours.bind_p99_ms is not None
        assert _result(quick_run, LIMIT, "preemption", phase).preemptions == 0  # it decides nothing
    assert "| preempted |" in quick_run.format()


@pytest.mark.timeout(600)
def test_a_quick_gang_run_binds_every_member(quick_run: KubernetesReport) -> None:
    for phase in PHASES:
        ours = _result(quick_run, PYSCHEDULER, "gangs", phase)
        assert ours.bound == ours.pods == QUICK_GANG_JOBS * QUICK_GANG_MEMBERS
        assert ours.bind_p50_ms is not None and ours.bind_p99_ms is not None and ours.note == ""
    document = json.loads(json.dumps(quick_run.to_dict()))
    assert set(document["limit_ratios"][PYSCHEDULER]) == {"plain", "preemption", "gangs"}
