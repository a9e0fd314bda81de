"""Socket reporter plugins: a real plugin process speaking Katalyst's gRPC API on a unix socket
registers through the plugin directory (kubelet's handshake), reports, pushes updates through
ListAndWatch, dies, and its facts leave after the grace period; refusals are clear."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from rm_helpers import World

from pyscheduler.reporter.manager import ManagerSettings, ReporterError, ReporterManager
from pyscheduler.reporter.socket_plugins import PluginDirectory

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def labels_content(**labels: str) -> list[dict[str, object]]:
    return [{"version": "v1", "kind": "Node", "fields": [{"type": 2, "name": "Labels", "value": labels}]}]


@pytest.fixture
def world() -> Iterator[World]:
    w = World()
    w.add_node("n1", memory=1000, vcore=100)
    yield w
    w.close()


@pytest.fixture
def plugin_dir() -> Iterator[Path]:
    # Unix socket paths are limited to about 100 bytes: a short directory, not pytest's tmp_path.
    directory = Path(f"/tmp/psr-{os.getpid()}-{time.monotonic_ns() % 10**6}")
    directory.mkdir()
    yield directory
    subprocess.run(["rm", "-rf", str(directory)], check=False)


@pytest.fixture
def start_plugin(plugin_dir: Path) -> Iterator[Callable[..., tuple[subprocess.Popen[str], Path, Path]]]:
    started: list[subprocess.Popen[str]] = []

    def start(node: str, name: str, content: list[dict[str, object]], *extra: str,
              sock_name: str | None = None) -> tuple[subprocess.Popen[str], Path, Path]:
        sock = plugin_dir / node / f"{sock_name or name}.sock"
        content_file = plugin_dir / f"{node}-{sock_name or name}.json"
        status_file = plugin_dir / f"{node}-{sock_name or name}.status"
        content_file.write_text(json.dumps(content))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        proc = subprocess.Popen([sys.executable, str(HERE / "reporter_plugin_server.py"), str(sock), name,
                                 str(content_file), str(status_file), *extra], stdout=subprocess.PIPE, text=True, env=env)
        started.append(proc)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "serving"
        return proc, content_file, status_file

    yield start
    for proc in started:
        proc.kill()
        proc.wait(10)


def wait_until(check: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return check()


def test_a_plugin_process_registers_reports_watches_and_leaves(world: World, plugin_dir: Path, start_plugin) -> None:  # type: ignore[no-untyped-def]
    manager = ReporterManager(world.proxy, None, ManagerSettings(timeout=5.0, grace=30.0), clock=world.clock)
    directory = PluginDirectory(manager, plugin_dir)
    proc, content_file, status_file = start_plugin("n1", "gpu", labels_content(gpu="a100"))
    directory.scan()
    assert [(s.name, s.kind, s.state) for s in manager.plugins()] == [("gpu@n1", "socket", "running")]
    assert json.loads(status_file.read_text()) == {"registered": True, "error": ""}
    node = world.partition().nodes["n1"]
    # The watch stream delivers the first report at once; a round polls it too.
    assert wait_until(lambda: node.attributes.get("gpu") == "a100")
    manager.run_round()
    assert manager.plugins()[0].polls == 1 and manager.plugins()[0].failures == 0
    # ListAndWatch: a change reaches the node without a round.
    content_file.write_text(json.dumps(labels_content(gpu="h100")))
    assert wait_until(lambda: node.attributes.get("gpu") == "h100")
    # The plugin dies and its socket goes: deregistered; its facts stay for the grace period.
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    (plugin_dir / "n1" / "gpu.sock").unlink()
    directory.scan()
    assert [s.state for s in manager.plugins()] == ["stopped"]
    manager.run_round()
    assert node.attributes.get("gpu") == "h100"
    world.clock.advance(30.0)
    manager.run_round()
    assert "gpu" not in node.attributes and manager.plugins() == []
    directory.stop()


def test_refusals_are_clear_and_affect_nothing_else(world: World, plugin_dir: Path, start_plugin) -> None:  # type: ignore[no-untyped-def]
    manager = ReporterManager(world.proxy, None, ManagerSettings(timeout=5.0), clock=world.clock)
    directory = PluginDirectory(manager, plugin_dir)
    _, _, wrong_type = start_plugin("n1", "dev", labels_content(a="1"), "--type", "DevicePlugin")
    _, _, wrong_version = start_plugin("n1", "old", labels_content(a="1"), "--version", "v0")
    _, _, first = start_plugin("n1", "good", labels_content(good="1"))
    _, _, second = start_plugin("n1", "good", labels_content(good="2"), sock_name="good-again")
    # A socket that is not a plugin, and a plain file with a socket's name.
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(plugin_dir / "n1" / "mute.sock"))
    listener.listen(1)
    (plugin_dir / "n1" / "file.sock").write_text("not a socket")
    try:
        directory.scan()
        assert [s.name for s in manager.plugins()] == ["good@n1"]
        reasons = {Path(path).name: why for path, why in directory.refused}
        assert "is not 'ReporterPlugin'" in reasons["dev.sock"]
        assert "no supported version in common" in reasons["old.sock"]
        # The same name twice on one node: the socket scanned first (good-again.sock) is the plugin.
        assert "already registered" in reasons["good.sock"]
        assert "does not answer as a plugin" in reasons["mute.sock"]
        assert "file.sock" not in reasons
        assert json.loads(wrong_type.read_text())["registered"] is False
        assert "v0" in json.loads(wrong_version.read_text())["error"]
        assert json.loads(first.read_text())["registered"] is False
        assert json.loads(second.read_text())["registered"] is True
        # Refused sockets are not tried again until they change.
        refused = len(directory.refused)
        directory.scan()
        assert len(directory.refused) == refused
        assert wait_until(lambda: world.partition().nodes["n1"].attributes.get("good") == "2")
    finally:
        listener.close()
        directory.stop()


def test_a_directory_that_cannot_be_used_is_a_clear_error(world: World, tmp_path: Path) -> None:
    manager = ReporterManager(world.proxy, None, ManagerSettings(), clock=world.clock)
    with pytest.raises(ReporterError, match="does not exist"):
        PluginDirectory(manager, tmp_path / "missing").start()
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(ReporterError, match="not a directory"):
        PluginDirectory(manager, tmp_path / "a-file").check()
