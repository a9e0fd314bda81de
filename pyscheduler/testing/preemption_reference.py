"""The guaranteed-share preemptor as YuniKorn computes it, slowly: every node planned (on the
queue snapshots' dicts of every type) and the checks sorted, the additional victims always
computed and their end state checked; and the
eligible victims found by walking every queue and reading every allocation
(:func:`scan_victims`). The production preemptor (pyscheduler.scheduler.preemption) looks at as
few queues, nodes and victims as it can; these twins are its oracle
(tests/test_preemption_oracle.py).

Test kit: the product never imports it (an import-linter contract says so)."""

from __future__ import annotations

from collections.abc import Iterator

from pyscheduler.config.queue_preemption import PreemptionPolicy
from pyscheduler.objects.allocation import Allocation
from pyscheduler.common.resources import Resource
from pyscheduler.objects.queue import Queue
from pyscheduler.scheduler.preemption.guaranteed import (
    GUARANTEES_CHECK_FAILED,
    SHORTFALL,
    GuaranteedPreemptor,
    _Check,
    _give_back,
    _LazyCopies,
    _over_guarantee,
    _remove_if_over,
    _score,
    _trim,
)
from pyscheduler.scheduler.preemption.preemptor import DOES_NOT_HELP, PreemptionOutcome, PreemptionPlan
from pyscheduler.scheduler.preemption.ordering import shares_a_type
from pyscheduler.scheduler.preemption.snapshot import add_into, covers, not_negative
from pyscheduler.scheduler.preemption.victims import Victims, _snapshot_of, fence_root
from pyscheduler.scheduler.preemption.node_plan import reduces_shortfall

__all__ = ["ReferencePreemptor", "scan_victims"]


def scan_victims(leaf: Queue, ask: Allocation, victims: Victims) -> list[tuple[str, str]]:
    """(leaf path, allocation key) of every eligible victim in YuniKorn's collection order,
    found by a depth-first walk below the fence root reading every allocation (the rules of
    pyscheduler.scheduler.preemption.victims, written out the straightforward way), with the
    leaves' snapshots made in ``victims``' set."""
    priorities: dict[str, int] = {}
    fence = fence_root(leaf, ask, priorities)
    found: list[tuple[str, str]] = []

    def walk(queue: Queue, ask_priority: int, fenced: bool) -> None:
        if queue.path == leaf.path:
            return
        if queue.is_leaf:
            if queue.preemption_policy is PreemptionPolicy.DISABLED or not queue.applications:
                return
            remaining = _snapshot_of(queue, victims.snapshots, leaf.path).remaining_guaranteed()
            if remaining is not None and not_negative(remaining):
                return  # within its guarantee
            for app_id in sorted(queue.applications):
                allocations = queue.applications[app_id].allocations
                for key in sorted(allocations):
                    alloc = allocations[key]
                    if (shares_a_type(ask.resource, alloc.resource) and not alloc.required_node and not alloc.preempted
                            and (fenced or alloc.priority <= ask_priority)):
                        found.append((queue.path, key))
            return
        for name in sorted(queue.children):
            child = queue.children[name]
            child_fenced = False
            child_priority = priorities.get(child.path)
            if child_priority is None:
                if child.priority_fence:
                    if child.priority_offset > ask_priority:
                        continue
                    child_fenced = True
                    child_priority = ask_priority
                else:
                    child_priority = ask_priority - child.priority_offset
            walk(child, child_priority, fenced or child_fenced)

    walk(fence, priorities[fence.path], False)
    return found


class ReferencePreemptor(GuaranteedPreemptor):
    """The guaranteed-share attempt as YuniKorn reads, on the dict snapshots (module doc)."""

    def _plan_node(self, available: Resource, candidates: list[Allocation]) -> tuple[int, list[Allocation]] | None:
        """YuniKorn's calculateVictimsByNode on copies of the dict snapshots (every type)."""
        ask = self.ask.resource
        wanted = ask.view()
        copies = _LazyCopies(self.snapshots, self.victims.snapshot)
        ask_queue = copies.require(self.leaf.path)
        current = available.to_dict()
        head: list[Allocation] = []
        tail: list[Allocation] = []
        for victim in candidates:
            queue = copies.get(self.queue_of.get(victim.allocation_key, ""))
            if queue is not None and _remove_if_over(queue, victim, wanted):
                freed = victim.resource.view()
                ask_queue.add_allocation(freed)
                if _over_guarantee(ask_queue, wanted):
                    _give_back(victim, ask_queue, queue)
                    break
                if reduces_shortfall(wanted, current, freed):
                    add_into(current, freed)
                    head.append(victim)
                else:
                    _give_back(victim, ask_queue, queue)
                    tail.append(victim)
        ordered = head + tail
        if not ordered:
            return None
        copies = _LazyCopies(self.snapshots, self.victims.snapshot)
        current = available.to_dict()
        results: list[Allocation] = []
        index = -1
        for victim in ordered:
            queue = copies.get(self.queue_of.get(victim.allocation_key, ""))
            if queue is not None and _remove_if_over(queue, victim, wanted):
                add_into(current, victim.resource.view())
                if index < 0 and ask.fits_in(current):
                    index = len(results)
                results.append(victim)
        if index < 0:
            return None
        return index, results

    def _sorted_checks(self, victims_by_node: dict[str, list[Allocation]]) -> Iterator[_Check]:
        checks = []
        for node_id in sorted(self.nodes):
            node = self.nodes[node_id]
            if not self._usable(node):
                continue
            self.available[node_id] = node.available
            found = self._victims_on_node(node.available, self._candidates(node))
            if found is not None and (found[1] or not self.nodes_tried):
                checks.append((found[0], node_id, found[1]))
        checks.sort(key=lambda check: (check[0], check[1]))
        for index, node_id, victims in checks:
            victims_by_node[node_id] = victims
            yield _Check(node_id, tuple(v.allocation_key for v in victims), index)

    def _additional_victims(self, chosen: list[Allocation]) -> tuple[list[Allocation], bool]:
        """YuniKorn's calculateAdditionalVictims as it reads: every victim below the fence,
        sorted (score, newest first; stable over the collection order), then the same loop."""
        every = list(self.victims.every())
        every.sort(key=lambda pair: (_score(pair[1]), -pair[1].create_time_ns))
        return self._take_additional(chosen, every)

    def try_preemption(self) -> PreemptionOutcome:
        if not self._queue_check():
            return GUARANTEES_CHECK_FAILED
        chosen = self._try_nodes()
        if chosen is None:
            return DOES_NOT_HELP
        node_id, victims = chosen
        extra, within = self._additional_victims(victims)
        if not within:
            return DOES_NOT_HELP
        victims = victims + extra
        if not victims:
            return DOES_NOT_HELP
        ask = self.ask.resource
        final, total = _trim(ask, victims, node_id, ask.fits_in(self.available[node_id]))
        if not covers(total, ask.view()):
            return SHORTFALL
        return PreemptionOutcome.planned(PreemptionPlan(node_id, tuple(final)))
