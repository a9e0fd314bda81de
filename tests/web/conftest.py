"""Fixtures of the REST tests (see web_helpers.py for the server and the stream client).

- ``server`` (session): ``pyscheduler serve`` on a free 127.0.0.1 port with the test
  configuration and the scenario RM (scenario_rm.py) embedded, worker timeout 3 s.
- ``restore_settings``: puts the default event settings back after a test that changed them.
- ``start_server``: extra servers (demo, shutdown), stopped at teardown.
- ``open_stream``: raw stream clients on the session server, closed at teardown, and a check
  that every stream slot came back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
import sys
from pathlib import Path
from typing import Any

import pytest

# The shared helpers in tests/ (event_oracle.py) are importable when tests/web runs alone too.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# `make test` installs the web package and requests: without them these tests must fail, not skip.
import pyscheduler_web  # noqa: E402,F401
import requests  # noqa: E402,F401

from web_helpers import DEFAULT_SETTINGS, TEST_QUEUES, Server, StreamClient, launch, stop  # noqa: E402


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("web")
    config = tmp / "queues.yaml"
    config.write_text(TEST_QUEUES)
    srv = launch(tmp, ["--config", str(config), "--rm", "scenario_rm:attach"], {"GUNICORN_CMD_ARGS": "--timeout 3"})
    yield srv
    code = stop(srv)
    log = srv.log()
    assert code == 0, f"server exit status {code}:\n{log}"
    assert "Traceback" not in log and "[ERROR]" not in log, log


@pytest.fixture
def restore_settings(server: Server) -> Iterator[Server]:
    """For tests that change event settings: the defaults come back afterwards."""
    yield server
    server.settings(**DEFAULT_SETTINGS)


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    """``start(args, env=None)`` -> an extra server, stopped at teardown."""
    started: list[Server] = []

    def start(args: list[str], env: dict[str, str] | None = None) -> Server:
        srv = launch(tmp_path, args, env)
        started.append(srv)
        return srv

    yield start
    for srv in started:
        stop(srv)


@pytest.fixture
def open_stream(server: Server) -> Iterator[Callable[..., StreamClient]]:
    """``open_stream(query="", **kwargs)`` -> a StreamClient on the session server, closed at teardown."""
    opened: list[StreamClient] = []

    def open_(query: str = "", **kwargs: Any) -> StreamClient:
        client = StreamClient(server.port, "/ws/v1/events/stream" + (f"?{query}" if query else ""), **kwargs)
        opened.append(client)
        return client

    yield open_
    for client in opened:
        client.close()
    # Every slot must come back once the clients are gone.
    state = server.wait_for(lambda s: s["streams"] == 0, timeout=5.0)
    assert state["streams"] == 0, f"stream slots leaked: {state}"
