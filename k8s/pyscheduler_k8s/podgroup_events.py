"""The PodGroups' list and watch (``/apis/scheduling.k8s.io/v1beta1/podgroups``), applied to the
cache (:mod:`.cache.podgroups`). PodGroups are optional (:meth:`.informers.Informers.optional_list`):
a cluster without the API (kube-apiserver without ``GenericWorkload`` and the ``v1beta1`` group
version) or a role that may not list them leaves the shim as it was before the API, said once
in the log and looked for again later.

A group appearing hands the pods that waited for it back to ``rehandle`` (the pod handlers:
:meth:`.pod_events.PodEvents.rehandle`), as does PodGroups ceasing to be followed (their pods
are then ordinary pods). A group's spec changing (``minCount`` when a Job scales) applies to
applications made from then on; one already reserving or running keeps its gang.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyscheduler_k8s.cache.podgroups import PodGroupCache
from pyscheduler_k8s.informers import Informers
from pyscheduler_k8s.podgroup import PODGROUPS_PATH

__all__ = ["PodGroupEvents"]


class PodGroupEvents:
    def __init__(self, groups: PodGroupCache, informers: Informers, rehandle: Callable[[str], None]) -> None:
        """``rehandle(uid)``: a pod that waited for its group, to be handled again."""
        self._groups = groups
        self._informers = informers
        self._rehandle = rehandle

    def relist(self) -> str | None:
        """Lists the PodGroups (None: not followed, see the module doc)."""
        listed = self._informers.optional_list(PODGROUPS_PATH, "PodGroups (Kubernetes' Workload API gangs)")
        self._again(self._groups.set_groups(listed[0] if listed is not None else None))
        return listed[1] if listed is not None else None

    def handle(self, kind: str, obj: dict[str, Any]) -> None:
        """One watch event of a PodGroup."""
        self._again(self._groups.group_event(kind, obj))

    def _again(self, uids: list[str]) -> None:
        for uid in uids:
            self._rehandle(uid)
