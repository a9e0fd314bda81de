"""``kubectl pyscheduler`` against a real served scheduler (the session server: scenario_rm.py's
queues root.a and root.b, app-running placed, app-pending too big for any node), run as the
installed console script, and found by the real ``kubectl`` binary on PATH.

The plugin is the one ``pip install -e k8s`` put in the venv's bin (``make web``); kubectl is the
one the Kubernetes tests use (on PATH).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from web_helpers import Server

PLUGIN = Path(sys.executable).parent / "kubectl-pyscheduler"
KUBECTL = shutil.which("kubectl")


def plugin(*args: str, env: dict[str, str] | None = None, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(PLUGIN), *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def ok(*args: str, env: dict[str, str] | None = None) -> str:
    done = plugin(*args, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_console_script_is_installed_with_the_k8s_package() -> None:
    assert PLUGIN.is_file() and os.access(PLUGIN, os.X_OK), "make web installs k8s/ with its console script"


def test_queues_print_the_tree_with_bars(server: Server) -> None:
    lines = ok("queues", "--server", server.url).split("\n")
    assert lines[0].startswith("root  1 running app, pending vcore 1, memory 64Gi")
    assert "├── a  1 running app" in lines
    assert "└── b  0 running apps, pending vcore 1, memory 64Gi" in lines
    # root.b's own max (16 vcore), nothing used; root.a's limit is what the root leaves it.
    assert "        vcore   [....................]        0 of 16 max (0%)" in lines
    assert any(line.startswith("│       vcore   [####") and line.endswith("of 8 limit (19%)") for line in lines)
    # -o json is the API's own answer.
    assert json.loads(ok("queues", "--server", server.url, "-o", "json")) == server.get(
        "/ws/v1/partition/default/queues").json()


def test_the_server_comes_from_the_environment_too(server: Server) -> None:
    assert ok("queues", "--resources", "vcore", env={"PYSCHEDULER_URL": server.url}).count("vcore  [") == 3


def test_top_ranks_queues_and_nodes(server: Server) -> None:
    lines = ok("--server", server.url, "top", "--limit", "1").strip().split("\n")
    assert lines[2].split()[:2] == ["root.a", "19%"]
    assert lines[6].split()[:3] == ["node-1", "25%", "1/4"]
    assert len(lines) == 7


def test_events_print_the_last_ones_one_line_each(server: Server) -> None:
    # The session server's ring may have been made anew by another test's settings: fill it.
    server.add_events(4)
    lines = ok("events", "--server", server.url, "--count", "4").strip().split("\n")
    highest = server.get("/ws/v1/events/batch?count=1").json()["HighestID"]
    last = server.get(f"/ws/v1/events/batch?start={highest - 3}&count=4").json()["EventRecords"]
    assert len(lines) == 4
    for line, record in zip(lines, last):
        assert record["objectID"] in line


def test_events_follow_the_stream_until_count(server: Server) -> None:
    before = server.state()["subscribers"]
    process = subprocess.Popen([str(PLUGIN), "events", "-f", "--count", "3", "--server", server.url],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # Live events only (no history asked): once it subscribed, the three added are what it prints.
        assert server.wait_for(lambda state: state["subscribers"] > before, timeout=10)["subscribers"] > before
        server.add_events(3)
        out, err = process.communicate(timeout=20)
    finally:
        process.kill()
    assert process.returncode == 0, err
    lines = out.strip().split("\n")
    assert len(lines) == 3 and all(" QUEUE " in line for line in lines), out


def test_events_follow_replays_history_as_json(server: Server) -> None:
    out = ok("events", "-f", "--history", "2", "--count", "2", "-o", "json", "--server", server.url)
    records = [json.loads(line) for line in out.strip().split("\n")]
    assert len(records) == 2 and all("timestampNano" in r for r in records)


def test_why_an_application(server: Server) -> None:
    lines = ok("why", "app/app-pending", "--server", server.url).split("\n")
    assert lines[0] == "Application app-pending in queue root.b (partition default): Accepted"
    assert "Position: 1st of 1 in root.b, 1st of 1 in the partition" in lines
    assert "Ask big-1 needs vcore 1, memory 64Gi" in lines
    assert any(line.startswith("  Stopped by QUEUE_MAX (its queue's max): ") for line in lines)
    assert "  Nodes: 0 of 2 nodes would take it; refused: 2 not enough memory" in lines
    answer = json.loads(ok("why", "app/app-pending", "--server", server.url, "-o", "json", "--no-nodes"))
    assert answer["asks"][0]["code"] == "QUEUE_MAX" and answer["asks"][0]["nodes"] is None


def test_an_unknown_application_is_an_error_with_the_servers_message(server: Server) -> None:
    done = plugin("why", "app/no-such-app", "--server", server.url)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == "error: 404: Application not found\n"


def test_an_unreachable_server_is_an_error() -> None:
    done = plugin("queues", "--server", "http://127.0.0.1:9")
    assert done.returncode == 1 and "cannot reach the scheduler at http://127.0.0.1:9" in done.stderr


def test_position_lists_the_pending_order_and_one_application(server: Server) -> None:
    lines = ok("position", "--server", server.url).strip().split("\n")
    assert lines[1].split()[:4] == ["1", "1", "app-pending", "root.b"]
    assert ok("position", "app/app-pending", "--server", server.url).strip() == (
        "Application app-pending is 1st in queue root.b and 1st in the partition, pending vcore 1, memory 64Gi.")
    assert "has no pending ask" in ok("position", "app/app-running", "--server", server.url)


def test_preempted_names_the_preemptor(start_server: Callable[..., Server]) -> None:
    server = start_server(["--rm", "preemption_rm:attach"])
    server.request("POST", "/test/preempt/fill?count=2")
    released = server.request("POST", "/test/preempt/ask").json()
    assert len(released) == 1
    before = ok("preempted", "app/busy", "--allocation-key", released[0], "--server", server.url).split("\n")
    assert before[0].startswith(f"Allocation {released[0]} of application busy (queue root.busy) was preempted ")
    assert before[0].endswith("of application starved (queue root.starved) under rule GUARANTEED.")
    assert before[1] == "  The RM has not confirmed it gone yet."
    server.request("POST", f"/test/preempt/confirm?key={released[0]}")
    after = ok("preempted", "app/busy", "--allocation-key", released[0], "--server", server.url).split("\n")
    assert after[1] == "  It is gone."
    done = plugin("preempted", "app/busy", "--server", server.url)
    assert done.returncode == 1 and "--allocation-key" in done.stderr


@pytest.mark.parametrize("command", ["", "queues", "top", "events", "why", "position", "preempted"])
def test_every_command_has_help(command: str) -> None:
    out = ok(*([command] if command else []), "--help")
    assert out.startswith("usage: kubectl pyscheduler") and "--server URL" in out


def test_a_wrong_target_is_a_usage_error() -> None:
    done = plugin("why", "deployment/web", "--server", "http://127.0.0.1:9")
    assert done.returncode == 2 and "expected POD, pod/NAME, job/NAME or app/ID" in done.stderr


def test_the_real_kubectl_finds_the_plugin(server: Server, tmp_path: Path) -> None:
    assert KUBECTL is not None, "kubectl must be on PATH (the machine's, as for the Kubernetes tests)"
    # Only the venv's bin and kubectl's own directory: what a user's PATH holds after pip install.
    path = os.pathsep.join([str(PLUGIN.parent), str(Path(KUBECTL).parent)])
    env = {**os.environ, "PATH": path, "HOME": str(tmp_path)}
    listed = subprocess.run([KUBECTL, "plugin", "list"], capture_output=True, text=True, env=env, timeout=30)
    assert str(PLUGIN) in listed.stdout, listed.stdout + listed.stderr
    through = subprocess.run([KUBECTL, "pyscheduler", "queues", "--server", server.url], capture_output=True,
                             text=True, env=env, timeout=30)
    assert through.returncode == 0, through.stderr
    assert through.stdout == ok("queues", "--server", server.url)
    why = subprocess.run([KUBECTL, "pyscheduler", "why", "app/app-pending", "--server", server.url],
                         capture_output=True, text=True, env=env, timeout=30)
    assert why.returncode == 0 and "Ask big-1 needs vcore 1, memory 64Gi" in why.stdout, why.stderr
