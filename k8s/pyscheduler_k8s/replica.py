"""One replica of the served scheduler on Kubernetes: the shim runs while this replica leads
(:mod:`.leader`), and nothing runs while it stands by. Taking the lead starts a fresh shim, which
registers with the core again and recovers the cluster from the API server as on a restart
(bound pods are existing allocations, pending ones asks), so a standby that takes over binds
nothing twice; stepping down stops the shim, so only the leader binds."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from pyscheduler_k8s.kubeapi import KubeApi
from pyscheduler_k8s.leader import LeaderElector, LeaseSettings
from pyscheduler_k8s.shim import KubeShim

__all__ = ["Replica"]

log = logging.getLogger(__name__)


class Replica:
    def __init__(self, make_shim: Callable[[], KubeShim], api: KubeApi, identity: str, settings: LeaseSettings) -> None:
        self._make_shim = make_shim
        self._lock = threading.Lock()
        self._shim: KubeShim | None = None
        self.elector = LeaderElector(api, identity, settings, self._lead, self._stand_by)
        #: Set once a shim this replica started has recovered the cluster (for tests and status).
        self.leading = threading.Event()

    @property
    def shim(self) -> KubeShim | None:
        with self._lock:
            return self._shim

    def start(self) -> None:
        self.elector.start()

    def stop(self) -> None:
        """Steps down (releasing the Lease) and stops the shim."""
        self.elector.stop(release=True)
        self._stand_by()

    def kill(self) -> None:
        """Stops as a replica that died would: the Lease stays with it until it expires."""
        self.elector.stop(release=False)
        self._stand_by()

    def status(self) -> dict[str, Any]:
        return self.elector.status()

    def _lead(self) -> None:
        shim = self._make_shim()
        try:
            shim.start()
        except Exception:
            log.exception("the shim did not start: stepping down")
            shim.stop()
            self.elector.stop(release=True)
            return
        with self._lock:
            if not self.elector.is_leader:  # lost the lead while recovering
                shim.stop()
                return
            self._shim = shim
        self.leading.set()

    def _stand_by(self) -> None:
        with self._lock:
            shim, self._shim = self._shim, None
        self.leading.clear()
        if shim is not None:
            shim.stop()
