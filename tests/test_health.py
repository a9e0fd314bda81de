"""Health checks (pyscheduler.scheduler.health): YuniKorn's checks with its names, descriptions
and diagnosis wording, pyscheduler's additions, and that each check fails when (and only when)
its kind of damage is present. The damage is done by hand to the objects, since the scheduler
itself is not supposed to produce it; a healthy state is always reached through the RM
interface and the scheduling cycle."""

from __future__ import annotations

import threading

import pytest
from rm_helpers import TWO_PARTITIONS
from scheduling_helpers import Cluster, clusters, res  # noqa: F401

from pyscheduler.common.resources import Resource
from pyscheduler.objects.allocation import Allocation
from pyscheduler.objects.node import Node
from pyscheduler.si import messages as si
from pyscheduler.scheduler.health import HealthCheck, HealthResult, check_health

# YuniKorn's checks (pkg/scheduler/health_checker.go), in its order.
YUNIKORN = [
    ("Scheduling errors", "Check for scheduling error entries in metrics"),
    ("Failed nodes", "Check for failed nodes entries in metrics"),
    ("Negative resources", "Check for negative resources in the partitions"),
    ("Negative resources", "Check for negative resources in the nodes"),
    ("Consistency of data", "Check if a partition's allocated resource <= total resource of the partition"),
    ("Consistency of data", "Check if total partition resource == sum of the node resources from the partition"),
    ("Consistency of data", "Check if node total resource = allocated resource + occupied resource + available resource"),
    ("Consistency of data", "Check if node capacity >= allocated resources on the node"),
    ("Reservation check", "Check the reservation nr compared to the number of nodes"),
    ("Orphan allocation on node check", "Check if there are orphan allocations on the nodes"),
    ("Orphan allocation on app check", "Check if there are orphan allocations on the applications"),
]
ERRORS, FAILED_NODES, NEG_PARTITIONS, NEG_NODES, PART_ALLOCATED, PART_TOTAL, NODE_TOTAL, NODE_CAPACITY, \
    RESERVATION_RATIO, ORPHAN_NODE, ORPHAN_APP = (d for _, d in YUNIKORN)
NEG_QUEUES = "Check for negative resources in the queues"
NODE_SUM = "Check if node allocated resource == sum of the allocations on the node"
NODE_TOTAL = "Check if node total resource = allocated resource + occupied resource + available resource"
QUEUE_USAGE = ("Check if queue allocated and pending resources == sum of its applications (leaf) "
               "or of its children (parent)")
QUEUE_RUNNING = ("Check if queue running applications == running applications in the queue (leaf) "
                 "or in its children (parent)")
APP_SUMS = "Check if application allocated and pending resources == sum of its allocations and asks"
ROOT_MAX = "Check if root queue max resource == total resource of the partition"
RESERVATIONS = "Check if every reservation links an existing application, ask and node, and the node holds it"
UGM = "Check if the user and group usage matches the applications and their allocations"


def _busy(clusters, **kwargs) -> Cluster:
    """Two nodes of 50, two apps in two queues, allocations on both nodes, two waiting asks
    that hold a reservation each: every kind of object the checks look at."""
    c = clusters(**kwargs)
    c.add_node("node-00", memory=50, vcore=10)
    c.add_node("node-01", memory=50, vcore=10)
    c.add_app("app-1", "root.a", user="alice")
    c.add_app("app-2", "root.b", user="bob")
    c.asks("app-1", 4, memory=20)
    c.asks("app-2", 2, memory=20)
    assert c.schedule() == 4
    c.advance(2)
    c.once()
    assert len(c.reserved()) == 2
    return c


def _failed(result: HealthResult) -> set[str]:
    return {check.description for check in result.failed}


def _diagnosis(result: HealthResult, description: str) -> str:
    return result.by_description(description).diagnosis_message


# -- shape ------------------------------------------------------------------------------------------


def test_yunikorns_checks_come_first_with_its_names_and_descriptions(clusters) -> None:
    c = _busy(clusters)
    result = c.assert_healthy()
    assert [(ch.name, ch.description) for ch in result.checks[: len(YUNIKORN)]] == YUNIKORN
    # pyscheduler's additions follow, each with its own description.
    extra = [ch.description for ch in result.checks[len(YUNIKORN):]]
    assert extra == [NEG_QUEUES, NODE_SUM, QUEUE_USAGE, QUEUE_RUNNING, APP_SUMS, ROOT_MAX, RESERVATIONS, UGM]
    assert len({ch.description for ch in result.checks}) == len(result.checks)


def test_healthy_diagnosis_messages_use_yunikorns_wording(clusters) -> None:
    c = _busy(clusters)
    result = c.assert_healthy()
    assert [ch.diagnosis_message for ch in result.checks[: len(YUNIKORN)]] == [
        "There were 0 scheduling errors logged in the metrics",
        "There were 0 failed nodes logged in the metrics",
        "Partitions with negative resources: []",
        "Nodes with negative resources: []",
        "Partitions with inconsistent data: []",
        "Partitions with inconsistent data: []",
        "Nodes with inconsistent data: []",
        "Nodes with inconsistent data: []",
        "Reservation/node nr ratio: [1.000000]",  # two reservations on two nodes
        "Orphan allocations: []",
        "OrphanAllocations: []",
    ]


def test_dao_has_yunikorns_json_keys(clusters) -> None:
    c = _busy(clusters)
    dao = c.health().to_dao()
    assert list(dao) == ["Healthy", "HealthChecks"]
    assert dao["Healthy"] is True
    assert all(list(check) == ["Name", "Succeeded", "Description", "DiagnosisMessage"] for check in dao["HealthChecks"])
    assert dao["HealthChecks"][0] == {
        "Name": "Scheduling errors",
        "Succeeded": True,
        "Description": "Check for scheduling error entries in metrics",
        "DiagnosisMessage": "There were 0 scheduling errors logged in the metrics",
    }


def test_results_are_frozen() -> None:
    check = HealthCheck("n", True, "d", "m")
    result = HealthResult(True, (check,))
    with pytest.raises(AttributeError):
        result.healthy = False  # type: ignore[misc]
    with pytest.raises(AttributeError):
        check.succeeded = False  # type: ignore[misc]


def test_an_empty_scheduler_is_healthy_and_its_ratio_is_nan(clusters) -> None:
    c = clusters()
    result = c.assert_healthy()
    assert _diagnosis(result, RESERVATION_RATIO) == "Reservation/node nr ratio: [NaN]"
    # Without a scheduler there are no scheduling errors to count.
    assert check_health(c.context).healthy


# -- reading only -----------------------------------------------------------------------------------


def _snapshot(c: Cluster) -> tuple:
    part = c.partition
    return (
        c.mark(),
        {n: (node.allocated, node.available, dict(node.reservations)) for n, node in part.nodes.items()},
        {q.path: (q.allocated, q.pending, q.running_apps) for q in part.queues()},
        {a: (app.state, app.allocated, app.pending, sorted(app.asks)) for a, app in part.applications.items()},
        dict(c.reserved()),
        part.ugm.usage_dao(),
        part.node_ordering.ordered(),
        len(c.rm.calls),
    )


def test_checking_changes_nothing(clusters) -> None:
    c = _busy(clusters)
    before = _snapshot(c)
    for _ in range(3):
        c.assert_healthy()
    assert _snapshot(c) == before


def test_checks_stay_green_while_the_loop_and_the_rm_change_things(clusters) -> None:
    c = clusters()
    c.add_nodes(8)  # room for everything the rounds below leave in place
    c.add_app("app-1", "root.a")
    c.add_app("app-2", "root.b", user="bob")
    c.scheduler.start()
    problems: list[str] = []
    stop = threading.Event()

    def checker() -> None:
        while not stop.is_set():
            result = check_health(c.context, c.scheduler)
            if not result.healthy:
                problems.append(result.explain())

    thread = threading.Thread(target=checker)
    thread.start()
    try:
        for round_ in range(8):
            keys = c.asks("app-1", 5, prefix=f"r{round_}-a-") + c.asks("app-2", 5, prefix=f"r{round_}-b-")
            c.rm.wait_for(lambda rm, keys=keys: all(k in rm.allocations for k in keys) or None, "round placed")
            for key in keys[::2]:
                c.release("app-1" if "-a-" in key else "app-2", key)
    finally:
        stop.set()
        thread.join(10)
        c.scheduler.stop()
    assert problems == []
    c.assert_healthy()


# -- each check fails on its own kind of damage ----------------------------------------------------------


def test_scheduling_errors(clusters, monkeypatch) -> None:
    c = _busy(clusters)

    def broken(partition):
        raise RuntimeError("boom")

    monkeypatch.setattr(c.scheduler.cycle, "_schedule", broken)
    assert c.once() == []
    result = c.health()
    assert _failed(result) == {ERRORS}
    assert _diagnosis(result, ERRORS) == "There were 1 scheduling errors logged in the metrics"
    assert not result.healthy


def test_node_capacity_shrunk_below_its_allocations(clusters) -> None:
    # A real case: the RM lowers a node's capacity under what runs there.
    c = _busy(clusters)
    c.update_nodes(si.NodeInfo(node_id="node-00", action=si.NodeAction.UPDATE,
                               schedulable_resource=res(memory=30, vcore=10)))
    result = c.health()
    assert _failed(result) == {NEG_NODES, NODE_CAPACITY}
    assert _diagnosis(result, NEG_NODES) == 'Nodes with negative resources: ["node-00"]'
    assert _diagnosis(result, NODE_CAPACITY) == 'Nodes with inconsistent data: ["node-00"]'


def test_negative_occupied_resource_on_a_node(clusters) -> None:
    c = _busy(clusters)
    with c.partition.lock:  # what a broken update would leave (the node keeps available consistent)
        c.partition.nodes["node-01"].set_occupied(res(memory=-5))
    assert _failed(c.health()) == {NEG_NODES}


def test_a_node_whose_available_does_not_add_up(clusters) -> None:
    # The node keeps available with its total, allocated and occupied; a field changed behind
    # its back breaks the sum, and the check says so.
    c = _busy(clusters)
    c.partition.nodes["node-01"]._occupied = res(memory=5)
    assert _failed(c.health()) == {NODE_TOTAL}


def test_negative_partition_total(clusters) -> None:
    c = _busy(clusters)
    c.partition.total = res(memory=-10)
    result = c.health()
    assert _failed(result) == {NEG_PARTITIONS, PART_TOTAL, ROOT_MAX}
    name = c.partition.name
    assert _diagnosis(result, NEG_PARTITIONS) == f'Partitions with negative resources: ["{name}"]'


def test_partition_allocated_differs_from_its_nodes(clusters) -> None:
    c = _busy(clusters)
    root = c.partition.root
    root.allocated = root.allocated + res(memory=1)
    assert _failed(c.health()) == {PART_ALLOCATED, QUEUE_USAGE}


def test_node_total_differs_from_allocated_occupied_and_available(clusters, monkeypatch) -> None:
    c = _busy(clusters)
    monkeypatch.setattr(Node, "available", property(lambda self: self._total))
    result = c.health()
    assert _failed(result) == {NODE_TOTAL}
    assert _diagnosis(result, NODE_TOTAL) == 'Nodes with inconsistent data: ["node-00" "node-01"]'


def test_orphan_allocation_on_a_node(clusters) -> None:
    c = _busy(clusters)
    ghost = Allocation("ghost", "app-9", res(memory=1), node_id="node-00", allocated=True)
    with c.partition.lock:  # a bug under the lock, as every change is made
        c.partition.nodes["node-00"].add_allocation(ghost)
    result = c.health()
    assert _failed(result) == {ORPHAN_NODE, PART_ALLOCATED}
    assert _diagnosis(result, ORPHAN_NODE) == (
        "Orphan allocations: [applicationID=app-9, allocationKey=ghost, Node=node-00]")


def test_orphan_allocation_on_an_application(clusters) -> None:
    c = _busy(clusters)
    key, node_id = next(iter(c.placements().items()))
    with c.partition.lock:
        c.partition.nodes[node_id].remove_allocation(key)
    result = c.health()
    assert _failed(result) == {ORPHAN_APP, PART_ALLOCATED}
    app_id = c.rm.allocations[key].application_id
    assert _diagnosis(result, ORPHAN_APP) == f"OrphanAllocations: [applicationID={app_id}, allocationKey={key}, Node={node_id}]"


def test_negative_queue_resources(clusters) -> None:
    c = _busy(clusters)
    queue = c.queue("root.b")
    queue.pending = res(memory=-1)
    result = c.health()
    assert _failed(result) == {NEG_QUEUES, QUEUE_USAGE}
    assert _diagnosis(result, NEG_QUEUES) == 'Queues with negative resources: ["root.b"]'


def test_node_allocated_differs_from_its_allocations(clusters) -> None:
    c = _busy(clusters)
    node = c.partition.nodes["node-01"]
    node._allocated = node._allocated + res(memory=1)
    # Changed behind the node's back: its kept available no longer adds up either.
    assert _failed(c.health()) == {NODE_SUM, PART_ALLOCATED, NODE_TOTAL}


def test_leaf_queue_usage_differs_from_its_apps(clusters) -> None:
    c = _busy(clusters)
    c.app("app-1").pending = c.app("app-1").pending + res(memory=1)
    result = c.health()
    assert _failed(result) == {QUEUE_USAGE, APP_SUMS}
    assert _diagnosis(result, QUEUE_USAGE) == 'Queues with inconsistent data: ["root.a"]'
    assert _diagnosis(result, APP_SUMS) == 'Applications with inconsistent data: ["app-1"]'


def test_parent_queue_usage_differs_from_its_children(clusters) -> None:
    c = _busy(clusters)
    c.queue("root.a").allocated = c.queue("root.a").allocated + res(memory=1)
    result = c.health()
    # root.a against its apps, root against its children.
    assert _failed(result) == {QUEUE_USAGE}
    assert _diagnosis(result, QUEUE_USAGE) == 'Queues with inconsistent data: ["root" "root.a"]'


def test_queue_running_apps_differ(clusters) -> None:
    c = _busy(clusters)
    c.queue("root.b").running_apps += 1
    result = c.health()
    assert _failed(result) == {QUEUE_RUNNING}
    assert _diagnosis(result, QUEUE_RUNNING) == 'Queues with inconsistent data: ["root" "root.b"]'


def test_root_max_differs_from_the_partition_total(clusters) -> None:
    c = _busy(clusters)
    with c.partition.lock:
        c.partition.root.set_max_resource(res(memory=1))
    assert _failed(c.health()) == {ROOT_MAX}


def test_reservation_the_node_does_not_hold(clusters) -> None:
    c = _busy(clusters)
    key, node_id = sorted(c.reserved().items())[0]
    c.partition.nodes[node_id].reservations.pop(key)
    result = c.health()
    assert _failed(result) == {RESERVATIONS}
    assert "the node does not hold it" in _diagnosis(result, RESERVATIONS)
    # The node still looks reserved in the node order while it holds nothing.
    assert f"node {node_id}: reserved in the node order" in _diagnosis(result, RESERVATIONS)


def test_reservation_for_an_ask_that_is_gone(clusters) -> None:
    c = _busy(clusters)
    key = sorted(c.reserved())[0]
    app_id = c.partition.reservations.by_key[key].app_id
    c.app(app_id).asks.pop(key)
    result = c.health()
    assert RESERVATIONS in _failed(result)
    assert f"{key} ({app_id} on" in _diagnosis(result, RESERVATIONS)
    assert "unknown ask" in _diagnosis(result, RESERVATIONS)


def test_reservation_held_by_a_node_only(clusters) -> None:
    c = _busy(clusters)
    c.partition.nodes["node-00"].reservations["ghost"] = res(memory=1)
    result = c.health()
    assert _failed(result) == {RESERVATIONS}
    assert "ghost (on node-00): held by the node, unknown to the partition" in _diagnosis(result, RESERVATIONS)


def test_reserved_node_not_hidden_by_the_node_order(clusters) -> None:
    c = _busy(clusters)
    node_id = sorted(c.reserved().values())[0]
    c.partition.node_ordering.set_reserved(node_id, False)
    result = c.health()
    assert _failed(result) == {RESERVATIONS}
    assert f"node {node_id}: not reserved in the node order" in _diagnosis(result, RESERVATIONS)


def test_user_usage_differs_from_the_allocations(clusters) -> None:
    c = _busy(clusters)
    with c.partition.lock:
        c.partition.ugm.increase_usage("root.a", "app-1", "alice", (), res(memory=5))
    result = c.health()
    assert _failed(result) == {UGM}
    assert "user alice at root.a" in _diagnosis(result, UGM)


def test_user_group_manager_inconsistent_with_itself(clusters) -> None:
    c = _busy(clusters)
    c.partition.ugm._apps["app-2"].usage = Resource()
    result = c.health()
    assert _failed(result) == {UGM}
    assert "user bob at root" in _diagnosis(result, UGM)


def test_every_partition_is_checked(clusters) -> None:
    c = clusters(TWO_PARTITIONS)
    c.update_nodes(si.NodeInfo(node_id="g1", action=si.NodeAction.CREATE, schedulable_resource=res(memory=10),
                               attributes={"si/node-partition": "gpu"}))
    c.add_node("d1")
    result = c.assert_healthy()
    assert _diagnosis(result, RESERVATION_RATIO) == "Reservation/node nr ratio: [0.000000 0.000000]"
    gpu = c.context.partition("rm-sched", "gpu")
    gpu.nodes["g1"]._allocated = res(memory=1)
    result = c.health()
    assert _diagnosis(result, NODE_SUM) == 'Nodes with inconsistent data: ["g1"]'
    assert _diagnosis(result, PART_ALLOCATED) == f'Partitions with inconsistent data: ["{gpu.name}"]'
