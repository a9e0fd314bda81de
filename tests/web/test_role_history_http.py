"""Role history through a served scheduler: the REST view, the metrics, the serve options, and a
scheduler stopped and started again on the same history directory whose roles come back to
their nodes (role_rm.py is the embedded RM)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from web_helpers import Server, _server_env

ROLE_RM = ["--rm", "role_rm:attach"]


def metric(server: Server, name: str) -> float:
    text = server.get("/ws/v1/metrics").text
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "_total "):
            return float(line.split()[1])
    raise AssertionError(f"no metric {name}")


def test_role_history_view_save_and_restart(start_server: Callable[..., Server], tmp_path: Path) -> None:
    history_dir = tmp_path / "history"
    args = [*ROLE_RM, "--role-history-dir", str(history_dir), "--role-history-save-delay", "0.1"]
    first = start_server(args)
    placed = first.request("POST", "/test/roles/start?app=hbase-1&key=hbase&role=region&count=3").json()
    view = first.get("/ws/v1/partition/default/rolehistory/hbase").json()
    assert view["partition"] == "default" and view["historyKey"] == "hbase"
    assert {n: v["roles"]["region"]["live"] for n, v in view["nodes"].items()} == {n: 1 for n in placed.values()}
    assert view["recent"] == {"region": []} and view["targets"] == []
    assert metric(first, "pyscheduler_role_history_placements_elsewhere") == 3

    first.request("POST", "/test/roles/stop?app=hbase-1")
    view = first.get("/ws/v1/partition/default/rolehistory/hbase").json()
    assert sorted(view["recent"]["region"]) == sorted(placed.values())
    assert all(v["roles"]["region"]["live"] == 0 and v["roles"]["region"]["lastUsed"] > 0 for v in view["nodes"].values())

    assert first.get("/ws/v1/partition/default/rolehistory/nothing").status_code == 404
    assert first.get("/ws/v1/partition/default/rolehistory/nothing").json()["message"] == "Role history not found"
    assert first.get("/ws/v1/partition/nowhere/rolehistory/hbase").status_code == 404
    first.process.terminate()
    first.process.wait(20)
    assert first.process.returncode == 0
    assert list((history_dir / "default").glob("rolehistory-*.json")), "saved by the time it stopped"

    # A new scheduler on the same directory: the resubmitted service comes back to its nodes.
    second = start_server(args)
    again = second.request("POST", "/test/roles/start?app=hbase-2&key=hbase&role=region&count=3").json()
    assert sorted(again.values()) == sorted(placed.values())
    assert metric(second, "pyscheduler_role_history_placements_history_node") == 3
    assert metric(second, "pyscheduler_role_history_saves") >= 0
    assert metric(second, "pyscheduler_role_history_save_errors") == 0


def test_bad_role_history_options_stop_serve_before_it_starts(tmp_path: Path) -> None:
    for args, message in [
        (["--role-history-dir", "nosuchprotocol://x"], "role history"),
        (["--role-history-dir", str(tmp_path), "--role-history-keep", "0"], "keep must be at least 1"),
        (["--role-history-dir", str(tmp_path), "--role-history-max-age", "soon"], "not a duration"),
        (["--role-history-dir", str(tmp_path), "--role-history-save-delay", "0"], "save delay must be positive"),
    ]:
        done = subprocess.run([sys.executable, "-m", "pyscheduler.cli", "serve", "--bind", "127.0.0.1:1", *args],
                              capture_output=True, text=True, timeout=60, env=_server_env())
        assert done.returncode == 2 and message in done.stderr, (args, done.stderr)
