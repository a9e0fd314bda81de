"""Reservation candidates (``closest_fits``): the native index and the pure-Python ordering
against the brute-force scan the scheduling cycle used to make over every node, and the cycle's
``_reserve_closest`` against that scan (same node chosen, RM refusals included).

The scan below is the cycle's former code, kept as the oracle: YuniKorn's FitInScore over every
schedulable node whose capacity holds the ask and that holds no reservation, sorted by
(score, node id). The score itself is the cycle's former ``_fit_in_score``, moved unchanged to
``node_ordering.fit_in_score``; the native index computes it on its own.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scheduling_helpers import Cluster, clusters  # noqa: F401

from pyscheduler.common.resources import Resource
from pyscheduler.policies.node_ordering import NativeNodeOrdering, NodeOrdering, PythonNodeOrdering, fit_in_score
from pyscheduler.si import messages as si
from pyscheduler.scheduler.cycle import RESERVATION_CANDIDATE_BATCH

TYPES = ("memory", "vcore", "nvidia.com/gpu")
#: Small quantities make ties; the huge ones (above 2^53, odd so they are not powers of two,
#: which divide exactly) check the division rounds like Python's.
quantities = st.one_of(st.integers(0, 12), st.integers(2**53, 2**62).map(lambda value: value | 1))


def brute_force_candidates(ask: Mapping[str, int], nodes: Mapping[str, dict]) -> list[tuple[float, str]]:
    """(fit-in score, node id) of every node a normal reservation could go to, best first."""
    return sorted(
        (fit_in_score(ask.items(), node["available"]), node_id)
        for node_id, node in nodes.items()
        if node["schedulable"] and not node["reserved"] and Resource(ask).fits_in(node["total"])
    )


# -- the orderings alone --------------------------------------------------------------------------------


@st.composite
def clusters_and_asks(draw: st.DrawFn) -> tuple[dict[str, dict], dict[str, int]]:
    nodes = {}
    for i in range(draw(st.integers(0, 30))):
        total = draw(st.dictionaries(st.sampled_from(TYPES), quantities, min_size=1))
        # Over-committed nodes (negative available) count as nothing available.
        available = {name: value - draw(st.integers(0, value + 3)) for name, value in total.items()}
        nodes[f"n{i:02d}"] = {
            "total": total, "available": available,
            "schedulable": draw(st.booleans()), "reserved": draw(st.booleans()),
        }
    ask = draw(st.dictionaries(st.sampled_from((*TYPES, "ephemeral")), st.one_of(quantities, st.integers(-3, 0))))
    return nodes, ask


def _ordering(native: bool, policy: str, nodes: Mapping[str, dict]) -> NodeOrdering:
    ordering = NativeNodeOrdering(policy) if native else PythonNodeOrdering(policy)
    for node_id, node in nodes.items():
        ordering.upsert(node_id, node["total"], node["available"], node["schedulable"])
        ordering.set_reserved(node_id, node["reserved"])
    return ordering


@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=clusters_and_asks(), limit=st.integers(1, 8), policy=st.sampled_from(["fair", "binpacking"]))
def test_closest_fits_is_the_brute_force_scan_in_batches(native: bool, case, limit: int, policy: str) -> None:
    nodes, ask = case
    ordering = _ordering(native, policy, nodes)
    expected = brute_force_candidates(ask, nodes)
    assert ordering.closest_fits(ask, limit) == expected[:limit]
    resumed: list[tuple[float, str]] = []
    while batch := ordering.closest_fits(ask, limit, resumed[-1] if resumed else None):
        resumed.extend(batch)
    assert resumed == expected


@given(case=clusters_and_asks())
@settings(max_examples=200, deadline=None)
def test_native_and_python_orderings_give_the_same_candidates(case) -> None:
    nodes, ask = case
    native, python = _ordering(True, "fair", nodes), _ordering(False, "fair", nodes)
    for skip_reserved in (True, False):
        assert native.closest_fits(ask, 100, None, skip_reserved) == python.closest_fits(ask, 100, None, skip_reserved)


@pytest.mark.parametrize(("wanted", "free"), [
    (18_014_398_509_481_987, 9_007_199_254_740_994),  # missing 2^53 + 1 of 2^54 + 3: exactly 0.5
    (98_765_432_109_876_543, 86_419_753_208_641_976),  # 0.12499999886093749, not ...750
])
def test_fit_in_score_of_quantities_above_2_to_the_53_rounds_once_like_python(wanted: int, free: int) -> None:
    ordering = NativeNodeOrdering()
    ordering.upsert("big", {"memory": wanted}, {"memory": free}, True)
    assert ordering.closest_fits({"memory": wanted}, 1) == [((wanted - free) / wanted, "big")]


@settings(max_examples=500, deadline=None)
@given(wanted=st.lists(st.integers(1, 2**63 - 1), min_size=1, max_size=3), data=st.data())
def test_native_fit_in_score_equals_python_over_the_int64_range(wanted: list[int], data: st.DataObject) -> None:
    ask = dict(zip(TYPES, wanted))
    # Anything from over-committed to all free; the capacity equals the ask so the node is a candidate.
    available = {name: data.draw(st.integers(-(2**62), value)) for name, value in ask.items()}
    ordering = NativeNodeOrdering()
    ordering.upsert("node", ask, available, True)
    assert ordering.closest_fits(ask, 1) == [(fit_in_score(ask.items(), available), "node")]


@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_closest_fits_follows_updates_and_reservations(native: bool) -> None:
    ordering = NativeNodeOrdering() if native else PythonNodeOrdering()
    ordering.upsert("a", {"memory": 100}, {"memory": 0}, True)
    ordering.upsert("b", {"memory": 100}, {"memory": 50}, True)
    ask = {"memory": 100}
    assert ordering.closest_fits(ask, 5) == [(0.5, "b"), (1.0, "a")]
    ordering.set_reserved("b", True)
    assert ordering.closest_fits(ask, 5) == [(1.0, "a")]
    assert ordering.closest_fits(ask, 5, None, False) == [(0.5, "b"), (1.0, "a")]
    ordering.upsert("a", {"memory": 100}, {"memory": 90}, False)
    assert ordering.closest_fits(ask, 5) == []
    ordering.upsert("a", {"memory": 100}, {"memory": 90}, True)
    assert ordering.closest_fits(ask, 5) == [(0.1, "a")]
    assert ordering.remove("a") and ordering.closest_fits(ask, 5) == []
    assert ordering.closest_fits(ask, 0, None, False) == []


# -- the scheduling cycle ---------------------------------------------------------------------------------


def _oracle_node(cluster: Cluster, ask, refused: set[str]) -> str | None:
    """The node the cycle's former scan reserved for ``ask``."""
    partition = cluster.partition
    nodes = {
        node.node_id: {
            "total": node.total, "available": node.available, "schedulable": node.schedulable,
            "reserved": not partition.reservations.can_reserve(node, required=False),
        }
        for node in partition.nodes.values()
    }
    return next((node_id for _, node_id in brute_force_candidates(ask.resource, nodes) if node_id not in refused), None)


@st.composite
def reservation_scenarios(draw: st.DrawFn):
    node_count = draw(st.integers(1, 3 * RESERVATION_CANDIDATE_BATCH))
    nodes = [
        (draw(st.integers(1, 20)), draw(st.integers(1, 4)), draw(st.integers(0, 20)), draw(st.booleans()))
        for _ in range(node_count)
    ]
    asks = draw(st.lists(st.tuples(st.integers(1, 30), st.integers(0, 5)), min_size=1, max_size=6))
    # Refusing many nodes makes the cycle ask for further batches.
    refused = draw(st.sets(st.integers(0, node_count - 1), max_size=node_count))
    return nodes, asks, {f"node-{i:02d}" for i in refused}


@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=reservation_scenarios())
def test_reserve_closest_reserves_the_node_the_brute_force_scan_chose(native: bool, scenario) -> None:
    nodes, asks, refused = scenario
    cluster = Cluster()
    try:
        if not native:
            _use_python_ordering(cluster)
        _reserve_one_by_one(cluster, nodes, asks, refused)
    finally:
        cluster.close()


def _use_python_ordering(cluster: Cluster) -> None:
    """Swaps the (still empty) partition's node order for the pure-Python one: the Cluster helper
    registers its RM, and so makes the partition, with the default native order."""
    partition = cluster.partition
    assert not partition.nodes
    partition.node_ordering = partition.reservations.ordering = PythonNodeOrdering()


def _reserve_one_by_one(cluster: Cluster, nodes, asks, refused: set[str]) -> None:
    """Each ask reserves in turn, so later asks find reserved nodes; every choice must be the oracle's."""
    cluster.rm.set_predicates(lambda _key, node_id, _allocate: "refused" if node_id in refused else None)
    cluster.update_nodes(*(
        si.NodeInfo(node_id=f"node-{i:02d}", action=si.NodeAction.CREATE if schedulable else si.NodeAction.CREATE_DRAIN,
                    schedulable_resource=Resource({"memory": memory, "vcore": vcore}))
        for i, (memory, vcore, _, schedulable) in enumerate(nodes)
    ))
    cluster.send(*(
        si.Allocation(allocation_key=f"foreign-{i}", allocation_tags={si.FOREIGN: "default"}, node_id=f"node-{i:02d}",
                      resource_per_alloc=Resource({"memory": used}), partition_name="default")
        for i, (_, _, used, _) in enumerate(nodes) if used
    ))
    partition = cluster.partition
    cluster.add_app("app")
    cycle = cluster.scheduler.cycle
    for i, (memory, vcore) in enumerate(asks):
        cluster.ask(f"ask-{i}", "app", memory=memory, vcore=vcore)
        ask = cluster.app("app").asks[f"ask-{i}"]
        expected = _oracle_node(cluster, ask, refused)
        cycle._reserve_closest(partition, ask)
        assert cluster.reserved().get(ask.allocation_key) == expected


def test_predicates_are_asked_with_allocate_false_in_closest_first_order(clusters) -> None:
    cluster = clusters()
    asked: list[tuple[str, bool]] = []

    def accept_only_node_00(_key: str, node_id: str, allocate: bool) -> str | None:
        asked.append((node_id, allocate))
        return None if node_id == "node-00" else "refused"

    cluster.rm.set_predicates(accept_only_node_00)
    # More nodes than one batch: the cycle has to come back to the node order for the rest.
    count = 2 * RESERVATION_CANDIDATE_BATCH + 3
    cluster.add_nodes(count, memory=100, vcore=10)
    cluster.send(*(
        si.Allocation(allocation_key=f"foreign-{i}", allocation_tags={si.FOREIGN: "default"}, node_id=f"node-{i:02d}",
                      resource_per_alloc=Resource({"memory": 90 - i}), partition_name="default")
        for i in range(count)
    ))
    cluster.add_app("app")
    cluster.ask("big", "app", memory=100, vcore=1)
    ask = cluster.app("app").asks["big"]
    cluster.scheduler.cycle._reserve_closest(cluster.partition, ask)
    # node-i has 10 + i memory free: the highest index is the closest, node-00 (the only one
    # the RM accepts) the farthest; every node is asked once, for a reservation.
    assert asked == [(f"node-{i:02d}", False) for i in reversed(range(count))]
    assert cluster.reserved() == {"big": "node-00"}
