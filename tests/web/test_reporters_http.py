"""The node reporter manager in a served scheduler: the demo's two plugins report, the nodes
carry their facts, and the REST extensions and metrics show them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from web_helpers import Server, _server_env

ROOT = Path(__file__).resolve().parents[2]


def test_the_demo_plugins_report_on_every_node(start_server: Callable[..., Server]) -> None:
    server = start_server(["--demo", "--reporter-period", "0.2"])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        plugins = server.get("/ws/v1/reporters").json()
        if plugins and all(p["polls"] > 0 for p in plugins):
            break
        time.sleep(0.1)
    assert [(p["name"], p["kind"], p["state"], p["order"]) for p in plugins] == [
        ("topology", "in-process", "running", 0), ("reclaim-advisor", "in-process", "running", 1)]
    assert all(p["failures"] == 0 and p["rejectedFields"] == [] for p in plugins)
    nodes = server.get("/ws/v1/partition/default/nodes").json()
    assert nodes
    for node in nodes:
        attributes = node["attributes"]
        assert attributes["topology.kubernetes.io/zone"].startswith("zone-")
        assert attributes["katalyst.kubewharf.io/topology-policy"] == "None"
        assert "reclaimed.cpu" in attributes
    first = nodes[0]["nodeID"]
    reported = server.get(f"/ws/v1/partition/default/node/{first}/reported").json()
    assert reported["nodeID"] == first
    assert reported["fields"]["Labels"]["source"] == {"topology.kubernetes.io/zone": "topology",
                                                      "topology.pyscheduler.io/rack": "topology"}
    assert reported["fields"]["ReclaimedResourceCapacity"]["source"]["cpu"] == "reclaim-advisor"
    assert server.get("/ws/v1/partition/default/node/no-such-node/reported").status_code == 404
    metrics = server.get("/ws/v1/metrics").text
    assert 'pyscheduler_reporter_polls_total{plugin="topology"}' in metrics
    assert "pyscheduler_reporter_round_seconds" in metrics


def test_a_socket_plugin_registers_with_a_served_scheduler(start_server: Callable[..., Server]) -> None:
    directory = Path(f"/tmp/psw-{os.getpid()}")
    directory.mkdir(exist_ok=True)
    plugin = None
    try:
        server = start_server(["--demo", "--reporter-dir", str(directory), "--reporter-period", "0.2"])
        content = directory / "content.json"
        content.write_text(json.dumps([{"version": "v1", "kind": "Node",
                                        "fields": [{"type": 2, "name": "Labels", "value": {"gpu": "a100"}}]}]))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        plugin = subprocess.Popen([sys.executable, str(ROOT / "tests" / "reporter_plugin_server.py"),
                                   str(directory / "demo-node-0" / "gpu.sock"), "gpu", str(content),
                                   str(directory / "status.json")], stdout=subprocess.PIPE, text=True, env=env)
        assert plugin.stdout is not None and plugin.stdout.readline().strip() == "serving"
        deadline = time.monotonic() + 20
        node: dict[str, object] = {}
        while time.monotonic() < deadline:
            node = server.get("/ws/v1/partition/default/node/demo-node-0").json()
            if node.get("attributes", {}).get("gpu") == "a100":  # type: ignore[union-attr]
                break
            time.sleep(0.1)
        assert node["attributes"]["gpu"] == "a100"  # type: ignore[index]
        plugins = {p["name"]: p for p in server.get("/ws/v1/reporters").json()}
        assert plugins["gpu@demo-node-0"]["kind"] == "socket" and plugins["gpu@demo-node-0"]["state"] == "running"
    finally:
        if plugin is not None:
            plugin.kill()
            plugin.wait(10)
        subprocess.run(["rm", "-rf", str(directory)], check=False)


def test_bad_reporter_options_stop_serve_before_it_starts(tmp_path: Path) -> None:
    for args in (["--reporter-period", "0"], ["--reporter-timeout", "-1"], ["--reporter-grace", "-5"],
                 ["--reporter-dir", str(tmp_path / "missing")]):
        done = subprocess.run([sys.executable, "-m", "pyscheduler.cli", "serve", "--bind", "127.0.0.1:1", *args],
                              capture_output=True, text=True, timeout=60, env=_server_env())
        assert done.returncode == 2 and "reporter" in done.stderr, (args, done.stderr)
