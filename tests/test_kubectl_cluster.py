"""``kubectl pyscheduler`` through a real kube-apiserver's service proxy, with the kubeconfig
(no ``--server``): the scheduler (served with the Kubernetes shim) behind the Service
``pyscheduler/pyscheduler`` as k8s/deploy names it, whose EndpointSlice points at the served process.

The API server proxies only to an address a pod has, and a pod's address may not be loopback. The
test keeps to this machine anyway: it makes a veth pair of its own (``ip link``, as root) whose
one end holds a private address no other host routes to, the scheduler listens there only, and
a pod stands for it (skipped where the pair cannot be made). The pods are real:
``why POD`` finds the pod's application and ask through the kube API, ``why job/NAME`` a Job's
pods by its selector (the Job's pod is made by hand: no controller manager runs).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kube_cluster import KubeCluster
from kube_served import QUEUES, create_pods, pod_body, put_config_map, running, small_cluster
from web_helpers import Server, launch, stop

PLUGIN = Path(sys.executable).parent / "kubectl-pyscheduler"
NAMESPACE = "team"


#: The host-only address the scheduler listens on (a private /30 on a veth pair of the test's).
ADDRESS = "10.254.254.1"
#: The pair's name, unique per run (at most 15 characters).
LINK = f"psk{os.getpid() % 100000}"


def _ip(*args: str) -> bool:
    return subprocess.run(["ip", *args], capture_output=True, timeout=10).returncode == 0


@pytest.fixture(scope="module", autouse=True)
def host_only_address() -> Iterator[str]:
    """``ADDRESS`` on one end of a veth pair made for the test, removed afterwards."""
    if shutil.which("ip") is None or not _ip("link", "add", LINK, "type", "veth", "peer", "name", LINK + "p"):
        pytest.skip("cannot make a veth pair here (needs iproute2 and root): the API server proxies to no loopback")
    try:
        if not (_ip("addr", "add", f"{ADDRESS}/30", "dev", LINK) and _ip("link", "set", LINK, "up")):
            pytest.skip(f"cannot put {ADDRESS} on {LINK}")
        yield ADDRESS
    finally:
        _ip("link", "del", LINK)


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeCluster]:
    with small_cluster(tmp_path_factory.mktemp("kube-kubectl"), ["node-0"], NAMESPACE) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def server(kube: KubeCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    put_config_map(kube, QUEUES)
    served = launch(tmp_path_factory.mktemp("serve-kubectl"), ["--rm", "pyscheduler_k8s:attach"],
                    {"PYSCHEDULER_K8S_KUBECONFIG": str(kube.kubeconfig), "PYSCHEDULER_K8S_NAMESPACE": "pyscheduler"},
                    host=ADDRESS)
    # The Service of k8s/deploy/30-deployment.yaml, without a selector; its EndpointSlice points
    # at the served process. The API server proxies only to an address some pod has
    # (status.podIPs): a pod stands for the scheduler's, bound to a node nobody runs.
    pod = {"metadata": {"name": "pyscheduler-0"}, "spec": {"nodeName": "scheduler-host", "containers": [
        {"name": "scheduler", "image": "registry.k8s.io/pause:3.7"}]}}
    assert kube.request("POST", "/api/v1/namespaces/pyscheduler/pods", pod).status_code == 201
    status = kube.session.patch(kube.server + "/api/v1/namespaces/pyscheduler/pods/pyscheduler-0/status",
                                json={"status": {"podIP": ADDRESS, "podIPs": [{"ip": ADDRESS}]}}, verify=False,
                                headers={"Content-Type": "application/strategic-merge-patch+json"}, timeout=10)
    assert status.status_code == 200, status.text
    for path, body in (
        ("/api/v1/namespaces/pyscheduler/services",
         {"metadata": {"name": "pyscheduler"}, "spec": {"ports": [{"name": "rest", "port": 9080,
                                                                   "targetPort": served.port}]}}),
        ("/apis/discovery.k8s.io/v1/namespaces/pyscheduler/endpointslices",
         {"metadata": {"name": "pyscheduler-1", "labels": {"kubernetes.io/service-name": "pyscheduler"}},
          "addressType": "IPv4",
          "endpoints": [{"addresses": [ADDRESS], "conditions": {"ready": True},
                         "targetRef": {"kind": "Pod", "namespace": "pyscheduler", "name": "pyscheduler-0"}}],
          "ports": [{"name": "rest", "port": served.port, "protocol": "TCP"}]}),
    ):
        answer = kube.request("POST", path, body)
        assert answer.status_code == 201, answer.text
    yield served
    stop(served)


def plugin(kube: KubeCluster, *args: str, kubeconfig: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(PLUGIN), "--kubeconfig", str(kubeconfig or kube.kubeconfig), *args],
                          capture_output=True, text=True, timeout=60)


def ok(kube: KubeCluster, *args: str) -> str:
    done = plugin(kube, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def pods(kube: KubeCluster, server: Server) -> dict[str, dict[str, Any]]:
    """``small`` (runs), ``big`` (8 cpu: no node fits) and the Job ``train``'s one pod (8 cpu)."""
    job = {"metadata": {"name": "train"}, "spec": {
        "manualSelector": True, "selector": {"matchLabels": {"job": "train"}},
        "template": {"metadata": {"labels": {"job": "train"}}, "spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.7"}]}}}}
    answer = kube.request("POST", f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs", job)
    assert answer.status_code == 201, answer.text
    created = create_pods(kube, NAMESPACE, [
        pod_body("small", "app-small", "root.default", "1"),
        pod_body("big", "app-big", "root.default", "8"),
        pod_body("train-0", "app-train", "root.batch", "8", labels={"job": "train"}),
    ])
    kube.wait_for("small running", lambda: running(kube.request(
        "GET", f"/api/v1/namespaces/{NAMESPACE}/pods/small").json()), timeout=60)
    for app in ("app-big", "app-train"):
        kube.wait_for(f"{app} pending in the scheduler", lambda app=app: server.get(
            f"/ws/v1/partition/default/application/{app}").json().get("pendingResource"), timeout=60)
    return {pod["metadata"]["name"]: pod for pod in created}


def test_queues_through_the_service_proxy(kube: KubeCluster, server: Server) -> None:
    lines = ok(kube, "queues", "--resources", "vcore").split("\n")
    assert lines[0].startswith("root  ")
    assert any(line.startswith("├── batch") or line.startswith("└── batch") for line in lines), lines
    # The same answer as the scheduler's own, through the proxy.
    assert ok(kube, "queues", "-o", "json").startswith("{")


def test_why_a_pending_pod_names_its_ask_and_the_nodes(kube: KubeCluster, pods: dict[str, dict[str, Any]]) -> None:
    uid = pods["big"]["metadata"]["uid"]
    lines = ok(kube, "why", "big", "-n", NAMESPACE).split("\n")
    assert lines[0].startswith("Application app-big in queue root.default (partition default): ")
    assert f"Ask {uid} needs vcore 8, pods 1" in lines, lines
    assert "  Nodes: 0 of 1 nodes would take it; refused: 1 not enough vcore" in lines, lines


def test_why_a_running_pod_says_where_it_runs(kube: KubeCluster, pods: dict[str, dict[str, Any]]) -> None:
    lines = ok(kube, "why", "pod/small", "-n", NAMESPACE).split("\n")
    assert lines[0] == f"Pod {NAMESPACE}/small runs on node node-0 (Running)"
    assert lines[1].startswith("Application app-small in queue root.default")


def test_why_a_job_asks_about_its_pods(kube: KubeCluster, pods: dict[str, dict[str, Any]]) -> None:
    out = ok(kube, "why", "job/train", "-n", NAMESPACE)
    assert out.startswith("Application app-train in queue root.batch (partition default): ")
    assert f"Ask {pods['train-0']['metadata']['uid']} needs vcore 8, pods 1" in out
    missing = plugin(kube, "why", "job/nope", "-n", NAMESPACE)
    assert missing.returncode == 1 and missing.stderr.startswith(f"error: 404: job {NAMESPACE}/nope: ")


def test_the_context_flag_picks_a_context(kube: KubeCluster, server: Server, tmp_path: Path) -> None:
    config = yaml.safe_load(kube.kubeconfig.read_text())
    config["clusters"].append({"name": "gone", "cluster": {"server": "https://127.0.0.1:9",
                                                           "insecure-skip-tls-verify": True}})
    config["contexts"].append({"name": "gone", "context": {"cluster": "gone", "user": "admin"}})
    config["current-context"] = "gone"
    two = tmp_path / "kubeconfig"
    two.write_text(yaml.safe_dump(config))
    assert plugin(kube, "queues", kubeconfig=two).returncode == 1
    done = plugin(kube, "--context", "local", "queues", kubeconfig=two)
    assert done.returncode == 0 and done.stdout.startswith("root  "), done.stderr


def test_a_missing_service_says_so(kube: KubeCluster, server: Server) -> None:
    done = plugin(kube, "queues", "--service", "pyscheduler/elsewhere")
    assert done.returncode == 1 and done.stderr.startswith("error: 404: service pyscheduler/elsewhere: ")


def test_the_real_kubectl_runs_the_plugin_through_the_proxy(kube: KubeCluster, server: Server) -> None:
    kubectl = shutil.which("kubectl")
    assert kubectl is not None, "kubectl must be on PATH (the machine's, as for the Kubernetes tests)"
    env = {**os.environ, "PATH": os.pathsep.join([str(PLUGIN.parent), str(Path(kubectl).parent)]),
           "KUBECONFIG": str(kube.kubeconfig)}
    done = subprocess.run([kubectl, "pyscheduler", "top", "--limit", "1"], capture_output=True, text=True, env=env,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[-2].split()[0] == "node-0"
