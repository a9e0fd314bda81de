"""Several Kubernetes clusters, one served scheduler (issue 33, level 1): ``pyscheduler serve
--rm pyscheduler_k8s:attach --cluster east=... --cluster west=...`` under gunicorn, each cluster
a real control plane on loopback (tests/kube_cluster.py) with its own ConfigMap, Lease and RM.

Each cluster's pods are bound to its own nodes; the REST API shows both clusters' partitions
and leadership; one cluster's API server stopped leaves the other binding, and when it comes
back its shim lists it again: its new pods are bound, its old ones are not bound twice.
The ``--cluster`` flag's refusals are checked without a cluster."""

from __future__ import annotations

import itertools
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kube_cluster import KubeCluster, start_cluster
from kube_served import CONFIG_NAMESPACE, QUEUES, create_pods, events_of, pod_body, put_config_map

from pyscheduler.service import CoreOptions, SchedulerService
from pyscheduler_k8s import attach
from pyscheduler_k8s.clusters import SeveralClusters

sys.path.insert(0, str(Path(__file__).resolve().parent / "web"))
from web_helpers import Server, launch, stop  # noqa: E402

NAMESPACE = "team"
pytestmark = pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
_names = itertools.count()


def _cluster(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[KubeCluster]:
    cluster = start_cluster(tmp_path_factory.mktemp(f"kube-{name}"))
    try:
        cluster.add_nodes([f"{name}-0", f"{name}-1"], cpu="4", memory="8Gi")
        cluster.ensure_namespace(NAMESPACE)
        put_config_map(cluster, QUEUES)
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def east(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeCluster]:
    yield from _cluster(tmp_path_factory, "east")


@pytest.fixture(scope="module")
def west(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeCluster]:
    yield from _cluster(tmp_path_factory, "west")


def _pod(kube: KubeCluster, app: str) -> str:
    name = f"p{next(_names)}"
    create_pods(kube, NAMESPACE, [pod_body(name, app, "root.batch", "250m")])
    return name


def _node_of(kube: KubeCluster, name: str) -> str:
    pod: dict[str, Any] = kube.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods/{name}", timeout=10).json()
    return str(pod.get("spec", {}).get("nodeName") or "")


def _bound(kube: KubeCluster, name: str, timeout: float = 30.0) -> str:
    return str(kube.wait_for(f"pod {name} bound", lambda: _node_of(kube, name), timeout=timeout, interval=0.1))


def _shim_running(server: Server, cluster: str) -> bool:
    status = server.get(f"/ws/v1/k8s/{cluster}/leadership").json()
    return bool(status["role"] == "leader" and status.get("shim") == "running")


def test_two_clusters_each_bind_their_own_pods_and_one_down_stops_nothing_else(
        east: KubeCluster, west: KubeCluster, tmp_path: Path) -> None:
    assert east.server != west.server and east.workdir != west.workdir
    server = launch(tmp_path, ["--rm", "pyscheduler_k8s:attach", "--cluster", f"east={east.kubeconfig}",
                               "--cluster", f"west={west.kubeconfig}"],
                    {"PYSCHEDULER_K8S_NAMESPACE": CONFIG_NAMESPACE})
    try:
        # Each cluster's pod on its own cluster's nodes.
        east_pod, west_pod = _pod(east, "east-app"), _pod(west, "west-app")
        assert _bound(east, east_pod).startswith("east-")
        assert _bound(west, west_pod).startswith("west-")
        # One REST API: both clusters' partitions (the cluster is the partition's clusterId) and leadership.
        partitions = server.get("/ws/v1/partitions").json()
        assert sorted(p["clusterId"] for p in partitions) == ["east", "west"]
        both = server.get("/ws/v1/k8s/leadership").json()["clusters"]
        assert sorted(both) == ["east", "west"]
        assert all(s["role"] == "leader" and s["lease"] == f"{CONFIG_NAMESPACE}/pyscheduler" for s in both.values())
        for kube in (east, west):  # each cluster holds its own Lease
            lease = kube.request("GET", f"/apis/coordination.k8s.io/v1/namespaces/{CONFIG_NAMESPACE}/leases/pyscheduler")
            assert lease.status_code == 200 and lease.json()["spec"]["holderIdentity"]

        # East's API server goes away: west keeps binding, the REST API keeps answering.
        east.stop_apiserver()
        later = _pod(west, "west-app")
        assert _bound(west, later).startswith("west-")
        assert server.get("/ws/v1/k8s/leadership").status_code == 200
        assert server.get("/ws/v1/k8s/west/leadership").json()["role"] == "leader"

        # East comes back: its shim lists it again and binds its new pods; the old one stays where it was.
        east.restart_apiserver()
        server_sees = east.wait_for("east's shim running again", lambda: _shim_running(server, "east"), timeout=60)
        assert server_sees
        again = _pod(east, "east-app")
        assert _bound(east, again, timeout=60).startswith("east-")
        first_node = _node_of(east, east_pod)
        assert first_node.startswith("east-")
        scheduled = [e for e in events_of(east, NAMESPACE, east_pod) if e.get("reason") == "Scheduled"]
        assert len(scheduled) == 1, scheduled  # bound once, never again after the relist
    finally:
        code = stop(server)
    log = server.log()
    assert code == 0 and "Traceback" not in log, log  # the outage is said in one line per failure


def test_a_cluster_down_at_start_holds_up_nothing(east: KubeCluster, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the real ``attach`` in one process, leader election off: a cluster whose API server
    does not answer neither fails the start nor holds up the other, and says why it waits."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = int(sock.getsockname()[1])  # nothing listens once the block ends
    gone = tmp_path / "kubeconfig-gone"
    gone.write_text(east.kubeconfig.read_text().replace(east.server, f"https://127.0.0.1:{closed}"))
    monkeypatch.setenv("PYSCHEDULER_K8S_CLUSTERS", f"east={east.kubeconfig},gone={gone}")
    monkeypatch.setenv("PYSCHEDULER_K8S_LEADER_ELECTION", "false")
    monkeypatch.setenv("PYSCHEDULER_K8S_NAMESPACE", CONFIG_NAMESPACE)
    service = SchedulerService(CoreOptions(history=False, loop_idle_interval=0.02))
    service.attach(attach, name="k8s")
    service.start()  # returns although "gone" cannot be listed
    try:
        several = service.attachments[0].rm
        assert isinstance(several, SeveralClusters)
        assert sorted(several.members) == ["east", "gone"]
        name = _pod(east, "east-alone")
        assert _bound(east, name).startswith("east-")
        status = east.wait_for("gone says why it waits", lambda: (
            found if (found := dict(several.members["gone"].status())).get("problem") else None), timeout=10)
        assert status["shim"] == "starting" and "Unreachable" in str(status["problem"])
        # East's shim binds from the end of its start: its status says running once the start returned.
        assert east.wait_for("east's shim running", lambda: several.members["east"].status()["shim"] == "running",
                             timeout=10)
    finally:
        service.stop()


def _serve_refused(tmp_path: Path, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "pyscheduler.cli", "serve", *args], capture_output=True, text=True,
                          cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    return done.stderr


def test_the_cluster_flag_refuses_what_cannot_name_a_cluster(tmp_path: Path) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text("apiVersion: v1\nkind: Config\n")
    rm = ("--rm", "pyscheduler_k8s:attach")
    assert "not a DNS label" in _serve_refused(tmp_path, *rm, "--cluster", f"East_1={config}")
    assert "named twice" in _serve_refused(tmp_path, *rm, "--cluster", f"a={config}", "--cluster", f"a={config}")
    assert "no kubeconfig file" in _serve_refused(tmp_path, *rm, "--cluster", f"a={tmp_path / 'missing'}")
    assert "NAME=KUBECONFIG" in _serve_refused(tmp_path, *rm, "--cluster", "a")
    assert "needs --rm pyscheduler_k8s:attach" in _serve_refused(tmp_path, "--cluster", f"a={config}")
