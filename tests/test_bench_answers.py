"""``python -m benchmarks answers --quick``: every part of the family measures something (no
timing assertions: the machine is shared), the full sizes are the issue's (5,000 nodes, 100,000
asks, a 10-ask what-if, 4 clients), and the why clients' loops end on their own bounds."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import why as why_bench
from benchmarks.__main__ import FAMILIES
from benchmarks.answers import CLIENTS, WhyClients, percentile, sizes


def test_quick_run_reports_why_whatif_and_the_scheduling_ratio(tmp_path: Path) -> None:
    assert "answers" in FAMILIES
    out = tmp_path / "answers.json"
    done = subprocess.run([sys.executable, "-m", "benchmarks", "answers", "--quick", "--json", str(out)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "## Answers (issue 35)" in done.stdout and "load average at start" in done.stdout
    report = json.loads(out.read_text(encoding="utf-8"))["results"]["answers"]
    assert report["failures"] == []
    # (a) three applications, with and without the grouping, every call timed, every ask pending
    quick = sizes(quick=True)
    assert [(r["application"], r["nodes"]) for r in report["why"]] == [
        (app, nodes) for app in ("app-0", "app-25", "app-49") for nodes in (True, False)]
    for row in report["why"]:
        assert len(row["times_ms"]) == quick.why_calls and all(t > 0 for t in row["times_ms"])
        assert row["pending_asks"] == quick.why_asks_per_app and row["in_partition"] >= 1
    assert all(0 < r["median_ms"] <= r["p99_ms"] for r in report["why_summary"])
    # (b) both states answered in full: the application fits, placed now after its cycles
    assert [(r["running"], r["pending"]) for r in report["whatif"]] == [(2_000, 0), (800, 2_000)]
    assert all(r["placed_now"] and r["cycles"] > 0 and r["times_s"][0] > 0 for r in report["whatif"])
    # (c) runs alone and with the clients, who got answers during the timed run
    assert sorted(r["clients"] for r in report["runs"]) == [0, CLIENTS]
    assert all(r["rate"] > 0 for r in report["runs"]) and report["ratio"] > 0
    busy = next(r for r in report["runs"] if r["clients"])
    assert busy["answers"] == len(busy["answer_ms"]) > 0 and busy["clients_cpu_seconds"] > 0


def test_the_full_sizes_are_the_issues() -> None:
    full = sizes(quick=False)
    assert full.why_nodes == 5_000 and full.why_apps * full.why_asks_per_app == 100_000
    assert full.whatif_nodes == 5_000 and any(pending == 100_000 for _, _, pending, _ in full.whatif_states)
    assert any(running == 100_000 for _, running, _, _ in full.whatif_states)
    assert full.sched_nodes == 5_000 and full.sched_asks == 100_000 and full.repeats == 3 and CLIENTS == 4


def test_why_clients_stop_at_their_call_bound() -> None:
    context, proxy = why_bench.build(20, 6, 5)
    try:
        clients = WhyClients(context, [f"app-{i}" for i in range(6)], 3, max_calls=4,
                             deadline=time.monotonic() + 60)
        clients.start(timeout=30)
        for _ in range(300):  # they end on their own: no stop()
            if not clients.running():
                break
            time.sleep(0.01)
        assert clients.running() == 0
        # The first answer of each is before counting starts; the other 3 are counted.
        assert clients.answers == 3 * 3 and clients.answers_pending == 9 and not clients.errors
    finally:
        proxy.stop()


def test_percentile_is_the_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.99) == 99.0 and percentile(values, 0.5) == 50.0
    assert percentile([3.0], 0.99) == 3.0 and percentile([5.0, 1.0], 0.99) == 5.0
