"""The deepest queue tree the configuration allows (MAX_QUEUE_DEPTH levels) is served by every
REST endpoint that renders the tree; one level more is refused by the validator, so no endpoint
meets a tree it cannot serialise (a 130-level tree used to make them answer 500)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import requests
from web_helpers import Server

from pyscheduler.config.validator import MAX_QUEUE_DEPTH


def chain_config(levels_below_root: int) -> str:
    text = "partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: '*'\n"
    indent = 8
    for i in range(levels_below_root):
        text += " " * indent + "queues:\n" + " " * indent + f"  - name: q{i}\n"
        indent += 4
    return text


def test_every_tree_endpoint_serves_the_deepest_allowed_tree(
    start_server: Callable[..., Server], tmp_path: Path
) -> None:
    config = tmp_path / "deep.yaml"
    config.write_text(chain_config(MAX_QUEUE_DEPTH - 1))
    server = start_server(["--config", str(config), "--demo"])
    deepest = "root." + ".".join(f"q{i}" for i in range(MAX_QUEUE_DEPTH - 1))
    for path in (
        "/ws/v1/partition/default/queues",
        "/ws/v1/partition/default/queue/root?subtree",
        f"/ws/v1/partition/default/queue/{deepest}",
        "/ws/v1/fullstatedump",
        "/ws/v1/config",
        "/ws/v1/partition/default/usage/users",
    ):
        response = requests.get(server.url + path, timeout=30, headers={"Accept": "application/json"})
        assert response.status_code == 200, (path, response.text[:300])
    tree = requests.get(server.url + "/ws/v1/partition/default/queues", timeout=30).json()
    depth = 1
    while tree.get("children"):
        tree = tree["children"][0]
        depth += 1
    assert depth == MAX_QUEUE_DEPTH and tree["queuename"] == deepest


def test_one_level_more_is_refused_before_the_server_starts(tmp_path: Path) -> None:
    config = tmp_path / "too-deep.yaml"
    config.write_text(chain_config(MAX_QUEUE_DEPTH))
    done = subprocess.run(
        [sys.executable, "-m", "pyscheduler.cli", "validate-conf", str(config)],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 1
    assert f"more than {MAX_QUEUE_DEPTH} levels deep" in done.stderr


def test_validate_conf_endpoint_refuses_the_too_deep_tree(server: Server) -> None:
    body = requests.post(server.url + "/ws/v1/validate-conf", data=chain_config(MAX_QUEUE_DEPTH), timeout=30).json()
    assert body["allowed"] is False
    assert f"more than {MAX_QUEUE_DEPTH} levels deep" in body["reason"]
