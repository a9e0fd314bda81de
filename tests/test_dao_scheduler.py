"""Scheduler-wide queries (clusters, health check, node utilisations, history, configuration,
validate-conf), user/group usage and the full state dump, checked with the strict decoder of
test_dao_strict; and that no query changes anything."""

from __future__ import annotations

import time
from typing import Any

import pytest
import yaml

from pyscheduler import dao
from pyscheduler.si import messages as si
from pyscheduler.dao.errors import HISTORY_NOT_ENABLED
from pyscheduler.scheduler.health_checker import HealthChecker, health_check_interval
from pyscheduler.scheduler.history import History
from pyscheduler.scheduler.loop import Scheduler
from rm_helpers import BASIC, TWO_PARTITIONS, World, check_invariants, res, world  # noqa: F401  (world: the fixture)
from test_dao_strict import (
    APP_HISTORY,
    CLUSTER,
    CONFIG,
    CONTAINER_HISTORY,
    GROUP,
    HEALTH,
    PARTITION_UTIL,
    STATE_DUMP,
    USER,
    VALIDATE,
    ListOf,
    Rich,
    build_rich,
    decode,
    rich,  # noqa: F401
)

T0 = 1_700_000_000_000_000_000


def _error(call: Any, *args: Any) -> tuple[int, str]:
    with pytest.raises(dao.DAOError) as err:
        call(*args)
    return err.value.status, err.value.message


# -- clusters ---------------------------------------------------------------------------------------


def test_clusters(rich: Rich) -> None:
    assert decode(dao.clusters(rich.ctx), ListOf(CLUSTER)) == [
        {
            "startTime": rich.ctx.start_time_ns,
            "rmBuildInformation": [{"rmId": "rm-1"}],
            "partition": "default",
            "clusterName": "kubernetes",
            "clusterId": "rm-1",
        }
    ]
    assert rich.ctx.start_time_ns > 0


def test_clusters_show_the_rms_whole_build_information() -> None:
    # YuniKorn returns the RM's build map as registered, plus rmId; the web UI's info panel
    # reads buildDate and buildVersion from it.
    build = {"buildDate": "2026-11-01T10:00:00+0000", "buildVersion": "1.7.0", "isPluginVersion": "false", "arch": "amd64"}
    world = World(register=False)
    world.proxy.register_resource_manager(
        si.RegisterResourceManagerRequest(rm_id="rm-k8s", version="1.7.0", policy_group="queues", config=BASIC,
                                          build_info=build),
        world.rm,
    )
    (cluster,) = decode(dao.clusters(world.context), ListOf(CLUSTER))
    assert cluster["rmBuildInformation"] == [{**build, "rmId": "rm-k8s"}]
    assert list(cluster["rmBuildInformation"][0]) == sorted(cluster["rmBuildInformation"][0])
    (registered,) = world.context.registered_rms()
    assert (registered.rm_id, registered.version, registered.build_info) == ("rm-k8s", "1.7.0", build)
    registered.build_info["buildVersion"] = "changed"  # a copy: the context is untouched
    assert world.context.registered_rms()[0].build_info == build


def test_config_extra_is_the_rms_extra_configuration() -> None:
    world = World(extra_config={"event.trackingEnabled": "true", "health.checkInterval": "45s"})
    body = dao.config(world.context)
    assert isinstance(body, dict)
    assert body["Extra"] == {"event.trackingEnabled": "true", "health.checkInterval": "45s"}
    # update_configuration replaces it, as the RM's configmap changes.
    world.reload(BASIC, extra_config={"event.ringBufferCapacity": "5000"})
    reloaded = dao.config(world.context)
    assert isinstance(reloaded, dict) and reloaded["Extra"] == {"event.ringBufferCapacity": "5000"}


def test_clusters_per_partition() -> None:
    world = World(TWO_PARTITIONS)
    try:
        clusters = decode(dao.clusters(world.context), ListOf(CLUSTER))
        assert [c["partition"] for c in clusters] == ["default", "gpu"]
    finally:
        world.close()
    empty = World(register=False)
    try:
        assert decode(dao.clusters(empty.context), ListOf(CLUSTER)) == []
    finally:
        empty.close()


# -- health check -----------------------------------------------------------------------------------------


def test_healthcheck_before_and_after_a_run(world: World) -> None:
    scheduler = Scheduler(world.context)
    assert _error(dao.healthcheck, world.context) == (404, "Health check is not available")
    checker = HealthChecker(world.context, scheduler)
    assert checker.last is None
    assert _error(dao.healthcheck, world.context) == (404, "Health check is not available")
    result = checker.run_once()
    assert checker.last is result
    body = decode(dao.healthcheck(world.context), HEALTH)
    assert body["Healthy"] is True
    names = [c["Name"] for c in body["HealthChecks"]]
    assert names[:11] == [
        "Scheduling errors", "Failed nodes", "Negative resources", "Negative resources",
        "Consistency of data", "Consistency of data", "Consistency of data", "Consistency of data",
        "Reservation check", "Orphan allocation on node check", "Orphan allocation on app check",
    ]


def test_healthcheck_unhealthy_is_still_served(world: World) -> None:
    scheduler = Scheduler(world.context)
    scheduler.errors = 3  # as a failed cycle counts it
    checker = HealthChecker(world.context, scheduler)
    checker.run_once()
    body = decode(dao.healthcheck(world.context), HEALTH)
    assert body["Healthy"] is False
    first = body["HealthChecks"][0]
    assert first == {
        "Name": "Scheduling errors",
        "Succeeded": False,
        "Description": "Check for scheduling error entries in metrics",
        "DiagnosisMessage": "There were 3 scheduling errors logged in the metrics",
    }


def test_health_checker_thread(world: World) -> None:
    checker = HealthChecker(world.context, None, interval=0.01)
    checker.start()
    try:
        deadline = time.monotonic() + 5
        while checker.last is None and time.monotonic() < deadline:
            time.sleep(0.005)
        assert checker.running and checker.last is not None
    finally:
        checker.stop()
    assert not checker.running
    once = HealthChecker(world.context, None, interval=0)
    once.start()
    deadline = time.monotonic() + 5
    while once.running and time.monotonic() < deadline:
        time.sleep(0.005)
    # interval <= 0: a single run, then the thread ends by itself.
    assert not once.running and once.last is not None
    once.stop()
    # The newest checker of a context is the one served.
    assert dao.healthcheck(world.context) == once.last.to_dao()


def test_health_check_interval_from_extra_config() -> None:
    assert health_check_interval({}) == 30.0
    assert health_check_interval({"health.checkInterval": "1m"}) == 60.0
    assert health_check_interval({"health.checkInterval": "0s"}) == 0.0
    assert health_check_interval({"health.checkInterval": "soon"}) == 30.0


# -- node utilisations ------------------------------------------------------------------------------------


def test_node_utilizations(rich: Rich) -> None:
    [entry] = decode(dao.node_utilizations(rich.ctx), ListOf(PARTITION_UTIL))
    assert entry["clusterId"] == "rm-1" and entry["partition"] == "default"
    assert [u["type"] for u in entry["utilizations"]] == ["memory", "vcore"]
    memory, vcore = entry["utilizations"]
    names = ["0-10%", "10-20%", "20-30%", "30-40%", "40-50%", "50-60%", "60-70%", "70-80%", "80-90%", "90-100%"]
    assert [b["bucketName"] for b in memory["utilization"]] == names
    # n1 uses 27% of its memory, n2 75%; both use under 10% of their vcores.
    assert memory["utilization"][2] == {"bucketName": "20-30%", "numOfNodes": 1, "nodeNames": ["n1"]}
    assert memory["utilization"][7] == {"bucketName": "70-80%", "numOfNodes": 1, "nodeNames": ["n2"]}
    assert sum(b.get("numOfNodes", 0) for b in memory["utilization"]) == 2
    assert vcore["utilization"][0] == {"bucketName": "0-10%", "numOfNodes": 2, "nodeNames": ["n1", "n2"]}


def test_node_utilizations_edges(world: World) -> None:
    # No node: the partition is listed without utilizations.
    assert decode(dao.node_utilizations(world.context), ListOf(PARTITION_UTIL)) == [
        {"clusterId": "rm-1", "partition": "default"}
    ]
    # Exactly 10% is the first bucket, 100% the last; an unused type is in the first.
    world.add_node("n1", memory=100, vcore=10)
    world.add_node("n2", memory=100, vcore=10)
    world.add_app("app-1")
    world.allocate("k1", "app-1", "n1", res(memory=10))
    world.allocate("k2", "app-1", "n2", res(memory=100))
    [entry] = dao.node_utilizations(world.context)
    memory = {b["bucketName"]: b.get("nodeNames") for b in entry["utilizations"][0]["utilization"]}
    assert memory["0-10%"] == ["n1"] and memory["90-100%"] == ["n2"]
    vcore = entry["utilizations"][1]["utilization"][0]
    assert vcore == {"bucketName": "0-10%", "numOfNodes": 2, "nodeNames": ["n1", "n2"]}
    empty = World(register=False)
    try:
        assert dao.node_utilizations(empty.context) is None  # JSON null, as upstream
    finally:
        empty.close()


# -- history -----------------------------------------------------------------------------------------------


def test_history(world: World) -> None:
    history = History(world.context, world.clock, capacity=3)
    assert decode(dao.history_apps(history), ListOf(APP_HISTORY)) == []
    assert decode(dao.history_containers(history), ListOf(CONTAINER_HISTORY)) == []
    world.add_node("n1")
    history.sample()
    world.add_app("app-1")
    world.allocate("k1", "app-1", "n1")
    # Live but not running (nothing allocated yet): YuniKorn counts only Running applications.
    world.add_app("app-2")
    world.ask("k2", "app-2", res(memory=10**9))
    world.clock.advance(60)
    history.sample()
    assert world.app("app-2").state.value != "Running"
    assert decode(dao.history_apps(history), ListOf(APP_HISTORY)) == [
        {"timestamp": T0, "totalApplications": "0"},
        {"timestamp": T0 + 60_000_000_000, "totalApplications": "1"},
    ]
    assert decode(dao.history_containers(history), ListOf(CONTAINER_HISTORY)) == [
        {"timestamp": T0, "totalContainers": "0"},
        {"timestamp": T0 + 60_000_000_000, "totalContainers": "1"},
    ]
    for _ in range(3):
        world.clock.advance(60)
        history.sample()
    # Capacity 3: the oldest samples went.
    assert [r["timestamp"] for r in dao.history_apps(history)] == [T0 + i * 60_000_000_000 for i in (2, 3, 4)]
    assert len(history) == 3


def test_history_thread(world: World) -> None:
    history = History(world.context, world.clock, interval=0.01)
    history.start()
    try:
        deadline = time.monotonic() + 5
        while not len(history) and time.monotonic() < deadline:
            time.sleep(0.005)
        assert history.running and len(history) >= 1
    finally:
        history.stop()
    assert not history.running


def test_history_not_enabled() -> None:
    assert _error(dao.history_apps, None) == (500, HISTORY_NOT_ENABLED)
    assert _error(dao.history_containers, None) == (500, "Internal metrics collection is not enabled.")


# -- configuration -----------------------------------------------------------------------------------------


def test_config_json(rich: Rich) -> None:
    conf = decode(dao.config(rich.ctx, True), CONFIG)
    assert conf["Checksum"] == rich.ctx.configs["queues"].checksum
    assert conf["DeadlockDetectionEnabled"] is False
    [part] = conf["Partitions"]
    assert part["Name"] == "default"
    assert part["NodeSortPolicy"] == {"Type": "binpacking", "ResourceWeights": {"memory": 2.0, "vcore": 1.5}}
    [root] = part["Queues"]
    assert root["SubmitACL"] == "*" and root["Parent"] is True
    a = root["Queues"][0]
    assert a["Resources"] == {"Guaranteed": {"memory": "1000", "vcore": "10"}, "Max": {"memory": "5000", "vcore": "50"}}
    assert a["Limits"] == [{"Limit": "dev group", "Groups": ["dev"], "MaxApplications": 4}]
    users = root["Queues"][2]
    assert users["ChildTemplate"] == {
        "MaxApplications": 3,
        "Properties": {"application.sort.policy": "fair"},
        "Resources": {"Max": {"memory": "1000", "vcore": "10"}},
    }
    rule = part["PlacementRules"][1]
    assert rule == {
        "Name": "user",
        "Create": True,
        "Filter": {"Type": "allow", "Users": ["alice", "bob"]},
        "Parent": {"Name": "fixed", "Filter": {"Type": ""}, "Value": "users"},
    }


def test_config_yaml(rich: Rich) -> None:
    text = dao.config(rich.ctx, False)
    assert isinstance(text, str)
    parsed = yaml.safe_load(text)
    assert list(parsed) == ["partitions", "checksum", "deadlocktimeoutseconds"]
    part = parsed["partitions"][0]
    assert part["name"] == "default"
    assert part["queues"][0]["queues"][0]["resources"]["max"] == {"memory": "5000", "vcore": "50"}
    assert "childtemplate" not in part["queues"][0]["queues"][0]  # an empty struct is left out in YAML


def test_config_without_any(world: World) -> None:
    empty = World(register=False)
    try:
        assert decode(dao.config(empty.context, True), CONFIG) == {
            "DeadlockDetectionEnabled": False,
            "DeadlockTimeoutSeconds": 60,
        }
    finally:
        empty.close()


def test_validate_conf() -> None:
    assert decode(dao.validate_conf("partitions: [{name: default, queues: [{name: root}]}]"), VALIDATE) == {
        "allowed": True
    }
    for text in ("partitions: [", "partitions: [{name: default, queues: [{name: root, foo: 1}]}]", "42"):
        result = decode(dao.validate_conf(text), VALIDATE)
        assert result["allowed"] is False and result["reason"], text


# -- user and group usage --------------------------------------------------------------------------------


def test_users_and_groups(rich: Rich) -> None:
    users = decode(dao.users(rich.ctx, "default"), ListOf(USER))
    assert [u["userName"] for u in users] == ["alice", "bob"]
    alice = users[0]
    assert alice == {
        "userName": "alice",
        "groups": {"app-run": "dev"},
        "queues": {
            "queuePath": "root",
            "resourceUsage": {"memory": 1100, "vcore": 1100},
            "runningApplications": ["app-run"],
            "maxResources": {"memory": 100000, "vcore": 100000},
            "maxApplications": 10,
            "children": [
                {
                    "queuePath": "root.a",
                    "resourceUsage": {"memory": 1100, "vcore": 1100},
                    "runningApplications": ["app-run"],
                }
            ],
        },
    }
    assert "groups" not in users[1]  # bob's apps have no group limit: not group-tracked
    assert dao.user(rich.ctx, "default", "alice") == alice
    # The partition is ignored (one user/group manager for the scheduler, as upstream).
    assert dao.user(rich.ctx, "anything", "alice") == alice
    groups = decode(dao.groups(rich.ctx, "ignored"), ListOf(GROUP))
    assert groups == [
        {
            "groupName": "dev",
            "applications": ["app-run"],
            "queues": {
                "queuePath": "root",
                "resourceUsage": {"memory": 1100, "vcore": 1100},
                "runningApplications": ["app-run"],
                "children": [
                    {
                        "queuePath": "root.a",
                        "resourceUsage": {"memory": 1100, "vcore": 1100},
                        "runningApplications": ["app-run"],
                        "maxApplications": 4,
                    }
                ],
            },
        }
    ]
    assert decode(dao.group(rich.ctx, "default", "dev"), GROUP) == groups[0]


def test_usage_errors(rich: Rich) -> None:
    ctx = rich.ctx
    assert _error(dao.user, ctx, "default", "") == (400, "User name is missing")
    assert _error(dao.user, ctx, "default", "1alice") == (400, "Invalid user name")
    assert _error(dao.user, ctx, "default", "al ice") == (400, "Invalid user name")
    assert _error(dao.user, ctx, "default", "carol") == (404, "User not found")
    assert _error(dao.group, ctx, "default", "") == (400, "Group name is missing")
    assert _error(dao.group, ctx, "default", "dev@x") == (400, "Invalid group name")
    assert _error(dao.group, ctx, "default", "ops") == (404, "Group not found")
    # Names the regexps allow beyond letters are only not found.
    assert _error(dao.user, ctx, "default", "svc@corp.example$") == (404, "User not found")


def test_usage_is_merged_over_partitions() -> None:
    world = World(TWO_PARTITIONS)
    try:
        world.add_node("n1")
        world.node("g1", resource=res(memory=1000, vcore=100), **{"si/node-partition": "gpu"})
        world.add_app("app-1", "root.a", user="alice")
        world.add_app("app-2", "root.a", user="alice", partition="gpu")
        world.allocate("k1", "app-1", "n1", res(memory=10, vcore=1))
        world.allocate("k2", "app-2", "g1", res(memory=20, vcore=2), partition="gpu")
        [alice] = decode(dao.users(world.context, "default"), ListOf(USER))
        assert alice["queues"]["resourceUsage"] == {"memory": 30, "vcore": 3}
        assert alice["queues"]["runningApplications"] == ["app-1", "app-2"]
        assert alice["queues"]["children"] == [
            {
                "queuePath": "root.a",
                "resourceUsage": {"memory": 30, "vcore": 3},
                "runningApplications": ["app-1", "app-2"],
            }
        ]
        assert decode(dao.groups(world.context, "default"), ListOf(GROUP)) == []
    finally:
        world.close()


# -- state dump --------------------------------------------------------------------------------------------


def test_fullstatedump(rich: Rich) -> None:
    history = History(rich.ctx, rich.world.clock)
    history.sample()
    dump = decode(dao.fullstatedump(rich.ctx, rich.scheduler, history), STATE_DUMP)
    assert list(dump) == [
        "timestamp", "partitions", "applications", "appHistory", "nodes", "clusterInfo", "containerHistory",
        "queues", "rmDiagnostics", "logLevel", "config", "placementRules", "eventStreams",
    ]
    assert dump["partitions"] == dao.partitions(rich.ctx)
    assert dump["queues"] == [dao.queues(rich.ctx, "default")]
    assert [a["applicationID"] for a in dump["applications"]] == ["app-b", "app-bob", "app-run", "app-done", "app-rej"]
    assert dump["nodes"] == [{"partitionName": "default", "clusterId": "rm-1", "nodesInfo": dao.nodes(rich.ctx, "default")}]
    running = sum(1 for a in dump["applications"] if a["applicationState"] == "Running")
    assert running == 2  # app-b is Accepted, app-bob and app-run are Running
    assert dump["appHistory"] == [{"timestamp": dump["timestamp"], "totalApplications": str(running)}]
    assert dump["containerHistory"] == [{"timestamp": dump["timestamp"], "totalContainers": "3"}]
    assert dump["clusterInfo"] == dao.clusters(rich.ctx)
    assert dump["placementRules"] == [
        {"partition": "default", "clusterId": "rm-1", "rules": dao.placement_rules(rich.ctx, "default")}
    ]
    assert dump["config"] == dao.config(rich.ctx, True)
    without = decode(dao.fullstatedump(rich.ctx), STATE_DUMP)
    assert without["appHistory"] == [] and without["containerHistory"] == []


# -- the queries change nothing -----------------------------------------------------------------------------


def _every_query(ctx: Any) -> list[Any]:
    calls: list[Any] = [
        dao.partitions(ctx), dao.placement_rules(ctx, "default"), dao.queues(ctx, "default"),
        dao.queue(ctx, "default", "root.a", True), dao.nodes(ctx, "default"), dao.node(ctx, "default", "n1"),
        dao.queue_applications(ctx, "default", "root.a"), dao.queue_application(ctx, "default", "root.a", "app-run"),
        dao.application(ctx, "default", "app-run"), dao.applications_by_state(ctx, "default", "active", None),
        dao.applications_by_state(ctx, "default", "completed", None),
        dao.applications_by_state(ctx, "default", "rejected", None),
        dao.queue_applications_by_state(ctx, "default", "root.a", "active", "running"),
        dao.users(ctx, "default"), dao.user(ctx, "default", "alice"), dao.groups(ctx, "default"),
        dao.group(ctx, "default", "dev"), dao.clusters(ctx), dao.node_utilizations(ctx), dao.config(ctx, True),
        dao.config(ctx, False), dao.fullstatedump(ctx),
    ]
    return calls


def test_queries_change_nothing() -> None:
    made = build_rich()
    try:
        ctx = made.ctx
        system = ctx.event_system
        assert system.flush(5.0)
        before_id = system.next_id()
        rm_view = dict(made.world.rm.allocations)
        first = _every_query(ctx)
        again = _every_query(ctx)
        assert first[:-1] == again[:-1]  # the dump's timestamp is the clock's, unchanged too
        assert first[-1] == again[-1]
        assert system.flush(5.0)
        assert system.next_id() == before_id  # no event: nothing changed
        check_invariants(ctx)
        assert dict(made.world.rm.allocations) == rm_view  # the RM heard of nothing new
    finally:
        made.scheduler.stop()
        made.world.close()


def test_a_health_check_that_cannot_run_is_reported_as_failed(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    # A check that raises (it did, on resources past int64, before arithmetic saturated) must
    # not leave /healthcheck serving the last good answer.
    checker = HealthChecker(world.context, None, interval=0)
    assert checker.run_once().healthy
    import pyscheduler.scheduler.health_checker as module

    def broken(*_: object) -> None:
        raise ValueError("a partition the checks cannot read")

    monkeypatch.setattr(module, "check_health", broken)
    result = checker.run_once()  # does not raise
    assert result.healthy is False
    body = dao.healthcheck(world.context)
    assert body["Healthy"] is False
    (check,) = body["HealthChecks"]
    assert check["Name"] == "Health check run" and check["Succeeded"] is False
    assert check["DiagnosisMessage"] == "The health checks could not run: ValueError: a partition the checks cannot read"
