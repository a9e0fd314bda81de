"""The node reporter agent: the reporter manager on one node, writing the merge of its plugins'
reports into the node's ``CustomNodeResource`` (``pyscheduler reporter-agent --node NAME``, one
per node as a DaemonSet; issue 16). The shim reads those objects back into the core
(:mod:`.cnr`, ``shim.py``).

**Plugins**, as Katalyst's agent loads them. In-process ones by import path (``--plugin
MODULE:ATTR``): a plugin object (a ``name`` and ``report()``, see
:mod:`pyscheduler.reporter.plugin`), or a factory (a class or a function) called with the node's
name that returns one. Socket ones (Katalyst's gRPC ``ReporterPlugin``, kubelet's registration
handshake) by putting their socket into the plugin directory, which is this node's own and flat,
``<dir>/<plugin>.sock``, as Katalyst's agent's ``/var/lib/katalyst/plugin-socks`` is: a plugin
written for Katalyst registers unchanged and reports about this node. Registration order is the
merge order: the in-process plugins in the order given, then the sockets as they register (those
already there when the agent starts, in name order, before its first round).

**Rounds.** Every ``period`` seconds, counted from the end of the previous round, the manager
polls every plugin and merges what they say about this node (content about another node is
rejected, as about a node the agent does not serve). The agent then builds the node's CNR from
the merge (:func:`.cnr.cnr_object`) and, when it differs from the last one written, or nothing
was written yet by this process, or ``resync`` seconds have passed since the last write (an
object deleted or edited by someone else comes back), writes it with a server-side apply (``PATCH`` with ``application/apply-patch+yaml``, field manager
``pyscheduler-reporter-agent``, ``force``), which creates the object or updates it, drops every
field the agent wrote before and no longer reports, and leaves the fields other writers own.

**One request, or two with Katalyst's CRD.** With the CRD in ``k8s/deploy`` (no status
subresource) one apply writes metadata, spec and status together. Katalyst's own CRD has a
status subresource: there the object's endpoint ignores ``status`` and only ``.../status``
writes it, so the agent applies metadata and spec to the object, then the status to
``/status`` (two requests a write; users of Katalyst keep their CRD). Which CRD is installed is
learnt from the answers, with no request of its own: an apply whose answer does not hold the
status just sent, or whose managed fields show this agent's earlier writes through ``/status``,
means a status subresource; from then on every write takes the two requests. A ``404`` from
``/status`` (the CRD replaced by one without it) makes the next write a single apply again. A watching plugin's new report (``ListAndWatchReportContent``) is written at once
instead of at the next round, at most one such write per :data:`MIN_PUSH_GAP` seconds.

**Failures.** A write that fails (the API server unreachable, or refusing: 403 without the
role, 404 without the CRD, 422 for an object it will not take) is logged with the server's reason
and made again at the next round; nothing stops the agent but SIGTERM or SIGINT, which end it
cleanly (exit 0). Labels and annotations Kubernetes would refuse are left out one by one
(:func:`.cnr.cnr_object`) and fields the merge refuses are left out by the manager, each said once
in the log with the plugin and the reason, and the rest is written.

**Progress.** Each round's outcome is logged on one line (``round N: written|unchanged|failed,
R request(s), T ms, F fields``, with the reason when it failed) and kept as a :class:`WriteOutcome`
(``last``, and the counters ``rounds``, ``requests``, ``writes``, ``failures``).
"""

from __future__ import annotations

import inspect
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pyscheduler.common.importing import load_object, parse_object_name
from pyscheduler.reporter.rounds import DEFAULT_GRACE, DEFAULT_PERIOD, DEFAULT_TIMEOUT, ManagerSettings, NodeReporter
from pyscheduler.reporter.rounds import ReporterError
from pyscheduler.reporter.sink import NodeUpdate
from pyscheduler.reporter.plugin import ReporterPlugin
from pyscheduler.reporter.socket_directory import PluginDirectoryHandle, socket_plugin_directory
from pyscheduler_k8s.cnr import FIELD_MANAGER, cnr_object, cnr_path, object_name_problem
from pyscheduler_k8s.kubeapi import ClusterAccess, KubeApi, KubeApiError

__all__ = ["AgentError", "AgentOptions", "ReporterAgent", "WriteOutcome", "load_plugin", "run"]

log = logging.getLogger(__name__)

#: Seconds after which the object is written again even when nothing changed.
DEFAULT_RESYNC: Final = 300.0
#: The shortest time between a write and one a watching plugin's report triggers: a plugin
#: streaming changes quickly costs the API server at most one request a second.
MIN_PUSH_GAP: Final = 1.0
APPLY_CONTENT_TYPE: Final = "application/apply-patch+yaml"


class AgentError(ValueError):
    """A setting the agent cannot start with: a node name that cannot name an object, a plugin
    that does not load."""


@dataclass(frozen=True)
class AgentOptions:
    node: str
    #: The node's own plugin directory (None: no socket plugins; Katalyst's agent's is
    #: ``/var/lib/katalyst/plugin-socks``, which the DaemonSet passes).
    plugin_dir: str | None = None
    #: In-process plugins, ``MODULE:ATTR`` each, in merge order.
    plugins: tuple[str, ...] = ()
    period: float = DEFAULT_PERIOD
    timeout: float = DEFAULT_TIMEOUT
    grace: float = DEFAULT_GRACE
    enabled: tuple[str, ...] = ("*",)
    checkpoint: str | None = None
    resync: float = DEFAULT_RESYNC
    kubeconfig: str | None = None
    #: One round, then exit: 0 when it wrote or had nothing to write, 1 when the write failed.
    once: bool = False


@dataclass(frozen=True)
class WriteOutcome:
    """What one write step did: after a round (``trigger`` ``round``) or a watching plugin's
    report (``watch``)."""

    round: int
    trigger: str
    #: ``written``, ``unchanged`` (no request) or ``failed``.
    outcome: str
    requests: int
    #: The step's time: for a round, its polls and merge too.
    seconds: float
    #: The merged fields the object carries.
    fields: int
    #: The API server's answer when it failed.
    reason: str = ""

    def describe(self) -> str:
        head = f"round {self.round}" if self.trigger == "round" else f"watch after round {self.round}"
        plural = "" if self.requests == 1 else "s"
        text = (f"{head}: {self.outcome}, {self.requests} request{plural}, {self.seconds * 1000:.0f} ms, "
                f"{self.fields} fields")
        return f"{text}: {self.reason}" if self.reason else text


class _OneNode:
    """The manager's sink on the agent: the one node it serves. A change of the merged facts
    (a round's, or a watching plugin's between rounds) wakes the agent's loop, which writes."""

    def __init__(self, node: str) -> None:
        self.node = node
        self.changed = threading.Event()

    def known_nodes(self) -> Mapping[str, str]:
        return {self.node: self.node}

    def send(self, updates: Sequence[NodeUpdate]) -> None:
        self.changed.set()


class ReporterAgent:
    """The reporter manager for ``node`` and the writer of its CNR (see the module doc)."""

    def __init__(self, node: str, api: KubeApi, settings: ManagerSettings | None = None, *,
                 plugin_dir: str | None = None, resync: float = DEFAULT_RESYNC,
                 clock: Callable[[], float] = time.monotonic) -> None:
        problem = object_name_problem(node)
        if problem is not None:
            raise AgentError(f"node name {node!r}: {problem}")
        self.node = node
        self.api = api
        self.resync = resync
        self._clock = clock
        self._sink = _OneNode(node)
        self.manager = NodeReporter(settings, sink=self._sink)
        # Socket plugins need the reporter-grpc extra: without it, a plugin directory is refused
        # here (SocketPluginsUnavailable, a ReporterError saying how to install it).
        self.directory: PluginDirectoryHandle | None = (
            socket_plugin_directory(self.manager, plugin_dir, node_id=node) if plugin_dir else None)
        self._started = False
        self._stopping = threading.Event()
        # The body last written and when (None: nothing written by this process yet).
        self._written: dict[str, Any] | None = None
        self._written_at = 0.0
        self._requested_at = float("-inf")
        # What was last said about left-out fields (said again only when it changes).
        self._said_left_out: tuple[str, ...] = ()
        #: Whether the CRD has a status subresource (None: not seen yet; written as if not).
        self.status_subresource: bool | None = None
        self.rounds = 0
        self.requests = 0
        self.writes = 0
        self.failures = 0
        self.last: WriteOutcome | None = None

    def register(self, plugin: ReporterPlugin) -> None:
        self.manager.register(plugin)

    def start(self) -> None:
        """Checks the plugin directory (:class:`ReporterError` when it cannot be used) and
        registers the sockets already in it, so the first round polls them too. Once."""
        if self.directory is not None and not self._started:
            self.directory.check()
            self.directory.scan()
        self._started = True

    def run_round(self) -> WriteOutcome:
        """Polls the plugins, merges, and writes the object if it changed (one request at most)."""
        started = time.perf_counter()
        self.manager.run_round()
        self.rounds += 1
        return self._write("round", started)

    def serve(self) -> None:
        """Rounds until :meth:`stop`: the first at once, the next ``period`` seconds after the end
        of the previous one; a watching plugin's change in between is written at once."""
        self.start()
        if self.directory is not None:
            self.directory.start()
        period = self.manager.settings.period
        while not self._stopping.is_set():
            self._unfailing(self.run_round)
            next_round = self._clock() + period
            while not self._stopping.is_set() and (left := next_round - self._clock()) > 0:
                if not self._sink.changed.wait(left) or self._stopping.is_set():
                    continue
                pause = self._requested_at + MIN_PUSH_GAP - self._clock()
                if pause > 0 and self._stopping.wait(min(pause, left)):
                    break
                self._unfailing(lambda: self._write("watch"))

    @staticmethod
    def _unfailing(step: Callable[[], object]) -> None:
        """Runs a step of the loop; a bug in one (the API server's failures are expected and
        handled in _write) is logged, and the next step comes at its time."""
        try:
            step()
        except Exception:
            log.exception("reporter agent step failed (the agent goes on)")

    def stop(self) -> None:
        """Ends :meth:`serve` after its current step (callable from any thread)."""
        self._stopping.set()
        self._sink.changed.set()

    def close(self) -> None:
        """Stops following the plugin directory and closes the socket plugins."""
        if self.directory is not None:
            self.directory.stop()
        self.manager.stop()

    def _write(self, trigger: str, started: float | None = None) -> WriteOutcome:
        """Writes the object if it is due (see the module doc); ``started``: when the step
        began (a round's poll and merge count in its time)."""
        started = time.perf_counter() if started is None else started
        self._sink.changed.clear()  # a change after this is seen by the next write
        merged = self.manager.merged(self.node)
        cnr = cnr_object(self.node, merged)
        self._say_left_out(cnr.left_out)
        fields = len(merged.values) if merged is not None else 0
        due = self._written is None or cnr.body != self._written or self._clock() - self._written_at >= self.resync
        requests, outcome, reason = 0, "unchanged", ""
        if due:
            self._requested_at = self._clock()
            requests, error = self._apply(cnr.body)
            self.requests += requests
            if error is not None:
                outcome, reason = "failed", _reason(error)
                self.failures += 1
            else:
                outcome = "written"
                self._written, self._written_at = cnr.body, self._clock()
                self.writes += 1
        result = WriteOutcome(self.rounds, trigger, outcome, requests, time.perf_counter() - started, fields, reason)
        self.last = result
        if outcome == "failed":
            log.warning("%s", result.describe())
        elif trigger == "round" or outcome == "written":
            log.info("%s", result.describe())
        return result

    def _apply(self, body: Mapping[str, Any]) -> tuple[int, KubeApiError | None]:
        """Applies ``body`` (see the module doc: one request, or two with a status subresource):
        the number of requests made, and the API server's refusal if there was one."""
        status = body.get("status")
        try:
            answer = self._request(cnr_path(self.node), {k: v for k, v in body.items() if k != "status"}
                                   if self.status_subresource else body)
        except KubeApiError as exc:
            return 1, exc
        if not self.status_subresource and _has_status_subresource(answer, status):
            self.status_subresource = True
            log.info("CustomNodeResource %s: its CRD has a status subresource (Katalyst's own CRD): the status is "
                     "written through /status, a second request each write", self.node)
        if not self.status_subresource:
            return 1, None
        status_body: dict[str, Any] = {"apiVersion": body["apiVersion"], "kind": body["kind"],
                                       "metadata": {"name": self.node}}
        if status:
            status_body["status"] = status
        try:
            self._request(cnr_path(self.node) + "/status", status_body)
        except KubeApiError as exc:
            if exc.status == 404:  # the object is there: its CRD no longer has the subresource
                self.status_subresource = None
            return 2, exc
        return 2, None

    def _request(self, path: str, body: Mapping[str, Any]) -> Any:
        return self.api.request("PATCH", path, body, params={"fieldManager": FIELD_MANAGER, "force": "true"},
                                content_type=APPLY_CONTENT_TYPE)

    def _say_left_out(self, cnr_left_out: tuple[str, ...]) -> None:
        """Logs what is left out of the object (refused by the merge, or by Kubernetes' syntax)
        when that changed, with the plugin and the reason."""
        refused = tuple(sorted(f"{item.field} from {item.plugin}: {item.reason}"
                               for state in self.manager.plugins() for item in state.rejected))
        left_out = refused + cnr_left_out
        if left_out != self._said_left_out:
            self._said_left_out = left_out
            if left_out:
                log.warning("left out of CustomNodeResource %s: %s", self.node, "; ".join(left_out))
            else:
                log.info("nothing left out of CustomNodeResource %s any more", self.node)


def _has_status_subresource(answer: Any, status: Mapping[str, Any] | None) -> bool:
    """Whether the object's answer to an apply shows a status subresource: the status just sent
    is not what it holds, or this agent wrote its status through ``/status`` before."""
    if not isinstance(answer, dict):
        return False
    kept = answer.get("status") or {}
    if status and any(kept.get(key) != value for key, value in status.items()):
        return True
    managed = (answer.get("metadata") or {}).get("managedFields") or ()
    return any(isinstance(entry, dict) and entry.get("manager") == FIELD_MANAGER and entry.get("subresource") == "status"
               for entry in managed)


def _reason(exc: KubeApiError) -> str:
    if exc.status == 404:
        return (f"{exc}: is the CustomNodeResource CRD installed? (kubectl apply -f "
                "k8s/deploy/40-customnoderesource-crd.yaml)")
    return str(exc)


def load_plugin(spec: str, node: str) -> ReporterPlugin:
    """The in-process plugin ``MODULE:ATTR`` names: the object itself, or what the factory
    (a class or another callable) returns when called with the node's name."""
    try:
        name = parse_object_name(spec)
        found: Any = load_object(spec)
    except ValueError as exc:
        raise AgentError(f"--plugin {exc}") from exc
    except ImportError as exc:
        raise AgentError(f"--plugin {spec}: cannot import {name.module!r}: {exc}") from exc
    except AttributeError as exc:
        raise AgentError(f"--plugin {spec}: {name.module!r} has no {name.attr!r}") from exc
    if isinstance(found, ReporterPlugin) and not inspect.isclass(found):
        return found
    if not callable(found):
        raise AgentError(f"--plugin {spec}: neither a reporter plugin (name and report()) nor a factory")
    factory: Callable[[str], object] = found
    try:
        made = factory(node)
    except Exception as exc:
        raise AgentError(f"--plugin {spec}: the factory failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(made, ReporterPlugin):
        raise AgentError(f"--plugin {spec}: the factory returned {type(made).__name__}, not a reporter plugin "
                         "(name and report())")
    return made


#: The signals that end the agent.
STOP_SIGNALS: Final = (signal.SIGTERM, signal.SIGINT)


def run(options: AgentOptions) -> int:
    """``pyscheduler reporter-agent``: 0 after SIGTERM/SIGINT (or a successful ``--once``), 1
    when the ``--once`` write failed, 2 when it cannot start (the message says why)."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    problem = object_name_problem(options.node)
    if problem is not None:  # said before anything else is looked at
        print(f"pyscheduler reporter-agent: --node {options.node!r}: {problem}", file=sys.stderr)
        return 2
    if options.once:
        return _run_once(options)
    # Blocked before any thread exists (plugins and gRPC channels start some), so that every
    # thread inherits the mask and the signals wait for the main thread's sigtimedwait: a thread
    # that had them unblocked would receive SIGTERM and, with its default action, end the process
    # at once instead of cleanly.
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        agent = _started_agent(options)
        if agent is None:
            return 2
        _serve_until_signalled(agent)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    log.info("reporter agent for node %s stopped", options.node)
    return 0


def _run_once(options: AgentOptions) -> int:
    agent = _started_agent(options)
    if agent is None:
        return 2
    try:
        return 1 if agent.run_round().outcome == "failed" else 0
    finally:
        agent.close()


def _started_agent(options: AgentOptions) -> ReporterAgent | None:
    """The agent with its plugins, its directory checked and scanned; None (said on standard
    error) when a setting does not allow it to start."""
    settings = ManagerSettings(period=options.period, timeout=options.timeout, grace=options.grace,
                               enabled=options.enabled, checkpoint=options.checkpoint)
    agent: ReporterAgent | None = None
    try:
        api = KubeApi(ClusterAccess.discover(options.kubeconfig))
        agent = ReporterAgent(options.node, api, settings, plugin_dir=options.plugin_dir, resync=options.resync)
        for spec in options.plugins:
            agent.register(load_plugin(spec, options.node))
        agent.start()
    except (AgentError, ReporterError, ValueError, OSError) as exc:
        print(f"pyscheduler reporter-agent: {exc}", file=sys.stderr)
        if agent is not None:
            agent.close()
        return None
    log.info("reporter agent for node %s: %d in-process plugins, plugin directory %s, a round every %g s",
             options.node, len(options.plugins), options.plugin_dir or "none", options.period)
    return agent


def _serve_until_signalled(agent: ReporterAgent) -> None:
    """Runs the agent on a thread of its own while this (the main) thread waits for SIGTERM or
    SIGINT, blocked (``sigtimedwait``; the caller blocked them): stopping then runs here as
    ordinary code, not in a signal handler that could interrupt the agent inside a lock."""
    worker = threading.Thread(target=agent.serve, name="pyscheduler-reporter-agent")
    try:
        worker.start()
        while worker.is_alive():
            if signal.sigtimedwait(STOP_SIGNALS, 0.5) is not None:
                agent.stop()
                break
        worker.join()
    finally:
        agent.close()
