"""The watch events and lists of the cluster's objects other than pods, applied to the cache
(:mod:`.cache.cluster`) and, for nodes and their reported layers, told to the core: each a core
node (:mod:`.nodes`); a deleted node is decommissioned, a cordoned one drained (no new pods), a
capacity change updates it.

The optional ones (CustomNodeResources, PriorityClasses, Namespaces, the storage objects) are
listed through :meth:`.informers.Informers.optional_list`: without them the shim goes on (no
reported layers; no ``allow-preemption`` from PriorityClasses; terms selecting namespaces by
label see only the namespaces they name; no volume filters).
"""

from __future__ import annotations

from typing import Any, Final

from pyscheduler_k8s.cache.cluster import DELETED, ClusterCache, name_of
from pyscheduler_k8s.cnr import CNR_PATH
from pyscheduler_k8s.core_client import CoreClient
from pyscheduler_k8s.informers import Informers
from pyscheduler_k8s.kubeapi import KubeApi
from pyscheduler_k8s.volumes import STORAGE_PATHS

__all__ = ["ClusterEvents", "NAMESPACES_PATH", "NODES_PATH", "PRIORITY_CLASSES_PATH"]

NODES_PATH: Final = "/api/v1/nodes"
PRIORITY_CLASSES_PATH: Final = "/apis/scheduling.k8s.io/v1/priorityclasses"
#: Namespaces are followed for their labels (pod affinity terms' ``namespaceSelector``).
NAMESPACES_PATH: Final = "/api/v1/namespaces"


class ClusterEvents:
    def __init__(self, api: KubeApi, cluster: ClusterCache, core: CoreClient, informers: Informers) -> None:
        self._api = api
        self._cluster = cluster
        self._core = core
        self._informers = informers

    # -- nodes -------------------------------------------------------------------------------------

    def relist_nodes(self) -> str:
        items, version = self._api.list(NODES_PATH)
        present = {name_of(n) for n in items}
        for item in items:
            self.on_node("ADDED", item)
        for name in [name for name in self._cluster.node_names() if name not in present]:
            self.on_node(DELETED, {"metadata": {"name": name}})
        return version

    def on_node(self, kind: str, node: dict[str, Any]) -> None:
        self._core.update_nodes(self._cluster.node_event(kind, node))

    # -- CustomNodeResources (the node reporter agents') ---------------------------------------------

    def relist_reported(self) -> str | None:
        """None when there are none to follow (no CRD: no node reporters on this cluster, or the
        shim's role lacks them)."""
        listed = self._informers.optional_list(CNR_PATH, "CustomNodeResources (the node reporters')")
        if listed is None:
            return None
        items, version = listed
        present = {name_of(c) for c in items}
        for name in [name for name in self._cluster.reported_names() if name not in present]:
            self.on_reported(DELETED, {"metadata": {"name": name}})
        for item in items:
            self.on_reported("ADDED", item)
        return version

    def on_reported(self, kind: str, cnr: dict[str, Any]) -> None:
        info = self._cluster.reported_event(kind, cnr)
        if info is not None:
            self._core.update_nodes((info,))

    # -- PriorityClasses (their allow-preemption annotation) ---------------------------------------

    def relist_priority_classes(self) -> str | None:
        listed = self._informers.optional_list(PRIORITY_CLASSES_PATH,
                                               "PriorityClasses (their allow-preemption annotation)")
        if listed is None:
            return None
        self._cluster.set_priority_classes(listed[0])
        return listed[1]

    def on_priority_class(self, kind: str, priority_class: dict[str, Any]) -> None:
        self._cluster.priority_class_event(kind, priority_class)

    # -- Namespaces (their labels) -------------------------------------------------------------------

    def relist_namespaces(self) -> str | None:
        listed = self._informers.optional_list(NAMESPACES_PATH, "Namespaces (their labels, for namespaceSelector)")
        if listed is None:
            return None
        self._cluster.set_namespaces(listed[0])
        return listed[1]

    def on_namespace(self, kind: str, namespace: dict[str, Any]) -> None:
        self._cluster.namespace_event(kind, namespace)

    # -- storage (the volume filters) ----------------------------------------------------------------

    def relist_storage(self, kind: str) -> str | None:
        """Lists one kind of :data:`~.volumes.STORAGE_PATHS`; None when the shim may not."""
        listed = self._informers.optional_list(STORAGE_PATHS[kind], f"{kind} (the volume filters)")
        self._cluster.set_storage(kind, listed[0] if listed is not None else None)
        return listed[1] if listed is not None else None

    def on_storage(self, kind: str, event: str, obj: dict[str, Any]) -> None:
        self._cluster.storage_event(kind, event, obj)
