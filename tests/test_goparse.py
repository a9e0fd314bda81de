"""Tests for the Go strconv ports in pyscheduler.common.goparse."""

from __future__ import annotations

import pickle
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyscheduler.common.goparse import (
    ERR_RANGE,
    ERR_SYNTAX,
    NumError,
    go_quote,
    parse_bool,
    parse_uint,
)

# --- ParseBool --------------------------------------------------------------

TRUE_SPELLINGS = ["1", "t", "T", "TRUE", "true", "True"]
FALSE_SPELLINGS = ["0", "f", "F", "FALSE", "false", "False"]
REJECTED_BOOLS = [
    "", " true", "true ", "tRUE", "TrUe", "yes", "no", "on", "off", "y", "n",
    "2", "01", "00", "10", "-1", "+1", "truee", "fals", "\ttrue", "１", "ｔ",
]


@pytest.mark.parametrize("s", TRUE_SPELLINGS)
def test_parse_bool_true_spellings(s: str) -> None:
    assert parse_bool(s) is True


@pytest.mark.parametrize("s", FALSE_SPELLINGS)
def test_parse_bool_false_spellings(s: str) -> None:
    assert parse_bool(s) is False


@pytest.mark.parametrize("s", REJECTED_BOOLS)
def test_parse_bool_rejects(s: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_bool(s)
    assert str(info.value) == f"strconv.ParseBool: parsing {go_quote(s)}: invalid syntax"


def test_parse_bool_error_text_exact() -> None:
    with pytest.raises(NumError) as info:
        parse_bool("yes")
    assert str(info.value) == 'strconv.ParseBool: parsing "yes": invalid syntax'
    assert (info.value.func, info.value.num, info.value.err) == ("ParseBool", "yes", ERR_SYNTAX)


@given(st.text(max_size=8))
def test_parse_bool_accepts_exactly_twelve_spellings(s: str) -> None:
    if s in TRUE_SPELLINGS:
        assert parse_bool(s) is True
    elif s in FALSE_SPELLINGS:
        assert parse_bool(s) is False
    else:
        with pytest.raises(NumError):
            parse_bool(s)


# --- ParseUint --------------------------------------------------------------


@pytest.mark.parametrize(
    ("s", "expected"),
    [
        ("0", 0),
        ("1", 1),
        ("00", 0),
        ("007", 7),
        ("1000", 1000),
        ("4294967295", 4294967295),
        ("00000000000000000000004294967295", 4294967295),
    ],
)
def test_parse_uint_accepts(s: str, expected: int) -> None:
    assert parse_uint(s) == expected
    assert parse_uint(s, 32) == expected


@pytest.mark.parametrize(
    "s",
    [
        "", "-1", "+1", "-0", "+0", " 1", "1 ", "\t1", "1\n", "1_000", "1,000", "0x10",
        "0o7", "0b1", "1e3", "1.0", "1.", ".1", "abc", "1a", "a1", "Inf", "NaN",
        "١٢", "12٣", "１２", "²", "߁", "٠",
    ],
)
def test_parse_uint_syntax_errors(s: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_uint(s)
    assert str(info.value) == f"strconv.ParseUint: parsing {go_quote(s)}: invalid syntax"


@pytest.mark.parametrize("s", ["4294967296", "4294967300", "99999999999", "18446744073709551616"])
def test_parse_uint_out_of_range_32(s: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_uint(s, 32)
    assert str(info.value) == f'strconv.ParseUint: parsing "{s}": value out of range'
    assert isinstance(info.value, NumError) and info.value.err == ERR_RANGE


def test_parse_uint_range_error_wins_when_overflow_precedes_bad_char() -> None:
    # Go stops at the digit that overflows, before it sees the 'x'.
    with pytest.raises(NumError) as info:
        parse_uint("4294967296x", 32)
    assert info.value.err == ERR_RANGE
    with pytest.raises(NumError) as info:
        parse_uint("x4294967296", 32)
    assert info.value.err == ERR_SYNTAX
    with pytest.raises(NumError) as info:
        parse_uint("429496729x", 32)
    assert info.value.err == ERR_SYNTAX


@pytest.mark.parametrize(
    ("bit_size", "max_ok"),
    [(1, 1), (8, 255), (16, 65535), (32, 4294967295), (64, 18446744073709551615), (0, 18446744073709551615)],
)
def test_parse_uint_bit_size_boundaries(bit_size: int, max_ok: int) -> None:
    assert parse_uint(str(max_ok), bit_size) == max_ok
    with pytest.raises(NumError) as info:
        parse_uint(str(max_ok + 1), bit_size)
    assert info.value.err == ERR_RANGE


@pytest.mark.parametrize("bit_size", [-1, 65, 128])
def test_parse_uint_invalid_bit_size(bit_size: int) -> None:
    with pytest.raises(NumError) as info:
        parse_uint("1", bit_size)
    assert str(info.value) == f'strconv.ParseUint: parsing "1": invalid bit size {bit_size}'


def test_num_error_pickles() -> None:
    try:
        parse_uint("x")
    except NumError as exc:
        clone = pickle.loads(pickle.dumps(exc))
        assert (clone.func, clone.num, clone.err, str(clone)) == (exc.func, exc.num, exc.err, str(exc))
    else:  # pragma: no cover - parse_uint must raise
        pytest.fail("parse_uint accepted 'x'")


def _reference_parse_uint(s: str, bit_size: int) -> tuple[str, object]:
    """Independent model of Go's ParseUint base 10: ("ok", n) or ("error", kind).

    Go scans left to right and reports a range error as soon as the digits
    read so far exceed the maximum, so the range check applies to the
    leading run of ASCII digits and the syntax check to the whole string.
    """
    max_val = 2**bit_size - 1
    leading = re.match(r"[0-9]*", s, re.ASCII)
    assert leading is not None
    if leading.group() and int(leading.group()) > max_val:
        return ("error", ERR_RANGE)
    if re.fullmatch(r"[0-9]+", s, re.ASCII) is None:
        return ("error", ERR_SYNTAX)
    return ("ok", int(s))


def _actual_parse_uint(s: str, bit_size: int) -> tuple[str, object]:
    try:
        return ("ok", parse_uint(s, bit_size))
    except NumError as exc:
        assert str(exc) == f"strconv.ParseUint: parsing {go_quote(s)}: {exc.err}"
        return ("error", exc.err)


_DIGITISH = st.text(alphabet="0123456789", min_size=1, max_size=25)
_MIXED = st.text(
    alphabet=st.one_of(
        st.sampled_from("0123456789+-_ x.e\t\n"),
        st.characters(categories=["Nd", "No"]),  # non-ASCII digits Python's int() accepts
        st.characters(),
    ),
    max_size=25,
)


@given(st.one_of(_DIGITISH, _MIXED, st.text()), st.sampled_from([8, 16, 32, 64]))
def test_parse_uint_matches_reference(s: str, bit_size: int) -> None:
    assert _actual_parse_uint(s, bit_size) == _reference_parse_uint(s, bit_size)


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_parse_uint_round_trips_every_uint32(n: int) -> None:
    assert parse_uint(str(n)) == n


# --- Quote ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("s", "quoted"),
    [
        ("", '""'),
        ("abc", '"abc"'),
        ('a"b', '"a\\"b"'),
        ("a\\b", '"a\\\\b"'),
        ("\n\t\r\a\b\f\v", '"\\n\\t\\r\\a\\b\\f\\v"'),
        ("\x00\x1b\x7f", '"\\x00\\x1b\\x7f"'),
        ("é١٢", '"é١٢"'),
        ("\u00a0", '"\\u00a0"'),
        ("\u200b", '"\\u200b"'),
        ("\U000e0001", '"\\U000e0001"'),
    ],
)
def test_go_quote(s: str, quoted: str) -> None:
    assert go_quote(s) == quoted
