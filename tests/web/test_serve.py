"""``pyscheduler serve`` and the process model: the demo, one worker whatever the overrides,
streams that outlive the worker timeout, a clean shutdown with open streams, and the
command's messages (web package missing, bad configuration)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from web_helpers import ROOT, Server, StreamClient, stop


def run_cli(args: list[str], prelude: str = "", timeout: float = 60) -> subprocess.CompletedProcess[str]:
    code = f"import sys\n{prelude}\nfrom pyscheduler.cli import main\nsys.exit(main({args!r}))\n"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def test_serve_without_the_web_package_says_how_to_install_it() -> None:
    # The package made unimportable, as in an environment where it was never installed.
    result = run_cli(["serve", "--demo"], prelude="sys.modules['pyscheduler_web'] = None")
    assert result.returncode == 1
    assert "pip install 'pyscheduler[web]'" in result.stderr
    assert "pyscheduler-web" in result.stderr
    assert result.stdout == ""


def test_serve_with_a_broken_dependency_names_it() -> None:
    result = run_cli(["serve"], prelude="sys.modules['gunicorn'] = None")
    assert result.returncode == 1
    assert "gunicorn" in result.stderr and "pyscheduler[web]" in result.stderr


def test_serve_rejects_a_bad_configuration_before_starting(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("partitions:\n  - name: default\n    bogus: 1\n")
    result = run_cli(["serve", "--config", str(bad)])
    assert result.returncode == 1
    assert "bogus" in result.stderr
    missing = run_cli(["serve", "--config", str(tmp_path / "missing.yaml")])
    assert missing.returncode == 2
    assert "cannot read" in missing.stderr


def test_serve_rejects_an_unknown_rm_module() -> None:
    result = run_cli(["serve", "--rm", "no_such_module_here:attach"])
    assert result.returncode == 2
    assert "no module named 'no_such_module_here'" in result.stderr


def test_serve_help_lists_the_options() -> None:
    result = run_cli(["serve", "--help"])
    assert result.returncode == 0
    for option in ("--config", "--bind", "--demo", "--rm"):
        assert option in result.stdout


def test_stream_outlives_the_worker_timeout(server: Server) -> None:
    """The session server runs with a 3 s worker timeout; a 4.5 s idle stream survives it and
    the worker is never replaced (a new worker would have a new scheduler and UUID)."""
    uuid = server.get("/ws/v1/events/batch?count=1").json()["InstanceUUID"]
    with StreamClient(server.port, "/ws/v1/events/stream") as stream:
        assert json.loads(stream.read_line())["InstanceUUID"] == uuid
        time.sleep(4.5)
        server.session.close()  # the idle kept-alive connection is about to expire: a new one
        next_id = server.add_events(1)
        line = stream.read_line(timeout=5.0)
        assert json.loads(line)["message"] == "test event 0"
    assert server.get("/ws/v1/events/batch?count=1").json()["InstanceUUID"] == uuid
    assert server.state()["next_id"] >= next_id
    log = server.log()
    assert "WORKER TIMEOUT" not in log and log.count("Booting worker") == 1


def test_demo_one_worker_and_graceful_shutdown(start_server: Callable[..., Server]) -> None:
    """``serve --demo``: a busy cluster at once; gunicorn overrides cannot add workers; SIGTERM
    ends open streams with the closing line and the process exits cleanly."""
    server = start_server(["--demo"], env={"GUNICORN_CMD_ARGS": "--workers 3 --threads 8"})
    # The demo cluster: nodes, queues and applications appear within seconds.
    deadline = time.monotonic() + 20
    while True:
        (partition,) = server.get("/ws/v1/partitions").json()
        if partition["totalNodes"] == 4 and partition["applications"].get("total", 0) >= 2 and partition.get("totalContainers", 0) >= 1:
            break
        assert time.monotonic() < deadline, partition
        time.sleep(0.2)
    assert [q["queuename"] for q in server.get("/ws/v1/partition/default/queues").json()["children"]] == ["root.default"]
    assert len(server.get("/ws/v1/partition/default/nodes").json()) == 4
    # Events flow on their own.
    stream = StreamClient(server.port, "/ws/v1/events/stream?count=5")
    try:
        stream.read_line()
        assert len(stream.read_lines(8, timeout=15.0)) == 8
        # One worker (the arbiter enforces it) and a stream budget from its 8 threads.
        metrics = server.get("/ws/v1/metrics").text
        assert "pyscheduler_web_event_streams_limit 4.0" in metrics
        assert server.log().count("Booting worker") == 1
        uuids = {server.get("/ws/v1/events/batch?count=1").json()["InstanceUUID"] for _ in range(10)}
        assert len(uuids) == 1
        # SIGTERM: the open stream ends with the producer's closing line, the process exits 0.
        started = time.monotonic()
        server.process.send_signal(15)
        lines = stream.read_to_end(timeout=10.0)
        closing = json.loads(lines[-1])
        assert closing == {
            "status_code": 200,
            "message": "Event stream was closed by the producer",
            "description": "the scheduler is shutting down",
        }
        assert server.process.wait(10) == 0
        assert time.monotonic() - started < 8.0
    finally:
        stream.close()
    log = server.log()
    assert "Traceback" not in log, log
    assert stop(server) == 0


def test_history_off(start_server: Callable[..., Server]) -> None:
    server = start_server(["--no-history"])
    for path in ("/ws/v1/history/apps", "/ws/v1/history/containers"):
        r = server.get(path)
        assert r.status_code == 500
        assert r.json()["message"] == "Internal metrics collection is not enabled."
    # No RM attached: an empty cluster, and the events endpoints work.
    assert server.get("/ws/v1/partitions").json() == []
    assert server.get("/ws/v1/events/batch").json()["EventRecords"] is None


def test_gunicorn_conf_module_defaults() -> None:
    from pyscheduler_web import gunicorn_conf

    settings = gunicorn_conf.settings()
    assert settings["workers"] == 1 and settings["worker_class"] == "pyscheduler_web.worker.ServingWorker"
    assert settings["preload_app"] is False
    assert gunicorn_conf.DEFAULT_MAX_STREAMS + gunicorn_conf.REQUEST_THREADS == 116
    assert gunicorn_conf.stream_budget(116) == 100
    assert gunicorn_conf.stream_budget(8) == 4 and gunicorn_conf.stream_budget(1) == 1
    assert settings["control_socket_disable"] is True


def _conf_in_a_subprocess(prelude: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    code = f"import resource\n{prelude}\nfrom pyscheduler_web import gunicorn_conf\nprint(gunicorn_conf.worker_connections)\n"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)


def test_the_connection_cap_raises_the_open_file_limit_or_fits_under_it() -> None:
    # A soft limit below the default cap is raised to fit it (when the hard limit allows).
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard >= 4096 + 512:
        raised = _conf_in_a_subprocess(f"resource.setrlimit(resource.RLIMIT_NOFILE, (1024, {hard}))")
        assert raised.returncode == 0, raised.stderr
        assert raised.stdout.split() == ["4096"] and raised.stderr == ""
    # A hard limit too low for it: the cap is lowered to fit, with a warning.
    low = _conf_in_a_subprocess("resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))")
    assert low.returncode == 0, low.stderr
    assert low.stdout.split() == ["512"]
    assert "fits 512 connections, not 4096" in low.stderr
    # Set through the environment; a bad value stops with a clear message.
    env = dict(os.environ, PYSCHEDULER_MAX_CONNECTIONS="200")
    assert _conf_in_a_subprocess("", env).stdout.split() == ["200"]
    env["PYSCHEDULER_MAX_CONNECTIONS"] = "-1"
    bad = _conf_in_a_subprocess("", env)
    assert bad.returncode != 0 and "PYSCHEDULER_MAX_CONNECTIONS must be a positive integer, not '-1'" in bad.stderr
