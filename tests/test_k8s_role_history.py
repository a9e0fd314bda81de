"""Role history on a real API server (kwok nodes), through ``pyscheduler serve --rm
pyscheduler_k8s:attach --role-history-dir DIR``: a StatefulSet of 10 pods on 100 nodes, deleted
and created again while other pods keep the cluster busy (and take the emptiest nodes, the
set's among them, while it is gone; the scheduler restarts in between, its history read back
from the directory), comes back to the nodes it ran on, each ordinal to its own node. The same
run with role history off for the queue brings few back: the node order alone sends them to
the emptiest nodes, which are others by then.

No controller manager runs on the test's control plane: the test plays the StatefulSet
controller (a real StatefulSet object owns the pods, named ``<set>-<ordinal>`` with the
``apps.kubernetes.io/pod-index`` label, as the controller makes them). A node label a reporter
writes into a CustomNodeResource shows in the REST API's node attributes.
"""

from __future__ import annotations

import itertools
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kube_cluster import KubeCluster
from kube_served import create_pods, list_pods, pod_body, serve, small_cluster
from web_helpers import Server, stop

pytestmark = pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")

NODES = 100
REPLICAS = 10
NAMESPACE = "services"
BUSY_NAMESPACE = "busy"
QUEUES = """\
partitions:
  - name: default
    placementrules:
      - name: provided
        create: true
      - name: tag
        value: namespace
        create: true
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: services
            properties: {{role-history.policy: {policy}}}
"""


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeCluster]:
    with small_cluster(tmp_path_factory.mktemp("kube-history"), [f"n-{n:03d}" for n in range(NODES)],
                       NAMESPACE) as cluster:
        cluster.ensure_namespace(BUSY_NAMESPACE)
        yield cluster


def _stateful_set(kube: KubeCluster) -> dict[str, Any]:
    body = {"metadata": {"name": "db"}, "spec": {
        "replicas": REPLICAS, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
        "template": {"metadata": {"labels": {"app": "db"}}, "spec": {
            "schedulerName": "pyscheduler", "containers": [{"name": "db", "image": "registry.k8s.io/pause:3.7"}]}}}}
    answer = kube.request("POST", f"/apis/apps/v1/namespaces/{NAMESPACE}/statefulsets", body)
    assert answer.status_code == 201, answer.text
    created: dict[str, Any] = answer.json()
    return created


def _set_pods(kube: KubeCluster, owner: dict[str, Any]) -> list[dict[str, Any]]:
    """The pods the StatefulSet controller would make: no app-id label (the namespace's
    application), owned by the set, named by their ordinal."""
    reference = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": owner["metadata"]["uid"],
                 "controller": True}
    bodies = []
    for ordinal in range(REPLICAS):
        body = pod_body(f"db-{ordinal}", "", "", "1", labels={"app": "db", "apps.kubernetes.io/pod-index": str(ordinal)})
        for key in ("applicationId", "queue"):
            del body["metadata"]["labels"][key]
        body["metadata"]["ownerReferences"] = [reference]
        bodies.append(body)
    return create_pods(kube, NAMESPACE, bodies)


def _placed(kube: KubeCluster) -> dict[str, str]:
    return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in list_pods(kube, NAMESPACE)}


class Churn:
    """Other pods keeping the cluster busy: about 150 of 1 cpu (40 % of it), 10 replaced every
    half second while it runs; bounded in time. Stopping it cleans the test's namespaces."""

    def __init__(self, kube: KubeCluster, tag: str, limit: float = 180.0) -> None:
        self.kube = kube
        self.tag = tag
        self.names: list[str] = []
        self._count = itertools.count()
        self._stop = threading.Event()
        self._deadline = time.monotonic() + limit
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _create(self, n: int) -> None:
        bodies = [pod_body(f"busy-{self.tag}-{next(self._count)}", f"churn-{self.tag}", "root.busy") for _ in range(n)]
        self.names += [p["metadata"]["name"] for p in create_pods(self.kube, BUSY_NAMESPACE, bodies)]

    def burst(self, n: int) -> None:
        """``n`` more pods at once, kept (the churn replaces older ones)."""
        self._create(n)

    def start(self) -> None:
        self._create(150)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.5) and time.monotonic() < self._deadline:
            old, self.names = self.names[:10], self.names[10:]
            for name in old:
                self.kube.request("DELETE", f"/api/v1/namespaces/{BUSY_NAMESPACE}/pods/{name}?gracePeriodSeconds=0")
            self._create(10)

    def stop(self) -> None:
        """Stops, and deletes what it made."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)
        self.kube.request("DELETE", f"/api/v1/namespaces/{BUSY_NAMESPACE}/pods?gracePeriodSeconds=0")
        self.kube.request("DELETE", f"/apis/apps/v1/namespaces/{NAMESPACE}/statefulsets/db")
        self.kube.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods?gracePeriodSeconds=0")
        self.kube.wait_for("the pods deleted", lambda: not list_pods(self.kube, BUSY_NAMESPACE)
                           and not list_pods(self.kube, NAMESPACE), timeout=60)


def _restart(kube: KubeCluster, server: Server, tmp: Path, queues: str, history: Path) -> Server:
    os.killpg(server.process.pid, signal.SIGTERM)
    server.process.wait(30)
    return serve(kube, tmp, queues, "--role-history-dir", str(history))


@pytest.mark.parametrize("policy", ["default", "anywhere"])
def test_a_stateful_set_created_again_comes_back_to_its_nodes(kube: KubeCluster, tmp_path: Path, policy: str) -> None:
    """With role history (the ``default`` policy) at least 9 of 10 come back; with it off for
    the queue (``anywhere``), what the node order gives by itself, for comparison."""
    queues = QUEUES.format(policy=policy)
    history = tmp_path / "role-history"
    server = serve(kube, tmp_path, queues, "--role-history-dir", str(history))
    churn = Churn(kube, policy)
    try:
        churn.start()
        owner = _stateful_set(kube)
        _set_pods(kube, owner)
        before = kube.wait_for("the set placed", lambda: (p := _placed(kube)) and len(p) == REPLICAS
                               and all(p.values()) and p, timeout=60)
        assert len(set(before.values())) >= 2
        # Deleted (the set and its pods), while the scheduler restarts: its history is on disk.
        kube.request("DELETE", f"/apis/apps/v1/namespaces/{NAMESPACE}/statefulsets/db")
        kube.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods?gracePeriodSeconds=0")
        kube.wait_for("the set gone", lambda: not list_pods(kube, NAMESPACE), timeout=60)
        # Meanwhile other work arrives and takes the emptiest nodes, the set's among them.
        churn.burst(30)
        time.sleep(2)  # the history's save delay (1 s) passed
        server = _restart(kube, server, tmp_path, queues, history)
        assert policy == "anywhere" or any(history.iterdir()), "no history saved"
        time.sleep(3)  # the churn goes on meanwhile
        # Created again: a new StatefulSet object (a new uid), the same name, the same pods.
        _set_pods(kube, _stateful_set(kube))
        after = kube.wait_for("the set placed again", lambda: (p := _placed(kube)) and len(p) == REPLICAS
                              and all(p.values()) and p, timeout=90)
    finally:
        churn.stop()
        stop(server)
    returned = sum(after[name] == node for name, node in before.items())
    print(f"role history {policy}: {returned} of {REPLICAS} pods back on their nodes ({NODES} nodes, "
          f"~150 other pods churning)")
    if policy == "default":
        assert returned >= 9, (before, after)
    else:  # without history the set lands where the node order says, mostly elsewhere
        assert returned <= 5, (before, after)


def test_a_reported_node_label_shows_in_the_rest_api(kube: KubeCluster, tmp_path: Path) -> None:
    crd = Path(__file__).resolve().parent.parent / "k8s" / "deploy" / "40-customnoderesource-crd.yaml"
    answer = kube.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                          yaml.safe_load(crd.read_text()))
    assert answer.status_code in (201, 409), answer.text
    kube.wait_for("the CRD served", lambda: kube.request(
        "GET", "/apis/node.katalyst.kubewharf.io/v1alpha1/customnoderesources").status_code == 200, timeout=30)
    cnr = {"apiVersion": "node.katalyst.kubewharf.io/v1alpha1", "kind": "CustomNodeResource",
           "metadata": {"name": "n-007", "labels": {"disk": "nvme"}},
           "spec": {"nodeResourceProperties": [{"propertyName": "numa", "propertyValues": ["0", "1"]}]}}
    assert kube.request("POST", "/apis/node.katalyst.kubewharf.io/v1alpha1/customnoderesources", cnr).status_code == 201
    server = serve(kube, tmp_path, QUEUES.format(policy="default"))
    try:
        def attributes() -> dict[str, str]:
            answer = server.get("/ws/v1/partition/default/nodes", timeout=30)
            if answer.status_code != 200:  # the shim has not registered its partition yet
                return {}
            found: dict[str, str] = next(n for n in answer.json() if n["nodeID"] == "n-007")["attributes"]
            return found

        found = kube.wait_for("the reported attributes", lambda: (a := attributes()).get("disk") == "nvme" and a,
                              timeout=30)
        assert found["property.numa"] == "0,1"
    finally:
        stop(server)
