"""Smoke tests of the REST benchmarks and the load test: they run, on a real served scheduler,
and produce sane figures. No timing is asserted (benchmarks.md: the suite never fails on one).

- ``python -m benchmarks rest --quick`` in a subprocess: every section of its JSON has
  positive numbers, every event of the timed runs reached every stream.
- ``loadtests/run.py`` (what ``make loadtest`` runs): locust headless for ~5 s with 2 users
  against ``pyscheduler serve --demo`` on 127.0.0.1: requests happened, none failed, and the
  server it started is gone afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent

import pyscheduler_web  # noqa: E402,F401  (installed by `make test`: fail, never skip)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env.pop("PYSCHEDULER_BIND", None)
    return env


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def _run_quick(family: str, tmp_path: Path, timeout: float = 200) -> tuple[dict[str, Any], str]:
    """``python -m benchmarks FAMILY --quick --json``: the family's results and the printed tables."""
    out = tmp_path / f"{family}.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", family, "--quick", "--json", str(out)],
        cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=timeout, check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results: dict[str, Any] = json.loads(out.read_text())["results"][family]
    return results, done.stdout


@pytest.mark.timeout(240)
def test_rest_benchmark_quick(tmp_path: Path) -> None:
    rest, printed = _run_quick("rest", tmp_path)
    assert rest["failures"] == [] and rest["quick"] is True

    batch = rest["batch"]
    assert batch["ring_events"] >= batch["count"] > 0
    assert {r["encoding"] for r in batch["results"]} == {"identity", "gzip"}
    for result in batch["results"]:
        assert _positive(result["body_bytes"])
        for timing in (result["server"], result["client"]):
            assert timing["samples"] == batch["repeats"]
            assert all(_positive(timing[k]) for k in ("median_ms", "p95_ms", "min_ms", "max_ms"))
    assert _positive(batch["batch_body"]["median_ms"]) and _positive(batch["batch_body_bytes"])

    replay = rest["replay"]
    assert len(replay["seconds"]) == replay["repeats"] and all(_positive(s) for s in replay["seconds"])
    assert _positive(replay["events_per_second"]) and _positive(replay["body_bytes"])

    sched = rest["scheduling"]
    assert {r["streams"] for r in sched["runs"]} == {0, sched["streams"]}
    for run in sched["runs"]:
        assert run["error"] is None
        assert run["allocations"] == sched["asks"]
        assert _positive(run["rate"]) and _positive(run["seconds"]) and _positive(run["events_stored"])
        if run["streams"]:
            # Every stream read the run's events, unless the server cut it for falling behind
            # (a loaded machine: that is a figure, not a failure).
            assert run["delivered_max"] == run["events_stored"]
            assert run["delivered_min"] == run["events_stored"] or run["streams_cut"] > 0
    assert _positive(sched["rate_without_streams"]) and _positive(sched["rate_with_streams"])
    assert _positive(sched["ratio"])
    assert "## REST" in printed and "Stream replay" in printed


@pytest.mark.timeout(180)
def test_locust_headless_against_the_demo(tmp_path: Path) -> None:
    out = tmp_path / "loadtest.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "loadtests" / "run.py"), "--users", "2", "--spawn-rate", "2",
         "--run-time", "5s", "--json", str(out)],
        cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=150, check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    summary = json.loads(out.read_text())
    total = next(r for r in summary["stats"] if r["name"] == "Aggregated")
    assert total["requests"] > 0 and total["failures"] == 0, summary
    assert summary["failures"] == [] and summary["locust_exit_code"] == 0
    # The server it started stopped cleanly and logged no error.
    assert summary["server_exit_code"] == 0 and summary["server_error_lines"] == 0
    assert summary["host"].startswith("http://127.0.0.1:")
    assert "requests/s" in done.stdout


@pytest.mark.timeout(240)
def test_rest_polling_benchmark_quick(tmp_path: Path) -> None:
    polling, printed = _run_quick("rest-polling", tmp_path)
    assert polling["failures"] == [] and polling["quick"] is True
    assert {r["pollers"] for r in polling["runs"]} == {0, polling["pollers"]} == {0, 4}
    for run in polling["runs"]:
        assert run["error"] is None and run["allocations"] == polling["asks"]
        assert _positive(run["rate"])
        if run["pollers"]:
            # The pollers read real answers (the run itself may be shorter than one paced answer).
            assert run["requests"] >= 0 and _positive(run["megabytes"])
    assert _positive(polling["ratio"])
    assert "Scheduling while 4 REST clients poll" in printed


@pytest.mark.timeout(480)
def test_hostile_clients_benchmark_quick(tmp_path: Path) -> None:
    report, printed = _run_quick("hostile-clients", tmp_path, timeout=440)
    assert report["failures"] == [] and report["quick"] is True
    kinds = [r["kind"] for r in report["runs"]]
    assert kinds == ["none", "idle", "half a request head", "body never completes", "answers never read",
                     "kept alive after one request", "kept alive past the cap",
                     # Issue 31.
                     "N1 second head trickled", "N2 big answers never read", "N3 expect 100-continue, no body",
                     "N4 one address past its cap", "N5 bare LF request lines", "N6 huge chunk size",
                     "N7 raw UTF-8 in the query"]
    for run in report["runs"]:
        assert run["worker_survived"] is True and _positive(run["rate"]) and _positive(run["health_max_ms"])
        assert run["sockets"] == (0 if run["kind"] == "none" else report["sockets"])
        assert run["restarts"] == 0 and run["rounds"] == (1 if run["kind"] == "none" else 2)
        # Past the cap a health check may meet a full cap: then the worker's 503, at once.
        allowed = {200, 503} if run["kind"] == "kept alive past the cap" else {200}
        assert run["statuses"] and set(run["statuses"]) <= allowed
    # What the misbehaving sockets themselves got, every one of them.
    got = {r["kind"]: r["answers"] for r in report["runs"]}
    sockets = report["sockets"]
    assert got["N3 expect 100-continue, no body"] == {"100": sockets}
    assert got["N5 bare LF request lines"] == {"400": sockets}
    assert got["N6 huge chunk size"] == {"413": sockets}
    assert got["N7 raw UTF-8 in the query"] == {"400": sockets}
    assert got["N4 one address past its cap"]["503"] > 0
    assert "The serving path under hostile clients" in printed
