"""kube-scheduler's volume filter plugins, case by case, against the shim's pure functions
(pyscheduler_k8s.volumes): the cases of kube-scheduler's own test tables (kubernetes v1.37),
written here as Python data, each under its Go name so the two can be read side by side.

Followed (in kubernetes/kubernetes pkg/scheduler/framework/plugins):

- volumebinding/volume_binding_test.go ``TestVolumeBinding``: the PreFilter status and the
  Filter status per node (builders: volumebinding/test_utils.go). Each case also runs through
  :class:`VolumeState` (the index the shim checks with): same answer.
- volumebinding/binder_test.go ``TestFindPodVolumesWithoutProvisioning``,
  ``TestFindPodVolumesWithProvisioning`` (GetPodVolumeClaims then FindPodVolumes: fails, the
  reasons, the volumes bound and the claims provisioned), ``TestAssumePodVolumes`` (through
  :meth:`VolumeState.place` with a reservation).
- volumezone/volume_zone_test.go ``TestSingleZone``, ``TestMultiZone``, ``TestWithBinding``.
- volumerestrictions/volume_restrictions_test.go ``TestAccessModeConflicts``.
- nodevolumelimits/csi_test.go ``TestCSILimits``.

Not translated, with the reason (cases of a table translated in part are skips below):

- Legacy in-tree volumes: volume_restrictions_test.go ``TestGCEDiskConflicts``,
  ``TestAWSDiskConflicts``, ``TestRBDDiskConflicts``, ``TestISCSIDiskConflicts`` (in-tree disk
  conflicts are not checked); binder_test.go ``TestFindPodVolumesWithCSIMigration`` and every
  ``TestCSILimits`` case with ``migrationEnabled: true`` (CSI migration of in-tree plugins is not
  modelled: their volumes are not counted).
- ``TestCSILimits`` cases counting VolumeAttachments (``vaCount``): VolumeAttachments are not
  followed; the limit counts the volumes of the pods on the node.
- The ``CSIDriver with capacity tracking`` runs of the FindPodVolumes tests: storage capacity
  (CSIStorageCapacity) is not followed; the ``no CSIDriver`` run is the one here (the
  ``without capacity tracking`` run expects the same).
- ``TestAssumePodVolumes`` "tmpupdate-failed", "one-binding, one-provision-tmpupdate-failed":
  they test the assume cache's resource-version check on objects the test feeds it, a mechanism
  the index does not have (its assumptions are keyed by the pod and reverted with it).
- The Score expectations of ``TestVolumeBinding`` (the volume capacity score is alpha and off)
  and its PreFilterResult node names (an optimisation with the same outcome as the Filter).

Messages: a not-found claim is ``persistentvolumeclaim "x" not found`` and a not-found class
``storageclass.storage.k8s.io "x" not found``, as the informers' listers kube-scheduler runs with
say them (the Go tables' fake listers say ``persistentvolumeclaims``/``storageclasses``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from pyscheduler_k8s.nodes import NodeView, node_view
from pyscheduler_k8s.volumes import (
    ERR_BIND_CONFLICT,
    ERR_MAX_VOLUME_COUNT,
    ERR_NODE_CONFLICT,
    ERR_PV_NOT_EXIST,
    ERR_RWOP_CONFLICT,
    ERR_UNBOUND_IMMEDIATE,
    ERR_ZONE_CONFLICT,
    Claim,
    PodClaims,
    Refusal,
    StorageClass,
    Volume,
    VolumeState,
    attachable_volumes,
    binding_filter,
    binding_prefilter,
    claim_of,
    csi_limits_filter,
    restrictions_filter,
    rwop_claims,
    storage_class_of,
    volume_of,
    zone_filter,
    zone_prefilter,
)

UNRESOLVABLE = "UnschedulableAndUnresolvable"
UNSCHEDULABLE = "Unschedulable"
ERROR = "Error"
SKIP = "skip"
HOSTNAME = "kubernetes.io/hostname"
ZONE, REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
BETA_ZONE, BETA_REGION = "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region"

MIGRATION = "CSI migration of in-tree volumes is not modelled (their volumes are not counted)"
ATTACHMENTS = "VolumeAttachments are not followed: the limit counts the volumes of the pods on the node"


# --- builders (as the Go tests' helpers build the objects) ---------------------------------------


def _node(name: str, **labels: str) -> NodeView:
    """volumebinding's makeNode: the hostname label, and more."""
    return node_view({"metadata": {"name": name, "labels": {HOSTNAME: name, **labels}}})


def _bare_node(name: str, labels: Mapping[str, str] | None = None) -> NodeView:
    return node_view({"metadata": {"name": name, "labels": dict(labels or {})}})


def _pod(name: str = "pod-a", namespace: str = "default", *, claims: Iterable[tuple[str, str]] = (),
         ephemeral: Iterable[str] = (), uid: str = "", other: Iterable[dict[str, Any]] = ()) -> dict[str, Any]:
    """A pod with persistentVolumeClaim volumes ((claim, volume name)) and generic ephemeral ones."""
    volumes: list[dict[str, Any]] = [dict(v) for v in other]
    volumes += [{"name": volume, "persistentVolumeClaim": {"claimName": claim}} for claim, volume in claims]
    volumes += [{"name": volume, "ephemeral": {}} for volume in ephemeral]
    return {"metadata": {"name": name, "namespace": namespace, "uid": uid}, "spec": {"volumes": volumes}}


def _pvc(name: str, storage_class: str | None = None, namespace: str = "default", *, volume: str = "",
         bound: bool = False, request: str | None = None, selected_node: str | None = None, phase: str = "",
         uid: str = "", modes: Iterable[str] = (), owner: str | None = None, rv: str = "1") -> dict[str, Any]:
    annotations: dict[str, str] = {}
    if bound:
        annotations["pv.kubernetes.io/bind-completed"] = "yes"
    if selected_node is not None:
        annotations["volume.kubernetes.io/selected-node"] = selected_node
    spec: dict[str, Any] = {"accessModes": list(modes)}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if volume:
        spec["volumeName"] = volume
    if request is not None:
        spec["resources"] = {"requests": {"storage": request}}
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid, "annotations": annotations,
                            "resourceVersion": rv}
    if owner is not None:
        meta["ownerReferences"] = [{"kind": "Pod", "name": "owner", "uid": owner, "controller": True}]
    return {"metadata": meta, "spec": spec, "status": {"phase": phase} if phase else {}}


def _pv(name: str, storage_class: str = "", *, capacity: str | None = None, phase: str = "",
        affinity: Mapping[str, list[str]] | None = None, claim: Mapping[str, Any] | None = None,
        labels: Mapping[str, str] | None = None, csi: tuple[str, str] | None = None, rv: str = "1") -> dict[str, Any]:
    spec: dict[str, Any] = {"storageClassName": storage_class}
    if capacity is not None:
        spec["capacity"] = {"storage": capacity}
    if affinity is not None:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": key, "operator": "In", "values": values} for key, values in affinity.items()]}]}}
    annotations: dict[str, str] = {}
    if claim is not None:
        meta = claim["metadata"]
        spec["claimRef"] = {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": meta["namespace"],
                            "name": meta["name"], "uid": meta["uid"]}
        annotations["pv.kubernetes.io/bound-by-controller"] = "yes"
    if csi is not None:
        spec["csi"] = {"driver": csi[0], "volumeHandle": csi[1]}
    return {"metadata": {"name": name, "labels": dict(labels or {}), "annotations": annotations, "resourceVersion": rv},
            "spec": spec, "status": {"phase": phase} if phase else {}}


def _sc(name: str, mode: str | None = "Immediate", provisioner: str = "",
        allowed: Mapping[str, list[str]] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"metadata": {"name": name}, "provisioner": provisioner}
    if mode is not None:
        body["volumeBindingMode"] = mode
    if allowed is not None:
        body["allowedTopologies"] = [{"matchLabelExpressions": [{"key": k, "values": v} for k, v in allowed.items()]}]
    return body


def _maps(pvcs: Iterable[Mapping[str, Any]], pvs: Iterable[Mapping[str, Any]] = (),
          classes: Iterable[Mapping[str, Any]] = ()) -> tuple[dict[tuple[str, str], Claim], dict[str, Volume],
                                                              dict[str, StorageClass]]:
    claims = {c.key: c for c in map(claim_of, pvcs)}
    return claims, {v.name: v for v in map(volume_of, pvs)}, {k.name: k for k in map(storage_class_of, classes)}


def _state(pvcs: Iterable[Mapping[str, Any]], pvs: Iterable[Mapping[str, Any]],
           classes: Iterable[Mapping[str, Any]]) -> VolumeState:
    state = VolumeState()
    state.replace("persistentvolumeclaims", pvcs)
    state.replace("persistentvolumes", pvs)
    state.replace("storageclasses", classes)
    state.replace("csinodes", [])
    return state


def _every_of_class(volumes: Mapping[str, Volume]) -> Any:
    """FindMatchingVolume's list: every volume of the claim's class (the pv cache's ListPVs)."""
    return lambda claim: [v for v in volumes.values() if v.storage_class == claim.storage_class]


def _outcome(refusal: Refusal | None) -> tuple[str, str] | None:
    return None if refusal is None else (refusal.code, refusal.message)


# --- VolumeBinding: TestVolumeBinding -------------------------------------------------------------

IMMEDIATE_SC = _sc("immediate-sc", "Immediate")
WAIT_SC = _sc("wait-sc", "WaitForFirstConsumer")
WAIT_HDD_SC = _sc("wait-hdd-sc", "WaitForFirstConsumer")
BINDING_CLASSES = [IMMEDIATE_SC, WAIT_SC, WAIT_HDD_SC]


def _zonal(region: str, zone: str) -> dict[str, list[str]]:
    return {REGION: [region], ZONE: [zone]}


def _zonal_nodes() -> list[NodeView]:
    return [_node(f"zone-{z}-node-{n}", **{REGION: f"region-{z}", ZONE: f"zone-{z}"}) for z in "abc" for n in "ab"]


_ZONAL_PVS = [_pv(f"pv-{z}-{n}", "wait-sc", phase="Available", capacity=size, affinity=_zonal(f"region-{z}", f"zone-{z}"))
              for z, size in (("a", "200Gi"), ("b", "100Gi")) for n in "01"]
_NODES_ABC = [_node("node-a"), _node("node-b"), _node("node-c")]
_LOCAL_PVS = [_pv(f"pv-{n}-{i}", "wait-sc", phase="Available", capacity=size, affinity={HOSTNAME: [f"node-{n}"]})
              for n, size in (("a", "200Gi"), ("b", "100Gi")) for i in "01"]
_LOCAL_HDD_PVS = [_pv(f"pv-{n}-{i}", "wait-hdd-sc", phase="Available", capacity=size, affinity={HOSTNAME: [f"node-{n}"]})
                  for n, size in (("a", "200Gi"), ("b", "100Gi")) for i in "23"]
_NO_PV_ON_C = [None, None, (UNRESOLVABLE, ERR_BIND_CONFLICT)]

VOLUME_BINDING: list[tuple[str, dict[str, Any], list[NodeView], list[dict[str, Any]], list[dict[str, Any]], Any,
                           list[tuple[str, str] | None]]] = [
    # (name, pod, nodes, pvcs, pvs, PreFilter status, Filter status per node)
    ("pod has not pvcs", _pod(), [_node("node-a")], [], [], SKIP, [None]),
    ("all bound", _pod(claims=[("pvc-a", "")]), [_node("node-a")],
     [_pvc("pvc-a", "wait-sc", volume="pv-a", bound=True)], [_pv("pv-a", "wait-sc", phase="Available")], None, [None]),
    ("all bound with local volumes", _pod(claims=[("pvc-a", "volume-a"), ("pvc-b", "volume-b")]), [_node("node-a")],
     [_pvc("pvc-a", "wait-sc", volume="pv-a", bound=True), _pvc("pvc-b", "wait-sc", volume="pv-b", bound=True)],
     [_pv("pv-a", "wait-sc", phase="Bound", affinity={HOSTNAME: ["node-a"]}),
      _pv("pv-b", "wait-sc", phase="Bound", affinity={HOSTNAME: ["node-a"]})], None, [None]),
    ("PVC does not exist", _pod(claims=[("pvc-a", "")]), [_node("node-a")], [], [],
     (UNRESOLVABLE, 'persistentvolumeclaim "pvc-a" not found'), [None]),
    ("Part of PVCs do not exist", _pod(claims=[("pvc-a", ""), ("pvc-b", "")]), [_node("node-a")],
     [_pvc("pvc-a", "wait-sc", volume="pv-a", bound=True)], [],
     (UNRESOLVABLE, 'persistentvolumeclaim "pvc-b" not found'), [None]),
    ("immediate claims not bound", _pod(claims=[("pvc-a", "")]), [_node("node-a")], [_pvc("pvc-a", "immediate-sc")], [],
     (UNRESOLVABLE, ERR_UNBOUND_IMMEDIATE), [None]),
    ("unbound claims no matches", _pod(claims=[("pvc-a", "")]), [_node("node-a")], [_pvc("pvc-a", "wait-sc")], [],
     None, [(UNRESOLVABLE, ERR_BIND_CONFLICT)]),
    ("bound and unbound unsatisfied", _pod(claims=[("pvc-a", ""), ("pvc-b", "")]), [_node("node-a", foo="barbar")],
     [_pvc("pvc-a", "wait-sc", volume="pv-a", bound=True), _pvc("pvc-b", "wait-sc")],
     [_pv("pv-a", "wait-sc", phase="Available", affinity={"foo": ["bar"]})], None,
     [(UNRESOLVABLE, f"{ERR_NODE_CONFLICT}, {ERR_BIND_CONFLICT}")]),
    ("pvc not found", _pod(claims=[("pvc-a", "")]), [_node("node-a")], [], [],
     (UNRESOLVABLE, 'persistentvolumeclaim "pvc-a" not found'), [None]),
    ("pv not found", _pod(claims=[("pvc-a", "")]), [_node("node-a")],
     [_pvc("pvc-a", "wait-sc", volume="pv-a", bound=True)], [], None, [(UNRESOLVABLE, ERR_PV_NOT_EXIST)]),
    ("pv not found claim lost", _pod(claims=[("pvc-a", "")]), [_node("node-a")],
     [_pvc("pvc-a", "wait-sc", volume="pv-a", bound=True, phase="Lost")], [],
     (UNRESOLVABLE, 'persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"'), [None]),
    ("local volumes with close capacity are preferred", _pod(claims=[("pvc-a", "")]), _NODES_ABC,
     [_pvc("pvc-a", "wait-sc", request="50Gi")], _LOCAL_PVS, None, _NO_PV_ON_C),
    ("local volumes with close capacity are preferred (multiple pvcs)", _pod(claims=[("pvc-0", ""), ("pvc-1", "")]),
     _NODES_ABC, [_pvc("pvc-0", "wait-sc", request="50Gi"), _pvc("pvc-1", "wait-hdd-sc", request="100Gi")],
     _LOCAL_PVS + _LOCAL_HDD_PVS, None, _NO_PV_ON_C),
    ("zonal volumes with close capacity are preferred", _pod(claims=[("pvc-a", "")]), _zonal_nodes(),
     [_pvc("pvc-a", "wait-sc", request="50Gi")], _ZONAL_PVS, None,
     [None] * 4 + [(UNRESOLVABLE, ERR_BIND_CONFLICT)] * 2),
    ("zonal volumes with close capacity are preferred (custom shape)", _pod(claims=[("pvc-a", "")]), _zonal_nodes(),
     [_pvc("pvc-a", "wait-sc", request="50Gi")], _ZONAL_PVS, None,
     [None] * 4 + [(UNRESOLVABLE, ERR_BIND_CONFLICT)] * 2),
]


@pytest.mark.parametrize("name,pod,nodes,pvcs,pvs,want_prefilter,want_filter", VOLUME_BINDING,
                         ids=[case[0] for case in VOLUME_BINDING])
def test_volume_binding(name: str, pod: dict[str, Any], nodes: list[NodeView], pvcs: list[dict[str, Any]],
                        pvs: list[dict[str, Any]], want_prefilter: Any, want_filter: list[Any]) -> None:
    claims, volumes, classes = _maps(pvcs, pvs, BINDING_CLASSES)
    prepared = binding_prefilter(pod, claims, classes)
    if want_prefilter == SKIP:
        assert prepared is None
    elif want_prefilter is not None:
        assert isinstance(prepared, Refusal) and _outcome(prepared) == want_prefilter
    else:
        assert isinstance(prepared, PodClaims)
        got = [_outcome(binding_filter(prepared, node, volumes, _every_of_class(volumes), classes)[0])
               for node in nodes]
        assert got == want_filter
    # The index the shim checks with (all four plugins, PreFilters first, as the default
    # profile runs them): the same answer on each node.
    state = _state(pvcs, pvs, BINDING_CLASSES)
    for node, want in zip(nodes, want_filter):
        expected = want_prefilter if isinstance(want_prefilter, tuple) else want
        message = None if expected is None else PROFILE_FIRST.get(name, expected[1])
        assert state.check(pod, node) == (None if message is None else f"node {node.name}: {message}")


#: Where the default profile refuses before VolumeBinding does: VolumeZone's PreFilter looks the
#: bound claim's volume up first.
PROFILE_FIRST = {"pv not found": 'persistentvolume "pv-a" not found'}


# --- VolumeBinding: binder_test.go ----------------------------------------------------------------

NODE_KEY = "nodeKey"
WAIT, IMMEDIATE, WAIT_PROVISIONER, TOPO_MISMATCH = "waitClass", "immediateClass", "waitClassWithProvisioner", \
    "topoMismatchClass"
BINDER_CLASSES = [
    _sc(WAIT_PROVISIONER, "WaitForFirstConsumer", "test-provisioner", allowed={NODE_KEY: ["node1", "reference-value"]}),
    _sc(IMMEDIATE, "Immediate"),
    _sc(WAIT, "WaitForFirstConsumer", "kubernetes.io/no-provisioner"),
    _sc(TOPO_MISMATCH, "WaitForFirstConsumer", "test-provisioner", allowed={NODE_KEY: ["reference-value"]}),
]
TEST_NODE = _bare_node("node1", {NODE_KEY: "node1"})


def _test_pvc(name: str, size: str, state: str, volume: str, klass: str, node: str = "") -> dict[str, Any]:
    """binder_test.go's makeTestPVC: namespace testns, uid pvc-uid; state unbound, prebound (a
    volume named), bound (named, bind completed) or selected (a selected node)."""
    return _pvc(name, klass, "testns", volume=volume if state in ("prebound", "bound") else "", bound=state == "bound",
                request=size, selected_node=node if state == "selected" else None, uid="pvc-uid")


def _test_pv(name: str, node: str, capacity: str, bound_to: dict[str, Any] | None, klass: str) -> dict[str, Any]:
    """binder_test.go's makeTestPV: Available, pinned by nodeKey to ``node``, claimed by ``bound_to``."""
    return _pv(name, klass, capacity=capacity, phase="Available", affinity={NODE_KEY: [node]} if node else None,
               claim=bound_to)


UNBOUND_PVC = _test_pvc("unbound-pvc", "1G", "unbound", "", WAIT)
UNBOUND_PVC2 = _test_pvc("unbound-pvc2", "5G", "unbound", "", WAIT)
PREBOUND_PVC = _test_pvc("prebound-pvc", "1G", "prebound", "pv-node1a", WAIT)
BOUND_PVC = _test_pvc("bound-pvc", "1G", "bound", "pv-bound", WAIT)
IMMEDIATE_UNBOUND_PVC = _test_pvc("immediate-unbound-pvc", "1G", "unbound", "", IMMEDIATE)
IMMEDIATE_BOUND_PVC = _test_pvc("immediate-bound-pvc", "1G", "bound", "pv-bound-immediate", IMMEDIATE)
PROVISIONED_PVC = _test_pvc("provisioned-pvc", "1Gi", "unbound", "", WAIT_PROVISIONER)
NO_PROVISIONER_PVC = _test_pvc("no-provisioner-pvc", "1Gi", "unbound", "", WAIT)
TOPO_MISMATCH_PVC = _test_pvc("topo-mismatch-pvc", "1Gi", "unbound", "", TOPO_MISMATCH)
SELECTED_NODE_PVC = _test_pvc("provisioned-pvc", "1Gi", "selected", "", WAIT_PROVISIONER, node="node1")
_GENERIC = {**_test_pvc("test-pod-test-volume", "1G", "bound", "pv-bound", IMMEDIATE)}
CONFLICTING_GENERIC_PVC = _GENERIC
CORRECT_GENERIC_PVC = {**_GENERIC, "metadata": {**_GENERIC["metadata"], "ownerReferences": [
    {"name": "test-pod", "uid": "", "controller": True}]}}

PV_NODE1A = _test_pv("pv-node1a", "node1", "5G", None, WAIT)
PV_NODE1B = _test_pv("pv-node1b", "node1", "10G", None, WAIT)
PV_NODE2 = _test_pv("pv-node2", "node2", "1G", None, WAIT)
PV_BOUND = _test_pv("pv-bound", "node1", "1G", BOUND_PVC, WAIT)
PV_NODE1A_BOUND = _test_pv("pv-node1a", "node1", "5G", UNBOUND_PVC, WAIT)
PV_BOUND_IMMEDIATE = _test_pv("pv-bound-immediate", "node1", "1G", IMMEDIATE_BOUND_PVC, IMMEDIATE)
PV_BOUND_IMMEDIATE_NODE2 = _test_pv("pv-bound-immediate", "node2", "1G", IMMEDIATE_BOUND_PVC, IMMEDIATE)
PV_BOUND_GENERIC = _test_pv("pv-bound", "node1", "1G", CORRECT_GENERIC_PVC, WAIT)


def _claims_pod(pvcs: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """withPVCSVolume: the claims as volumes vol0, vol1, ... of test-pod in testns."""
    return _pod("test-pod", "testns", claims=[(p["metadata"]["name"], f"vol{i}") for i, p in enumerate(pvcs)])


def _name(obj: dict[str, Any]) -> str:
    return str(obj["metadata"]["name"])


# (name, pvs, pod pvcs, cached pvcs (None: the pod's), pod (None: of its pvcs), bindings (claim, volume),
#  provisions, reasons, fails)
FindCase = tuple[str, list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]] | None, dict[str, Any] | None,
                 list[tuple[str, str]], list[str], list[str], bool]
WITHOUT_PROVISIONING: list[FindCase] = [
    ("no-volumes", [], [], None, _pod("test-pod", "testns"), [], [], [], False),
    ("no-pvcs", [], [], None, _pod("test-pod", "testns", other=[{"name": "", "emptyDir": {}}]), [], [], [], False),
    ("pvc-not-found", [], [BOUND_PVC], [], None, [], [], [], True),
    ("bound-pvc", [PV_BOUND], [BOUND_PVC], None, None, [], [], [], False),
    ("bound-pvc,pv-not-exists", [], [BOUND_PVC], None, None, [], [], [ERR_PV_NOT_EXIST], False),
    ("prebound-pvc", [PV_NODE1A_BOUND], [PREBOUND_PVC], None, None, [], [], [], True),
    ("unbound-pvc,pv-same-node", [PV_NODE2, PV_NODE1A, PV_NODE1B], [UNBOUND_PVC], None, None,
     [("unbound-pvc", "pv-node1a")], [], [], False),
    ("unbound-pvc,pv-different-node", [PV_NODE2], [UNBOUND_PVC], None, None, [], [], [ERR_BIND_CONFLICT], False),
    ("two-unbound-pvcs", [PV_NODE1A, PV_NODE1B], [UNBOUND_PVC, UNBOUND_PVC2], None, None,
     [("unbound-pvc", "pv-node1a"), ("unbound-pvc2", "pv-node1b")], [], [], False),
    ("two-unbound-pvcs,order-by-size", [PV_NODE1A, PV_NODE1B], [UNBOUND_PVC2, UNBOUND_PVC], None, None,
     [("unbound-pvc", "pv-node1a"), ("unbound-pvc2", "pv-node1b")], [], [], False),
    ("two-unbound-pvcs,partial-match", [PV_NODE1A], [UNBOUND_PVC, UNBOUND_PVC2], None, None,
     [("unbound-pvc", "pv-node1a")], [], [ERR_BIND_CONFLICT], False),
    ("one-bound,one-unbound", [PV_BOUND, PV_NODE1A], [UNBOUND_PVC, BOUND_PVC], None, None,
     [("unbound-pvc", "pv-node1a")], [], [], False),
    ("one-bound,one-unbound,no-match", [PV_BOUND, PV_NODE2], [UNBOUND_PVC, BOUND_PVC], None, None, [], [],
     [ERR_BIND_CONFLICT], False),
    ("one-prebound,one-unbound", [PV_NODE1A, PV_NODE1B], [UNBOUND_PVC, PREBOUND_PVC], None, None, [], [], [], True),
    ("immediate-bound-pvc", [PV_BOUND_IMMEDIATE], [IMMEDIATE_BOUND_PVC], None, None, [], [], [], False),
    ("immediate-bound-pvc-wrong-node", [PV_BOUND_IMMEDIATE_NODE2], [IMMEDIATE_BOUND_PVC], None, None, [], [],
     [ERR_NODE_CONFLICT], False),
    ("immediate-unbound-pvc", [], [IMMEDIATE_UNBOUND_PVC], None, None, [], [], [], True),
    ("immediate-unbound-pvc,delayed-mode-bound", [PV_BOUND], [IMMEDIATE_UNBOUND_PVC, BOUND_PVC], None, None, [], [],
     [], True),
    ("immediate-unbound-pvc,delayed-mode-unbound", [], [IMMEDIATE_UNBOUND_PVC, UNBOUND_PVC], None, None, [], [], [],
     True),
    ("generic-ephemeral,no-pvc", [], [], None, _pod("test-pod", "testns", ephemeral=["no-such-pvc"]), [], [], [], True),
    ("generic-ephemeral,with-pvc", [PV_BOUND_GENERIC], [], [CORRECT_GENERIC_PVC],
     _pod("test-pod", "testns", ephemeral=["test-volume"]), [], [], [], False),
    ("generic-ephemeral,wrong-pvc", [PV_BOUND_GENERIC], [], [CONFLICTING_GENERIC_PVC],
     _pod("test-pod", "testns", ephemeral=["test-volume"]), [], [], [], True),
]
WITH_PROVISIONING: list[FindCase] = [
    ("one-provisioned", [], [PROVISIONED_PVC], None, None, [], ["provisioned-pvc"], [], False),
    ("two-unbound-pvcs,one-matched,one-provisioned", [PV_NODE1A], [UNBOUND_PVC, PROVISIONED_PVC], None, None,
     [("unbound-pvc", "pv-node1a")], ["provisioned-pvc"], [], False),
    ("one-bound,one-provisioned", [PV_BOUND], [BOUND_PVC, PROVISIONED_PVC], None, None, [], ["provisioned-pvc"], [],
     False),
    ("one-binding,one-selected-node", [PV_BOUND], [BOUND_PVC, SELECTED_NODE_PVC], None, None, [], ["provisioned-pvc"],
     [], False),
    ("immediate-unbound-pvc", [], [IMMEDIATE_UNBOUND_PVC], None, None, [], [], [], True),
    ("one-immediate-bound,one-provisioned", [PV_BOUND_IMMEDIATE], [IMMEDIATE_BOUND_PVC, PROVISIONED_PVC], None, None,
     [], ["provisioned-pvc"], [], False),
    ("invalid-provisioner", [], [NO_PROVISIONER_PVC], None, None, [], [], [ERR_BIND_CONFLICT], False),
    ("volume-topology-unsatisfied", [], [TOPO_MISMATCH_PVC], None, None, [], [], [ERR_BIND_CONFLICT], False),
]


def _find(case: FindCase) -> None:
    _, pvs, pod_pvcs, cached, pod, want_bindings, want_provisions, want_reasons, fails = case
    pvcs = pod_pvcs if cached is None else cached
    pod = pod if pod is not None else _claims_pod(pod_pvcs)
    claims, volumes, classes = _maps(pvcs, pvs, BINDER_CLASSES)
    prepared = binding_prefilter(pod, claims, classes)
    if isinstance(prepared, Refusal):  # GetPodVolumeClaims' error, or immediate claims unbound
        assert fails, prepared
        return
    if prepared is None:  # no claims: nothing to find
        assert not fails and not want_bindings and not want_reasons
        return
    refusal, decision = binding_filter(prepared, TEST_NODE, volumes, _every_of_class(volumes), classes)
    if refusal is not None and refusal.code == ERROR:
        assert fails, refusal
        return
    assert not fails
    assert sorted((refusal.message if refusal else "").split(", ") if refusal else []) == sorted(want_reasons)
    assert [(c.name, v.name) for c, v in decision.static] == want_bindings
    assert [c.name for c in decision.dynamic] == want_provisions
    # The index: a refusal alike, or none.
    answer = _state(pvcs, pvs, BINDER_CLASSES).check(pod, TEST_NODE)
    assert (answer is None) == (refusal is None)


@pytest.mark.parametrize("case", WITHOUT_PROVISIONING, ids=[c[0] for c in WITHOUT_PROVISIONING])
def test_find_pod_volumes_without_provisioning(case: FindCase) -> None:
    _find(case)


@pytest.mark.parametrize("case", WITH_PROVISIONING, ids=[c[0] for c in WITH_PROVISIONING])
def test_find_pod_volumes_with_provisioning(case: FindCase) -> None:
    _find(case)




# TestAssumePodVolumes: (name, pod pvcs, pvs, want all bound, want assumed (claim, volume), want provisioned)
ASSUME: list[tuple[str, list[dict[str, Any]], list[dict[str, Any]], bool, list[tuple[str, str]], list[str]]] = [
    ("all-bound", [BOUND_PVC], [PV_BOUND], True, [], []),
    ("one-binding", [UNBOUND_PVC], [PV_NODE1A], False, [("unbound-pvc", "pv-node1a")], []),
    ("two-bindings", [UNBOUND_PVC, UNBOUND_PVC2], [PV_NODE1A, PV_NODE1B], False,
     [("unbound-pvc", "pv-node1a"), ("unbound-pvc2", "pv-node1b")], []),
    ("pv-already-bound", [UNBOUND_PVC], [PV_NODE1A_BOUND], False, [("unbound-pvc", "pv-node1a")], []),
    ("one-binding, one-pvc-provisioned", [UNBOUND_PVC, PROVISIONED_PVC], [PV_NODE1A], False,
     [("unbound-pvc", "pv-node1a")], ["provisioned-pvc"]),
]


@pytest.mark.parametrize("name,pvcs,pvs,all_bound,assumed,provisioned", ASSUME, ids=[c[0] for c in ASSUME])
def test_assume_pod_volumes(name: str, pvcs: list[dict[str, Any]], pvs: list[dict[str, Any]], all_bound: bool,
                            assumed: list[tuple[str, str]], provisioned: list[str]) -> None:
    state = _state(pvcs, pvs, BINDER_CLASSES)
    pod = _claims_pod(pvcs)
    state.place("uid-1", pod, "node1", reserve=TEST_NODE)
    reserved = state.reserved("uid-1")
    if all_bound:
        assert reserved is None
        return
    assert reserved is not None
    assert sorted(reserved[0].items()) == sorted(assumed) and reserved[1] == provisioned
    for claim, volume in assumed:  # validateAssume: the volume's claimRef names the claim
        ref = state.volumes[volume].claim_ref
        assert ref is not None and ref[:2] == ("testns", claim)
    for claim in provisioned:  # and the claim to provision its selected node
        assert state.claims[("testns", claim)].selected_node == "node1"
    # RevertAssumedPodVolumes: the pod gone, the cache is as the API objects say.
    state.remove("uid-1")
    for claim, volume in assumed:
        assert state.volumes[volume].claim_ref == volume_of(next(p for p in pvs if _name(p) == volume)).claim_ref
    for claim in provisioned:
        assert state.claims[("testns", claim)].selected_node is None



# --- VolumeZone -----------------------------------------------------------------------------------

SINGLE_ZONE_PVS = [
    _pv("Vol_1", labels={BETA_ZONE: "us-west1-a"}),
    _pv("Vol_2", labels={BETA_REGION: "us-west1", "uselessLabel": "none"}),
    _pv("Vol_3", labels={BETA_REGION: "us-west1"}),
    _pv("Vol_Stable_1", labels={ZONE: "us-west1-a"}),
    _pv("Vol_Stable_2", labels={REGION: "us-west1", "uselessLabel": "none"}),
    _pv("Vol_Stable_3", labels={ZONE: "us-west1-a", REGION: "us-west1-a"}),
]
SINGLE_ZONE_PVCS = [_pvc(f"PVC_{n}", volume=v) for n, v in (
    ("1", "Vol_1"), ("2", "Vol_2"), ("3", "Vol_3"), ("4", "Vol_not_exist"), ("Stable_1", "Vol_Stable_1"),
    ("Stable_2", "Vol_Stable_2"), ("Stable_3", "Vol_Stable_3"))]
MULTI_ZONE_PVS = [
    _pv("Vol_1", labels={BETA_ZONE: "us-west1-a"}),
    _pv("Vol_2", labels={BETA_ZONE: "us-west1-b", "uselessLabel": "none"}),
    _pv("Vol_3", labels={BETA_ZONE: "us-west1-c__us-west1-a"}),
    _pv("Vol_Stable_1", labels={ZONE: "us-west1-a"}),
    _pv("Vol_Stable_2", labels={ZONE: "us-west1-c__us-west1-a"}),
]
MULTI_ZONE_PVCS = [_pvc(f"PVC_{n}", volume=v) for n, v in (
    ("1", "Vol_1"), ("2", "Vol_2"), ("3", "Vol_3"), ("4", "Vol_not_exist"), ("Stable_1", "Vol_Stable_1"),
    ("Stable_2", "Vol_Stable_2"))]
BINDING_ZONE_CLASSES = [_sc("Class_Immediate", mode=None), _sc("Class_Wait", "WaitForFirstConsumer")]
BINDING_ZONE_PVS = [_pv("Vol_1", labels={BETA_ZONE: "us-west1-a"})]
BINDING_ZONE_PVCS = [_pvc("PVC_1", volume="Vol_1"), _pvc("PVC_NoSC", "Class_0"), _pvc("PVC_EmptySC"),
                     _pvc("PVC_WaitSC", "Class_Wait"), _pvc("PVC_ImmediateSC", "Class_Immediate")]
ZONE_CONFLICT = (UNRESOLVABLE, ERR_ZONE_CONFLICT)


def _zone_pod(claim: str | None) -> dict[str, Any]:
    return _pod("pod_1", claims=[] if claim is None else [(claim, "")])


def _host1(**labels: str) -> NodeView:
    return _bare_node("host1", labels)


ZoneCase = tuple[str, str, dict[str, Any], NodeView, Any, tuple[str, str] | None]
VOLUME_ZONE: list[ZoneCase] = [
    # (table, name, pod, node, PreFilter status, Filter status)
    ("TestSingleZone", "pod without volume", _zone_pod(None), _host1(**{BETA_ZONE: "us-west1-a"}), SKIP, None),
    ("TestSingleZone", "node without labels", _zone_pod("PVC_1"), _host1(), None, None),
    ("TestSingleZone", "beta zone label matched", _zone_pod("PVC_1"),
     _host1(**{BETA_ZONE: "us-west1-a", "uselessLabel": "none"}), None, None),
    ("TestSingleZone", "beta region label matched", _zone_pod("PVC_2"),
     _host1(**{BETA_REGION: "us-west1", "uselessLabel": "none"}), None, None),
    ("TestSingleZone", "beta region label doesn't match", _zone_pod("PVC_2"),
     _host1(**{BETA_REGION: "no_us-west1", "uselessLabel": "none"}), None, ZONE_CONFLICT),
    ("TestSingleZone", "beta zone label doesn't match", _zone_pod("PVC_1"),
     _host1(**{BETA_ZONE: "no_us-west1-a", "uselessLabel": "none"}), None, ZONE_CONFLICT),
    ("TestSingleZone", "zone label matched", _zone_pod("PVC_Stable_1"),
     _host1(**{ZONE: "us-west1-a", "uselessLabel": "none"}), None, None),
    ("TestSingleZone", "region label matched", _zone_pod("PVC_Stable_2"),
     _host1(**{REGION: "us-west1", "uselessLabel": "none"}), None, None),
    ("TestSingleZone", "region label doesn't match", _zone_pod("PVC_Stable_2"),
     _host1(**{REGION: "no_us-west1", "uselessLabel": "none"}), None, ZONE_CONFLICT),
    ("TestSingleZone", "zone label doesn't match", _zone_pod("PVC_Stable_1"),
     _host1(**{ZONE: "no_us-west1-a", "uselessLabel": "none"}), None, ZONE_CONFLICT),
    ("TestSingleZone", "pv with zone and region, node with only zone", _zone_pod("PVC_Stable_3"),
     _host1(**{ZONE: "us-west1-a"}), None, ZONE_CONFLICT),
    ("TestSingleZone", "pv with zone,node with beta zone", _zone_pod("PVC_Stable_1"),
     _host1(**{BETA_ZONE: "us-west1-a"}), None, ZONE_CONFLICT),
    ("TestSingleZone", "pv with beta label,node with ga label, matched", _zone_pod("PVC_1"),
     _host1(**{ZONE: "us-west1-a"}), None, None),
    ("TestSingleZone", "pv with beta label,node with ga label, don't match", _zone_pod("PVC_1"),
     _host1(**{ZONE: "us-west1-b"}), None, ZONE_CONFLICT),
    ("TestMultiZone", "node without labels", _zone_pod("PVC_3"), _host1(), None, None),
    ("TestMultiZone", "beta zone label matched", _zone_pod("PVC_3"),
     _host1(**{BETA_ZONE: "us-west1-a", "uselessLabel": "none"}), None, None),
    ("TestMultiZone", "beta zone label doesn't match", _zone_pod("PVC_1"),
     _host1(**{BETA_ZONE: "us-west1-b", "uselessLabel": "none"}), None, ZONE_CONFLICT),
    ("TestMultiZone", "zone label matched", _zone_pod("PVC_Stable_2"),
     _host1(**{ZONE: "us-west1-a", "uselessLabel": "none"}), None, None),
    ("TestMultiZone", "zone label doesn't match", _zone_pod("PVC_Stable_1"),
     _host1(**{ZONE: "us-west1-b", "uselessLabel": "none"}), None, ZONE_CONFLICT),
]
_BINDING_NODE = _host1(**{BETA_ZONE: "us-west1-a", "uselessLabel": "none"})
VOLUME_ZONE_BINDING: list[ZoneCase] = [
    ("TestWithBinding", "label zone failure domain matched", _zone_pod("PVC_1"), _BINDING_NODE, None, None),
    ("TestWithBinding", "unbound volume empty storage class", _zone_pod("PVC_EmptySC"), _BINDING_NODE,
     (UNRESOLVABLE, "PersistentVolumeClaim had no pv name and storageClass name"), None),
    ("TestWithBinding", "unbound volume no storage class", _zone_pod("PVC_NoSC"), _BINDING_NODE,
     (UNRESOLVABLE, 'storageclass.storage.k8s.io "Class_0" not found'), None),
    ("TestWithBinding", "unbound volume immediate binding mode", _zone_pod("PVC_ImmediateSC"), _BINDING_NODE,
     (UNRESOLVABLE, 'VolumeBindingMode not set for StorageClass "Class_Immediate"'), None),
    ("TestWithBinding", "unbound volume wait binding mode", _zone_pod("PVC_WaitSC"), _BINDING_NODE, SKIP, None),
]


def _zone(case: ZoneCase, pvcs: list[dict[str, Any]], pvs: list[dict[str, Any]],
          classes: list[dict[str, Any]]) -> None:
    _, _, pod, node, want_prefilter, want_filter = case
    claims, volumes, klasses = _maps(pvcs, pvs, classes)
    topologies = zone_prefilter(pod, claims, volumes, klasses)
    if isinstance(want_prefilter, tuple):
        assert isinstance(topologies, Refusal) and _outcome(topologies) == want_prefilter
        return  # (the Filter's fallback says the same)
    assert not isinstance(topologies, Refusal)
    if want_prefilter == SKIP:
        assert topologies == ()
    assert _outcome(zone_filter(topologies, node.labels)) == want_filter


@pytest.mark.parametrize("case", VOLUME_ZONE, ids=[f"{c[0]}/{c[1]}" for c in VOLUME_ZONE])
def test_volume_zone(case: ZoneCase) -> None:
    if case[0] == "TestSingleZone":
        _zone(case, SINGLE_ZONE_PVCS, SINGLE_ZONE_PVS, [])
    else:
        _zone(case, MULTI_ZONE_PVCS, MULTI_ZONE_PVS, [])


@pytest.mark.parametrize("case", VOLUME_ZONE_BINDING, ids=[f"{c[0]}/{c[1]}" for c in VOLUME_ZONE_BINDING])
def test_volume_zone_with_binding(case: ZoneCase) -> None:
    _zone(case, BINDING_ZONE_PVCS, BINDING_ZONE_PVS, BINDING_ZONE_CLASSES)


# --- VolumeRestrictions ---------------------------------------------------------------------------



RWOP_1 = _pvc("claim-with-rwop-1", modes=["ReadWriteOncePod"])
RWOP_2 = _pvc("claim-with-rwop-2", modes=["ReadWriteOncePod"])
RWX = _pvc("claim-with-rwx", modes=["ReadWriteMany"])
POD_WITH_ONE_PVC = _pod("pod-with-one-pvc", claims=[("claim-with-rwop-1", "")], uid="one")
POD_WITH_TWO_PVCS = _pod("pod-with-two-pvcs", claims=[("claim-with-rwop-1", ""), ("claim-with-rwop-2", "")], uid="two")
POD_WITH_ONE_CONFLICT = _pod("pod-with-one-conflict", claims=[("claim-with-rwop-1", "")], uid="c1")
POD_WITH_TWO_CONFLICTS = _pod("pod-with-two-conflicts", claims=[("claim-with-rwop-1", ""), ("claim-with-rwop-2", "")],
                              uid="c2")
POD_WITH_RWX = _pod("pod-with-rwx", claims=[("claim-with-rwx", "")], uid="rwx")

ACCESS_MODE: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], Any, Any]] = [
    # (name, pod, existing pods (on node-1), existing claims, PreFilter status, Filter status)
    ("nothing", _pod("p"), [], [], SKIP, None),
    ("failed to get PVC", POD_WITH_ONE_PVC, [], [],
     (UNRESOLVABLE, 'persistentvolumeclaim "claim-with-rwop-1" not found'), None),
    ("no access mode conflict", POD_WITH_ONE_PVC, [POD_WITH_RWX], [RWOP_1, RWX], SKIP, None),
    ("access mode conflict, unschedulable", POD_WITH_ONE_CONFLICT, [POD_WITH_ONE_PVC, POD_WITH_RWX], [RWOP_1, RWX], None,
     (UNSCHEDULABLE, ERR_RWOP_CONFLICT)),
    ("two conflicts, unschedulable", POD_WITH_TWO_CONFLICTS, [POD_WITH_TWO_PVCS, POD_WITH_RWX], [RWOP_1, RWOP_2, RWX],
     None, (UNSCHEDULABLE, ERR_RWOP_CONFLICT)),
]


@pytest.mark.parametrize("name,pod,existing,pvcs,want_prefilter,want_filter", ACCESS_MODE,
                         ids=[c[0] for c in ACCESS_MODE])
def test_access_mode_conflicts(name: str, pod: dict[str, Any], existing: list[dict[str, Any]],
                               pvcs: list[dict[str, Any]], want_prefilter: Any, want_filter: Any) -> None:
    claims, _, _ = _maps(pvcs)
    rwop = rwop_claims(pod, claims)
    if isinstance(want_prefilter, tuple):
        assert isinstance(rwop, Refusal) and _outcome(rwop) == want_prefilter
        return
    assert not isinstance(rwop, Refusal)
    used = {("default", claim) for other in existing for claim in
            (v["persistentVolumeClaim"]["claimName"] for v in other["spec"]["volumes"])}
    if want_prefilter == SKIP:  # no ReadWriteOncePod claim in use: kube-scheduler skips the Filter
        assert not any(("default", name) in used for name in rwop)
    assert _outcome(restrictions_filter(rwop, "default", used.__contains__)) == want_filter
    # The index: the pods placed, the pod checked: the same answer. (The whole profile runs
    # there: the claims are bound to volumes, else VolumeBinding would refuse them first.)
    bound = [{**c, "metadata": {**c["metadata"], "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
              "spec": {**c["spec"], "volumeName": f"pv-{_name(c)}"}} for c in pvcs]
    state = _state(bound, [_pv(f"pv-{_name(c)}") for c in pvcs], [])
    for other in existing:
        state.place(other["metadata"]["uid"], other, "node-1")
    node = _bare_node("node-1")
    answer = state.check(pod, node)
    assert answer == (None if want_filter is None else f"node node-1: {want_filter[1]}")
    # Preemption: with the users counted as gone, no conflict is left.
    assert state.check(pod, node, frozenset(o["metadata"]["uid"] for o in existing)) is None


# --- NodeVolumeLimits: TestCSILimits --------------------------------------------------------------

EBS, GCE, HOSTPATH = "ebs.csi.aws.com", "pd.csi.storage.gke.io", "kubernetes.io/hostpath"
CSI_SC = "csi-sc"


def _csi_claims(drivers: list[str]) -> list[dict[str, Any]]:
    """getFakeCSIPVCLister("csi", ...): csi-<driver>-0..3 bound to their volume, csi-4 unbound of
    the class, csi-5 without a class, csi-6 of the class naming a volume that does not exist."""
    claims = [_pvc(f"csi-{d}-{j}", volume=f"csi-{d}-{j}") for d in drivers for j in range(4)]
    return claims + [_pvc("csi-4", CSI_SC), _pvc("csi-5"), _pvc("csi-6", CSI_SC, volume="missing-in-action")]


def _csi_volumes(drivers: list[str]) -> list[dict[str, Any]]:
    """getFakeCSIPVLister: a CSI volume csi-<driver>-j (hostpath: an in-tree hostPath volume)."""
    return [_pv(f"csi-{d}-{j}", csi=None if d == HOSTPATH else (d, f"csi-{d}-{j}")) for d in drivers for j in range(4)]


def _csi_pod(*claims: str, name: str = "", namespace: str = "default", uid: str = "",
             ephemeral: Iterable[str] = (), other: Iterable[dict[str, Any]] = ()) -> dict[str, Any]:
    return _pod(name, namespace, claims=[(c, "") for c in claims], ephemeral=ephemeral, uid=uid, other=other)


RUNNING_POD = _csi_pod(f"csi-{EBS}-3")
PENDING_VOLUME_POD = _csi_pod("csi-4")
UNBOUND_PVC_POD2 = _csi_pod("csi-4")
MISSING_PV_POD = _csi_pod("csi-6")
NO_SC_PVC_POD = _csi_pod("csi-5")
GCE_TWO_VOL_POD = _csi_pod(f"csi-{GCE}-1", f"csi-{GCE}-2")
CSI_EBS_ONE_VOL_POD = _csi_pod(f"csi-{EBS}-0")
CSI_EBS_TWO_VOL_POD = _csi_pod(f"csi-{EBS}-1", f"csi-{EBS}-2")
EPHEMERAL_VOLUME_POD = _csi_pod(name="abc", namespace="test", uid="12345", ephemeral=["xyz"])
EPHEMERAL_CLAIM = _pvc("abc-xyz", CSI_SC, "test", owner="12345")
CONFLICTING_CLAIM = _pvc("abc-xyz", CSI_SC, "test")
EPHEMERAL_TWO_VOLUME_POD = _csi_pod(name="abc", namespace="test", uid="12345II", ephemeral=["x", "y"])
EPHEMERAL_CLAIM_X = _pvc("abc-x", CSI_SC, "test", owner="12345II")
EPHEMERAL_CLAIM_Y = _pvc("abc-y", CSI_SC, "test", owner="12345II")
CONFIG_AND_SECRET = [{"name": "c", "configMap": {}}, {"name": "s", "secret": {}}]
ONLY_CONFIGMAP_AND_SECRET_VOL_POD = _csi_pod(other=CONFIG_AND_SECRET)
PVC_POD_WITH_CONFIGMAP_AND_SECRET = _csi_pod(f"csi-{EBS}-0", other=CONFIG_AND_SECRET)
EPHEMERAL_POD_WITH_CONFIGMAP_AND_SECRET = _csi_pod(name="abc", namespace="test", ephemeral=["xyz"],
                                                   other=CONFIG_AND_SECRET)
MAX_EXCEEDED = (UNSCHEDULABLE, ERR_MAX_VOLUME_COUNT)

CsiCase = tuple[str, dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], int, list[str], str, Any, str]
CSI_LIMITS: list[CsiCase] = [
    # (test, new pod, existing pods, extra claims, maxVols, drivers, limit source, want status, skip reason)
    ("should count VolumeAttachments towards volume limit when no pods exist", CSI_EBS_ONE_VOL_POD, [], [], 2, [EBS],
     "csinode", MAX_EXCEEDED, ATTACHMENTS),
    ("should schedule pod when VolumeAttachments count does not exceed limit", CSI_EBS_ONE_VOL_POD, [], [], 2, [EBS],
     "csinode", None, ATTACHMENTS),
    ("fits when node volume limit >= new pods CSI volume", CSI_EBS_ONE_VOL_POD, [RUNNING_POD, CSI_EBS_TWO_VOL_POD], [],
     4, [EBS], "csinode", None, ""),
    ("doesn't when node volume limit <= pods CSI volume", CSI_EBS_ONE_VOL_POD, [RUNNING_POD, CSI_EBS_TWO_VOL_POD], [],
     2, [EBS], "csinode", MAX_EXCEEDED, ""),
    ("should when driver does not support volume limits", CSI_EBS_ONE_VOL_POD, [RUNNING_POD, CSI_EBS_TWO_VOL_POD], [],
     2, [EBS], "csinode-with-no-limit", None, ""),
    ("count pending PVCs towards volume limit <= pods CSI volume", CSI_EBS_ONE_VOL_POD,
     [PENDING_VOLUME_POD, CSI_EBS_TWO_VOL_POD], [], 2, [EBS], "csinode", MAX_EXCEEDED, ""),
    ("count multiple pending pvcs towards volume limit >= pods CSI volume", CSI_EBS_ONE_VOL_POD,
     [PENDING_VOLUME_POD, UNBOUND_PVC_POD2, CSI_EBS_TWO_VOL_POD], [], 4, [EBS], "csinode", None, ""),
    ("should count PVCs with invalid PV name but valid SC", CSI_EBS_ONE_VOL_POD, [MISSING_PV_POD, CSI_EBS_TWO_VOL_POD],
     [], 2, [EBS], "csinode", MAX_EXCEEDED, ""),
    ("don't count pvcs with missing SC towards volume limit", CSI_EBS_ONE_VOL_POD, [RUNNING_POD, NO_SC_PVC_POD], [], 2,
     [EBS], "csinode", None, ""),
    ("count pvcs with the same type towards volume limit", CSI_EBS_ONE_VOL_POD, [GCE_TWO_VOL_POD, CSI_EBS_TWO_VOL_POD],
     [], 2, [EBS, GCE], "csinode", MAX_EXCEEDED, ""),
    ("don't count pvcs with different type towards volume limit", GCE_TWO_VOL_POD, [CSI_EBS_TWO_VOL_POD, RUNNING_POD],
     [], 2, [EBS, GCE], "csinode", None, ""),
    *[(name, CSI_EBS_ONE_VOL_POD, [], [], 2, [EBS], "csinode", None, MIGRATION) for name in (
        "should count in-tree volumes if migration is enabled",
        "nil csi node",
        "should count unbound in-tree volumes if migration is enabled",
        "should not limit pod if volume used does not report limits",
        "should not count non-migratable in-tree volumes",
        "should count in-tree inline volumes if migration is enabled",
        "should count in-tree and csi volumes if migration is enabled (when scheduling in-tree volumes)",
        "should count in-tree, inline and csi volumes if migration is enabled (when scheduling in-tree volumes)",
        "should not count in-tree, inline and csi volumes if migration is enabled (when scheduling in-tree volumes)",
        "should count in-tree and csi volumes if migration is enabled (when scheduling csi volumes)",
        "don't skip Filter when the pod has inline migratable volumes")],
    ("ephemeral volume missing", EPHEMERAL_VOLUME_POD, [], [], 0, [EBS], "csinode-with-no-limit",
     (UNRESOLVABLE, 'looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found'), ""),
    ("ephemeral volume not owned", EPHEMERAL_VOLUME_POD, [], [CONFLICTING_CLAIM], 0, [EBS], "csinode-with-no-limit",
     (ERROR, "PVC test/abc-xyz was not created for pod test/abc (pod is not owner)"), ""),
    ("ephemeral volume unbound", EPHEMERAL_VOLUME_POD, [], [EPHEMERAL_CLAIM], 0, [EBS], "csinode-with-no-limit", None,
     ""),
    ("ephemeral doesn't when node volume limit <= pods CSI volume", EPHEMERAL_VOLUME_POD,
     [RUNNING_POD, CSI_EBS_TWO_VOL_POD], [EPHEMERAL_CLAIM], 2, [EBS], "csinode", MAX_EXCEEDED, ""),
    ("ephemeral doesn't when node volume limit <= pods ephemeral CSI volume", CSI_EBS_ONE_VOL_POD,
     [RUNNING_POD, EPHEMERAL_TWO_VOLUME_POD], [EPHEMERAL_CLAIM_X, EPHEMERAL_CLAIM_Y], 2, [EBS], "csinode",
     MAX_EXCEEDED, ""),
    ("persistent doesn't when node volume limit <= pods ephemeral CSI volume + persistent volume, ephemeral disabled",
     CSI_EBS_ONE_VOL_POD, [RUNNING_POD, EPHEMERAL_VOLUME_POD, CSI_EBS_TWO_VOL_POD], [EPHEMERAL_CLAIM], 3, [EBS],
     "csinode", MAX_EXCEEDED, ""),
    ("persistent doesn't when node volume limit <= pods ephemeral CSI volume + persistent volume",
     CSI_EBS_ONE_VOL_POD, [RUNNING_POD, EPHEMERAL_VOLUME_POD, CSI_EBS_TWO_VOL_POD], [EPHEMERAL_CLAIM], 3, [EBS],
     "csinode", MAX_EXCEEDED, ""),
    ("persistent okay when node volume limit > pods ephemeral CSI volume + persistent volume", CSI_EBS_ONE_VOL_POD,
     [RUNNING_POD, EPHEMERAL_VOLUME_POD, CSI_EBS_TWO_VOL_POD], [EPHEMERAL_CLAIM], 5, [EBS], "csinode", None, ""),
    ("skip Filter when the pod only uses secrets and configmaps", ONLY_CONFIGMAP_AND_SECRET_VOL_POD, [], [], 2, [EBS],
     "csinode", SKIP, ""),
    ("don't skip Filter when the pod has pvcs", PVC_POD_WITH_CONFIGMAP_AND_SECRET, [], [], 2, [EBS], "csinode", None,
     ""),
    ("don't skip Filter when the pod has ephemeral volumes", EPHEMERAL_POD_WITH_CONFIGMAP_AND_SECRET, [], [], 0, [EBS],
     "csinode-with-no-limit",
     (UNRESOLVABLE, 'looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found'), ""),
]


@pytest.mark.parametrize("case", CSI_LIMITS, ids=[c[0] for c in CSI_LIMITS])
def test_csi_limits(case: CsiCase) -> None:
    _, new_pod, existing, extra, max_vols, drivers, source, want, skip = case
    if skip:
        pytest.skip(skip)
    claims, volumes, classes = _maps(_csi_claims(drivers) + extra, _csi_volumes(drivers),
                                     [_sc(CSI_SC, provisioner=drivers[0])])
    limits = {d: max_vols for d in drivers} if source == "csinode" else {}
    new = attachable_volumes(new_pod, claims, volumes, classes, new_pod=True)
    if want == SKIP:  # PreFilter: no claim, no volume to count
        assert new == {}
        return
    if isinstance(new, Refusal):
        assert _outcome(new) == want
        return
    attached: dict[Any, str] = {}
    for pod in existing:
        counted = attachable_volumes(pod, claims, volumes, classes, new_pod=False)
        assert isinstance(counted, dict)
        attached.update(counted)
    counts: dict[str, int] = {}
    for driver in attached.values():
        counts[driver] = counts.get(driver, 0) + 1
    assert _outcome(csi_limits_filter(new, attached.__contains__, counts, limits)) == want


# --- the index's own bookkeeping (not kube-scheduler tables) ---------------------------------------


def test_the_index_counts_attached_csi_volumes_incrementally() -> None:
    """TestCSILimits' "doesn't when node volume limit <= pods CSI volume" through the index, then
    the counts kept as pods come and go and a claim gets bound."""
    drivers = [EBS]
    claims = [{**c, "metadata": {**c["metadata"], "annotations": {"pv.kubernetes.io/bind-completed": "yes"}}}
              if c["spec"].get("volumeName") and c["metadata"]["name"] != "csi-6" else c for c in _csi_claims(drivers)]
    state = _state([c for c in claims if c["metadata"]["name"] != "csi-6"], _csi_volumes(drivers),
                   [_sc(CSI_SC, "WaitForFirstConsumer", EBS)])
    state.update("csinodes", "ADDED", {"metadata": {"name": "n1"}, "spec": {"drivers": [
        {"name": EBS, "nodeID": "n1", "allocatable": {"count": 3}}]}})
    node = _bare_node("n1")
    new = {**_csi_pod(f"csi-{EBS}-0"), "metadata": {"name": "new", "namespace": "default", "uid": "new"}}
    state.place("running", {**RUNNING_POD, "metadata": {"name": "r", "namespace": "default", "uid": "running"}}, "n1")
    state.place("two", {**CSI_EBS_TWO_VOL_POD, "metadata": {"name": "t", "namespace": "default", "uid": "two"}}, "n1")
    assert state.check(new, node) == f"node n1: {ERR_MAX_VOLUME_COUNT}"  # 3 attached + 1 > 3
    assert state.check(new, node, frozenset({"running"})) is None  # a victim gone: 2 + 1
    # The same volume used twice counts once: a second pod on csi-ebs-3 adds nothing.
    state.place("again", {**RUNNING_POD, "metadata": {"name": "a", "namespace": "default", "uid": "again"}}, "n1")
    assert state.check(new, node, frozenset({"running"})) == f"node n1: {ERR_MAX_VOLUME_COUNT}"
    state.remove("again")
    state.remove("running")
    assert state.check(new, node) is None
    # A pending claim counts by its class's driver; bound later to a CSI volume it counts as that.
    state.place("pending", {**PENDING_VOLUME_POD, "metadata": {"name": "p", "namespace": "default", "uid": "pending"}},
                "n1")
    assert state.check(new, node) == f"node n1: {ERR_MAX_VOLUME_COUNT}"
    state.update("persistentvolumeclaims", "MODIFIED", _pvc("csi-4", CSI_SC, volume=f"csi-{EBS}-1", bound=True, rv="9"))
    assert state.check(new, node) is None  # csi-4 now is csi-ebs-1, already attached by "two"
    # The limit raised on the CSINode.
    state.remove("two")
    state.place("two", {**CSI_EBS_TWO_VOL_POD, "metadata": {"name": "t", "namespace": "default", "uid": "two"}}, "n1")
    state.update("csinodes", "MODIFIED", {"metadata": {"name": "n1"}, "spec": {"drivers": [
        {"name": EBS, "allocatable": {"count": 2}}]}})
    assert state.check(new, node) == f"node n1: {ERR_MAX_VOLUME_COUNT}"


def test_two_pods_placed_on_one_node_do_not_take_the_same_local_volume() -> None:
    classes = [_sc("local", "WaitForFirstConsumer", "kubernetes.io/no-provisioner")]
    pvs = [_pv("pv-1", "local", capacity="10Gi", phase="Available", affinity={HOSTNAME: ["n1"]}),
           _pv("pv-2", "local", capacity="5Gi", phase="Available", affinity={HOSTNAME: ["n1"]}),
           _pv("pv-far", "local", capacity="1Gi", phase="Available", affinity={HOSTNAME: ["n2"]})]
    pvcs = [_pvc(f"c{i}", "local", request="1Gi", uid=f"claim-{i}") for i in range(3)]
    state = _state(pvcs, pvs, classes)
    n1, n2 = _node("n1"), _node("n2")
    pods = [_pod(f"p{i}", claims=[(f"c{i}", "data")], uid=f"pod-{i}") for i in range(3)]
    assert state.check(pods[0], n1) is None and state.check(pods[0], n2) is None
    state.place("pod-0", pods[0], "n1", reserve=n1)
    assert state.reserved("pod-0") == ({"c0": "pv-2"}, [])  # the smallest that fits
    state.place("pod-1", pods[1], "n1", reserve=n1)
    assert state.reserved("pod-1") == ({"c1": "pv-1"}, [])
    assert state.check(pods[2], n1) == f"node n1: {ERR_BIND_CONFLICT}"  # both taken
    assert state.check(pods[2], n2) is None
    state.remove("pod-0")  # its binding failed: pv-2 is free again
    assert state.check(pods[2], n1) is None
    # The binding's writes: the volume's claimRef, then the claim's volumeName (as the PV controller).
    writes = state.plan("pod-1", "n1")
    assert writes is not None and [w[1] for w in writes] == [
        "/api/v1/persistentvolumes/pv-1", "/api/v1/namespaces/default/persistentvolumeclaims/c1"]
    assert writes[0][2]["spec"]["claimRef"]["uid"] == "claim-1" and writes[1][2]["spec"] == {"volumeName": "pv-1"}
    assert writes[1][2]["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"
