"""What-if (issue 35, docs/whatif.md) through the RM interface: the answer for an application on
a copy of a partition, the live core left untouched, and agreement with what really happens.

The agreement tests build random worlds (nodes, applications, allocations, pending asks), most
of them settled (the live scheduler runs until idle, as the live loop would have; one in five is
caught with placeable asks still pending), ask what-if for a new application, then submit the
same application to the live world and play it the way the scheduling loop would (cycles until
idle, then the clock in steps of the loop's idle interval, 100 ms, the RM confirming every
preemption at once). Placed now (asks and nodes), placed by the horizon and
the preemption victims must agree in at least 99 % of the cases.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from rm_helpers import World, res

from pyscheduler import dao
from pyscheduler.dao.errors import BadRequest, NotFound
from pyscheduler.scheduler.loop import Scheduler
from pyscheduler.si import messages as si
from pyscheduler.sim.whatif import WhatIfLimits, what_if
from pyscheduler.sim.whatif_request import MAX_ASKS, MAX_QUANTITY

PREEMPTION = """
partitions:
  - name: default
    preemption:
      enabled: true
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
            properties: {preemption.delay: 5s}
            resources:
              guaranteed: {memory: 300, vcore: 30}
          - name: b
            properties: {preemption.delay: 5s}
            resources:
              guaranteed: {memory: 300, vcore: 30}
"""

LIMITED = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
            resources:
              max: {memory: 500, vcore: 50}
          - name: b
"""


@pytest.fixture
def w() -> Iterator[World]:
    made = World(LIMITED)
    yield made
    made.close()


def app_body(asks: list[dict[str, Any]], queue: str = "root.a", **extra: Any) -> dict[str, Any]:
    return {"application": {"queueName": queue, "user": "carol"}, "asks": asks, **extra}


def filled(w: World) -> None:
    """Two nodes of 100 memory / 10 vcore; app-1 in root.a holds 80 on n1."""
    w.add_node("n1", 100, 10)
    w.add_node("n2", 100, 10)
    w.add_app("app-1", "root.a")
    w.allocate("a1", "app-1", "n1", res(memory=80, vcore=1))


# -- answers ----------------------------------------------------------------------------------------


def test_a_fitting_application_is_placed_now_with_its_nodes(w: World) -> None:
    filled(w)
    answer = what_if(w.context, "default", app_body([{"allocationKey": "x", "resource": {"memory": 15, "vcore": 1},
                                                      "count": 2}]))
    assert answer["placedNow"] and answer["placed"] and answer["complete"]
    assert [(a["allocationKey"], a["nodeID"], a["atSeconds"]) for a in answer["asks"]] == [
        ("x-0", "n2", 0.0), ("x-1", "n1", 0.0)] or all(a["placed"] for a in answer["asks"])
    assert answer["preemption"]["victims"] == []
    assert answer["application"]["queue"] == "root.a"
    assert answer["assumptions"]["ends"].startswith("unknown")
    json.dumps(answer)  # plain data


def test_an_application_over_its_queue_max_waits_with_the_typed_reason(w: World) -> None:
    filled(w)
    answer = what_if(w.context, "default", app_body([{"allocationKey": "big", "resource": {"memory": 450}}]))
    assert not answer["placedNow"] and not answer["placed"]
    why = answer["asks"][0]["why"]
    assert why["code"] == "QUEUE_QUOTA" and why["state"] == "SKIPPED"
    assert "root.a" in why["reason"]


def test_an_ask_no_node_can_take_waits_for_nodes(w: World) -> None:
    filled(w)
    answer = what_if(w.context, "default", app_body([{"allocationKey": "wide", "resource": {"memory": 110}}], "root.b"))
    assert not answer["placed"]
    assert answer["asks"][0]["why"]["code"] == "NO_NODE_FITS"


def test_a_required_node_ask_goes_there_or_waits_for_it(w: World) -> None:
    filled(w)
    there = what_if(w.context, "default", app_body([{"allocationKey": "d", "resource": {"memory": 10},
                                                     "requiredNode": "n1"}]))
    assert there["placedNow"] and there["asks"][0]["nodeID"] == "n1"
    full = what_if(w.context, "default", app_body([{"allocationKey": "d", "resource": {"memory": 50},
                                                    "requiredNode": "n1"}], maxSeconds=0))
    assert not full["placed"] and full["asks"][0]["why"]["reservedNode"] == "n1"
    # After the reservation delay, required-node preemption makes room there.
    later = what_if(w.context, "default", app_body([{"allocationKey": "d", "resource": {"memory": 50},
                                                     "requiredNode": "n1"}]))
    assert later["placed"] and later["asks"][0]["preempted"] == ["a1"]
    assert later["preemption"]["victims"][0]["allocationKey"] == "a1"


def test_a_rejected_application_says_why(w: World) -> None:
    filled(w)
    answer = what_if(w.context, "default", app_body([{"resource": {"memory": 1}}], "root.nosuch"))
    assert not answer["placed"]
    assert answer["application"]["rejected"]
    assert answer["asks"][0]["why"]["rejected"]


def test_asks_for_an_application_the_partition_runs_join_it(w: World) -> None:
    filled(w)
    answer = what_if(w.context, "default", {"application": {"applicationID": "app-1", "queueName": "root.a",
                                                            "user": "alice"},
                                            "asks": [{"allocationKey": "more", "resource": {"memory": 50}}]})
    assert answer["existingApplication"] and answer["placedNow"]
    assert answer["asks"][0]["nodeID"] == "n2"
    assert "app-1" in w.partition().applications and "more" not in w.app("app-1").asks


def test_a_gang_is_placed_whole_its_members_in_its_placeholders_places(w: World) -> None:
    filled(w)
    answer = what_if(w.context, "default", {
        "application": {"queueName": "root.b", "user": "bob", "placeholderAsk": {"memory": 30, "vcore": 2}},
        "asks": [{"allocationKey": "ph", "resource": {"memory": 15, "vcore": 1}, "count": 2, "placeholder": True,
                  "taskGroupName": "g"},
                 {"allocationKey": "m", "resource": {"memory": 15, "vcore": 1}, "count": 2, "taskGroupName": "g"}]})
    assert answer["placedNow"]
    nodes = {a["allocationKey"]: a["nodeID"] for a in answer["asks"]}
    assert sorted([nodes["m-0"], nodes["m-1"]]) == sorted([nodes["ph-0"], nodes["ph-1"]])


def test_given_ends_place_it_when_the_running_work_ends(w: World) -> None:
    filled(w)
    w.allocate("a2", "app-1", "n2", res(memory=90, vcore=1))
    body = app_body([{"allocationKey": "x", "resource": {"memory": 50}}], "root.b")
    unknown = what_if(w.context, "default", body)
    assert not unknown["placed"]
    given = what_if(w.context, "default", {**body, "ends": {"a2": 12.5, "nosuch": 1}, "maxSeconds": 30})
    assert given["placed"] and not given["placedNow"]
    assert given["asks"][0] == {"allocationKey": "x", "placed": True, "nodeID": "n2", "atSeconds": 12.5}
    assert given["unknownEnds"] == ["nosuch"]
    assert given["assumptions"]["ends"].startswith("given")
    by_app = what_if(w.context, "default", {**body, "ends": {"app-1": 3}, "maxSeconds": 30})
    assert by_app["placed"] and by_app["asks"][0]["atSeconds"] == 3


def test_preemption_names_its_victims() -> None:
    w = World(PREEMPTION)
    try:
        w.add_node("n1", 400, 40)
        w.add_app("hog", "root.b")
        for i in range(4):
            w.allocate(f"h{i}", "hog", "n1", res(memory=100, vcore=10))
        body = app_body([{"allocationKey": "p", "resource": {"memory": 100, "vcore": 10}, "allowPreemptOther": True}])
        answer = what_if(w.context, "default", body)
        assert answer["placed"] and not answer["placedNow"]
        victims = answer["preemption"]["victims"]
        assert len(victims) == 1 and victims[0]["applicationID"] == "hog"
        assert victims[0]["preemptorAllocationKey"] == "p" and victims[0]["nodeID"] == "n1"
        assert answer["asks"][0]["preempted"] == [victims[0]["allocationKey"]]
        assert answer["asks"][0]["atSeconds"] == 5.0  # the queue's preemption.delay
        # Preemption waits for the queue's delay: within a shorter horizon it only waits.
        short = what_if(w.context, "default", {**body, "maxSeconds": 4})
        assert not short["placed"] and short["preemption"]["victims"] == []
    finally:
        w.close()


def test_the_budget_cuts_a_run_short_and_says_so(w: World) -> None:
    filled(w)
    for i in range(300):
        w.add_node(f"m{i}", 10, 1)
    body = app_body([{"allocationKey": "x", "resource": {"memory": 5}, "count": 400}], "root.b")
    answer = what_if(w.context, "default", {**body, "budgetSeconds": 0.001})
    assert answer["complete"] is False and "budget" in answer["truncated"]
    assert answer["placedNow"] is False
    capped = what_if(w.context, "default", {**body, "budgetSeconds": 60},
                     WhatIfLimits(budget_seconds=1.0, max_budget_seconds=2.0))
    assert capped["budgetSeconds"] == 2.0


@pytest.mark.parametrize("body,words", [
    ([], "JSON object"),
    ({"asks": [{"resource": {"memory": 1}}]}, "application"),
    (app_body([]), "non-empty"),
    (app_body([{"resource": {"memory": -1}}]), "within 0.."),
    (app_body([{"resource": {"memory": 0}}]), "more than nothing"),
    (app_body([{"resource": {"memory": (1 << 63) - 1}}]), str(MAX_QUANTITY)),
    (app_body([{"resource": {"memory": 1.5}}]), "integer"),
    (app_body([{"resource": {"memory": 1}, "count": -1}]), "count"),
    (app_body([{"resource": {"memory": 1}, "count": MAX_ASKS + 1}]), "at most"),
    (app_body([{"resource": {"memory": 1}}] * (MAX_ASKS + 1)), "at most"),
    (app_body([{"resource": {"memory": 1}, "priority": 1 << 40}]), "int32"),
    (app_body([{"resource": {"memory": 1}, "bogus": 1}]), "unknown field"),
    (app_body([{"resource": {"memory": 1}, "allocationKey": "k"}, {"resource": {"memory": 1}, "allocationKey": "k"}]),
     "twice"),
    (app_body([{"resource": {"memory": 1}}], maxSeconds=-1), "maxSeconds"),
    (app_body([{"resource": {"memory": 1}}], maxSeconds=float("inf")), "maxSeconds"),
    (app_body([{"resource": {"memory": 1}}], ends={"a1": 1e12}), "ends"),
    (app_body([{"resource": {"memory": 1}}], budgetSeconds=0), "budgetSeconds"),
    (app_body([{"resource": {"memory": 1}, "placeholder": True, "taskGroupName": "g"}]), "placeholderAsk"),
    ({"application": {"queueName": "root.a", "user": "x" * 5000}, "asks": [{"resource": {"memory": 1}}]}, "longer"),
    ({"manifest": {"kind": "Pod"}}, "manifest"),
])
def test_a_malformed_or_hostile_request_is_a_bad_request(w: World, body: Any, words: str) -> None:
    filled(w)
    before = dao.fullstatedump(w.context)
    with pytest.raises(BadRequest) as err:
        what_if(w.context, "default", body)
    assert words in str(err.value)
    assert dao.fullstatedump(w.context) == before


def test_an_unknown_partition_is_not_found(w: World) -> None:
    with pytest.raises(NotFound):
        what_if(w.context, "nosuch", app_body([{"resource": {"memory": 1}}]))


# -- the live core is never touched -------------------------------------------------------------------


def test_a_what_if_never_touches_the_live_scheduler() -> None:
    w = World(PREEMPTION)
    try:
        w.add_node("n1", 400, 40)
        w.add_app("hog", "root.b")
        for i in range(4):
            w.allocate(f"h{i}", "hog", "n1", res(memory=100, vcore=10))
        w.ask("pending", "hog", res(memory=50, vcore=1))
        mark = w.mark()
        dump = dao.fullstatedump(w.context)
        calls = len(w.rm.calls)
        partition = w.partition()
        apps = dict(partition.applications)
        for _ in range(3):  # placements, preemption, rejections: none of it may leak
            what_if(w.context, "default", app_body([{"allocationKey": "p", "resource": {"memory": 100, "vcore": 10},
                                                     "allowPreemptOther": True}], ends={"h0": 2}))
            what_if(w.context, "default", app_body([{"resource": {"memory": 1}}], "root.nosuch"))
        assert w.mark() == mark, "no event in the live event system"
        assert dao.fullstatedump(w.context) == dump
        assert len(w.rm.calls) == calls, "the live RM heard nothing"
        assert partition.applications == apps and not any(a.startswith("whatif") for a in partition.applications)
        assert all(not a.preempted for app in apps.values() for a in app.allocations.values())
    finally:
        w.close()


# -- agreement with what really happens ---------------------------------------------------------------


@dataclass
class Outcome:
    placed_now: dict[str, str]
    placed: set[str]
    victims: set[str]


def _run_idle(w: World, scheduler: Scheduler, seen: list[int]) -> None:
    """Cycles until one places nothing, the RM confirming each preemption at once (a shim)."""
    while True:
        decisions = scheduler.schedule_once()
        released = w.rm.released
        new, seen[0] = released[seen[0]:], len(released)
        confirm = [r for r in new if r.termination_type == si.TerminationType.PREEMPTED_BY_SCHEDULER]
        for r in confirm:
            w.release(r.application_id, r.allocation_key, termination=si.TerminationType.PREEMPTED_BY_SCHEDULER)
        if not decisions and not confirm:
            return


def _ever_placed(w: World) -> dict[str, str]:
    """Every allocation the live RM was told of, released since or not (key -> node)."""
    return {alloc.allocation_key: alloc.node_id for response in w.rm.calls_of("update_allocation")
            if isinstance(response, si.AllocationResponse) for alloc in response.new}


def _live(w: World, scheduler: Scheduler, seen: list[int], body: dict[str, Any], horizon: float) -> Outcome:
    app = body["application"]
    w.add_app(app["applicationID"], app["queueName"], user=app["user"])
    asks = [w.alloc_msg(a["allocationKey"], app["applicationID"], a["resource"], priority=a.get("priority", 0),
                        allocation_tags={si.TAG_REQUIRED_NODE: a["requiredNode"]} if "requiredNode" in a else {},
                        preemption_policy=si.PreemptionPolicy(allow_preempt_self=True,
                                                              allow_preempt_other=a.get("allowPreemptOther", False)))
            for a in body["asks"]]
    w.allocs(*asks)
    keys = [a["allocationKey"] for a in body["asks"]]
    _run_idle(w, scheduler, seen)
    placed_now = {k: node for k, node in _ever_placed(w).items() if k in keys}
    placed = set(placed_now)
    elapsed = 0.0
    while elapsed < horizon and len(placed) < len(keys):
        w.clock.advance(0.1)  # the loop's idle interval
        elapsed += 0.1
        _run_idle(w, scheduler, seen)
        placed |= {k for k in _ever_placed(w) if k in keys}
    victims = {r.allocation_key for r in w.rm.released
               if r.termination_type == si.TerminationType.PREEMPTED_BY_SCHEDULER
               and r.preemptor_application_id == app["applicationID"]}
    return Outcome(placed_now, placed, victims)


def _predicted(answer: dict[str, Any]) -> Outcome:
    return Outcome({a["allocationKey"]: a["nodeID"] for a in answer["asks"] if a["placed"] and a["atSeconds"] == 0},
                   {a["allocationKey"] for a in answer["asks"] if a["placed"]},
                   {v["allocationKey"] for v in answer["preemption"]["victims"]})


def _random_world(rng: random.Random, config: str) -> tuple[World, Scheduler, list[int]]:
    w = World(config)
    nodes = [f"n{i}" for i in range(rng.randint(1, 5))]
    free: dict[str, list[int]] = {}
    for node in nodes:
        memory, vcore = rng.choice([100, 200, 400]), rng.choice([10, 20, 40])
        w.add_node(node, memory, vcore)
        free[node] = [memory, vcore]
    for a in range(rng.randint(0, 4)):
        app_id = f"app-{a}"
        w.add_app(app_id, rng.choice(["root.a", "root.b"]), user=rng.choice(["alice", "bob"]))
        for k in range(rng.randint(0, 5)):
            memory, vcore = rng.randint(10, 150), rng.randint(1, 10)
            fitting = [n for n in nodes if free[n][0] >= memory and free[n][1] >= vcore]
            key = f"{app_id}-{k}"
            if fitting and rng.random() < 0.8:
                node = rng.choice(fitting)
                free[node][0] -= memory
                free[node][1] -= vcore
                w.allocate(key, app_id, node, res(memory=memory, vcore=vcore))
            else:
                w.ask(key, app_id, res(memory=memory, vcore=vcore), priority=rng.choice([0, 0, 5]))
        w.clock.advance(rng.choice([0.0, 0.3, 1.0, 3.0]))
    scheduler = Scheduler(w.context)
    seen = [0]
    if rng.random() < 0.8:
        _run_idle(w, scheduler, seen)  # settled, as the live loop keeps it; else mid-way
    return w, scheduler, seen


def _agreement(config: str, cases: int, seed: int, *, preempt: bool, horizon: float) -> float:
    rng = random.Random(seed)
    agree = 0
    disagreements: list[str] = []
    for case in range(cases):
        w, scheduler, seen = _random_world(rng, config)
        try:
            body = {
                "application": {"applicationID": "new-app", "queueName": rng.choice(["root.a", "root.b"]),
                                "user": rng.choice(["alice", "carol"])},
                "asks": [{"allocationKey": f"new-{i}", "resource": {"memory": rng.randint(10, 250),
                                                                     "vcore": rng.randint(1, 20)},
                          "priority": rng.choice([0, 0, 10]), "allowPreemptOther": preempt,
                          # Now and then a daemon-set-like ask for one node (required-node preemption).
                          **({"requiredNode": rng.choice(sorted(w.partition().nodes))} if rng.random() < 0.1 else {})}
                         for i in range(rng.randint(1, 4))],
                "maxSeconds": horizon,
            }
            predicted = _predicted(what_if(w.context, "default", body))
            actual = _live(w, scheduler, seen, body, horizon)
            if predicted == actual:
                agree += 1
            else:
                disagreements.append(f"case {case}: what-if {predicted} / live {actual}")
        finally:
            w.close()
    for line in disagreements:
        print(line)
    return agree / cases


def test_what_if_agrees_with_what_then_happens() -> None:
    rate = _agreement(LIMITED, 150, 35, preempt=False, horizon=10.0)
    print(f"placement agreement: {rate:.1%}")
    assert rate >= 0.99


def test_what_if_agrees_with_what_then_happens_under_preemption() -> None:
    rate = _agreement(PREEMPTION, 100, 3535, preempt=True, horizon=25.0)
    print(f"preemption agreement: {rate:.1%}")
    assert rate >= 0.99


def test_the_live_lock_is_held_only_for_the_copy() -> None:
    """While a what-if runs on a state of 10,000 allocations, another thread takes the live
    partition's lock again and again: it never waits long (the copy is a few reads per
    allocation; the replay and the cycles hold only the copy's locks)."""
    import threading
    import time

    w = World(LIMITED)
    try:
        w.nodes(*[si.NodeInfo(node_id=f"n{i}", action=si.NodeAction.CREATE,
                              schedulable_resource=res(memory=1000, vcore=1000)) for i in range(1000)])
        w.add_app("big", "root.b")
        w.allocs(*[w.alloc_msg(f"r{i}", "big", res(memory=10, vcore=10), node_id=f"n{i % 1000}")
                   for i in range(10_000)])
        partition = w.partition()
        waits: list[float] = []
        done = threading.Event()

        def contend() -> None:
            while not done.is_set():
                started = time.perf_counter()
                with partition.lock:
                    waits.append(time.perf_counter() - started)
                time.sleep(0.001)

        thread = threading.Thread(target=contend)
        thread.start()
        try:
            answer = what_if(w.context, "default", app_body([{"resource": {"memory": 5, "vcore": 5}, "count": 200}],
                                                            "root.b", budgetSeconds=30))
        finally:
            done.set()
            thread.join()
        assert answer["placedNow"] and answer["complete"]
        assert answer["lockSeconds"] < answer["elapsedSeconds"] / 3
        assert max(waits) < 0.5, f"the live lock was held for {max(waits):.3f} s"
    finally:
        w.close()


def test_the_cycle_limit_cuts_a_run_short_and_says_so(w: World) -> None:
    filled(w)
    answer = what_if(w.context, "default", app_body([{"resource": {"memory": 1}, "count": 10}], "root.b"),
                     WhatIfLimits(max_cycles=3))
    assert answer["complete"] is False and "cycles" in answer["truncated"] and answer["placedAsks"] < 10
