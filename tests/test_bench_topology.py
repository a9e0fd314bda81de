"""``python -m benchmarks topology --quick``: both variants measure something (no timing
assertions: the machine is shared), every gang requiring a rack lands inside one, and the full
shape is the issue's (5,000 nodes, 100 racks of 50, 10 blocks)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks.__main__ import FAMILIES
from benchmarks.topology import PLAIN, TAGGED, bench_spec


def test_quick_run_reports_both_variants_and_the_ratio(tmp_path: Path) -> None:
    assert "topology" in FAMILIES
    out = tmp_path / "topology.json"
    done = subprocess.run([sys.executable, "-m", "benchmarks", "topology", "--quick", "--json", str(out)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "## Topology-aware gang placement" in done.stdout
    report = json.loads(out.read_text(encoding="utf-8"))["results"]["topology"]
    assert report["failures"] == [] and report["spread_required"] == 0
    assert set(report["rates"]) == {TAGGED, PLAIN} and report["ratio"] > 0
    assert report["nodes"] == 500 and report["gangs"] == 100


def test_the_full_shape_is_5000_nodes_in_100_racks_of_50_and_10_blocks() -> None:
    topology = bench_spec(quick=False).topology
    assert topology.node_count == 5_000 and topology.nodes == 50
    assert topology.zones * topology.blocks == 10 and topology.zones * topology.blocks * topology.racks == 100
    assert all(kind.level == 2 for kind in topology.mix)  # every gang requires a rack
