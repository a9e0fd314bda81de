"""gRPC is an extra (``pyscheduler[reporter-grpc]``, issue 32): without grpcio and protobuf every
module but the socket plugins' imports and works, and asking for socket plugins (``serve
--reporter-dir``, ``reporter-agent --plugin-dir``, :func:`socket_plugin_directory`) fails at once
with a message saying how to install the extra. Checked in subprocesses whose imports of ``grpc``
and ``google.protobuf`` are refused by a meta-path finder, as if the extra were not installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pyscheduler.reporter.socket_directory import INSTALL_HINT, socket_plugins_problem

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: Run first in each subprocess: grpc and google.protobuf cannot be imported (nor found).
BLOCK_GRPC = '''
import sys
class _NoGrpc:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "grpc" or name == "google.protobuf" or name.startswith("google.protobuf."):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)", name=name)
        return None
sys.meta_path.insert(0, _NoGrpc())
'''

#: Imports every module of pyscheduler (and the Kubernetes agent); prints {module: error}.
IMPORT_ALL = '''
import importlib, json, pkgutil, pyscheduler
names = ["pyscheduler", "pyscheduler_k8s.agent"]
names += [info.name for info in pkgutil.walk_packages(pyscheduler.__path__, "pyscheduler.")]
failed = {}
for name in names:
    try:
        importlib.import_module(name)
    except Exception as exc:
        failed[name] = f"{type(exc).__name__}: {exc}"
print(json.dumps({"names": names, "failed": failed}))
'''


def _python(script: str, *, block: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", (BLOCK_GRPC if block else "") + script], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT, env=env)


def _imports(block: bool) -> dict[str, Any]:
    done = _python(IMPORT_ALL, block=block)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_without_grpc_only_the_socket_plugins_do_not_import() -> None:
    blocked, whole = _imports(block=True), _imports(block=False)
    # What fails only for want of gRPC (another module failing in both is not this test's business).
    extra_only = {name: error for name, error in blocked["failed"].items() if name not in whole["failed"]}
    grpc_modules = {name for name in blocked["names"]
                    if name == "pyscheduler.reporter.socket_plugins" or name.startswith("pyscheduler.reporter.grpc_api.")}
    assert set(extra_only) == grpc_modules and "pyscheduler.reporter.socket_plugins" in grpc_modules, extra_only
    assert INSTALL_HINT in extra_only["pyscheduler.reporter.socket_plugins"]
    # The walk saw the reporter whole (a broken walk would pass vacuously).
    for module in ("pyscheduler.reporter.manager", "pyscheduler.reporter.socket_directory", "pyscheduler.cli",
                   "pyscheduler.reporter.examples", "pyscheduler.reporter.views", "pyscheduler_k8s.agent"):
        assert module in blocked["names"] and module not in blocked["failed"], module


def test_without_grpc_the_reporter_works_and_socket_plugins_say_how_to_install_them(tmp_path: Path) -> None:
    script = f'''
import json
from pyscheduler.reporter.content import FieldType, ReportContent, ReportField
from pyscheduler.reporter.node_fields import NODE
from pyscheduler.reporter.rounds import NodeReporter
from pyscheduler.reporter.socket_directory import SocketPluginsUnavailable, socket_plugin_directory, socket_plugins_problem
from pyscheduler_k8s.agent import ReporterAgent

class Sink:
    sent = []
    def known_nodes(self): return {{"n1": "rm"}}
    def send(self, updates): self.sent.extend(u.facts.attributes for u in updates)

class Plugin:
    name = "labels"
    def report(self):
        return {{"n1": [ReportContent(NODE, (ReportField(FieldType.METADATA, "Labels", b'{{"a": "1"}}'),))]}}

sink = Sink()
reporter = NodeReporter(sink=sink)
reporter.register(Plugin())
reporter.run_round()
said = {{"sent": sink.sent, "problem": socket_plugins_problem()}}
for name, make in (("directory", lambda: socket_plugin_directory(reporter, {str(tmp_path)!r})),
                   ("agent", lambda: ReporterAgent("n1", None, plugin_dir={str(tmp_path)!r}))):
    try:
        make()
        said[name] = "made"
    except SocketPluginsUnavailable as exc:
        said[name] = str(exc)
reporter.stop()
print(json.dumps(said))
'''
    done = _python(script)
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    assert said["sent"] == [{"a": "1"}]
    for key in ("problem", "directory", "agent"):
        assert INSTALL_HINT in said[key] and "gRPC" in said[key], (key, said[key])


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    script = f"import sys, runpy; sys.argv = ['pyscheduler', *{list(args)!r}]; runpy.run_module('pyscheduler.cli', " \
             "run_name='__main__')"
    return _python(script)


def test_without_grpc_the_commands_refuse_a_plugin_directory_and_say_how_to_install_the_extra(tmp_path: Path) -> None:
    served = _cli("serve", "--bind", "127.0.0.1:1", "--reporter-dir", str(tmp_path))
    assert served.returncode == 2, served.stderr
    assert served.stderr.startswith("pyscheduler serve: --reporter-dir: socket reporter plugins") and \
        INSTALL_HINT in served.stderr, served.stderr
    kubeconfig = tmp_path / "kubeconfig"  # a cluster nothing answers for: the agent stops before it is asked
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "gone",
        "clusters": [{"name": "gone", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "someone", "user": {"token": "t"}}],
        "contexts": [{"name": "gone", "context": {"cluster": "gone", "user": "someone"}}]}))
    agent = _cli("reporter-agent", "--node", "n1", "--once", "--plugin-dir", str(tmp_path), "--kubeconfig",
                 str(kubeconfig))
    assert agent.returncode == 2 and INSTALL_HINT in agent.stderr, agent.stderr


def test_with_the_extra_socket_plugins_are_available() -> None:
    pytest.importorskip("grpc")
    assert socket_plugins_problem() is None
