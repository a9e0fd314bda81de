"""The kubectl plugin's pure parts (pyscheduler_k8s.kubectl): quantities and bars, the queue
tree and top, event lines, the why/position/preempted views on contract-shaped data
(docs/design/why.md), and the targets a command line names. No server, no cluster."""

from __future__ import annotations

from typing import Any

import pytest

from pyscheduler_k8s.kubectl import events_view, queues_view, why_view
from pyscheduler_k8s.kubectl.targets import Subject, Target, parse_target, subjects_of_pods
from pyscheduler_k8s.kubectl.units import bar, format_quantity, format_resource, ordinal, plain_resource, table

GI = 1 << 30


@pytest.mark.parametrize("name,value,text", [
    ("vcore", 2500, "2.5"), ("vcore", 40000, "40"), ("vcore", 1, "0"), ("memory", 4 * GI, "4Gi"),
    ("memory", 1536 << 20, "1.5Gi"), ("memory", 512, "512"), ("ephemeral-storage", 3 << 40, "3Ti"),
    ("hugepages-2Mi", 2 << 20, "2Mi"), ("pods", 110, "110"), ("nvidia.com/gpu", 2, "2"),
])
def test_quantities_in_their_units(name: str, value: int, text: str) -> None:
    assert format_quantity(name, value) == text


def test_resources_print_vcore_memory_pods_first_then_by_name() -> None:
    resource = {"zeta": 1, "pods": 3, "memory": GI, "alpha": 2, "vcore": 1000}
    assert format_resource(resource) == "vcore 1, memory 1Gi, pods 3, alpha 2, zeta 1"
    assert format_resource({}) == "-" and format_resource(None) == "-"
    assert format_resource(resource, ["memory"]) == "memory 1Gi"


def test_event_resources_in_either_shape() -> None:
    assert plain_resource({"resources": {"vcore": {"value": 437}, "pods": {"value": 1}}}) == {"vcore": 437, "pods": 1}
    assert plain_resource({"vcore": 5}) == {"vcore": 5}
    assert plain_resource({}) == {} and plain_resource(None) == {}


def test_bars_fill_to_the_share_mark_guaranteed_and_show_overuse() -> None:
    assert bar(5, 10, width=10) == "[#####.....]"
    assert bar(0, 10, width=10) == "[..........]"
    # Anything used shows, however little.
    assert bar(1, 1000, width=10) == "[#.........]"
    assert bar(20, 10, width=10) == "[#########>]"
    assert bar(2, 10, width=10, mark=8) == "[##......|.]"
    # A guarantee under the used part is inside the filled cells: not drawn.
    assert bar(9, 10, width=10, mark=2) == "[#########.]"
    assert bar(3, None, width=5) == "[  ?  ]"


def test_ordinals() -> None:
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 102, 111)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st", "102nd", "111th"]


def test_table_pads_columns() -> None:
    assert table(["A", "BB"], [["xxx", "y"], ["z", ""]]).split("\n") == ["A    BB", "xxx  y", "z"]


def _queue(name: str, **fields: Any) -> dict[str, Any]:
    return {"queuename": name, "status": "Active", "isLeaf": not fields.get("children"), **fields}


QUEUES = _queue(
    "root", maxResource={"vcore": 32000, "memory": 64 * GI}, allocatedResource={"vcore": 16000, "memory": 8 * GI},
    headroom={"vcore": 16000, "memory": 56 * GI}, runningApps=3, pendingResource={"vcore": 4000},
    children=[
        _queue("root.a", allocatedResource={"vcore": 12000, "memory": 4 * GI},
               headroom={"vcore": 16000, "memory": 56 * GI}, guaranteedResource={"vcore": 24000},
               runningApps=2, pendingResource={"vcore": 4000}),
        _queue("root.b", maxResource={"vcore": 4000, "memory": 4 * GI}, allocatedResource={"vcore": 4000,
               "memory": 4 * GI}, headroom={"vcore": 0, "memory": 0}, runningApps=1, maxRunningApps=5,
               status="Draining"),
    ])


def test_queue_limits_are_max_else_used_plus_headroom() -> None:
    assert queues_view.queue_limits(QUEUES["children"][0]) == {"vcore": (28000, "limit"), "memory": (60 * GI, "limit")}
    assert queues_view.queue_limits(QUEUES["children"][1]) == {"vcore": (4000, "max"), "memory": (4 * GI, "max")}


def test_queue_tree() -> None:
    text = queues_view.format_queue_tree(QUEUES)
    assert text.split("\n") == [
        "root  3 running apps, pending vcore 4",
        "│   vcore   [##########..........]       16 of 32 max (50%)",
        "│   memory  [##..................]      8Gi of 64Gi max (12%)",
        "├── a  2 running apps, pending vcore 4",
        "│       vcore   [#########........|..]       12 of 28 limit (43%), guaranteed 24",
        "│       memory  [#...................]      4Gi of 60Gi limit (7%)",
        "└── b (Draining)  1 running app (max 5)",
        "        vcore   [####################]        4 of 4 max (100%)",
        "        memory  [####################]      4Gi of 4Gi max (100%)",
    ]
    only_vcore = queues_view.format_queue_tree(QUEUES, ["vcore"])
    assert "memory  [" not in only_vcore and only_vcore.count("vcore  [") == 3


def test_top_ranks_leaves_and_nodes_by_dominant_share() -> None:
    nodes = [
        {"nodeID": "n1", "capacity": {"vcore": 8000, "memory": 16 * GI, "pods": 110},
         "allocated": {"vcore": 2000, "memory": 12 * GI, "pods": 3}, "allocations": [{}, {}, {}]},
        {"nodeID": "n2", "capacity": {"vcore": 8000, "memory": 16 * GI}, "allocated": {"vcore": 7000},
         "schedulable": False},
        {"nodeID": "n3", "capacity": {"vcore": 8000}, "allocated": {}},
    ]
    lines = queues_view.format_top(QUEUES, nodes, limit=2).split("\n")
    assert lines[0].startswith("Busiest queues")
    assert lines[1].split() == ["QUEUE", "SHARE", "VCORE", "MEMORY", "PENDING", "APPS"]
    assert lines[2].split() == ["root.b", "100%", "4/4", "4Gi/4Gi", "-", "1"]
    assert lines[3].split() == ["root.a", "43%", "12/28", "4Gi/60Gi", "vcore", "4", "2"]
    assert lines[5].startswith("Busiest nodes")
    assert lines[7].split() == ["n2", "(unschedulable)", "88%", "7/8", "0/16Gi", "-", "0"]
    assert lines[8].split() == ["n1", "75%", "2/8", "12Gi/16Gi", "3/110", "3"]
    assert len(lines) == 9


def test_event_lines_name_the_si_codes() -> None:
    record = {"type": 2, "objectID": "app-1", "timestampNano": 1795829749283493460, "eventChangeType": 2,
              "eventChangeDetail": 200, "referenceID": "app-1-task-3", "message": "placed",
              "resource": {"resources": {"vcore": {"value": 500}, "memory": {"value": GI}}}}
    assert events_view.format_event(record) == (
        "2026-11-28T01:35:49.283Z APP       ADD    APP_ALLOC              app-1 (app-1-task-3)  placed  "
        "vcore 0.5, memory 1Gi")
    unknown = {"type": 9, "objectID": "x", "timestampNano": 0, "eventChangeType": 1, "eventChangeDetail": 999}
    assert events_view.format_event(unknown).split() == ["1970-01-01T00:00:00.000Z", "9", "SET", "999", "x"]


def test_stream_lines_tell_events_from_the_first_and_closing_lines() -> None:
    assert events_view.stream_line({"InstanceUUID": "u"}) == ("start", None)
    assert events_view.stream_line({"status_code": 200, "message": "Event stream was closed by the producer",
                                    "description": "too slow"}) == (
        "closed", "Event stream was closed by the producer: too slow")
    kind, text = events_view.stream_line({"type": 3, "objectID": "node-1", "timestampNano": 0,
                                          "eventChangeType": 1, "eventChangeDetail": 302})
    assert kind == "event" and text is not None and "NODE_SCHEDULABLE" in text


# The contract's example answer (docs/design/why.md), as the REST service returns it.
WHY: dict[str, Any] = {
    "partition": "default", "applicationID": "job-1", "queueName": "root.a", "applicationState": "Running",
    "summary": "2 of 3 asks wait: queue root.a is at its max (vcore 40000 of 40000)",
    "gang": {"style": "Soft", "placeholderAsk": {"vcore": 8000}, "placeholdersPlaced": 3, "placeholdersPending": 1,
             "state": "RESERVING"},
    "position": {"inQueue": 3, "queueLength": 12, "aheadInQueue": {"vcore": 40000}, "inPartition": 41,
                 "partitionLength": 200},
    "asks": [
        {"allocationKey": "pod-uid-1", "taskGroupName": "workers", "placeholder": False, "priority": 0,
         "resource": {"vcore": 2000, "memory": 4 * GI}, "code": "QUEUE_MAX",
         "message": "queue root.a is at its max: vcore 40000 of 40000 used, the ask needs 2000",
         "details": {"queue": "root.a", "max": {"vcore": 40000}, "used": {"vcore": 40000}, "headroom": {"vcore": 0}},
         "nodes": {"total": 5000, "fit": 0, "refusals": [
             {"code": "INSUFFICIENT", "resource": "vcore", "count": 812},
             {"code": "PREDICATE", "reason": "node(s) had untolerated taint {gpu: true}", "count": 40},
             {"code": "UNSCHEDULABLE", "count": 3}]},
         "reservation": {"nodeID": "node-7", "since": "2026-11-28T01:02:03Z"},
         "preemption": {"attempted": True, "code": "DOES_NOT_HELP", "message": "Preemption did not help"},
         "waitsFor": {"kind": "PLACEHOLDER", "target": "tg-job-1-workers-0"},
         "log": [{"message": "...", "count": 12, "lastOccurrence": "2026-11-28T01:02:03Z"}]},
        {"allocationKey": "pod-uid-2", "priority": 5, "resource": {"vcore": 1000}, "code": "NO_NODE_FITS",
         "message": "no node has room", "details": {}, "nodes": None, "reservation": None, "preemption": None,
         "waitsFor": None},
    ],
}


def test_why_prints_the_first_cause_per_ask_with_its_numbers() -> None:
    assert why_view.format_why(WHY).split("\n") == [
        "Application job-1 in queue root.a (partition default): Running",
        "  2 of 3 asks wait: queue root.a is at its max (vcore 40000 of 40000)",
        "Position: 3rd of 12 in root.a (those ahead need vcore 40), 41st of 200 in the partition",
        "Gang: Soft gang, RESERVING: 3 placeholders placed, 1 pending (vcore 8 in all)",
        "Ask pod-uid-1 (task group workers) needs vcore 2, memory 4Gi",
        "  Stopped by QUEUE_MAX (its queue's max): queue root.a is at its max: vcore 40000 of 40000 used, "
        "the ask needs 2000",
        "    queue: root.a; max: vcore 40; used: vcore 40; headroom: vcore 0",
        "  Nodes: 0 of 5000 nodes would take it; refused: 812 not enough vcore, "
        "40 node(s) had untolerated taint {gpu: true}, 3 unschedulable",
        "  Reservation: node node-7 since 2026-11-28T01:02:03Z",
        "  Preemption: attempted, DOES_NOT_HELP: Preemption did not help",
        "  Waits for: placeholder tg-job-1-workers-0",
        "Ask pod-uid-2 (priority 5) needs vcore 1",
        "  Stopped by NO_NODE_FITS (no node has room): no node has room",
    ]


def test_why_picks_a_pods_ask_and_bounds_the_asks_printed() -> None:
    one = why_view.format_why(WHY, asks=["pod-uid-2"])
    assert "pod-uid-2" in one and "pod-uid-1" not in one
    assert "None of its 2 pending asks is this pod's." in why_view.format_why(WHY, asks=["other"])
    bounded = why_view.format_why(WHY, max_asks=1)
    assert "pod-uid-2" not in bounded and "... and 1 more pending asks (-o json for all)" in bounded
    idle = why_view.format_why({**WHY, "asks": [], "position": None, "gang": None})
    assert idle.split("\n")[2:] == ["No pending ask."]


def test_why_prints_details_it_does_not_know_rather_than_dropping_them() -> None:
    ask = {**WHY["asks"][1], "code": "TOPOLOGY_DOMAIN", "message": "waits for a rack",
           "details": {"level": "rack", "need": {"vcore": 64000},
                       "largestFree": {"domain": "rack-3", "available": {"vcore": 32000}}}}
    text = why_view.format_why({**WHY, "asks": [ask]})
    assert "level: rack; need: vcore 64; largestFree: domain rack-3, available vcore 32" in text


def test_pending_list_and_one_position() -> None:
    entries = [{"applicationID": "a1", "queueName": "root.a", "inQueue": 1, "inPartition": 1,
                "pending": {"vcore": 2000}, "aheadInQueue": {}},
               {"applicationID": "a2", "queueName": "root.a", "inQueue": 2, "inPartition": 3,
                "pending": {"vcore": 1000}, "aheadInQueue": {"vcore": 2000}}]
    lines = why_view.format_pending(entries).split("\n")
    assert lines[0].split() == ["#", "IN", "QUEUE", "APPLICATION", "QUEUE", "PENDING", "AHEAD", "IN", "QUEUE", "NEED"]
    assert lines[2].split() == ["3", "2", "a2", "root.a", "vcore", "1", "vcore", "2"]
    assert why_view.format_pending([]) == "No application is pending."
    app = {"applicationID": "a2", "queueName": "root.a", "queuePosition": {"inQueue": 2, "inPartition": 3},
           "pendingResource": {"vcore": 1000}}
    assert why_view.format_position(app) == (
        "Application a2 is 2nd in queue root.a and 3rd in the partition, pending vcore 1.")
    assert "has no pending ask" in why_view.format_position({"applicationID": "a3", "queueName": "root.b"})


def test_preempted_names_the_preemptor_rule_and_time() -> None:
    answer = {"applicationID": "victim", "allocationKey": "v-1", "queueName": "root.b",
              "preemptorApplicationID": "p", "preemptorAllocationKey": "p-1", "preemptorQueueName": "root.a",
              "rule": "GUARANTEED", "released": True, "time": "2026-11-28T01:02:03Z"}
    assert why_view.format_preempted(answer).split("\n") == [
        "Allocation v-1 of application victim (queue root.b) was preempted at 2026-11-28T01:02:03Z for p-1 of "
        "application p (queue root.a) under rule GUARANTEED.", "  It is gone."]
    pending = why_view.format_preempted({**answer, "released": False, "time": None, "extra": {"vcore": 1000}})
    assert pending.split("\n")[1:] == ["  The RM has not confirmed it gone yet.", "  extra: vcore 1"]
    assert " at " not in pending.split("\n")[0]


def test_targets() -> None:
    assert parse_target("web-0") == Target("pod", "web-0")
    assert parse_target("pod/web-0") == Target("pod", "web-0")
    assert parse_target("job/train") == Target("job", "train")
    assert parse_target("job.batch/x") == Target("job", "x")
    assert parse_target("app/spark-1/x") == Target("app", "spark-1/x")
    for wrong in ("deployment/x", "job/"):
        with pytest.raises(ValueError):
            parse_target(wrong)
    pods = [
        {"metadata": {"name": "p-0", "namespace": "ns", "uid": "u0", "labels": {"applicationId": "app-1"}},
         "spec": {"nodeName": "node-1"}, "status": {"phase": "Running"}},
        {"metadata": {"name": "p-1", "namespace": "ns", "uid": "u1",
                      "annotations": {"yunikorn.apache.org/app-id": "app-1"}}, "spec": {}, "status": {"phase": "Pending"}},
        {"metadata": {"name": "p-2", "namespace": "ns", "uid": "u2"}, "spec": {}, "status": {"phase": "Pending"}},
    ]
    # The ones still waiting for a node first; a pod without an id has its namespace's autogenerated one.
    assert subjects_of_pods(pods) == [
        Subject("app-1", "ns/p-1", "u1", "", "Pending"),
        Subject("yunikorn-ns-autogen", "ns/p-2", "u2", "", "Pending"),
        Subject("app-1", "ns/p-0", "u0", "node-1", "Running"),
    ]
