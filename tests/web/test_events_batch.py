"""``GET /ws/v1/events/batch`` (shared/spec/yunikorn/events.md, "REST: /ws/v1/events/batch")."""

from __future__ import annotations

import json

import pytest

from web_helpers import Server

BATCH = "/ws/v1/events/batch"


def batch(server: Server, query: str = "") -> dict:
    r = server.get(BATCH + (f"?{query}" if query else ""))
    assert r.status_code == 200, r.text
    assert r.content.endswith(b"}\n")
    return r.json()


def test_shape_and_defaults(server: Server) -> None:
    next_id = server.add_events(5)
    lowest = server.state()["id_range"][0]
    body = batch(server)
    assert list(body) == ["InstanceUUID", "LowestID", "HighestID", "EventRecords"]
    assert body["LowestID"] == lowest
    assert body["HighestID"] == next_id - 1
    # start 0, count = event.RESTResponseSize (10000): everything held so far.
    records = body["EventRecords"]
    if lowest == 0:
        assert len(records) == min(next_id, 10_000)
        # The scenario's registration comes first: the queues, then the nodes.
        assert records[0] == {"type": 4, "objectID": "root", "timestampNano": records[0]["timestampNano"],
                              "eventChangeType": 2, "resource": {}}
    last = batch(server, f"start={next_id - 1}")["EventRecords"][0]
    assert last["objectID"] == "root" and last["message"] == "test event 4"
    assert last["resource"] == {"resources": {"memory": {"value": 4}}}
    assert body["InstanceUUID"] == batch(server, "count=1")["InstanceUUID"]


def test_start_and_count(server: Server) -> None:
    next_id = server.add_events(10)
    body = batch(server, f"start={next_id - 10}&count=3")
    assert [r["message"] for r in body["EventRecords"]] == ["test event 0", "test event 1", "test event 2"]
    assert body["HighestID"] == next_id - 1, "HighestID is the ring's, not the response's"
    # Past the newest event the records stop there.
    body = batch(server, f"start={next_id - 2}&count=50")
    assert [r["message"] for r in body["EventRecords"]] == ["test event 8", "test event 9"]


def test_start_out_of_range_gives_null_records_and_the_range(server: Server) -> None:
    next_id = server.add_events(1)
    r = server.get(f"{BATCH}?start={next_id + 100}")
    assert r.status_code == 200
    assert b'"EventRecords":null' in r.content
    body = r.json()
    assert body["EventRecords"] is None
    assert [body["LowestID"], body["HighestID"]] == [server.state()["id_range"][0], next_id - 1]
    # The largest uint64 parses (and is out of range).
    assert batch(server, f"start={2**64 - 1}")["EventRecords"] is None


def test_count_is_clamped_to_the_rest_response_size(restore_settings: Server) -> None:
    server = restore_settings
    server.add_events(30)
    assert server.settings(**{"event.RESTResponseSize": "7"})["rest_response_size"] == 7
    assert len(batch(server)["EventRecords"]) == 7, "the default count is RESTResponseSize"
    assert len(batch(server, "count=100")["EventRecords"]) == 7, "larger counts are clamped"
    assert len(batch(server, "count=3")["EventRecords"]) == 3
    server.settings()
    assert len(batch(server, "count=20")["EventRecords"]) == 20


@pytest.mark.parametrize(
    "query, message",
    [
        ("count=0", '0 is not a valid value for "count"'),
        ("count=-1", 'strconv.ParseUint: parsing "-1": invalid syntax'),
        ("count=abc", 'strconv.ParseUint: parsing "abc": invalid syntax'),
        ("count=1.5", 'strconv.ParseUint: parsing "1.5": invalid syntax'),
        ("count=%201", 'strconv.ParseUint: parsing " 1": invalid syntax'),
        ("count=18446744073709551616", 'strconv.ParseUint: parsing "18446744073709551616": value out of range'),
        ("start=-1", 'strconv.ParseUint: parsing "-1": invalid syntax'),
        ("start=x&count=5", 'strconv.ParseUint: parsing "x": invalid syntax'),
        ("count=0&start=x", '0 is not a valid value for "count"'),  # count is checked first
    ],
)
def test_bad_parameters_are_400(server: Server, query: str, message: str) -> None:
    r = server.get(f"{BATCH}?{query}")
    assert r.status_code == 400
    assert r.json() == {"status_code": 400, "message": message, "description": message}
    assert r.headers["Access-Control-Allow-Origin"] == "*"


def test_empty_parameters_mean_the_defaults(server: Server) -> None:
    body = batch(server, "count=&start=")
    assert body["LowestID"] == server.state()["id_range"][0]
    assert body["EventRecords"] is None or len(body["EventRecords"]) >= 1


def test_tracking_disabled_is_500(restore_settings: Server) -> None:
    server = restore_settings
    assert server.settings(**{"event.trackingEnabled": "false"})["tracking"] is False
    for query in ("", "count=0", "count=abc"):  # checked before the parameters
        r = server.get(f"{BATCH}?{query}")
        assert r.status_code == 500
        assert r.json() == {
            "status_code": 500,
            "message": "Event tracking is disabled",
            "description": "Event tracking is disabled",
        }
    server.settings()
    assert server.get(BATCH).status_code == 200


def test_body_is_the_event_store_s_bytes(server: Server) -> None:
    """The handler sends the store's body untouched: compact JSON, Go's key order."""
    server.add_events(2)
    raw = server.get(f"{BATCH}?count=2").content
    assert raw.startswith(b'{"InstanceUUID":"')
    assert b": " not in raw and b", " not in raw
    assert json.loads(raw)["EventRecords"][0]["type"] == 4
