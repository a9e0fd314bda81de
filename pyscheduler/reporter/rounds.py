"""The reporter manager's rounds (:class:`NodeReporter`): polls the plugins, merges what they say
per node, gives the changed nodes to a sink. It knows nothing of the core: the core's reporter
manager is :class:`.manager.ReporterManager` (a NodeReporter whose sink is the core), the
Kubernetes agent's is a NodeReporter with a sink that writes a ``CustomNodeResource``.

A **round** (:meth:`NodeReporter.run_round`, every ``period`` seconds counted from the end of
the previous one when started):

1. every registered, enabled plugin whose previous call has returned is asked for its report,
   all at once on a thread pool, each with ``timeout`` seconds; no lock is held across a call,
   so a plugin that hangs delays no other plugin and no node update. A call that fails or
   times out leaves the plugin's last good report in use (and is counted);
2. per node, the reports of every plugin (registration order; deregistered plugins' last
   reports for ``grace`` seconds after they went) are merged (:mod:`.merge`, the node schema of
   :mod:`.node_fields`) and turned into facts (attributes, capacity, occupied);
3. the checkpoint (when configured) is written if a plugin's report changed, before anything
   is sent, so a restart starts from what the plugins last said;
4. each node whose facts differ from what was last sent goes to the manager's **sink** in one
   batch; a node nothing reports any more goes once with empty facts. Nodes the sink does not
   know are skipped (their reports are rejected as about an unknown node).

**Sinks** (:class:`~.sink.NodeSink`): where the merged facts go and which nodes exist. The
core's, :class:`~.core_sink.CoreSink`: one node UPDATE per changed node through the RM interface
(``reported_attributes``, ``reported_occupied``, and the capacity when a plugin reports it; the
RM's capacity back when none does any more), one request per RM, for the nodes the RMs
registered (read with a public query function, never the core's objects). The per-node agent on
Kubernetes (``pyscheduler_k8s.agent``) has one of its own: it knows one node and writes its merge
into the node's ``CustomNodeResource``. A sink that raises leaves its nodes unsent: they go again at the
next round or push, whether or not their reports changed meanwhile.

A watching plugin (one with ``watch()``) is followed on a thread of its own from the moment it
registers: each report it yields is applied at once the same way (:meth:`NodeReporter.push`).

Locks: ``_lock`` guards the plugin table and what was sent; it is never held while a plugin is
called or while the sink is called (the core takes its own locks).
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pyscheduler.common.background import BackgroundThread
from pyscheduler.common.clock import Clock, SystemClock
from pyscheduler.common.errors import SchedulerValueError
from pyscheduler.common.gc_pause import collector_paused
from pyscheduler.reporter import checkpoint
from pyscheduler.reporter.content import GroupVersionKind, ReportContent, ReportField
from pyscheduler.reporter.merge import Merged, Rejected, Reported, merge
from pyscheduler.reporter.node_fields import NODE_KINDS, NODE_SCHEMA, NodeFacts, node_facts
from pyscheduler.reporter.plugin import NodeReport, ReporterPlugin, WatchingPlugin, is_enabled
from pyscheduler.reporter.sink import NodeSink, NodeUpdate


__all__ = ["Converter", "DEFAULT_GRACE", "DEFAULT_PERIOD", "DEFAULT_TIMEOUT", "ManagerSettings", "NodeReporter",
           "PluginState", "ReporterError", "RoundResult"]

log = logging.getLogger(__name__)

DEFAULT_PERIOD: Final = 5.0
DEFAULT_TIMEOUT: Final = 10.0
DEFAULT_GRACE: Final = 300.0
#: Seconds the plugins' answers are waited for with the garbage collector paused (run_round).
GC_PAUSE_LIMIT: Final = 0.25
#: Field values kept decoded between rounds (about 8 plugins x 5,000 nodes x a few fields).
CHECKED_CACHE_SIZE: Final = 200_000


#: Turns content about one kind into content about another (see NodeReporter.add_converter).
Converter = Callable[[ReportContent], ReportContent]


class ReporterError(SchedulerValueError):
    """A registration the manager refuses (a name already running, a bad name)."""


@dataclass(frozen=True)
class ManagerSettings:
    period: float = DEFAULT_PERIOD
    timeout: float = DEFAULT_TIMEOUT
    #: Seconds a deregistered plugin's last report keeps being merged.
    grace: float = DEFAULT_GRACE
    #: Katalyst's enable rule (``*``, ``foo``, ``-foo``).
    enabled: tuple[str, ...] = ("*",)
    #: Where every plugin's last good report is kept across restarts (None: nowhere).
    checkpoint: str | None = None


@dataclass
class PluginState:
    name: str
    order: int
    plugin: ReporterPlugin | None
    state: str = "running"  # running | stopped (deregistered, in its grace period)
    #: "in-process", "socket" (a gRPC plugin), or "restored" (from the checkpoint, not back yet).
    kind: str = "in-process"
    report: NodeReport | None = None
    polls: int = 0
    failures: int = 0
    last_poll_ns: int = 0
    last_error: str = ""
    #: Fields refused in the last round (merge validation, unknown kinds, unknown nodes).
    rejected: list[Rejected] = field(default_factory=list)
    stopped_at: float = 0.0
    in_flight: concurrent.futures.Future[NodeReport] | None = None


@dataclass(frozen=True)
class RoundResult:
    polled: int
    failed: int
    updated: tuple[str, ...]


class NodeReporter:
    def __init__(self, settings: ManagerSettings | None = None, *, sink: NodeSink, clock: Clock | None = None,
                 on_round: Callable[[RoundResult], None] | None = None) -> None:
        """Reports go to ``sink``."""
        self.sink = sink
        self.settings = settings or ManagerSettings()
        self.clock = clock or SystemClock()
        self._on_round = on_round
        self._lock = threading.Lock()
        # Rounds and pushes apply one at a time (what was sent stays consistent).
        self._apply_lock = threading.Lock()
        self._plugins: dict[str, PluginState] = {}
        self._next_order = 0
        self._sent: dict[str, NodeFacts] = {}
        #: Nodes whose update the sink failed to take: offered again at the next apply.
        self._unsent: set[str] = set()
        #: The last merge per node (what /partition/{p}/node/{n}/reported shows), and the
        #: reports it was made of (a node whose reports did not change is not merged again).
        self._merged: dict[str, Merged] = {}
        # Incremental rounds (_apply): the plugins and nodes of the last round, each plugin's
        # last report, and per node its facts and the fields refused while merging it.
        self._shape: tuple[tuple[str, ...], frozenset[str]] | None = None
        self._last_reports: dict[str, NodeReport] = {}
        # Decoded and checked field values by (part, field, bytes), cleared when it grows past
        # CHECKED_CACHE_SIZE (values that stop appearing must not pile up).
        self._checked: dict[Any, Any] = {}
        self._facts: dict[str, NodeFacts] = {}
        self._rejected: dict[str, list[Rejected]] = {}
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="pyscheduler-reporter")
        self._thread = BackgroundThread("pyscheduler-reporter", self._step, interval=self.settings.period)
        self.rounds = 0
        #: Seconds the last round took (polls, merge and updates).
        self.last_round_seconds = 0.0
        #: Checkpoint writes that failed (the last reason in ``checkpoint_error``).
        self.checkpoint_errors = 0
        self.checkpoint_error = ""
        # What the last checkpoint held: the accepted reports themselves (never changed; a
        # plugin's new answer is a new object, an unchanged one keeps the old).
        self._saved_reports: dict[str, NodeReport] = {}
        #: Katalyst's converters: content about a kind -> content about another, before merging.
        self._converters: dict[GroupVersionKind, Converter] = {}
        self._restore()

    # -- checkpoint -----------------------------------------------------------------------------

    def _restore(self) -> None:
        """Each checkpointed plugin comes back stopped, with its report, for the grace period
        (it takes its place again when it registers); a bad checkpoint is a warning."""
        path = self.settings.checkpoint
        if path is None:
            return
        try:
            saved = checkpoint.load(path)
        except checkpoint.CheckpointError as err:
            log.warning("reporter checkpoint not used, starting empty: %s", err)
            return
        now = self.clock.monotonic()
        for plugin in sorted(saved, key=lambda p: p.order):
            self._plugins[plugin.name] = PluginState(plugin.name, self._next_order, None, state="stopped",
                                                     kind="restored", report=plugin.report, stopped_at=now)
            self._next_order += 1
        if saved:
            log.info("reporter checkpoint: %d plugins' reports restored", len(saved))

    def _write_checkpoint(self) -> None:
        """Writes the checkpoint when a plugin's report changed since the last write."""
        path = self.settings.checkpoint
        if path is None:
            return
        with self._lock:
            current = {s.name: s.report for s in self._plugins.values() if s.report is not None}
            saved = self._saved_reports
            if current.keys() == saved.keys() and all(report is saved[name] for name, report in current.items()):
                return
            plugins = [checkpoint.SavedPlugin(s.name, s.order, s.report)
                       for s in sorted(self._plugins.values(), key=lambda s: s.order) if s.report is not None]
        try:
            checkpoint.save(path, plugins)
        except OSError as err:
            self.checkpoint_errors += 1
            self.checkpoint_error = f"{type(err).__name__}: {err}"
            log.warning("writing the reporter checkpoint %s failed: %s", path, err)
            return
        self._saved_reports = current

    # -- registration ---------------------------------------------------------------------------

    def add_converter(self, source: GroupVersionKind, convert: Converter) -> None:
        """Katalyst's converters: content about ``source`` is given to ``convert`` before the
        merge, and what it returns (content about another kind, such as an older version of a
        resource turned into the one the node schema reads) is merged instead. A converter that
        raises or returns something else rejects that content for the round, with the reason.
        Every node is merged again at the next round."""
        with self._apply_lock:
            self._converters[source] = convert
            self._shape = None

    def register(self, plugin: ReporterPlugin) -> None:
        """Adds a plugin (its registration order is the merge order). A name already running
        is refused; a stopped plugin registering again takes its place and keeps its report."""
        name = plugin.name
        if not isinstance(name, str) or not name or len(name) > 253:
            raise ReporterError(f"a reporter plugin needs a name (1-253 characters), got {name!r}")
        with self._lock:
            state = self._plugins.get(name)
            if state is not None and state.state == "running":
                raise ReporterError(f"reporter plugin {name!r} is already registered")
            if state is None:
                state = self._plugins[name] = PluginState(name, self._next_order, plugin)
                self._next_order += 1
            state.plugin, state.state, state.stopped_at = plugin, "running", 0.0
            state.kind = str(getattr(plugin, "kind", "in-process"))
        if isinstance(plugin, WatchingPlugin):
            self._follow(plugin)
        log.info("reporter plugin %s registered", name)

    def _follow(self, plugin: WatchingPlugin) -> None:
        """A watching plugin's reports are applied as they come, on a thread of their own,
        until its iterator ends (a closed socket plugin's does) or it is no longer registered."""
        name = plugin.name

        def follow() -> None:
            try:
                for report in plugin.watch():
                    with self._lock:
                        state = self._plugins.get(name)
                        current = state is not None and state.plugin is plugin and state.state == "running"
                    if not current:
                        return
                    self.push(name, report)
            except Exception:  # a broken watch ends; polls go on
                log.exception("reporter plugin %s: its watch failed (polls go on)", name)

        # One step that lasts as long as the watch (``interval=0``: no second call).
        BackgroundThread(f"pyscheduler-reporter-watch-{name}", follow, interval=0).start()

    def deregister(self, name: str) -> None:
        """The plugin is gone; its last report is merged for the grace period, then dropped."""
        with self._lock:
            state = self._plugins.get(name)
            if state is None or state.state != "running":
                return
            state.plugin, state.state, state.stopped_at = None, "stopped", self.clock.monotonic()
        log.info("reporter plugin %s deregistered (its content stays %.0f s)", name, self.settings.grace)

    def plugins(self) -> list[PluginState]:
        """Every plugin, in registration order (a snapshot of their states)."""
        with self._lock:
            return [PluginState(**{**s.__dict__, "rejected": list(s.rejected)})
                    for s in sorted(self._plugins.values(), key=lambda s: s.order)]

    # -- rounds -----------------------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._thread.stop()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _step(self) -> None:
        self.run_round()

    def run_round(self) -> RoundResult:
        """One poll of every plugin, then the node updates (see the module doc)."""
        started = time.perf_counter()
        calls: dict[str, concurrent.futures.Future[NodeReport]] = {}
        with self._lock:
            self._expire()
            for state in self._plugins.values():
                if state.state != "running" or state.plugin is None or not is_enabled(state.name, self.settings.enabled):
                    continue
                if state.in_flight is not None and not state.in_flight.done():
                    continue  # still hanging from an earlier round: its last good report stays
                state.in_flight = calls[state.name] = self._pool.submit(state.plugin.report)
        polled = len(calls)
        # The answers are taken with the collector paused when they all come within
        # GC_PAUSE_LIMIT: an answer equal to the last one is dropped at once, and a collection
        # meeting thousands of such short-lived objects would promote them toward the next
        # full collection of the scheduler's whole heap (common.gc_pause).
        with collector_paused():
            done, pending = concurrent.futures.wait(calls.values(), timeout=min(GC_PAUSE_LIMIT, self.settings.timeout))
            if not pending:
                failed = self._take_answers(calls, done)
                calls.clear()  # the last references to the answers: freed inside the pause
                done.clear()
        if pending:
            done, _ = concurrent.futures.wait(calls.values(), timeout=max(0.0, self.settings.timeout - GC_PAUSE_LIMIT))
            failed = self._take_answers(calls, done)
        updated = self._apply()
        result = RoundResult(polled, failed, updated)
        self.rounds += 1
        self.last_round_seconds = time.perf_counter() - started
        if self._on_round is not None:
            self._on_round(result)
        return result

    def _take_answers(self, calls: Mapping[str, concurrent.futures.Future[NodeReport]],
                      done: set[concurrent.futures.Future[NodeReport]]) -> int:
        """Records each polled plugin's answer (accepted as its report, or its failure; a call
        not done is a timeout); returns the number of failures. A finished call is forgotten,
        so its answer is freed once compared."""
        failed = 0
        now_ns = self.clock.now_ns()
        with self._lock:
            for name, future in calls.items():
                polled = self._plugins.get(name)
                if polled is None:
                    continue
                polled.polls += 1
                polled.last_poll_ns = now_ns
                error = ""
                if future not in done:
                    error = f"no answer within {self.settings.timeout:g} s"
                elif future.exception() is not None:
                    exc = future.exception()
                    error = f"{type(exc).__name__}: {exc}"
                else:
                    accepted, error = _accept(future.result(), polled.report)
                    if accepted is not None:
                        polled.report = accepted
                if future in done and polled.in_flight is future:
                    polled.in_flight = None
                if error:
                    failed += 1
                    polled.failures += 1
                    polled.last_error = error
                    log.warning("reporter plugin %s: %s (its last good report stays)", name, error)
        return failed

    def push(self, name: str, report: NodeReport) -> tuple[str, ...]:
        """A watching plugin's new report: cached and applied at once."""
        with self._lock:
            known = self._plugins.get(name)
            previous = known.report if known is not None else None
        accepted, problem = _accept(report, previous)
        with self._lock:
            state = self._plugins.get(name)
            if state is None or state.state != "running":
                return ()
            if accepted is None:
                state.failures += 1
                state.last_error = problem
                return ()
            state.report = accepted
        return self._apply()

    def _expire(self) -> None:
        """Drops deregistered plugins whose grace period is over. Caller holds _lock."""
        now = self.clock.monotonic()
        for name in [n for n, s in self._plugins.items()
                     if s.state == "stopped" and now - s.stopped_at >= self.settings.grace]:
            del self._plugins[name]
            log.info("reporter plugin %s: grace period over, its content is dropped", name)

    # -- applying ---------------------------------------------------------------------------------

    def _apply(self) -> tuple[str, ...]:
        """Merges and sends what changed. Incremental: when the same plugins report (in the same
        order) and the same nodes exist, only nodes whose report from some plugin changed are
        merged again; the others keep their merge, facts and rejections."""
        with self._apply_lock:
            self._write_checkpoint()
            with self._lock:
                self._expire()
                states = sorted(self._plugins.values(), key=lambda s: s.order)
                reports = [(s.name, s.report) for s in states if s.report is not None
                           and (s.state == "stopped" or is_enabled(s.name, self.settings.enabled))]
            known = self.sink.known_nodes()
            shape = (tuple(name for name, _ in reports), frozenset(known))
            if shape != self._shape:
                dirty: set[str] | None = None  # everything again
                self._shape = shape
            else:
                dirty = set()
                for name, report in reports:
                    last = self._last_reports.get(name, {})
                    if report is last or report == last:  # one comparison in C for an unchanged plugin
                        continue
                    for node_id in report.keys() | last.keys():
                        if report.get(node_id) != last.get(node_id):
                            dirty.add(node_id)
            # The manager's own copies (made when a report is accepted), never changed after.
            self._last_reports = dict(reports)
            nodes = {node_id for _, report in reports for node_id in report} if dirty is None else dirty
            if dirty is None:
                self._merged, self._facts, self._rejected = {}, {}, {}
            for node_id in nodes:
                self._merge_node(node_id, reports, known)
            candidates = nodes if dirty is not None else set(self._facts) | set(self._sent)
            updates: list[NodeUpdate] = []
            for node_id in sorted(candidates | self._unsent):
                facts = self._facts.get(node_id, NodeFacts())
                previous = self._sent.get(node_id)
                if previous == facts or (previous is None and node_id not in self._facts) or node_id not in known:
                    self._unsent.discard(node_id)
                    continue
                updates.append(NodeUpdate(node_id, known[node_id], facts, previous))
            with self._lock:
                by_plugin: dict[str, list[Rejected]] = {}
                for items in self._rejected.values():
                    for item in items:
                        by_plugin.setdefault(item.plugin, []).append(item)
                for state in self._plugins.values():
                    state.rejected = by_plugin.get(state.name, [])
            if updates:
                self._send(updates)
            return tuple(update.node_id for update in updates)

    def _send(self, updates: list[NodeUpdate]) -> None:
        """Gives the updates to the sink and records them as sent; when the sink raises, they
        are kept as unsent (the next apply tries them again, changed or not) and it propagates.
        Caller holds _apply_lock."""
        try:
            self.sink.send(updates)
        except BaseException:
            self._unsent.update(update.node_id for update in updates)
            raise
        for update in updates:
            self._unsent.discard(update.node_id)
            sent = self._facts.get(update.node_id)
            if sent is None:
                self._sent.pop(update.node_id, None)
            else:
                self._sent[update.node_id] = sent

    def _merge_node(self, node_id: str, reports: list[tuple[str, NodeReport]], known: Mapping[str, str]) -> None:
        """Merges one node's reports into its facts (or forgets it when nothing reports on it);
        its rejections are kept under the node. Caller holds _apply_lock."""
        rejected: list[Rejected] = []
        reported: list[Reported] = []
        for name, report in reports:
            contents = report.get(node_id)
            if contents is None:
                continue
            if node_id not in known:
                rejected.append(Rejected(name, "*", f"unknown node {node_id!r}"))
                continue
            if len(contents) == 1 and not self._converters and contents[0].gvk in NODE_KINDS:
                reported.append(Reported(name, contents[0].fields))  # the usual case, made short
            else:
                reported.append(Reported(name, self._node_fields(name, contents, rejected)))
        if reported:
            if len(self._checked) > CHECKED_CACHE_SIZE:
                self._checked.clear()
            merged = merge(reported, NODE_SCHEMA, self._checked)
            rejected.extend(merged.rejected)
            with self._lock:
                self._merged[node_id] = merged
            self._facts[node_id] = node_facts(merged, self._checked)
        else:
            with self._lock:
                self._merged.pop(node_id, None)
            self._facts.pop(node_id, None)
        if rejected:
            self._rejected[node_id] = rejected
        else:
            self._rejected.pop(node_id, None)

    def _node_fields(self, name: str, contents: Sequence[ReportContent], rejected: list[Rejected]) -> list[ReportField]:
        """A plugin's fields about one node: its contents converted (Katalyst's converters) and
        those about a kind the node schema does not read rejected."""
        fields: list[ReportField] = []
        for content in contents:
            convert = self._converters.get(content.gvk)
            if convert is not None:
                source = content.gvk
                try:
                    converted: object = convert(content)
                except Exception as exc:  # a converter's failure is that content's, not the round's
                    rejected.append(Rejected(name, "*", f"converter for {source} failed: {type(exc).__name__}: {exc}"))
                    continue
                if not isinstance(converted, ReportContent):
                    rejected.append(Rejected(name, "*", f"converter for {source} returned {type(converted).__name__}"))
                    continue
                content = converted
            if content.gvk not in NODE_KINDS:
                rejected.append(Rejected(name, "*", f"no reporter for {content.gvk}"))
                continue
            fields.extend(content.fields)
        return fields

    def merged(self, node_id: str) -> Merged | None:
        """The node's last merge (fields, sources, rejected), if any plugin reported on it."""
        with self._lock:
            return self._merged.get(node_id)


def _accept(report: object, previous: NodeReport | None) -> tuple[NodeReport | None, str]:
    """A plugin's answer checked and turned into the manager's own copy (the plugin may change
    the objects it returned later), or None and why it cannot be used at all.

    One pass: a node whose contents equal the ``previous`` accepted report's keeps that (already
    checked) copy; an answer equal to ``previous`` as a whole (one comparison in C) is
    ``previous`` itself, so an unchanged plugin costs no copy and :meth:`NodeReporter._apply`
    sees it unchanged by identity."""
    if not isinstance(report, Mapping):
        return None, f"a report is a mapping of node id to contents, got {type(report).__name__}"
    if previous is not None and report == previous:
        return previous, ""
    kept = previous or {}
    copy: dict[str, Sequence[ReportContent]] = {}
    for node_id, contents in report.items():
        old = kept.get(node_id)
        if old is not None and old == contents:
            copy[node_id] = old
            continue
        if not isinstance(node_id, str) or not isinstance(contents, Sequence) or not all(
                isinstance(c, ReportContent) for c in contents):
            return None, f"node {node_id!r}: contents must be a list of ReportContent"
        copy[node_id] = list(contents)
    return copy, ""
