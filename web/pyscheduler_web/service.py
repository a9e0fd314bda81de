"""The scheduler the REST service serves: one per process, started by the app factory.

:class:`SchedulerService` owns the RM proxy, the cluster context, the scheduling loop, the
history sampler and the health checker, plus the RMs embedded in the process: the demo RM
(``--demo``) and any RM named with ``--rm module:callable``. The factory starts it in the
gunicorn worker; it is stopped by the worker's exit hook and, as a fallback, at interpreter
exit (``atexit``). ``stop`` is idempotent.

Embedding an RM (``pyscheduler serve --rm mypackage.shim:attach``)::

    from pyscheduler.si import messages as si

    class MyShim:                     # the RM callback (see docs/scheduler.md)
        def update_allocation(self, response): ...
        def update_application(self, response): ...
        def update_node(self, response): ...
        def send_event(self, events): ...
        def update_container_scheduling_state(self, request): ...
        def stop(self): ...           # optional: called when the service stops

    def attach(service):
        shim = MyShim()
        service.proxy.register_resource_manager(
            si.RegisterResourceManagerRequest(rm_id="my-rm", policy_group="queues",
                                              config=service.config_text),
            shim)
        # ... start the thread that watches the real cluster and calls service.proxy.update_*
        return shim                   # its stop() runs at shutdown

``attach`` runs once in the serving process after the scheduler has started. It gets the
service (``proxy``, ``context``, ``scheduler``, ``config_text``, and ``app``: the Flask app,
for an RM that adds its own HTTP endpoints) and may return an object whose ``stop()`` is
called on shutdown. An exception from ``attach`` fails the start, so a broken RM is seen at
once instead of serving an empty cluster.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyscheduler.config.loader import DEFAULT_CONFIG, parse_and_validate
from pyscheduler.scheduler.health_checker import HealthChecker
from pyscheduler.events.system import EventSystem
from pyscheduler.objects.application import AppTimeouts
from pyscheduler.rmproxy.proxy import RMProxy
from pyscheduler.scheduler.context import ClusterContext
from pyscheduler.scheduler.history import History
from pyscheduler.policies.role_history.store import DEFAULT_KEEP, DEFAULT_MAX_AGE, HistoryStore
from pyscheduler.reporter.examples import ReclaimAdvisor, TopologyLabeller
from pyscheduler.reporter.socket_plugins import PluginDirectory
from pyscheduler.reporter.manager import DEFAULT_GRACE, DEFAULT_PERIOD, DEFAULT_TIMEOUT, ManagerSettings, ReporterManager
from pyscheduler.scheduler.loop import Scheduler
from pyscheduler.scheduler.role_history_saver import DEFAULT_SAVE_DELAY, RoleHistorySaver

__all__ = ["DEFAULT_BIND", "ServeOptions", "SchedulerService", "load_attach"]

log = logging.getLogger(__name__)

#: YuniKorn listens on :9080; the service binds to the loopback interface unless told otherwise.
DEFAULT_BIND = "127.0.0.1:9080"
#: YuniKorn's ``health.checkInterval`` default.
DEFAULT_HEALTH_INTERVAL = 30.0
#: The demo expires terminated applications after an hour (YuniKorn: 3 days) so an endless
#: demo does not grow without bound.
DEMO_TERMINATED_TIMEOUT = 3600.0

_TRUE = frozenset({"1", "true", "yes", "on"})


@dataclass(frozen=True)
class ServeOptions:
    """What to serve. ``pyscheduler serve`` builds it from its flags; a bare
    ``gunicorn -c python:pyscheduler_web.gunicorn_conf`` from the environment
    (:meth:`from_env`)."""

    #: A queues.yaml for the RMs to register with (None: the default configuration).
    config_path: str | None = None
    #: Attach the demo RM (a small simulated cluster kept busy).
    demo: bool = False
    demo_seed: int = 1
    #: ``module:callable`` RMs to attach (see the module doc).
    rms: tuple[str, ...] = ()
    health_interval: float = DEFAULT_HEALTH_INTERVAL
    #: Keep the application and container history (``/ws/v1/history/*``).
    history: bool = True
    #: Where role histories are saved (a path or an fsspec URL); None: in memory only.
    role_history_dir: str | None = None
    role_history_keep: int = DEFAULT_KEEP
    role_history_max_age: float = DEFAULT_MAX_AGE
    role_history_save_delay: float = DEFAULT_SAVE_DELAY
    #: The node reporter manager: seconds between rounds, per-plugin poll timeout, grace
    #: period of a plugin that went away, Katalyst's enable rule, checkpoint file (None: none).
    reporter_period: float = DEFAULT_PERIOD
    reporter_timeout: float = DEFAULT_TIMEOUT
    reporter_grace: float = DEFAULT_GRACE
    reporter_enabled: tuple[str, ...] = ("*",)
    reporter_checkpoint: str | None = None
    #: Where socket plugins register (``<dir>/<node id>/<plugin>.sock``); None: no socket plugins.
    reporter_dir: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ServeOptions:
        """``PYSCHEDULER_CONFIG``, ``PYSCHEDULER_DEMO`` (1/true), ``PYSCHEDULER_DEMO_SEED``,
        ``PYSCHEDULER_RM`` (comma-separated ``module:callable``), ``PYSCHEDULER_HEALTH_INTERVAL``
        (seconds), ``PYSCHEDULER_HISTORY`` (0 turns it off), ``PYSCHEDULER_ROLE_HISTORY_DIR``,
        ``PYSCHEDULER_ROLE_HISTORY_KEEP``, ``PYSCHEDULER_ROLE_HISTORY_MAX_AGE`` and
        ``PYSCHEDULER_ROLE_HISTORY_SAVE_DELAY`` (seconds), ``PYSCHEDULER_REPORTER_PERIOD``,
        ``PYSCHEDULER_REPORTER_TIMEOUT``, ``PYSCHEDULER_REPORTER_GRACE`` (seconds),
        ``PYSCHEDULER_REPORTER_ENABLE`` (comma-separated rules), ``PYSCHEDULER_REPORTER_CHECKPOINT``
        and ``PYSCHEDULER_REPORTER_DIR``."""
        env = os.environ if environ is None else environ
        rms = tuple(r.strip() for r in env.get("PYSCHEDULER_RM", "").split(",") if r.strip())
        return cls(
            config_path=env.get("PYSCHEDULER_CONFIG") or None,
            demo=env.get("PYSCHEDULER_DEMO", "").strip().lower() in _TRUE,
            demo_seed=int(env.get("PYSCHEDULER_DEMO_SEED", "1")),
            rms=rms,
            health_interval=float(env.get("PYSCHEDULER_HEALTH_INTERVAL", DEFAULT_HEALTH_INTERVAL)),
            history=env.get("PYSCHEDULER_HISTORY", "1").strip().lower() in _TRUE,
            role_history_dir=env.get("PYSCHEDULER_ROLE_HISTORY_DIR") or None,
            role_history_keep=int(env.get("PYSCHEDULER_ROLE_HISTORY_KEEP", DEFAULT_KEEP)),
            role_history_max_age=float(env.get("PYSCHEDULER_ROLE_HISTORY_MAX_AGE", DEFAULT_MAX_AGE)),
            role_history_save_delay=float(env.get("PYSCHEDULER_ROLE_HISTORY_SAVE_DELAY", DEFAULT_SAVE_DELAY)),
            reporter_period=float(env.get("PYSCHEDULER_REPORTER_PERIOD", DEFAULT_PERIOD)),
            reporter_timeout=float(env.get("PYSCHEDULER_REPORTER_TIMEOUT", DEFAULT_TIMEOUT)),
            reporter_grace=float(env.get("PYSCHEDULER_REPORTER_GRACE", DEFAULT_GRACE)),
            reporter_enabled=tuple(r.strip() for r in env.get("PYSCHEDULER_REPORTER_ENABLE", "*").split(",") if r.strip()),
            reporter_checkpoint=env.get("PYSCHEDULER_REPORTER_CHECKPOINT") or None,
            reporter_dir=env.get("PYSCHEDULER_REPORTER_DIR") or None,
        )

    def to_env(self) -> dict[str, str]:
        """The environment :meth:`from_env` reads back into these options."""
        env = {
            "PYSCHEDULER_DEMO": "1" if self.demo else "0",
            "PYSCHEDULER_DEMO_SEED": str(self.demo_seed),
            "PYSCHEDULER_RM": ",".join(self.rms),
            "PYSCHEDULER_HEALTH_INTERVAL": repr(self.health_interval),
            "PYSCHEDULER_HISTORY": "1" if self.history else "0",
            "PYSCHEDULER_ROLE_HISTORY_KEEP": str(self.role_history_keep),
            "PYSCHEDULER_ROLE_HISTORY_MAX_AGE": repr(self.role_history_max_age),
            "PYSCHEDULER_ROLE_HISTORY_SAVE_DELAY": repr(self.role_history_save_delay),
            "PYSCHEDULER_REPORTER_PERIOD": repr(self.reporter_period),
            "PYSCHEDULER_REPORTER_TIMEOUT": repr(self.reporter_timeout),
            "PYSCHEDULER_REPORTER_GRACE": repr(self.reporter_grace),
            "PYSCHEDULER_REPORTER_ENABLE": ",".join(self.reporter_enabled),
        }
        if self.reporter_checkpoint:
            env["PYSCHEDULER_REPORTER_CHECKPOINT"] = self.reporter_checkpoint
        if self.reporter_dir:
            env["PYSCHEDULER_REPORTER_DIR"] = self.reporter_dir
        if self.config_path:
            env["PYSCHEDULER_CONFIG"] = self.config_path
        if self.role_history_dir:
            env["PYSCHEDULER_ROLE_HISTORY_DIR"] = self.role_history_dir
        return env

    def role_history_store(self) -> HistoryStore | None:
        """The store of ``role_history_dir`` (ValueError for a bad setting or an unknown URL
        protocol, ImportError for a protocol whose fsspec driver is not installed)."""
        if not self.role_history_dir:
            return None
        if not self.role_history_save_delay > 0:
            raise ValueError(f"the role history save delay must be positive, not {self.role_history_save_delay}")
        return HistoryStore(self.role_history_dir, keep=self.role_history_keep, max_age=self.role_history_max_age)

    def reporter_settings(self) -> ManagerSettings:
        """The reporter manager's settings (ValueError for a non-positive period or timeout,
        or a negative grace period)."""
        if not (self.reporter_period > 0 and self.reporter_timeout > 0 and self.reporter_grace >= 0):
            raise ValueError("the reporter period and timeout must be positive and the grace period not negative")
        return ManagerSettings(self.reporter_period, self.reporter_timeout, self.reporter_grace,
                               self.reporter_enabled, self.reporter_checkpoint)

    def read_config(self) -> str:
        """The configuration text, validated (raises OSError or ConfigValidationError)."""
        if self.config_path is None:
            return DEFAULT_CONFIG
        text = Path(self.config_path).read_text(encoding="utf-8")
        parse_and_validate(text)
        return text


def load_attach(spec: str) -> Callable[[SchedulerService], Any]:
    """The callable named by ``module:callable`` (``module`` alone means ``module:attach``)."""
    module_name, _, attr = spec.partition(":")
    module = importlib.import_module(module_name)
    target: Any = module
    for part in (attr or "attach").split("."):
        target = getattr(target, part)
    if not callable(target):
        raise TypeError(f"{spec} is not callable")
    return target  # type: ignore[no-any-return]


@dataclass
class _Stoppable:
    name: str
    stop: Callable[[], Any]


@dataclass
class SchedulerService:
    """One scheduler: RM proxy, cluster context, scheduling loop, history and health checks."""

    options: ServeOptions = field(default_factory=ServeOptions)

    def __post_init__(self) -> None:
        self.config_text = self.options.read_config()
        timeouts = AppTimeouts(terminated=DEMO_TERMINATED_TIMEOUT) if self.options.demo else None
        store = self.options.role_history_store()
        self.context = ClusterContext(timeouts=timeouts, role_history_store=store)
        #: Saves role histories when they change (None: no role history directory).
        self.role_history_saver = (
            RoleHistorySaver(self.context, store, self.options.role_history_save_delay) if store is not None else None
        )
        self.proxy = RMProxy(self.context)
        #: The node reporter manager: merges what its plugins report about every RM's nodes
        #: (``/ws/v1/reporters``); the demo registers two plugins.
        self.reporters = ReporterManager(self.proxy, None, self.options.reporter_settings())
        #: Socket plugins registering in ``--reporter-dir`` (None: none).
        self.plugin_directory = (
            PluginDirectory(self.reporters, self.options.reporter_dir) if self.options.reporter_dir else None
        )
        self.scheduler = Scheduler(self.context)
        #: Applications and containers sampled every minute (``/ws/v1/history/*``); None: off.
        self.history: History | None = History(self.context, self.context.clock) if self.options.history else None
        #: Checks once at start, then every ``health_interval`` s (``/ws/v1/scheduler/healthcheck``).
        self.health = HealthChecker(self.context, self.scheduler, self.options.health_interval)
        self.started_ns = 0
        #: Set when the process is about to stop: open event streams end at once.
        self.stopping = threading.Event()
        #: The Flask app serving this service (set by the factory; for attached RMs).
        self.app: Any = None
        self._attached: list[_Stoppable] = []
        self._lock = threading.Lock()
        self._state = "new"

    @property
    def event_system(self) -> EventSystem:
        return self.context.event_system

    @property
    def running(self) -> bool:
        return self._state == "running"

    def start(self) -> None:
        """Start the scheduling loop, history and health checks, then attach the RMs."""
        with self._lock:
            if self._state != "new":
                return
            self._state = "running"
        self.started_ns = time.time_ns()
        self.context.event_system.start()
        self.scheduler.start()
        if self.history is not None:
            self.history.start()
        self.health.start()
        self.reporters.start()
        if self.plugin_directory is not None:
            self.plugin_directory.start()
        if self.role_history_saver is not None:
            self.role_history_saver.start()
        try:
            if self.options.demo:
                from pyscheduler_web.demo import DemoRM, DemoSettings

                demo = DemoRM(self.proxy, self.config_text, DemoSettings(seed=self.options.demo_seed))
                demo.start()
                self._attached.append(_Stoppable("demo RM", demo.stop))
                self.reporters.register(TopologyLabeller(self.context))
                self.reporters.register(ReclaimAdvisor(self.context))
            for spec in self.options.rms:
                attached = load_attach(spec)(self)
                stop = getattr(attached, "stop", None)
                if callable(stop):
                    self._attached.append(_Stoppable(spec, stop))
        except BaseException:
            self.stop()
            raise
        log.info("scheduler started (instance %s)", self.context.event_system.instance_uuid)

    def begin_shutdown(self) -> None:
        """The process is stopping: let long requests (event streams) end now."""
        self.stopping.set()
        self.event_system.release_streams()

    def stop(self) -> None:
        """Stop the attached RMs, the loop, history, health checks and the event system."""
        with self._lock:
            if self._state == "stopped":
                return
            self._state = "stopped"
        self.stopping.set()
        _quietly("event streams", self.event_system.release_streams)
        for item in reversed(self._attached):
            _quietly(item.name, item.stop)
        self._attached.clear()
        _quietly("health checker", self.health.stop)
        if self.plugin_directory is not None:
            _quietly("reporter plugin directory", self.plugin_directory.stop)
        _quietly("reporter manager", self.reporters.stop)
        if self.history is not None:
            _quietly("history", self.history.stop)
        _quietly("scheduling loop", self.scheduler.stop)
        if self.role_history_saver is not None:
            _quietly("role history saver", self.role_history_saver.stop)  # a last save
        _quietly("RM proxy", self.proxy.stop)
        log.info("scheduler stopped")


def _quietly(name: str, stop: Callable[[], Any]) -> None:
    try:
        stop()
    except Exception:
        log.exception("stopping the %s failed", name)


