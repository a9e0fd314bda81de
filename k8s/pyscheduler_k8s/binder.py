"""Binding the pods the core placed (kube-scheduler's PreBind and Bind), on a pool of binder
threads: a binding is a round trip to the API server (10-50 ms when it is busy), so the pool,
not the core, sets the rate (kube-scheduler binds each pod in a goroutine of its own).

For each (pod, node) the core placed: the pod's claims are bound first (:mod:`.volumes`' binder:
the volumes the cache assumed for them), then the pod (``pods/binding``). A successful binding
writes kube-scheduler's ``Scheduled`` event. A failed one gives the allocation's room back (in
the cache and to the core); a pod that is gone (404) or bound meanwhile (409) is the watch's to
report, after any other failure the pod asks again after a doubling pause (1 s to 60 s).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from pyscheduler.si import messages as si
from pyscheduler_k8s.cache.tasks import TaskCache
from pyscheduler_k8s.core_client import CoreClient
from pyscheduler_k8s.counts import ShimCounts
from pyscheduler_k8s.event_recorder import EventRecorder
from pyscheduler_k8s.kubeapi import KubeApi, KubeApiError
from pyscheduler_k8s.threads import DelayedCalls, QueuePool, backoff
from pyscheduler_k8s.volumes import VolumeBinder

__all__ = ["Binder", "PlacePod"]

#: Places a pod on a node once the core chose it: (namespace, name, uid, node). A cluster's
#: binding by default; a hub's copy in the member (:mod:`.hub.delegation`). Raises on failure
#: (a :class:`KubeApiError` 404 or 409: gone or placed meanwhile, nothing to retry).
PlacePod = Callable[[str, str, str, str], None]

log = logging.getLogger(__name__)


class Binder:
    def __init__(self, api: KubeApi, tasks: TaskCache, volume_binder: VolumeBinder, core: CoreClient,
                 recorder: EventRecorder, counts: ShimCounts, *, threads: int,
                 stop: threading.Event, place: PlacePod | None = None) -> None:
        self._api = api
        self._place: PlacePod = place if place is not None else self._bind_in_cluster
        self._tasks = tasks
        self._volume_binder = volume_binder
        self._core = core
        self._recorder = recorder
        self._counts = counts
        self._stop = stop
        self._pool: QueuePool[tuple[str, str]] = QueuePool("k8s-binder", threads, self._bind)
        #: Pods whose binding failed, waiting for their pause to ask again.
        self._later = DelayedCalls("k8s-ask-again")

    def start(self) -> None:
        self._pool.start()

    def stop(self) -> None:
        self._later.stop()
        self._pool.stop()

    def bind(self, uid: str, node: str) -> None:
        """Queues the pod's binding to ``node`` (the cache has it allocated there)."""
        self._pool.put((uid, node))

    def _bind(self, job: tuple[str, str]) -> None:
        uid, node = job
        target = None if self._stop.is_set() else self._tasks.target(uid)
        if target is None:
            return  # gone meanwhile: its release has been sent
        try:
            self._volume_binder.prebind(uid, node)  # its claims bound first (PreBind)
            self._place(target[0], target[1], uid, node)
        except Exception as exc:  # gone, bound meanwhile, or the API server failed
            self._counts.bind_failures += 1
            log.warning("binding %s/%s to %s failed: %s", target[0], target[1], node, exc)
            self._binding_failed(uid, exc)
            return
        self._counts.bound += 1
        self._recorder.event(target[0], target[1], uid, "Normal", "Scheduled",
                             f"Successfully assigned {target[0]}/{target[1]} to {node}")

    def _bind_in_cluster(self, namespace: str, name: str, uid: str, node: str) -> None:
        self._api.bind(namespace, name, node)

    def _binding_failed(self, uid: str, error: Exception) -> None:
        """Gives the allocation's room back; the pod asks again after its pause unless it is
        gone or bound meanwhile (see the module doc)."""
        retry = not (isinstance(error, KubeApiError) and error.status in (404, 409))
        failed = self._tasks.binding_failed(uid, retry=retry)
        if failed is None:
            return
        view, failures = failed
        self._core.release(view.app_id, uid, si.TerminationType.STOPPED_BY_RM, f"binding failed: {error}")
        if retry:
            self._later.call_later(backoff(failures - 1), self._ask_again, uid)

    def _ask_again(self, uid: str) -> None:
        """After a failed binding (and its pause): the pod asks again if it still waits."""
        view = None if self._stop.is_set() else self._tasks.asking(uid)
        if view is not None:
            self._core.ask(view)
