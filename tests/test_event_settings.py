"""Tests for EventSettings.from_config: keys, aliases, zero semantics, errors."""

from __future__ import annotations

import dataclasses
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyscheduler.common.errors import ConfigError, SchedulerError
from pyscheduler.config.event_settings import EVENT_SETTING_KEYS, EventSettings

DEFAULTS = {
    "tracking_enabled": True,
    "request_events_enabled": False,
    "request_store_capacity": 1000,
    "ring_buffer_capacity": 100_000,
    "rest_response_size": 10_000,
    "max_streams": 100,
    "max_streams_per_host": 15,
}

# key -> field it sets
KEY_FIELDS = {
    "service.event.trackingEventsEnabled": "tracking_enabled",
    "event.trackingEnabled": "tracking_enabled",
    "service.event.requestEventsEnabled": "request_events_enabled",
    "service.event.requestStoreCapacity": "request_store_capacity",
    "event.requestCapacity": "request_store_capacity",
    "service.event.ringBufferCapacity": "ring_buffer_capacity",
    "event.ringBufferCapacity": "ring_buffer_capacity",
    "service.event.RESTResponseSize": "rest_response_size",
    "event.RESTResponseSize": "rest_response_size",
    "event.maxStreams": "max_streams",
    "event.maxStreamsPerHost": "max_streams_per_host",
}
BOOL_KEYS = [k for k, f in KEY_FIELDS.items() if isinstance(DEFAULTS[f], bool)]
UINT_KEYS = [k for k, f in KEY_FIELDS.items() if not isinstance(DEFAULTS[f], bool)]


def as_dict(settings: EventSettings) -> dict[str, object]:
    return dataclasses.asdict(settings)


def with_changes(**changes: object) -> dict[str, object]:
    return {**DEFAULTS, **changes}


# --- defaults ----------------------------------------------------------------


def test_defaults() -> None:
    assert as_dict(EventSettings()) == DEFAULTS


def test_empty_config_gives_defaults() -> None:
    assert EventSettings.from_config({}) == EventSettings()


def test_unknown_keys_ignored() -> None:
    extra = {
        "log.level": "DEBUG",
        "health.checkInterval": "0s",
        "service.eventChannelCapacity": "not-a-number",
        "event.ringbufferCapacity": "nonsense",  # the site docs' spelling: not a key
        "Event.maxStreams": "x",  # keys are case-sensitive
        "service.event.ringBufferCapacity ": "x",
    }
    assert EventSettings.from_config(extra) == EventSettings()


def test_settings_frozen() -> None:
    settings = EventSettings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.max_streams = 1  # type: ignore[misc]


# --- each key ----------------------------------------------------------------


@pytest.mark.parametrize("key", UINT_KEYS)
def test_each_uint_key_sets_its_field(key: str) -> None:
    field = KEY_FIELDS[key]
    assert as_dict(EventSettings.from_config({key: "1234"})) == with_changes(**{field: 1234})
    assert as_dict(EventSettings.from_config({key: "4294967295"})) == with_changes(**{field: 4294967295})


@pytest.mark.parametrize("key", BOOL_KEYS)
@pytest.mark.parametrize(
    ("raw", "expected"),
    [("1", True), ("t", True), ("T", True), ("TRUE", True), ("true", True), ("True", True),
     ("0", False), ("f", False), ("F", False), ("FALSE", False), ("false", False), ("False", False)],
)
def test_each_bool_key_takes_every_parsebool_spelling(key: str, raw: str, expected: bool) -> None:
    field = KEY_FIELDS[key]
    assert as_dict(EventSettings.from_config({key: raw})) == with_changes(**{field: expected})


def test_literal_examples() -> None:
    settings = EventSettings.from_config(
        {
            "event.trackingEnabled": "false",
            "service.event.requestEventsEnabled": "true",
            "event.requestCapacity": "50",
            "event.ringBufferCapacity": "2000",
            "event.RESTResponseSize": "300",
            "event.maxStreams": "7",
            "event.maxStreamsPerHost": "3",
        }
    )
    assert settings == EventSettings(
        tracking_enabled=False,
        request_events_enabled=True,
        request_store_capacity=50,
        ring_buffer_capacity=2000,
        rest_response_size=300,
        max_streams=7,
        max_streams_per_host=3,
    )


# --- zero semantics, per name ---------------------------------------------------


@pytest.mark.parametrize(
    ("key", "field", "expected"),
    [
        # YuniKorn's names: 0 means "use the default".
        ("event.requestCapacity", "request_store_capacity", 1000),
        ("event.ringBufferCapacity", "ring_buffer_capacity", 100_000),
        ("event.RESTResponseSize", "rest_response_size", 10_000),
        # The design's names: 0 turns the feature off...
        ("service.event.ringBufferCapacity", "ring_buffer_capacity", 0),
        ("service.event.requestStoreCapacity", "request_store_capacity", 0),
        # ...except the REST size, where 0 is the default.
        ("service.event.RESTResponseSize", "rest_response_size", 10_000),
        # Stream limits: 0 is taken literally.
        ("event.maxStreams", "max_streams", 0),
        ("event.maxStreamsPerHost", "max_streams_per_host", 0),
    ],
)
@pytest.mark.parametrize("zero", ["0", "00", "0000000000"])
def test_zero_semantics(key: str, field: str, expected: int, zero: str) -> None:
    assert getattr(EventSettings.from_config({key: zero}), field) == expected


def test_ring_zero_turns_tracking_off() -> None:
    settings = EventSettings.from_config({"service.event.ringBufferCapacity": "0"})
    assert settings.tracking_enabled is True
    assert settings.tracking_active is False
    assert EventSettings().tracking_active is True
    assert EventSettings.from_config({"event.trackingEnabled": "f"}).tracking_active is False


def test_request_store_zero_turns_request_events_off() -> None:
    on = EventSettings.from_config({"service.event.requestEventsEnabled": "true"})
    assert on.request_events_active is True
    off = EventSettings.from_config(
        {"service.event.requestEventsEnabled": "true", "service.event.requestStoreCapacity": "0"}
    )
    assert off.request_events_enabled is True
    assert off.request_events_active is False
    assert EventSettings().request_events_active is False


# --- aliases -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("seed_key", "yk_key", "seed_raw", "yk_raw"),
    [
        ("service.event.trackingEventsEnabled", "event.trackingEnabled", "true", "1"),
        ("service.event.trackingEventsEnabled", "event.trackingEnabled", "F", "false"),
        ("service.event.requestStoreCapacity", "event.requestCapacity", "500", "500"),
        ("service.event.requestStoreCapacity", "event.requestCapacity", "1000", "0"),
        ("service.event.ringBufferCapacity", "event.ringBufferCapacity", "100000", "0"),
        ("service.event.ringBufferCapacity", "event.ringBufferCapacity", "7", "007"),
        ("service.event.RESTResponseSize", "event.RESTResponseSize", "0", "0"),
        ("service.event.RESTResponseSize", "event.RESTResponseSize", "10000", "0"),
    ],
)
def test_agreeing_aliases_accepted(seed_key: str, yk_key: str, seed_raw: str, yk_raw: str) -> None:
    both = EventSettings.from_config({seed_key: seed_raw, yk_key: yk_raw})
    assert both == EventSettings.from_config({seed_key: seed_raw})
    assert both == EventSettings.from_config({yk_key: yk_raw})


@pytest.mark.parametrize(
    ("seed_key", "yk_key", "seed_raw", "yk_raw"),
    [
        ("service.event.trackingEventsEnabled", "event.trackingEnabled", "true", "false"),
        ("service.event.requestStoreCapacity", "event.requestCapacity", "500", "501"),
        # Both "0", but they mean different things under the two names.
        ("service.event.requestStoreCapacity", "event.requestCapacity", "0", "0"),
        ("service.event.ringBufferCapacity", "event.ringBufferCapacity", "0", "0"),
        ("service.event.RESTResponseSize", "event.RESTResponseSize", "5", "6"),
    ],
)
@pytest.mark.parametrize("yk_first", [False, True])
def test_conflicting_aliases_rejected(seed_key: str, yk_key: str, seed_raw: str, yk_raw: str, yk_first: bool) -> None:
    extra = {yk_key: yk_raw, seed_key: seed_raw} if yk_first else {seed_key: seed_raw, yk_key: yk_raw}
    with pytest.raises(ConfigError) as info:
        EventSettings.from_config(extra)
    message = str(info.value)
    assert f'"{seed_key}"' in message
    assert f'"{yk_key}"' in message
    assert "different values" in message
    assert info.value.key == seed_key
    assert info.value.value == seed_raw


# --- bad values ----------------------------------------------------------------


@pytest.mark.parametrize("key", UINT_KEYS)
@pytest.mark.parametrize(
    ("raw", "go_error"),
    [
        ("", 'strconv.ParseUint: parsing "": invalid syntax'),
        ("-1", 'strconv.ParseUint: parsing "-1": invalid syntax'),
        ("+1", 'strconv.ParseUint: parsing "+1": invalid syntax'),
        (" 1", 'strconv.ParseUint: parsing " 1": invalid syntax'),
        ("1_000", 'strconv.ParseUint: parsing "1_000": invalid syntax'),
        ("0x10", 'strconv.ParseUint: parsing "0x10": invalid syntax'),
        ("١٢", 'strconv.ParseUint: parsing "١٢": invalid syntax'),
        ("4294967296", 'strconv.ParseUint: parsing "4294967296": value out of range'),
    ],
)
def test_bad_uint_value_raises_config_error(key: str, raw: str, go_error: str) -> None:
    with pytest.raises(ConfigError) as info:
        EventSettings.from_config({key: raw})
    err = info.value
    assert err.key == key
    assert err.value == raw
    assert f'"{key}"' in str(err)
    assert go_error in str(err)
    assert str(err).endswith(".")
    assert isinstance(err, SchedulerError) and isinstance(err, ValueError)


@pytest.mark.parametrize("key", BOOL_KEYS)
@pytest.mark.parametrize("raw", ["", "yes", "no", "on", "tRUE", " true", "2"])
def test_bad_bool_value_raises_config_error(key: str, raw: str) -> None:
    with pytest.raises(ConfigError) as info:
        EventSettings.from_config({key: raw})
    assert info.value.key == key
    assert f'"{key}"' in str(info.value)
    assert f"strconv.ParseBool: parsing \"{raw}\": invalid syntax" in str(info.value)


def test_bad_value_message_is_a_full_sentence() -> None:
    with pytest.raises(ConfigError) as info:
        EventSettings.from_config({"event.ringBufferCapacity": "lots"})
    assert str(info.value) == (
        'Configuration key "event.ringBufferCapacity" has invalid value "lots": expected an unsigned '
        'integer from 0 to 4294967295 (strconv.ParseUint: parsing "lots": invalid syntax).'
    )


def test_non_string_value_raises_config_error() -> None:
    with pytest.raises(ConfigError) as info:
        EventSettings.from_config({"event.maxStreams": 5})  # type: ignore[dict-item]
    assert info.value.key == "event.maxStreams"
    assert '"event.maxStreams"' in str(info.value)


def test_one_bad_key_fails_the_whole_load() -> None:
    with pytest.raises(ConfigError) as info:
        EventSettings.from_config({"event.maxStreams": "5", "event.maxStreamsPerHost": "x"})
    assert info.value.key == "event.maxStreamsPerHost"


def test_config_error_pickles() -> None:
    err = ConfigError("Configuration key \"k\" is bad.", key="k", value="v")
    clone = pickle.loads(pickle.dumps(err))
    assert (str(clone), clone.key, clone.value) == (str(err), "k", "v")


# --- reload ------------------------------------------------------------------


def test_reload_starts_from_defaults() -> None:
    first = EventSettings.from_config({"event.maxStreams": "3", "event.ringBufferCapacity": "10"})
    second = EventSettings.from_config({"event.maxStreams": "4"})
    assert first.ring_buffer_capacity == 10
    assert second == EventSettings(max_streams=4)


def test_from_config_does_not_mutate_input() -> None:
    extra = {"event.maxStreams": "3"}
    EventSettings.from_config(extra)
    assert extra == {"event.maxStreams": "3"}


@given(
    st.dictionaries(
        st.sampled_from(UINT_KEYS),
        st.integers(min_value=1, max_value=2**32 - 1).map(str),
        max_size=1,
    )
)
def test_nonzero_uint_taken_verbatim(extra: dict[str, str]) -> None:
    settings = EventSettings.from_config(extra)
    for key, raw in extra.items():
        assert getattr(settings, KEY_FIELDS[key]) == int(raw)


# --- direct construction -------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_streams": -1},
        {"ring_buffer_capacity": 2**32},
        {"rest_response_size": True},
        {"request_store_capacity": 1.5},
        {"tracking_enabled": 1},
        {"request_events_enabled": "true"},
    ],
)
def test_direct_construction_validates(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        EventSettings(**kwargs)  # type: ignore[arg-type]


# --- key table -----------------------------------------------------------------


def test_key_table_covers_every_key_with_its_default() -> None:
    table = {key: default for key, default, _ in EVENT_SETTING_KEYS}
    assert set(table) == set(KEY_FIELDS)
    assert len(EVENT_SETTING_KEYS) == len(KEY_FIELDS)
    for key, default in table.items():
        expected = DEFAULTS[KEY_FIELDS[key]]
        assert default == (str(expected).lower() if isinstance(expected, bool) else str(expected))
    # A documented default, fed back in, gives the default settings.
    for key, default in table.items():
        assert EventSettings.from_config({key: default}) == EventSettings()


def test_describe_matches_table() -> None:
    assert EventSettings.describe() == list(EVENT_SETTING_KEYS)
    assert all(meaning.endswith(".") for _, _, meaning in EVENT_SETTING_KEYS)
