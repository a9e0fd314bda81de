"""Socket reporter plugins without a hard dependency on gRPC: they are the extra
``pyscheduler[reporter-grpc]`` (grpcio and protobuf), and this module is how the rest of the
product reaches them.

:func:`socket_plugin_directory` returns the plugin directory watcher of
:mod:`.socket_plugins`, importing it (and gRPC) only when called; without the extra it raises
:class:`SocketPluginsUnavailable` (a :class:`~.rounds.ReporterError`) saying how to install it.
:func:`socket_plugins_problem` says so without building anything, for a command line that wants
to refuse ``--reporter-dir`` before it starts. Everything else of the reporter (in-process
plugins, merging, the core's and the Kubernetes agent's sinks) needs no gRPC.
"""

from __future__ import annotations

import importlib.util
import os
from typing import TYPE_CHECKING, Final, Protocol

from pyscheduler.reporter.grpc_extra import GRPC_EXTRA, INSTALL_HINT
from pyscheduler.reporter.rounds import ReporterError

if TYPE_CHECKING:
    from pyscheduler.reporter.rounds import NodeReporter

__all__ = ["GRPC_EXTRA", "INSTALL_HINT", "PluginDirectoryHandle", "SocketPluginsUnavailable", "socket_plugin_directory",
           "socket_plugins_problem"]

#: The top-level modules of the extra's distributions (grpcio, protobuf).
_EXTRA_MODULES: Final = frozenset({"grpc", "google"})


class SocketPluginsUnavailable(ReporterError):
    """Socket plugins were asked for, and gRPC (the ``reporter-grpc`` extra) is not installed."""


class PluginDirectoryHandle(Protocol):
    """What a caller does with the plugin directory watcher (:class:`.socket_plugins.PluginDirectory`)."""

    def check(self) -> None:
        """Raises :class:`ReporterError` for a directory that cannot be used."""
        ...

    def scan(self) -> None:
        """Registers the sockets there now, deregisters those gone."""
        ...

    def start(self) -> None:
        """Checks the directory, then scans it on a thread of its own."""
        ...

    def stop(self) -> None:
        ...


def _unavailable(exc: ImportError) -> SocketPluginsUnavailable:
    return SocketPluginsUnavailable(
        f"socket reporter plugins (Katalyst's gRPC API) need gRPC, which is not installed ({exc}); install the "
        f"extra: {INSTALL_HINT}")


def _is_the_extra_missing(exc: ImportError) -> bool:
    return (exc.name or "").split(".", 1)[0] in _EXTRA_MODULES


def socket_plugins_problem() -> str | None:
    """Why socket plugins cannot be used in this installation (the message says how to install
    the extra), or None. Looks the extra's modules up without importing them: a command line
    asks before it forks its workers, and gRPC is best imported after a fork, not before."""
    for module in ("grpc", "google.protobuf"):
        try:
            found = importlib.util.find_spec(module) is not None
        except ImportError:  # a parent package (google) missing, or refused
            found = False
        if not found:
            return str(_unavailable(ModuleNotFoundError(f"No module named {module!r}", name=module)))
    return None


def socket_plugin_directory(manager: NodeReporter, directory: str | os.PathLike[str], *,
                            scan_interval: float = 1.0, node_id: str | None = None) -> PluginDirectoryHandle:
    """The watcher of ``directory`` registering socket plugins with ``manager`` (see
    :class:`.socket_plugins.PluginDirectory`; ``node_id``: the directory is that node's own);
    raises :class:`SocketPluginsUnavailable` without the ``reporter-grpc`` extra."""
    try:
        from pyscheduler.reporter.socket_plugins import PluginDirectory
    except ImportError as exc:
        if not _is_the_extra_missing(exc):
            raise
        raise _unavailable(exc) from exc
    return PluginDirectory(manager, directory, scan_interval=scan_interval, node_id=node_id)
