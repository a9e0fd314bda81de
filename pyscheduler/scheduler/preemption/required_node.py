"""Required-node preemption: a daemon set's ask (one with a required node) that fits its
queue's headroom but not its node frees room on that node (YuniKorn's
``required_node_preemptor.go``; ``shared/spec/yunikorn/preemption.md`` §1.3).

It ignores the partition's ``preemption.enabled``, the ask's ``allow_preempt_other``, delays,
queue policies and guarantees: a daemon set's pod must run on its node. Candidates are the
node's allocations (not foreign ones) without a required node, with a priority at most the
ask's, not preempted already, sharing a resource type with the ask. They are sorted (regular
first, then opted out of preemption, then originators; lower priority first; newer first;
smaller first) and taken in order until they cover the ask; the set is used only when it plus
what the node has free holds the ask. An RM with ``preemption_predicates`` confirms the set
(and may shorten it); without it the set is used as is.

Decided here: YuniKorn marks as preempted the victims the RM confirmed but releases every
victim it collected; pyscheduler releases exactly the ones it marked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from pyscheduler.common.resources import Resource
from pyscheduler.scheduler.preemption.ordering import shares_a_type, sort_for_required_node
from pyscheduler.si.callback import PreemptionPredicatesFunc
from pyscheduler.si.messages import PreemptionPredicatesArgs

if TYPE_CHECKING:
    from pyscheduler.objects.allocation import Allocation
    from pyscheduler.objects.node import Node

__all__ = ["NO_VICTIM_FOR_REQUIRED_NODE", "required_node_victims"]

#: The allocation log entry when nothing can be preempted (YuniKorn's NoVictimForRequiredNode).
NO_VICTIM_FOR_REQUIRED_NODE: Final = "No fit on required node, preemption does not help"


def required_node_victims(ask: Allocation, node: Node,
                          preemption_predicates: PreemptionPredicatesFunc | None) -> list[Allocation]:
    """The victims to release on ``node`` for ``ask`` (empty: preemption does not help)."""
    candidates = [
        alloc for _, alloc in sorted(node.allocations.items())
        if not alloc.required_node and alloc.priority <= ask.priority and not alloc.preempted
        and shares_a_type(ask.resource, alloc.resource)
    ]
    victims: list[Allocation] = []
    freed = Resource()
    for alloc in sort_for_required_node(candidates):
        if ask.resource.fits_in(freed):
            break
        freed = freed + alloc.resource
        victims.append(alloc)
    if not victims or not ask.resource.fits_in(freed + node.available):
        return []
    if preemption_predicates is None:
        return victims
    try:
        response = preemption_predicates(PreemptionPredicatesArgs(
            ask.allocation_key, node.node_id, tuple(v.allocation_key for v in victims), 0))
    except Exception:  # a broken RM confirms nothing
        return []
    if not response.success or response.index < 0 or response.index >= len(victims):
        return []
    return victims[:response.index + 1]
