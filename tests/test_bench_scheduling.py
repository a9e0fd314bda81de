"""``pyscheduler bench scheduling``: the --quick run (through a subprocess, as ``make bench``
runs it) reports every case with positive rates. No timing assertions: the machine is shared."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks import scheduling
from benchmarks.__main__ import FAMILIES


def test_registered_as_a_family() -> None:
    assert "scheduling" in FAMILIES


def test_quick_run_reports_every_case(tmp_path: Path) -> None:
    out = tmp_path / "sched.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "scheduling", "--quick", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Scheduling throughput" in done.stdout and "vs Go 5,400/s" in done.stdout
    report = json.loads(out.read_text(encoding="utf-8"))["results"]["scheduling"]
    assert report["failures"] == []
    cases = {(c["policy"], c["nodes"], c["ordering"]): c for c in report["cases"]}
    expected = {
        (policy, nodes, ordering)
        for policy in scheduling.POLICIES
        for nodes in scheduling.QUICK_NODES
        for ordering in scheduling.ORDERINGS
    }
    assert set(cases) == expected
    for case in cases.values():
        assert case["asks"] == scheduling.QUICK_ASKS
        assert case["threaded_rate"] > 0 and case["lockstep_rate"] > 0
        assert case["error"] is None
        assert case["events"] > 0  # event tracking was on during the timed run
        for sample in case["samples"]:
            assert sample["threaded"]["allocations"] == sample["lockstep"]["allocations"] == scheduling.QUICK_ASKS


def test_in_process_case_counts_every_allocation() -> None:
    # The worker's measurement without a subprocess: small, so it only checks the plumbing.
    result = scheduling.measure_case("binpacking", nodes=10, asks=200, native=False, timeout=30)
    for mode in ("threaded", "lockstep"):
        assert result[mode]["error"] is None
        assert result[mode]["allocations"] == 200 and result[mode]["rate"] > 0


def test_pyscheduler_bench_says_where_the_benchmarks_are() -> None:
    # The benchmarks are not in the installed package: the command points to them.
    done = subprocess.run(
        [sys.executable, "-m", "pyscheduler.cli", "bench", "scheduling", "--quick"],
        capture_output=True, text=True, timeout=60, cwd="/",
    )
    assert done.returncode == 2
    assert "make bench" in done.stderr and "python -m benchmarks scheduling --quick" in done.stderr


def test_help_lists_every_family() -> None:
    # argparse expands % in help texts: a stray one made --help crash.
    done = subprocess.run([sys.executable, "-m", "benchmarks", "--help"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    for family in FAMILIES:
        assert family in done.stdout
