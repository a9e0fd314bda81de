"""The guaranteed-share preemptor as YuniKorn computes it, slowly: every node planned and the
checks sorted, the additional victims always computed and their end state checked. The
production preemptor (pyscheduler.scheduler.preemption.guaranteed) looks at as few nodes and
victims as it can; this twin is its oracle (tests/test_preemption_oracle.py)."""

from __future__ import annotations

from collections.abc import Iterator

from pyscheduler.common.resources import Resource
from pyscheduler.objects.allocation import Allocation
from pyscheduler.scheduler.preemption.guaranteed import (
    PREEMPTION_GUARANTEES_CHECK_FAILED,
    PREEMPTION_SHORTFALL,
    GuaranteedPreemptor,
    PreemptionPlan,
    _Check,
)


class ReferencePreemptor(GuaranteedPreemptor):
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

    def try_preemption(self) -> PreemptionPlan | str:
        if not self._queue_check():
            return PREEMPTION_GUARANTEES_CHECK_FAILED
        chosen = self._try_nodes()
        if chosen is None:
            return ""
        node_id, victims = chosen
        extra, within = self._additional_victims(victims)
        if not within:
            return ""
        victims = victims + extra
        if not victims:
            return ""
        ask = self.ask.resource
        fits_already = ask.fits_in(self.available[node_id])
        final: list[Allocation] = []
        total = Resource()
        for victim in victims:
            if not fits_already and victim.node_id != node_id:
                continue
            if not ask.fits_in(total):
                final.append(victim)
            total = total + victim.resource
        if not ask.fits_in(total):
            return PREEMPTION_SHORTFALL
        return PreemptionPlan(node_id, tuple(final))
