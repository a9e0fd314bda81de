"""Placing a hub pod in its member cluster: the hub's binding (:data:`~..binder.PlacePod`).

When the core places a hub pod on ``[member]node``, the binder calls :meth:`Delegation.place`,
which, in this order:

1. creates the copy in the member, bound to the node (:func:`.marks.delegate_of`, with a new
   placement id); a namespace the member lacks is created first;
2. marks the hub pod placed (label ``pyscheduler.io/cluster``, annotations ``pyscheduler.io/node``
   and ``pyscheduler.io/placement``), the patch conditioned on the hub pod's uid.

The copy comes first so that a crash between the two leaves a copy no hub pod names (the mirror
deletes it as stale, :mod:`.mirror`), never a hub pod placed without a copy. A marking that
fails deletes the copy again. A copy already there under the same name is the pod's own when it
carries the same hub uid and placement; another copy is stale: deleted, and the placement fails
(the binder's pause and a new ask follow, as after a failed binding). A member's own pod of that
name (no hub uid) is never touched: the placement fails.

The pod's owner, when it is a Job, gets the member's label too, so ``kubectl get jobs -L
pyscheduler.io/cluster`` on the hub shows where each Job runs (written once per Job).
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Callable, Mapping
from typing import Any

from pyscheduler_k8s.cache.tasks import TaskCache
from pyscheduler_k8s.hub.marks import CLUSTER_LABEL, HUB_POD_UID_LABEL, NODE_ANNOTATION, PLACEMENT_ANNOTATION, \
    delegate_of, split_qualified
from pyscheduler_k8s.kubeapi import KubeApi, KubeApiError

__all__ = ["Delegation", "MemberUnavailable"]

log = logging.getLogger(__name__)

_MERGE: str = "application/merge-patch+json"
#: Job owners already labelled with their member (bounded: forgotten wholesale when full).
_JOBS_REMEMBERED = 10_000


class MemberUnavailable(Exception):
    """The member the core chose does not answer (the pod asks again after its pause)."""


class Delegation:
    def __init__(self, hub: KubeApi, tasks: TaskCache, member_api: Callable[[str], KubeApi | None]) -> None:
        """``member_api(name)``: the member's API while it answers, else None."""
        self._hub = hub
        self._tasks = tasks
        self._member_api = member_api
        self._lock = threading.Lock()
        self._labelled_jobs: set[str] = set()
        #: Hub pod uid -> (member, placement id) of a placement whose copy exists and whose hub
        #: pod's marks the hub's watch may not have shown yet (the mirror must not take the copy
        #: for a stale one meanwhile); dropped once the marks are seen, or the placement failed.
        self._in_flight: dict[str, tuple[str, str]] = {}

    def in_flight(self, uid: str) -> tuple[str, str] | None:
        with self._lock:
            return self._in_flight.get(uid)

    def seen(self, uid: str, placement: str) -> None:
        """The hub's watch showed the hub pod with ``placement``: no longer in flight."""
        with self._lock:
            if self._in_flight.get(uid, ("", ""))[1] == placement:
                del self._in_flight[uid]

    def place(self, namespace: str, name: str, uid: str, node: str) -> None:
        """Places the hub pod ``namespace/name`` (``uid``) on ``node`` (``[member]node``): see
        the module doc. Raises on failure (:class:`KubeApiError` 404: the hub pod is gone)."""
        split = split_qualified(node)
        raw = self._tasks.raw(uid)
        if split is None or raw is None:
            raise KubeApiError(404, "NotFound", f"pod {namespace}/{name} or node {node} is not known")
        member, member_node = split
        api = self._member_api(member)
        if api is None:
            raise MemberUnavailable(f"cluster {member} does not answer")
        placement = secrets.token_hex(8)
        copy = delegate_of(raw, member_node, placement)
        with self._lock:
            self._in_flight[uid] = (member, placement)
        try:
            self._create_copy(api, namespace, copy, uid, placement)
        except Exception:
            self._forget(uid, placement)
            raise
        try:
            self._hub.request("PATCH", f"/api/v1/namespaces/{namespace}/pods/{name}", {"metadata": {
                "uid": uid, "labels": {CLUSTER_LABEL: member},
                "annotations": {NODE_ANNOTATION: member_node, PLACEMENT_ANNOTATION: placement}}}, content_type=_MERGE)
        except Exception:
            self._forget(uid, placement)
            self._delete_quietly(api, namespace, name)
            raise
        self._label_job(namespace, raw, member)

    def _forget(self, uid: str, placement: str) -> None:
        with self._lock:
            if self._in_flight.get(uid, ("", ""))[1] == placement:
                del self._in_flight[uid]

    def _create_copy(self, api: KubeApi, namespace: str, copy: Mapping[str, Any], uid: str, placement: str) -> None:
        name = copy["metadata"]["name"]
        for attempt in range(2):
            try:
                api.create_pod(namespace, copy)
                return
            except KubeApiError as exc:
                if exc.status == 404 and attempt == 0:  # the member has no such namespace yet
                    self._ensure_namespace(api, namespace)
                    continue
                if exc.status != 409:
                    raise
            existing = api.request("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")
            meta = existing.get("metadata") or {}
            owner = (meta.get("labels") or {}).get(HUB_POD_UID_LABEL)
            if owner == uid and (meta.get("annotations") or {}).get(PLACEMENT_ANNOTATION) == placement:
                return
            if not owner:  # the member's own pod of that name: never ours to delete
                raise KubeApiError(409, "NameTaken", f"cluster's own pod {namespace}/{name} has the copy's name")
            api.delete_pod(namespace, name, uid=str(meta.get("uid", "")))
            raise KubeApiError(503, "StaleCopy", f"a stale copy of pod {namespace}/{name} was in the way (deleted)")

    @staticmethod
    def _ensure_namespace(api: KubeApi, namespace: str) -> None:
        try:
            api.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                       "metadata": {"name": namespace}})
        except KubeApiError as exc:
            if exc.status != 409:
                raise

    @staticmethod
    def _delete_quietly(api: KubeApi, namespace: str, name: str) -> None:
        try:
            api.delete_pod(namespace, name)
        except Exception as exc:  # the mirror deletes it as stale later
            log.warning("copy of %s/%s not deleted after a failed placement: %s", namespace, name, exc)

    def _label_job(self, namespace: str, raw: Mapping[str, Any], member: str) -> None:
        for owner in (raw.get("metadata") or {}).get("ownerReferences") or ():
            if owner.get("kind") != "Job" or not str(owner.get("apiVersion", "")).startswith("batch/"):
                continue
            key = f"{owner.get('uid')}/{member}"
            with self._lock:
                if key in self._labelled_jobs:
                    return
                if len(self._labelled_jobs) >= _JOBS_REMEMBERED:
                    self._labelled_jobs.clear()
                self._labelled_jobs.add(key)
            try:
                self._hub.request("PATCH", f"/apis/batch/v1/namespaces/{namespace}/jobs/{owner.get('name')}",
                                  {"metadata": {"labels": {CLUSTER_LABEL: member}}}, content_type=_MERGE)
            except KubeApiError as exc:
                log.info("job %s/%s not labelled with its cluster: %s", namespace, owner.get("name"), exc)
