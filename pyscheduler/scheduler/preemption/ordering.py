"""The orders in which the three preemptors try victims, in one place (YuniKorn keeps one per
preemptor, and they differ on purpose): see each function. ``victim_kind`` is the protective
rank shared by the required-node and quota orders: regular allocations first, then those that
opted out of preemption, then originators (an application's first allocation) last."""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import TYPE_CHECKING, Final

from pyscheduler.common.resources import Resource

if TYPE_CHECKING:
    from pyscheduler.objects.allocation import Allocation

__all__ = ["HOUR_NS", "shares_a_type", "sort_for_node", "sort_for_quota", "sort_for_required_node", "victim_kind"]

HOUR_NS: Final = 3600 * 1_000_000_000


def victim_kind(alloc: Allocation) -> int:
    if alloc.originator:
        return 3
    return 2 if not alloc.allow_preempt_self else 1


def shares_a_type(wanted: Resource, held: Resource) -> bool:
    """YuniKorn's MatchAny: a resource type both use."""
    return any(held.get(name, 0) != 0 for name, value in wanted.items() if value != 0)


def sort_for_node(victims: list[Allocation]) -> list[Allocation]:
    """Guaranteed-share preemption, a node's victims: opted in to preemption first, then not
    originators, then newest first (priority is not a key here)."""
    return sorted(victims, key=lambda a: (not a.allow_preempt_self, a.originator, -a.create_time_ns))


def _compare(left: Allocation, right: Allocation) -> int:
    """YuniKorn's SortAllocations as a comparison: kind, lower priority, newer, smaller."""
    for a, b in ((victim_kind(left), victim_kind(right)), (left.priority, right.priority),
                 (-left.create_time_ns, -right.create_time_ns)):
        if a != b:
            return -1 if a < b else 1
    if left.resource == right.resource:
        return 0
    return 1 if (left.resource - right.resource).strictly_greater_than_zero() else -1


def sort_for_required_node(allocations: list[Allocation]) -> list[Allocation]:
    """Required-node preemption (YuniKorn's SortAllocations)."""
    return sorted(allocations, key=functools.cmp_to_key(_compare))


def sort_for_quota(allocations: list[Allocation], maximum: Resource, amount: Resource) -> list[Allocation]:
    """Quota-change preemption: non-originators first, then those opted in to preemption (the
    protective order, decided in issue 13; later YuniKorn scores them the same way), then
    YuniKorn's keys: the larger percentage of the victim's resource types that the amount to
    release has (a victim made of those types frees what is needed), lower priority, newer by
    the hour (YuniKorn truncates creation times to the hour here), the smaller share of the max
    in the amount's types (exact fractions: equal sums tie), and the allocation key."""
    def matching(alloc: Allocation) -> int:
        types = list(alloc.resource)
        return sum(1 for name in types if name in amount) * 100 // len(types) if types else 0

    def share(alloc: Allocation) -> Fraction:
        return sum((Fraction(alloc.resource.get(k, 0), maximum[k]) for k in amount if maximum.get(k)), Fraction(0))

    return sorted(allocations, key=lambda a: (a.originator, not a.allow_preempt_self, -matching(a), a.priority,
                                              -(a.create_time_ns // HOUR_NS), share(a), a.allocation_key))
