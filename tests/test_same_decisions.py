"""Optimisations change no decision (issue 17): a lockstep simulation of a random workload with
many queues under parents, run with an optimisation and with it turned off, makes exactly the
same allocations (each ask on the same node, in the same order). One test per optimisation that
can be turned off; a remembered value is checked against what it remembers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks import scheduling
from pyscheduler.common.resources import Resource
from pyscheduler.objects.queue import Queue
from pyscheduler.policies.sorting import ChildOrder, FairQueueSorter
from pyscheduler.si import messages as si
from pyscheduler.sim import SimulatedRM, WorkloadSpec

#: 12 leaves under 3 parents, loaded so that asks wait for releases and queues take turns.
MANY_QUEUES = {
    "seed": 11,
    "nodes": {"count": 12, "memory": "16Gi", "vcore": 8},
    "queues": {f"p{p}.l{leaf}": 1 + (p + leaf) % 3 for p in range(3) for leaf in range(4)},
    "applications": {
        "count": 60,
        "asks": [2, 12],
        "memory": ["256Mi", "3Gi"],
        "vcore": ["250m", "2"],
        "priority": [0, 3],
        "run_time": [1, 8],
    },
    "arrival": {"pattern": "poisson", "rate": 6},
}


#: The scale shape's tree in small (issue 17): 200 leaves under 20 parents, most of them idle at
#: any time, on a loaded cluster.
SCALE_LIKE = {
    **MANY_QUEUES,
    "seed": 17,
    "nodes": {"count": 16, "memory": "16Gi", "vcore": 8},
    "queues": {f"p{p}.l{leaf}": 1 + (3 * p + leaf) % 4 for p in range(20) for leaf in range(10)},
    "applications": {**MANY_QUEUES["applications"], "count": 90},  # type: ignore[dict-item]
    "arrival": {"pattern": "poisson", "rate": 8},
}
WORKLOADS = {"many-queues": MANY_QUEUES, "scale-like": SCALE_LIKE}


def _decisions(policy: str, workload: str = "many-queues") -> list[tuple[str, str]]:
    """(allocation key, node) of every allocation, in the order the core made them."""
    rm = SimulatedRM(WorkloadSpec.from_mapping(WORKLOADS[workload]).generate(), policy=policy, mode="lockstep")
    seen: list[tuple[str, str]] = []
    callback = rm.update_allocation

    def spy(response: si.AllocationResponse) -> None:
        seen.extend((a.allocation_key, a.node_id) for a in response.new)
        callback(response)

    rm.update_allocation = spy  # type: ignore[method-assign]
    record = rm.run(timeout=60)
    assert record.completed, record.problems
    return seen


@pytest.fixture
def without_child_order(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every parent's children sorted afresh on every read, by the plain sorter (the oracle)."""

    def afresh(self: ChildOrder, parent: Queue, shape: int) -> list[Queue]:
        children = list(parent.children.values())
        return FairQueueSorter().sort(children, {c.path: c.current_priority for c in children}, parent.priority_sorting)

    monkeypatch.setattr(ChildOrder, "ordered", afresh)
    yield


@pytest.mark.parametrize(("policy", "workload"), [("fair", "many-queues"), ("binpacking", "many-queues"),
                                                  ("fair", "scale-like")])
def test_the_kept_child_order_changes_no_decision(policy: str, workload: str, request: pytest.FixtureRequest) -> None:
    kept = _decisions(policy, workload)
    request.getfixturevalue("without_child_order")
    afresh = _decisions(policy, workload)
    nodes = WORKLOADS[workload]["nodes"]["count"]  # type: ignore[index]
    assert len(kept) > 300 and len({node for _, node in kept}) == nodes
    assert kept == afresh


def _benchmark_decisions(shape: str, nodes: int, asks: int) -> list[tuple[str, str]]:
    """The benchmark's own shape, small, scheduled in lockstep: every (key, node) in order."""
    setup = scheduling.build("fair", nodes, asks, True, shape)
    seen: list[tuple[str, str]] = []
    count = setup.rm.update_allocation

    def spy(response: si.AllocationResponse) -> None:
        seen.extend((a.allocation_key, a.node_id) for a in response.new)
        count(response)

    setup.rm.update_allocation = spy  # type: ignore[method-assign]
    try:
        for _ in range(2 * asks):  # bounded: one allocation per cycle
            if setup.rm.allocated >= asks or not setup.scheduler.schedule_once():
                break
    finally:
        setup.proxy.stop()
    assert len(seen) == asks
    return seen


@pytest.mark.parametrize(("shape", "nodes", "asks"), [
    (scheduling.MANY_QUEUES_SHAPE, 100, 1_000),
    (scheduling.SCALE_SHAPE, 300, 2_000),  # 1,000 leaves under 20 parents, 200 applications
])
def test_the_benchmark_shapes_decide_the_same_with_the_kept_child_order(
        shape: str, nodes: int, asks: int, request: pytest.FixtureRequest) -> None:
    kept = _benchmark_decisions(shape, nodes, asks)
    request.getfixturevalue("without_child_order")
    assert _benchmark_decisions(shape, nodes, asks) == kept


@given(st.dictionaries(st.sampled_from(["memory", "vcore", "pods", "gpu"]),
                       st.integers(min_value=-(1 << 61), max_value=1 << 61), max_size=4))
def test_a_resource_s_remembered_validity_is_what_its_quantities_say(quantities: dict[str, int]) -> None:
    """``strictly_greater_than_zero`` is remembered per (immutable) resource: asked twice, and
    on results of arithmetic, it is what the quantities say."""
    expected = any(v > 0 for v in quantities.values()) and all(v >= 0 for v in quantities.values())
    resource = Resource(quantities)
    assert resource.strictly_greater_than_zero() is expected
    assert resource.strictly_greater_than_zero() is expected
    doubled = resource + Resource({k: v // 2 for k, v in quantities.items()})
    assert doubled.strictly_greater_than_zero() == (any(v > 0 for v in doubled.values())
                                                    and all(v >= 0 for v in doubled.values()))
