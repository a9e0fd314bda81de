"""The serving worker's pure helpers (issue 31): what it reads from a request head before a
thread serves it, and gunicorn's error page turned into YuniKorn's JSON error."""

from __future__ import annotations

import json

from gunicorn import util

from pyscheduler_web.worker import _as_json_error, _CapturedWrite, _expectation, _headers, _is_health_check


def _error_body(answer: bytes) -> tuple[bytes, dict[str, object]]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return head, json.loads(body)


def test_gunicorn_s_error_page_becomes_a_json_error_with_its_status_and_message() -> None:
    page = _CapturedWrite()
    util.write_error(page, 400, "Bad Request", "Invalid Request Line 'GET /x?q=\u00c3\u00a9 HTTP/1.1' <&>")
    head, body = _error_body(_as_json_error(page.data))
    assert head.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert b"Content-Type: application/json; charset=UTF-8" in head
    assert body == {"status_code": 400, "message": "Invalid Request Line 'GET /x?q=\u00c3\u00a9 HTTP/1.1' <&>",
                    "description": "Invalid Request Line 'GET /x?q=\u00c3\u00a9 HTTP/1.1' <&>"}
    # No message (gunicorn's 500): the reason stands for it.
    page = _CapturedWrite()
    util.write_error(page, 500, "Internal Server Error", "")
    assert _error_body(_as_json_error(page.data))[1]["message"] == "Internal Server Error"
    # Anything unrecognised is still a JSON error.
    assert _error_body(_as_json_error(b"garbage"))[1]["status_code"] == 500


def test_the_health_check_is_recognised_by_its_request_line_only() -> None:
    assert _is_health_check(b"GET /ws/v1/scheduler/healthcheck HTTP/1.1")
    assert _is_health_check(b"GET /ws/v1/scheduler/healthcheck?x=1 HTTP/1.0")
    assert not _is_health_check(b"POST /ws/v1/scheduler/healthcheck HTTP/1.1")
    assert not _is_health_check(b"GET /ws/v1/scheduler/healthcheck/ HTTP/1.1")
    assert not _is_health_check(b"GET /ws/v1/scheduler/healthcheckx HTTP/1.1")


def test_expectations() -> None:
    def expect(line: bytes, value: bytes | None) -> str | None:
        head = line + (b"\r\nExpect: " + value if value is not None else b"") + b"\r\nHost: x"
        return _expectation(line, _headers(head))

    assert expect(b"POST / HTTP/1.1", None) is None
    assert expect(b"POST / HTTP/1.1", b"100-Continue") == "continue"
    assert expect(b"POST / HTTP/1.0", b"100-continue") is None  # ignored in HTTP/1.0 (RFC 9110)
    assert expect(b"POST / HTTP/1.1", b"200-maybe") == "unknown"
