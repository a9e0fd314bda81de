"""Guaranteed-share preemption through a served scheduler (preemption_rm.py is the embedded
RM): the REST fields while a victim is being preempted, the confirm loop, the metrics."""

from __future__ import annotations

from collections.abc import Callable

from test_role_history_http import metric
from web_helpers import Server


def test_a_starved_queue_preempts_and_rest_and_metrics_show_it(start_server: Callable[..., Server]) -> None:
    server = start_server(["--rm", "preemption_rm:attach"])
    assert sorted(server.request("POST", "/test/preempt/fill?count=2").json()) == ["busy-0", "busy-1"]
    released = server.request("POST", "/test/preempt/ask").json()
    assert len(released) == 1
    busy = server.get("/ws/v1/partition/default/queue/root.busy").json()
    assert busy["preemptingResource"] == {"vcore": 4000}
    app = server.get("/ws/v1/partition/default/application/busy").json()
    assert [a["allocationKey"] for a in app["allocations"] if a.get("preempted")] == released
    starved = server.get("/ws/v1/partition/default/application/starved").json()
    assert starved["requests"][0]["triggeredPreemption"] is True
    assert metric(server, "pyscheduler_preemption_preemptions") == 1
    assert metric(server, "pyscheduler_preemption_victims") == 1
    assert metric(server, "pyscheduler_preemption_try_latency_milliseconds_count") == 1

    assert server.request("POST", f"/test/preempt/confirm?key={released[0]}").json() == "node-1"
    assert "preemptingResource" not in server.get("/ws/v1/partition/default/queue/root.busy").json()
    app = server.get("/ws/v1/partition/default/application/busy").json()
    # The victim's resource-seconds since it was bound, by instance type (YuniKorn's history).
    assert set(app["resourceHistory"]["preemptedResource"]) == {"UNKNOWN"}
    assert set(app["resourceHistory"]["preemptedResource"]["UNKNOWN"]) == {"vcore"}
