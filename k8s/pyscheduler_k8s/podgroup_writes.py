"""The PodGroups' ``PodGroupInitiallyScheduled`` condition, written as kube-scheduler writes it
(a strategic-merge patch of ``podgroups/<name>/status`` with ``observedGeneration``): True,
reason ``Scheduled``, once a PodGroup's gang runs (terminal: never written again); False,
reason ``Unschedulable``, with the core's reason while it waits (written when the reason
changes).

Callers (the core's callbacks) never wait: a write is queued per group on a coalescing writer
(:mod:`.status_writer`: the newest per group), tried :data:`ATTEMPTS` times with a doubling
pause; one that still fails is forgotten, so the next change writes again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Final

from pyscheduler_k8s.cache.podgroups import ConditionWrite, PodGroupCache
from pyscheduler_k8s.kubeapi import KubeApi, KubeApiError
from pyscheduler_k8s.podgroup import condition_patch, status_path
from pyscheduler_k8s.status_writer import CoalescingWriter

__all__ = ["ATTEMPTS", "PodGroupStatus"]

log = logging.getLogger(__name__)

ATTEMPTS: Final = 4
#: kube-scheduler's patch type for the status (the conditions merge by ``type``).
PATCH_TYPE: Final = "application/strategic-merge-patch+json"


def _rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class PodGroupStatus:
    def __init__(self, api: KubeApi, groups: PodGroupCache, *, clock: Callable[[], float]) -> None:
        self._api = api
        self._groups = groups
        self._clock = clock
        self._stop = threading.Event()
        self._writer: CoalescingWriter[ConditionWrite] = CoalescingWriter(self._write, name="k8s-podgroup-status")

    def start(self) -> None:
        self._writer.start(1)

    def stop(self) -> None:
        self._stop.set()
        self._writer.stop()

    def scheduled(self, app_id: str) -> None:
        """The gang ``app_id`` runs: its PodGroup (if it is one's) says so."""
        self._submit(self._groups.condition(app_id, True, "the gang's minimum count of members is placed",
                                            _rfc3339(self._clock())))

    def unschedulable(self, app_id: str, message: str) -> None:
        """The gang ``app_id`` waits because of ``message`` (the core's reason)."""
        self._submit(self._groups.condition(app_id, False, message, _rfc3339(self._clock())))

    def _submit(self, write: ConditionWrite | None) -> None:
        if write is not None:
            self._writer.submit(f"{write.group.namespace}/{write.group.name}", write)

    def _write(self, _key: str, write: ConditionWrite) -> None:
        group = write.group
        patch = condition_patch(group, write.scheduled, write.message, write.since)
        for attempt in range(ATTEMPTS):
            try:
                self._api.request("PATCH", status_path(group.namespace, group.name), patch, content_type=PATCH_TYPE)
                return
            except KubeApiError as exc:
                if exc.status == 404 or attempt == ATTEMPTS - 1 or self._stop.wait(0.5 * 2 ** attempt):
                    log.info("PodGroup %s/%s: condition not written: %s", group.namespace, group.name, exc)
                    break
        self._groups.condition_failed(write)
