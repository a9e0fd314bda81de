"""The scheduling cycle's first step (:mod:`pyscheduler.scheduler.cycle`): reserved asks.

Each reservation's ask is tried on its node, then (a normal reservation) on any other node that
is not reserved; stale reservations are dropped: the application or the ask gone, the node gone,
a role-history hold past its placement timeout, or the node outside the member cluster or
topology domain the application was placed in since (the ask then goes where its application
is). An ask its queue's headroom refuses may preempt here, as the walk skips reserved asks; a
reserved daemon set ask whose node lacks room may preempt on that node. Called under the
partition's lock, with the cycle's own steps (``cycle._commit``, ``cycle._preempt``...).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyscheduler.objects.application import Application
from pyscheduler.objects.application_state import AppState
from pyscheduler.objects.partition import Partition
from pyscheduler.scheduler.cluster_choice import ClusterScope, scope_of_node
from pyscheduler.scheduler.preemption.preemptor import PreemptionTrigger

if TYPE_CHECKING:
    from pyscheduler.scheduler.cycle import Decision, SchedulingCycle

__all__ = ["try_reserved"]


def _reservation_scope(partition: Partition, app: Application, node_id: str) -> tuple[bool, ClusterScope | None]:
    """Whether the reservation on ``node_id`` still holds, and the scope its ask keeps to: the
    node outside the application's member cluster or topology domain (placed since it reserved)
    ends the hold."""
    scope = None
    if partition.member_clusters.clusters:
        scope = scope_of_node(partition.member_clusters, app, node_id)
        if scope is None:
            return False, None
    if app.topology_domain:
        domain = partition.topology.placed_domain(app)
        if domain is None or node_id not in domain.nodes:
            return False, None
        scope = ClusterScope((domain,))
    return True, scope


def try_reserved(cycle: SchedulingCycle, partition: Partition) -> Decision | None:
    """The first reserved ask placed (see the module doc), or None."""
    for reservation in partition.reservations.ordered():
        app = partition.applications.get(reservation.app_id)
        ask = app.asks.get(reservation.allocation_key) if app is not None else None
        node = partition.nodes.get(reservation.node_id)
        if app is None or ask is None or node is None:
            partition.reservations.unreserve(reservation.allocation_key, node)
            continue
        kept, scope = _reservation_scope(partition, app, node.node_id)
        if not kept:
            partition.reservations.unreserve(reservation.allocation_key, node)
            continue
        queue = app.queue
        if reservation.history and queue is not None:
            placement = cycle._history_placement(partition, queue, app, ask)
            if placement is None or placement.node_id != node.node_id:
                # Its placement timeout passed: the hold ends, the ask takes the normal order.
                partition.reservations.unreserve(reservation.allocation_key, node)
                continue
        if queue is None:
            continue
        if not cycle._fits_headroom(partition, queue, app, ask):
            # YuniKorn tries preemption for an ask its queue's headroom refuses, reserved or
            # not (the walk skips reserved asks, so this is their only chance).
            if (not reservation.required and not ask.triggered_preemption
                    and ask.resource.fits_in_max_undef(cycle._user_headroom(partition, queue, app))
                    and cycle._preempt(partition, queue, app, ask, PreemptionTrigger.QUEUE_HEADROOM, scope=scope)):
                return None
            continue
        # An app that is not running yet may have become unrunnable since it reserved
        # (YuniKorn's TryReservedAllocate skips it too, without a runnable event).
        if app.state is AppState.ACCEPTED and not (
            queue.can_run_app() and partition.ugm.can_run_app(queue.path, app.app_id, app.user, app.groups)
        ):
            continue
        if node.schedulable and node.fits(ask.resource) and cycle._predicates_pass(partition, ask, node):
            return cycle._commit(partition, app, ask, node, from_reservation=True)
        if (ask.required_node and not reservation.history and not ask.triggered_preemption
                and node.schedulable and not node.fits(ask.resource)):
            if cycle._try_required_node_preemption(partition, queue, app, ask, node, scope):
                return None
            continue
        if not reservation.required:
            other = cycle._first_node(partition, ask, skip_reserved=True, exclude=node.node_id,
                                     ordering=scope.clusters[0].ordering if scope is not None else None)
            if other is not None:
                return cycle._commit(partition, app, ask, other, from_reservation=True)
            # Reserved while nothing fitted (the reservation delay is shorter than the
            # preemption delay): it may still preempt, which moves its reservation.
            if not ask.triggered_preemption and cycle._preempt(partition, queue, app, ask,
                                                              PreemptionTrigger.NO_NODE_FITS, scope=scope):
                return None
    return None
