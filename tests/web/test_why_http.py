"""Why, queue position and why preempted over HTTP (issue 35) through a real gunicorn with the
preemption RM embedded (preemption_rm.py): the answers' JSON (docs/design/why.md), the pending
list's paging, and YuniKorn's error body for unknown objects (404) and bad parameters (400)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from web_helpers import Server

BASE = "/ws/v1/partition/default"


def ok(server: Server, path: str) -> Any:
    r = server.get(path)
    assert r.status_code == 200, f"{path}: {r.status_code} {r.text[:300]}"
    return r.json()


def error(server: Server, path: str, status: int) -> str:
    r = server.get(path)
    assert r.status_code == status, f"{path}: {r.status_code} {r.text[:300]}"
    body = r.json()
    assert body["status_code"] == status and body["message"] == body["description"]
    return str(body["message"])


def test_why_pending_and_preempted_over_http(start_server: Callable[..., Server]) -> None:
    server = start_server(["--rm", "preemption_rm:attach"])
    assert sorted(server.request("POST", "/test/preempt/fill?count=2").json()) == ["busy-0", "busy-1"]
    running = ok(server, f"{BASE}/application/busy/why")
    assert running["asks"] == [] and running["position"] is None and running["gang"] is None
    assert running["summary"] == "no pending ask" and running["queueName"] == "root.busy"
    assert "queuePosition" not in ok(server, f"{BASE}/application/busy")

    [victim] = server.request("POST", "/test/preempt/ask").json()
    starved = ok(server, f"{BASE}/application/starved/why")
    [ask] = starved["asks"]
    assert ask["allocationKey"] == "starved-0" and ask["resource"] == {"vcore": 4000}
    assert ask["preemption"]["code"] == "PLANNED" and ask["reservation"]["nodeID"] == "node-1"
    assert ask["nodes"]["total"] == 1
    assert starved["position"]["inQueue"] == 1 and starved["position"]["partitionLength"] == 1
    only = ok(server, f"{BASE}/application/starved/why?ask=starved-0&nodes=false")
    assert [a["nodes"] for a in only["asks"]] == [None]
    assert ok(server, f"{BASE}/application/starved")["queuePosition"] == {"inQueue": 1, "inPartition": 1}
    assert ok(server, f"{BASE}/pending") == [{
        "applicationID": "starved", "queueName": "root.starved", "inQueue": 1, "inPartition": 1,
        "pending": {"vcore": 4000}, "aheadInQueue": {}}]
    assert ok(server, f"{BASE}/pending?queue=root.busy") == []
    assert ok(server, f"{BASE}/pending?limit=5&offset=1") == []

    live = ok(server, f"{BASE}/application/busy/preempted?allocationKey={victim}")
    assert live["preemptorApplicationID"] == "starved" and live["preemptorAllocationKey"] == "starved-0"
    assert live["rule"] == "GUARANTEED" and live["released"] is False and live["queueName"] == "root.busy"
    assert server.request("POST", f"/test/preempt/confirm?key={victim}").json() == "node-1"
    gone = ok(server, f"{BASE}/application/busy/preempted?allocationKey={victim}")
    assert gone["released"] is True and gone["preemptorAllocationKey"] == "starved-0" and gone["time"]

    # Unknown objects: 404; bad parameters: 400; nothing else changes.
    assert error(server, f"{BASE}/application/nope/why", 404) == "Application not found"
    assert error(server, "/ws/v1/partition/nope/application/busy/why", 404) == "Partition not found"
    assert error(server, f"{BASE}/application/busy/why?ask=nope", 404) == "Allocation ask not found"
    other = "busy-1" if victim == "busy-0" else "busy-0"
    missing = error(server, f"{BASE}/application/busy/preempted?allocationKey={other}", 404)
    assert missing.startswith("No preemption of allocation")
    assert error(server, "/ws/v1/partition/nope/pending", 404) == "Partition not found"
    assert error(server, f"{BASE}/pending?queue=root.nope", 404) == "Queue not found"
    error(server, f"{BASE}/application/busy/why?ask=%3Cscript%3E", 400)
    error(server, f"{BASE}/application/busy/why?nodes=perhaps", 400)
    assert "at most" in error(server, f"{BASE}/pending?limit=99999999", 400)
    error(server, f"{BASE}/pending?offset=-3", 400)
    error(server, f"{BASE}/pending?queue=root..x", 400)
    error(server, f"{BASE}/application/busy/preempted", 400)
    error(server, f"{BASE}/application/busy/preempted?allocationKey=a%20b", 400)
    assert ok(server, f"{BASE}/application/busy/why")["applicationState"] == "Running"
