"""What a :class:`~pyscheduler.service.SchedulerService` is built from.

:class:`CoreOptions` holds everything about one scheduler that is not HTTP: the queues
configuration, the RMs named on the command line, history, health checks, role history
storage, the node reporter manager, and the switches an embedder without real time needs
(the simulator and tests: an injected clock, no scheduling thread, no background threads).

The environment form (:meth:`CoreOptions.from_env`, :meth:`CoreOptions.to_env`) carries the
serialisable fields only (the clock and the switches stay at their defaults): it is how a bare
``gunicorn -c python:pyscheduler_web.gunicorn_conf`` worker learns what ``pyscheduler serve``
was asked.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pyscheduler.common.clock import Clock
from pyscheduler.config.loader import DEFAULT_CONFIG, parse_and_validate
from pyscheduler.objects.application import AppTimeouts
from pyscheduler.policies.role_history.store import DEFAULT_KEEP, DEFAULT_MAX_AGE, HistoryStore
from pyscheduler.reporter.rounds import DEFAULT_GRACE, DEFAULT_PERIOD, DEFAULT_TIMEOUT, ManagerSettings
from pyscheduler.scheduler.health_checker import DEFAULT_HEALTH_CHECK_INTERVAL
from pyscheduler.scheduler.loop import IDLE_INTERVAL
from pyscheduler.scheduler.role_history_saver import DEFAULT_SAVE_DELAY

__all__ = ["CoreOptions", "env_flag"]

_TRUE = frozenset({"1", "true", "yes", "on"})


def env_flag(value: str) -> bool:
    """An environment switch: ``1``, ``true``, ``yes`` or ``on`` (any case) is on."""
    return value.strip().lower() in _TRUE


@dataclass(frozen=True)
class CoreOptions:
    """One scheduler's settings (see the module doc)."""

    #: A queues.yaml for the RMs to register with (None: the default configuration).
    config_path: str | None = None
    #: ``module:callable`` RMs to attach at start (see :mod:`pyscheduler.service.rm`).
    rms: tuple[str, ...] = ()
    #: Seconds between health checks (0 or less: only the first check).
    health_interval: float = DEFAULT_HEALTH_CHECK_INTERVAL
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
    #: Seconds a terminated application is kept (None: YuniKorn's 3 days).
    terminated_timeout: float | None = None
    # -- for embedders without real time (not in the environment form) --------------------------
    #: The core's clock (None: the system clock).
    clock: Clock | None = field(default=None, compare=False)
    #: False: partitions order nodes in pure Python (comparison benchmarks); None: as the one
    #: native/pure switch says (:mod:`pyscheduler.common.native`, ``PYSCHEDULER_NATIVE``).
    native_node_ordering: bool | None = None
    #: Start the scheduling thread; False: the embedder runs ``service.scheduler.schedule_once()``.
    scheduling_loop: bool = True
    #: Seconds the scheduling thread waits when a cycle placed nothing.
    loop_idle_interval: float = IDLE_INTERVAL
    #: Start the service's other threads (request event publisher, history sampler, health
    #: checks, reporter rounds, socket plugin directory, role history saver); False: none run.
    background: bool = True

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> CoreOptions:
        """``PYSCHEDULER_CONFIG``, ``PYSCHEDULER_RM`` (comma-separated ``module:callable``),
        ``PYSCHEDULER_HEALTH_INTERVAL`` (seconds), ``PYSCHEDULER_HISTORY`` (0 turns it off),
        ``PYSCHEDULER_ROLE_HISTORY_DIR``, ``PYSCHEDULER_ROLE_HISTORY_KEEP``,
        ``PYSCHEDULER_ROLE_HISTORY_MAX_AGE`` and ``PYSCHEDULER_ROLE_HISTORY_SAVE_DELAY`` (seconds),
        ``PYSCHEDULER_REPORTER_PERIOD``, ``PYSCHEDULER_REPORTER_TIMEOUT``,
        ``PYSCHEDULER_REPORTER_GRACE`` (seconds), ``PYSCHEDULER_REPORTER_ENABLE`` (comma-separated
        rules), ``PYSCHEDULER_REPORTER_CHECKPOINT``, ``PYSCHEDULER_REPORTER_DIR`` and
        ``PYSCHEDULER_TERMINATED_TIMEOUT`` (seconds)."""
        env = os.environ if environ is None else environ
        terminated = env.get("PYSCHEDULER_TERMINATED_TIMEOUT", "").strip()
        return cls(
            config_path=env.get("PYSCHEDULER_CONFIG") or None,
            rms=_split(env.get("PYSCHEDULER_RM", "")),
            health_interval=float(env.get("PYSCHEDULER_HEALTH_INTERVAL", DEFAULT_HEALTH_CHECK_INTERVAL)),
            history=env_flag(env.get("PYSCHEDULER_HISTORY", "1")),
            role_history_dir=env.get("PYSCHEDULER_ROLE_HISTORY_DIR") or None,
            role_history_keep=int(env.get("PYSCHEDULER_ROLE_HISTORY_KEEP", DEFAULT_KEEP)),
            role_history_max_age=float(env.get("PYSCHEDULER_ROLE_HISTORY_MAX_AGE", DEFAULT_MAX_AGE)),
            role_history_save_delay=float(env.get("PYSCHEDULER_ROLE_HISTORY_SAVE_DELAY", DEFAULT_SAVE_DELAY)),
            reporter_period=float(env.get("PYSCHEDULER_REPORTER_PERIOD", DEFAULT_PERIOD)),
            reporter_timeout=float(env.get("PYSCHEDULER_REPORTER_TIMEOUT", DEFAULT_TIMEOUT)),
            reporter_grace=float(env.get("PYSCHEDULER_REPORTER_GRACE", DEFAULT_GRACE)),
            reporter_enabled=_split(env.get("PYSCHEDULER_REPORTER_ENABLE", "*")),
            reporter_checkpoint=env.get("PYSCHEDULER_REPORTER_CHECKPOINT") or None,
            reporter_dir=env.get("PYSCHEDULER_REPORTER_DIR") or None,
            terminated_timeout=float(terminated) if terminated else None,
        )

    def to_env(self) -> dict[str, str]:
        """The environment :meth:`from_env` reads back into these options."""
        env = {
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
        optional = {
            "PYSCHEDULER_CONFIG": self.config_path,
            "PYSCHEDULER_ROLE_HISTORY_DIR": self.role_history_dir,
            "PYSCHEDULER_REPORTER_CHECKPOINT": self.reporter_checkpoint,
            "PYSCHEDULER_REPORTER_DIR": self.reporter_dir,
            "PYSCHEDULER_TERMINATED_TIMEOUT": None if self.terminated_timeout is None else repr(self.terminated_timeout),
        }
        env.update({key: value for key, value in optional.items() if value})
        return env

    def read_config(self) -> str:
        """The configuration text, validated (raises OSError or ConfigValidationError)."""
        if self.config_path is None:
            return DEFAULT_CONFIG
        text = Path(self.config_path).read_text(encoding="utf-8")
        parse_and_validate(text)
        return text

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

    def app_timeouts(self) -> AppTimeouts | None:
        """The application timers (None: the core's defaults)."""
        return None if self.terminated_timeout is None else AppTimeouts(terminated=self.terminated_timeout)


def _split(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())
