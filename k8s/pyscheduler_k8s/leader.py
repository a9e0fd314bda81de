"""Two replicas, one active: leader election through a ``coordination.k8s.io/v1`` Lease, the way
client-go's ``leaderelection`` runs it for kube-scheduler and the controllers (YuniKorn has none).

Every ``retry_period`` each replica reads the Lease. A replica takes it when nobody holds it or
when the holder has not renewed it for ``lease_duration`` *as this replica observed it* (the time
this replica last saw the record change, not the holder's clock: clocks may disagree); the
leader renews it. Every write is an update with the record's resource version, so two replicas
that try at once cannot both win (one gets 409 Conflict). A leader that cannot renew for
``renew_deadline`` steps down. Stopping a leader releases the Lease (empty holder), so a standby
takes over at its next retry instead of after the lease duration.

The times come from the served process's environment (:meth:`LeaseSettings.from_environment`:
``PYSCHEDULER_K8S_LEASE_DURATION``, ``PYSCHEDULER_K8S_RENEW_DEADLINE``,
``PYSCHEDULER_K8S_RETRY_PERIOD``, seconds), kube-scheduler's defaults otherwise; they must
satisfy ``lease_duration > renew_deadline > retry_period > 0`` (client-go's rule).

``on_started_leading`` runs on its own thread (starting the shim lists the whole cluster, and
renewals must go on meanwhile); ``on_stopped_leading`` on the elector's thread. Both threads are
:class:`~pyscheduler.common.background.BackgroundThread` s: the elector's steps every
``retry_period``, the start is a one-shot.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Final

from pyscheduler.common.background import BackgroundThread
from pyscheduler_k8s.kubeapi import KubeApi, KubeApiError

__all__ = ["LEASE_ENVIRONMENT", "LeaderElector", "LeaseSettings", "default_identity"]

log = logging.getLogger(__name__)


def default_identity() -> str:
    """``<hostname>_<uuid>``, as client-go's users make it: unique per process."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


#: Seconds a stopping leader waits for its shim's start still in progress before it releases.
START_WAIT: Final = 3.0
#: The environment variables of the served process that set :class:`LeaseSettings`' times.
LEASE_ENVIRONMENT: Final = {"lease_duration": "PYSCHEDULER_K8S_LEASE_DURATION",
                            "renew_deadline": "PYSCHEDULER_K8S_RENEW_DEADLINE",
                            "retry_period": "PYSCHEDULER_K8S_RETRY_PERIOD"}


@dataclass(frozen=True)
class LeaseSettings:
    name: str = "pyscheduler"
    namespace: str = "default"
    #: kube-scheduler's defaults.
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not self.lease_duration > self.renew_deadline > self.retry_period > 0:
            raise ValueError(f"lease times must satisfy lease duration ({self.lease_duration:g} s) > renew deadline "
                             f"({self.renew_deadline:g} s) > retry period ({self.retry_period:g} s) > 0")

    @classmethod
    def from_environment(cls, namespace: str, environ: Mapping[str, str] = os.environ) -> LeaseSettings:
        """The Lease in ``namespace`` with the times :data:`LEASE_ENVIRONMENT` names (seconds;
        unset or empty: the default). Raises ValueError naming the variable that is not a number,
        or the rule the times break."""
        def seconds(field_name: str, default: float) -> float:
            variable = LEASE_ENVIRONMENT[field_name]
            raw = environ.get(variable, "").strip()
            if not raw:
                return default
            try:
                return float(raw)
            except ValueError:
                raise ValueError(f"{variable} must be a number of seconds, not {raw!r}") from None

        return cls(namespace=namespace, lease_duration=seconds("lease_duration", cls.lease_duration),
                   renew_deadline=seconds("renew_deadline", cls.renew_deadline),
                   retry_period=seconds("retry_period", cls.retry_period))


class LeaderElector:
    def __init__(self, api: KubeApi, identity: str, settings: LeaseSettings,
                 on_started_leading: Callable[[], None], on_stopped_leading: Callable[[], None],
                 *, clock: Callable[[], float] = time.monotonic) -> None:
        self.api = api
        self.identity = identity
        self.settings = settings
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._clock = clock
        self._thread = BackgroundThread("k8s-leader-election", self._step, interval=settings.retry_period)
        #: The last ``on_started_leading`` call's thread.
        self._starter: BackgroundThread | None = None
        self._lock = threading.Lock()
        self._leader = False
        #: The holder last seen, and the record (holder, renew time) with when it was seen to change.
        self._holder = ""
        self._observed: tuple[str, str] | None = None
        self._observed_at = 0.0
        self._last_renew = 0.0
        self.transitions = 0

    @property
    def path(self) -> str:
        return f"/apis/coordination.k8s.io/v1/namespaces/{self.settings.namespace}/leases/{self.settings.name}"

    def status(self) -> dict[str, Any]:
        """What the REST API shows: this replica's role, its identity, the holder it last saw."""
        with self._lock:
            return {"role": "leader" if self._leader else "standby", "identity": self.identity,
                    "holder": self._holder, "lease": f"{self.settings.namespace}/{self.settings.name}"}

    @property
    def is_leader(self) -> bool:
        with self._lock:
            return self._leader

    def start(self) -> None:
        self._thread.start()

    def stop(self, *, release: bool = True) -> None:
        """Stops taking part; a leader steps down (``release``: and then empties the Lease's
        holder so a standby takes over at once; False plays a replica that died).

        The step down comes first: ``on_stopped_leading`` (the shim stopping: its binders finish
        the bindings in hand) returns before the Lease is released, so no binding of this
        replica's runs while the next leader lists the cluster. A start still in progress is
        waited for too, up to :data:`START_WAIT` (its shim is stopped by the start itself once
        it sees the step down; a longer wait would outlast the process's graceful stop, and the
        Lease would then stay taken for its whole duration)."""
        self._thread.stop(timeout=10.0)
        was_leader = self.is_leader
        self._step_down()
        starter = self._starter
        if starter is not None:
            starter.stop(timeout=START_WAIT)
        if was_leader and release:
            self._release()

    # -- the loop -----------------------------------------------------------------------------------

    def _step(self) -> None:
        """One acquire-or-renew (the thread steps every ``retry_period``)."""
        try:
            held = self._try_acquire_or_renew()
        except KubeApiError as exc:  # the API server is unreachable or refused: one line, retried
            log.warning("lease %s: acquire or renew failed: %s", self.path, exc)
            log.debug("lease %s: acquire or renew failed", self.path, exc_info=True)
            held = False
        except Exception:  # answered nonsense: retry, with the traceback
            log.exception("lease %s: acquire or renew failed", self.path)
            held = False
        now = self._clock()
        if held:
            self._last_renew = now
            if not self.is_leader:
                with self._lock:
                    self._leader = True
                log.info("%s leads (lease %s)", self.identity, self.path)
                self._starter = BackgroundThread("k8s-leader-start", self._on_started, interval=0)
                self._starter.start()
        elif self.is_leader and now - self._last_renew > self.settings.renew_deadline:
            log.warning("%s could not renew lease %s for %g s: stepping down", self.identity, self.path,
                        self.settings.renew_deadline)
            self._step_down()

    def _step_down(self) -> None:
        with self._lock:
            was, self._leader = self._leader, False
        if was:
            self._on_stopped()

    def _try_acquire_or_renew(self) -> bool:
        now_text = _micro_time()
        try:
            lease = self.api.request("GET", self.path)
        except KubeApiError as exc:
            if exc.status != 404:
                raise
            return self._create(now_text)
        spec = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        record = (holder, str(spec.get("renewTime") or ""))
        now = self._clock()
        if record != self._observed:
            self._observed, self._observed_at = record, now
        with self._lock:
            self._holder = holder
        duration = float(spec.get("leaseDurationSeconds") or self.settings.lease_duration)
        if holder and holder != self.identity and now < self._observed_at + duration:
            return False  # held by another replica that renews it
        new_spec = dict(spec)
        new_spec.update(holderIdentity=self.identity, renewTime=now_text,
                        leaseDurationSeconds=int(round(self.settings.lease_duration)))
        if holder != self.identity:
            new_spec.update(acquireTime=now_text, leaseTransitions=int(spec.get("leaseTransitions") or 0) + 1)
        lease["spec"] = new_spec
        try:
            self.api.request("PUT", self.path, lease)
        except KubeApiError as exc:
            if exc.status == 409:
                return False  # another replica wrote it first
            raise
        if holder != self.identity:
            self.transitions += 1
        with self._lock:
            self._holder = self.identity
        return True

    def _create(self, now_text: str) -> bool:
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": self.settings.name, "namespace": self.settings.namespace},
                "spec": {"holderIdentity": self.identity, "leaseDurationSeconds": int(round(self.settings.lease_duration)),
                         "acquireTime": now_text, "renewTime": now_text, "leaseTransitions": 0}}
        try:
            self.api.request("POST", self.path.rsplit("/", 1)[0], body)
        except KubeApiError as exc:
            if exc.status == 409:
                return False
            raise
        self.transitions += 1
        with self._lock:
            self._holder = self.identity
        return True

    def _release(self) -> None:
        try:
            lease = self.api.request("GET", self.path)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            spec.update(holderIdentity="", leaseDurationSeconds=1, renewTime=_micro_time())
            lease["spec"] = spec
            self.api.request("PUT", self.path, lease)
        except KubeApiError as exc:
            log.info("lease %s not released: %s", self.path, exc)
            return
        log.info("%s released lease %s", self.identity, self.path)


def _micro_time() -> str:
    """A MicroTime: RFC 3339 with microseconds."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
