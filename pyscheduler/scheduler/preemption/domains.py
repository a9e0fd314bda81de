"""Which topology domain a waiting gang preempts in (issue 34).

A gang that requires a topology level and fits in no domain of it may preempt, with all its
victims inside one domain (:mod:`pyscheduler.scheduler.topology_choice` hands the attempt the
domains whose capacity could hold it). Which domain: the one where the **lowest-priority and
fewest** victims free enough room for the whole gang, kube-scheduler's order for choosing a
preemption node (``pickOneNodeForPreemption``: the lowest highest-priority victim, then the
fewest victims, then the smallest sum of their priorities), then the domain's name.

Per domain, the estimate is: the room the gang still lacks there (its need less the domain's
available resources, per type), covered by the domain's eligible victims (:class:`.victims.Victims`:
the same queues, priorities and opt-outs the planner honours) taken lowest priority first and,
within a priority, largest first, until nothing is lacking. A domain whose eligible victims
cannot cover what it lacks is left out: no plan there could ever hold the gang. The estimate
works on sums (a gang of one-node members may still need a victim per node); the planner then
chooses the actual victims, for each placeholder, inside the chosen domain, with every rule of
guaranteed-share preemption (:mod:`.guaranteed`).

Cost: one pass over the allocations of the candidate domains' nodes per attempt, only for a
gang waiting for a domain (an attempt is already bounded per leaf visit); a gang placed in a
domain has that one domain and is not ranked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyscheduler.objects.allocation import Allocation
    from pyscheduler.objects.node_groups import NodeGroup
    from pyscheduler.scheduler.preemption.victims import Victims

__all__ = ["VictimCost", "domain_victim_cost", "rank_domains"]

#: (the highest victim priority, the number of victims, the sum of their priorities): smaller
#: is better, compared in that order.
VictimCost = tuple[int, int, int]


def domain_victim_cost(domain: NodeGroup, victims: Victims, need: Mapping[str, int]) -> VictimCost | None:
    """The victims the estimate takes in ``domain`` for ``need`` (see the module doc); None when
    its eligible victims cannot free enough."""
    available = domain.available
    lacking = {name: amount - available.get(name, 0) for name, amount in need.items()
               if amount > available.get(name, 0)}
    if not lacking:
        return (0, 0, 0)
    candidates: list[Allocation] = [alloc for node in domain.nodes.values() for _, alloc in victims.on_node(node)]
    # Lowest priority first; among equals the largest in what is lacking (the fewest victims).
    candidates.sort(key=lambda a: (a.priority, -sum(a.resource.get(name, 0) for name in lacking),
                                   a.allocation_key))
    highest = total = count = 0
    for alloc in candidates:
        freed = alloc.resource
        if not any(freed.get(name, 0) > 0 for name in lacking):
            continue
        count += 1
        total += alloc.priority
        highest = alloc.priority if count == 1 else max(highest, alloc.priority)
        for name in list(lacking):
            left = lacking[name] - freed.get(name, 0)
            if left > 0:
                lacking[name] = left
            else:
                del lacking[name]
        if not lacking:
            return (highest, count, total)
    return None


def rank_domains(domains: Sequence[NodeGroup], victims: Victims, need: Mapping[str, int]) -> list[NodeGroup]:
    """``domains`` in the order a gang needing ``need`` should preempt in them (see the module
    doc), without those where no victims could free enough."""
    costs: list[tuple[VictimCost, str, NodeGroup]] = []
    for domain in domains:
        cost = domain_victim_cost(domain, victims, need)
        if cost is not None:
            costs.append((cost, domain.name, domain))
    costs.sort(key=lambda entry: (entry[0], entry[1]))
    return [domain for _, _, domain in costs]
