"""``python -m benchmarks gang --quick``: both shapes measure something (no timing assertions:
the machine is shared), and in the gang shape every ask really takes a placeholder's place."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks.__main__ import FAMILIES
from benchmarks.scheduling import GANG_SHAPE, build


def test_quick_run_reports_both_shapes(tmp_path: Path) -> None:
    assert "gang" in FAMILIES
    out = tmp_path / "gang.json"
    done = subprocess.run([sys.executable, "-m", "benchmarks", "gang", "--quick", "--json", str(out)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "## Gang scheduling" in done.stdout
    report = json.loads(out.read_text(encoding="utf-8"))["results"]["gang"]
    assert report["failures"] == []
    assert set(report["rates"]) == {"many-queues-gang", "many-queues"} and report["pods_ratio"] > 0


def test_every_ask_of_the_gang_shape_replaces_a_placeholder() -> None:
    setup = build("fair", 50, 500, True, GANG_SHAPE)
    setup.scheduler.run_until_idle()
    partition = next(iter(setup.context.partitions.values()))
    assert setup.rm.allocated == 1000  # 500 placeholders, then 500 members
    apps = list(partition.applications.values())
    assert len(apps) == 50 and all(app.allocated_placeholder.is_zero() for app in apps)
    assert all(d.replaced == d.count == 10 for app in apps for d in app.placeholder_data.values())
    assert all(a.placeholder_used for app in apps for a in app.allocations.values())
    setup.proxy.stop()
