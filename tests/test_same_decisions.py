"""Optimisations change no decision (issue 17).

- Against the start of the issue: ``tests/data/issue17_decisions.json.gz`` holds every allocation
  (key, node, in order) that the core at the start of issue 17 (e5b4b6d~1) made on the workloads
  of ``decision_sequences`` (random simulated ones with releases and priorities, the benchmarks'
  shapes small); today's core must make exactly the same. Every optimisation since is thus
  checked against the code before any of them.
- One optimisation at a time, where it can be turned off: the kept child order against every
  parent's children sorted afresh on every read (the oracle, ``FairQueueSorter``).
- A remembered value is checked against what it remembers.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from decision_sequences import BENCHMARKED, SIMULATED, benchmarked, read, simulated
from hypothesis import given
from hypothesis import strategies as st

from pyscheduler.common.resources import Resource
from pyscheduler.objects.queue import Queue
from pyscheduler.policies.sorting import ChildOrder, FairQueueSorter

RECORDED = Path(__file__).resolve().parent / "data" / "issue17_decisions.json.gz"


@pytest.fixture(scope="module")
def recorded() -> dict[str, list[tuple[str, str]]]:
    return read(RECORDED)


@pytest.mark.parametrize(("workload", "policy"), SIMULATED)
def test_simulated_workloads_decide_as_at_the_start_of_the_issue(
        workload: str, policy: str, recorded: dict[str, list[tuple[str, str]]]) -> None:
    expected = recorded[f"sim {workload} {policy}"]
    assert len(expected) > 300
    assert simulated(policy, workload) == expected


@pytest.mark.parametrize(("shape", "policy", "nodes", "asks"), BENCHMARKED)
def test_benchmark_shapes_decide_as_at_the_start_of_the_issue(
        shape: str, policy: str, nodes: int, asks: int, recorded: dict[str, list[tuple[str, str]]]) -> None:
    expected = recorded[f"bench {shape} {policy} {nodes} nodes {asks} asks"]
    assert len(expected) == asks
    assert benchmarked(shape, policy, nodes, asks) == expected


@pytest.fixture
def without_child_order(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every parent's children sorted afresh on every read, by the plain sorter (the oracle)."""

    def afresh(self: ChildOrder, parent: Queue, shape: int) -> list[Queue]:
        children = list(parent.children.values())
        return FairQueueSorter().sort(children, {c.path: c.current_priority for c in children}, parent.priority_sorting)

    monkeypatch.setattr(ChildOrder, "ordered", afresh)
    yield


@pytest.mark.parametrize(("workload", "policy"), SIMULATED)
def test_the_kept_child_order_changes_no_decision(policy: str, workload: str, request: pytest.FixtureRequest) -> None:
    kept = simulated(policy, workload)
    request.getfixturevalue("without_child_order")
    assert simulated(policy, workload) == kept


@pytest.mark.parametrize(("shape", "policy", "nodes", "asks"), [b for b in BENCHMARKED if b[0] != "yunikorn"])
def test_the_benchmark_shapes_decide_the_same_with_the_kept_child_order(
        shape: str, policy: str, nodes: int, asks: int, request: pytest.FixtureRequest) -> None:
    kept = benchmarked(shape, policy, nodes, asks)
    request.getfixturevalue("without_child_order")
    assert benchmarked(shape, policy, nodes, asks) == kept


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
