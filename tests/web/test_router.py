"""Router and response behaviour of the REST service, as yunikorn-core's httprouter and
middleware answer (shared/spec/yunikorn/rest.md, "Server and router behaviour")."""

from __future__ import annotations

import gzip
import http.client

import pytest

from web_helpers import Server

BATCH = "/ws/v1/events/batch"
CORS_GET = {
    "Content-Type": "application/json; charset=UTF-8",
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET, OPTIONS",
    "Access-Control-Allow-Headers": "X-Requested-With,Content-Type,Accept,Origin",
}


def assert_cors(response, methods: str = "GET, OPTIONS") -> None:
    expected = dict(CORS_GET, **{"Access-Control-Allow-Methods": methods})
    for key, value in expected.items():
        assert response.headers.get(key) == value, key


# -- redirects -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path, location",
    [
        ("/ws/v1/events/batch/", "/ws/v1/events/batch"),  # RedirectTrailingSlash
        ("/ws/v1/EVENTS/Batch", "/ws/v1/events/batch"),  # RedirectFixedPath: case
        ("/WS/V1/EVENTS/BATCH/", "/ws/v1/events/batch"),  # case and slash at once
        ("/ws/v1//events//batch", "/ws/v1/events/batch"),  # CleanPath
    ],
)
def test_get_redirects_with_301_then_200(server: Server, path: str, location: str) -> None:
    r = server.get(path)
    assert r.status_code == 301
    assert r.headers["Location"] == location
    assert r.headers["Content-Type"] == "text/html; charset=utf-8"
    assert r.text == f'<a href="{location}">Moved Permanently</a>.\n\n'
    final = server.get(path, allow_redirects=True)
    assert final.status_code == 200
    assert final.url == server.url + location


@pytest.mark.parametrize("path", ["/ws/v1/x/../events/batch", "/ws/v1/./events/batch", "/ws/v1/events/batch/."])
def test_dot_segments_are_cleaned(server: Server, path: str) -> None:
    # requests would remove dot segments itself: send the path as is.
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        r.read()
        assert r.status == 301
        assert r.getheader("Location") == "/ws/v1/events/batch"
    finally:
        conn.close()


def test_redirect_keeps_the_query_and_path_parameters_as_written(server: Server) -> None:
    start = server.add_events(2) - 2
    r = server.get(f"/ws/v1/events/batch/?count=2&start={start}")
    assert r.status_code == 301
    assert r.headers["Location"] == f"/ws/v1/events/batch?count=2&start={start}"
    assert len(server.get(r.headers["Location"]).json()["EventRecords"]) == 2
    # Static segments are fixed; parameter values keep their case.
    r = server.get("/WS/v1/Partition/MyPart/Nodes")
    assert r.status_code == 301
    assert r.headers["Location"] == "/ws/v1/partition/MyPart/nodes"


def test_non_get_redirects_use_308_without_a_body(server: Server) -> None:
    r = server.request("POST", "/ws/v1/validate-conf/", data=b"x")
    assert r.status_code == 308
    assert r.headers["Location"] == "/ws/v1/validate-conf"
    assert r.content == b""
    r = server.request("POST", "/ws/v1/VALIDATE-CONF", data=b"x")
    assert r.status_code == 308
    assert r.headers["Location"] == "/ws/v1/validate-conf"


def test_deprecated_debug_paths_answer_301(server: Server) -> None:
    for old, new in (("/ws/v1/fullstatedump", "/debug/fullstatedump"), ("/ws/v1/stack", "/debug/stack")):
        r = server.get(old)
        assert r.status_code == 301
        assert r.headers["Location"] == new
        assert r.headers["Content-Type"] == "text/html; charset=utf-8"
        assert new in r.text
    stack = server.get("/debug/stack")
    assert stack.status_code == 200
    assert "thread" in stack.text and "pyscheduler-scheduling" in stack.text


# -- 404, 405, OPTIONS ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/", "/nope", "/ws/v1", "/ws/v1/events", "/ws/v1/partition/default", "/ws/v2/clusters"])
def test_unknown_paths_are_plain_text_404(server: Server, path: str) -> None:
    r = server.get(path)
    assert r.status_code == 404
    assert r.text == "404 page not found\n"
    assert r.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert "Access-Control-Allow-Origin" not in r.headers


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "HEAD"])
def test_wrong_method_on_a_get_route_is_405_plain_text(server: Server, method: str) -> None:
    r = server.request(method, BATCH)
    assert r.status_code == 405
    assert r.headers["Allow"] == "GET, OPTIONS"
    assert r.headers["Content-Type"] == "text/plain; charset=utf-8"
    if method != "HEAD":
        assert r.text == "Method Not Allowed\n"


def test_wrong_method_on_the_post_route(server: Server) -> None:
    r = server.get("/ws/v1/validate-conf")
    assert r.status_code == 405
    assert r.headers["Allow"] == "OPTIONS, POST"
    assert r.text == "Method Not Allowed\n"


def test_wrong_method_on_an_unknown_path_is_404(server: Server) -> None:
    assert server.request("POST", "/ws/v1/nope").status_code == 404
    # A POST to a GET route's path with the wrong case: no POST route to fix it to.
    assert server.request("POST", "/ws/v1/EVENTS/batch").status_code == 404


def test_options(server: Server) -> None:
    r = server.request("OPTIONS", BATCH)
    assert r.status_code == 200
    assert r.headers["Allow"] == "GET, OPTIONS"
    assert r.content == b""
    r = server.request("OPTIONS", "/ws/v1/validate-conf")
    assert r.status_code == 200
    assert r.headers["Allow"] == "OPTIONS, POST"
    r = server.request("OPTIONS", "/ws/v1/partition/default/queue/root.a/applications")
    assert r.status_code == 200
    assert r.headers["Allow"] == "GET, OPTIONS"
    assert server.request("OPTIONS", "/nope").status_code == 404


def test_reason_phrases_are_go_s(server: Server) -> None:
    assert server.get("/ws/v1/events/batch/").reason == "Moved Permanently"
    assert server.request("POST", BATCH).reason == "Method Not Allowed"
    assert server.get("/nope").reason == "Not Found"


# -- JSON responses: headers, newline, errors ------------------------------------------------------


def test_json_responses_carry_cors_headers_and_end_with_a_newline(server: Server) -> None:
    r = server.get(BATCH + "?count=1")
    assert r.status_code == 200
    assert_cors(r)
    assert r.content.endswith(b"}\n")


def test_error_body_shape(server: Server) -> None:
    r = server.get(BATCH + "?count=0")
    assert r.status_code == 400
    assert_cors(r)
    assert r.content.endswith(b"}\n")
    assert r.json() == {
        "status_code": 400,
        "message": '0 is not a valid value for "count"',
        "description": '0 is not a valid value for "count"',
    }


def test_post_route_cors_and_non_utf8_body(server: Server) -> None:
    r = server.request("POST", "/ws/v1/validate-conf", data=b"\xff\xfe")
    assert r.status_code == 200
    assert_cors(r, "OPTIONS, POST")
    assert r.json() == {"allowed": False, "reason": "not UTF-8 text (byte 0)"}


# -- gzip ------------------------------------------------------------------------------------------


def _raw(server: Server, path: str, accept_encoding: str | None):
    headers = {"Accept-Encoding": accept_encoding if accept_encoding is not None else "identity"}
    r = server.get(path, headers=headers, stream=True)
    body = r.raw.read(decode_content=False)
    return r, body


def _recent(server: Server, count: int) -> str:
    """A batch query for the newest ``count`` events (after adding 50)."""
    next_id = server.add_events(50)
    return f"{BATCH}?start={next_id - count}&count={count}"


def test_gzip_from_1400_bytes_when_accepted(server: Server) -> None:
    small, body = _raw(server, _recent(server, 1), "gzip")
    assert len(body) < 1400
    assert "Content-Encoding" not in small.headers
    assert body.endswith(b"\n")

    query = _recent(server, 40)
    big, body = _raw(server, query, "gzip, deflate")
    assert big.headers["Content-Encoding"] == "gzip"
    assert "Accept-Encoding" in big.headers["Vary"]
    plain = gzip.decompress(body)
    assert len(plain) >= 1400 and plain.endswith(b"}\n")
    assert_cors(big)

    # Compressed or not, the same body.
    _, identity = _raw(server, query, None)
    assert identity == plain


@pytest.mark.parametrize("size, compressed", [(11, False), (1399, False), (1400, True), (1401, True), (100_000, True)])
def test_gzip_threshold_is_1400_bytes(server: Server, size: int, compressed: bool) -> None:
    r, body = _raw(server, f"/test/sized?n={size}", "gzip")
    assert (r.headers.get("Content-Encoding") == "gzip") is compressed
    assert (r.headers.get("Vary") == "Accept-Encoding") is compressed
    plain = gzip.decompress(body) if compressed else body
    assert len(plain) == size and plain.endswith(b"}\n")
    assert int(r.headers["Content-Length"]) == len(body)


@pytest.mark.parametrize("header", [None, "identity", "gzip;q=0", "deflate", "br, gzip;q=0.0"])
def test_no_gzip_unless_accepted(server: Server, header: str | None) -> None:
    r, body = _raw(server, _recent(server, 40), header)
    assert "Content-Encoding" not in r.headers
    assert len(body) >= 1400 and body.endswith(b"}\n")


def test_gzip_with_a_q_value(server: Server) -> None:
    r, body = _raw(server, _recent(server, 40), "deflate;q=1.0, gzip;q=0.5")
    assert r.headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(body).endswith(b"\n")


# -- metrics ---------------------------------------------------------------------------------------


def test_metrics_prometheus_text(server: Server) -> None:
    server.add_events(3)
    r = server.get("/ws/v1/metrics")
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("text/plain; version=")
    samples = {}
    for line in r.text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            samples[name] = float(value)
    for name in (
        "yunikorn_event_total_created",
        "yunikorn_event_total_stored",
        "yunikorn_event_total_not_channeled",
        "pyscheduler_event_ring_capacity",
        "pyscheduler_event_subscribers",
        "pyscheduler_web_event_streams",
        "pyscheduler_scheduler_cycles_total",
        "pyscheduler_scheduler_allocations_total",
        "process_cpu_seconds_total",
    ):
        assert name in samples, name
    assert samples["yunikorn_event_total_stored"] >= 3
    assert samples["pyscheduler_scheduler_allocations_total"] >= 3  # the scenario's allocations
    assert samples["pyscheduler_event_ring_capacity"] == 100_000
    assert samples["pyscheduler_web_event_streams_limit"] == 100
    # The cycle-latency histogram is fed by the running loop.
    assert samples["yunikorn_scheduler_scheduling_latency_milliseconds_count"] > 0
    assert 'yunikorn_scheduler_scheduling_latency_milliseconds_bucket{le="+Inf"}' in samples


def test_metrics_openmetrics_when_asked(server: Server) -> None:
    r = server.get("/ws/v1/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("application/openmetrics-text")
    assert r.text.rstrip().endswith("# EOF")
