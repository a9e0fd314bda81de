"""``python -m benchmarks yunikorn-go``: YuniKorn's Go core, built from the Go module proxy at the
version benchmarks/yunikorn_go/go.mod pins, and this core on the same shapes, alternating. The
--quick run (a subprocess, as ``make bench`` runs it) must place every ask on both cores and
report both rates and their ratio. No timing assertions: the figures go to docs/benchmarks.md."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks import yunikorn_go
from benchmarks.machine import Progress
from benchmarks.__main__ import FAMILIES


def test_quick_run_measures_both_cores_on_every_shape(tmp_path: Path) -> None:
    assert "yunikorn-go" in FAMILIES
    out = tmp_path / "go.json"
    done = subprocess.run([sys.executable, "-m", "benchmarks", "yunikorn-go", "--quick", "--json", str(out)],
                          capture_output=True, text=True, timeout=1500, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "YuniKorn's Go core side by side" in done.stdout
    report = json.loads(out.read_text(encoding="utf-8"))["results"]["yunikorn-go"]
    assert report["failures"] == [] and report["yunikorn_core"].startswith("v")
    shapes = [(c["shape"], c["policy"], c["nodes"]) for c in report["comparisons"]]
    assert shapes == [tuple(case) for case in yunikorn_go.QUICK_CASES]
    for comparison in report["comparisons"]:
        assert len(comparison["yunikorn"]) == len(comparison["pyscheduler"]) == 1
        assert comparison["ratio"] > 0


def test_the_go_program_refuses_bad_arguments() -> None:
    """The Go side checks its input like any command: a clear message and exit status 1."""
    binary = yunikorn_go.build(Progress())
    done = subprocess.run([str(binary), "-shape", "circle", "-asks", "-1"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 1 and "bad arguments" in done.stderr
