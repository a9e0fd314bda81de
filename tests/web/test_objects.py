"""The object endpoints over HTTP: each route reaches its query function with the right
parameters, and the answers (and DAO errors) come back in YuniKorn's shape. The DAO shapes
themselves are the query functions' tests; here the scenario RM's cluster (scenario_rm.py)
is only checked for what proves the wiring."""

from __future__ import annotations

import gzip

import pytest

from web_helpers import Server

P = "/ws/v1/partition/default"


def ok(server: Server, path: str, **kwargs) -> object:
    r = server.get(path, **kwargs)
    assert r.status_code == 200, f"{path}: {r.status_code} {r.text[:300]}"
    assert r.headers["Content-Type"] == "application/json; charset=UTF-8"
    assert r.headers["Access-Control-Allow-Methods"] == "GET, OPTIONS"
    assert r.content.endswith(b"\n")
    return r.json()


def error(server: Server, path: str, status: int, message: str) -> None:
    r = server.get(path)
    assert r.status_code == status, f"{path}: {r.status_code} {r.text[:300]}"
    assert r.json() == {"status_code": status, "message": message, "description": message}
    assert r.headers["Access-Control-Allow-Origin"] == "*"


def test_clusters_and_the_brief_s_redirects(server: Server) -> None:
    clusters = ok(server, "/ws/v1/clusters")
    assert [c["partition"] for c in clusters] == ["default"]
    assert clusters[0]["clusterName"] == "kubernetes"
    # The RM's whole build map as it registered it, plus rmId (the web UI's info panel reads
    # buildDate and buildVersion; they used to come back empty).
    assert clusters[0]["rmBuildInformation"] == [
        {"buildDate": "2026-01-01", "buildVersion": "test", "isPluginVersion": "false", "rmId": "test"}
    ]
    assert isinstance(clusters[0]["startTime"], int) and clusters[0]["startTime"] > 0
    for path in ("/ws/v1/clusters/", "/ws/v1/CLUSTERS"):
        first = server.get(path)
        assert first.status_code == 301 and first.headers["Location"] == "/ws/v1/clusters"
        final = server.get(path, allow_redirects=True)
        assert final.status_code == 200 and final.json() == clusters


def test_partitions_and_placement_rules(server: Server) -> None:
    (partition,) = ok(server, "/ws/v1/partitions")
    assert partition["name"] == "default" and partition["clusterId"] == "test"
    assert partition["totalNodes"] == 2
    assert partition["applications"]["total"] >= 2
    rules = ok(server, f"{P}/placementrules")
    assert [r["name"] for r in rules] == ["provided", "recovery"]
    error(server, "/ws/v1/partition/nope/placementrules", 404, "Partition not found")


def test_queues(server: Server) -> None:
    root = ok(server, f"{P}/queues")
    assert root["queuename"] == "root"
    assert sorted(c["queuename"] for c in root["children"]) == ["root.a", "root.b"]
    leaf = ok(server, f"{P}/queue/root.b")
    assert leaf["queuename"] == "root.b" and leaf["isLeaf"] is True and "children" not in leaf
    parent = ok(server, f"{P}/queue/root?subtree")
    assert sorted(c["queuename"] for c in parent["children"]) == ["root.a", "root.b"]
    assert "children" not in ok(server, f"{P}/queue/root")
    # The queue parameter is unescaped once more, as YuniKorn does (%252E -> %2E -> ".").
    assert ok(server, f"{P}/queue/root%252Eb")["queuename"] == "root.b"
    error(server, f"{P}/queue/root%25zz", 400, 'invalid URL escape "%zz"')
    error(server, f"{P}/queue/root.nope", 404, "Queue not found")
    error(server, "/ws/v1/partition/nope/queues", 404, "Partition not found")
    error(server, "/ws/v1/partition/nope/queue/root", 404, "Partition not found")
    r = server.get(f"{P}/queue/root.a!x")
    assert r.status_code == 400 and r.json()["message"].startswith("invalid queue name")


def test_nodes(server: Server) -> None:
    nodes = ok(server, f"{P}/nodes")
    assert sorted(n["nodeID"] for n in nodes) == ["node-1", "node-2"]
    node = ok(server, f"{P}/node/node-1")
    assert node["nodeID"] == "node-1" and node["hostName"] == "host-1"
    error(server, f"{P}/node/nope", 404, "Node not found")
    error(server, "/ws/v1/partition/nope/nodes", 404, "Partition not found")


def test_applications(server: Server) -> None:
    in_a = ok(server, f"{P}/queue/root.a/applications")
    assert "app-running" in [a["applicationID"] for a in in_a]
    app = ok(server, f"{P}/queue/root.a/application/app-running")
    assert app["applicationID"] == "app-running" and app["applicationState"] == "Running"
    assert sorted(a["allocationKey"] for a in app["allocations"]) == ["run-1", "run-2"]
    assert ok(server, f"{P}/application/app-pending")["queueName"] == "root.b"
    active = ok(server, f"{P}/applications/active")
    assert {"app-running", "app-pending"} <= {a["applicationID"] for a in active}
    running = ok(server, f"{P}/applications/active?status=running")
    assert [a["applicationID"] for a in running] == ["app-running"]
    assert [a["applicationID"] for a in ok(server, f"{P}/applications/ACTIVE?status=Accepted")] == ["app-pending"]
    assert isinstance(ok(server, f"{P}/applications/completed"), list)
    assert [a["applicationID"] for a in ok(server, f"{P}/queue/root.b/applications/active")] == ["app-pending"]
    error(server, f"{P}/application/nope", 404, "Application not found")
    error(server, f"{P}/queue/root.a/application/nope", 404, "Application not found")
    error(server, f"{P}/applications/bogus", 400,
          "Only following application states are allowed: active, rejected, completed")
    error(server, f"{P}/queue/root.a/applications/completed", 400,
          "Only following application states are allowed: active")
    r = server.get(f"{P}/applications/active?status=bogus")
    assert r.status_code == 400 and "active statuses" in r.json()["message"]


def test_user_and_group_usage(server: Server) -> None:
    users = ok(server, f"{P}/usage/users")
    assert "alice" in {u["userName"] for u in users}  # bob has nothing allocated: not tracked
    assert ok(server, f"{P}/usage/user/alice")["userName"] == "alice"
    # The partition parameter is ignored (one global user/group manager), as in YuniKorn.
    assert ok(server, "/ws/v1/partition/whatever/usage/user/alice")["userName"] == "alice"
    error(server, f"{P}/usage/user/zed", 404, "User not found")
    error(server, f"{P}/usage/user/a%20b", 400, "Invalid user name")
    error(server, f"{P}/usage/user/a%25zz", 400, 'invalid URL escape "%zz"')
    assert isinstance(ok(server, f"{P}/usage/groups"), list)
    error(server, f"{P}/usage/group/nobody", 404, "Group not found")


def test_scheduler_routes(server: Server) -> None:
    health = ok(server, "/ws/v1/scheduler/healthcheck")
    assert health["Healthy"] is True and health["HealthChecks"][0]["Name"] == "Scheduling errors"
    (util,) = ok(server, "/ws/v1/scheduler/node-utilizations")
    assert util["partition"] == "default" and len(util["utilizations"][0]["utilization"]) == 10
    assert isinstance(ok(server, "/ws/v1/history/apps"), list)  # sampled once a minute
    assert isinstance(ok(server, "/ws/v1/history/containers"), list)


def test_config_json_and_yaml(server: Server) -> None:
    as_json = ok(server, "/ws/v1/config", headers={"Accept": "application/json"})
    assert as_json["Partitions"][0]["Name"] == "default"
    assert len(as_json["Checksum"]) == 64
    r = server.get("/ws/v1/config")
    assert r.status_code == 200
    assert r.headers["Content-Type"] == "application/x-yaml; charset=UTF-8"
    assert r.headers["Access-Control-Allow-Origin"] == "*"
    assert r.text.startswith("partitions:") and r.text.endswith("\n")


def test_validate_conf(server: Server) -> None:
    url = "/ws/v1/validate-conf"
    good = server.request("POST", url, data=b"partitions:\n  - name: default\n    queues:\n      - name: root\n")
    assert good.status_code == 200
    assert good.json() == {"allowed": True}
    assert good.headers["Access-Control-Allow-Methods"] == "OPTIONS, POST"
    assert good.content.endswith(b"}\n")
    bad = server.request("POST", url, data=b"partitions:\n  - name: default\n    bogus: 1\n")
    assert bad.status_code == 200
    body = bad.json()
    assert body["allowed"] is False and "bogus" in body["reason"]
    empty = server.request("POST", url, data=b"")
    assert empty.status_code == 200 and "allowed" in empty.json()


def test_fullstatedump(server: Server, open_stream) -> None:
    stream = open_stream()
    stream.read_line()
    r = server.get("/ws/v1/fullstatedump", allow_redirects=True)
    assert r.status_code == 200 and r.url.endswith("/debug/fullstatedump")
    assert r.text.startswith('{\n  "'), "pretty-printed"
    dump = r.json()
    for key in ("timestamp", "partitions", "applications", "appHistory", "nodes", "clusterInfo",
                "containerHistory", "queues", "rmDiagnostics", "logLevel", "config", "placementRules",
                "eventStreams"):
        assert key in dump, key
    assert dump["nodes"][0]["partitionName"] == "default"
    assert [s["Name"] for s in dump["eventStreams"]] == ["127.0.0.1"]
    assert isinstance(dump["eventStreams"][0]["CreatedAt"], int)


def test_large_object_answers_are_gzipped(server: Server) -> None:
    r = server.get(f"{P}/applications/active", headers={"Accept-Encoding": "gzip"}, stream=True)
    raw = r.raw.read(decode_content=False)
    plain = gzip.decompress(raw) if r.headers.get("Content-Encoding") == "gzip" else raw
    assert (len(plain) >= 1400) == (r.headers.get("Content-Encoding") == "gzip")
    assert plain.endswith(b"\n")


@pytest.mark.parametrize("path", ["/ws/v1/partitions", f"{P}/nodes", f"{P}/queues"])
def test_head_is_405_on_object_routes(server: Server, path: str) -> None:
    r = server.request("HEAD", path)
    assert r.status_code == 405 and r.headers["Allow"] == "GET, OPTIONS"
