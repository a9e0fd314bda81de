"""The core's questions about a pod and a node, answered from the cache (under its lock: the
cache is the cluster as of now): the node filters of :mod:`..predicates`, then InterPodAffinity
and PodTopologySpread against the cluster index, then the volume filters; the preferred terms'
scores (:mod:`..preferences`); and whether the pod fits once some victims are gone.
"""

from __future__ import annotations

import threading
from typing import Final

from pyscheduler.si import messages as si
from pyscheduler_k8s.cache.cluster import ClusterCache
from pyscheduler_k8s.cache.tasks import Task, TaskCache
from pyscheduler_k8s.cluster_index import ClusterIndex, PodConstraints
from pyscheduler_k8s.nodes import NodeView
from pyscheduler_k8s.predicates import check_node, node_selector_term_matches, node_unschedulable, \
    tolerations_tolerate
from pyscheduler_k8s.volumes import VolumeState

__all__ = ["Filters"]

_NO_CONSTRAINTS: Final = PodConstraints("", {})


class Filters:
    def __init__(self, lock: threading.Lock, cluster: ClusterCache, tasks: TaskCache, index: ClusterIndex,
                 volumes: VolumeState) -> None:
        self._lock = lock
        self._cluster = cluster
        self._tasks = tasks
        self._index = index
        self._volumes = volumes

    def predicates(self, args: si.PredicatesArgs) -> str | None:
        """None when the pod may go on the node, else why not."""
        with self._lock:
            task = self._tasks.task(args.allocation_key)
            node = self._cluster.checked_node(args.node_id)
            if task is None or node is None:
                return f"node {args.node_id} or pod {args.allocation_key} is not known to the shim"
            used = [] if not task.ports else [
                port for other in self._tasks.port_holders(args.node_id, args.allocation_key) for port in other.ports]
            raw = task.raw
            # A cordoned node is drained in the core too (as YuniKorn does), so this refuses
            # only in the moment between the cordon and the core hearing of it.
            reason = node_unschedulable(raw, node) or check_node(raw, node, used)
            if reason is None:
                reason = self._inter_pod(task, node)
            if reason is None:  # VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone
                reason = self._volumes.check(raw, node)
        return reason

    def _inter_pod(self, task: Task, node: NodeView, gone: frozenset[str] = frozenset()) -> str | None:
        """InterPodAffinity and PodTopologySpread (the caller holds the lock)."""
        constraints = task.constraints or _NO_CONSTRAINTS
        reason = self._index.check(task.view.uid, constraints, task.raw, node, gone)
        return None if reason is None else f"node {node.name}: {reason}"

    def score_nodes(self, args: si.ScoreNodesArgs) -> list[int]:
        """The pod's preferred terms scored over the core's candidate nodes; the core weighs
        them against its own node order."""
        with self._lock:
            task = self._tasks.task(args.allocation_key)
            if task is None or task.constraints is None:
                return [0] * len(args.node_ids)
            nodes = [self._cluster.checked_node(n) or NodeView(n) for n in args.node_ids]
            return self._index.scores(task.view.uid, task.constraints, task.raw, nodes,
                                      node_selector_term_matches, tolerations_tolerate)

    def preemption_predicates(self, args: si.PreemptionPredicatesArgs) -> si.PreemptionPredicatesResponse:
        """Would the pod go on the node once the victims ``[0..i]`` are gone, for the first
        ``i`` from ``start_index`` on? (The core checks the resources.) A node's selector,
        affinity and taints do not depend on the victims; its host ports in use do, and so do
        inter-pod affinity and topology spread (the victims count as gone)."""
        keys = args.preempt_allocation_keys
        with self._lock:
            task = self._tasks.task(args.allocation_key)
            node = self._cluster.checked_node(args.node_id)
            if task is None or node is None:
                return si.PreemptionPredicatesResponse(success=False)
            holders = [] if not task.ports else [
                (other.view.uid, other.ports) for other in self._tasks.port_holders(args.node_id, args.allocation_key)]
            raw = task.raw
            for index in range(max(0, args.start_index), len(keys)):
                gone = frozenset(keys[:index + 1])
                if node_unschedulable(raw, node) is None \
                        and check_node(raw, node, [port for uid, ports in holders if uid not in gone for port in ports]) is None \
                        and self._inter_pod(task, node, gone) is None \
                        and self._volumes.check(raw, node, gone) is None:
                    return si.PreemptionPredicatesResponse(success=True, index=index)
        return si.PreemptionPredicatesResponse(success=False)
