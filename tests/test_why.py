"""Why is it pending (issue 35) through the RM interface: a pending ask for each cause gets that
cause first, with its numbers (pyscheduler.dao.why, docs/design/why.md); the nodes grouped by
their first refusal; queue position in the leaf and partition; asking changes nothing. The
random test with its own checker is test_why_random.py."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pytest
from rm_helpers import World, check_invariants, res
from scheduling_helpers import config

from pyscheduler.dao import BadRequest, NotFound
from pyscheduler.dao.applications import application, applications_by_state
from pyscheduler.dao.queue_position import pending_applications
from pyscheduler.dao.statedump import fullstatedump
from pyscheduler.dao.why import why
from pyscheduler.policies.role_history import HISTORY_KEY_TAG, ROLE_TAG
from pyscheduler.scheduler.cycle import SchedulingCycle
from pyscheduler.si import messages as si
from pyscheduler.si.vocabulary import APP_TAG_CLUSTERS, APP_TAG_TOPOLOGY_REQUIRED, CLUSTER_ATTRIBUTE

QUEUES = """\
          - name: a
            resources:
              max: {memory: 100, vcore: 10}
          - name: p
            parent: true
            resources:
              max: {memory: 150}
            queues:
              - name: c1
              - name: c2
          - name: u
            limits:
              - limit: alice in u
                users: [alice]
                maxresources: {memory: 80}
              - limit: dev in u
                groups: [dev]
                maxresources: {memory: 120}
          - name: b
          - name: gang
            properties: {application.sort.policy: fifo}
"""
RACK = "example.com/rack"


@pytest.fixture
def w() -> Iterator[World]:
    made = World(config(QUEUES))
    yield made
    check_invariants(made.context)
    made.close()


def run(w: World, cycles: int = 20) -> None:
    cycle = SchedulingCycle(w.context)
    for _ in range(cycles):
        if not cycle.run():
            return


def app(w: World, app_id: str, queue: str, user: str = "alice", groups: tuple[str, ...] = (),
        **tags: str) -> None:
    w.add_app(app_id, queue, user=user, groups=groups, tags=tags)


def answer(w: World, app_id: str, **kwargs: Any) -> dict[str, Any]:
    return why(w.context, "default", app_id, **kwargs)


def ask_answer(w: World, app_id: str, key: str) -> dict[str, Any]:
    [one] = [a for a in answer(w, app_id)["asks"] if a["allocationKey"] == key]
    return one


def placed(w: World, app_id: str, key: str, resource: dict[str, int]) -> None:
    w.ask(key, app_id, res(**resource))
    run(w)
    assert key in w.app(app_id).allocations


# -- quotas --------------------------------------------------------------------------------------


def test_queue_max_names_the_leaf_and_its_numbers(w: World) -> None:
    w.add_node("n1", memory=10_000, vcore=1000)
    app(w, "job", "root.a")
    placed(w, "job", "k1", {"memory": 60, "vcore": 1})
    w.ask("k2", "job", res(memory=60, vcore=1))
    run(w)
    got = answer(w, "job")
    [one] = got["asks"]
    assert one["code"] == "QUEUE_MAX"
    assert one["details"] == {"queue": "root.a", "max": {"memory": 100, "vcore": 10_000},
                              "used": {"memory": 60, "vcore": 1}, "headroom": {"memory": 40, "vcore": 9999}}
    assert got["summary"].startswith("1 of 1 asks wait: queue root.a has no room for it")
    # The nodes would take it: the grouping says so.
    assert one["nodes"] == {"total": 1, "fit": 1, "refusals": []}


def test_parent_max_names_the_parent_that_binds(w: World) -> None:
    w.add_node("n1", memory=10_000, vcore=1000)
    app(w, "one", "root.p.c1")
    app(w, "two", "root.p.c2")
    placed(w, "one", "k1", {"memory": 100})
    placed(w, "two", "k2", {"memory": 40})
    w.ask("k3", "one", res(memory=20))
    one = ask_answer(w, "one", "k3")
    assert one["code"] == "PARENT_MAX"
    assert one["details"]["queue"] == "root.p"
    assert one["details"]["used"]["memory"] == 140 and one["details"]["headroom"] == {"memory": 10}


def test_user_limit_and_group_limit(w: World) -> None:
    w.add_node("n1", memory=10_000, vcore=1000)
    app(w, "alice-job", "root.u")
    placed(w, "alice-job", "k1", {"memory": 60})
    w.ask("k2", "alice-job", res(memory=30))
    one = ask_answer(w, "alice-job", "k2")
    assert one["code"] == "USER_LIMIT"
    assert one["details"] == {"queue": "root.u", "user": "alice", "limit": {"memory": 80},
                              "used": {"memory": 60}, "headroom": {"memory": 20}}
    app(w, "bob-job", "root.u", user="bob", groups=("dev",))
    placed(w, "bob-job", "b1", {"memory": 100})
    w.ask("b2", "bob-job", res(memory=30))
    one = ask_answer(w, "bob-job", "b2")
    assert one["code"] == "GROUP_LIMIT"
    assert one["details"]["group"] == "dev" and one["details"]["limit"] == {"memory": 120}
    assert one["details"]["used"] == {"memory": 100} and one["details"]["headroom"] == {"memory": 20}


# -- gangs -----------------------------------------------------------------------------------------


def gang(w: World, app_id: str, members: int, vcore: int = 1000, **tags: str) -> None:
    w.apps(si.AddApplicationRequest(
        application_id=app_id, queue_name="root.gang", partition_name="default", ugi=si.UserGroupInformation(user="u"),
        tags=tags, placeholder_ask=res(vcore=vcore * members)))
    for i in range(members):
        w.ask(f"{app_id}-ph{i}", app_id, res(vcore=vcore), placeholder=True, task_group_name="tg")


def test_a_member_of_a_reserving_gang_and_a_member_waiting_for_its_placeholder(w: World) -> None:
    w.add_node("n1", memory=1000, vcore=1000)
    w.add_node("n2", memory=1000, vcore=1000)
    app(w, "filler", "root.b")
    w.ask("fill", "filler", res(vcore=1000), node_id="n2")  # a running pod the RM reports
    gang(w, "job", 2)
    w.ask("real-0", "job", res(vcore=1000), task_group_name="tg")
    run(w)
    got = answer(w, "job")
    assert got["gang"] == {"style": "Soft", "placeholderAsk": {"vcore": 2000}, "placeholdersPlaced": 1,
                           "placeholdersPending": 1, "state": "RESERVING"}
    codes = {a["allocationKey"]: a for a in got["asks"]}
    assert codes["real-0"]["code"] == "GANG_RESERVING"
    assert codes["real-0"]["details"] == {"placed": 1, "pending": 1}
    [pending_ph] = [k for k in codes if k != "real-0"]
    # Root's max is the cluster's size, which the filler and the first placeholder use up.
    assert codes[pending_ph]["code"] == "PARENT_MAX" and codes[pending_ph]["details"]["queue"] == "root"
    assert codes[pending_ph]["nodes"]["refusals"] == [{"code": "INSUFFICIENT", "resource": "vcore", "count": 2}]
    # Room for the second placeholder: the gang is placed, the member waits for a placeholder.
    w.release("filler", "fill")
    SchedulingCycle(w.context).run()  # one placement: the second placeholder
    assert not [a for a in w.app("job").asks.values() if a.placeholder]
    one = ask_answer(w, "job", "real-0")
    assert one["code"] == "WAITING_FOR_PLACEHOLDER"
    assert one["details"]["placeholder"] in {"job-ph0", "job-ph1"}
    assert one["waitsFor"] == {"kind": "PLACEHOLDER", "target": one["details"]["placeholder"]}
    assert answer(w, "job")["gang"]["state"] == "REPLACING"


# -- nodes -----------------------------------------------------------------------------------------


def test_required_node_names_the_node_and_the_rm_reason(w: World) -> None:
    w.add_node("n1", memory=100, vcore=100)
    w.add_node("n2", memory=100, vcore=100)
    app(w, "ds", "root.b")
    w.ask("fill", "ds", res(memory=90), allocation_tags={si.TAG_REQUIRED_NODE: "n1"})
    run(w)
    w.ask("pod", "ds", res(memory=20), allocation_tags={si.TAG_REQUIRED_NODE: "n1"})
    run(w)
    one = ask_answer(w, "ds", "pod")
    assert one["code"] == "REQUIRED_NODE"
    assert one["details"]["nodeID"] == "n1" and "not enough room" in one["details"]["reason"]
    w.ask("pod2", "ds", res(memory=5), allocation_tags={si.TAG_REQUIRED_NODE: "n2"})
    w.rm.set_predicates(lambda key, node, allocate: "node(s) had untolerated taint {gpu: true}"
                        if key == "pod2" else None)
    one = ask_answer(w, "ds", "pod2")
    assert one["code"] == "REQUIRED_NODE"
    assert one["details"] == {"nodeID": "n2", "reason": "node(s) had untolerated taint {gpu: true}"}


def test_no_node_fits_counts_each_nodes_first_refusal(w: World) -> None:
    for i in range(3):
        w.add_node(f"small-cpu-{i}", memory=1000, vcore=1)
    for i in range(2):
        w.add_node(f"small-mem-{i}", memory=10, vcore=100)
    w.node("drained", si.NodeAction.CREATE_DRAIN, res(memory=1000, vcore=100))
    app(w, "job", "root.b")
    w.ask("big", "job", res(memory=500, vcore=50))
    run(w)
    one = ask_answer(w, "job", "big")
    assert one["code"] == "NO_NODE_FITS"
    assert one["nodes"] == {"total": 6, "fit": 0, "refusals": [
        {"code": "INSUFFICIENT", "resource": "vcore", "count": 3},
        {"code": "INSUFFICIENT", "resource": "memory", "count": 2},
        {"code": "UNSCHEDULABLE", "count": 1},
    ]}
    assert any(entry["count"] >= 1 for entry in one["log"])  # the cycle's own failures, with counts


def test_predicates_group_the_rm_reasons_and_identical_asks_share_one_scan(w: World) -> None:
    reasons = {"n0": "taint gpu", "n1": "taint gpu", "n2": "anti-affinity", "n3": "anti-affinity", "n4": "taint gpu"}
    for node_id in reasons:
        w.add_node(node_id, memory=1000, vcore=100)
    w.rm.set_predicates(lambda key, node, allocate: reasons[node])
    app(w, "job", "root.b")
    for i in range(10):
        w.ask(f"pod-{i}", "job", res(memory=10, vcore=1))
    run(w)
    w.rm.clear()
    got = answer(w, "job")
    assert {a["code"] for a in got["asks"]} == {"PREDICATES"}
    assert got["asks"][0]["nodes"] == {"total": 5, "fit": 0, "refusals": [
        {"code": "PREDICATE", "reason": "taint gpu", "count": 3},
        {"code": "PREDICATE", "reason": "anti-affinity", "count": 2},
    ]}
    calls = w.rm.predicate_calls
    assert len(calls) == 5 and all(not c.allocate for c in calls)  # one scan for ten asks alike
    # nodes=false: no grouping in the answer, the same codes.
    cheap = answer(w, "job", nodes="false")
    assert {a["code"] for a in cheap["asks"]} == {"PREDICATES"} and cheap["asks"][0]["nodes"] is None


def test_reserved_names_the_node_it_holds(w: World) -> None:
    w.add_node("n1", memory=1000, vcore=100)
    w.add_node("n2", memory=1000, vcore=100)
    app(w, "busy", "root.b")
    w.ask("b1", "busy", res(memory=600), node_id="n1")
    w.ask("b2", "busy", res(memory=700), node_id="n2")
    app(w, "job", "root.b")
    w.ask("big", "job", res(memory=500))
    w.advance(3)  # past the reservation delay
    run(w)
    held = w.partition().reservations.by_key["big"].node_id
    one = ask_answer(w, "job", "big")
    assert one["code"] == "RESERVED" and one["details"] == {"nodeID": held}
    assert one["reservation"]["nodeID"] == held
    assert one["nodes"]["fit"] == 0


def test_role_history_node_with_its_deadline(w: World) -> None:
    for i in range(3):
        w.add_node(f"node-{i}", memory=1000, vcore=100)
    w.add_app("app-1", "root.b", tags={HISTORY_KEY_TAG: "svc"})
    w.ask("db-first", "app-1", {"memory": 100, "vcore": 1}, allocation_tags={ROLE_TAG: "db"})
    run(w)
    node = w.app("app-1").allocations["db-first"].node_id
    w.remove_app("app-1")
    w.add_app("filler", "root.b")
    w.ask("fill", "filler", {"memory": 950, "vcore": 1}, allocation_tags={si.TAG_REQUIRED_NODE: node})
    run(w)
    w.add_app("app-2", "root.b", tags={HISTORY_KEY_TAG: "svc", "pyscheduler.io/role-history.placement-timeout": "10s"})
    w.ask("db-0", "app-2", {"memory": 100, "vcore": 1}, allocation_tags={ROLE_TAG: "db"})
    run(w)
    one = ask_answer(w, "app-2", "db-0")
    assert one["code"] == "ROLE_HISTORY_NODE"
    assert one["details"]["nodeID"] == node and one["details"]["role"] == "db"
    until = datetime.datetime.strptime(one["details"]["until"], "%Y-%m-%dT%H:%M:%SZ")
    until = until.replace(tzinfo=datetime.timezone.utc)
    now = w.clock.now_ns() / 1e9
    assert 9 <= until.timestamp() - now <= 11
    assert one["waitsFor"] == {"kind": "ROLE_HISTORY_NODE", "target": node}


def test_topology_domain_names_the_level_the_need_and_the_largest_free_domain() -> None:
    made = World(config(QUEUES, policy="binpacking", partition_extra=f"    topology: {{levels: [{RACK}]}}\n"))
    try:
        for rack in ("r1", "r2"):
            for i in range(4):
                made.add_node(f"{rack}-n{i}", memory=1_000_000, vcore=1000, **{RACK: rack})
        made.add_app("busy", "root.b")
        made.ask("busy-1", "busy", res(vcore=1000), node_id="r1-n0")
        made.ask("busy-2", "busy", res(vcore=1000), node_id="r2-n0")
        gang(made, "job", 4, **{APP_TAG_TOPOLOGY_REQUIRED: RACK})
        run(made)
        before = fullstatedump(made.context)
        got = answer(made, "job")
        assert fullstatedump(made.context) == before
        codes = {a["code"] for a in got["asks"]}
        assert codes == {"TOPOLOGY_DOMAIN"}
        details = got["asks"][0]["details"]
        assert details["level"] == RACK and details["need"] == {"vcore": 4000}
        assert details["largestFree"]["domain"] in {"r1", "r2"}
        assert details["largestFree"]["available"]["vcore"] == 3000
        assert made.app("job").topology_domain == ""  # asking pinned nothing
    finally:
        made.close()


def test_member_cluster_when_no_cluster_is_allowed(w: World) -> None:
    w.add_node("east-1", memory=1000, vcore=1000, **{CLUSTER_ATTRIBUTE: "east"})
    app(w, "job", "root.b", **{APP_TAG_CLUSTERS: "west"})
    w.ask("pod", "job", res(vcore=100))
    run(w)
    one = ask_answer(w, "job", "pod")
    assert one["code"] == "MEMBER_CLUSTER"
    assert "no member cluster matches" in one["details"]["reason"]


def test_an_application_placed_in_a_member_cluster_sees_the_others_nodes_outside_its_scope(w: World) -> None:
    w.add_node("east-1", memory=1000, vcore=1000, **{CLUSTER_ATTRIBUTE: "east"})
    for i in range(2):
        w.add_node(f"west-{i}", memory=1000, vcore=1000, **{CLUSTER_ATTRIBUTE: "west"})
    app(w, "job", "root.b", **{APP_TAG_CLUSTERS: "east"})
    placed(w, "job", "first", {"vcore": 1000})
    assert w.app("job").member_cluster == "east"
    w.ask("second", "job", res(vcore=1000))
    one = ask_answer(w, "job", "second")
    assert one["code"] == "NO_NODE_FITS"
    assert one["nodes"] == {"total": 3, "fit": 0, "refusals": [
        {"code": "OUTSIDE_SCOPE", "count": 2}, {"code": "INSUFFICIENT", "resource": "vcore", "count": 1}]}


# -- order -----------------------------------------------------------------------------------------


def test_fair_share_order_position_third_of_three_two_ahead(w: World) -> None:
    w.add_node("n1", memory=1000, vcore=100)
    for i in range(3):
        app(w, f"job-{i}", "root.b")
        w.ask(f"k{i}", f"job-{i}", res(memory=1000, vcore=10))
        w.advance(1)  # submission order
    first, third = answer(w, "job-0"), answer(w, "job-2")
    assert first["asks"][0]["code"] == "NONE"
    one = third["asks"][0]
    assert one["code"] == "FAIR_SHARE_ORDER"
    assert one["details"] == {"queue": "root.b", "ahead": 2, "aheadNeed": {"memory": 2000, "vcore": 20}}
    assert one["message"].startswith("3rd of 3 applications in root.b, 2 ahead need")
    assert third["position"] == {"inQueue": 3, "queueLength": 3, "aheadInQueue": {"memory": 2000, "vcore": 20},
                                 "inPartition": 3, "partitionLength": 3}
    assert application(w.context, "default", "job-2")["queuePosition"] == {"inQueue": 3, "inPartition": 3}
    listed_apps = applications_by_state(w.context, "default", "active")
    in_queue = {a["applicationID"]: a["queuePosition"]["inQueue"] for a in listed_apps}
    assert in_queue == {"job-0": 1, "job-1": 2, "job-2": 3}
    listed = pending_applications(w.context, "default")
    assert [p["applicationID"] for p in listed] == ["job-0", "job-1", "job-2"]
    assert pending_applications(w.context, "default", limit="1", offset="1")[0]["applicationID"] == "job-1"
    assert pending_applications(w.context, "default", queue="root.a") == []
    with pytest.raises(BadRequest):
        pending_applications(w.context, "default", limit="100000")
    with pytest.raises(BadRequest):
        pending_applications(w.context, "default", offset="-1")
    with pytest.raises(NotFound):
        pending_applications(w.context, "default", queue="root.nope")


def test_queue_position_follows_the_fair_order_of_parents(w: World) -> None:
    """root.b is used more than root.a (fair share): root.a's application comes first in the
    partition although it was submitted last."""
    w.add_node("n1", memory=100_000, vcore=10_000)
    app(w, "b-running", "root.b")
    placed(w, "b-running", "r", {"memory": 5000})
    app(w, "b-next", "root.b")
    w.ask("bn", "b-next", res(memory=10))
    w.advance(1)
    app(w, "a-next", "root.a")
    w.ask("an", "a-next", res(memory=10))
    order = [p["applicationID"] for p in pending_applications(w.context, "default")]
    assert order == ["a-next", "b-next"]
    SchedulingCycle(w.context).run()
    assert "an" in w.app("a-next").allocations  # the cycle agrees


# -- bad input, nothing changes ------------------------------------------------------------------------


def test_unknown_and_malformed_requests(w: World) -> None:
    w.add_node("n1", memory=1000, vcore=100)
    app(w, "job", "root.b")
    w.ask("k", "job", res(memory=10))
    with pytest.raises(NotFound):
        answer(w, "nope")
    with pytest.raises(NotFound):
        answer(w, "job", ask="other")
    with pytest.raises(NotFound):
        why(w.context, "nope", "job")
    with pytest.raises(BadRequest):
        answer(w, "job", ask="bad key<script>")
    with pytest.raises(BadRequest):
        answer(w, "job", nodes="maybe")
    assert [a["allocationKey"] for a in answer(w, "job", ask="k")["asks"]] == ["k"]


def test_asking_changes_nothing(w: World) -> None:
    for i in range(3):
        w.add_node(f"node-{i}", memory=1000, vcore=100)
    w.add_node("east-1", memory=1000, vcore=100, **{CLUSTER_ATTRIBUTE: "east"})
    app(w, "alice-job", "root.u", **{HISTORY_KEY_TAG: "svc"})
    placed(w, "alice-job", "k1", {"memory": 60})
    w.ask("k2", "alice-job", res(memory=30), allocation_tags={ROLE_TAG: "db"})
    gang(w, "job", 3, vcore=100)
    w.ask("real", "job", res(vcore=100), task_group_name="tg")
    app(w, "big", "root.b")
    w.ask("huge", "big", res(memory=5000))
    w.advance(5)
    run(w)
    w.rm.set_predicates(lambda key, node, allocate: "nope" if node == "node-2" else None)
    before, mark = fullstatedump(w.context), w.mark()
    reservations = dict(w.partition().reservations.by_key)
    for app_id in sorted(w.partition().applications):
        answer(w, app_id)
        application(w.context, "default", app_id)
    pending_applications(w.context, "default")
    assert fullstatedump(w.context) == before
    assert w.mark() == mark  # no event
    assert w.partition().reservations.by_key == reservations
