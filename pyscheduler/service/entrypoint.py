"""One scheduler, assembled and run: YuniKorn's ``pkg/entrypoint`` in spirit.

:class:`SchedulerService` builds, from :class:`~pyscheduler.service.options.CoreOptions`,
everything a scheduler is made of that is not HTTP: the cluster context, the RM proxy, the
scheduling loop, the history sampler, the health checker, the node reporter manager (and its
socket plugin directory), the role history saver. RMs attach to it (:meth:`attach`, or named
in ``options.rms`` as ``module:callable``); whatever serves it over HTTP (``pyscheduler_web``)
wraps it and mounts the routes its RMs declare.

Contract:

- ``start()`` starts the loop and the background threads (as the options' switches say),
  then attaches the RMs: first those given to :meth:`attach` before the start, in call order,
  then ``options.rms`` in order. If one fails (or a background component cannot start),
  everything already started is stopped and the exception propagates, so a broken RM is seen
  at once instead of serving an empty cluster. A stopped service does not start again.
- ``attach()`` after the start attaches at once; its failure propagates and leaves the
  service and the other RMs running. Attaching to a stopped service raises RuntimeError.
- Every RM may declare routes (:class:`~pyscheduler.service.rm.RoutedRM`), asked once at
  attach; two RMs may not declare the same rule (ValueError, the attach fails).
- ``stop()`` is idempotent and safe from any thread: the attached RMs stop in reverse order
  of attachment, then the background threads, the loop and the RM proxy. A component that
  fails to stop is logged and the others still stop.
- Several RMs attach to one service at once, each registering its own ``rm_id`` through the
  one :attr:`proxy`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from pyscheduler.common.importing import load_object
from pyscheduler.events.system import EventSystem
from pyscheduler.reporter.manager import ReporterManager
from pyscheduler.reporter.socket_directory import PluginDirectoryHandle, socket_plugin_directory
from pyscheduler.rmproxy.proxy import RMProxy
from pyscheduler.scheduler.context import ClusterContext
from pyscheduler.scheduler.health_checker import HealthChecker
from pyscheduler.scheduler.history import History
from pyscheduler.scheduler.loop import Scheduler
from pyscheduler.scheduler.role_history_saver import RoleHistorySaver
from pyscheduler.service.options import CoreOptions
from pyscheduler.service.rm import Attach, AttachedRM, Route, RoutedRM

__all__ = ["Attachment", "SchedulerService", "load_attach"]

log = logging.getLogger(__name__)


def load_attach(spec: str) -> Attach:
    """The attach function ``module:callable`` names (``module`` alone: ``module:attach``);
    ImportError, AttributeError or ValueError when it cannot be found, TypeError when the
    object is not callable."""
    found = load_object(spec, default_attr="attach")
    if not callable(found):
        raise TypeError(f"{spec} is not callable")
    attach: Attach = found
    return attach


@dataclass(frozen=True)
class Attachment:
    """One attached RM: its name (the ``module:callable`` or the name given to attach), the
    object its attach function returned (stopped with the service when it is an
    :class:`~pyscheduler.service.rm.AttachedRM`) and the routes it declared."""

    name: str
    rm: object
    routes: tuple[Route, ...]


class _State(Enum):
    NEW = "new"
    RUNNING = "running"
    STOPPED = "stopped"


class SchedulerService:
    """One scheduler and the RMs attached to it (see the module doc)."""

    def __init__(self, options: CoreOptions | None = None) -> None:
        self.options = options or CoreOptions()
        opts = self.options
        #: The validated configuration the RMs register with.
        self.config_text = opts.read_config()
        store = opts.role_history_store()
        self.context = ClusterContext(clock=opts.clock, timeouts=opts.app_timeouts(),
                                      native_node_ordering=opts.native_node_ordering, role_history_store=store)
        #: Saves role histories when they change (None: no role history directory).
        self.role_history_saver = (
            RoleHistorySaver(self.context, store, opts.role_history_save_delay) if store is not None else None
        )
        self.proxy = RMProxy(self.context)
        #: The node reporter manager: merges what its plugins report about every RM's nodes.
        self.reporters = ReporterManager(self.proxy, None, opts.reporter_settings())
        #: Socket plugins registering in ``options.reporter_dir`` (None: none). They need the
        #: ``reporter-grpc`` extra: without it, a directory asked for fails here.
        self.plugin_directory: PluginDirectoryHandle | None = (
            socket_plugin_directory(self.reporters, opts.reporter_dir) if opts.reporter_dir else None
        )
        self.scheduler = Scheduler(self.context, idle_interval=opts.loop_idle_interval)
        #: Applications and containers sampled every minute; None: off.
        self.history: History | None = History(self.context, self.context.clock) if opts.history else None
        #: Checks once at start, then every ``health_interval`` s (when background threads run).
        self.health = HealthChecker(self.context, self.scheduler, opts.health_interval)
        #: When :meth:`start` ran (unix ns; 0 before).
        self.started_ns = 0
        #: Set when the service is about to stop: long requests (event streams) end at once.
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._state = _State.NEW
        self._pending: list[tuple[str, Attach]] = []
        self._attachments: list[Attachment] = []

    # -- what the service holds ---------------------------------------------------------------------

    @property
    def event_system(self) -> EventSystem:
        return self.context.event_system

    @property
    def running(self) -> bool:
        return self._state is _State.RUNNING

    @property
    def attachments(self) -> tuple[Attachment, ...]:
        """The attached RMs, in attach order."""
        with self._lock:
            return tuple(self._attachments)

    # -- lifecycle ------------------------------------------------------------------------------------

    def attach(self, attach: Attach, name: str = "") -> object:
        """Attach an RM: at start when the service has not started (None is returned then),
        else at once (what ``attach`` returned is returned). ``name`` defaults to the function's
        qualified name."""
        label = name or _name_of(attach)
        with self._lock:
            if self._state is _State.STOPPED:
                raise RuntimeError(f"cannot attach {label}: the scheduler service has stopped")
            if self._state is _State.NEW:
                self._pending.append((label, attach))
                return None
        return self._attach_now(label, attach)

    def start(self) -> None:
        """Start the loop and the background threads, then attach the RMs (see the module doc).
        A second call does nothing."""
        with self._lock:
            if self._state is not _State.NEW:
                return
            self._state = _State.RUNNING
            pending, self._pending = self._pending, []
        self.started_ns = time.time_ns()
        opts = self.options
        try:
            if opts.background:
                self.event_system.start()
            if opts.scheduling_loop:
                self.scheduler.start()
            if opts.background:
                for component in self._background():
                    component.start()  # a socket plugin directory that cannot be read raises
                if self.role_history_saver is not None:
                    self.role_history_saver.start()
            for label, attach in pending:
                self._attach_now(label, attach)
            for spec in opts.rms:
                self._attach_now(spec, load_attach(spec))
        except BaseException:
            self.stop()
            raise
        log.info("scheduler started (instance %s)", self.event_system.instance_uuid)

    def begin_shutdown(self) -> None:
        """The process is stopping: let long requests (event streams) end now."""
        self.stopping.set()
        self.event_system.release_streams()

    def stop(self) -> None:
        """Stop the attached RMs (last attached first), the background threads, the loop and
        the RM proxy. Idempotent."""
        with self._lock:
            if self._state is _State.STOPPED:
                return
            self._state = _State.STOPPED
            attachments, self._attachments = self._attachments, []
            self._pending.clear()
        self.stopping.set()
        _quietly("event streams", self.event_system.release_streams)
        for attachment in reversed(attachments):
            if isinstance(attachment.rm, AttachedRM):
                _quietly(attachment.name, attachment.rm.stop)
        for component in reversed(self._background()):
            _quietly(type(component).__name__, component.stop)
        _quietly("scheduling loop", self.scheduler.stop)
        if self.role_history_saver is not None:
            # After the loop, so that its last save holds every change.
            _quietly("role history saver", self.role_history_saver.stop)
        _quietly("RM proxy", self.proxy.stop)
        log.info("scheduler stopped")

    # -- helpers --------------------------------------------------------------------------------------

    def _background(self) -> list[_Component]:
        """The background components but the role history saver, in start order (stopped in
        reverse)."""
        components: list[_Component] = []
        if self.history is not None:
            components.append(self.history)
        components.append(self.health)
        components.append(self.reporters)
        if self.plugin_directory is not None:
            components.append(self.plugin_directory)
        return components

    def _attach_now(self, label: str, attach: Attach) -> object:
        # What attach returns is typed AttachedRM | None; an RM written before the protocol
        # may return an object without stop(): it is kept (a web layer may mount what it
        # declares) and simply not stopped.
        made: object = attach(self)
        try:
            routes = tuple(made.routes()) if isinstance(made, RoutedRM) else ()
            with self._lock:
                self._check_routes(label, routes)
                if self._state is _State.STOPPED:
                    raise RuntimeError(f"the scheduler service stopped while {label} attached")
                self._attachments.append(Attachment(label, made, routes))
        except BaseException:
            if isinstance(made, AttachedRM):
                _quietly(label, made.stop)
            raise
        log.info("attached %s%s", label, f" ({len(routes)} routes)" if routes else "")
        return made

    def _check_routes(self, label: str, routes: tuple[Route, ...]) -> None:
        """Caller holds the lock: each route name once per RM, each rule once per service."""
        names = [route.name for route in routes]
        if len(set(names)) != len(names):
            raise ValueError(f"{label} declares a route name twice: {names}")
        taken = {route.rule: attachment.name for attachment in self._attachments for route in attachment.routes}
        for route in routes:
            if route.rule in taken:
                raise ValueError(f"{label}: route {route.rule} is already served for {taken[route.rule]}")
            if len([r for r in routes if r.rule == route.rule]) > 1:
                raise ValueError(f"{label} declares route {route.rule} twice")


class _Component(Protocol):
    """What the service starts and stops in the background (history, health checks...)."""

    def start(self) -> None: ...

    def stop(self) -> object: ...


def _name_of(attach: Callable[..., object]) -> str:
    module = getattr(attach, "__module__", None) or "?"
    return f"{module}:{getattr(attach, '__qualname__', type(attach).__name__)}"


def _quietly(name: str, stop: Callable[[], object]) -> None:
    try:
        stop()
    except Exception:
        log.exception("stopping the %s failed", name)
