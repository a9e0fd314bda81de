"""Applications (asks, allocations, state log) and nodes through the query functions
(pyscheduler.dao), checked with the strict decoder of test_dao_strict."""

from __future__ import annotations

import pytest

from pyscheduler import dao
from pyscheduler.dao.applications import ask_dao
from pyscheduler.dao.views import allocation_view
from pyscheduler.dao.errors import ALLOWED_ACTIVE_STATUSES, ALLOWED_QUEUE_STATES, ALLOWED_STATES, INVALID_QUEUE_NAME
from pyscheduler.objects.allocation import Allocation
from pyscheduler.scheduler.preemption.guaranteed import PREEMPTION_DOES_NOT_HELP, PREEMPTION_PRECONDITIONS_FAILED
from pyscheduler.scheduler.preemption.required_node import NO_VICTIM_FOR_REQUIRED_NODE
from pyscheduler.scheduler.cycle import QUEUE_QUOTA
from pyscheduler.si import messages as si
from rm_helpers import World, res, world  # noqa: F401  (world: the fixture)
from test_dao_strict import APPLICATION, ASK, NODE, ListOf, Rich, decode, rich  # noqa: F401

T0 = 1_700_000_000_000_000_000
INT32_MIN = -(2**31)


def _ids(apps: list[dict]) -> list[str]:
    return [a["applicationID"] for a in apps]


# -- one application ------------------------------------------------------------------------------------


def test_running_application(rich: Rich) -> None:
    app = decode(dao.application(rich.ctx, "default", "app-run"), APPLICATION)
    # Every cycle that tried r2 counted one more queue quota failure, after a preemption attempt
    # (the partition allows it; the ask may not preempt): YuniKorn logs all three.
    log = app["requests"][0].pop("allocationLog")
    assert [e["message"] for e in log] == [
        PREEMPTION_PRECONDITIONS_FAILED, PREEMPTION_DOES_NOT_HELP, QUEUE_QUOTA] and log[0]["count"] >= 1
    # YuniKorn always sets the last occurrence: the time of the cycle that tried last.
    assert 0 < log[0]["lastOccurrence"] <= rich.ctx.clock.now_ns()
    assert app == {
        "applicationID": "app-run",
        # YuniKorn's allocatedResource: the real allocations (a1), the placeholder ph1 apart.
        "usedResource": {"memory": 1000, "vcore": 1000},
        "maxUsedResource": {"memory": 1100, "vcore": 1100},
        "pendingResource": {"memory": 6000, "vcore": 1000},
        "partition": "default",
        "clusterId": "rm-1",
        "queueName": "root.a",
        "submissionTime": T0,
        "requests": [
            {
                "allocationKey": "r2",
                "requestTime": T0,
                "resource": {"memory": 6000, "vcore": 1000},
                "priority": "0",
                "applicationId": "app-run",
                "schedulingAttempted": True,
            }
        ],
        "allocations": [
            {
                "allocationKey": "ph1",
                "requestTime": T0,
                "allocationTime": T0 + 2_000_000_000,
                "allocationDelay": 2_000_000_000,
                "resource": {"memory": 100, "vcore": 100},
                "priority": "0",
                "nodeId": "n1",
                "applicationId": "app-run",
                "placeholder": True,
                "taskGroupName": "tg1",
            },
            {
                "allocationKey": "r1",
                "allocationTags": {"kubernetes.io/meta/namespace": "ns", "kubernetes.io/meta/podName": "p1"},
                "requestTime": T0,
                "allocationTime": T0 + 2_000_000_000,
                "allocationDelay": 2_000_000_000,
                "resource": {"memory": 1000, "vcore": 1000},
                "priority": "3",
                "nodeId": "n1",
                "applicationId": "app-run",
            },
        ],
        "applicationState": "Running",
        "user": "alice",
        "groups": ["dev"],
        "stateLog": [
            {"time": T0, "applicationState": "Accepted"},
            {"time": T0 + 2_000_000_000, "applicationState": "Running"},
        ],
        "placeholderData": [{"taskGroupName": "tg1", "count": 1, "minResource": {"memory": 100, "vcore": 100}}],
        "startTime": (T0 + 2_000_000_000) // 1_000_000,
        "resourceHistory": {},
        # pyscheduler's addition (issue 35): its place in the next cycle's order (r2 pending).
        "queuePosition": {"inQueue": 1, "inPartition": 1},
    }


def test_reserved_application(rich: Rich) -> None:
    app = decode(dao.application(rich.ctx, "default", "app-b"), APPLICATION)
    assert app["hasReserved"] is True
    assert app["reservations"] == ["b2"]
    [request] = app["requests"]
    assert request["allocationKey"] == "b2"
    assert request["requiredNodeId"] == "n2"
    assert request["allocationTags"] == {"yunikorn.apache.org/requiredNode": "n2"}
    # Its node is full of another daemon set ask, which is never a victim: required-node
    # preemption found nothing (YuniKorn's log entry) each reserved cycle.
    assert [e["message"] for e in request["allocationLog"]] == [NO_VICTIM_FOR_REQUIRED_NODE]
    assert request["schedulingAttempted"] is True


def test_new_application_without_asks(rich: Rich) -> None:
    app = decode(dao.application(rich.ctx, "default", "app-bob"), APPLICATION)
    assert app == {
        "applicationID": "app-bob",
        "partition": "default",
        "clusterId": "rm-1",
        "queueName": "root.users.bob",
        "submissionTime": T0,
        "applicationState": "New",
        "user": "bob",
        # YuniKorn keeps the minimum int32 while no ask is pending.
        "maxRequestPriority": INT32_MIN,
        "resourceHistory": {},
    }


def test_completed_and_rejected_applications(rich: Rich) -> None:
    [done] = decode(dao.applications_by_state(rich.ctx, "default", "completed"), ListOf(APPLICATION))
    assert done["applicationID"] == "app-done"
    assert done["applicationState"] == "Completed"
    assert done["finishedTime"] == T0 + 33_000_000_000
    assert [e["applicationState"] for e in done["stateLog"]] == ["Accepted", "Running", "Completing", "Completed"]
    assert "usedResource" not in done and "requests" not in done and "allocations" not in done
    [rejected] = decode(dao.applications_by_state(rich.ctx, "default", "REJECTED"), ListOf(APPLICATION))
    assert rejected["applicationID"] == "app-rej"
    assert rejected["queueName"] == "root.nope"
    assert rejected["applicationState"] == "Rejected"
    assert rejected["rejectedMessage"] == "application rejected: no placement rule matched"
    assert rejected["finishedTime"] == T0
    assert rejected["stateLog"] == [{"time": T0, "applicationState": "Rejected"}]


def test_ask_allocation_log_is_ordered_by_last_occurrence() -> None:
    ask = Allocation("k", "app", res(memory=1), priority=-3, create_time_ns=5)
    ask.log_failure("first", 100)
    ask.log_failure("second", 200)
    ask.log_failure("first", 300)
    assert list(ask.alloc_log) == ["second", "first"]
    out = decode(ask_dao(allocation_view(ask)), ASK)
    assert out["allocationLog"] == [
        {"message": "second", "lastOccurrence": 200, "count": 1},
        {"message": "first", "lastOccurrence": 300, "count": 2},
    ]
    assert out["priority"] == "-3"
    # At equal times the order of last occurrence is kept.
    ask2 = Allocation("k2", "app", res(memory=1))
    for reason in ("x", "y", "x"):
        ask2.log_failure(reason, 500)
    assert decode(ask_dao(allocation_view(ask2)), ASK)["allocationLog"] == [
        {"message": "y", "lastOccurrence": 500, "count": 1},
        {"message": "x", "lastOccurrence": 500, "count": 2},
    ]


# -- lists ---------------------------------------------------------------------------------------------------


def test_applications_by_state(rich: Rich) -> None:
    active = decode(dao.applications_by_state(rich.ctx, "default", "active", None), ListOf(APPLICATION))
    assert _ids(active) == ["app-b", "app-bob", "app-run"]
    running = dao.applications_by_state(rich.ctx, "default", "Active", "RUNNING")
    assert _ids(running) == ["app-b", "app-run"]
    assert _ids(dao.applications_by_state(rich.ctx, "default", "active", "new")) == ["app-bob"]
    assert decode(dao.applications_by_state(rich.ctx, "default", "active", "failing"), ListOf(APPLICATION)) == []
    assert _ids(dao.applications_by_state(rich.ctx, "default", "active", "")) == _ids(active)


def test_queue_applications(rich: Rich) -> None:
    apps = decode(dao.queue_applications(rich.ctx, "default", "root.a"), ListOf(APPLICATION))
    assert _ids(apps) == ["app-run"]  # completed apps have left their queue
    assert decode(dao.queue_applications(rich.ctx, "default", "root.users"), ListOf(APPLICATION)) == []
    assert dao.queue_application(rich.ctx, "default", "root.a", "app-run") == apps[0]
    assert dao.queue_application(rich.ctx, "default", "", "app-run") == apps[0]
    by_state = dao.queue_applications_by_state(rich.ctx, "default", "root.b", "ACTIVE", "Running")
    assert _ids(decode(by_state, ListOf(APPLICATION))) == ["app-b"]
    assert dao.queue_applications_by_state(rich.ctx, "default", "root.b", "active", "accepted") == []
    assert _ids(dao.queue_applications_by_state(rich.ctx, "default", "root.b", "active", None)) == ["app-b"]


def _error(call, *args):  # type: ignore[no-untyped-def]
    with pytest.raises(dao.DAOError) as err:
        call(*args)
    return err.value.status, err.value.message


def test_application_errors(rich: Rich) -> None:
    ctx = rich.ctx
    assert _error(dao.application, ctx, "nope", "app-run") == (404, "Partition not found")
    assert _error(dao.application, ctx, "default", "app-zzz") == (404, "Application not found")
    # Only live applications are served one by one.
    assert _error(dao.application, ctx, "default", "app-rej") == (404, "Application not found")
    assert _error(dao.application, ctx, "default", "app-done") == (404, "Application not found")
    assert _error(dao.queue_application, ctx, "default", "root.b", "app-run") == (404, "Application not found")
    assert _error(dao.queue_application, ctx, "default", "root.zzz", "app-run") == (404, "Queue not found")
    assert _error(dao.queue_application, ctx, "default", "root.a!", "app-run") == (400, INVALID_QUEUE_NAME)
    assert _error(dao.queue_application, ctx, "nope", "root.a!", "app-run") == (404, "Partition not found")


def test_queue_applications_errors(rich: Rich) -> None:
    ctx = rich.ctx
    # YuniKorn checks the queue name before the partition here.
    assert _error(dao.queue_applications, ctx, "nope", "root.a!") == (400, INVALID_QUEUE_NAME)
    assert _error(dao.queue_applications, ctx, "nope", "root.a") == (404, "Partition not found")
    assert _error(dao.queue_applications, ctx, "default", "root.zzz") == (404, "Queue not found")


def test_applications_by_state_errors(rich: Rich) -> None:
    ctx = rich.ctx
    assert ALLOWED_STATES == "Only following application states are allowed: active, rejected, completed"
    assert ALLOWED_QUEUE_STATES == "Only following application states are allowed: active"
    assert _error(dao.applications_by_state, ctx, "default", "bogus", None) == (400, ALLOWED_STATES)
    assert _error(dao.applications_by_state, ctx, "nope", "bogus", None) == (404, "Partition not found")
    assert _error(dao.applications_by_state, ctx, "default", "active", "completed") == (400, ALLOWED_ACTIVE_STATUSES)
    assert _error(dao.applications_by_state, ctx, "default", "active", "bogus") == (400, ALLOWED_ACTIVE_STATUSES)
    # The status is only looked at for active.
    assert dao.applications_by_state(ctx, "default", "completed", "bogus") == dao.applications_by_state(
        ctx, "default", "completed", None)
    qs = dao.queue_applications_by_state
    assert _error(qs, ctx, "nope", "root.a", "active", None) == (404, "Partition not found")
    assert _error(qs, ctx, "default", "root.a!", "active", None) == (400, INVALID_QUEUE_NAME)
    assert _error(qs, ctx, "default", "root.zzz", "active", None) == (404, "Queue not found")
    assert _error(qs, ctx, "default", "root.a", "completed", None) == (400, ALLOWED_QUEUE_STATES)
    assert _error(qs, ctx, "default", "root.a", "active", "expired") == (400, ALLOWED_ACTIVE_STATUSES)
    assert ALLOWED_ACTIVE_STATUSES.startswith("Only following active statuses are allowed: ")
    assert sorted(ALLOWED_ACTIVE_STATUSES.split(": ")[1].split(",")) == sorted(
        ["new", "accepted", "running", "completing", "failing", "resuming"])


# -- nodes ----------------------------------------------------------------------------------------------------


def test_nodes(rich: Rich) -> None:
    n1, n2 = decode(dao.nodes(rich.ctx, "default"), ListOf(NODE))
    assert n1 == {
        "nodeID": "n1",
        "hostName": "host1",
        "rackName": "rack1",
        "attributes": {"si/hostname": "host1", "si/rackname": "rack1"},
        "capacity": {"memory": 4000, "vcore": 40000},
        "allocated": {"memory": 1100, "vcore": 1100},
        "occupied": {"memory": 50, "vcore": 50},
        "available": {"memory": 2850, "vcore": 38850},
        "utilized": {"memory": 27, "vcore": 2},
        "allocations": dao.application(rich.ctx, "default", "app-run")["allocations"],
        "foreignAllocations": [{"allocationKey": "f1", "resource": {"memory": 50, "vcore": 50}, "nodeId": "n1"}],
        "schedulable": True,
        "isReserved": False,
    }
    assert n2["isReserved"] is True and n2["reservations"] == ["b2"]
    assert [a["allocationKey"] for a in n2["allocations"]] == ["b1"]
    assert n2["utilized"] == {"memory": 75, "vcore": 5}
    assert "hostName" not in n2 and "occupied" not in n2
    assert dao.node(rich.ctx, "default", "n2") == n2


def test_nodes_empty_and_errors(world: World) -> None:
    assert decode(dao.nodes(world.context, "default"), ListOf(NODE)) == []
    world.add_node("n1")
    world.node("n1", si.NodeAction.DRAIN_NODE)
    node = decode(dao.node(world.context, "default", "n1"), NODE)
    assert node == {
        "nodeID": "n1",
        "capacity": {"memory": 1000, "vcore": 100},
        "available": {"memory": 1000, "vcore": 100},
        "schedulable": False,
        "isReserved": False,
    }
    assert _error(dao.node, world.context, "default", "n9") == (404, "Node not found")
    assert _error(dao.node, world.context, "nope", "n1") == (404, "Partition not found")
    assert _error(dao.nodes, world.context, "nope") == (404, "Partition not found")


def test_released_usage_is_pruned(world: World) -> None:
    world.add_node("n1")
    world.add_app("app-1")
    world.allocate("k1", "app-1", "n1")
    world.allocate("k2", "app-1", "n1")
    world.release("app-1", "k1")
    world.release("app-1", "k2")
    node = decode(dao.node(world.context, "default", "n1"), NODE)
    assert "allocated" not in node and "utilized" not in node and "allocations" not in node
    app = decode(dao.application(world.context, "default", "app-1"), APPLICATION)
    assert app["applicationState"] == "Completing"
    assert "usedResource" not in app and "pendingResource" not in app



def test_max_used_resource_and_resource_history(world: World) -> None:
    """maxUsedResource keeps the peak after releases; resourceHistory adds resource x whole
    seconds held, per instance type of the node, apart for placeholders and preemptions."""
    world.add_node("n1", memory=10_000, vcore=1_000, **{"si/instance-type": "m5.large"})
    world.add_node("n2", memory=10_000, vcore=1_000)
    world.add_app("app-1")
    world.allocate("k1", "app-1", "n1", res(memory=100, vcore=10))
    world.allocate("k2", "app-1", "n2", res(memory=300, vcore=1))
    world.ask("ph", "app-1", res(memory=7, vcore=1), placeholder=True, task_group_name="tg")
    world.commit("app-1", "ph", "n1")
    world.clock.advance(90.9)  # 90 whole seconds
    world.release("app-1", "k1")
    world.allocate("k3", "app-1", "n1", res(memory=50, vcore=50))
    world.clock.advance(10)
    world.release("app-1", "k2", termination=si.TerminationType.PREEMPTED_BY_SCHEDULER)
    world.release("app-1", "ph", termination=si.TerminationType.PLACEHOLDER_REPLACED)
    app = decode(dao.application(world.context, "default", "app-1"), APPLICATION)
    assert app["usedResource"] == {"memory": 50, "vcore": 50}
    # k1 + k2 + ph at once (407 memory, 12 vcore), then k2 + ph + k3 (357 memory, 52 vcore).
    assert app["maxUsedResource"] == {"memory": 407, "vcore": 52}
    assert app["resourceHistory"] == {
        "resourceUsage": {"m5.large": {"memory": 100 * 90, "vcore": 10 * 90}},
        "preemptedResource": {"UNKNOWN": {"memory": 300 * 100, "vcore": 1 * 100}},
        "placeholderResource": {"m5.large": {"memory": 7 * 100, "vcore": 1 * 100}},
    }
    world.release("app-1", "k3")
    app = decode(dao.application(world.context, "default", "app-1"), APPLICATION)
    assert "usedResource" not in app
    assert app["maxUsedResource"] == {"memory": 407, "vcore": 52}
    # k3 held 10 s.
    assert app["resourceHistory"]["resourceUsage"]["m5.large"] == {"memory": 9000 + 500, "vcore": 900 + 500}
