"""What the shim tells people on the cluster: core/v1 Events (kube-scheduler's ``Scheduled``,
``FailedScheduling``, ``Preempted``; the configuration's ``ConfigurationApplied`` and
``InvalidConfiguration``) and pending pods' ``PodScheduled=False`` condition.

- **Events** are written by their own threads (``event_writers``, as kube-scheduler's
  broadcaster), apart from the binders: :meth:`EventRecorder.event` queues one and returns. The
  queue holds :data:`EVENT_QUEUE_MAX`; beyond it new ones are dropped and counted (an event is
  not worth stalling a binding for). :meth:`EventRecorder.write_event` writes one at once (the
  configuration's, from a watch thread).
- **Conditions** (:meth:`EventRecorder.mark_pending`) go through the coalescing writer of
  :mod:`.status_writer` (the newest per pod, ``status_writers`` threads), so a burst of pending
  pods never waits behind the core's events; each reason is written once per pod, never on a
  pod that was placed meanwhile. ``Unschedulable`` comes with a ``FailedScheduling`` event;
  ``SchedulingGated`` is the condition only, as kube-scheduler writes them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import Final

from pyscheduler_k8s.cache.tasks import TaskCache
from pyscheduler_k8s.counts import ShimCounts
from pyscheduler_k8s.kubeapi import KubeApi, KubeApiError
from pyscheduler_k8s.status_writer import CoalescingWriter
from pyscheduler_k8s.threads import QueuePool

__all__ = ["EVENT_QUEUE_MAX", "EventRecorder", "GATED_MESSAGE", "SCHEDULING_GATED", "UNSCHEDULABLE"]

log = logging.getLogger(__name__)

UNSCHEDULABLE: Final = "Unschedulable"
#: kube-scheduler's condition on a pod whose ``spec.schedulingGates`` are not empty.
SCHEDULING_GATED: Final = "SchedulingGated"
GATED_MESSAGE: Final = "Scheduling is blocked due to non-empty scheduling gates"
#: Pod events waiting to be written; beyond it new ones are dropped (and counted), as
#: kube-scheduler's broadcaster drops when its queue is full.
EVENT_QUEUE_MAX: Final = 10_000
#: Seconds a stopping recorder goes on writing the events queued (well within the 5 s a served
#: process has between SIGTERM and its end, gunicorn's graceful timeout).
EVENT_DRAIN: Final = 1.0

_Event = tuple[dict[str, str], str, str, str]


def _rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class EventRecorder:
    def __init__(self, api: KubeApi, tasks: TaskCache, counts: ShimCounts, *, component: str,
                 clock: Callable[[], float], event_writers: int, status_writers: int, instance: str = "") -> None:
        """``instance``: the replica writing (the events' ``reportingInstance``, as kube-scheduler
        names its own; empty: left out)."""
        self._api = api
        self._tasks = tasks
        self._counts = counts
        self._component = component
        self._instance = instance
        self._clock = clock
        self._status_writers = status_writers
        self._events: QueuePool[_Event] = QueuePool("k8s-events", event_writers, self._write_queued,
                                                    maxsize=EVENT_QUEUE_MAX)
        #: Pending pods' conditions to write: uid -> (message, condition reason), newest wins.
        self._conditions: CoalescingWriter[tuple[str, str]] = CoalescingWriter(
            self._write_condition, name="k8s-conditions")
        self._stopped = False

    def start(self) -> None:
        self._events.start()
        self._conditions.start(self._status_writers)

    def stop(self) -> None:
        """Writes the events queued (for up to :data:`EVENT_DRAIN` seconds: the shim stops its
        binders first, so the ``Scheduled`` event of every binding done is written), then stops;
        pending pods' conditions not written yet are dropped (the next leader writes its own)."""
        self._stopped = True
        self._events.stop(drain=EVENT_DRAIN)
        self._conditions.stop()

    # -- events ------------------------------------------------------------------------------------

    def event(self, namespace: str, name: str, uid: str, kind: str, reason: str, message: str) -> None:
        """A pod's event, written by an event writer thread (dropped when too many wait)."""
        involved = {"kind": "Pod", "namespace": namespace, "name": name, "uid": uid, "apiVersion": "v1"}
        if not self._events.offer((involved, kind, reason, message)):
            self._counts.events_dropped += 1

    def _write_queued(self, event: _Event) -> None:
        self.write_event(*event)

    def write_event(self, involved: Mapping[str, str], kind: str, reason: str, message: str) -> None:
        """A core/v1 Event on ``involved``, as kube-scheduler writes them (at once)."""
        stamp = _rfc3339(self._clock())
        namespace, name = involved["namespace"], involved["name"]
        event = {
            "metadata": {"generateName": f"{name}.", "namespace": namespace},
            "involvedObject": dict(involved), "type": kind, "reason": reason, "message": message[:1024],
            "count": 1, "firstTimestamp": stamp, "lastTimestamp": stamp,
            "source": {"component": self._component}, "reportingComponent": self._component,
        }
        if self._instance:
            event["reportingInstance"] = self._instance
        try:
            self._api.create_event(namespace, event)
        except KubeApiError as exc:
            log.info("event on %s %s/%s not written: %s", involved["kind"], namespace, name, exc)

    # -- pod conditions ----------------------------------------------------------------------------

    def mark_unschedulable(self, uid: str, message: str) -> None:
        self.mark_pending(uid, message, UNSCHEDULABLE)

    def mark_pending(self, uid: str, message: str, condition_reason: str) -> None:
        """``PodScheduled=False`` with ``condition_reason``, once per message (see the module doc)."""
        if self._tasks.note_reason(uid, message):
            self._conditions.submit(uid, (message, condition_reason))

    def forget(self, uid: str) -> None:
        """The pod is gone: its condition not written yet is dropped."""
        self._conditions.discard(uid)

    def _write_condition(self, uid: str, pending: tuple[str, str]) -> None:
        """A status writer thread: the newest condition of a pod that still waits."""
        message, condition_reason = pending
        target = None if self._stopped else self._tasks.pending_target(uid)
        if target is None:
            return
        namespace, name = target
        try:
            self._api.patch_pod_status(namespace, name, {"status": {"conditions": [{
                "type": "PodScheduled", "status": "False", "reason": condition_reason, "message": message,
                "lastTransitionTime": _rfc3339(self._clock())}]}})
        except KubeApiError as exc:
            log.info("pod %s/%s: cannot set PodScheduled: %s", namespace, name, exc)
            return
        if condition_reason == UNSCHEDULABLE:
            self._counts.unschedulable_marked += 1
            self.event(namespace, name, uid, "Warning", "FailedScheduling", message)
