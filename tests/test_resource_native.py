"""The native Resource against its pure-Python twin (the oracle), operation by operation.

Every operation of :class:`pyscheduler._native.Resource` gives what
:class:`pyscheduler.testing.resources_py.Resource` gives on the same quantities: the same
quantities in the same order (the left operand's types, then the right one's new ones), the
same predicates, the same saturation at int64 with the same warning, the same errors for bad
input. Equality and hashing agree within each class; pickling and copying keep a resource."""

from __future__ import annotations

import copy
import logging
import pickle
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyscheduler.common.resources import (
    MAX_RESOURCE_TYPES,
    Resource,
    ResourceError,
    component_min_undef,
    transferred,
)
from pyscheduler.testing import resources_py as twin
from pyscheduler.testing.resources_py import fair_share

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
NAMES = ["memory", "vcore", "pods", "nvidia.com/gpu", "ephemeral-storage"]
quantities = st.dictionaries(st.sampled_from(NAMES),
                             st.one_of(st.integers(INT64_MIN, INT64_MAX), st.integers(-5, 5)), max_size=5)


def pairs(resource: Mapping[str, int]) -> list[tuple[str, int]]:
    """The quantities in their order (order is part of the contract: events list them so)."""
    return list(resource.items())


@given(quantities, quantities)
def test_arithmetic_matches_the_twin_in_values_and_order(a: dict[str, int], b: dict[str, int]) -> None:
    na, nb, pa, pb = Resource(a), Resource(b), twin.Resource(a), twin.Resource(b)
    assert pairs(na + nb) == pairs(pa + pb)
    assert pairs(na - nb) == pairs(pa - pb)
    assert pairs(na + b) == pairs(pa + b)  # a plain mapping operand
    assert pairs(na.room_above(nb)) == pairs(pa.room_above(pb))
    assert pairs(-na) == pairs(-pa)
    assert pairs(na.sub_eliminate_negative(nb)) == pairs(pa.sub_eliminate_negative(pb))
    assert pairs(na.pruned()) == pairs(pa.pruned())
    for factor in (0, 1, -1, 3, 1 << 70):
        assert pairs(na.multiply(factor)) == pairs(pa.multiply(factor))
    # The twin's min and max walk a set union: same quantities, its order is arbitrary.
    assert na.component_min(nb).to_dict() == pa.component_min(pb).to_dict()
    assert na.component_max(nb).to_dict() == pa.component_max(pb).to_dict()
    taken, given_to = transferred(na, nb, na)
    twin_taken, twin_given = twin.transferred(pa, pb, pa)
    assert (pairs(taken), pairs(given_to)) == (pairs(twin_taken), pairs(twin_given))
    both = component_min_undef(na, nb)
    assert both is not None and pairs(both) == pairs(twin.component_min_undef(pa, pb) or {})
    assert component_min_undef(None, nb) is nb and component_min_undef(na, None) is na
    assert na.to_dict() == a and nb.to_dict() == b  # operands never change


@given(quantities, quantities)
def test_predicates_and_equality_match_the_twin(a: dict[str, int], b: dict[str, int]) -> None:
    na, nb, pa, pb = Resource(a), Resource(b), twin.Resource(a), twin.Resource(b)
    for name in ("is_zero", "is_empty", "has_negative", "strictly_greater_than_zero"):
        assert getattr(na, name)() is getattr(pa, name)(), name
    assert na.fits_in(nb) is pa.fits_in(pb)
    assert na.fits_in_max_undef(nb) is pa.fits_in_max_undef(pb)
    assert na.fits_in_max_undef(None) is True
    assert (na == nb) is (pa == pb)
    assert (na != nb) is (pa != pb)
    assert (na == b) is (pa == b)
    if na == nb:
        assert hash(na) == hash(nb)
    assert len(na) == len(pa) and list(na) == list(pa) and dict(na) == dict(pa)
    for name in NAMES:
        assert (name in na) is (name in pa)
        assert na.get(name) == pa.get(name) and na.get(name, None) == pa.get(name, None)  # type: ignore[arg-type]
    assert repr(na) == repr(pa)


def test_a_resource_is_an_immutable_mapping_that_pickles() -> None:
    r = Resource({"memory": 10, "vcore": 0})
    assert isinstance(r, Mapping)
    assert r["memory"] == 10 and r.get("gpu") == 0 and r.get("gpu", None) is None
    with pytest.raises(KeyError):
        r["gpu"]
    with pytest.raises(KeyError):
        r[1]  # type: ignore[index]
    with pytest.raises(AttributeError):
        r.q = 1  # type: ignore[attr-defined]
    assert r == {"memory": 10} and r != {"memory": 11} and r != 5
    assert pickle.loads(pickle.dumps(r)) == r and copy.deepcopy(r) == r
    assert {r: 1}[Resource({"memory": 10})] == 1  # equal resources hash alike, zeros aside
    assert Resource.__add__(r, r) == {"memory": 20}  # the queue path applies it unbound
    with pytest.raises(TypeError):
        r + 1  # type: ignore[operator]
    with pytest.raises(TypeError):  # a plain mapping on the left is not summed as a Resource
        {"memory": 1} + r  # type: ignore[operator]
    with pytest.raises(TypeError, match="multiplied by an integer"):
        r.multiply(1.5)  # type: ignore[arg-type]
    assert r.view() is r.view() and r.view() == {"memory": 10, "vcore": 0}  # built once, shared
    copied = r.to_dict()
    copied["memory"] = 99
    assert r["memory"] == 10 and r.view()["memory"] == 10  # a copy to change is to_dict()'s


@pytest.mark.parametrize("bad, message", [
    ({"memory": 1 << 63}, "outside the int64 range"),
    ({"memory": -(1 << 63) - 1}, "outside the int64 range"),
    ({"memory": True}, "must be an integer"),
    ({"memory": 1.5}, "must be an integer"),
    ({"memory": "10"}, "must be an integer"),
    ({"": 1}, "non-empty UTF-8 strings"),
    ({3: 1}, "non-empty UTF-8 strings"),
    ({"\ud800": 1}, "non-empty UTF-8 strings"),
])
def test_bad_quantities_raise_the_twins_error(bad: dict[Any, Any], message: str) -> None:
    with pytest.raises(ResourceError, match=message):
        Resource(bad)
    if "\ud800" not in bad:  # the twin keeps any str as a name
        with pytest.raises(ResourceError, match=message.replace(" UTF-8", "")):
            twin.Resource(bad)
    with pytest.raises(ResourceError, match=message):
        Resource({"memory": 1}) + bad


def test_saturation_warns_like_the_twin(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="pyscheduler.common.resources"):
        assert (Resource({"memory": INT64_MAX}) + {"memory": 1})["memory"] == INT64_MAX
        assert (Resource({"memory": INT64_MIN}) - {"memory": 1})["memory"] == INT64_MIN
        assert (twin.Resource({"memory": INT64_MAX}) + {"memory": 1})["memory"] == INT64_MAX
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        "resource calculation wrapped for 'memory': returned the maximum value possible",
        "resource calculation wrapped for 'memory': returned the minimum value possible",
        "resource calculation wrapped for 'memory': returned the maximum value possible",
    ]


def test_resource_types_are_bounded_per_process() -> None:
    """A hostile RM inventing resource names: past the table's bound a new name is refused
    with a clear error, and names already known keep working. (In a child process: the table
    is the process's, and this test fills it.)"""
    script = textwrap.dedent("""
        from pyscheduler.common.resources import MAX_RESOURCE_TYPES, Resource, ResourceError
        Resource({"memory": 1})
        made = 0
        try:
            for i in range(MAX_RESOURCE_TYPES + 1):
                Resource({f"hostile.example.com/type-{i}": 1})
                made += 1
        except ResourceError as error:
            print("refused", made <= MAX_RESOURCE_TYPES, error)
        print("known", Resource({"memory": 1}) + {"hostile.example.com/type-0": 2})
        try:
            Resource({"vcore": 1})
        except ResourceError:
            print("new types refused")
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True).stdout
    assert "refused True too many distinct resource types: at most 65536" in out
    assert "known Resource({hostile.example.com/type-0: 2, memory: 1})" in out
    assert "new types refused" in out


@given(quantities, st.one_of(st.none(), quantities), quantities)
def test_the_fair_share_matches_its_python_twin(allocated: dict[str, int], guaranteed: dict[str, int] | None,
                                                fairmax: dict[str, int]) -> None:
    """The fair sort's key (``Resource.fair_share``, ``positive_total``) against
    :func:`pyscheduler.testing.resources_py.fair_share`, quantities past 2^53 included (Python's
    exactly rounded int division, not a double of each)."""
    used = Resource(allocated)
    native = used.fair_share(None if guaranteed is None else Resource(guaranteed), Resource(fairmax))
    assert native == fair_share(allocated, guaranteed, fairmax)
    assert used.positive_total() == sum(v for v in allocated.values() if v > 0)


def test_a_fair_share_past_two_to_the_53_is_rounded_as_python_rounds() -> None:
    used, denominator = 1734979221052636100, 579832826712306748  # found by search: the two roundings differ
    assert Resource({"memory": used}).fair_share(None, Resource({"memory": denominator})) == used / denominator
    assert used / denominator != float(used) / float(denominator)
