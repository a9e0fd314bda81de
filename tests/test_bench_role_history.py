"""``python -m benchmarks role-history --quick``: every part measures something (no timing
assertions: the machine is shared), and the roles shape really places on history nodes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks.__main__ import FAMILIES
from benchmarks.scheduling import ROLES_SHAPE, build


def test_quick_run_reports_every_part(tmp_path: Path) -> None:
    assert "role-history" in FAMILIES
    out = tmp_path / "rh.json"
    done = subprocess.run([sys.executable, "-m", "benchmarks", "role-history", "--quick", "--json", str(out)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "## Role history" in done.stdout
    report = json.loads(out.read_text(encoding="utf-8"))["results"]["role-history"]
    assert report["failures"] == []
    assert report["choose_us"]["p99"] > 0 and report["save_ms"]["median"] > 0 and report["file_bytes"] > 0
    assert 0 < report["snapshot_ms"]["longest_hold"] <= report["snapshot_ms"]["first"]
    assert set(report["rates"]) == {"many-queues", "many-queues-roles"} and report["ratio"] > 0


def test_the_roles_shape_places_every_ask_on_its_history_node() -> None:
    setup = build("fair", 50, 500, True, ROLES_SHAPE)
    setup.scheduler.run_until_idle()
    histories = next(iter(setup.context.partitions.values())).role_histories
    assert (histories.history_placements, histories.other_placements) == (500, 0)
