"""The copies in the members, kept true to their hub pods (level-triggered: each copy's event,
each member's fresh list and a periodic sweep compare what is with what the hub pods say).

- **Status back**: a copy's status (phase, conditions, IPs, containers) is written onto its hub
  pod (:func:`.marks.hub_status_of`) whenever it changes; a hub pod that ends this way
  (Succeeded, Failed) ends for the shim too (its allocation released), and the hub's own
  controllers (a Job's) count it.
- **Events back**: a member's events about a copy are written on the hub pod, the member named
  (``[east] Pulled: ...``).
- **Stale copies go** (a copy whose placement is still being written, :meth:`.Delegation.in_flight`,
  is current): a copy whose hub pod is gone, ended, or placed elsewhere since (another
  member, or another placement id: requeued after its member was lost) is deleted. This is what
  keeps a pod from running in two members once a lost member answers again.
- **A copy deleted under a running hub pod** (in the member, by someone else) fails the hub pod
  (``reason: DeletedInCluster``): its controller replaces it, as after a node's loss.

Writes go through a small pool; nothing here blocks a watch on an API round trip.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from pyscheduler_k8s.cache.cluster import DELETED
from pyscheduler_k8s.cache.tasks import TaskCache
from pyscheduler_k8s.event_recorder import EventRecorder
from pyscheduler_k8s.hub.delegation import Delegation
from pyscheduler_k8s.hub.marks import HUB_POD_UID_LABEL, PLACEMENT_ANNOTATION, hub_status_of, placement_of
from pyscheduler_k8s.kubeapi import KubeApi, KubeApiError
from pyscheduler_k8s.pods import is_terminal
from pyscheduler_k8s.threads import QueuePool

__all__ = ["CopyRecord", "MemberApis", "Mirror"]

log = logging.getLogger(__name__)

_WRITERS: Final = 4
#: A member's API while it answers, else None.
MemberApis = Callable[[str], KubeApi | None]


@dataclass
class CopyRecord:
    """A copy in a member, as last seen."""

    member: str
    namespace: str
    name: str
    uid: str
    hub_uid: str
    placement: str
    #: The status last written to the hub pod (so an unchanged status is not written again).
    mirrored: Mapping[str, Any] | None = None
    #: The latest status to write, and whether a writer has it in hand (one writer per copy at a
    #: time, always writing the latest: two writers could land an older status last).
    latest: Mapping[str, Any] | None = None
    writing: bool = False
    deleting: bool = False


def _record(member: str, copy: Mapping[str, Any]) -> CopyRecord:
    meta = copy.get("metadata") or {}
    return CopyRecord(member, str(meta.get("namespace", "")), str(meta.get("name", "")), str(meta.get("uid", "")),
                      str((meta.get("labels") or {}).get(HUB_POD_UID_LABEL, "")),
                      str((meta.get("annotations") or {}).get(PLACEMENT_ANNOTATION, "")))


class Mirror:
    def __init__(self, hub: KubeApi, tasks: TaskCache, recorder: EventRecorder, member_api: MemberApis,
                 delegation: Delegation) -> None:
        self._hub = hub
        self._delegation = delegation
        self._tasks = tasks
        self._recorder = recorder
        self._member_api = member_api
        self._lock = threading.Lock()
        #: Copy uid -> its record, per member.
        self._copies: dict[str, CopyRecord] = {}
        self._pool: QueuePool[tuple[str, tuple[Any, ...]]] = QueuePool("k8s-hub-mirror", _WRITERS, self._write)

    def start(self) -> None:
        self._pool.start()

    def stop(self) -> None:
        self._pool.stop()

    # -- what the members' watches say -----------------------------------------------------------

    def copy_event(self, member: str, kind: str, copy: Mapping[str, Any]) -> None:
        record = _record(member, copy)
        if not record.uid:
            return
        with self._lock:
            known = self._copies.get(record.uid)
            if kind == DELETED:
                self._copies.pop(record.uid, None)
            elif known is None:
                self._copies[record.uid] = record
            else:
                record = known
        self._judge(record, copy, deleted=kind == DELETED)

    def copies_listed(self, member: str, copies: Iterable[Mapping[str, Any]]) -> None:
        """A member's fresh list of copies: those gone meanwhile count as deleted."""
        listed = {str((c.get("metadata") or {}).get("uid", "")): c for c in copies}
        with self._lock:
            gone = [r for uid, r in self._copies.items() if r.member == member and uid not in listed]
        for record in gone:
            self.copy_event(member, DELETED, {"metadata": {
                "uid": record.uid, "namespace": record.namespace, "name": record.name,
                "labels": {HUB_POD_UID_LABEL: record.hub_uid}, "annotations": {PLACEMENT_ANNOTATION: record.placement}}})
        for copy in listed.values():
            self.copy_event(member, "ADDED", copy)

    def member_event(self, member: str, event: Mapping[str, Any]) -> None:
        """A member's Event: one about a copy is written on its hub pod."""
        involved = event.get("involvedObject") or {}
        if involved.get("kind") != "Pod":
            return
        with self._lock:
            record = self._copies.get(str(involved.get("uid", "")))
        if record is None:
            return
        hub = self._tasks.target(record.hub_uid)
        if hub is not None:
            self._recorder.event(hub[0], hub[1], record.hub_uid, str(event.get("type") or "Normal"),
                                 str(event.get("reason") or "Event"), f"[{member}] {event.get('message', '')}")

    def sweep(self) -> None:
        """Every known copy judged again (a hub pod deleted or ended since its copy last changed)."""
        with self._lock:
            records = [r for r in self._copies.values() if not r.deleting]
        for record in records:
            self._judge(record, None, deleted=False)

    def forget_member(self, member: str) -> None:
        """A member lost: its copies are not known any more (its fresh list tells them again)."""
        with self._lock:
            for uid in [uid for uid, r in self._copies.items() if r.member == member]:
                del self._copies[uid]

    # -- judging one copy ------------------------------------------------------------------------

    def _judge(self, record: CopyRecord, copy: Mapping[str, Any] | None, *, deleted: bool) -> None:
        hub_raw = self._tasks.raw(record.hub_uid)
        placed = placement_of(hub_raw) if hub_raw is not None else None
        current = placed is not None and placed[0] == record.member and placed[2] == record.placement
        if current:
            self._delegation.seen(record.hub_uid, record.placement)
        elif hub_raw is not None and self._delegation.in_flight(record.hub_uid) == (record.member, record.placement):
            current = True  # its hub pod's marks are on their way
        if deleted:
            if current and hub_raw is not None and not is_terminal(hub_raw):
                self._pool.put(("fail", (record, "DeletedInCluster",
                                         f"its copy in cluster {record.member} was deleted there")))
            return
        if not current:
            if not record.deleting:
                record.deleting = True
                self._pool.put(("delete", (record,)))
            return
        if copy is None:
            return
        copy_status = copy.get("status") or {}
        if not copy_status.get("phase") or (copy_status["phase"] == "Pending"
                                            and not copy_status.get("containerStatuses")):
            return  # nothing the hub pod does not say already (Pending, no container started)
        status = hub_status_of(copy, record.member)
        with self._lock:
            if status == record.mirrored or status == record.latest:
                return
            record.latest = status
            if record.writing:
                return  # the writer in hand writes it next
            record.writing = True
        self._pool.put(("status", (record,)))

    # -- the writes --------------------------------------------------------------------------------

    def _write(self, job: tuple[str, tuple[Any, ...]]) -> None:
        what, args = job
        try:
            if what == "status":
                self._write_status(*args)
            elif what == "delete":
                self._delete_copy(*args)
            else:
                self._fail_hub_pod(*args)
        except Exception as exc:
            log.warning("hub mirror: %s failed: %s", what, exc)

    def _write_status(self, record: CopyRecord) -> None:
        """Writes the copy's latest status until no newer one came meanwhile."""
        while True:
            with self._lock:
                status = record.latest
                if status is None or status == record.mirrored:
                    record.writing = False
                    return
            hub = self._tasks.target(record.hub_uid)
            try:
                if hub is not None:  # a merge patch: the copy's lists (IPs, conditions) replace the hub pod's
                    self._hub.request("PATCH", f"/api/v1/namespaces/{hub[0]}/pods/{hub[1]}/status",
                                      {"status": dict(status)}, content_type="application/merge-patch+json")
            except Exception as exc:
                with self._lock:
                    record.writing, record.latest = False, None  # written again with the copy's next change
                if not isinstance(exc, KubeApiError) or exc.status != 404:
                    raise
                return
            with self._lock:
                record.mirrored = status

    def _delete_copy(self, record: CopyRecord) -> None:
        api = self._member_api(record.member)
        if api is None:
            record.deleting = False  # its member does not answer: the next look tries again
            return
        try:
            api.delete_pod(record.namespace, record.name, uid=record.uid)
            log.info("stale copy %s/%s in cluster %s deleted", record.namespace, record.name, record.member)
        except KubeApiError as exc:
            if exc.status not in (404, 409):
                record.deleting = False
                raise

    def _fail_hub_pod(self, record: CopyRecord, reason: str, message: str) -> None:
        hub = self._tasks.target(record.hub_uid)
        if hub is None:
            return
        self._hub.patch_pod_status(hub[0], hub[1], {"status": {"phase": "Failed", "reason": reason,
                                                                 "message": message}})
        self._recorder.event(hub[0], hub[1], record.hub_uid, "Warning", reason, message)
