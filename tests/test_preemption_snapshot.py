"""Properties of the preemption arithmetic the fast decision relies on
(pyscheduler.scheduler.preemption.snapshot and .guaranteed): the preemptable resource of any
queue snapshot holds only positive quantities, so YuniKorn's "preemptable >= 0 after removing
a victim" never rejects one; and the per-type shortfall test equals comparing the clamped
shortfalls as Resource objects, missing types and negative free room included."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pyscheduler.common.resources import Resource
from pyscheduler.scheduler.preemption.node_plan import reduces_shortfall
from pyscheduler.scheduler.preemption.snapshot import QueueSnapshot

TYPES = ("vcore", "memory", "gpu")
quantities = st.dictionaries(st.sampled_from(TYPES), st.integers(-5_000, 20_000), max_size=3)
levels = st.lists(st.tuples(quantities, quantities, st.one_of(st.none(), quantities)), min_size=1, max_size=4)


@settings(max_examples=300, deadline=None)
@given(levels, st.lists(quantities, max_size=4))
def test_preemptable_never_holds_a_negative_quantity(chain: list[tuple[dict[str, int], dict[str, int], dict[str, int] | None]],
                                                     removals: list[dict[str, int]]) -> None:
    parent: QueueSnapshot | None = None
    for depth, (allocated, preempting, guaranteed) in enumerate(chain):
        parent = QueueSnapshot(f"root{'.q' * depth}", parent, depth == len(chain) - 1, dict(allocated), preempting,
                               None, guaranteed)
    assert parent is not None
    for removal in [{}, *removals]:
        parent.remove_allocation(removal)
        preemptable = parent.preemptable()
        assert preemptable is None or all(v > 0 for v in preemptable.values()), preemptable


@settings(max_examples=500, deadline=None)
@given(quantities, quantities, quantities)
def test_the_shortfall_test_matches_the_resource_arithmetic(ask: dict[str, int], free: dict[str, int],
                                                            freed: dict[str, int]) -> None:
    wanted, current, victim = Resource(ask), Resource(free), Resource(freed)
    expected = wanted.sub_eliminate_negative(current) != wanted.sub_eliminate_negative(current + victim)
    assert reduces_shortfall(wanted.view(), current.view(), victim.view()) == expected
