"""The workload file format's values: readers that check one value and name its key in the
error, and the writers of the few values not written as they are held.

Every reader raises :class:`~pyscheduler.sim.workload_types.WorkloadError` whose message starts
with the key's dotted path (``applications.memory: ...``), so a user sees what they wrote.
Quantities are read exactly as queues.yaml reads them (Kubernetes' quantity grammar, numbers
included); seconds may be a Go duration where a key says so. The sections' and the spec's
``from_mapping`` / ``to_mapping`` (:mod:`~pyscheduler.sim.workload_sections`,
:mod:`~pyscheduler.sim.workload`) are built from these.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pyscheduler.common.goduration import parse_seconds
from pyscheduler.common.resources import ResourceError, parse_quantity
from pyscheduler.sim.workload_types import FloatRange, IntRange, WorkloadError

__all__ = [
    "check_keys",
    "format_millicores",
    "read_float",
    "read_float_range",
    "read_int",
    "read_int_range",
    "read_quantity",
    "read_queue_path",
    "read_queues",
    "read_section",
    "read_seconds",
    "vcore_range_json",
]


def check_keys(data: Mapping[str, Any], where: str, allowed: tuple[str, ...]) -> None:
    """Refuses a key of ``data`` (the mapping at ``where``; empty: the top level) not in ``allowed``."""
    for key in data:
        if key not in allowed:
            place = f"{where}: " if where else ""
            raise WorkloadError(f"{place}unknown key {key!r} (expected one of: {', '.join(allowed)})")


def read_section(data: Mapping[str, Any], name: str, allowed: tuple[str, ...]) -> Mapping[str, Any]:
    """The mapping under key ``name`` of ``data`` with only ``allowed`` keys; empty when absent."""
    section = data.get(name)
    if section is None:
        return {}
    if not isinstance(section, Mapping):
        raise WorkloadError(f"{name}: expected a mapping with keys {', '.join(allowed)}, got {section!r}")
    check_keys(section, name, allowed)
    return section


def read_int(value: Any, path: str) -> int:
    """An integer (not a bool) at key ``path``."""
    # bool is an int subclass: "count: yes" is a mistake, not 1.
    if isinstance(value, bool) or not isinstance(value, int):
        raise WorkloadError(f"{path}: expected an integer, got {value!r}")
    return value


def read_float(value: Any, path: str) -> float:
    """A number (not a bool) at key ``path``, as a float."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise WorkloadError(f"{path}: expected a number, got {value!r}")
    return float(value)


def read_quantity(name: str, value: Any, path: str) -> int:
    """A quantity as queues.yaml reads it: a number is the same as its text (vcore ``2`` is two
    cores, as in the queue configuration), so the two files never disagree on units."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise WorkloadError(f"{path}: expected a quantity such as 4Gi, 512Mi, 2 or 500m, got {value!r}")
    try:
        return parse_quantity(name, str(value), path)
    except ResourceError as exc:
        raise WorkloadError(str(exc)) from None


def format_millicores(value: int) -> str:
    """A vcore quantity in the file format (whole cores when exact, else millicores)."""
    return str(value // 1000) if value % 1000 == 0 else f"{value}m"


def vcore_range_json(rng: IntRange) -> str | list[str]:
    """A vcore range in the file format: one quantity for a constant, else ``[low, high]``."""
    if rng.low == rng.high:
        return format_millicores(rng.low)
    return [format_millicores(rng.low), format_millicores(rng.high)]


def _pair(value: Any, path: str) -> tuple[Any, Any]:
    """``x`` -> (x, x); ``[lo, hi]`` or ``{min: lo, max: hi}`` -> (lo, hi)."""
    if isinstance(value, list | tuple):
        if len(value) != 2:
            raise WorkloadError(f"{path}: a range is [minimum, maximum], got {len(value)} values")
        return value[0], value[1]
    if isinstance(value, Mapping):
        check_keys(value, path, ("min", "max"))
        if "min" not in value or "max" not in value:
            raise WorkloadError(f"{path}: a range needs both min and max")
        return value["min"], value["max"]
    return value, value


def read_int_range(value: Any, path: str, read: Callable[[Any, str], int]) -> IntRange:
    low, high = _pair(value, path)
    return IntRange(read(low, path), read(high, path))


def read_float_range(value: Any, path: str) -> FloatRange:
    low, high = _pair(value, path)
    return FloatRange(read_float(low, path), read_float(high, path))


def read_seconds(value: Any, path: str) -> float:
    """A number of seconds, or a Go duration such as ``5s`` or ``1m30s``."""
    if isinstance(value, str):
        try:
            return parse_seconds(value)
        except ValueError:
            raise WorkloadError(f"{path}: expected seconds or a duration such as 5s, got {value!r}") from None
    return read_float(value, path)


def read_queue_path(name: Any) -> str:
    """A queue name as a lower-case path under ``root`` (``a`` -> ``root.a``)."""
    if not isinstance(name, str) or not name:
        raise WorkloadError(f"queues: a queue name must be a non-empty string, got {name!r}")
    name = name.strip().lower()
    return name if name == "root" or name.startswith("root.") else f"root.{name}"


def read_queues(value: Any) -> tuple[tuple[str, ...], tuple[float, ...]]:
    """A list of names (equal weights) or a mapping of name to weight."""
    if isinstance(value, Mapping):
        names = tuple(read_queue_path(name) for name in value)
        weights = tuple(read_float(weight, f"queues.{name}") for name, weight in value.items())
        return names, weights
    if isinstance(value, list | tuple):
        names = tuple(read_queue_path(name) for name in value)
        return names, tuple(1.0 for _ in names)
    if isinstance(value, str):
        return (read_queue_path(value),), (1.0,)
    raise WorkloadError(f"queues: expected a list of queue names or a mapping of name to weight, got {value!r}")
