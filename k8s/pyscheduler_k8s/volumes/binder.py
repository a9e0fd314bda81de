"""Binding a placed pod's claims before the pod (kube-scheduler's PreBind): :class:`VolumeBinder`,
on the shim's binder threads (the package's docstring says how).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping

from pyscheduler_k8s.kubeapi import KubeApi, KubeApiError
from pyscheduler_k8s.volumes.model import BIND_POLL, BIND_TIMEOUT, MERGE_PATCH, VolumeBindingError
from pyscheduler_k8s.volumes.state import VolumeState

__all__ = ["VolumeBinder"]

log = logging.getLogger(__name__)


class VolumeBinder:
    """kube-scheduler's PreBind for the shim's binder threads: :meth:`prebind` writes the
    bindings :meth:`VolumeState.place` assumed and waits until the claims are bound (see the
    module doc). ``lock`` guards ``state`` (the shim's lock: never held during a write)."""

    def __init__(self, api: KubeApi, state: VolumeState, lock: threading.Lock, stop: threading.Event, *,
                 timeout: float = BIND_TIMEOUT, poll: float = BIND_POLL,
                 node_labels: Callable[[str], Mapping[str, str] | None] = lambda name: None) -> None:
        self.api = api
        self.state = state
        self.lock = lock
        self.stop = stop
        self.timeout = timeout
        self.poll = poll
        self.node_labels = node_labels
        self.writes = 0

    def prebind(self, uid: str, node: str) -> None:
        """Binds the pod's claims on ``node`` before the pod is bound there; nothing for a pod
        without claims to bind. Raises :class:`VolumeBindingError` when they cannot be (the
        pod's binding then fails, and the pod asks again)."""
        with self.lock:
            writes = self.state.plan(uid, node)
        if writes is None:
            return
        try:
            for kind, path, patch in writes:
                answer = self.api.request("PATCH", path, patch, content_type=MERGE_PATCH)
                self.writes += 1
                if isinstance(answer, Mapping):
                    with self.lock:
                        self.state.update(kind, "MODIFIED", answer)
        except KubeApiError as exc:
            raise VolumeBindingError(f"binding volumes: {exc}") from exc
        deadline = time.monotonic() + self.timeout
        while True:
            labels = self.node_labels(node)
            with self.lock:
                if self.state.bound(uid, labels):
                    self.state.finish(uid)
                    return
            if time.monotonic() >= deadline:
                raise VolumeBindingError(f"binding volumes: timed out after {self.timeout:g} s waiting for the "
                                         "claims to be bound")
            if self.stop.wait(self.poll):
                raise VolumeBindingError("binding volumes: the shim is stopping")
