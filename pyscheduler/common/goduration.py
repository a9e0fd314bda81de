"""Go's ``time.Duration``: parse (``time.ParseDuration``) and format (``Duration.String``), as
YuniKorn reads and writes durations in its configuration and REST answers."""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Final

__all__ = ["go_duration", "parse_go_duration", "parse_seconds"]

INT64_MAX: Final = (1 << 63) - 1


_UNITS = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # micro sign
    "\u03bcs": 1_000,  # Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_DURATION_PART = re.compile(r"(\d*)(?:\.(\d*))?([^\d.]+)")


def parse_go_duration(text: str) -> int:
    """Go's ``time.ParseDuration`` in nanoseconds; raises ValueError for what Go rejects."""
    s = text
    neg = False
    if s[:1] in ("-", "+"):
        neg = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise ValueError(f'time: invalid duration "{text}"')
    total = Fraction(0)
    pos = 0
    while pos < len(s):
        match = _DURATION_PART.match(s, pos)
        if match is None:
            raise ValueError(f'time: invalid duration "{text}"')
        whole, frac, unit = match.groups()
        if not whole and not frac:
            raise ValueError(f'time: invalid duration "{text}"')
        if unit not in _UNITS:
            raise ValueError(f'time: unknown unit "{unit}" in duration "{text}"')
        value = Fraction(int(whole or "0"))
        if frac:
            value += Fraction(int(frac), 10 ** len(frac))
        total += value * _UNITS[unit]
        pos = match.end()
    ns = math.floor(total)
    if ns > INT64_MAX:
        raise ValueError(f'time: invalid duration "{text}"')
    return -ns if neg else ns


def parse_seconds(text: str) -> float:
    """A non-negative, finite number of seconds (``90``, ``1.5``) or a Go duration (``168h``,
    ``30m``) in seconds; raises ValueError for anything else."""
    try:
        value = float(text)
    except ValueError:
        value = parse_go_duration(text.strip()) / 1e9
    if not (0 <= value < math.inf):
        raise ValueError(f"not a non-negative, finite duration: {text!r}")
    return value


def _fmt_frac(value: int, prec: int) -> str:
    whole, frac = divmod(value, 10**prec)
    digits = f"{frac:0{prec}d}".rstrip("0") if prec and frac else ""
    return f"{whole}.{digits}" if digits else f"{whole}"


def go_duration(ns: int) -> str:
    """Go's ``time.Duration.String`` (``30s``, ``1m30s``, ``1h0m0s``, ``1.5s``, ``500ms``)."""
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    u = abs(ns)
    if u < 1_000_000_000:
        if u < 1_000:
            return f"{sign}{u}ns"
        if u < 1_000_000:
            return f"{sign}{_fmt_frac(u, 3)}\u00b5s"
        return f"{sign}{_fmt_frac(u, 6)}ms"
    seconds, frac = divmod(u, 1_000_000_000)
    digits = f"{frac:09d}".rstrip("0") if frac else ""
    text = f"{seconds % 60}{'.' + digits if digits else ''}s"
    minutes = seconds // 60
    if minutes:
        text = f"{minutes % 60}m{text}"
        hours = minutes // 60
        if hours:
            text = f"{hours}h{text}"
    return sign + text
