"""An API server that is away (issue 32's fault test): the shim's informers (watch and list loops) say so in
one warning line per failure, without a traceback (the traceback goes to the debug log), and
keep trying. The client is the shim's real one, pointed at a loopback port nothing listens on."""

from __future__ import annotations

import logging
import socket
import threading
import time

import pytest

from pyscheduler_k8s import informers as informers_module
from pyscheduler_k8s.counts import ShimCounts
from pyscheduler_k8s.informers import Informer, retrying
from pyscheduler_k8s.kubeapi import ClusterAccess, KubeApi


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed when the block ends: nothing listens there


def test_an_api_server_away_is_one_warning_line_per_failure(caplog: pytest.LogCaptureFixture,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(informers_module, "RETRY_DELAY", 0.05)
    api = KubeApi(ClusterAccess(server=f"https://127.0.0.1:{_closed_port()}", token="t", verify=False))
    stop, counts = threading.Event(), ShimCounts()
    caplog.set_level(logging.WARNING, logger="pyscheduler_k8s.informers")
    relisted: list[str] = []

    def relist() -> str:
        items, version = api.list("/api/v1/nodes")  # refused: the loop says so and tries again
        relisted.append(version)
        return version

    watcher = Informer(api, "nodes", "/api/v1/nodes", lambda *a: None, relist, stop=stop, counts=counts)
    lister = threading.Thread(target=retrying, args=(relist, stop, counts), daemon=True)
    watcher.start("1")
    lister.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(caplog.records) < 6:
        time.sleep(0.05)
    stop.set()
    watcher.stop()
    lister.join(5)
    records = [r for r in caplog.records if r.name == "pyscheduler_k8s.informers"]
    assert len(records) >= 6 and not relisted
    watches = [r for r in records if r.getMessage().startswith("watch /api/v1/nodes failed")]
    lists = [r for r in records if r.getMessage().startswith("listing failed")]
    assert watches and lists
    for record in records:
        assert record.levelno == logging.WARNING and record.exc_info is None
        assert "\n" not in record.getMessage() and "Connection refused" in record.getMessage(), record.getMessage()
