"""``python -m benchmarks scale``: the --quick run (a subprocess, as ``make bench`` runs it)
reports a rate and the resident memory per node, application, ask and allocation. No timing
or memory assertions: the machine is shared, the figures go to docs/benchmarks.md."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import scale
from benchmarks.baseline import BaselineError, baseline_environment
from benchmarks.__main__ import FAMILIES


def test_quick_run_reports_rate_and_memory(tmp_path: Path) -> None:
    assert "scale" in FAMILIES
    out = tmp_path / "scale.json"
    done = subprocess.run([sys.executable, "-m", "benchmarks", "scale", "--quick", "--json", str(out)],
                          capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Scale shape" in done.stdout and "resident bytes per node" in done.stdout
    report = json.loads(out.read_text(encoding="utf-8"))["results"]["scale"]
    assert report["failures"] == []
    (run,) = report["runs"]
    assert run["allocations"] == scale.QUICK_ASKS and run["error"] is None and run["events"] > 0
    assert list(run["resident"]) == list(scale.STEPS)
    assert report["median_rate"] > 0 and report["peak_resident"] >= run["resident"]["asks"]
    # Nodes, applications and asks each take memory (a measurement that read nothing would be 0).
    assert all(report["per_item"][step] > 0 for step in ("nodes", "applications", "asks"))


ROOT = Path(__file__).resolve().parent.parent


def test_a_worker_reports_its_own_peak_not_its_parents() -> None:
    """Linux carries ru_maxrss across execve: a worker started by a process holding 300 MiB
    reported 300 MiB. The peak is the worker's own."""
    held = b"\x01" * (300 << 20)  # every page written: resident
    code = "from benchmarks.scale import peak_resident_bytes; print(peak_resident_bytes())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True,
                          cwd=ROOT)
    assert int(done.stdout) < 200 << 20 < len(held)


def test_a_baseline_core_runs_alternating_and_gives_a_ratio(tmp_path: Path) -> None:
    # This checkout is its own baseline here (a built core); the report has both sides and a ratio.
    out = tmp_path / "scale.json"
    done = subprocess.run([sys.executable, "-m", "benchmarks", "scale", "--quick", "--baseline", str(ROOT),
                           "--json", str(out)], capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "this core / baseline" in done.stdout
    report = json.loads(out.read_text(encoding="utf-8"))["results"]["scale"]
    assert len(report["baseline_runs"]) == len(report["runs"]) == 1
    assert report["baseline_runs"][0]["allocations"] == scale.QUICK_ASKS
    assert report["baseline_ratio"] > 0


def test_the_scheduling_benchmark_compares_many_queues_with_a_baseline() -> None:
    done = subprocess.run([sys.executable, "-m", "benchmarks", "scheduling", "--quick", "--shapes", "many-queues",
                           "--baseline", str(ROOT)], capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Against the baseline {ROOT}" in done.stdout


def test_a_baseline_without_a_built_core_is_refused(tmp_path: Path) -> None:
    (tmp_path / "pyscheduler").mkdir()
    (tmp_path / "pyscheduler" / "__init__.py").write_text("")
    for directory, says in ((tmp_path / "nothing", "no pyscheduler package"), (tmp_path, "no built native module")):
        done = subprocess.run([sys.executable, "-m", "benchmarks", "scale", "--quick", "--baseline", str(directory)],
                              capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 2 and says in done.stderr, done.stderr


def test_a_worker_started_from_this_checkout_drives_the_baseline_core(tmp_path: Path) -> None:
    """The workers run as ``python -m`` from this checkout (as ``make bench`` runs them), which
    puts the working directory first on the path: without PYTHONSAFEPATH they imported this
    checkout's core and measured it against itself. A copy of the core that leaves a mark when
    imported shows which one the worker really drove."""
    copy = tmp_path / "baseline" / "pyscheduler"
    shutil.copytree(ROOT / "pyscheduler", copy, ignore=shutil.ignore_patterns("__pycache__"))
    marker = tmp_path / "imported"
    with (copy / "__init__.py").open("a", encoding="utf-8") as init:
        init.write(f"\nopen({str(marker)!r}, 'w').write(__file__)\n")
    env = baseline_environment(tmp_path / "baseline")
    done = subprocess.run([sys.executable, "-m", "benchmarks.instructions", "--worker", "--shape", "yunikorn",
                           "--nodes", "2", "--asks", "4", "--allocations", "4"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert Path(marker.read_text(encoding="utf-8")).resolve().parent == copy.resolve()


def test_a_baseline_that_would_not_be_imported_is_refused(tmp_path: Path) -> None:
    """The environment is checked before use: a package that fails to import is refused with
    the reason instead of running the workers on some other core."""
    broken = tmp_path / "pyscheduler"
    shutil.copytree(ROOT / "pyscheduler", broken, ignore=shutil.ignore_patterns("__pycache__"))
    (broken / "__init__.py").write_text("raise ImportError('this core does not load')\n", encoding="utf-8")
    with pytest.raises(BaselineError, match="cannot import pyscheduler"):
        baseline_environment(tmp_path)
