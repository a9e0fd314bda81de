"""A scheduler with the Kubernetes shim attached, for the tests against a real API server
(tests/kube_cluster.py starts one)."""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from kube_cluster import KubeCluster, start_cluster

from pyscheduler.service import CoreOptions, SchedulerService
from pyscheduler_k8s.kubeapi import ClusterAccess, KubeApi, KubeApiError
from pyscheduler_k8s.shim import KubeShim, ShimOptions

QUEUES = """\
partitions:
  - name: default
    placementrules:
      - name: provided
        create: true
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: default
          - name: batch
"""
PARTITION = "[pyscheduler-k8s]default"

sys.path.insert(0, str(Path(__file__).resolve().parent / "web"))
from web_helpers import Server, launch, stop  # noqa: E402


class Served:
    """A scheduler with the shim attached, as ``pyscheduler serve --rm pyscheduler_k8s:attach``
    runs them: ``kubeconfig`` (default the cluster's admin one) says who the shim is;
    ``start_shim`` False leaves starting it to the caller (a replica starts its own); ``queues`` the
    configuration without a ConfigMap (default :data:`QUEUES`)."""

    def __init__(self, kube: KubeCluster, options: ShimOptions | None = None, *, kubeconfig: Path | None = None,
                 start_shim: bool = True, queues: str = "") -> None:
        # The core's entry point, without history and with a quick idle loop; its background
        # threads run (the event publisher: request events reach the shim through it).
        self.service = SchedulerService(CoreOptions(history=False, loop_idle_interval=0.02))
        self.context = self.service.context
        self.scheduler = self.service.scheduler
        self.proxy = self.service.proxy
        self.api = KubeApi(ClusterAccess.from_kubeconfig(str(kubeconfig or kube.kubeconfig)))
        self.shim = KubeShim(self.proxy, self.api, queues or QUEUES, options)
        self._attached = start_shim
        if start_shim:
            self.service.attach(lambda _service: _started(self.shim), name="kube shim")
        self.service.start()

    def stop(self) -> None:
        if not self._attached:  # the caller started it (a replica starts its own)
            self.shim.stop()
        self.service.stop()

    def app_allocations(self, app_id: str) -> int:
        partition = self.context.partitions[PARTITION]
        with partition.lock:
            app = partition.applications.get(app_id)
            return 0 if app is None else len(app.allocations)


@contextlib.contextmanager
def served_while(kube: KubeCluster, *, then: Callable[[], object] | None = None) -> Iterator[Served]:
    """A :class:`Served` for the block (a test's fixture), stopped after it, then ``then()``
    (the test's clean-up of what it made)."""
    running = Served(kube)
    try:
        yield running
    finally:
        running.stop()
        if then is not None:
            then()


def _started(shim: KubeShim) -> KubeShim:
    shim.start()
    return shim


# -- the service as users run it: ``pyscheduler serve --rm pyscheduler_k8s:attach`` -----------------

CONFIG_NAMESPACE = "pyscheduler"


def put_config_map(kube: KubeCluster, queues: str, namespace: str = CONFIG_NAMESPACE) -> None:
    """The ``pyscheduler-configs`` ConfigMap holding ``queues``, created or replaced."""
    kube.ensure_namespace(namespace)
    body = {"metadata": {"name": "pyscheduler-configs", "namespace": namespace}, "data": {"queues.yaml": queues}}
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    answer = kube.request("POST", path, body)
    if answer.status_code == 409:
        answer = kube.request("PUT", f"{path}/pyscheduler-configs", body)
    assert answer.status_code in (200, 201), answer.text


def serve(kube: KubeCluster, tmp: Path, queues: str, *args: str) -> Server:
    """``pyscheduler serve ARGS`` (gunicorn on loopback, the REST API) with the shim on ``kube``,
    configured by a ConfigMap holding ``queues``."""
    put_config_map(kube, queues)
    return launch(tmp, ["--rm", "pyscheduler_k8s:attach", *args],
                  {"PYSCHEDULER_K8S_KUBECONFIG": str(kube.kubeconfig), "PYSCHEDULER_K8S_NAMESPACE": CONFIG_NAMESPACE})


def create_pods(kube: KubeCluster, namespace: str, bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Creates the pods in order (one at a time: their creation order is the test's), returns them."""
    created = []
    for body in bodies:
        answer = kube.request("POST", f"/api/v1/namespaces/{namespace}/pods", body, timeout=30)
        assert answer.status_code == 201, answer.text
        created.append(answer.json())
    return created


def list_pods(kube: KubeCluster, namespace: str, selector: str = "") -> list[dict[str, Any]]:
    path = f"/api/v1/namespaces/{namespace}/pods" + (f"?labelSelector={selector}" if selector else "")
    items: list[dict[str, Any]] = kube.request("GET", path, timeout=60).json()["items"]
    return items


def delete_pods(kube: KubeCluster, namespace: str) -> None:
    """Every pod of the namespace deleted at once, waited for."""
    kube.request("DELETE", f"/api/v1/namespaces/{namespace}/pods?gracePeriodSeconds=0")
    kube.wait_for("pods deleted", lambda: not list_pods(kube, namespace), timeout=60)


def running(pod: dict[str, Any]) -> bool:
    return bool(pod.get("spec", {}).get("nodeName")) and pod.get("status", {}).get("phase") == "Running"


def events_of(kube: KubeCluster, namespace: str, name: str) -> list[dict[str, Any]]:
    items = kube.request("GET", f"/api/v1/namespaces/{namespace}/events").json().get("items", [])
    return [e for e in items if e.get("involvedObject", {}).get("name") == name]


def pod_body(name: str, app: str, queue: str, cpu: str = "1", *, labels: dict[str, str] | None = None,
             annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"applicationId": app, "queue": queue, **(labels or {})},
                         "annotations": dict(annotations or {})},
            "spec": {"schedulerName": "pyscheduler", "containers": [
                {"name": "c", "image": "registry.k8s.io/pause:3.7", "resources": {"requests": {"cpu": cpu}}}], **spec}}


@contextlib.contextmanager
def small_cluster(workdir: Path, nodes: list[str], namespace: str) -> Iterator[KubeCluster]:
    """A control plane with kwok nodes of 4 cpu and 16 GiB and one namespace."""
    with labelled_cluster(workdir, {node: {} for node in nodes}, namespace, cpu="4", memory="16Gi") as cluster:
        yield cluster


@contextlib.contextmanager
def labelled_cluster(workdir: Path, nodes: Mapping[str, Mapping[str, str]], namespace: str, *,
                     cpu: str = "2", memory: str = "8Gi", **start: Any) -> Iterator[KubeCluster]:
    """A control plane (``start``: :func:`start_cluster`'s options) with kwok nodes of ``cpu``
    and ``memory``, each with its labels (node name -> labels), and one namespace."""
    cluster = start_cluster(workdir, **start)
    try:
        cluster.add_nodes(list(nodes), labels={node: dict(labels) for node, labels in nodes.items()},
                          cpu=cpu, memory=memory)
        cluster.ensure_namespace(namespace)
        yield cluster
    finally:
        cluster.stop()


def topology_queues(level: str, *, node_sort: str = "", namespace_rule: bool = False) -> str:
    """The ConfigMap's queues.yaml of the topology tests: one partition whose topology level is
    ``level``, the queue ``root.train`` (FIFO) given by the pods' ``queue`` label, or by their
    namespace with ``namespace_rule``; ``node_sort``: the node sort policy."""
    sort = f"    nodesortpolicy: {{type: {node_sort}}}\n" if node_sort else ""
    rule = "      - name: tag\n        value: namespace\n        create: false\n" if namespace_rule else ""
    return f"""\
partitions:
  - name: default
{sort}    topology: {{levels: [{level}]}}
    placementrules:
      - name: provided
        create: false
{rule}    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: train
            properties: {{application.sort.policy: fifo}}
"""


@contextlib.contextmanager
def serving(kube: KubeCluster, tmp: Path, queues: str) -> Iterator[Server]:
    """:func:`serve`, stopped on the way out."""
    server = serve(kube, tmp, queues)
    try:
        yield server
    finally:
        stop(server)


class PodRecorder:
    """Every pod ADDED to ``namespace`` from now on, as the API server's watch tells it: what
    lives too briefly to be caught by listing (a placeholder replaced within a second)."""

    def __init__(self, kube: KubeCluster, namespace: str) -> None:
        self.added: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._api = KubeApi(ClusterAccess.from_kubeconfig(str(kube.kubeconfig)))
        path = f"/api/v1/namespaces/{namespace}/pods"
        _, version = self._api.list(path)
        self._thread = threading.Thread(target=self._run, args=(path, version), daemon=True)
        self._thread.start()

    def _run(self, path: str, version: str) -> None:
        try:
            for kind, obj in self._api.watch(path, version, timeout_seconds=300, stop=self._stop):
                if kind == "ADDED":
                    self.added.append(obj)
        except KubeApiError:
            if not self._stop.is_set():  # closed by stop(): the end expected
                raise

    def stop(self) -> None:
        self._stop.set()
        self._api.close_watches()
        self._thread.join(timeout=10)
