"""Merging what several plugins report about one object, field by field, as the seed says.

The rules (``shared/seeds/reporter-manager.md``), applied in **registration order** (the order
of the ``reports`` given to :func:`merge`), so the result never depends on anything else:

- a **map** field: merged by key; on a key two plugins report, the later-registered one wins;
- a **slice** field: the plugins' elements concatenated, earlier-registered plugins first;
- a **common** field (a number, a string, or a whole object such as ``TopologyStatus``): the
  later-registered plugin's value replaces the earlier one's, whole (Katalyst's code deep-merges
  objects and orders by serialised text instead; see ``shared/spec/reporter.md``).

After the merge a field's normaliser, if it has one, runs on the result (labels or topology
zones sorted and de-duplicated, for example).

**Validation is per field.** A field the schema does not know, a value that is not JSON, or a
value of the wrong shape (a map field that is not a JSON object, a slice that is not an array,
an element the field's check refuses) is left out on its own and recorded as
:class:`Rejected` with the plugin's name and the reason; every other field of that plugin and of
the others still applies. Katalyst aborted the whole object's update instead, every round.

Values are JSON. The seed writes its examples in Go's ``%v`` notation, where a pointer to a
struct prints as ``&{...}``: a ``&`` right before a ``{`` outside a string is dropped, so the
seed's examples are read verbatim; nothing else is relaxed.

:func:`merge` also says which plugin supplied what (:attr:`Merged.sources`): per map key, per
slice element, or for the whole value.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NamedTuple

from pyscheduler.reporter.content import FieldType, ReportField

__all__ = ["FieldKind", "FieldSpec", "Merged", "Rejected", "Reported", "decode_value", "merge"]

#: A check of a value (a map's value, a slice's element, a common field's value): the reason it
#: is refused, or None.
Check = Callable[[Any], "str | None"]


class FieldKind(Enum):
    MAP = "map"
    SLICE = "slice"
    COMMON = "common"


def _any(value: Any) -> str | None:
    return None


@dataclass(frozen=True)
class FieldSpec:
    """One field the target object has: where it lives, how plugins' values combine, what a
    value (map value, slice element, or the whole common value) must look like, and how the
    merged value is normalised: ``normalise`` for a map or common value; for a slice,
    ``unique_key`` keeps one element per key (the later one, so its source stays with it) and
    sorts the elements by it."""

    field_type: FieldType
    name: str
    kind: FieldKind
    check: Check = _any
    normalise: Callable[[Any], Any] | None = None
    unique_key: Callable[[Any], Any] | None = None


class Reported(NamedTuple):
    """One plugin's fields for one object, in the plugin's order."""

    plugin: str
    fields: Sequence[ReportField]


class Rejected(NamedTuple):
    plugin: str
    field: str
    reason: str


@dataclass
class Merged:
    #: Field name -> merged value (only fields some plugin reported validly).
    values: dict[str, Any] = field(default_factory=dict)
    #: Field name -> who supplied it: {key: plugin} for a map, [plugin per element] for a
    #: slice, the plugin for a common field.
    sources: dict[str, Any] = field(default_factory=dict)
    rejected: list[Rejected] = field(default_factory=list)
    #: Field name -> what its merged value was made of (the field and each contribution's
    #: bytes, in order): equal keys, equal values, so derived forms can be cached by it.
    keys: dict[str, tuple[Any, ...]] = field(default_factory=dict)


#: What checking one field's bytes gave: its value, or why it is refused.
Checked = tuple[Any, "str | None"]


def merge(reports: Sequence[Reported], schema: Mapping[tuple[FieldType, str], FieldSpec],
          cache: dict[Any, Any] | None = None) -> Merged:
    """Merges ``reports`` (in registration order) under ``schema`` (see the module doc).

    ``cache``: shared across merges, so that the same bytes (the same capacity on thousands of
    nodes, a report unchanged since the last round) are decoded and checked once, and the same
    contributions to a field are combined and normalised once. Values in it, and so the
    values of a :class:`Merged`, are shared and never changed. The caller bounds it."""
    merged = Merged()
    contributions: dict[str, list[tuple[str, Any, bytes]]] = {}
    specs: dict[str, FieldSpec] = {}
    find_spec = schema.get
    cached = cache.get if cache is not None else None
    for plugin, fields in reports:
        for field_type, field_name, data in fields:
            spec = find_spec((field_type, field_name))
            if spec is None:
                merged.rejected.append(Rejected(plugin, field_name, f"unknown field {field_type.name.lower()}.{field_name}"))
                continue
            key = (field_type, field_name, data)
            checked = cached(key) if cached is not None else None
            if checked is None:
                checked = _check(spec, data)
                if cache is not None:
                    cache[key] = checked
            value, reason = checked
            if reason is not None:
                merged.rejected.append(Rejected(plugin, field_name, reason))
                continue
            specs[field_name] = spec
            parts = contributions.get(field_name)
            if parts is None:
                contributions[field_name] = [(plugin, value, data)]
            else:
                parts.append((plugin, value, data))
    for name, parts in contributions.items():
        spec = specs[name]
        field_key = (spec.field_type, name, *(data for _, _, data in parts))
        merged.keys[name] = field_key
        if len(parts) == 1 and spec.kind is not FieldKind.SLICE:
            # One plugin supplies the field: its value, normalised (cached by its bytes).
            plugin, value, _ = parts[0]
            normalise = spec.normalise
            if normalise is not None:
                raw = value
                value = _cached(cache, ("normalised", field_key), lambda: normalise(raw))
            merged.values[name] = value
            merged.sources[name] = {item: plugin for item in value} if spec.kind is FieldKind.MAP else plugin
            continue
        merged.values[name], merged.sources[name] = _combine(spec, parts)
    return merged


def _cached(cache: dict[Any, Any] | None, key: Any, make: Callable[[], Any]) -> Any:
    if cache is None:
        return make()
    value = cache.get(key)
    if value is None:
        value = cache[key] = make()
    return value


def _check(spec: FieldSpec, data: bytes) -> Checked:
    try:
        value = decode_value(data)
    except ValueError as err:
        return None, f"not JSON: {err}"
    return value, _shape_problem(spec, value)


def _shape_problem(spec: FieldSpec, value: Any) -> str | None:
    if spec.kind is FieldKind.MAP:
        if not isinstance(value, dict):
            return f"a map field needs a JSON object, got {_json_type(value)}"
        for key, item in value.items():
            problem = spec.check(item)
            if problem is not None:
                return f"key {key!r}: {problem}"
    elif spec.kind is FieldKind.SLICE:
        if not isinstance(value, list):
            return f"a slice field needs a JSON array, got {_json_type(value)}"
        for index, item in enumerate(value):
            problem = spec.check(item)
            if problem is not None:
                return f"element {index}: {problem}"
    else:
        return spec.check(value)
    return None


def _combine(spec: FieldSpec, parts: list[tuple[str, Any, bytes]]) -> tuple[Any, Any]:
    """The merged value of several contributions (registration order) and who supplied what."""
    if spec.kind is FieldKind.MAP:
        combined: dict[str, Any] = {}
        sources: dict[str, str] = {}
        for plugin, value, _ in parts:
            combined.update(value)
            for key in value:
                sources[key] = plugin
        if spec.normalise is not None:
            combined = spec.normalise(combined)
        return combined, {key: sources[key] for key in combined}
    if spec.kind is FieldKind.SLICE:
        pairs = [(item, plugin) for plugin, value, _ in parts for item in value]
        if spec.unique_key is not None:
            last = {spec.unique_key(item): (item, plugin) for item, plugin in pairs}  # the later wins
            pairs = [last[key] for key in sorted(last)]
        return [item for item, _ in pairs], [plugin for _, plugin in pairs]
    plugin, value, _ = parts[-1]
    return (spec.normalise(value) if spec.normalise is not None else value), plugin


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def decode_value(data: bytes) -> Any:
    """A field's JSON value (ValueError if it is not JSON); ``&{`` as in the seed's examples
    is read as ``{``."""
    text = data.decode("utf-8")
    if "&" in text:
        text = _drop_pointer_marks(text)
    return json.loads(text)


def _drop_pointer_marks(text: str) -> str:
    """Removes each ``&`` that stands, outside a JSON string, right before a ``{`` (spaces
    between allowed): Go's ``%v`` print of a pointer to a struct."""
    out: list[str] = []
    in_string = escaped = False
    length = len(text)
    for index, char in enumerate(text):
        if in_string:
            out.append(char)
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char == '"':
            in_string = True
        elif char == "&":
            following = index + 1
            while following < length and text[following] in " \t\r\n":
                following += 1
            if following < length and text[following] == "{":
                continue
        out.append(char)
    return "".join(out)
