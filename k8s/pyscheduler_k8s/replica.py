"""One replica of the served scheduler on Kubernetes: the shim runs while this replica leads
(:mod:`.leader`), and nothing runs while it stands by. Taking the lead starts a fresh shim, which
registers with the core again and recovers the cluster from the API server as on a restart
(bound pods are existing allocations, pending ones asks), so a standby that takes over binds
nothing twice; stepping down stops the shim, so only the leader binds.

A shim that cannot start (the API server away, the ConfigMap's configuration invalid: the shim
says so on the ConfigMap) is started again after a doubling wait (1 s to 30 s) while this
replica still leads: nothing is placed meanwhile (the other replica would fail the same way, and
a placement under another configuration than the user's is worse than none), and a fixed
ConfigMap is picked up by the next attempt. The status says why it waits."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, Final

from pyscheduler.service.rm import Route
from pyscheduler_k8s.api_metrics import ApiMeasured
from pyscheduler_k8s.kubeapi import KubeApi, KubeApiError
from pyscheduler_k8s.leader import LeaderElector, LeaseSettings
from pyscheduler_k8s.shim import KubeShim

__all__ = ["LEADERSHIP_RULE", "Replica"]

log = logging.getLogger(__name__)

#: Seconds before a shim that did not start is started again (doubled each time, up to the maximum).
START_RETRY: Final = 1.0
START_RETRY_MAX: Final = 30.0
#: Where the served scheduler says which replica leads (:meth:`Replica.status`).
LEADERSHIP_RULE: Final = "/ws/v1/k8s/leadership"


class Replica(ApiMeasured):
    def __init__(self, make_shim: Callable[[], KubeShim], api: KubeApi, identity: str, settings: LeaseSettings,
                 *, start_retry: float = START_RETRY) -> None:
        self._make_shim = make_shim
        self._start_retry = start_retry
        self._lock = threading.Lock()
        self._shim: KubeShim | None = None
        #: Counts the terms this replica led: a start still retrying for an earlier term gives up.
        self._term = 0
        #: Why the shim of this term is not running yet ("" once it runs).
        self._problem = ""
        self._stopping = threading.Event()
        self.elector = LeaderElector(api, identity, settings, self._lead, self._stand_by)
        #: Set once a shim this replica started has recovered the cluster (for tests and status).
        self.leading = threading.Event()

    @property
    def shim(self) -> KubeShim | None:
        with self._lock:
            return self._shim

    def start(self) -> None:
        self.elector.start()

    def start_in_background(self) -> None:
        """:meth:`start`: the elector and the shim it starts run on their own threads already."""
        self.start()

    def stop(self) -> None:
        """A graceful stop (SIGTERM: a rolling upgrade): the placeholder replacements under way
        are finished while this replica still leads (:meth:`.KubeShim.finish_replacements`),
        then it steps down (the shim stopped, its bindings in hand done) and releases the
        Lease, so the standby takes over at its next retry."""
        self._stopping.set()
        shim = self.shim
        if shim is not None and self.elector.is_leader:
            shim.finish_replacements()
        self.elector.stop(release=True)
        self._stand_by()

    def kill(self) -> None:
        """Stops as a replica that died would: the Lease stays with it until it expires."""
        self._stopping.set()
        self.elector.stop(release=False)
        self._stand_by()

    def status(self) -> dict[str, Any]:
        """The elector's status, and whether the shim runs: ``running``, ``starting`` (with
        ``problem``: why the last attempt failed) or ``stopped`` (a standby)."""
        status = self.elector.status()
        with self._lock:
            if self._shim is not None:
                status["shim"] = "running"
            elif status["role"] == "leader":
                status["shim"] = "starting"
                if self._problem:
                    status["problem"] = self._problem
            else:
                status["shim"] = "stopped"
        return status

    def routes(self) -> Sequence[Route]:
        """``GET /ws/v1/k8s/leadership``: :meth:`status` (for the service this replica is attached to)."""
        return (Route(LEADERSHIP_RULE, "k8s_leadership", self.status),)

    def _lead(self) -> None:
        with self._lock:
            self._term += 1
            term, self._problem = self._term, ""
        delay = self._start_retry
        while True:
            with self._lock:
                if term != self._term or not self.elector.is_leader or self._stopping.is_set():
                    return
            shim = self._make_shim()
            problem: Exception | None = None
            try:
                shim.start()
            except KubeApiError as exc:  # the API server away: one line (the traceback at debug level)
                log.warning("the shim did not start: %s; trying again in %g s", exc, delay)
                log.debug("the shim did not start", exc_info=True)
                problem = exc
            except Exception as exc:
                log.exception("the shim did not start: trying again in %g s", delay)
                problem = exc
            if problem is not None:
                shim.stop()
                with self._lock:
                    self._problem = f"the shim did not start: {problem}"
                if self._stopping.wait(delay):
                    return
                delay = min(START_RETRY_MAX, delay * 2)
                continue
            with self._lock:
                if term == self._term and self.elector.is_leader and not self._stopping.is_set():
                    self._shim, self._problem = shim, ""
                    self.leading.set()
                    return
            shim.stop()  # lost the lead while recovering
            return

    def _stand_by(self) -> None:
        with self._lock:
            shim, self._shim = self._shim, None
        self.leading.clear()
        if shim is not None:
            shim.stop()
