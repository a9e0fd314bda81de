"""The shim started without leader election (``PYSCHEDULER_K8S_LEADER_ELECTION=false``): the
only replica, always the leader. It declares the same ``GET /ws/v1/k8s/leadership`` as a
:class:`~pyscheduler_k8s.replica.Replica` does.

:meth:`SoleShim.start` starts the shim on the caller's thread (one cluster: a cluster that
cannot be reached fails the serve at once, as before). :meth:`SoleShim.start_in_background`
(several clusters) starts it on a thread of its own instead, trying again after a doubling wait
(:data:`~pyscheduler_k8s.replica.START_RETRY` to ``START_RETRY_MAX``) with a fresh shim each
time, one warning per failed attempt, so a cluster away at start holds up nothing else and is
listed when it answers.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from pyscheduler.common.background import BackgroundThread
from pyscheduler.service.rm import Route
from pyscheduler_k8s.api_metrics import ApiMeasured
from pyscheduler_k8s.replica import LEADERSHIP_RULE, START_RETRY, START_RETRY_MAX
from pyscheduler_k8s.shim import KubeShim

__all__ = ["SoleShim"]

log = logging.getLogger(__name__)


class SoleShim(ApiMeasured):
    def __init__(self, make_shim: Callable[[], KubeShim], *, start_retry: float = START_RETRY) -> None:
        self._make_shim = make_shim
        self._start_retry = start_retry
        self._lock = threading.Lock()
        self._shim: KubeShim | None = None
        self._problem = ""
        self._stopping = threading.Event()
        self._starter: BackgroundThread | None = None

    @property
    def shim(self) -> KubeShim | None:
        with self._lock:
            return self._shim

    def start(self) -> None:
        """Starts the shim now; its failure propagates."""
        shim = self._make_shim()
        shim.start()
        with self._lock:
            self._shim = shim

    def start_in_background(self) -> None:
        """Starts the shim on its own thread, trying until it starts or :meth:`stop`."""
        self._starter = BackgroundThread("k8s-sole-start", self._start_until_started, interval=0)
        self._starter.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._starter is not None:
            self._starter.stop(timeout=10.0)
        with self._lock:
            shim, self._shim = self._shim, None
        if shim is not None:
            shim.finish_replacements()  # a restart then finds no gang halfway through a replacement
            shim.stop()

    def status(self) -> dict[str, Any]:
        status: dict[str, Any] = {"role": "leader", "identity": "", "holder": "", "lease": ""}
        with self._lock:
            if self._starter is not None:  # started in the background: say whether it runs yet
                status["shim"] = "running" if self._shim is not None else "starting"
                if self._shim is None and self._problem:
                    status["problem"] = self._problem
        return status

    def routes(self) -> Sequence[Route]:
        return (Route(LEADERSHIP_RULE, "k8s_leadership", self.status),)

    def _start_until_started(self) -> None:
        delay = self._start_retry
        while not self._stopping.is_set():
            shim = self._make_shim()
            try:
                shim.start()
            except Exception as exc:
                shim.stop()
                log.warning("the shim (rm %s) did not start: %s; trying again in %g s", shim.options.rm_id, exc, delay)
                with self._lock:
                    self._problem = f"the shim did not start: {exc}"
                if self._stopping.wait(delay):
                    return
                delay = min(START_RETRY_MAX, delay * 2)
                continue
            with self._lock:
                if not self._stopping.is_set():
                    self._shim, self._problem = shim, ""
                    return
            shim.stop()  # stopped while it started
            return
