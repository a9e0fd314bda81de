"""The member clusters of a partition (issue 33 level 2): a hub RM registers one partition whose
nodes come from several Kubernetes clusters, each node naming its cluster in the node attribute
``pyscheduler.io/cluster`` (:data:`~pyscheduler.si.vocabulary.CLUSTER_ATTRIBUTE`).

:class:`MemberClusters` is the partition's incremental index of them. Per cluster
(:class:`MemberCluster`): its nodes, its labels (the attribute
``pyscheduler.io/cluster-labels`` of the latest node added or updated: the same on all its
nodes), the sums of its nodes' capacity, allocated and available resources (available: of its
schedulable nodes) and a node order of its own (the partition's class, policy and weights), so
that an application placed in the cluster searches only that cluster's nodes, in policy order.
Everything is kept up to date from the nodes' own change notifications (a listener is added to
clustered nodes only), never by a scan of the nodes per decision.

A node without the attribute is in no cluster: a partition none of whose nodes carries it has
no clusters, and its scheduling is exactly as without this module (the partition and the cycle
look at :attr:`MemberClusters.clusters` before anything else; a node that is in no cluster gets no
listener).

Applications in a partition with clusters are placed whole in one cluster:
``Application.member_cluster`` is set by :meth:`MemberClusters.pin` (at the first allocation or
placeholder, or a preemption plan, made for it), and cleared for every application of a cluster
when its last node goes (removed, or moved to another cluster: :meth:`MemberClusters.node_removed`),
so that their asks may be placed elsewhere. Each pin and unpin is an application event (APP SET,
no detail, with a message) and a log line. Callers hold the partition's lock.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from pyscheduler.common.resources import Resource
from pyscheduler.objects.application import Application
from pyscheduler.objects.node import Node
from pyscheduler.objects.node_groups import NodeGroup
from pyscheduler.objects.object_events import AppEvents
from pyscheduler.policies.member_cluster_tags import parse_cluster_labels
from pyscheduler.policies.node_ordering import NodeOrdering, make_node_ordering
from pyscheduler.si.events import EventChangeDetail
from pyscheduler.si.vocabulary import CLUSTER_ATTRIBUTE, CLUSTER_LABELS_ATTRIBUTE

__all__ = ["MemberCluster", "MemberClusters", "cluster_name_of"]

_log = logging.getLogger(__name__)


def cluster_name_of(attributes: Mapping[str, str]) -> str:
    """The member cluster a node's attributes name (``""``: none)."""
    return attributes.get(CLUSTER_ATTRIBUTE, "")


class MemberCluster(NodeGroup):
    """One member cluster: a group of nodes (:class:`~pyscheduler.objects.node_groups.NodeGroup`)
    with the cluster's labels."""

    __slots__ = ("labels",)

    def __init__(self, name: str, ordering: NodeOrdering) -> None:
        super().__init__(name, ordering)
        self.labels: dict[str, str] = {}


class MemberClusters:
    """A partition's member clusters (see the module doc)."""

    def __init__(self, app_events: AppEvents, *, native: bool | None = None) -> None:
        self._app_events = app_events
        self._native = native
        self._policy = "fair"
        self._weights: dict[str, float] = {"vcore": 1.0, "memory": 1.0}
        #: Cluster name -> cluster, for the clusters with at least one node.
        self.clusters: dict[str, MemberCluster] = {}
        #: Node id -> its cluster's name, for the nodes in a cluster.
        self.cluster_of_node: dict[str, str] = {}
        #: The nodes given this index's listener (a node keeps it: it checks its cluster).
        self._listening: set[str] = set()

    @property
    def policy(self) -> str:
        return self._policy

    @property
    def weights(self) -> Mapping[str, float]:
        return self._weights

    def cluster_of(self, node_id: str) -> MemberCluster | None:
        name = self.cluster_of_node.get(node_id)
        return self.clusters.get(name) if name is not None else None

    def set_policy(self, policy: str, weights: Mapping[str, float]) -> None:
        """The partition's node sort policy and weights changed: every cluster's order too."""
        self._policy = policy or "fair"
        self._weights = dict(weights)
        for cluster in self.clusters.values():
            cluster.set_policy(self._policy, self._weights)

    # -- nodes -------------------------------------------------------------------------------

    def node_added(self, node: Node, applications: Mapping[str, Application]) -> None:
        """A node joined the partition (or its attributes changed): it joins the cluster its
        attributes name (leaving the one it was in: see :meth:`node_removed`), and that
        cluster's labels become the ones it carries."""
        name = cluster_name_of(node.attributes)
        current = self.cluster_of_node.get(node.node_id)
        if current is not None and current != name:
            self._leave(node.node_id, current, applications)
        if not name:
            return
        cluster = self.clusters.get(name)
        if cluster is None:
            ordering = make_node_ordering(self._policy, self._weights, native=self._native)
            cluster = self.clusters[name] = MemberCluster(name, ordering)
            _log.info("member cluster %s: first node %s", name, node.node_id)
        cluster.labels = parse_cluster_labels(node.attributes.get(CLUSTER_LABELS_ATTRIBUTE, ""))
        if current != name:
            self.cluster_of_node[node.node_id] = name
            cluster.join(node)
        if node.node_id not in self._listening:
            self._listening.add(node.node_id)
            node.add_listener(self._node_changed)

    def node_removed(self, node_id: str, applications: Mapping[str, Application]) -> None:
        """A node left the partition (its allocations released already). When it was its
        cluster's last node, the cluster leaves the index and every application placed there
        (among ``applications``, the partition's) is unpinned: its asks may go elsewhere."""
        self._listening.discard(node_id)
        name = self.cluster_of_node.get(node_id)
        if name is not None:
            self._leave(node_id, name, applications)

    def set_reserved(self, node_id: str, reserved: bool) -> None:
        """The partition's reservations changed on a node: its cluster's order skips it too."""
        cluster = self.cluster_of(node_id)
        if cluster is not None:
            cluster.set_reserved(node_id, reserved)

    def _leave(self, node_id: str, name: str, applications: Mapping[str, Application]) -> None:
        del self.cluster_of_node[node_id]
        cluster = self.clusters.get(name)
        if cluster is None:
            return
        cluster.leave(node_id)
        if cluster.nodes:
            return
        del self.clusters[name]
        _log.info("member cluster %s: its last node %s left", name, node_id)
        for app_id in sorted(cluster.pinned):
            app = applications.get(app_id)
            if app is not None:
                self.unpin(app, cluster)

    def _node_changed(self, node: Node) -> None:
        cluster = self.cluster_of(node.node_id)
        if cluster is not None:
            cluster.node_changed(node)

    def problems(self, nodes: Mapping[str, Node]) -> list[str]:
        """Everything the index gets wrong against the partition's ``nodes`` (empty when it is
        consistent): each node in the cluster its attribute names, and each cluster's sums
        those of its nodes (a health check for tests)."""
        found: list[str] = []
        for node_id, node in nodes.items():
            name = cluster_name_of(node.attributes)
            if self.cluster_of_node.get(node_id, "") != name:
                found.append(f"node {node_id} of cluster {name!r} indexed in {self.cluster_of_node.get(node_id)!r}")
        for name, cluster in self.clusters.items():
            members = [nodes[n] for n in cluster.nodes if n in nodes]
            if len(members) != len(cluster.nodes):
                found.append(f"cluster {name} holds nodes the partition does not")
            sums = (sum((n.total for n in members), Resource()), sum((n.allocated for n in members), Resource()),
                    sum((n.available for n in members if n.schedulable), Resource()))
            if sums != (cluster.total, cluster.allocated, cluster.available):
                found.append(f"cluster {name} sums {(cluster.total, cluster.allocated, cluster.available)} != {sums}")
        return found

    # -- applications ---------------------------------------------------------------------------

    def pin(self, app: Application, cluster: MemberCluster, why: str) -> None:
        """Places ``app`` in ``cluster`` (an application event and a log line say so)."""
        app.member_cluster = cluster.name
        cluster.pinned.add(app.app_id)
        message = f"Application placed in member cluster '{cluster.name}' ({why})"
        self._app_events.state_change(app.app_id, EventChangeDetail.DETAILS_NONE, message)
        _log.info("application %s: %s", app.app_id, message)

    def pin_to_node(self, app: Application, node: Node, why: str) -> None:
        """``app`` got its first allocation on ``node``: it is placed in the node's cluster
        (nothing when the node is in none or the app is placed already)."""
        if app.member_cluster:
            return
        cluster = self.cluster_of(node.node_id)
        if cluster is not None:
            self.pin(app, cluster, why)

    def unpin(self, app: Application, cluster: MemberCluster) -> None:
        """``app``'s cluster lost its last node: the app may be placed elsewhere."""
        if app.member_cluster != cluster.name:
            return
        app.member_cluster = ""
        message = f"Application no longer placed in member cluster '{cluster.name}': its last node left"
        self._app_events.state_change(app.app_id, EventChangeDetail.DETAILS_NONE, message)
        _log.info("application %s: %s", app.app_id, message)

    def forget(self, app: Application) -> None:
        """``app`` left the partition (removed or terminated)."""
        cluster = self.clusters.get(app.member_cluster)
        if cluster is not None:
            cluster.pinned.discard(app.app_id)
