"""Helpers shared by the query functions: lookups, omitempty, resource maps, Go formats.

Every DAO is a plain dict built the way YuniKorn's Go structs encode:

- keys appear in the Go struct's field order; a field tagged ``omitempty`` is left out when
  its value is zero, empty, false or nil (:func:`put`), the others are always set;
- maps (resources, properties, tags...) have their keys sorted, as Go's encoder writes them;
- resource quantities and percentages are ints, never floats.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, TypeVar

from pyscheduler.common.goduration import go_duration, parse_go_duration
from pyscheduler.dao.errors import INVALID_QUEUE_NAME, PARTITION_NOT_FOUND, BadRequest, NotFound, partition_ambiguous
from pyscheduler.policies.placement import QUEUE_NAME_RE
from pyscheduler.scheduler.context import external_name

if TYPE_CHECKING:
    from pyscheduler.objects.partition import Partition
    from pyscheduler.scheduler.context import ClusterContext
    from pyscheduler.scheduler.read_pacing import ReadPacer

T = TypeVar("T")
V = TypeVar("V")

__all__ = [
    "INT32_MIN",
    "abs_used_capacity",
    "build_chunked",
    "cluster_id",
    "find_partition",
    "go_duration",
    "parse_go_duration",
    "put",
    "qualified_name",
    "res_map",
    "sorted_map",
    "sorted_partitions",
    "validate_queue_path",
]

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1


# -- building -----------------------------------------------------------------------------------


#: Objects whose values are copied under one hold of the partition's lock.
COPY_CHUNK = 32


def build_chunked(
    lock: AbstractContextManager[Any],
    items: Sequence[T],
    view: Callable[[T], V],
    build: Callable[[V], dict[str, Any]],
    pacer: ReadPacer | None,
) -> list[dict[str, Any]]:
    """``[build(view(item)) ...]``: the values of :data:`COPY_CHUNK` items at a time are copied
    under ``lock`` (the partition's), each answer built after releasing it. Each item is
    consistent in itself; the list is not one snapshot of the partition, as in YuniKorn (which
    reads each application under its own lock). With a pacer the whole build passes through its
    gate and yields to a busy scheduling loop (:mod:`pyscheduler.scheduler.read_pacing`)."""
    out: list[dict[str, Any]] = []
    with pacer.building() if pacer is not None else nullcontext(_no_tick) as tick:
        for start in range(0, len(items), COPY_CHUNK):
            with lock:
                views = [view(item) for item in items[start : start + COPY_CHUNK]]
            for one in views:
                out.append(build(one))
                tick()
    return out


def _no_tick() -> None:
    """Without a pacer nothing yields."""


# -- lookups ------------------------------------------------------------------------------------


def sorted_partitions(ctx: ClusterContext) -> list[Partition]:
    """Every partition, by internal name (a copy taken under the context's lock)."""
    with ctx.lock:
        return [ctx.partitions[name] for name in sorted(ctx.partitions)]


#: A qualified partition name, ``[clusterId]name``: an RM id has no ``]`` (the internal name
#: ``[rmID]name`` is split at its first one).
_QUALIFIED = re.compile(r"\[([^\]]*)\](.*)", re.DOTALL)


def cluster_id(internal_name: str) -> str:
    """The RM id (``clusterId``) in a partition's internal name ``[rmID]name``."""
    if internal_name.startswith("[") and "]" in internal_name:
        return internal_name[1:internal_name.index("]")]
    return ""


def qualified_name(partition: Partition) -> str:
    """``[clusterId]name``: the partition's name that is unique over every RM (its RM id, the
    ``clusterId`` of ``/partitions``, in brackets, then the name the RM gave it)."""
    return f"[{partition.rm_id}]{external_name(partition.name)}"


def find_partition(ctx: ClusterContext, name: str) -> Partition:
    """The partition a REST path names.

    - ``[clusterId]name`` (its qualified name): that RM's partition ``name``, always;
    - a plain ``name`` (YuniKorn's GetPartitionWithoutClusterID): the one partition of that
      name. When several RMs each have one, it is ambiguous: BadRequest naming the qualified
      names to use, never silently the first.

    Raises NotFound ``Partition not found`` (YuniKorn's text) when none matches."""
    qualified = _QUALIFIED.fullmatch(name)
    partitions = sorted_partitions(ctx)
    if qualified is not None:
        rm_id, plain = qualified.group(1), qualified.group(2)
        for partition in partitions:
            if partition.rm_id == rm_id and external_name(partition.name) == plain:
                return partition
        raise NotFound(PARTITION_NOT_FOUND)
    matches = [p for p in partitions if external_name(p.name) == name]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise NotFound(PARTITION_NOT_FOUND)
    raise BadRequest(partition_ambiguous(name, [qualified_name(p) for p in matches]))


def validate_queue_path(path: str) -> None:
    """Each dot-separated part of a (non-empty) queue path must be a valid queue name
    (YuniKorn's validateQueue); raises BadRequest with YuniKorn's message."""
    if not path:
        return
    for part in path.split("."):
        if not QUEUE_NAME_RE.fullmatch(part):
            raise BadRequest(INVALID_QUEUE_NAME)


# -- omitempty and maps -------------------------------------------------------------------------


def put(out: dict[str, Any], key: str, value: Any) -> None:
    """Sets ``key`` unless ``value`` is Go's zero value for an omitempty field (0, "", false,
    nil, an empty map or slice)."""
    if value is None or value is False:
        return
    if isinstance(value, int | float) and not isinstance(value, bool) and value == 0:
        return
    if isinstance(value, str | dict | list | tuple) and not value:
        return
    out[key] = value


def sorted_map(values: Mapping[str, Any] | None) -> dict[str, Any]:
    """A plain dict copy with its keys sorted (Go's encoder sorts map keys)."""
    if not values:
        return {}
    return {key: values[key] for key in sorted(values)}


def res_map(resource: Mapping[str, int] | None, *, prune: bool = False) -> dict[str, int]:
    """A resource as ``{type: int64}`` with sorted keys; ``prune`` drops zero quantities (YuniKorn
    prunes usage such as allocated and pending once it decreases)."""
    if not resource:
        return {}
    return {key: int(resource[key]) for key in sorted(resource) if not prune or resource[key] != 0}


def abs_used_capacity(capacity: Mapping[str, int] | None, used: Mapping[str, int] | None) -> dict[str, int]:
    """YuniKorn's CalculateAbsUsedCapacity: for each type of ``capacity`` that ``used`` has,
    ``int64(used / capacity * 100)`` (truncated), clamped to int64 as Go's overflow guards do.
    A zero capacity gives Go's amd64 result: +inf -> max int64, NaN -> min int64."""
    if capacity is None or used is None:
        return {}
    out: dict[str, int] = {}
    for name in sorted(capacity):
        if name not in used:
            continue
        cap, value = capacity[name], used[name]
        if cap == 0:
            if value > 0:
                out[name] = INT64_MAX
            elif value < 0:
                out[name] = INT64_MIN
            else:
                out[name] = INT64_MIN  # int64(NaN) on amd64
            continue
        ratio = value / cap
        percent = ratio * 100
        if math.isinf(percent) or percent >= 2**63:
            out[name] = INT64_MAX if ratio > 0 else INT64_MIN
        elif percent < -(2**63):
            out[name] = INT64_MIN
        else:
            out[name] = int(percent)
    return out


