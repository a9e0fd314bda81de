"""``python -m benchmarks preemption --quick``: every part measures something (no timing
assertions: the machine is shared), the uniform cluster preempts on every attempt, and the
shape with preemption armed really never preempts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks.__main__ import FAMILIES
from benchmarks.preemption import measure_decisions
from benchmarks.scheduling import PREEMPTION_ON_SHAPE, build


def test_quick_run_reports_every_part(tmp_path: Path) -> None:
    assert "preemption" in FAMILIES
    out = tmp_path / "preemption.json"
    done = subprocess.run([sys.executable, "-m", "benchmarks", "preemption", "--quick", "--json", str(out)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "## Preemption" in done.stdout
    report = json.loads(out.read_text(encoding="utf-8"))["results"]["preemption"]
    assert report["failures"] == []
    assert set(report["decisions"]) == {"uniform", "fragmented"}
    for decision in report["decisions"].values():
        assert decision["attempts"] > 0 and 0 < decision["median"] <= decision["p99"] <= decision["max"]
    assert set(report["rates"]) == {"many-queues-preemption", "many-queues-preemption-off"} and report["ratio"] > 0


def test_every_uniform_attempt_preempts_one_victim_and_places_the_ask() -> None:
    found = measure_decisions("uniform", 60, 12, lambda message: None)
    assert found["allocations"] == 600
    assert found["attempts"] == found["preemptions"] == found["victims"] == 12
    assert found["placed"] == 11  # the last ask waits for the next cycle


def test_the_armed_shape_never_needs_preemption() -> None:
    setup = build("fair", 50, 500, True, PREEMPTION_ON_SHAPE)
    setup.scheduler.run_until_idle()
    partition = next(iter(setup.context.partitions.values()))
    assert partition.preemption_enabled and setup.rm.allocated == 500
    assert partition.preemption_attempts == 0 and partition.preemptions == 0
    leaf = partition.get_queue("root.p0.l0")
    assert leaf is not None and leaf.guaranteed is not None
