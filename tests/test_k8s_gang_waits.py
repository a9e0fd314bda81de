"""Gangs that wait, on a real API server (kwok nodes), through ``pyscheduler serve --rm
pyscheduler_k8s:attach`` (issue 34):

- a scheduler restarted while a gang reserves resumes the reservation: the gang of 4 whose
  placeholders only partly fit keeps its members unbound across the restart, keeps the same 4
  placeholder pods (no second set), and runs whole once a node with room comes, each member
  bound once, no placeholder left;
- a gang whose members are gated waits as a whole: with one of its 3 members still gated,
  nothing is placed and no placeholder made; the last gate going runs the gang."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kube_cluster import KubeCluster
from kube_served import PodRecorder, create_pods, delete_pods, events_of, list_pods, pod_body, running, serve, \
    small_cluster
from test_k8s_gang import QUEUES  # the FIFO leaf root.gangs, given by the pods' queue label
from web_helpers import Server, stop

pytestmark = pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")

NAMESPACE = "waits"
NODES = [f"wait-{n}" for n in range(3)]  # of 4 cpu
SPARE_NODE = "wait-3"


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeCluster]:
    with small_cluster(tmp_path_factory.mktemp("kube-waits"), NODES, NAMESPACE) as cluster:
        yield cluster


@pytest.fixture(autouse=True)
def clean(kube: KubeCluster) -> Iterator[None]:
    yield
    delete_pods(kube, NAMESPACE)
    kube.request("DELETE", f"/api/v1/nodes/{SPARE_NODE}")


def _gang(app: str, members: int, cpu: str, **spec: Any) -> list[dict[str, Any]]:
    groups = json.dumps([{"name": "workers", "minMember": members, "minResource": {"cpu": cpu}}])
    return [pod_body(f"{app}-{n}", app, "root.gangs", cpu, annotations={
        "yunikorn.apache.org/task-groups": groups, "yunikorn.apache.org/task-group-name": "workers",
        "yunikorn.apache.org/schedulingPolicyParameters": "placeholderTimeoutInSeconds=600 gangSchedulingStyle=Soft"},
        **spec) for n in range(members)]


def _members(kube: KubeCluster, app: str) -> list[dict[str, Any]]:
    return [p for p in list_pods(kube, NAMESPACE, f"applicationId={app}")
            if p["metadata"]["labels"].get("placeholder") != "true"]


def _placeholders(kube: KubeCluster, app: str) -> list[dict[str, Any]]:
    return list_pods(kube, NAMESPACE, f"placeholder=true,applicationId={app}")


def _names_and_uids(pods: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(p["metadata"]["name"], p["metadata"]["uid"]) for p in pods}


def _restart(kube: KubeCluster, server: Server, tmp: Path) -> Server:
    os.killpg(server.process.pid, signal.SIGTERM)
    server.process.wait(30)
    return serve(kube, tmp, QUEUES)


def test_a_restart_while_a_gang_reserves_resumes_the_reservation(kube: KubeCluster, tmp_path: Path) -> None:
    recorder = PodRecorder(kube, NAMESPACE)
    server = serve(kube, tmp_path, QUEUES)
    try:
        # 4 members of 3 cpu on 3 nodes of 4: 3 placeholders fit, the fourth waits.
        create_pods(kube, NAMESPACE, _gang("resume", 4, "3"))

        def three_of_four_placed() -> list[dict[str, Any]] | None:
            pods = _placeholders(kube, "resume")
            placed = [p for p in pods if p["spec"].get("nodeName")]
            return pods if len(pods) == 4 and len(placed) == 3 else None

        before = kube.wait_for("3 of 4 placeholders placed", three_of_four_placed, timeout=60)
        assert not any(p["spec"].get("nodeName") for p in _members(kube, "resume"))
        server = _restart(kube, server, tmp_path)
        app_path = "/ws/v1/partition/default/queue/root.gangs/application/resume"
        app = kube.wait_for("the gang back in the core", lambda: (a := server.get(app_path)).status_code == 200
                            and len(a.json().get("allocations") or ()) == 3 and a.json(), timeout=60)
        assert app["applicationState"] == "Accepted", app  # reserving, not running
        assert all(a["placeholder"] for a in app["allocations"])
        time.sleep(2.0)  # a member asking at once, or a second set of placeholders, would show by now
        assert not any(p["spec"].get("nodeName") for p in _members(kube, "resume"))
        assert _names_and_uids(_placeholders(kube, "resume")) == _names_and_uids(before)
        # Room for the fourth: the gang runs whole.
        kube.add_nodes([SPARE_NODE], cpu="4", memory="16Gi")
        kube.wait_for("the whole gang running", lambda: len(members := _members(kube, "resume")) == 4
                      and all(running(p) for p in members), timeout=90)
        kube.wait_for("no placeholder left", lambda: not _placeholders(kube, "resume"), timeout=60)
    finally:
        recorder.stop()
        stop(server)
    made = [p for p in recorder.added if p["metadata"].get("labels", {}).get("placeholder") == "true"]
    assert _names_and_uids(made) == _names_and_uids(before)  # never a second set
    for n in range(4):
        scheduled = [e for e in events_of(kube, NAMESPACE, f"resume-{n}") if e["reason"] == "Scheduled"]
        assert len(scheduled) == 1, scheduled  # each member bound once


def _ungate(kube: KubeCluster, name: str) -> None:
    answer = kube.session.patch(f"{kube.server}/api/v1/namespaces/{NAMESPACE}/pods/{name}", verify=False, timeout=10,
                                json=[{"op": "replace", "path": "/spec/schedulingGates", "value": []}],
                                headers={"Content-Type": "application/json-patch+json"})
    assert answer.status_code == 200, answer.text


def _condition(kube: KubeCluster, name: str) -> dict[str, Any] | None:
    pod = kube.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods/{name}").json()
    return next((c for c in pod.get("status", {}).get("conditions", ()) if c.get("type") == "PodScheduled"), None)


def test_a_gang_whose_members_are_gated_waits_as_a_whole(kube: KubeCluster, tmp_path: Path) -> None:
    server = serve(kube, tmp_path, QUEUES)
    try:
        create_pods(kube, NAMESPACE, _gang("gated", 3, "1", schedulingGates=[{"name": "example.com/hold"}]))
        _ungate(kube, "gated-0")
        _ungate(kube, "gated-1")
        said = kube.wait_for("the ungated members say why they wait", lambda: (c := _condition(kube, "gated-1"))
                             and "1 of 3 members are gated" in c.get("message", "") and c, timeout=30)
        assert said["reason"] == "SchedulingGated"
        time.sleep(2.0)
        assert not any(p["spec"].get("nodeName") for p in _members(kube, "gated"))
        assert not _placeholders(kube, "gated")
        assert server.get("/ws/v1/partition/default/queue/root.gangs/application/gated").status_code == 404
        _ungate(kube, "gated-2")
        kube.wait_for("the whole gang running", lambda: len(members := _members(kube, "gated")) == 3
                      and all(running(p) for p in members), timeout=60)
        kube.wait_for("no placeholder left", lambda: not _placeholders(kube, "gated"), timeout=60)
    finally:
        stop(server)
