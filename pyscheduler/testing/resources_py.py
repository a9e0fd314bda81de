"""The pure-Python twin of the native :class:`pyscheduler._native.Resource` (its oracle).

:mod:`pyscheduler.common.resources` gives the scheduler the native class; this one is the same
type written in Python over a dict, with the same semantics (see that module), kept as the
reference the native class is tested against, operation by operation (tests/test_resource_native.py),
and as the readable statement of YuniKorn's arithmetic. It lives in the test kit because nothing
in the product uses it (an import-linter contract: the product never imports
:mod:`pyscheduler.testing`); the native/pure switch (:mod:`pyscheduler.common.native`) is for
twins the product can run, which this is not.

:func:`fair_share` is the oracle of the native ``Resource.fair_share`` (the fair sort's key).
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Callable, ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Final

from pyscheduler.common.errors import ResourceError

__all__ = ["NO_RESOURCE", "Resource", "component_min_undef", "fair_share", "transferred"]

#: Saturation warnings go to the same logger as the native class's.
log = logging.getLogger("pyscheduler.common.resources")

_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1
_new = object.__new__


def _per_type_op(op: Callable[[int, int], int], doc: str) -> Callable[[Resource, Mapping[str, int]], Resource]:
    """``op`` applied per type over the union of two resources' types, a missing type being 0,
    results past int64 saturated (:func:`_saturated`). Written for CPython's speed (about twice
    the plain loop's): the dict copied with ``copy``, ``get`` bound, the bounds as literals, the
    result built without :meth:`Resource._of`'s call."""

    def per_type(self: Resource, other: Mapping[str, int]) -> Resource:
        q = self._q.copy()
        get = q.get
        # Resource operands are read through their dict: Mapping.items() is several times slower.
        # (_quantities written out: this is the hottest operation, a call more costs a few %.)
        for k, v in (other._q if type(other) is Resource else other).items():
            r = op(get(k, 0), v)
            if not -9223372036854775808 <= r <= 9223372036854775807:
                r = _saturated(r, k)
            q[k] = r
        result = _new(Resource)
        result._q, result._hash, result._valid_ask = q, None, None
        return result

    per_type.__doc__ = doc
    return per_type


class Resource(Mapping[str, int]):
    """An immutable map of resource name to int64 quantity."""

    __slots__ = ("_q", "_hash", "_valid_ask")

    _q: dict[str, int]

    def __init__(self, quantities: Mapping[str, int] | None = None) -> None:
        q: dict[str, int] = {}
        if quantities:
            for name, value in quantities.items():
                if not isinstance(name, str) or not name:
                    raise ResourceError(f"resource names must be non-empty strings, got {name!r}")
                if isinstance(value, bool) or not isinstance(value, int):
                    raise ResourceError(f"quantity of {name!r} must be an integer, got {value!r}")
                if not _INT64_MIN <= value <= _INT64_MAX:
                    raise ResourceError(f"quantity of {name!r} is outside the int64 range: {value}")
                q[name] = value
        self._q = q
        self._hash: int | None = None
        #: strictly_greater_than_zero, once asked (the quantities never change): the scheduling
        #: walk asks it of every queue's pending on every cycle.
        self._valid_ask: bool | None = None

    @classmethod
    def _of(cls, q: dict[str, int]) -> Resource:
        """Wraps an already-checked dict (internal: skips validation)."""
        r = cls.__new__(cls)
        r._q = q
        r._hash = None
        r._valid_ask = None
        return r

    # -- Mapping ---------------------------------------------------------------------------

    def __getitem__(self, name: str) -> int:
        return self._q[name]

    def get(self, name: str, default: int = 0) -> int:  # type: ignore[override]
        return self._q.get(name, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._q)

    def __contains__(self, name: object) -> bool:
        """The dict's own test: Mapping's generic one tries ``self[name]`` and catches KeyError
        (a quota check asks it of each type of the ask)."""
        return name in self._q

    def items(self) -> ItemsView[str, int]:
        """The dict's own view: Mapping's generic one goes through __getitem__ per key."""
        return self._q.items()

    def values(self) -> ValuesView[int]:
        return self._q.values()

    def keys(self) -> KeysView[str]:
        return self._q.keys()

    def __len__(self) -> int:
        return len(self._q)

    def __eq__(self, other: object) -> bool:
        """Equal when every type has the same quantity, a missing type counting as 0."""
        if isinstance(other, Resource):
            return _pruned(self._q) == _pruned(other._q)
        if isinstance(other, Mapping):
            return _pruned(self._q) == _pruned(dict(other))
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(_pruned(self._q).items()))
        return self._hash

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}: {v}" for k, v in sorted(self._q.items()))
        return f"Resource({{{inner}}})"

    def to_dict(self) -> dict[str, int]:
        """A plain dict copy (DAO output, events)."""
        return dict(self._q)

    def view(self) -> Mapping[str, int]:
        """The quantities without a copy, for hot paths that only read them (the native node
        index and event store take a dict about twice as fast as a Mapping, whose items() is a
        Python call). Never mutate it."""
        return self._q

    # -- arithmetic --------------------------------------------------------------------------

    # __add__ and __sub__ run a dozen times per allocation (queue path, application, node,
    # user and group usage); _per_type_op writes them for CPython's speed.
    __add__ = _per_type_op(operator.add, "Sum over the union of types (a missing type is 0), saturated at int64.")
    __sub__ = _per_type_op(operator.sub, "Difference over the union of types; results may be negative.")

    def room_above(self, used: Mapping[str, int]) -> Resource:
        """``self`` as a maximum: per type it names, the maximum minus ``used`` (may be
        negative, saturated at int64); types it does not name stay absent (unlimited)."""
        q = {}
        get = _quantities(used).get
        for k, v in self._q.items():
            r = v - get(k, 0)
            q[k] = r if -9223372036854775808 <= r <= 9223372036854775807 else _saturated(r, k)
        return Resource._of(q)

    def __neg__(self) -> Resource:
        return Resource._of({k: _saturated(-v, k) if v == _INT64_MIN else -v for k, v in self._q.items()})

    def sub_eliminate_negative(self, other: Mapping[str, int]) -> Resource:
        """``self - other`` with negative results clamped to 0."""
        return Resource._of({k: max(v, 0) for k, v in (self - other)._q.items()})

    def multiply(self, factor: int) -> Resource:
        return Resource._of({k: _saturated(v * factor, k) for k, v in self._q.items()})

    def pruned(self) -> Resource:
        """Without zero quantities (YuniKorn prunes node capacity this way)."""
        return Resource._of(_pruned(self._q))

    # -- comparisons ---------------------------------------------------------------------------

    def is_zero(self) -> bool:
        """Every quantity is 0 (an empty resource is zero)."""
        return not any(self._q.values())

    def is_empty(self) -> bool:
        return not self._q

    def has_negative(self) -> bool:
        return any(v < 0 for v in self._q.values())

    def strictly_greater_than_zero(self) -> bool:
        """At least one quantity above 0 and none below (a valid ask)."""
        known = self._valid_ask
        if known is None:
            values = self._q.values()
            known = self._valid_ask = bool(values) and min(values) >= 0 and max(values) > 0
        return known

    def fits_in(self, larger: Mapping[str, int]) -> bool:
        """Every type of self is at most the same type of ``larger`` (missing there: 0)."""
        get = _quantities(larger).get
        for k, v in self._q.items():
            if v > 0 and v > get(k, 0):
                return False
        return True

    def fits_in_max_undef(self, maximum: Mapping[str, int] | None) -> bool:
        """Like :meth:`fits_in`, but a type missing from ``maximum`` is unlimited; None: no max.
        (Asked twice on every try of an ask: loops over the dicts, no generator, no Mapping
        method call per type.)"""
        if maximum is None:
            return True
        get = _quantities(maximum).get
        for k, v in self._q.items():
            if v > 0:
                limit = get(k)
                if limit is not None and v > limit:
                    return False
        return True

    def component_min(self, other: Mapping[str, int]) -> Resource:
        """Per type the smaller quantity, over the union of types (a missing type is 0)."""
        keys = set(self._q) | set(other)
        return Resource._of({k: min(self._q.get(k, 0), other.get(k, 0)) for k in keys})

    def component_max(self, other: Mapping[str, int]) -> Resource:
        keys = set(self._q) | set(other)
        return Resource._of({k: max(self._q.get(k, 0), other.get(k, 0)) for k in keys})


#: The empty resource. Resources are immutable, so every holder of "nothing yet" (a new
#: application's usage, an idle node's occupied and allocated, a user's first usage) shares it.
NO_RESOURCE: Final = Resource()


def transferred(source: Resource, target: Resource, amount: Resource) -> tuple[Resource, Resource]:
    """``(source - amount, target + amount)`` in one pass over ``amount``: an allocated ask
    leaves pending and joins allocated on its application and on every queue of its path. The
    same results as the two operations (saturated alike), at about the cost of one."""
    taken = source._q.copy()
    given = target._q.copy()
    get_taken = taken.get
    get_given = given.get
    for k, v in amount._q.items():
        r = get_taken(k, 0) - v
        taken[k] = r if -9223372036854775808 <= r <= 9223372036854775807 else _saturated(r, k)
        r = get_given(k, 0) + v
        given[k] = r if -9223372036854775808 <= r <= 9223372036854775807 else _saturated(r, k)
    left = _new(Resource)
    left._q, left._hash, left._valid_ask = taken, None, None
    right = _new(Resource)
    right._q, right._hash, right._valid_ask = given, None, None
    return left, right


def component_min_undef(a: Resource | None, b: Resource | None) -> Resource | None:
    """Per-type minimum of two maximums where a missing type (or a None maximum) is unlimited."""
    if a is None:
        return b
    if b is None:
        return a
    q = dict(a._q)
    for k, v in b._q.items():
        q[k] = min(q[k], v) if k in q else v
    return Resource._of(q)


def fair_share(allocated: Mapping[str, int], guaranteed: Mapping[str, int] | None, fairmax: Mapping[str, int]) -> float:
    """The largest share over allocated types: allocated / guaranteed, or allocated / fair max
    for types without a guarantee; 1.0 for usage against a zero or negative denominator. The
    pure-Python twin of the native ``Resource.fair_share`` the fair sort uses (its oracle; it
    was ``pyscheduler.policies.sorting.fair_share``)."""
    share = 0.0
    for name, used in allocated.items():
        if used <= 0:
            continue
        denominator = guaranteed.get(name) if guaranteed is not None else None
        if denominator is None:
            denominator = fairmax.get(name)
            if denominator is None:
                continue
        ratio = used / denominator if denominator > 0 else 1.0
        if ratio > share:
            share = ratio
    return share


def _quantities(resource: Mapping[str, int]) -> Mapping[str, int]:
    """A Resource's own dict (its Mapping methods are Python calls), any other mapping as is."""
    return resource._q if type(resource) is Resource else resource


def _pruned(q: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in q.items() if v != 0}


def _saturated(value: int, name: str) -> int:
    """YuniKorn's resource arithmetic: a result past int64 is the int64 maximum (or minimum),
    with a warning, never an error. An RM update whose sums overflow is thus applied whole
    rather than failing half-way (the quantities an RM sends are checked when they arrive)."""
    if value > _INT64_MAX:
        log.warning("resource calculation wrapped for %r: returned the maximum value possible", name)
        return _INT64_MAX
    if value < _INT64_MIN:
        log.warning("resource calculation wrapped for %r: returned the minimum value possible", name)
        return _INT64_MIN
    return value
