"""Gang scheduling on a real API server (kwok nodes), through ``pyscheduler serve --rm
pyscheduler_k8s:attach``: pods written for YuniKorn's gang scheduling (task-groups annotations)
get placeholder pods owned by the application's first pod, run whole once the placeholders are
placed, and leave no placeholder behind; two gangs that cannot both fit never both sit
half-placed; a Hard timeout fails the job's pods as YuniKorn's shim does. The REST API shows the
placeholders (placeholderData, allocations' placeholder flags)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kube_cluster import KubeCluster
from kube_served import (PodRecorder, create_pods, delete_pods, events_of, list_pods, pod_body, running, serving,
                         small_cluster)
from web_helpers import Server

pytestmark = pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")

NAMESPACE = "jobs"
NODES = 4  # of 4 cpu: 16 cpu in all
QUEUES = """\
partitions:
  - name: default
    placementrules:
      - name: provided
        create: false
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: gangs
            properties: {application.sort.policy: fifo}
"""


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeCluster]:
    with small_cluster(tmp_path_factory.mktemp("kube-gang"), [f"gang-{n}" for n in range(NODES)], NAMESPACE) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def server(kube: KubeCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(kube, tmp_path_factory.mktemp("serve-gang"), QUEUES) as running_server:
        yield running_server


@pytest.fixture(autouse=True)
def clean(kube: KubeCluster) -> Iterator[None]:
    yield
    delete_pods(kube, NAMESPACE)


def _job(app: str, executors: int, *, timeout: int, style: str, cpu: str = "1") -> list[dict[str, Any]]:
    """A Spark-like job as YuniKorn's docs write it: a driver and its executors, every pod
    carrying the task groups (the first one read counts)."""
    groups = json.dumps([
        {"name": "driver", "minMember": 1, "minResource": {"cpu": cpu, "memory": "512Mi"}},
        {"name": "executor", "minMember": executors, "minResource": {"cpu": cpu, "memory": "512Mi"}}])

    def member(name: str, group: str) -> dict[str, Any]:
        body = pod_body(name, app, "root.gangs", cpu, annotations={
            "yunikorn.apache.org/task-groups": groups, "yunikorn.apache.org/task-group-name": group,
            "yunikorn.apache.org/schedulingPolicyParameters":
                f"placeholderTimeoutInSeconds={timeout} gangSchedulingStyle={style}"})
        body["spec"]["containers"][0]["resources"]["requests"]["memory"] = "512Mi"
        return body

    return [member(f"{app}-driver", "driver")] + [member(f"{app}-exec-{n}", "executor") for n in range(executors)]


def _members(kube: KubeCluster, app: str) -> list[dict[str, Any]]:
    return [p for p in list_pods(kube, NAMESPACE, f"applicationId={app}") if p["metadata"]["labels"].get("placeholder") != "true"]


def _placeholders(kube: KubeCluster, app: str = "") -> list[dict[str, Any]]:
    return list_pods(kube, NAMESPACE, "placeholder=true" + (f",applicationId={app}" if app else ""))


def _application(server: Server, app: str) -> dict[str, Any]:
    found: dict[str, Any] = server.get(f"/ws/v1/partition/default/queue/root.gangs/application/{app}").json()
    return found


def test_a_gang_job_runs_whole_and_its_placeholders_go(kube: KubeCluster, server: Server) -> None:
    recorder = PodRecorder(kube, NAMESPACE)  # placeholders may live less than a second
    try:
        started = time.monotonic()
        pods = create_pods(kube, NAMESPACE, _job("spark-1", 10, timeout=120, style="Soft"))
        kube.wait_for("the whole job running", lambda: len(_members(kube, "spark-1")) == 11
                      and all(running(p) for p in _members(kube, "spark-1")), timeout=90)
        whole = time.monotonic() - started
        kube.wait_for("every placeholder gone", lambda: not _placeholders(kube, "spark-1"), timeout=60)
    finally:
        recorder.stop()
    driver = pods[0]
    # The shim made one placeholder per member, owned (not controlled) by the first pod.
    placeholders = [p for p in recorder.added if p["metadata"].get("labels", {}).get("placeholder") == "true"]
    assert len(placeholders) == 11
    for placeholder in placeholders:
        owners = placeholder["metadata"]["ownerReferences"]
        assert [(o["kind"], o["uid"], o["controller"]) for o in owners] == [("Pod", driver["metadata"]["uid"], False)]
        assert placeholder["spec"]["containers"][0]["image"] == "registry.k8s.io/pause:3.7"
        assert placeholder["metadata"]["annotations"]["yunikorn.apache.org/placeholder"] == "true"
    groups = sorted(p["metadata"]["annotations"]["yunikorn.apache.org/task-group-name"] for p in placeholders)
    assert groups == ["driver"] + ["executor"] * 10
    # The core's view, through the REST API: 11 placeholders, all replaced by the members.
    app = kube.wait_for("the core's allocations", lambda: (a := _application(server, "spark-1"))
                        and len(a.get("allocations") or ()) == 11 and a, timeout=30)
    data = {d["taskGroupName"]: (d["count"], d.get("replaced", 0), d.get("timedout", 0)) for d in app["placeholderData"]}
    assert data == {"driver": (1, 1, 0), "executor": (10, 10, 0)}
    assert all(a.get("placeholderUsed") and not a.get("placeholder") for a in app["allocations"])
    reasons = [e["reason"] for e in events_of(kube, NAMESPACE, "spark-1-driver")]
    assert "GangScheduling" in reasons and "Scheduled" in reasons
    print(f"gang of 11 running whole {whole:.1f} s after its pods were created")


def test_two_gangs_that_cannot_both_fit_never_both_sit_half_placed(kube: KubeCluster, server: Server) -> None:
    # Each job needs 10 of the 16 cpu (62 %): only one fits at a time.
    create_pods(kube, NAMESPACE, _job("job-a", 9, timeout=10, style="Soft"))
    create_pods(kube, NAMESPACE, _job("job-b", 9, timeout=10, style="Soft"))
    deadline = time.monotonic() + 25
    samples = 0
    while time.monotonic() < deadline:
        placed = {app: sum(1 for p in _members(kube, app) if p["spec"].get("nodeName")) for app in ("job-a", "job-b")}
        half = [app for app, n in placed.items() if 0 < n < 10]
        assert len(half) < 2, f"both jobs half-placed: {placed}"
        samples += 1
        time.sleep(0.25)
    # The first job ran whole; the second, after its Soft timeout, runs what fits (no gang).
    assert all(running(p) for p in _members(kube, "job-a"))
    assert samples > 30
    assert not _placeholders(kube), "placeholders left after the timeout"


def test_a_hard_timeout_fails_the_pods(kube: KubeCluster, server: Server) -> None:
    # Other pods hold 8 of the 16 cpu: a job of 12 fits the cluster (the core accepts it) but
    # not what is free; its placeholders take the 8 left, the others wait, then time out.
    fillers = create_pods(kube, NAMESPACE, [pod_body(f"filler-{n}", "filler", "root.gangs") for n in range(8)])
    kube.wait_for("fillers running", lambda: all(running(p) for p in list_pods(kube, NAMESPACE, "applicationId=filler")),
                  timeout=60)
    pods = create_pods(kube, NAMESPACE, _job("too-big", 11, timeout=5, style="Hard"))

    def failed() -> bool:
        members = _members(kube, "too-big")
        return len(members) == 12 and all(p["status"].get("phase") == "Failed" for p in members)

    kube.wait_for("every pod of the job failed", failed, timeout=60)
    for member in _members(kube, "too-big"):
        assert member["status"]["reason"] == "ResourceReservationTimeout"
        assert member["status"]["message"] == "Scheduling has timed out due to insufficient resources"
        assert not member["spec"].get("nodeName")
    kube.wait_for("its placeholders deleted", lambda: not _placeholders(kube, "too-big"), timeout=60)
    assert "ResourceReservationTimeout" in [e["reason"] for e in events_of(kube, NAMESPACE, pods[0]["metadata"]["name"])]
    # The core failed the application, and the other pods never noticed.
    assert all(running(p) for p in list_pods(kube, NAMESPACE, "applicationId=filler"))
    assert len(fillers) == 8
    app = server.get("/ws/v1/partition/default/queue/root.gangs/application/too-big").json()
    assert app.get("applicationState") in ("Failed", None), app


def test_a_gang_the_queue_can_never_hold_is_refused_with_the_reason(kube: KubeCluster, server: Server) -> None:
    # 21 cpu of placeholders in a 16 cpu cluster: the core refuses the application at once.
    pods = create_pods(kube, NAMESPACE, _job("never-fits", 20, timeout=5, style="Hard"))

    def refused() -> bool:
        # As YuniKorn's shim: the pods of a refused application fail, with the core's reason.
        statuses = [p["status"] for p in _members(kube, "never-fits")]
        return len(statuses) == 21 and all(
            s.get("phase") == "Failed" and s.get("reason") == "ApplicationRejected"
            and "task group request" in s.get("message", "") for s in statuses)

    try:
        kube.wait_for("every pod says why", refused, timeout=30)
    except TimeoutError:
        raise AssertionError([(p["metadata"]["name"], p["status"]) for p in _members(kube, "never-fits")]) from None
    assert not _placeholders(kube, "never-fits")
    assert len(pods) == 21
