"""The shim's cache (YuniKorn's ``pkg/cache``): what the shim knows of the cluster, behind ONE
lock that is never held while calling the core or the API server (the core may call back on
the calling thread).

- :mod:`.task_state`: the records' states and their one transition table (pure);
- :mod:`.tasks`: the pods' records, applications and gangs (the only place states change);
- :mod:`.podgroups`: Kubernetes' PodGroups, the pods waiting for theirs, their conditions;
- :mod:`.cluster`: nodes, reported layers, namespaces, PriorityClasses, storage objects;
- :mod:`.filters`: the core's predicates and scores answered from both.

The cache does no I/O: each method answers with what its caller must tell the core or write.
"""

from __future__ import annotations

import threading

from pyscheduler_k8s.cache.cluster import ClusterCache
from pyscheduler_k8s.cache.filters import Filters
from pyscheduler_k8s.cache.podgroups import PodGroupCache
from pyscheduler_k8s.cache.tasks import TaskCache
from pyscheduler_k8s.cluster_index import ClusterIndex
from pyscheduler_k8s.predicates import inclusion_passes
from pyscheduler_k8s.volumes import VolumeState

__all__ = ["ShimCache"]


class ShimCache:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        #: The pods on nodes and the inter-pod constraints of ours, counted for the predicates
        #: (InterPodAffinity, PodTopologySpread).
        self.index = ClusterIndex(node_passes=inclusion_passes)
        #: Volumes (issue 30): claims, volumes, classes, CSINode limits and the pods with claims
        #: on nodes, for the volume filters (:mod:`..volumes`).
        self.volumes = VolumeState()
        self.cluster = ClusterCache(self.lock, self.index, self.volumes)
        self.tasks = TaskCache(self.lock, self.index, self.volumes)
        self.podgroups = PodGroupCache(self.lock)
        self.filters = Filters(self.lock, self.cluster, self.tasks, self.index, self.volumes)
