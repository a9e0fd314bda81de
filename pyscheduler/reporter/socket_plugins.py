"""Out-of-process reporter plugins: Katalyst's gRPC ``ReporterPlugin`` on unix sockets,
registered through a plugin directory with kubelet's plugin-registration handshake.

**The directory** (``--reporter-dir``): one sub-directory per node, named by the node id, with
one socket per plugin: ``<dir>/<node id>/<plugin>.sock``. The sub-directory binds the plugin to
its node (a plugin written for Katalyst's agent knows nothing of nodes: on Katalyst's node
agent everything is about the node it runs on). **One node's own directory** (``node_id``
given: the per-node agent, ``pyscheduler reporter-agent``) is flat, as Katalyst's agent's is:
``<dir>/<plugin>.sock``, every socket about that node, each plugin under its own name. The
watcher scans the directory every ``scan_interval`` seconds (polling: no inotify dependency, and
the same on every platform).

**Registration**, as kubelet's plugin watcher does it: for a new socket the watcher calls
``Registration.GetInfo``; the plugin must say type ``ReporterPlugin``, a name, and a supported
version ``v1alpha1``; its endpoint is the socket serving ``ReporterPlugin`` (empty: the same
socket; relative: next to it). Then ``NotifyRegistrationStatus`` tells the plugin the outcome,
with the reason when refused. Registered, it joins the manager as ``<name>@<node id>`` (as
``<name>`` in one node's own directory). A
socket that does not answer as a plugin, a wrong type, an unsupported version, or a name already
registered for the node is refused with a log line (and told, when it can be); it is tried
again only when its file changes. A socket that disappears deregisters its plugin (its facts
stay for the manager's grace period).

**Polling and watching**: ``GetReportContent`` on each round (with the manager's timeout), and
the manager's thread following ``ListAndWatchReportContent`` (:meth:`SocketPlugin.watch`): each
message is applied at once; a stream that ends is opened again after a pause.

**gRPC is an extra** (``pyscheduler[reporter-grpc]``): this module and the generated code in
:mod:`.grpc_api` are the only ones that import it. The rest of the product reaches them through
:func:`.socket_directory.socket_plugin_directory`, which imports this module when called;
imported without the extra, this module raises ImportError saying how to install it.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pyscheduler.reporter.grpc_extra import INSTALL_HINT

try:
    import grpc
except ImportError as missing:  # the extra is not installed: say how to install it
    raise ImportError(f"socket reporter plugins need gRPC, which is not installed: {INSTALL_HINT}",
                      name=missing.name) from missing

from pyscheduler.common.background import BackgroundThread
from pyscheduler.reporter.content import FieldType, GroupVersionKind, ReportContent, ReportField
from pyscheduler.reporter.grpc_api import pluginregistration_pb2, pluginregistration_pb2_grpc
from pyscheduler.reporter.grpc_api import reporter_pb2, reporter_pb2_grpc
from pyscheduler.reporter.rounds import NodeReporter, ReporterError
from pyscheduler.reporter.plugin import NodeReport

__all__ = ["PLUGIN_TYPE", "SUPPORTED_VERSION", "PluginDirectory", "SocketPlugin", "contents_of"]

log = logging.getLogger(__name__)

PLUGIN_TYPE: Final = "ReporterPlugin"
SUPPORTED_VERSION: Final = "v1alpha1"
#: Seconds a registration call may take.
REGISTRATION_TIMEOUT: Final = 5.0
#: Seconds before a ended watch stream is opened again.
REWATCH_DELAY: Final = 1.0


def contents_of(response: Any) -> list[ReportContent]:
    """A ``GetReportContentResponse`` as plain data."""
    return [
        ReportContent(
            GroupVersionKind(c.groupVersionKind.group, c.groupVersionKind.version, c.groupVersionKind.kind),
            tuple(ReportField(FieldType(f.fieldType), f.fieldName, bytes(f.value)) for f in c.field),
        )
        for c in response.content
    ]


class SocketPlugin:
    """A registered socket plugin, as the manager's plugin protocol wants it."""

    kind = "socket"

    def __init__(self, name: str, node_id: str, endpoint: str, timeout: float) -> None:
        self.name = name
        self.node_id = node_id
        self.endpoint = endpoint
        self.timeout = timeout
        self._channel = grpc.insecure_channel(f"unix://{endpoint}")
        self._stub = reporter_pb2_grpc.ReporterPluginStub(self._channel)
        self._stream: Any = None
        self._closed = threading.Event()

    def report(self) -> NodeReport:
        response = self._stub.GetReportContent(reporter_pb2.Empty(), timeout=self.timeout)
        return {self.node_id: contents_of(response)}

    def watch(self) -> Iterator[NodeReport]:
        """Follows ``ListAndWatchReportContent`` until the plugin is closed; reopens an ended
        stream after a pause."""
        while not self._closed.is_set():
            try:
                self._stream = self._stub.ListAndWatchReportContent(reporter_pb2.Empty())
                for response in self._stream:
                    yield {self.node_id: contents_of(response)}
            except grpc.RpcError as err:
                if self._closed.is_set():
                    return
                log.info("reporter plugin %s: watch stream ended (%s); opening it again", self.name,
                         err.code() if hasattr(err, "code") else err)
            self._closed.wait(REWATCH_DELAY)

    def close(self) -> None:
        self._closed.set()
        if self._stream is not None:
            self._stream.cancel()
        self._channel.close()


@dataclass
class _Seen:
    mtime_ns: int
    plugin: str = ""  # the manager's name when registered; "" when refused


class PluginDirectory:
    """Watches ``directory`` for plugin sockets and (de)registers them with ``manager``;
    ``node_id``: the directory is that node's own (flat), else one sub-directory per node."""

    def __init__(self, manager: NodeReporter, directory: str | os.PathLike[str], *,
                 scan_interval: float = 1.0, node_id: str | None = None) -> None:
        self.manager = manager
        self.directory = Path(directory)
        self.node_id = node_id
        self._seen: dict[Path, _Seen] = {}
        self._plugins: dict[str, SocketPlugin] = {}
        self._thread = BackgroundThread("pyscheduler-reporter-dir", self.scan, interval=scan_interval)
        #: Registration refusals, newest last (what, why): for the log and the tests.
        self.refused: list[tuple[str, str]] = []

    def check(self) -> None:
        """Raises ReporterError for a directory that cannot be used (missing, not a directory,
        not readable): a clear error at start rather than a silent empty watcher."""
        if not self.directory.is_dir():
            raise ReporterError(f"reporter plugin directory {self.directory} does not exist or is not a directory")
        if not os.access(self.directory, os.R_OK | os.X_OK):
            raise ReporterError(f"reporter plugin directory {self.directory} is not readable")
        if not os.access(self.directory, os.W_OK):
            # Not an error: plugins running as another user may still create their sockets there.
            log.warning("reporter plugin directory %s is not writable by this process: only plugins "
                        "allowed to create sockets there can register", self.directory)

    def start(self) -> None:
        self.check()
        self._thread.start()

    def stop(self) -> None:
        self._thread.stop()
        for plugin in list(self._plugins.values()):
            plugin.close()

    def scan(self) -> None:
        """One pass: new or changed sockets register, vanished ones deregister."""
        present: dict[Path, int] = {}
        try:
            for node_dir in self._socket_dirs():
                for path in sorted(node_dir.iterdir()):
                    try:
                        info = path.lstat()
                    except OSError:
                        continue
                    if stat.S_ISSOCK(info.st_mode) and path.suffix == ".sock":
                        present[path] = info.st_mtime_ns
        except OSError as err:
            log.warning("reporter plugin directory %s: %s", self.directory, err)
            return
        for path in [p for p in self._seen if p not in present]:
            self._forget(path)
        for path, mtime in present.items():
            seen = self._seen.get(path)
            if seen is not None and seen.mtime_ns == mtime:
                continue
            if seen is not None:
                self._forget(path)
            self._seen[path] = _Seen(mtime, self._register(path))

    def _socket_dirs(self) -> list[Path]:
        if self.node_id is not None:
            return [self.directory]
        return [node_dir for node_dir in sorted(self.directory.iterdir()) if node_dir.is_dir()]

    def _forget(self, path: Path) -> None:
        seen = self._seen.pop(path)
        if seen.plugin:
            plugin = self._plugins.pop(seen.plugin, None)
            if plugin is not None:
                plugin.close()
            self.manager.deregister(seen.plugin)

    def _register(self, path: Path) -> str:
        node_id = self.node_id if self.node_id is not None else path.parent.name
        try:
            with grpc.insecure_channel(f"unix://{path}") as channel:
                registration = pluginregistration_pb2_grpc.RegistrationStub(channel)
                info = registration.GetInfo(pluginregistration_pb2.InfoRequest(), timeout=REGISTRATION_TIMEOUT)
                problem = self._validate(info)
                name = info.name if self.node_id is not None else f"{info.name}@{node_id}"
                plugin: SocketPlugin | None = None
                if not problem:
                    endpoint = info.endpoint or str(path)
                    if not os.path.isabs(endpoint):
                        endpoint = str(path.parent / endpoint)
                    plugin = SocketPlugin(name, node_id, endpoint, self.manager.settings.timeout)
                    try:
                        self.manager.register(plugin)
                    except ReporterError as err:
                        problem = str(err)
                        plugin.close()
                        plugin = None
                try:
                    registration.NotifyRegistrationStatus(
                        pluginregistration_pb2.RegistrationStatus(plugin_registered=not problem, error=problem),
                        timeout=REGISTRATION_TIMEOUT)
                except grpc.RpcError:
                    pass  # it is told when it can be; the registration stands on our side
        except grpc.RpcError as err:
            problem = f"does not answer as a plugin ({err.code() if hasattr(err, 'code') else err})"
            plugin = None
        if problem or plugin is None:
            self.refused.append((str(path), problem))
            log.warning("reporter plugin socket %s refused: %s", path, problem)
            return ""
        self._plugins[plugin.name] = plugin
        log.info("reporter plugin %s registered from %s (endpoint %s)", plugin.name, path, plugin.endpoint)
        return plugin.name

    @staticmethod
    def _validate(info: Any) -> str:
        if info.type != PLUGIN_TYPE:
            return f"plugin type {info.type!r} is not {PLUGIN_TYPE!r}"
        if not info.name:
            return "the plugin has no name"
        if SUPPORTED_VERSION not in info.supported_versions:
            return f"no supported version in common (the plugin supports {list(info.supported_versions)}, " \
                   f"the manager {SUPPORTED_VERSION})"
        return ""
