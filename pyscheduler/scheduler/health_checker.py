"""The health checker: :func:`~pyscheduler.scheduler.health.check_health` once at start, then
every ``interval`` seconds on a background thread, keeping the last result for the REST layer. A run that raises is a failed result with the reason, never
an exception and never the previous result served as current.

The checker belongs to one cluster context: creating it makes it the context's
(``ClusterContext.health_checker``), which is where ``/ws/v1/scheduler/healthcheck`` reads its
last result. A check that raises is logged and the next one still runs.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from pyscheduler.common.background import BackgroundThread
from pyscheduler.common.goduration import parse_go_duration
from pyscheduler.scheduler.health import HealthCheck, HealthResult, check_health

if TYPE_CHECKING:
    from pyscheduler.scheduler.context import ClusterContext
    from pyscheduler.scheduler.loop import Scheduler

__all__ = ["DEFAULT_HEALTH_CHECK_INTERVAL", "HEALTH_CHECK_INTERVAL_KEY", "HealthChecker", "health_check_interval"]

log = logging.getLogger(__name__)

#: The extra-config key of the health check interval (a Go duration) and its default.
HEALTH_CHECK_INTERVAL_KEY: Final = "health.checkInterval"
DEFAULT_HEALTH_CHECK_INTERVAL: Final = 30.0
#: The name of the check a failed run reports (the checks themselves could not run).
CHECKS_RAN: Final = "Health check run"


def health_check_interval(extra: Mapping[str, str] | None, default: float = DEFAULT_HEALTH_CHECK_INTERVAL) -> float:
    """Seconds between checks from the extra config's ``health.checkInterval`` (a Go duration
    such as ``30s``); ``default`` when absent or invalid. A value <= 0 disables periodic runs."""
    text = (extra or {}).get(HEALTH_CHECK_INTERVAL_KEY)
    if not text:
        return default
    try:
        return parse_go_duration(text) / 1e9
    except ValueError:
        log.warning("invalid %s %r: using %ss", HEALTH_CHECK_INTERVAL_KEY, text, default)
        return default


class HealthChecker:
    """Runs the checks once at start, then every ``interval`` seconds (``interval`` <= 0: only
    the first run), and keeps the last result. Creating one makes it ``ctx.health_checker``."""

    def __init__(
        self,
        ctx: ClusterContext,
        scheduler: Scheduler | None = None,
        interval: float = DEFAULT_HEALTH_CHECK_INTERVAL,
    ) -> None:
        self.ctx = ctx
        self.scheduler = scheduler
        self.interval = interval
        self._last: HealthResult | None = None
        self._lock = threading.Lock()
        self._thread = BackgroundThread("pyscheduler-health", self._step, interval=interval)
        ctx.health_checker = self

    @property
    def last(self) -> HealthResult | None:
        """The last result, None until a check ran."""
        with self._lock:
            return self._last

    def run_once(self) -> HealthResult:
        """Runs the checks now and keeps the result. Never raises: checks that cannot run are a
        failed result (served as such), not a silent keep of the previous one."""
        try:
            result = check_health(self.ctx, self.scheduler)
        except Exception as err:  # the checker must report, not die or hide behind old news
            log.exception("the health checks could not run")
            result = HealthResult(
                False,
                (
                    HealthCheck(
                        CHECKS_RAN,
                        False,
                        "The health checks ran to the end",
                        f"The health checks could not run: {type(err).__name__}: {err}",
                    ),
                ),
            )
        with self._lock:
            self._last = result
        if not result.healthy:
            log.error("scheduler is not healthy: %s", result.explain())
        return result

    def _step(self) -> None:
        self.run_once()

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._thread.stop(timeout)

    @property
    def running(self) -> bool:
        """The background thread is alive (with ``interval`` <= 0 it ends after its one run)."""
        return self._thread.alive
