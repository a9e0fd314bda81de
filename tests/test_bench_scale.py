"""``python -m benchmarks scale``: the --quick run (a subprocess, as ``make bench`` runs it)
reports a rate and the resident memory per node, application, ask and allocation. No timing
or memory assertions: the machine is shared, the figures go to docs/benchmarks.md."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks import scale
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
