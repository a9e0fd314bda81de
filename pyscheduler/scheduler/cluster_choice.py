"""Which member clusters an application may go to, in what order (issue 33 level 2): the
cycle's view of :mod:`pyscheduler.objects.member_clusters` for one application.

Only called for a partition with member clusters. An application placed in a cluster already
(``Application.member_cluster``) gets that cluster alone. Otherwise the candidates are the
clusters that pass its required tags (:mod:`pyscheduler.policies.member_cluster_tags`), and its
*need* is its whole demand: its gang (``placeholder_ask``) while it has no allocation, else the
sum of its pending asks. They are ordered by:

1. whether the whole need fits the cluster's available resources (those where it does first);
2. the user's preference: the position among ``preferred-clusters``, then a match of
   ``preferred-cluster-selector``;
3. the partition's node policy: binpacking the cluster left fullest once the need is placed
   (the tightest that fits), fair the emptiest;
4. the name, so that every run decides the same.

The preference comes before the policy on purpose: the policy's score is a real number that
two clusters almost never share, so a preference ranked after it would only ever break exact
ties, that is never; a user who prefers ``west`` means "west when it has room", and room is
what the first key already settles.

A gang (an application with a ``placeholder_ask``) whose need fits no candidate waits
(:attr:`ClusterScope.search_nodes` False): none of its asks is tried on any node, so a gang is
never split nor started where it cannot complete; the cycle reports why
(:attr:`ClusterScope.waiting`). An application without a gang tries every candidate in order and
is placed in the first one where its ask fits a node.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

from pyscheduler.common.resources import Resource, go_string
from pyscheduler.objects.application import Application
from pyscheduler.objects.member_clusters import MemberCluster, MemberClusters
from pyscheduler.objects.node_groups import NodeGroup

__all__ = ["ClusterScope", "choose_scope", "scope_of_node"]


class ClusterScope(NamedTuple):
    """Where an application's asks may go now: member clusters, or a topology domain
    (:mod:`pyscheduler.scheduler.topology_choice`), groups of nodes alike to the cycle."""

    #: The groups to try, in order (one when the application is placed already).
    clusters: tuple[NodeGroup, ...]
    #: False: the application waits (its gang fits no cluster, or no cluster is allowed).
    search_nodes: bool = True
    #: Why it waits (for the RM and the ask's log), when ``search_nodes`` is False.
    waiting: str = ""
    #: The group of a node, of the kind of ``clusters`` (None: the node's member cluster).
    group_of: Callable[[str], NodeGroup | None] | None = None
    #: A gang waiting for a topology domain: what it needs in one, so that preemption chooses
    #: the domain where the fewest, lowest-priority victims free that much
    #: (:mod:`pyscheduler.scheduler.preemption.domains`). None: ``clusters`` are tried in order.
    preempt_for: Resource | None = None

    def allows(self, cluster: NodeGroup | None) -> bool:
        return cluster is not None and self.search_nodes and any(c is cluster for c in self.clusters)


def choose_scope(clusters: MemberClusters, app: Application) -> ClusterScope:
    """The clusters ``app`` may go to now, in order (see the module doc)."""
    placed = clusters.clusters.get(app.member_cluster) if app.member_cluster else None
    if placed is not None:
        return ClusterScope((placed,))
    request = app.cluster_request
    allowed = [c for c in clusters.clusters.values() if request.allows(c.name, c.labels)]
    if not allowed:
        return ClusterScope((), False, f"no member cluster matches the required clusters of application '{app.app_id}'")
    gang = not app.placeholder_ask.is_zero()
    need = app.placeholder_ask if gang and not app.allocations else app.pending
    binpacking = clusters.policy == "binpacking"
    weights = clusters.weights

    def key(cluster: MemberCluster) -> tuple[bool, tuple[int, int], float, str]:
        usage = cluster.usage_after(need, weights)
        return (not cluster.fits(need), request.preference(cluster.name, cluster.labels),
                -usage if binpacking else usage, cluster.name)

    ordered = sorted(allowed, key=key)
    if not gang:
        return ClusterScope(tuple(ordered))
    fitting = tuple(c for c in ordered if c.fits(need))
    if fitting:
        return ClusterScope(fitting)
    return ClusterScope(tuple(ordered), False, _no_room(app, need, ordered, weights))


def scope_of_node(clusters: MemberClusters, app: Application, node_id: str) -> ClusterScope | None:
    """A reserved ask's scope: the application's cluster, or the reserved node's while it is
    placed nowhere; None when the node is in another cluster than the application's."""
    cluster = clusters.cluster_of(node_id)
    if cluster is None or (app.member_cluster and app.member_cluster != cluster.name):
        return None
    return ClusterScope((cluster,))


def _no_room(app: Application, need: Resource, candidates: list[MemberCluster], weights: Mapping[str, float]) -> str:
    """The gang's waiting message, naming the candidate with the most room left."""
    largest = min(candidates, key=lambda c: (c.usage_after(need, weights), c.name))
    return (f"no member cluster has room for the whole application '{app.app_id}' "
            f"(needs {go_string(need)}; largest available: cluster '{largest.name}' "
            f"with {go_string(largest.available)})")
