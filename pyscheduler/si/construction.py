"""How the SI's messages are built: coercion of fields to their immutable forms, and the
core's fast path for the messages it makes once per allocation (set through the slots, skipping
the dataclass ``__init__``). Kept apart from :mod:`.messages`, which states the contract only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import fields
from types import MappingProxyType
from typing import TypeVar

from pyscheduler.common.resources import Resource


EMPTY_MAP: Mapping[str, str] = MappingProxyType({})


def empty_map() -> Mapping[str, str]:
    """Default factory: the shared, read-only empty map (a mappingproxy cannot be a plain default)."""
    return EMPTY_MAP


_new_object = object.__new__
_M = TypeVar("_M")


def slot_setters(cls: type) -> tuple[Callable[[object, object], None], ...]:
    """A slotted message class's field setters, in field order (:func:`through_slots`)."""
    return tuple(getattr(cls, f.name).__set__ for f in fields(cls))


def through_slots(cls: type[_M], setters: tuple[Callable[[object, object], None], ...], values: tuple[object, ...]) -> _M:
    """A frozen message of the core's own making (one per allocation), from every field's value
    in its final form: set through the slots, without the dataclass ``__init__``'s
    ``object.__setattr__`` per field and ``__post_init__`` (three to four times faster).
    ``strict``: a field added to the class and not given here fails at once."""
    message = _new_object(cls)
    for set_field, value in zip(setters, values, strict=True):
        set_field(message, value)
    return message


def set_frozen(obj: object, name: str, value: object) -> None:
    # frozen=True forbids normal assignment; object.__setattr__ is the documented way to
    # normalise a field during construction.
    object.__setattr__(obj, name, value)


def as_tuple(value: Iterable[object]) -> tuple[object, ...]:
    return value if type(value) is tuple else tuple(value)


def as_map(value: Mapping[str, str]) -> Mapping[str, str]:
    # Always copy: a proxy over the caller's dict would change when the caller's dict does.
    if value is EMPTY_MAP or not value:
        return EMPTY_MAP
    return MappingProxyType(dict(value))


def as_resource(value: Mapping[str, int]) -> Resource:
    return value if isinstance(value, Resource) else Resource(value)


def as_optional_resource(value: Mapping[str, int] | None) -> Resource | None:
    return None if value is None else as_resource(value)


def negative_reason(what: str, resource: Resource | None) -> str | None:
    if resource is not None and resource.has_negative():
        negative = ", ".join(f"{k}={v}" for k, v in sorted(resource.items()) if v < 0)
        return f"{what} has negative quantities ({negative})"
    return None
