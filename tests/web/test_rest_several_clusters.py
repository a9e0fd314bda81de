"""One REST API over several clusters: two RMs attached to one served service (real gunicorn
on 127.0.0.1, ``--rm twin_clusters_rm:attach_east --rm twin_clusters_rm:attach_west``), each
with a ``default`` partition, its own node and application, and a node both call ``twin-node``.

- ``/ws/v1/partitions`` lists both partitions, each with its ``clusterId``;
- the qualified name ``[clusterId]default`` (raw brackets, or URL-encoded ``%5B...%5D``)
  reaches each cluster's queues, nodes, applications, placement rules and node reports;
- the plain ``default`` (which both have) is a 400 naming both qualified names, on every
  ``/partition/{p}/...`` route that looks the partition up; never silently the first;
- objects that name their partition carry ``clusterId`` (applications, queues, ``/clusters``,
  the state dump's groups); the metrics have one series per cluster.

With one RM the plain name keeps working (the session server of the other tests, and a check
here that the qualified name works there too).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from web_helpers import TEST_QUEUES, Server, launch, stop
from twin_clusters_rm import TWIN_MEMORY

CLUSTERS = ("cluster-east", "cluster-west")
EAST, WEST = "[cluster-east]default", "[cluster-west]default"
#: Every route under /partition/{p}/ that looks its partition up, with what exists in both clusters.
PARTITION_ROUTES = (
    "queues", "queue/root.default", "nodes", "node/twin-node", "placementrules", "applications/active",
    "queue/root.default/applications", "queue/root.default/applications/active", "application/east-app",
    "queue/root.default/application/east-app", "node/twin-node/reported", "rolehistory/any-key",
)


@pytest.fixture(scope="module")
def twins(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("twins")
    config = tmp / "queues.yaml"
    config.write_text(TEST_QUEUES.replace("          - name: a\n", "          - name: a\n          - name: default\n"))
    srv = launch(tmp, ["--config", str(config), "--rm", "twin_clusters_rm:attach_east",
                       "--rm", "twin_clusters_rm:attach_west"])
    try:
        for name in ("east", "west"):
            _wait_allocated(srv, name)
        yield srv
    finally:
        code = stop(srv)
    log = srv.log()
    assert code == 0, f"server exit status {code}:\n{log}"
    assert "Traceback" not in log and "[ERROR]" not in log, log


def _wait_allocated(server: Server, name: str) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        status = server.get(f"/ws/v1/{name}/status").json()
        if f"{name}-ask" in status["allocated"]:
            return
        time.sleep(0.05)
    raise AssertionError(f"{name}'s ask was not allocated:\n{server.log()}")


def _ok(server: Server, path: str) -> Any:
    response = server.get(path)
    assert response.status_code == 200, (path, response.status_code, response.text)
    return response.json()


def test_partitions_lists_both_clusters_default(twins: Server) -> None:
    partitions = _ok(twins, "/ws/v1/partitions")
    assert sorted((p["clusterId"], p["name"]) for p in partitions) == [(c, "default") for c in CLUSTERS]
    assert all(p["totalNodes"] == 2 for p in partitions)


@pytest.mark.parametrize("encoded", [False, True], ids=["raw-brackets", "percent-encoded"])
def test_the_qualified_name_reaches_each_clusters_objects(twins: Server, encoded: bool) -> None:
    for name in ("east", "west"):
        partition = f"[cluster-{name}]default"
        if encoded:
            partition = partition.replace("[", "%5B").replace("]", "%5D")
        base = f"/ws/v1/partition/{partition}"
        nodes = _ok(twins, f"{base}/nodes")
        assert sorted(n["nodeID"] for n in nodes) == sorted([f"{name}-node", "twin-node"])
        twin = _ok(twins, f"{base}/node/twin-node")
        assert twin["capacity"]["memory"] == TWIN_MEMORY[name]
        root = _ok(twins, f"{base}/queues")
        assert (root["partition"], root["clusterId"]) == ("default", f"cluster-{name}")
        assert all(child["clusterId"] == f"cluster-{name}" for child in root["children"])
        apps = _ok(twins, f"{base}/applications/active")
        assert [(a["applicationID"], a["partition"], a["clusterId"]) for a in apps] == [
            (f"{name}-app", "default", f"cluster-{name}")]
        app = _ok(twins, f"{base}/application/{name}-app")
        # Placed on one of this cluster's nodes, as its RM was told.
        placed = _ok(twins, f"/ws/v1/{name}/status")["allocated"][f"{name}-ask"]
        assert app["allocations"][0]["nodeId"] == placed
        queue_app = _ok(twins, f"{base}/queue/root.default/application/{name}-app")
        assert queue_app["applicationID"] == f"{name}-app"
        # The other cluster's application is not in this cluster's partition.
        other = "west" if name == "east" else "east"
        missing = twins.get(f"{base}/application/{other}-app")
        assert (missing.status_code, missing.json()["message"]) == (404, "Application not found")
        reported = twins.get(f"{base}/node/twin-node/reported")
        assert reported.status_code == 200, reported.text


@pytest.mark.parametrize("route", PARTITION_ROUTES)
def test_the_plain_name_both_have_is_a_400_naming_the_qualified_names(twins: Server, route: str) -> None:
    response = twins.get(f"/ws/v1/partition/default/{route}")
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["status_code"] == 400
    assert body["message"] == body["description"] == f"Partition default is ambiguous: use one of {EAST}, {WEST}"


def test_unknown_partitions_keep_yunikorns_404(twins: Server) -> None:
    for partition in ("nope", "[cluster-north]default", "[cluster-east]nope", "%5Bcluster-east%5Dnope"):
        response = twins.get(f"/ws/v1/partition/{partition}/queues")
        assert response.status_code == 404, (partition, response.text)
        assert response.json() == {"status_code": 404, "message": "Partition not found",
                                   "description": "Partition not found"}


def test_objects_naming_a_partition_carry_its_cluster(twins: Server) -> None:
    clusters = _ok(twins, "/ws/v1/clusters")
    assert sorted((c["clusterId"], c["partition"]) for c in clusters) == [(c, "default") for c in CLUSTERS]
    utilizations = _ok(twins, "/ws/v1/scheduler/node-utilizations")
    assert sorted(u["clusterId"] for u in utilizations) == list(CLUSTERS)
    dump = _ok(twins, "/debug/fullstatedump")
    assert sorted((a["clusterId"], a["applicationID"]) for a in dump["applications"]) == [
        ("cluster-east", "east-app"), ("cluster-west", "west-app")]
    assert sorted(q["clusterId"] for q in dump["queues"]) == list(CLUSTERS)
    assert sorted((n["clusterId"], n["partitionName"], len(n["nodesInfo"])) for n in dump["nodes"]) == [
        (c, "default", 2) for c in CLUSTERS]
    assert sorted(r["clusterId"] for r in dump["placementRules"]) == list(CLUSTERS)


def test_usage_ignores_the_partition_as_yunikorn_does(twins: Server) -> None:
    users = _ok(twins, "/ws/v1/partition/default/usage/users")
    assert [u["userName"] for u in users] == ["tester"]
    assert _ok(twins, f"/ws/v1/partition/{EAST}/usage/users") == users


def test_metrics_have_one_series_per_cluster(twins: Server) -> None:
    response = twins.get("/ws/v1/metrics")
    assert response.status_code == 200
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }
    for cluster in CLUSTERS:
        labels = (("cluster", cluster), ("partition", "default"))
        assert samples[("pyscheduler_partition_nodes", labels)] == 2
        assert samples[("pyscheduler_partition_applications", (*labels, ("state", "Running")))] == 1
        name = cluster.removeprefix("cluster-")
        assert samples[("pyscheduler_partition_capacity", (*labels, ("resource", "memory")))] == (
            (1 << 30) + TWIN_MEMORY[name])
        assert samples[("pyscheduler_partition_allocated", (*labels, ("resource", "memory")))] == 1 << 20
    assert samples[("pyscheduler_scheduler_partitions", ())] == 2


def test_with_one_rm_the_plain_and_the_qualified_name_both_work(server: Server) -> None:
    (partition,) = _ok(server, "/ws/v1/partitions")
    qualified = f"[{partition['clusterId']}]{partition['name']}"
    plain = _ok(server, f"/ws/v1/partition/{partition['name']}/queues")
    assert plain["clusterId"] == partition["clusterId"]
    assert _ok(server, f"/ws/v1/partition/{qualified}/placementrules") == _ok(
        server, f"/ws/v1/partition/{partition['name']}/placementrules")
    assert _ok(server, f"/ws/v1/partition/{qualified}/queues")["queuename"] == "root"
