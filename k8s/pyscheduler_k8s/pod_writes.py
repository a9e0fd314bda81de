"""The shim's writes to pods other than bindings and conditions, on worker threads (apart from
the watches and the core's callbacks, which must never wait for the API server):

- **deleting** a pod the core ended (a victim preempted, a placeholder replaced or timed out),
  gracefully, retried with a doubling pause while the API server fails (the core waits for the
  pod's end to confirm the release);
- **creating** a gang's placeholder pods (:func:`.gang.placeholder_pods`); one that exists
  already (a restart made them before) is left as it is;
- **failing** pods that will never run, as YuniKorn's shim does (phase ``Failed``): a gang's
  Hard timeout (reason ``ResourceReservationTimeout``), an application the core refused (reason
  ``ApplicationRejected``, the core's message).

:meth:`PodWrites.submit` runs any of them (or another task) on a worker; what a task raises is
logged with its name.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Final

from pyscheduler_k8s.cache.tasks import TaskCache
from pyscheduler_k8s.counts import ShimCounts
from pyscheduler_k8s.event_recorder import EventRecorder
from pyscheduler_k8s.gang import TIMEOUT_MESSAGE, TIMEOUT_REASON, GangSpec, placeholder_pods
from pyscheduler_k8s.kubeapi import KubeApi, KubeApiError
from pyscheduler_k8s.pods import pod_view
from pyscheduler_k8s.threads import DelayedCalls, QueuePool, backoff

__all__ = ["APPLICATION_REJECTED", "PodWrites", "WORKERS"]

log = logging.getLogger(__name__)

#: Threads for these writes (and asks the core's callbacks send again).
WORKERS: Final = 4
#: YuniKorn's reason on the pods of an application the core refused (they are marked Failed).
APPLICATION_REJECTED: Final = "ApplicationRejected"

_Task = tuple[Callable[..., None], tuple[Any, ...]]


class PodWrites:
    def __init__(self, api: KubeApi, tasks: TaskCache, recorder: EventRecorder, counts: ShimCounts) -> None:
        self._api = api
        self._tasks = tasks
        self._recorder = recorder
        self._counts = counts
        self._pool: QueuePool[_Task] = QueuePool("k8s-work", WORKERS, self._run)
        #: Deletions waiting for their pause.
        self._later = DelayedCalls("k8s-delete-retry")
        self._stopping = False

    def start(self) -> None:
        self._pool.start()

    def stop(self) -> None:
        self._stopping = True
        self._later.stop()
        self._pool.stop()

    def submit(self, task: Callable[..., None], *args: Any) -> None:
        """Runs ``task(*args)`` on a worker thread."""
        self._pool.put((task, args))

    @staticmethod
    def _run(job: _Task) -> None:
        task, args = job
        try:
            task(*args)
        except Exception:
            log.exception("%s failed", getattr(task, "__name__", task))

    def _target(self, uid: str) -> tuple[str, str] | None:
        """The (namespace, name) of a pod the shim knows, or None (gone, or the shim stopping)."""
        return None if self._stopping else self._tasks.target(uid)

    def delete_pod(self, uid: str, attempt: int = 0) -> None:
        """Deletes a pod the core ended (gracefully: the pod's own grace period)."""
        target = self._target(uid)
        if target is None:
            return
        try:
            self._api.delete_pod(target[0], target[1], uid=uid)
        except KubeApiError as exc:
            if exc.status in (404, 409):
                return  # gone already (or another pod took the name): the watch reports its end
            delay = backoff(attempt)
            log.warning("deleting pod %s/%s failed (again in %g s): %s", target[0], target[1], delay, exc)
            self._later.call_later(delay, self.submit, self.delete_pod, uid, attempt + 1)
            return
        self._counts.deleted += 1

    def create_placeholders(self, app_id: str, gang: GangSpec, owner: Mapping[str, Any]) -> None:
        """Creates a gang's placeholder pods (see the module doc)."""
        view = pod_view(owner)
        if not self._tasks.gang_exists(app_id):
            return  # the core refused the application, or it ended already
        created = 0
        for body in placeholder_pods(gang, app_id, view.queue, owner):
            if self._stopping:
                return
            try:
                self._api.create_pod(view.namespace, body)
                created += 1
            except KubeApiError as exc:
                if exc.status != 409:
                    log.warning("placeholder %s of application %s not created: %s", body["metadata"]["name"], app_id, exc)
                    self._recorder.event(view.namespace, view.name, view.uid, "Warning", "GangScheduling",
                                         f"placeholder {body['metadata']['name']} not created: {exc}")
        self._counts.placeholders_created += created
        groups = ", ".join(f"{g.name} x{g.min_member}" for g in gang.groups)
        self._recorder.event(view.namespace, view.name, view.uid, "Normal", "GangScheduling",
                             f"{created} placeholder pods created for application {app_id} ({groups}), {gang.style} style")

    def fail_pods(self, uids: list[str], reason: str = TIMEOUT_REASON, message: str = TIMEOUT_MESSAGE) -> None:
        """Marks the pods failed (see the module doc), each with an event."""
        for uid in uids:
            target = self._target(uid)
            if target is None:
                continue
            try:
                self._api.patch_pod_status(target[0], target[1], {"status": {
                    "phase": "Failed", "reason": reason, "message": message[:1024]}})
            except KubeApiError as exc:
                log.warning("pod %s/%s: cannot mark it failed: %s", target[0], target[1], exc)
                continue
            self._counts.pods_failed += 1
            self._recorder.event(target[0], target[1], uid, "Warning", reason, message)
