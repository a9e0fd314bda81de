"""A rolling upgrade of the two served replicas while pods arrive (issue 36): the way a
Deployment with ``maxSurge: 1, maxUnavailable: 0`` replaces them, one at a time: a new replica is
started and waited for until it stands by, then an old one gets SIGTERM; first the standby, then
the leader. Real processes (``pyscheduler serve --rm pyscheduler_k8s:attach``, leader election on,
the Lease retried every 0.5 s, kube-scheduler's 15 s lease) against a real API server with kwok
nodes (tests/kube_cluster.py); a creator thread adds pods all along (a bounded number, at a
bounded rate) and a small gang arrives as the leader is told to stop.

What must hold: every pod ends bound, each bound once (one ``Scheduled`` event per pod, written by
the replica that led then, per the event's ``reportingInstance``; no binding refused with 409
Conflict in any replica's log; the pod's ``nodeName`` never changes once set, as a watch sees
every change), the gang runs whole with one placeholder per member (none made twice, which a
leader stopped halfway through a placeholder's replacement would cause), and the leader that
stops releases the Lease: the next leader binds well within the lease duration after the
SIGTERM. The handover time and the binding rate during the upgrade are printed (``-s``).
"""

from __future__ import annotations

import json
import re
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kube_cluster import KubeCluster
from kube_served import CONFIG_NAMESPACE, list_pods, pod_body, put_config_map, small_cluster
from web_helpers import Server, launch, stop

from pyscheduler_k8s.kubeapi import ClusterAccess, KubeApi, KubeApiError

pytestmark = pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")

NAMESPACE = "rollout"
NODES = 4  # of 4 cpu: the pods ask 10m each, the gang's members 500m
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
          - name: web
          - name: gangs
            properties: {application.sort.policy: fifo}
"""
#: kube-scheduler's lease duration, a shorter retry period: a released Lease is taken at the
#: standby's next retry, an unreleased one only after the lease duration.
LEASE_DURATION = 15.0
RETRY_PERIOD = 0.5
ENV = {"PYSCHEDULER_K8S_RETRY_PERIOD": str(RETRY_PERIOD)}
#: The creator's bounds: at most this many pods, at this rate.
MAX_PODS = 400
PODS_PER_SECOND = 15.0
GANG = "gang-1"
GANG_MEMBERS = 4
#: How long everything may take to be bound after the last pod was created.
SETTLE = 60.0
LEADERSHIP = "/ws/v1/k8s/leadership"
LEASE_PATH = f"/apis/coordination.k8s.io/v1/namespaces/{CONFIG_NAMESPACE}/leases/pyscheduler"


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeCluster]:
    with small_cluster(tmp_path_factory.mktemp("kube-rollout"), [f"node-{n}" for n in range(NODES)],
                       NAMESPACE) as cluster:
        yield cluster


class PodHistory:
    """Every change of the namespace's pods as a watch tells it: when each pod was first seen
    bound, and any pod whose ``nodeName`` changed once set (a second binding)."""

    def __init__(self, kube: KubeCluster) -> None:
        self.bound_at: dict[str, float] = {}
        self.node: dict[str, str] = {}
        self.rebound: list[str] = []
        self.added: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._api = KubeApi(ClusterAccess.from_kubeconfig(str(kube.kubeconfig)))
        path = f"/api/v1/namespaces/{NAMESPACE}/pods"
        _, version = self._api.list(path)
        self._thread = threading.Thread(target=self._run, args=(path, version), daemon=True)
        self._thread.start()

    def _run(self, path: str, version: str) -> None:
        try:
            for kind, pod in self._api.watch(path, version, timeout_seconds=900, stop=self._stop):
                self._note(kind, pod, time.monotonic())
        except KubeApiError:
            if not self._stop.is_set():
                raise

    def _note(self, kind: str, pod: dict[str, Any], seen: float) -> None:
        name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
        node = pod.get("spec", {}).get("nodeName") or ""
        with self._lock:
            if kind == "ADDED":
                self.added.append(pod)
            if not node:
                return
            before = self.node.setdefault(uid, node)
            if before != node:
                self.rebound.append(f"{name} ({uid}): {before} then {node}")
            self.bound_at.setdefault(name, seen)

    def bound_since(self, moment: float) -> list[tuple[float, str]]:
        with self._lock:
            return sorted((at, name) for name, at in self.bound_at.items() if at >= moment)

    def stop(self) -> None:
        self._stop.set()
        self._api.close_watches()
        self._thread.join(timeout=10)


class Creator:
    """Creates pods of 10m cpu (applications of ten pods each in ``root.web``) at
    :data:`PODS_PER_SECOND` until stopped or :data:`MAX_PODS` are made; its own connection."""

    def __init__(self, kube: KubeCluster) -> None:
        self.names: list[str] = []
        self.failures: list[str] = []
        self._api = KubeApi(ClusterAccess.from_kubeconfig(str(kube.kubeconfig)))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self.started = time.monotonic()
        self._thread.start()

    def _run(self) -> None:
        for n in range(MAX_PODS):
            if self._stop.wait(max(0.0, self.started + n / PODS_PER_SECOND - time.monotonic())):
                return
            name = f"web-{n:04d}"
            try:
                self._api.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods",
                                  pod_body(name, f"web-{n // 10:03d}", "root.web", "10m"))
            except KubeApiError as exc:
                self.failures.append(f"{name}: {exc}")
                continue
            self.names.append(name)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self._api.close_watches()


def _gang() -> list[dict[str, Any]]:
    """A gang of :data:`GANG_MEMBERS` pods in YuniKorn's task-group annotations (Hard: no member
    runs unless all can)."""
    groups = json.dumps([{"name": "workers", "minMember": GANG_MEMBERS, "minResource": {"cpu": "500m"}}])
    return [pod_body(f"{GANG}-{n}", GANG, "root.gangs", "500m", annotations={
        "yunikorn.apache.org/task-groups": groups, "yunikorn.apache.org/task-group-name": "workers",
        "yunikorn.apache.org/schedulingPolicyParameters": "placeholderTimeoutInSeconds=120 gangSchedulingStyle=Hard"})
        for n in range(GANG_MEMBERS)]


def _placeholders(history: PodHistory) -> list[str]:
    """The names of the placeholder pods created so far, once per creation."""
    return [p["metadata"]["name"] for p in list(history.added) if p["metadata"].get("labels", {}).get("placeholder")]


def _leadership(server: Server) -> dict[str, Any]:
    found: dict[str, Any] = server.get(LEADERSHIP).json()
    return found


def _replica(kube: KubeCluster, tmp: Path, servers: list[Server], *, leads: bool) -> tuple[Server, str]:
    """A new replica (added to ``servers``), returned once it is ready (healthy) and leads or
    stands by behind a leader it has seen; with its identity."""
    server = launch(tmp, ["--rm", "pyscheduler_k8s:attach"], {
        "PYSCHEDULER_K8S_KUBECONFIG": str(kube.kubeconfig), "PYSCHEDULER_K8S_NAMESPACE": CONFIG_NAMESPACE, **ENV})
    servers.append(server)
    want = "leader" if leads else "standby"
    status = kube.wait_for(f"the new replica is {want}", lambda: (
        found if (found := _leadership(server))["role"] == want and found["holder"]
        and (not leads or found.get("shim") == "running") else None), timeout=60, interval=0.1)
    assert server.get("/ws/v1/scheduler/healthcheck").status_code == 200
    return server, str(status["identity"])


def _terminate(server: Server) -> tuple[float, float]:
    """SIGTERM, as the kubelet stops a replaced pod; (when it was sent, when the process ended)."""
    sent = time.monotonic()
    server.process.send_signal(signal.SIGTERM)
    code = server.process.wait(timeout=30)
    ended = time.monotonic()
    assert code == 0, server.log()[-3000:]
    return sent, ended


def _scheduled_events(kube: KubeCluster) -> dict[str, list[str]]:
    """Pod name -> the ``reportingInstance`` of each of its ``Scheduled`` events."""
    events: dict[str, list[str]] = {}
    for event in kube.request("GET", f"/api/v1/namespaces/{NAMESPACE}/events", timeout=60).json()["items"]:
        if event.get("reason") == "Scheduled":
            events.setdefault(event["involvedObject"]["name"], []).append(event.get("reportingInstance", ""))
    return events


def test_a_rolling_upgrade_binds_every_pod_once(kube: KubeCluster, tmp_path: Path) -> None:
    test_started = time.monotonic()
    put_config_map(kube, QUEUES)
    servers: list[Server] = []
    history = PodHistory(kube)
    creator = Creator(kube)
    try:
        old_leader, leader_a = _replica(kube, tmp_path, servers, leads=True)
        old_standby, standby_b = _replica(kube, tmp_path, servers, leads=False)
        creator.start()
        kube.wait_for("the first pods bound", lambda: len(history.bound_at) >= 50, timeout=30)
        upgrade_started = time.monotonic()
        # maxSurge 1, maxUnavailable 0: a third replica stands by before the old standby goes.
        new_c, replica_c = _replica(kube, tmp_path, servers, leads=False)
        _terminate(old_standby)
        new_d, replica_d = _replica(kube, tmp_path, servers, leads=False)
        # The gang arrives as the leader is told to stop: its placeholders are in flight.
        for body in _gang():
            kube.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", body).raise_for_status()
        placeholders_at_sigterm = len(_placeholders(history))
        sigterm, ended = _terminate(old_leader)
        new_leader = kube.wait_for("a new leader", lambda: next(
            (s for s in (new_c, new_d) if _leadership(s)["role"] == "leader"), None), timeout=LEASE_DURATION + 15)
        new_identity = replica_c if new_leader is new_c else replica_d
        first_bind_after, pod = kube.wait_for("the new leader binds", lambda: next(iter(
            (at, name) for at, name in history.bound_since(ended)), None), timeout=LEASE_DURATION + 15)
        handover = first_bind_after - sigterm
        upgrade_ended = time.monotonic()
        time.sleep(8.0)  # pods still arrive under the new leader
        creator.stop()
        creation_ended = time.monotonic()
        created = creator.names + [f"{GANG}-{n}" for n in range(GANG_MEMBERS)]
        kube.wait_for("every pod bound", lambda: set(created) <= set(history.bound_at), timeout=SETTLE, interval=0.2)
        kube.wait_for("the gang's placeholders gone", lambda: not list_pods(kube, NAMESPACE, "placeholder=true"),
                      timeout=SETTLE)
        events = kube.wait_for("a Scheduled event on every pod", lambda: (
            found if set(created) <= set(found := _scheduled_events(kube)) else None), timeout=30, interval=0.5)
    finally:
        creator.stop()
        history.stop()
        codes = [stop(server) for server in servers]
    logs = {server.port: server.log() for server in servers}
    assert codes == [0] * len(servers), codes
    assert not creator.failures, creator.failures
    assert len(creator.names) >= 100, len(creator.names)
    # Bound once: the nodeName never changed, one Scheduled event per pod, written by a leader.
    assert not history.rebound, history.rebound
    twice = {name: instances for name, instances in events.items() if len(instances) != 1}
    assert not twice, twice
    writers = {instances[0] for name, instances in events.items() if name in created}
    assert writers <= {leader_a, new_identity}, (writers, leader_a, new_identity)
    assert standby_b not in writers
    assert events[pod] == [new_identity], (pod, events[pod])  # the first binding after the SIGTERM
    for port, log in logs.items():
        # A 409 would be a binding of a pod bound already; a 404 only a placeholder the core replaced
        # (deleted) while its own binding was still queued, which the member then took over.
        failed = re.findall(r"binding (\S+) to \S+ failed: (\d+)", log)
        assert all(code == "404" and name.startswith(f"{NAMESPACE}/tg-") for name, code in failed), (port, failed)
        assert "Traceback" not in log, f"replica on {port}:\n{log[-3000:]}"
    # The gang: one placeholder per member, none made twice, all gone; every member bound.
    placeholders = _placeholders(history)
    assert len(placeholders) == len(set(placeholders)) == GANG_MEMBERS, placeholders
    # The outgoing leader released the Lease: the new one took it at its next retry, not after
    # the lease duration; the Lease names it.
    assert "released lease" in logs[old_leader.port], logs[old_leader.port][-3000:]
    assert handover < LEASE_DURATION / 2, handover
    lease = kube.request("GET", LEASE_PATH).json()["spec"]
    assert lease["holderIdentity"] in (replica_c, replica_d, "")
    # From the first replica replaced to the end of the creation (8 s after the handover).
    rate = (len(history.bound_since(upgrade_started)) - len(history.bound_since(creation_ended))) / (
        creation_ended - upgrade_started)
    print(f"\nrolling upgrade: {len(created)} pods bound once each; handover {handover:.2f} s (SIGTERM of the leader "
          f"to its successor's first binding, {pod}; the old leader ended {ended - sigterm:.2f} s after SIGTERM); "
          f"upgrade {upgrade_ended - upgrade_started:.1f} s; {rate:.1f} pods/s bound from its start to the end of the "
          f"creation 8 s after the handover (created at {PODS_PER_SECOND:g}/s); "
          f"{placeholders_at_sigterm} of the gang's {GANG_MEMBERS} placeholders made when the leader got SIGTERM; "
          f"test {time.monotonic() - test_started:.1f} s")
