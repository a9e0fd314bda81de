"""Quantities for people: resources, usage bars, ordinals, times. Pure functions.

Resources come as YuniKorn maps of name to integer quantity: ``vcore`` in millicores, memory
(``memory``, ``ephemeral-storage``, ``hugepages-*``) in bytes, anything else a count. The event
records' resources are ``{"resources": {name: {"value": n}}}``; :func:`plain_resource` reads both.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from typing import Any, Final

__all__ = ["bar", "format_quantity", "format_resource", "ordinal", "plain_resource", "resource_names", "share", "table",
           "timestamp"]

_BINARY_UNITS: Final = (("Pi", 1 << 50), ("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10))
#: Resources first in this order when printed; the others after them by name.
_ORDER: Final = ("vcore", "memory", "pods")


def _is_bytes(name: str) -> bool:
    return name in ("memory", "ephemeral-storage") or name.startswith("hugepages-") or name.endswith("memory")


def _trimmed(value: float) -> str:
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return text or "0"


def format_quantity(name: str, value: int | float) -> str:
    """One quantity of resource ``name``: ``vcore`` 2500 -> ``2.5``, ``memory`` 4294967296 ->
    ``4Gi``, ``pods`` 3 -> ``3``."""
    if name == "vcore":
        return _trimmed(value / 1000)
    if _is_bytes(name):
        magnitude = abs(value)
        for unit, size in _BINARY_UNITS:
            if magnitude >= size:
                return _trimmed(value / size) + unit
        return _trimmed(value)
    return _trimmed(value)


def resource_names(*resources: Mapping[str, Any] | None) -> list[str]:
    """The names in any of these maps: vcore, memory and pods first, then the others sorted."""
    names = {name for resource in resources if resource for name in resource}
    return [n for n in _ORDER if n in names] + sorted(names - set(_ORDER))


def format_resource(resource: Mapping[str, Any] | None, names: Iterable[str] | None = None) -> str:
    """``vcore 2.5, memory 4Gi``; ``-`` for an empty or missing map."""
    if not resource:
        return "-"
    shown = list(names) if names is not None else resource_names(resource)
    parts = [f"{n} {format_quantity(n, resource[n])}" for n in shown if n in resource]
    return ", ".join(parts) if parts else "-"


def plain_resource(resource: Mapping[str, Any] | None) -> dict[str, int]:
    """A resource map from either shape: ``{name: n}`` or an event's
    ``{"resources": {name: {"value": n}}}``."""
    if not resource:
        return {}
    nested = resource.get("resources")
    if isinstance(nested, Mapping):
        return {str(k): int(v.get("value", 0)) for k, v in nested.items() if isinstance(v, Mapping)}
    return {str(k): int(v) for k, v in resource.items() if isinstance(v, (int, float))}


def share(used: int | float, limit: int | float | None) -> float | None:
    """``used`` as a fraction of ``limit``; None without a positive limit."""
    if not limit or limit <= 0:
        return None
    return used / limit


def bar(used: int | float, limit: int | float | None, width: int = 20, mark: int | float | None = None) -> str:
    """``[#######.............]``: ``used`` of ``limit`` in ``width`` cells, ``>`` in the last cell
    when over it; ``mark`` (the guaranteed amount) is a ``|`` where it falls when not under the
    used part. Without a limit: a ``?`` in the middle."""
    fraction = share(used, limit)
    if fraction is None:
        return "[" + "?".center(width) + "]"
    filled = min(width, round(fraction * width))
    if used > 0 and filled == 0:
        filled = 1
    cells = ["#"] * filled + ["."] * (width - filled)
    if fraction > 1:
        cells[-1] = ">"
    mark_fraction = share(mark, limit) if mark is not None else None
    if mark_fraction is not None and mark_fraction <= 1:
        at = min(width - 1, int(mark_fraction * width))
        if at >= filled:
            cells[at] = "|"
    return "[" + "".join(cells) + "]"


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st, 102nd."""
    if 10 <= n % 100 <= 20:
        suffix = "th"
    else:
        suffix = {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def timestamp(nanoseconds: int) -> str:
    """A UTC time to the millisecond: ``2026-11-28T01:02:03.456Z``."""
    moment = datetime.datetime.fromtimestamp(nanoseconds / 1e9, tz=datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def table(headers: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    """Columns padded to their widest cell, two spaces apart, as kubectl prints them."""
    lines = [list(headers)] + [list(row) for row in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in lines)
