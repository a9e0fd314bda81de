"""``POST /ws/v1/partition/{p}/whatif`` through a real gunicorn on 127.0.0.1 with the demo
cluster (4 nodes of 16 GiB / 8 cores, root.default kept busy): a fitting application is placed
with its nodes, one too large waits with a typed reason, hostile requests are 400s that change
nothing, and a huge request is cut at its budget with an answer saying so (docs/whatif.md)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import requests
from web_helpers import Server

GIB = 1 << 30
PATH = "/ws/v1/partition/default/whatif"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from web_helpers import launch, stop

    server = launch(tmp_path_factory.mktemp("whatif"), ["--demo"])
    # The demo's nodes are there within seconds.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        nodes = server.get("/ws/v1/partition/default/nodes").json()
        if isinstance(nodes, list) and len(nodes) == 4:
            break
        time.sleep(0.2)
    yield server
    assert stop(server) == 0
    log = server.log()
    assert "Traceback" not in log, log


def body(memory: int, vcore: int = 100, count: int = 1, **extra: Any) -> dict[str, Any]:
    return {"application": {"queueName": "root.default", "user": "dora"},
            "asks": [{"allocationKey": "t", "resource": {"memory": memory, "vcore": vcore}, "count": count}], **extra}


def test_a_fitting_application_is_placed_now_on_named_nodes(demo: Server) -> None:
    response = demo.request("POST", PATH, json=body(64 << 20, 10))
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["placedNow"] is True and answer["complete"] is True
    assert answer["asks"][0]["nodeID"] in {n["nodeID"] for n in demo.get("/ws/v1/partition/default/nodes").json()}
    assert answer["assumptions"]["ends"].startswith("unknown")
    # The live scheduler never saw it.
    apps = demo.get("/ws/v1/partition/default/queue/root.default/applications").json()
    assert answer["applicationID"] not in {a["applicationID"] for a in apps}


def test_one_too_large_waits_with_a_reason(demo: Server) -> None:
    answer = demo.request("POST", PATH, json=body(1024 * GIB)).json()
    assert answer["placed"] is False and answer["placedNow"] is False
    why = answer["asks"][0]["why"]
    assert why["code"] in ("QUEUE_QUOTA", "NO_NODE_FITS") and why["reason"]


@pytest.mark.parametrize("payload,status", [
    (b"{not json", 400),
    (b"[" * 100_000 + b"]" * 100_000, 400),
    (b"\xff\xfe", 400),
    (body(-1), 400),
    (body((1 << 63) - 1), 400),
    (body(1, count=-1), 400),
    (body(1, count=10**9), 400),
    (body(1, maxSeconds=1e300), 400),
    ({"application": {"queueName": "root.default"}, "asks": [{"resource": {"memory": 1}}]}, 400),
])
def test_hostile_requests_are_bad_requests(demo: Server, payload: Any, status: int) -> None:
    if isinstance(payload, bytes):
        response = demo.request("POST", PATH, data=payload, headers={"Content-Type": "application/json"})
    else:
        response = demo.request("POST", PATH, json=payload)
    assert response.status_code == status, response.text
    assert response.json()["status_code"] == status


def test_an_unknown_partition_is_not_found(demo: Server) -> None:
    assert demo.request("POST", "/ws/v1/partition/nosuch/whatif", json=body(1)).status_code == 404


def test_a_body_past_the_limit_is_refused(demo: Server) -> None:
    response = demo.request("POST", PATH, data=b" " * (17 << 20), headers={"Content-Type": "application/json"})
    assert response.status_code == 413


def test_a_huge_request_is_cut_at_its_budget(demo: Server) -> None:
    started = time.monotonic()
    response = demo.request("POST", PATH, json=body(1 << 20, 1, count=10_000, budgetSeconds=0.2), timeout=30)
    elapsed = time.monotonic() - started
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["complete"] is False and "budget" in answer["truncated"]
    assert elapsed < 5.0, f"took {elapsed:.1f} s"
    # The service caps what a request may ask for.
    capped = demo.request("POST", PATH, json=body(1, budgetSeconds=3600), timeout=30).json()
    assert capped["budgetSeconds"] == 10.0


def test_concurrent_what_ifs_run_one_at_a_time_and_the_api_keeps_answering(demo: Server) -> None:
    statuses: list[int] = []
    lock = threading.Lock()

    def ask() -> None:
        response = requests.post(demo.url + PATH, json=body(1 << 20, 1, count=10_000, budgetSeconds=1.0), timeout=30)
        with lock:
            statuses.append(response.status_code)

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    started = time.monotonic()
    health = demo.get("/ws/v1/scheduler/healthcheck")
    queues = demo.get("/ws/v1/partition/default/queues")
    answered = time.monotonic() - started
    for thread in threads:
        thread.join()
    assert health.status_code == 200 and queues.status_code == 200
    assert answered < 5.0
    assert set(statuses) <= {200, 429} and 200 in statuses


POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "probe", "namespace": "team", "labels": {"queue": "root.default", "applicationId": "probe-1"}},
       "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}

JOB_YAML = """
apiVersion: batch/v1
kind: Job
metadata: {name: etl, namespace: team}
spec:
  parallelism: 3
  template:
    metadata:
      labels: {queue: root.default, applicationId: etl-1}
    spec:
      containers: [{name: c, image: x, resources: {requests: {cpu: 200m, memory: 128Mi}}}]
"""


def test_a_pod_manifest_is_asked_as_the_shim_would_ask(demo: Server) -> None:
    answer = demo.request("POST", PATH, json={"manifest": POD}).json()
    assert answer["applicationID"] == "probe-1" and answer["placedNow"] is True
    assert [a["allocationKey"] for a in answer["asks"]] == ["probe"]


def test_a_job_manifest_in_yaml_asks_for_its_parallel_pods(demo: Server) -> None:
    answer = demo.request("POST", PATH, json={"manifest": JOB_YAML, "maxSeconds": 5}).json()
    assert answer["totalAsks"] == 3 and answer["horizonSeconds"] == 5
    assert answer["placedNow"] is True


@pytest.mark.parametrize("manifest,words", [
    ({"kind": "Deployment"}, "Pod or Job"),
    ({"kind": "Job", "spec": {}}, "spec.template"),
    ({"kind": "Job", "spec": {"parallelism": -1, "template": {}}}, "non-negative"),
    ("a: &a [*a, *a]\nb: [" * 1 + "]", "YAML"),
    ("[" * 5000 + "]" * 5000, "YAML"),
    ({**POD, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]}}, "manifest"),
])
def test_a_bad_manifest_is_a_bad_request(demo: Server, manifest: Any, words: str) -> None:
    response = demo.request("POST", PATH, json={"manifest": manifest})
    assert response.status_code == 400, response.text
    assert words in response.json()["message"]
