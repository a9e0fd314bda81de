"""Gang scheduling through a served scheduler (gang_rm.py is the embedded RM): the REST fields
of a gang while its members replace their placeholders."""

from __future__ import annotations

from collections.abc import Callable

from web_helpers import Server


def test_a_gang_runs_whole_and_rest_shows_its_placeholders(start_server: Callable[..., Server]) -> None:
    server = start_server(["--rm", "gang_rm:attach"])
    # Three placeholders, two members: the gang is placed, the application runs.
    assert server.request("POST", "/test/gang/submit?size=3&members=2").json() == "Running"
    members = server.request("POST", "/test/gang/confirm").json()
    assert sorted(members) == ["member-0", "member-1"]
    app = server.get("/ws/v1/partition/default/application/job").json()
    assert app["placeholderData"] == [
        {"taskGroupName": "workers", "count": 3, "minResource": {"vcore": 1000}, "replaced": 2}]
    real = {a["allocationKey"]: a for a in app["allocations"] if not a.get("placeholder")}
    assert sorted(real) == ["member-0", "member-1"]
    assert all(a["placeholderUsed"] is True and a["taskGroupName"] == "workers" for a in real.values())
    assert [a["allocationKey"] for a in app["allocations"] if a.get("placeholder")] and app["usedResource"] == {
        "vcore": 2000}
    assert "placeholderResource" in app["resourceHistory"]
    queue = server.get("/ws/v1/partition/default/queue/root.gang").json()
    assert "allocatingAcceptedApps" not in queue  # the gang runs: nothing allocating while Accepted
