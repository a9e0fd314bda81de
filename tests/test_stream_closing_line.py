"""The event stream's closing line, defined once in Rust (``rust/stream``) and given to Python by
the native module: YuniKorn's in-band ``YAPIError`` with status 200, one NDJSON line. The web
layer writes the same bytes where it writes a body itself (``pyscheduler_web.streams``)."""

from __future__ import annotations

import json

import pytest

from pyscheduler import _native


def test_the_closing_line_is_yunikorns_yapierror_with_status_200() -> None:
    line = _native.closing_line("the consumer fell behind")
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == {
        "status_code": 200,
        "message": "Event stream was closed by the producer",
        "description": "the consumer fell behind",
    }
    # Field order as YuniKorn's encoder writes the struct.
    assert line.startswith(b'{"status_code":200,"message":"Event stream was closed by the producer","description":')


def test_an_empty_description_is_the_message() -> None:
    assert json.loads(_native.closing_line(""))["description"] == _native.CLOSED_BY_PRODUCER


def test_the_constants_are_the_lines_message_and_the_shutdown_description() -> None:
    assert _native.CLOSED_BY_PRODUCER == "Event stream was closed by the producer"
    assert _native.RELEASED_DESCRIPTION == "the scheduler is shutting down"
    assert json.loads(_native.closing_line(_native.RELEASED_DESCRIPTION))["description"] == _native.RELEASED_DESCRIPTION


@pytest.mark.parametrize("description", ['say "hi"\\ now', "tab\there\nnewline", "caf\u00e9 \u2603 \U0001f600", "\x00\x1f"])
def test_a_description_is_escaped_as_json(description: str) -> None:
    assert json.loads(_native.closing_line(description))["description"] == description


def test_the_web_layer_reexports_the_native_line() -> None:
    streams = pytest.importorskip("pyscheduler_web.streams")
    assert streams.closing_line is _native.closing_line
    assert streams.CLOSED_BY_PRODUCER == _native.CLOSED_BY_PRODUCER
