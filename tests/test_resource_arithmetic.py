"""Resource addition and subtraction (written for speed, issue 17) against a plain oracle:
over the union of types, a missing type is 0, results past int64 saturate at its bounds, a
Resource and a plain mapping operand give the same result, and the operands never change."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
import pytest

from pyscheduler.common.resources import Resource, readable, transferred

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
quantities = st.dictionaries(st.sampled_from(["memory", "vcore", "pods", "nvidia.com/gpu"]),
                             st.one_of(st.integers(INT64_MIN, INT64_MAX), st.integers(-5, 5)), max_size=4)


def oracle(a: dict[str, int], b: dict[str, int], sign: int) -> dict[str, int]:
    return {k: max(INT64_MIN, min(INT64_MAX, a.get(k, 0) + sign * b.get(k, 0))) for k in a.keys() | b.keys()}


@given(quantities, quantities)
def test_sum_and_difference_are_the_saturated_per_type_results(a: dict[str, int], b: dict[str, int]) -> None:
    left, right = Resource(a), Resource(b)
    for sign, result, by_mapping in ((1, left + right, left + b), (-1, left - right, left - b)):
        assert result.to_dict() == oracle(a, b, sign)
        assert by_mapping.to_dict() == result.to_dict()
        assert result.strictly_greater_than_zero() is (
            any(v > 0 for v in result.values()) and all(v >= 0 for v in result.values()))
        assert hash(result) == hash(Resource(result.to_dict()))
    assert left.to_dict() == a and right.to_dict() == b


@given(quantities, quantities)
def test_room_above_a_maximum_is_per_named_type(maximum: dict[str, int], used: dict[str, int]) -> None:
    """A maximum's room over usage: only the maximum's types (others stay unlimited), saturated."""
    room = Resource(maximum).room_above(Resource(used))
    assert room.to_dict() == {k: max(INT64_MIN, min(INT64_MAX, v - used.get(k, 0))) for k, v in maximum.items()}


@given(quantities, quantities, quantities)
def test_a_transfer_is_the_difference_and_the_sum(source: dict[str, int], target: dict[str, int],
                                                   amount: dict[str, int]) -> None:
    """An allocated ask leaving pending for allocated in one pass: exactly ``source - amount``
    and ``target + amount`` (saturated alike), the operands unchanged."""
    left, right, moved = Resource(source), Resource(target), Resource(amount)
    taken, given_to = transferred(left, right, moved)
    assert taken.to_dict() == oracle(source, amount, -1) == (left - moved).to_dict()
    assert given_to.to_dict() == oracle(target, amount, 1) == (right + moved).to_dict()
    assert taken.strictly_greater_than_zero() is (left - moved).strictly_greater_than_zero()
    assert left.to_dict() == source and right.to_dict() == target and moved.to_dict() == amount


@given(quantities, quantities)
def test_fit_checks_against_a_plain_oracle(ask: dict[str, int], limit: dict[str, int]) -> None:
    """fits_in: every positive type at most the other's (missing: 0); fits_in_max_undef: the
    same where the maximum names the type (missing: unlimited; None: no maximum). Resource and
    plain mapping operands answer alike."""
    resource = Resource(ask)
    fits = all(v <= limit.get(k, 0) for k, v in ask.items() if v > 0)
    fits_max = all(v <= limit[k] for k, v in ask.items() if v > 0 and k in limit)
    assert resource.fits_in(Resource(limit)) is fits and resource.fits_in(limit) is fits
    assert resource.fits_in_max_undef(Resource(limit)) is fits_max and resource.fits_in_max_undef(limit) is fits_max
    assert resource.fits_in_max_undef(None) is True


@pytest.mark.parametrize(("resource", "text"), [
    ({"vcore": 2500, "memory": 4 << 30, "pods": 1}, "memory 4 GiB, pods 1, vcore 2.5 cores"),
    ({"vcore": 1000}, "vcore 1 core"),
    ({"memory": 1536, "ephemeral-storage": 10 << 40}, "ephemeral-storage 10 TiB, memory 1.5 KiB"),
    ({"memory": 512, "nvidia.com/gpu": 8}, "memory 512 B, nvidia.com/gpu 8"),
    ({}, "nothing"),
    (None, "unlimited"),
])
def test_a_resource_in_a_persons_units(resource: dict[str, int] | None, text: str) -> None:
    assert readable(resource) == text
