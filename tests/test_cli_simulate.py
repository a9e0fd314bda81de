"""``pyscheduler simulate`` end to end, in a subprocess: a tiny workload file runs and prints a
summary; broken workload files fail with a clear message and a non-zero exit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

TINY = """\
seed: 3
nodes: {count: 3, memory: 4Gi, vcore: 2}
queues: [a, b]
applications:
  count: 4
  asks: [1, 3]
  memory: [128Mi, 1Gi]
  vcore: [100m, 500m]
  run_time: [1, 3]
arrival: {pattern: uniform, rate: 2}
"""


def simulate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pyscheduler.cli", "simulate", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_tiny_workload_prints_a_summary(tmp_path: Path) -> None:
    workload = tmp_path / "tiny.yaml"
    workload.write_text(TINY, encoding="utf-8")
    out = tmp_path / "out.json"
    done = simulate(str(workload), "--seed", "4", "--json", str(out))
    assert done.returncode == 0, done.stderr
    assert "workload (seed 4): 3 nodes" in done.stdout
    for row in ("allocations", "throughput", "latency p50", "latency p99", "nodes in use", "packing"):
        assert row in done.stdout
    assert "fair" in done.stdout and "binpacking" in done.stdout
    assert "100.0 %" in done.stderr  # the progress bar reached the end
    document = json.loads(out.read_text(encoding="utf-8"))
    assert document["workload"]["seed"] == 4
    summaries = document["summaries"]
    assert [s["policy"] for s in summaries] == ["fair", "binpacking"]
    for summary in summaries:
        assert summary["completed"] is True
        assert summary["allocations"] == summary["asks"] == document["asks"] > 0


def test_single_policy_threaded(tmp_path: Path) -> None:
    workload = tmp_path / "tiny.yaml"
    workload.write_text(TINY, encoding="utf-8")
    done = simulate(str(workload), "--policy", "binpacking", "--mode", "threaded", "--speed", "20", "--no-progress")
    assert done.returncode == 0, done.stderr
    assert "binpacking" in done.stdout and "threaded / native" in done.stdout
    assert "fair" not in done.stdout
    assert done.stderr == ""


def test_invalid_workload_names_the_problem(tmp_path: Path) -> None:
    workload = tmp_path / "broken.yaml"
    workload.write_text(TINY.replace("asks: [1, 3]", "asks: [3, 1]"), encoding="utf-8")
    done = simulate(str(workload))
    assert done.returncode == 1
    assert "invalid workload" in done.stderr
    assert "broken.yaml: applications.asks: the minimum 3 is larger than the maximum 1" in done.stderr
    assert done.stdout == ""


def test_unknown_key_and_bad_yaml(tmp_path: Path) -> None:
    typo = tmp_path / "typo.yaml"
    typo.write_text(TINY.replace("applications:", "aplications:"), encoding="utf-8")
    done = simulate(str(typo))
    assert done.returncode == 1 and "unknown key 'aplications'" in done.stderr
    garbage = tmp_path / "garbage.yaml"
    garbage.write_text("nodes: {count: 3\n", encoding="utf-8")
    done = simulate(str(garbage))
    assert done.returncode == 1 and "garbage.yaml: not valid YAML" in done.stderr


def test_missing_file(tmp_path: Path) -> None:
    done = simulate(str(tmp_path / "nowhere.yaml"))
    assert done.returncode == 2
    assert "cannot read" in done.stderr and "nowhere.yaml" in done.stderr


def test_services_run_with_and_without_role_history(tmp_path: Path) -> None:
    workload = tmp_path / "services.yaml"
    workload.write_text(TINY.replace("nodes: {count: 3, memory: 4Gi, vcore: 2}", "nodes: {count: 20, memory: 4Gi, vcore: 2}")
                        + "services: {count: 1, roles: {master: 1, region: 4}, memory: 1Gi, vcore: 1, run_time: 10, "
                          "down_time: 2, restarts: 2}\n", encoding="utf-8")
    out = tmp_path / "out.json"
    done = simulate(str(workload), "--policy", "fair", "--no-progress", "--json", str(out))
    assert done.returncode == 0, done.stderr
    assert "1 service(s) of 1 master, 4 region" in done.stdout
    assert "fair, no role history" in done.stdout and "service instances back on a used node" in done.stdout
    assert "100.0 % (10 of 10)" in done.stdout
    summaries = json.loads(out.read_text(encoding="utf-8"))["summaries"]
    assert [(s["policy"], s["role_history"]) for s in summaries] == [("fair", True), ("fair", False)]
    assert summaries[0]["services"] == {"instances": 10, "back": 10, "random_expected": summaries[0]["services"]["random_expected"]}


def _row(stdout: str, name: str) -> list[str]:
    """The cells of the summary table's row ``name`` (one per run)."""
    for line in stdout.splitlines():
        if not line.startswith("|"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells[0] == name:
            return cells[1:]
    raise AssertionError(f"no row {name!r} in:\n{stdout}")


def test_preemption_preset_runs_with_preemption_on_and_off(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    done = simulate("--preset", "preemption", "--policy", "fair", "--no-progress", "--json", str(out))
    assert done.returncode == 0, done.stderr
    assert "late tenant: 2 application(s) of 8 asks" in done.stdout and "guaranteed 32 GiB / 16 cores" in done.stdout
    assert _row(done.stdout, "") == ["fair, preemption on", "fair, preemption off"]
    # On: tenant B (16 cores guaranteed, arriving at 60 s) preempts 16 of A's one-core tasks as
    # soon as its 5 s delay has passed; they had run 65 s each. Off: it waits for A's tasks to end.
    assert _row(done.stdout, "late tenant: time to its guarantee") == ["5.00 s", "234 s"]
    assert _row(done.stdout, "preempted allocations") == ["16", "0"]
    assert _row(done.stdout, "work lost (vcore-s / memory GiB-s)") == ["1,040 / 2,080", "0 / 0"]
    assert _row(done.stdout, "allocations") == ["132 for 116 asks (16 re-runs)", "116 of 116 asks"]
    on, off = json.loads(out.read_text(encoding="utf-8"))["summaries"]
    assert (on["preemption"], off["preemption"]) == (True, False)
    assert 5.0 <= on["late_tenant"]["time_to_guarantee"] < 5.1
    assert off["late_tenant"]["time_to_guarantee"] > 200
    assert (on["preempted"], on["reruns"], off["preempted"]) == (16, 16, 0)
    assert 16 * 64.9 < on["work_lost"]["vcore_seconds"] <= 16 * 65.01
    assert on["work_lost"]["memory_gib_seconds"] == 2 * on["work_lost"]["vcore_seconds"]
    assert off["work_lost"] == {"vcore_seconds": 0.0, "memory_gib_seconds": 0.0}
    assert on["completed"] and off["completed"]


LATE_TENANT = """\
seed: 1
nodes: {count: 1, memory: 8Gi, vcore: 4}
queues: [a]
applications: {count: 2, asks: 3, memory: 1Gi, vcore: 1, priority: 0, run_time: [50, 100]}
arrival: {pattern: burst}
late_tenant: {count: 1, queue: b, guaranteed: {vcore: 2}, start: 10, asks: 2, memory: 1Gi, vcore: 1,
              run_time: 1, preemption_delay: 3s}
"""


def test_late_tenant_file_without_preemption_never_reaches_its_guarantee(tmp_path: Path) -> None:
    # B's two 1 s tasks, without preemption, run one after the other as A's tasks end.
    workload = tmp_path / "late.yaml"
    workload.write_text(LATE_TENANT, encoding="utf-8")
    done = simulate(str(workload), "--policy", "binpacking", "--no-progress")
    assert done.returncode == 0, done.stderr
    assert _row(done.stdout, "") == ["binpacking, preemption on", "binpacking, preemption off"]
    assert _row(done.stdout, "late tenant: time to its guarantee") == ["3.00 s", "never within the run"]
    assert _row(done.stdout, "preempted allocations") == ["2", "0"]
    assert _row(done.stdout, "work lost (vcore-s / memory GiB-s)") == ["26 / 26", "0 / 0"]
    broken = tmp_path / "broken.yaml"
    broken.write_text(LATE_TENANT.replace("guaranteed: {vcore: 2}", "guaranteed: {vcore: 3}"), encoding="utf-8")
    done = simulate(str(broken), "--no-progress")
    assert done.returncode == 1
    assert "broken.yaml: late_tenant.guaranteed: more than all the tenant's asks together" in done.stderr
