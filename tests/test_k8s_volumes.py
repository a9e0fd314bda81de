"""kube-scheduler's volume filters honoured on a real API server (issue 30): a claim of a
``WaitForFirstConsumer`` local-storage class binds to the local volume's node and the claim is
bound to that volume before the pod; a claim no volume fits leaves its pod Pending with the
reason (until a volume appears); a bound volume's zone chooses the node; a claim to provision
gets its selected node and the pod waits for the provisioner; a ``ReadWriteOncePod`` claim in use
keeps a second pod away; a CSINode's attach limit keeps a node from a pod with one volume too
many.

No controller manager runs here: where the PV controller would act (a new volume's phase
``Available``, a bound claim's status) or a provisioner would, the test does it, as they would.
The nodes are sized so that the core's own node order (the fair policy prefers the emptiest)
would choose otherwise: the volumes' node is the small one."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kube_cluster import KubeCluster, start_cluster
from kube_served import Served, served_while

NAMESPACE = "store"
ZONE = "topology.kubernetes.io/zone"
NODES = {"small": ("a", "2"), "big-0": ("b", "16"), "big-1": ("c", "16")}
LOCAL = "local-storage"
MERGE = {"Content-Type": "application/merge-patch+json"}
pytestmark = pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")


def _patch(kube: KubeCluster, path: str, body: dict[str, Any]) -> dict[str, Any]:
    answer = kube.session.patch(f"{kube.server}{path}", json=body, headers=MERGE, verify=False, timeout=10)
    assert answer.status_code == 200, answer.text
    patched: dict[str, Any] = answer.json()
    return patched


def _create(kube: KubeCluster, path: str, body: dict[str, Any]) -> dict[str, Any]:
    answer = kube.request("POST", path, body)
    assert answer.status_code == 201, answer.text
    created: dict[str, Any] = answer.json()
    return created


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeCluster]:
    cluster = start_cluster(tmp_path_factory.mktemp("kube"))
    try:
        for name, (zone, cpu) in NODES.items():
            cluster.add_node(name, cpu=cpu, memory="64Gi")
            _patch(cluster, f"/api/v1/nodes/{name}", {"metadata": {"labels": {ZONE: zone}}})
        cluster.ensure_namespace(NAMESPACE)
        _create(cluster, "/apis/storage.k8s.io/v1/storageclasses", {
            "metadata": {"name": LOCAL}, "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer"})
        _create(cluster, "/apis/storage.k8s.io/v1/storageclasses", {
            "metadata": {"name": "fast"}, "provisioner": "fast.example.com", "volumeBindingMode": "WaitForFirstConsumer"})
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def served(kube: KubeCluster) -> Iterator[Served]:
    with served_while(kube, then=lambda: _clean(kube)) as running:
        yield running


def _clean(kube: KubeCluster) -> None:
    """Everything the test made deleted. The API server's StorageObjectInUseProtection admission
    puts protection finalizers on claims and volumes, which the (absent) controller manager
    would take off: the test takes them off."""
    kube.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods?gracePeriodSeconds=0")
    kube.request("DELETE", "/apis/storage.k8s.io/v1/csinodes")
    paths = (f"/api/v1/namespaces/{NAMESPACE}/persistentvolumeclaims", "/api/v1/persistentvolumes")
    for path in paths:
        kube.request("DELETE", path)
        for item in kube.request("GET", path).json().get("items", []):
            if item["metadata"].get("finalizers"):
                kube.session.patch(f"{kube.server}{path}/{item['metadata']['name']}", verify=False, timeout=10,
                                   json={"metadata": {"finalizers": None}}, headers=MERGE)
    kube.wait_for("pods, claims and volumes deleted", lambda: not any(
        kube.request("GET", path).json().get("items") for path in (f"/api/v1/namespaces/{NAMESPACE}/pods", *paths)),
                  timeout=30)


def _pod(kube: KubeCluster, name: str, *claims: str, **spec: Any) -> dict[str, Any]:
    return _create(kube, f"/api/v1/namespaces/{NAMESPACE}/pods", {
        "metadata": {"name": name, "labels": {"yunikorn.apache.org/app-id": "store-app", "queue": "root.default"}},
        "spec": {"schedulerName": "pyscheduler", "containers": [
            {"name": "c", "image": "registry.k8s.io/pause:3.7", "resources": {"requests": {"cpu": "100m"}}}],
            "volumes": [{"name": f"v{n}", "persistentVolumeClaim": {"claimName": c}} for n, c in enumerate(claims)],
            **spec}})


def _claim(kube: KubeCluster, name: str, storage_class: str = LOCAL, size: str = "5Gi",
           modes: tuple[str, ...] = ("ReadWriteOnce",), volume: str = "") -> dict[str, Any]:
    """A claim; ``volume``: bound to it already (as the PV controller leaves a bound claim)."""
    body: dict[str, Any] = {"metadata": {"name": name}, "spec": {
        "storageClassName": storage_class, "accessModes": list(modes), "resources": {"requests": {"storage": size}}}}
    if volume:
        body["spec"]["volumeName"] = volume
        body["metadata"]["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    return _create(kube, f"/api/v1/namespaces/{NAMESPACE}/persistentvolumeclaims", body)


def _volume(kube: KubeCluster, name: str, *, node: str = "", storage_class: str = LOCAL, size: str = "10Gi",
            labels: dict[str, str] | None = None, claim: dict[str, Any] | None = None,
            csi: str = "", modes: tuple[str, ...] = ("ReadWriteOnce",)) -> dict[str, Any]:
    """A volume (a local one pinned to ``node``, else a CSI or hostPath one), made ``Available``
    as the PV controller would; ``claim``: bound to it."""
    spec: dict[str, Any] = {"capacity": {"storage": size}, "accessModes": list(modes),
                            "storageClassName": storage_class, "persistentVolumeReclaimPolicy": "Retain"}
    if node:
        spec["local"] = {"path": f"/mnt/disks/{name}"}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}
    elif csi:
        spec["csi"] = {"driver": csi, "volumeHandle": f"handle-{name}"}
    else:
        spec["hostPath"] = {"path": f"/srv/{name}"}
    if claim is not None:
        spec["claimRef"] = {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": NAMESPACE,
                            "name": claim["metadata"]["name"], "uid": claim["metadata"]["uid"]}
    created = _create(kube, "/api/v1/persistentvolumes", {"metadata": {"name": name, "labels": dict(labels or {})},
                                                          "spec": spec})
    _patch(kube, f"/api/v1/persistentvolumes/{name}/status", {"status": {"phase": "Bound" if claim else "Available"}})
    return created


def _get(kube: KubeCluster, path: str) -> dict[str, Any]:
    found: dict[str, Any] = kube.request("GET", path).json()
    return found


def _pod_of(kube: KubeCluster, name: str) -> dict[str, Any]:
    return _get(kube, f"/api/v1/namespaces/{NAMESPACE}/pods/{name}")


def _claim_of(kube: KubeCluster, name: str) -> dict[str, Any]:
    return _get(kube, f"/api/v1/namespaces/{NAMESPACE}/persistentvolumeclaims/{name}")


def _node_of(kube: KubeCluster, name: str) -> str:
    return str(_pod_of(kube, name)["spec"].get("nodeName") or "")


def _condition(kube: KubeCluster, name: str) -> dict[str, Any] | None:
    for condition in _pod_of(kube, name).get("status", {}).get("conditions", []):
        if condition["type"] == "PodScheduled" and condition["status"] == "False":
            return condition  # type: ignore[no-any-return]
    return None


def test_a_local_volume_claim_binds_to_the_volume_s_node_and_the_claim_first(kube: KubeCluster,
                                                                              served: Served) -> None:
    _volume(kube, "local-small", node="small")
    _claim(kube, "data")
    _pod(kube, "db", "data")
    kube.wait_for("db bound to the volume's node", lambda: _node_of(kube, "db") == "small", timeout=60)
    claim = _claim_of(kube, "data")  # bound before the pod was
    assert claim["spec"]["volumeName"] == "local-small"
    assert claim["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"
    volume = _get(kube, "/api/v1/persistentvolumes/local-small")
    assert volume["spec"]["claimRef"]["name"] == "data" and volume["spec"]["claimRef"]["uid"] == claim["metadata"]["uid"]
    assert served.shim.counts.bind_failures == 0

    # A second pod with its own claim: no volume fits it anywhere, it stays Pending with the reason.
    _claim(kube, "data-2")
    _pod(kube, "db-2", "data-2")
    condition = kube.wait_for("db-2 marked", lambda: _condition(kube, "db-2"), timeout=30)
    assert condition["reason"] == "Unschedulable"
    assert "didn't find available persistent volumes to bind" in condition["message"], condition["message"]
    time.sleep(1.0)
    assert not _node_of(kube, "db-2") and not _claim_of(kube, "data-2")["spec"].get("volumeName")
    # A volume for it appears on a big node: it goes there.
    _volume(kube, "local-big-0", node="big-0")
    kube.wait_for("db-2 bound where its volume is", lambda: _node_of(kube, "db-2") == "big-0", timeout=60)
    assert _claim_of(kube, "data-2")["spec"]["volumeName"] == "local-big-0"


def test_two_pods_placed_together_do_not_take_the_same_volume(kube: KubeCluster, served: Served) -> None:
    # Two local volumes on the small node, three claims: two pods bind there (each its own
    # volume, the smaller one to the first that fits), the third waits.
    _volume(kube, "pair-1", node="small", size="10Gi")
    _volume(kube, "pair-2", node="small", size="20Gi")
    for n in range(3):
        _claim(kube, f"pair-claim-{n}")
    for n in range(3):
        _pod(kube, f"pair-{n}", f"pair-claim-{n}")

    def two_bound() -> list[str] | None:
        nodes = [_node_of(kube, f"pair-{n}") for n in range(3)]
        return nodes if sorted(nodes) == ["", "small", "small"] else None

    kube.wait_for("two pods bound on the small node", two_bound, timeout=60)
    bound = [c for c in (_claim_of(kube, f"pair-claim-{n}") for n in range(3)) if c["spec"].get("volumeName")]
    assert sorted(c["spec"]["volumeName"] for c in bound) == ["pair-1", "pair-2"]
    waiting = next(n for n in range(3) if not _node_of(kube, f"pair-{n}"))

    def marked() -> dict[str, Any] | None:
        # A first try may have seen the claim before the shim's claim watch did (its reason then
        # says "not found"); the core says why again at most every 15 s.
        found = _condition(kube, f"pair-{waiting}")
        return found if found and "didn't find available persistent volumes to bind" in found["message"] else None

    kube.wait_for("the third marked with the volume reason", marked, timeout=40)


def test_a_bound_volume_s_zone_chooses_the_node(kube: KubeCluster, served: Served) -> None:
    claim = _claim(kube, "zonal", storage_class="", size="1Gi", volume="zonal-pv")
    _volume(kube, "zonal-pv", storage_class="", size="1Gi", labels={ZONE: "a"}, claim=claim)
    _pod(kube, "zonal-app", "zonal")
    kube.wait_for("bound in the volume's zone", lambda: _node_of(kube, "zonal-app") == "small", timeout=60)


def test_a_claim_to_provision_gets_its_node_and_the_pod_waits_for_the_provisioner(kube: KubeCluster,
                                                                                   served: Served) -> None:
    _claim(kube, "dynamic", storage_class="fast")
    _pod(kube, "dyn-app", "dynamic")

    def selected() -> str:
        return str(_claim_of(kube, "dynamic")["metadata"].get("annotations", {}).get(
            "volume.kubernetes.io/selected-node", ""))

    node = kube.wait_for("the claim's selected node", selected, timeout=60)
    assert node in NODES
    time.sleep(1.0)
    assert not _node_of(kube, "dyn-app")  # waits for its volume, as kube-scheduler's PreBind does
    # The provisioner makes the volume on that node and the PV controller binds the claim.
    claim = _claim_of(kube, "dynamic")
    _volume(kube, "provisioned", node=node, storage_class="fast", claim=claim)
    _patch(kube, f"/api/v1/namespaces/{NAMESPACE}/persistentvolumeclaims/dynamic", {
        "metadata": {"annotations": {"pv.kubernetes.io/bind-completed": "yes"}}, "spec": {"volumeName": "provisioned"}})
    kube.wait_for("bound once provisioned", lambda: _node_of(kube, "dyn-app") == node, timeout=60)


def test_a_read_write_once_pod_claim_in_use_keeps_a_second_pod_pending(kube: KubeCluster, served: Served) -> None:
    claim = _claim(kube, "solo", storage_class="", size="1Gi", modes=("ReadWriteOncePod",), volume="solo-pv")
    _volume(kube, "solo-pv", storage_class="", size="1Gi", modes=("ReadWriteOncePod",), claim=claim)
    _pod(kube, "solo-1", "solo")
    kube.wait_for("the first bound", lambda: _node_of(kube, "solo-1"), timeout=60)
    _pod(kube, "solo-2", "solo")
    condition = kube.wait_for("the second marked", lambda: _condition(kube, "solo-2"), timeout=30)
    assert "ReadWriteOncePod" in condition["message"], condition["message"]
    kube.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods/solo-1?gracePeriodSeconds=0")
    kube.wait_for("the second bound once the first is gone", lambda: _node_of(kube, "solo-2"), timeout=60)


def test_a_csinode_attach_limit_keeps_a_pod_off_a_full_node(kube: KubeCluster, served: Served) -> None:
    driver = "csi.example.com"
    _create(kube, "/apis/storage.k8s.io/v1/csinodes", {"metadata": {"name": "big-1"}, "spec": {"drivers": [
        {"name": driver, "nodeID": "big-1", "allocatable": {"count": 1}}]}})
    for n in range(2):
        claim = _claim(kube, f"attach-{n}", storage_class="", size="1Gi", volume=f"attach-pv-{n}")
        _volume(kube, f"attach-pv-{n}", storage_class="", size="1Gi", csi=driver, claim=claim)
    _pod(kube, "attach-0", "attach-0", nodeSelector={"kubernetes.io/hostname": "big-1"})
    kube.wait_for("the first on big-1", lambda: _node_of(kube, "attach-0") == "big-1", timeout=60)
    _pod(kube, "attach-1", "attach-1", nodeSelector={"kubernetes.io/hostname": "big-1"})
    condition = kube.wait_for("the second marked", lambda: _condition(kube, "attach-1"), timeout=30)
    assert "exceed max volume count" in condition["message"], condition["message"]
    # The first pod gone, its volume is detached: the second goes.
    kube.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods/attach-0?gracePeriodSeconds=0")
    kube.wait_for("the second on big-1", lambda: _node_of(kube, "attach-1") == "big-1", timeout=60)
