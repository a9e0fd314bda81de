"""Settings of the event system, read from YuniKorn's flat "extra config" map.

Two naming schemes are accepted for the same settings: YuniKorn core's
``event.*`` keys (what real deployments set today) and the ``service.event.*``
keys proposed by the historical-usage-tracking design. The two schemes do not
agree on what 0 means, and both meanings are kept, per key name:

* YuniKorn's ``event.requestCapacity``, ``event.ringBufferCapacity`` and
  ``event.RESTResponseSize`` treat 0 as "use the default" (YuniKorn
  compatibility).
* The design's ``service.event.ringBufferCapacity=0`` turns event collection
  off and ``service.event.requestStoreCapacity=0`` turns request events off;
  ``service.event.RESTResponseSize=0`` means the default, since a REST
  response capped at 0 events is never useful.

Values are parsed with exact ports of Go's ``strconv.ParseBool`` and
``strconv.ParseUint(s, 10, 32)``, so the same strings are accepted as by
YuniKorn. Unlike YuniKorn, which logs and falls back to the default, a bad
value is an error: :meth:`EventSettings.from_config` raises
:class:`~pyscheduler.common.errors.ConfigError` and the caller keeps its
previous settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal, cast

from pyscheduler.common.errors import ConfigError
from pyscheduler.common.goparse import NumError, go_quote, parse_bool, parse_uint

__all__ = ["EVENT_SETTING_KEYS", "EventSettings"]

_UINT32_MAX = (1 << 32) - 1

_Kind = Literal["bool", "uint32"]


@dataclass(frozen=True, slots=True)
class EventSettings:
    """Typed, immutable event-system settings.

    A new instance is built on every configuration (re)load; see
    :meth:`from_config`. Capacities are unsigned 32-bit values because that
    is the range YuniKorn parses and the range the Rust side stores.
    """

    #: Collect tracking events (ring buffer, REST, streams) at all.
    tracking_enabled: bool = True
    #: Send request events (diagnostics for pending asks) to the RM.
    request_events_enabled: bool = False
    #: Request events kept for the next publish to the RM; 0 disables them.
    request_store_capacity: int = 1000
    #: Events kept in the history ring buffer; 0 disables collection.
    ring_buffer_capacity: int = 100_000
    #: Most events returned by one REST batch response.
    rest_response_size: int = 10_000
    #: Most concurrent event streams; 0 refuses every stream.
    max_streams: int = 100
    #: Most concurrent event streams from one client host.
    max_streams_per_host: int = 15

    def __post_init__(self) -> None:
        for f in fields(self):
            _check_field_value(f.name, getattr(self, f.name), f.type)

    @property
    def tracking_active(self) -> bool:
        """Whether tracking events are collected: enabled and a non-empty ring."""
        return self.tracking_enabled and self.ring_buffer_capacity > 0

    @property
    def request_events_active(self) -> bool:
        """Whether request events reach the RM: enabled and a non-empty store."""
        return self.request_events_enabled and self.request_store_capacity > 0

    @classmethod
    def from_config(cls, extra: Mapping[str, str]) -> EventSettings:
        """Build settings from a flat configuration map.

        Every call starts from the defaults, so a key removed on reload goes
        back to its default, as in YuniKorn. Keys this class does not know
        are ignored (the map carries every other scheduler setting too).
        Raises :class:`ConfigError` if a value does not parse or if both
        names of one setting are present and resolve to different values.
        Nothing is mutated, so on error the caller's old settings stand.
        """
        chosen: dict[str, tuple[_KeyRule, str, bool | int]] = {}
        for rule in _KEY_RULES:
            if rule.key not in extra:
                continue
            raw = extra[rule.key]
            resolved = rule.resolve(raw)
            previous = chosen.get(rule.field)
            if previous is not None and previous[2] != resolved:
                raise _conflict_error(previous[0], previous[1], previous[2], rule, raw, resolved)
            chosen.setdefault(rule.field, (rule, raw, resolved))
        # Any: mypy cannot pair each field name with its own value type.
        changes: dict[str, Any] = {name: entry[2] for name, entry in chosen.items()}
        return cls(**changes)

    @staticmethod
    def describe() -> list[tuple[str, str, str]]:
        """Return ``(key, default, meaning)`` for every accepted key."""
        return list(EVENT_SETTING_KEYS)


def _check_field_value(name: str, value: object, type_name: object) -> None:
    """Reject values that cannot come from a valid configuration.

    Guards direct construction (tests, CLI, Rust handoff) with the same
    limits :meth:`EventSettings.from_config` enforces through parsing.
    """
    if type_name in (bool, "bool"):
        if not isinstance(value, bool):
            raise ConfigError(f"EventSettings.{name} must be a bool, got {value!r}.")
        return
    # bool is a subclass of int; True is not a capacity.
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _UINT32_MAX:
        raise ConfigError(
            f"EventSettings.{name} must be an integer from 0 to {_UINT32_MAX}, got {value!r}."
        )


@dataclass(frozen=True, slots=True)
class _KeyRule:
    """How one configuration key maps onto one :class:`EventSettings` field."""

    key: str
    field: str
    kind: _Kind
    #: YuniKorn-style keys where 0 is "not set": the default applies.
    zero_means_default: bool
    meaning: str

    @property
    def default(self) -> bool | int:
        """The field's default value."""
        return _DEFAULTS[self.field]

    def resolve(self, raw: str) -> bool | int:
        """Parse ``raw`` and apply this key's zero semantics."""
        if not isinstance(raw, str):
            raise ConfigError(
                f"Configuration key {go_quote(self.key)} must have a string value, "
                f"got {type(raw).__name__} {raw!r}.",
                key=self.key,
                value=str(raw),
            )
        try:
            value: bool | int = parse_bool(raw) if self.kind == "bool" else parse_uint(raw, 32)
        except NumError as exc:
            raise ConfigError(
                f"Configuration key {go_quote(self.key)} has invalid value {go_quote(raw)}: "
                f"expected {_EXPECTATIONS[self.kind]} ({exc}).",
                key=self.key,
                value=raw,
            ) from exc
        # Checked on the kind because False == 0 would otherwise match too.
        if self.kind == "uint32" and self.zero_means_default and value == 0:
            return self.default
        return value


_DEFAULTS: dict[str, bool | int] = {
    f.name: cast("bool | int", f.default) for f in fields(EventSettings)
}

_EXPECTATIONS: dict[_Kind, str] = {
    "bool": "a boolean (1, t, T, TRUE, true, True, 0, f, F, FALSE, false or False)",
    "uint32": f"an unsigned integer from 0 to {_UINT32_MAX}",
}

# Order matters twice: within a setting the design's name comes first so it
# is the one reported as `key` on a conflict, and the table order is the
# order of EVENT_SETTING_KEYS in docs and the CLI.
_KEY_RULES: tuple[_KeyRule, ...] = (
    _KeyRule(
        "service.event.trackingEventsEnabled", "tracking_enabled", "bool", zero_means_default=False,
        meaning="Collect tracking events (history ring buffer, REST batch, streams).",
    ),
    _KeyRule(
        "event.trackingEnabled", "tracking_enabled", "bool", zero_means_default=False,
        meaning="YuniKorn name of service.event.trackingEventsEnabled.",
    ),
    _KeyRule(
        "service.event.requestEventsEnabled", "request_events_enabled", "bool", zero_means_default=False,
        meaning="Send request events (why an ask is pending) to the resource manager.",
    ),
    _KeyRule(
        "service.event.requestStoreCapacity", "request_store_capacity", "uint32", zero_means_default=False,
        meaning="Request events held between publishes to the RM; 0 turns request events off.",
    ),
    _KeyRule(
        "event.requestCapacity", "request_store_capacity", "uint32", zero_means_default=True,
        meaning="YuniKorn name of service.event.requestStoreCapacity; 0 means the default.",
    ),
    _KeyRule(
        "service.event.ringBufferCapacity", "ring_buffer_capacity", "uint32", zero_means_default=False,
        meaning="Events kept in the history ring buffer; 0 turns event collection off.",
    ),
    _KeyRule(
        "event.ringBufferCapacity", "ring_buffer_capacity", "uint32", zero_means_default=True,
        meaning="YuniKorn name of service.event.ringBufferCapacity; 0 means the default.",
    ),
    _KeyRule(
        "service.event.RESTResponseSize", "rest_response_size", "uint32", zero_means_default=True,
        meaning="Most events in one REST batch response; 0 means the default.",
    ),
    _KeyRule(
        "event.RESTResponseSize", "rest_response_size", "uint32", zero_means_default=True,
        meaning="YuniKorn name of service.event.RESTResponseSize; 0 means the default.",
    ),
    _KeyRule(
        "event.maxStreams", "max_streams", "uint32", zero_means_default=False,
        meaning="Most concurrent event streams; 0 refuses every stream.",
    ),
    _KeyRule(
        "event.maxStreamsPerHost", "max_streams_per_host", "uint32", zero_means_default=False,
        meaning="Most concurrent event streams from one client host.",
    ),
)


def _format_default(value: bool | int) -> str:
    """Render a default the way it would be written in the config map."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


#: ``(key, default, meaning)`` for every accepted key, for docs and the CLI.
EVENT_SETTING_KEYS: tuple[tuple[str, str, str], ...] = tuple(
    (rule.key, _format_default(rule.default), rule.meaning) for rule in _KEY_RULES
)


def _conflict_error(
    first: _KeyRule,
    first_raw: str,
    first_value: bool | int,
    second: _KeyRule,
    second_raw: str,
    second_value: bool | int,
) -> ConfigError:
    """Build the error for two names of one setting that disagree."""
    return ConfigError(
        f"Configuration keys {go_quote(first.key)} (value {go_quote(first_raw)}, "
        f"which resolves to {_format_default(first_value)}) and {go_quote(second.key)} "
        f"(value {go_quote(second_raw)}, which resolves to {_format_default(second_value)}) "
        "set the same setting to different values; remove one of them or make them agree.",
        key=first.key,
        value=first_raw,
    )
