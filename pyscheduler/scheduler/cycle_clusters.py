"""The scheduling cycle's steps for an ask in a partition with member clusters (issue 33 level 2;
:mod:`pyscheduler.objects.member_clusters`, :mod:`pyscheduler.scheduler.cluster_choice`).

The cycle (:mod:`pyscheduler.scheduler.cycle`) decides the application's
:class:`~pyscheduler.scheduler.cluster_choice.ClusterScope` once per visit and, after the quota
checks, hands each ask here instead of its own node steps. The same steps, kept to the scope:

- an application that waits (its gang fits no member cluster, or no cluster is allowed) tries no
  node: its ask is logged and reported (FAILED, NO_NODE_FITS, with the reason), and may still
  preempt, over the allowed clusters in order;
- a required-node ask goes to its node only when that node is in a cluster of the scope (it then
  places the application in that cluster), else it waits;
- the same steps serve a topology domain (:mod:`pyscheduler.scheduler.topology_choice`): the
  scope's ``group_of`` says which domain a node is in;
- a role-history node in a cluster of the scope is tried as usual; one elsewhere is ignored;
- any other ask takes the first node that fits, cluster by cluster in the scope's order, then
  preemption, then a reservation (the cycle's ``_try_nodes`` with the scope).

The application is placed in a cluster by the partition's commit of its first allocation, or
here by a preemption plan (:func:`pin_by_plan`). Called under the partition's lock.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from pyscheduler.objects.allocation import Allocation
from pyscheduler.objects.application import Application
from pyscheduler.objects.partition import Partition
from pyscheduler.objects.queue import Queue
from pyscheduler.scheduler import ask_reports
from pyscheduler.scheduler.cluster_choice import ClusterScope
from pyscheduler.scheduler.preemption.preemptor import PreemptionTrigger

if TYPE_CHECKING:
    from pyscheduler.scheduler.cycle import Decision, SchedulingCycle

__all__ = ["REQUIRED_NODE_ELSEWHERE", "pin_by_plan", "try_in_clusters"]

#: Allocation log entry of a required-node ask whose node is outside its application's clusters.
REQUIRED_NODE_ELSEWHERE: Final = "Its required node is not in a member cluster the application may use"


def try_in_clusters(cycle: SchedulingCycle, partition: Partition, queue: Queue, app: Application,
                    ask: Allocation, now_ns: int, scope: ClusterScope) -> Decision | None:
    """The ask within ``scope`` (see the module doc): the decision, or None (the cycle then
    checks whether it preempted)."""
    if not scope.search_nodes:
        ask.log_failure(scope.waiting, now_ns)
        ask_reports.no_member_cluster(partition, app.app_id, ask, scope.waiting, cycle.context.clock.monotonic())
        cycle._preempt(partition, queue, app, ask, PreemptionTrigger.NO_NODE_FITS, scope=scope)
        return None
    group_of = scope.group_of or partition.member_clusters.cluster_of
    if ask.required_node:
        if not scope.allows(group_of(ask.required_node)):
            ask.log_failure(REQUIRED_NODE_ELSEWHERE, now_ns)
            return None
        return cycle._try_required_node(partition, app, ask)
    placement = cycle._history_placement(partition, queue, app, ask)
    avoid: frozenset[str] = frozenset()
    if placement is not None:
        avoid = placement.avoid
        if placement.node_id is not None and scope.allows(group_of(placement.node_id)):
            # It waits for its history node when that does not take it now.
            return cycle._try_history_node(partition, app, ask, placement.node_id, now_ns)
    return cycle._try_nodes(partition, queue, app, ask, now_ns, avoid, scope)


def pin_by_plan(partition: Partition, app: Application, ask: Allocation, node_id: str) -> None:
    """A preemption plan frees room on ``node_id`` for ``ask``: its application, placed nowhere
    yet, is placed in that node's cluster, or its topology domain (its victims are all there)."""
    why = f"preemption for {ask.allocation_key} on {node_id}"
    cluster = partition.member_clusters.cluster_of(node_id) if not app.member_cluster else None
    if cluster is not None:
        partition.member_clusters.pin(app, cluster, why)
    node = partition.nodes.get(node_id)
    if app.topology_request.level and not app.topology_domain and node is not None:
        partition.topology.pin_to_node(app, node, why)
