"""Quota-change preemption: after a queue's max is lowered below its usage, and its
``quota.preemption.delay`` has passed, release enough allocations to bring it down to the new
max (YuniKorn's ``quota_preemptor.go``; ``shared/spec/yunikorn/preemption.md`` §1.4). Runs only
when the partition's ``preemption.quotapreemptionenabled`` is on.

**Arming** (:func:`arm`, on every configuration applied): a managed queue with a delay above
zero, a max and usage above it gets a start time, now + delay (a further lowering does not
move it; a changed delay shifts it by the difference); a queue back within its max is disarmed.

**Firing** (:func:`fire_due`, every tick, root down): an armed queue whose start has passed and
that is still over its max is handled once (its start cleared) and its subtree is skipped.
The amount to release is, per type over the max, ``usage - preempting - max``, bounded by how
far the queue and its ancestors are over their guarantees. A parent splits it among its
children over their guarantees, in proportion to that excess (rounded down).

**Victims** in each leaf: allocations sharing a type with the amount, without a required node,
not preempted already; taken greedily while they fit in what is left of the amount. Each
application's victims go to the RM in one release (``PREEMPTED_BY_SCHEDULER``, ``preempting
allocations to enforce new max quota for queue : <path>``), each victim gets the request
event ``Preempted by Quota change enforcement process in <path>``, and the queue a summary
event (QUEUE SET QUEUE_PREEMPTION, resource = the max).

Decided here (issue 13): YuniKorn sorts this preemptor's victims with opted-out and originator
allocations *first*, the opposite of its other two preemptors, untested; pyscheduler uses the
protective order (non-originators first, then those opted in to preemption, as later
YuniKorn scores them), then YuniKorn's own keys here (the larger percentage of matching types,
lower priority, newer by the hour, smaller share of the max, the allocation key), so an
application's driver is the last to go. YuniKorn's summary event
keeps only the last application's figures; pyscheduler's counts every application's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from pyscheduler.common.resources import Resource, go_string
from pyscheduler.objects.partition import PREEMPTED_BY_SCHEDULER, Released
from pyscheduler.config.queue_preemption import quota_preemption_delay_ns
from pyscheduler.scheduler.preemption.note import QUOTA, PreemptionNote, format_note
from pyscheduler.scheduler.preemption.ordering import shares_a_type, sort_for_quota

if TYPE_CHECKING:
    from pyscheduler.objects.allocation import Allocation
    from pyscheduler.objects.partition import Partition
    from pyscheduler.objects.queue import Queue

__all__ = ["QUOTA_RELEASE", "QuotaVictims", "apply", "arm", "fire_due", "preemptable_amount", "summary"]

QUOTA_RELEASE: Final = "preempting allocations to enforce new max quota for queue : "


@dataclass
class QuotaVictims:
    """What one firing chose: the queue, the amount planned, and the victims per leaf."""

    queue: Queue
    planned: Resource
    by_leaf: dict[str, list[Allocation]] = field(default_factory=dict)

    @property
    def victims(self) -> list[Allocation]:
        return [v for victims in self.by_leaf.values() for v in victims]


def arm(partition: Partition, now_ns: int) -> None:
    """Arms or disarms every managed queue after a configuration change (see the module doc).
    Caller holds the partition's lock."""
    for queue in partition.queues():
        delay = quota_preemption_delay_ns(queue.properties)
        if not queue.is_managed or delay <= 0 or not queue.over_max():
            queue.quota_preemption_start_ns = 0
            queue.quota_preemption_delay_armed_ns = 0
            continue
        if queue.quota_preemption_start_ns == 0:
            queue.quota_preemption_start_ns = now_ns + delay
        elif delay != queue.quota_preemption_delay_armed_ns:
            queue.quota_preemption_start_ns += delay - queue.quota_preemption_delay_armed_ns
        queue.quota_preemption_delay_armed_ns = delay


def preemptable_amount(queue: Queue) -> Resource:
    """Per type over the max: usage - preempting - max, bounded by the excess over the
    guarantees of the queue and its ancestors (where they have one)."""
    maximum = queue.max_resource or Resource()
    used = queue.allocated - queue.preempting
    over = {name: used.get(name, 0) - limit for name, limit in maximum.items() if used.get(name, 0) > limit}
    for ancestor in queue.ancestors():
        guaranteed = ancestor.guaranteed
        if not guaranteed:
            continue
        ancestor_used = ancestor.allocated - ancestor.preempting
        for name in list(over):
            if name in guaranteed:
                over[name] = min(over[name], max(0, ancestor_used.get(name, 0) - guaranteed[name]))
    return Resource({k: v for k, v in over.items() if v > 0})


def _split(queue: Queue, amount: Resource, out: dict[str, tuple[Queue, Resource]]) -> None:
    """A parent's amount divided among its children over their guarantees, in proportion to
    their excess, down to the leaves."""
    excess: dict[str, Resource] = {}
    total: dict[str, int] = {}
    for name in sorted(queue.children):
        child = queue.children[name]
        allocated, guaranteed = child.allocated, child.guaranteed
        if allocated.is_empty():
            continue
        if guaranteed:
            diff = {k: abs(guaranteed[k] - allocated.get(k, 0)) for k in guaranteed}
            if all(allocated.get(k, 0) <= guaranteed[k] for k in guaranteed):
                continue
        else:
            diff = dict(allocated.items())
        excess[child.path] = Resource(diff)
        for k, v in diff.items():
            total[k] = total.get(k, 0) + v
    for name in sorted(queue.children):
        child = queue.children[name]
        share = excess.get(child.path)
        if share is None:
            continue
        child_amount = Resource({
            k: (v * amount[k]) // total[k] for k, v in share.items() if k in amount and total.get(k)
        })
        if child.is_leaf:
            out[child.path] = (child, child_amount)
        else:
            _split(child, child_amount, out)


def _leaf_victims(queue: Queue, amount: Resource) -> list[Allocation]:
    if amount.is_zero():
        return []
    candidates = [
        alloc for app_id in sorted(queue.applications) for _, alloc in sorted(queue.applications[app_id].allocations.items())
        if shares_a_type(amount, alloc.resource) and not alloc.required_node and not alloc.preempted
    ]
    chosen: list[Allocation] = []
    taken = Resource()
    for alloc in sort_for_quota(candidates, queue.max_resource or Resource(), amount):
        if not alloc.resource.fits_in_max_undef(amount):
            continue
        after = taken + alloc.resource
        if all(after.get(k, 0) <= v for k, v in amount.items()):
            chosen.append(alloc)
            taken = after
    return chosen


def fire_due(partition: Partition, now_ns: int) -> list[QuotaVictims]:
    """Every armed queue whose start has passed, root down (see the module doc): its victims,
    not yet marked. Caller holds the partition's lock and applies them."""
    fired: list[QuotaVictims] = []

    def visit(queue: Queue) -> None:
        start = queue.quota_preemption_start_ns
        if start and now_ns >= start and queue.is_managed:
            queue.quota_preemption_start_ns = 0
            queue.quota_preemption_delay_armed_ns = 0
            if queue.over_max():
                amount = preemptable_amount(queue)
                result = QuotaVictims(queue, amount)
                if queue.is_leaf:
                    result.by_leaf[queue.path] = _leaf_victims(queue, amount)
                else:
                    leaves: dict[str, tuple[Queue, Resource]] = {}
                    _split(queue, amount, leaves)
                    for path in sorted(leaves):
                        leaf, leaf_amount = leaves[path]
                        result.by_leaf[path] = _leaf_victims(leaf, leaf_amount)
                fired.append(result)
            return  # the subtree is handled with it
        for name in sorted(queue.children):
            visit(queue.children[name])

    visit(partition.root)
    return fired


def summary(result: QuotaVictims) -> str:
    """YuniKorn's summary message, with every application's figures."""
    victims = result.victims
    claimed = Resource()
    for victim in victims:
        claimed = claimed + victim.resource
    return (f"Quota Preemption results summary: preemptable resources: {go_string(result.planned)}, "
            f"claimed resources: {go_string(claimed)}, selected victims: {len(victims)}, "
            f"preempted victims: {len(victims)}")


def apply(partition: Partition, result: QuotaVictims) -> int:
    """Marks the victims, releases them through the partition's outbox (one release per
    application), sends the events; returns how many victims. Caller holds the lock."""
    events = partition.events
    victims = 0
    for leaf_path, leaf_victims in result.by_leaf.items():
        leaf = partition.get_queue(leaf_path)
        by_app: dict[str, list[Allocation]] = {}
        for victim in leaf_victims:
            victim.preempted = True
            victim.preemption_note = format_note(PreemptionNote("", "", result.queue.path, QUOTA, leaf_path))
            if leaf is not None:
                leaf.inc_preempting(victim.resource)
            events.app.request_diagnostic(victim.allocation_key, victim.application_id,
                                          f"Preempted by Quota change enforcement process in {leaf_path}", victim.resource)
            by_app.setdefault(victim.application_id, []).append(victim)
        for app_id in sorted(by_app):
            partition.outbox.released.extend(
                Released(app_id, v.allocation_key, PREEMPTED_BY_SCHEDULER, QUOTA_RELEASE + leaf_path) for v in by_app[app_id])
            partition.preemptions += 1
        victims += len(leaf_victims)
    if victims:
        events.queue.quota_preemption(result.queue.path, summary(result), result.queue.max_resource)
        partition.preemption_victims += victims
    return victims
