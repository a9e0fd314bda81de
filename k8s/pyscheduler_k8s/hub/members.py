"""One member cluster of a hub: its nodes in the hub's core, its own pods occupying them, its
copies of hub pods (:mod:`.mirror`), and whether it answers.

**Followed** (its own informers, so a member away stalls nothing else): nodes (each shown as
``[member]node`` with the member's labels: :func:`.marks.member_node_as_hub`), pods (copies go
to the mirror; the member's other pods occupy their nodes as another scheduler's do), and
Events (those about copies go back to the hub pods).

**Health** (a look every ``probeInterval`` seconds, ``GET /version``):

- *answers* → *away* (a look fails): its nodes are drained in the core at once (no new pod goes
  there; what runs there stays placed);
- *away* → *answers*: drained nodes become schedulable again (those not cordoned);
- *away* for longer than ``lostAfter`` → *lost*: each hub pod placed there is requeued (its
  marks removed, ``Pending`` again, asking the core again) or failed (``onLost: fail``); then its
  nodes leave the core (which frees its applications to be placed in another member);
- *lost* → *answers*: the member is listed again as at the start (its nodes join, its copies are
  judged: those of requeued pods are stale and deleted, :mod:`.mirror`).

A member not answering when the hub starts is *away* from the start.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from pyscheduler.common.background import BackgroundThread
from pyscheduler.si import messages as si
from pyscheduler_k8s.cache.cluster import DELETED, ClusterCache
from pyscheduler_k8s.cache.tasks import TaskCache
from pyscheduler_k8s.cluster_events import NODES_PATH
from pyscheduler_k8s.core_client import CoreClient
from pyscheduler_k8s.counts import ShimCounts
from pyscheduler_k8s.event_recorder import EventRecorder
from pyscheduler_k8s.hub.config import HubConfig, MemberConfig
from pyscheduler_k8s.hub.marks import CLUSTER_LABEL, NODE_ANNOTATION, PLACEMENT_ANNOTATION, is_delegate, \
    member_node_as_hub, member_pod_as_foreign, qualified, source_of
from pyscheduler_k8s.hub.mirror import Mirror
from pyscheduler_k8s.informers import Informers, brief
from pyscheduler_k8s.kubeapi import KubeApi, KubeApiError
from pyscheduler_k8s.pod_events import PODS_PATH, PodEvents
from pyscheduler_k8s.pod_writes import PodWrites

__all__ = ["Member", "MemberHealth"]

log = logging.getLogger(__name__)

EVENTS_PATH: Final = "/api/v1/events"
CLUSTER_LOST_REASON: Final = "ClusterLost"


class MemberHealth(str, enum.Enum):
    ANSWERS = "answers"
    AWAY = "away"
    LOST = "lost"


class Member:
    def __init__(self, config: MemberConfig, api: KubeApi, settings: HubConfig, *, hub: KubeApi,
                 cluster: ClusterCache, tasks: TaskCache, core: CoreClient, recorder: EventRecorder,
                 writes: PodWrites, mirror: Mirror, counts: ShimCounts, scheduler_names: tuple[str, ...],
                 watch_timeout: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.name = config.name
        self.api = api
        self._labels = dict(config.labels)
        self._settings = settings
        self._hub = hub
        self._cluster = cluster
        self._tasks = tasks
        self._core = core
        self._recorder = recorder
        self._mirror = mirror
        self._clock = clock
        self._lock = threading.Lock()
        self._health = MemberHealth.ANSWERS
        self._away_since = 0.0
        #: The member's nodes as it last listed or watched them (their own names).
        self._nodes: dict[str, dict[str, Any]] = {}
        self._prefix = qualified(self.name, "")
        self.informers = Informers(api, counts, watch_timeout=watch_timeout, optional_recheck=30.0)
        self._pods = PodEvents(api, tasks, core, recorder, writes, scheduler_names,
                               transform=self._shown_pod, belongs=lambda raw: source_of(raw) == self.name)
        self._monitor = BackgroundThread(f"k8s-member-{self.name}", self._look, interval=settings.probe_interval)

    # -- start and stop --------------------------------------------------------------------------

    def list_nodes(self) -> str | None:
        """Lists the member's nodes into the core (before the hub's pods: a placed hub pod's
        node must be known); None when the member does not answer (it is *away* from now, and
        its informers list it when it answers)."""
        try:
            return self.relist_nodes()
        except Exception as exc:
            log.warning("cluster %s does not answer at the start: %s", self.name, brief(exc))
            with self._lock:
                self._health, self._away_since = MemberHealth.AWAY, self._clock()
            return None

    def follow(self, nodes_version: str | None) -> None:
        """Lists the member's pods (after the hub's: its copies are judged against them) and
        follows nodes, pods and Events from then on."""
        versions: dict[str, str] = {}
        if nodes_version is not None:
            try:
                versions = {"pods": self.relist_pods(), "events": self._events_version()}
            except Exception as exc:
                log.warning("cluster %s: listing its pods failed: %s", self.name, brief(exc))
        # "0": a member not listed yet is watched from any version (its objects arrive as ADDED).
        informers = self.informers
        informers.add(f"nodes@{self.name}", NODES_PATH, nodes_version or "0", self.on_node, self.relist_nodes)
        informers.add(f"pods@{self.name}", PODS_PATH, versions.get("pods", "0"), self.on_pod, self.relist_pods)
        informers.add(f"events@{self.name}", EVENTS_PATH, versions.get("events", "0"), self.on_event,
                      self._events_version)
        informers.start()
        self._monitor.start()

    def stop(self) -> None:
        self._monitor.stop()
        self.informers.stop()

    @property
    def health(self) -> MemberHealth:
        with self._lock:
            return self._health

    def answering_api(self) -> KubeApi | None:
        return self.api if self.health is MemberHealth.ANSWERS else None

    def status(self) -> dict[str, Any]:
        with self._lock:
            away = self._clock() - self._away_since if self._health is not MemberHealth.ANSWERS else 0.0
            return {"health": self._health.value, "nodes": len(self._nodes), "awaySeconds": round(away, 1),
                    "labels": dict(self._labels)}

    # -- nodes -----------------------------------------------------------------------------------

    def relist_nodes(self) -> str:
        items, version = self.api.list(NODES_PATH)
        names = {str((n.get("metadata") or {}).get("name", "")) for n in items}
        for item in items:
            self.on_node("ADDED", item)
        for name in [n for n in self._cluster.node_names() if n.startswith(self._prefix)]:
            if name[len(self._prefix):] not in names:
                self._feed_node(DELETED, {"metadata": {"name": name}})
        with self._lock:
            for name in [n for n in self._nodes if n not in names]:
                del self._nodes[name]
        return version

    def on_node(self, kind: str, node: dict[str, Any]) -> None:
        name = str((node.get("metadata") or {}).get("name", ""))
        with self._lock:
            if kind == DELETED:
                self._nodes.pop(name, None)
            else:
                self._nodes[name] = node
            away = self._health is not MemberHealth.ANSWERS
            lost = self._health is MemberHealth.LOST
        if lost:
            return  # a lost member's nodes join again when it is listed again
        if kind == DELETED:
            self._feed_node(DELETED, {"metadata": {"name": qualified(self.name, name)}})
        else:
            self._feed_node(kind, member_node_as_hub(self.name, self._labels, node, unschedulable=away))

    def _feed_node(self, kind: str, shown: Mapping[str, Any]) -> None:
        self._core.update_nodes(self._cluster.node_event(kind, shown))

    def _refeed_nodes(self, *, unschedulable: bool) -> None:
        with self._lock:
            nodes = list(self._nodes.values())
        for node in nodes:
            self._feed_node("MODIFIED", member_node_as_hub(self.name, self._labels, node, unschedulable=unschedulable))

    # -- pods and events -------------------------------------------------------------------------

    def relist_pods(self) -> str:
        items, version = self.api.list(PODS_PATH)
        copies = [p for p in items if is_delegate(p)]
        self._pods.reconcile([p for p in items if not is_delegate(p)])
        self._mirror.copies_listed(self.name, copies)
        return version

    def on_pod(self, kind: str, pod: dict[str, Any]) -> None:
        if is_delegate(pod):
            self._mirror.copy_event(self.name, kind, pod)
        else:
            self._pods.handle(kind, pod)

    def _shown_pod(self, pod: dict[str, Any]) -> dict[str, Any] | None:
        return member_pod_as_foreign(self.name, pod)

    def _events_version(self) -> str:
        """Only new Events are followed (a member's old ones are not written on the hub again)."""
        page = self.api.request("GET", EVENTS_PATH, params={"limit": "1"})
        return str((page.get("metadata") or {}).get("resourceVersion", "0"))

    def on_event(self, kind: str, event: dict[str, Any]) -> None:
        if kind == "ADDED":
            self._mirror.member_event(self.name, event)

    # -- health ----------------------------------------------------------------------------------

    def _look(self) -> bool:
        """One look at the member (see the module doc); False: wait ``probeInterval``."""
        problem = ""
        try:
            self.api.request("GET", "/version", timeout=max(1.0, self._settings.probe_interval))
            answers = True
        except Exception as exc:
            answers = False
            problem = brief(exc)
        now = self._clock()
        with self._lock:
            before = self._health
            if answers:
                self._health = MemberHealth.ANSWERS
            elif before is MemberHealth.ANSWERS:
                self._health, self._away_since = MemberHealth.AWAY, now
            elif before is MemberHealth.AWAY and now - self._away_since >= self._settings.lost_after:
                self._health = MemberHealth.LOST
            after = self._health
        if before is after:
            return False
        if after is MemberHealth.AWAY:
            log.warning("cluster %s does not answer (%s): no new pods go there; lost after %g s", self.name,
                        problem, self._settings.lost_after)
            self._refeed_nodes(unschedulable=True)
        elif after is MemberHealth.LOST:
            log.warning("cluster %s lost (away %g s): its pods are %s", self.name, self._settings.lost_after,
                        "requeued" if self._settings.on_lost == "requeue" else "failed")
            self._lost()
        elif before is MemberHealth.AWAY:
            log.info("cluster %s answers again", self.name)
            self._refeed_nodes(unschedulable=False)
        else:
            log.info("cluster %s answers again after it was lost: listing it again", self.name)
            self._rejoin()
        return False

    def _lost(self) -> None:
        """Every hub pod placed here requeued or failed, then the member's nodes leave the core."""
        requeue = self._settings.on_lost == "requeue"
        message = f"cluster {self.name} did not answer for {self._settings.lost_after:g} s"
        for uid in self._tasks.placed_on(self._prefix):
            target = self._tasks.target(uid)
            if target is None:
                continue
            try:
                if requeue:
                    self._unplace(target[0], target[1], uid, message)
                else:
                    self._hub.patch_pod_status(target[0], target[1], {"status": {
                        "phase": "Failed", "reason": CLUSTER_LOST_REASON, "message": message}})
            except KubeApiError as exc:
                log.warning("pod %s/%s placed in lost cluster %s: %s", target[0], target[1], self.name, exc)
                continue
            if requeue:
                view = self._tasks.requeue(uid)
                if view is not None:
                    self._core.release(view.app_id, uid, si.TerminationType.STOPPED_BY_RM, message)
                    self._core.ask(view)
            self._recorder.event(target[0], target[1], uid, "Warning", CLUSTER_LOST_REASON,
                                 f"{message}: {'placed again' if requeue else 'failed'}")
        self._mirror.forget_member(self.name)
        for name in [n for n in self._cluster.node_names() if n.startswith(self._prefix)]:
            self._feed_node(DELETED, {"metadata": {"name": name}})

    def _unplace(self, namespace: str, name: str, uid: str, message: str) -> None:
        """The hub pod's marks removed and its status Pending again (it asks again)."""
        self._hub.request("PATCH", f"/api/v1/namespaces/{namespace}/pods/{name}", {"metadata": {
            "uid": uid, "labels": {CLUSTER_LABEL: None},
            "annotations": {NODE_ANNOTATION: None, PLACEMENT_ANNOTATION: None}}},
            content_type="application/merge-patch+json")
        self._hub.request("PATCH", f"/api/v1/namespaces/{namespace}/pods/{name}/status", {"status": {
            "phase": "Pending", "message": message, "reason": CLUSTER_LOST_REASON,
            "podIP": None, "podIPs": None, "hostIP": None, "hostIPs": None, "startTime": None,
            "containerStatuses": None, "initContainerStatuses": None,
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": CLUSTER_LOST_REASON,
                            "message": f"{message}: placed again"}]}}, content_type="application/merge-patch+json")

    def _rejoin(self) -> None:
        try:
            self.relist_nodes()
            self.relist_pods()
        except Exception as exc:
            log.warning("cluster %s: listing it again failed (%s); the next look tries again", self.name, brief(exc))
            with self._lock:
                self._health = MemberHealth.LOST
