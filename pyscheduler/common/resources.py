"""Resources: quantities per resource type, with YuniKorn's arithmetic.

A :class:`Resource` maps resource names (``memory`` in bytes, ``vcore`` in millicores, ``pods``,
``nvidia.com/gpu``...) to int64 quantities. It is immutable: every operation returns a new
one, so a resource handed to an event, a DAO or another object can never change under it.

The class is native (``pyscheduler._native.Resource``, over ``rust/schedmath/src/resource.rs``): an
allocation does a dozen sums and differences on its path (queues, application, node, user and
group), about 0.1 us each natively against 0.8 us in Python. Its pure-Python twin,
:mod:`pyscheduler.testing.resources_py` (the test kit), is the oracle it is tested against. It is a registered
:class:`~collections.abc.Mapping`: ``items()``, ``keys()`` and ``values()`` return views of a fresh
dict (read them once, not per type); :meth:`Resource.view` returns a dict built on its first call
and shared after (never write it; ``to_dict()`` gives a copy). Names are interned per process:
at most ``MAX_RESOURCE_TYPES`` (65,536) distinct resource types, past which building a resource
raises :class:`ResourceError` (a hostile RM cannot grow the table without bound).

Semantics follow ``pkg/common/resources`` in yunikorn-core:

- a type missing from a resource is 0 for arithmetic and comparisons, except in
  :meth:`Resource.fits_in_max_undef` and :func:`component_min_undef`, where a type missing
  from a *maximum* is unlimited (queue max, user limits);
- quantities in configuration use Kubernetes' grammar: ``<digits>[k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei]``;
  ``vcore`` is given in cores and kept in millicores (``"10"`` is 10000, ``"500m"`` is 500);
- a result past int64 is the int64 maximum (or minimum), with a warning on this module's logger
  (YuniKorn's ``addVal``), never an error. :func:`saturations` tells a caller which types
  saturated on its thread while it ran something (the RM proxy tells the RM, issue 31); it sees
  them whatever the logging configuration (this logger's own level is WARNING, and a filter
  passes a record on only as its parent loggers' level allows).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Final

from pyscheduler._native import MAX_RESOURCE_TYPES, Resource, component_min_undef, transferred
from pyscheduler.common.errors import ResourceError

__all__ = [
    "MAX_RESOURCE_TYPES",
    "MEMORY",
    "VCORE",
    "NO_RESOURCE",
    "Resource",
    "ResourceError",
    "component_min_undef",
    "go_string",
    "parse_quantity",
    "saturations",
    "transferred",
]

MEMORY: Final = "memory"
VCORE: Final = "vcore"

_INT64_MAX: Final = (1 << 63) - 1

Mapping.register(Resource)

#: Where the native and the pure-Python arithmetic warn of a saturated result.
_log = logging.getLogger(__name__)
#: Per thread: the open :func:`saturations` watches, innermost last.
_watches = threading.local()


class _SaturationWatch(logging.Filter):
    """Notes each saturation warning for the thread's innermost watch, then lets the record
    through only if the parent loggers' level would have (this logger's own is WARNING, so
    that no configuration hides a saturation from a watch)."""

    def filter(self, record: logging.LogRecord) -> bool:
        stack: list[dict[str, str]] | None = getattr(_watches, "stack", None)
        if stack and record.args and isinstance(record.args, tuple):
            bound = "minimum" if "minimum" in str(record.msg) else "maximum"
            stack[-1].setdefault(str(record.args[0]), bound)
        parent = _log.parent
        return parent is None or parent.isEnabledFor(record.levelno)


if _log.level == logging.NOTSET:
    _log.setLevel(logging.WARNING)
_log.addFilter(_SaturationWatch())


@contextmanager
def saturations() -> Iterator[dict[str, str]]:
    """While the block runs: the resource types whose arithmetic saturated on this thread, each
    with the bound it was clamped to (``"maximum"`` or ``"minimum"``), in the order seen. A
    nested watch (an RM callback calling back into the core) keeps its own."""
    stack: list[dict[str, str]] = _watches.__dict__.setdefault("stack", [])
    seen: dict[str, str] = {}
    stack.append(seen)
    try:
        yield seen
    finally:
        stack.pop()


#: The empty resource. Resources are immutable, so every holder of "nothing yet" (a new
#: application's usage, an idle node's occupied and allocated, a user's first usage) shares it.
NO_RESOURCE: Final = Resource()


def go_string(resource: Mapping[str, int] | None) -> str:
    """YuniKorn's ``Resource.String()`` as its messages show it: ``map[memory:10 vcore:1]``
    (Go prints a map's keys sorted), ``nil resource`` for none (an unlimited headroom)."""
    if resource is None:
        return "nil resource"
    return "map[" + " ".join(f"{k}:{v}" for k, v in sorted(resource.items())) + "]"


def readable(resource: Mapping[str, int] | None) -> str:
    """A resource in a person's units, for answers people read (the "why" of issue 35), never
    for YuniKorn's messages (:func:`go_string`): ``vcore`` in cores (``2.5 cores``), ``memory``
    and ``ephemeral-storage`` in binary units (``4 GiB``), anything else as its count; types in
    name order; ``nothing`` for an empty one, ``unlimited`` for none."""
    if resource is None:
        return "unlimited"
    parts = [f"{name} {_readable_quantity(name, value)}" for name, value in sorted(resource.items())]
    return ", ".join(parts) if parts else "nothing"


_BINARY_UNITS: Final = (("EiB", 1 << 60), ("PiB", 1 << 50), ("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20),
                        ("KiB", 1 << 10))


def _readable_quantity(name: str, value: int) -> str:
    if name == "vcore":
        cores = value / 1000
        return f"{cores:g} core" if cores == 1 else f"{cores:g} cores"
    if name in ("memory", "ephemeral-storage"):
        for unit, size in _BINARY_UNITS:
            if abs(value) >= size:
                return f"{value / size:.3g} {unit}"
        return f"{value} B"
    return str(value)


_QUANTITY = re.compile(r"^([0-9]+)(k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|m)?$")
_MULTIPLIERS: Final = {
    None: 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
    "Ki": 1 << 10,
    "Mi": 1 << 20,
    "Gi": 1 << 30,
    "Ti": 1 << 40,
    "Pi": 1 << 50,
    "Ei": 1 << 60,
}


def parse_quantity(name: str, text: str, path: str | None = None) -> int:
    """Parses one configuration quantity of resource ``name``.

    ``vcore`` is given in cores and returned in millicores; its ``m`` suffix means millicores
    (``"500m"`` is 500). The ``m`` suffix is an error for any other resource. Raises
    :class:`ResourceError` naming ``path`` (default: the name) on a bad value.
    """
    where = path or name
    match = _QUANTITY.match(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise ResourceError(f"{where}: invalid quantity {text!r} (expected digits with an optional unit such as 10G or 512Mi)")
    digits, unit = match.groups()
    if unit == "m":
        if name != VCORE:
            raise ResourceError(f"{where}: the 'm' (milli) suffix is only allowed for vcore, got {text!r}")
        value = int(digits)
    else:
        value = int(digits) * _MULTIPLIERS[unit]
        if name == VCORE:
            value *= 1000
    if value > _INT64_MAX:
        raise ResourceError(f"{where}: quantity {text!r} does not fit in int64")
    return value
