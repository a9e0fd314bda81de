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
