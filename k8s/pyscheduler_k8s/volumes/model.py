"""The volume filters' plain data: kube-scheduler's reasons and the annotations it reads, and
claims, volumes, storage classes and CSINode limits parsed once from the API objects (the
package's docstring states the rules).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any, Final

from pyscheduler_k8s.quantity import QuantityError, parse_quantity
from pyscheduler_k8s.selectors import LabelSelector, SelectorError, label_selector

__all__ = ["BIND_TIMEOUT", "Claim", "ERR_BIND_CONFLICT", "ERR_MAX_VOLUME_COUNT", "ERR_NODE_CONFLICT", "ERR_PV_NOT_EXIST", "ERR_RWOP_CONFLICT", "ERR_UNBOUND_IMMEDIATE", "ERR_ZONE_CONFLICT", "PodClaims", "PodVolume", "Refusal", "STORAGE_PATHS", "StorageClass", "Volume", "VolumeBindingError", "VolumeDecision", "claim_of", "csi_limits_of", "pod_volumes", "storage_class_of", "volume_of"]

log = logging.getLogger(__name__)


#: The resources the shim follows for these filters, by the kind :meth:`VolumeState.update` takes.
STORAGE_PATHS: Final = {
    "persistentvolumeclaims": "/api/v1/persistentvolumeclaims",
    "persistentvolumes": "/api/v1/persistentvolumes",
    "storageclasses": "/apis/storage.k8s.io/v1/storageclasses",
    "csinodes": "/apis/storage.k8s.io/v1/csinodes",
}
#: Without these followed the volume filters are off (the shim's role may not read them).
_REQUIRED: Final = frozenset({"persistentvolumeclaims", "persistentvolumes", "storageclasses"})

# kube-scheduler's status codes.
UNSCHEDULABLE: Final = "Unschedulable"
UNRESOLVABLE: Final = "UnschedulableAndUnresolvable"
ERROR: Final = "Error"

# kube-scheduler's reasons, word for word.
ERR_BIND_CONFLICT: Final = "node(s) didn't find available persistent volumes to bind"
ERR_NODE_CONFLICT: Final = "node(s) had volume node affinity conflict"
ERR_PV_NOT_EXIST: Final = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
ERR_UNBOUND_IMMEDIATE: Final = "pod has unbound immediate PersistentVolumeClaims"
ERR_ZONE_CONFLICT: Final = "node(s) had no available volume zone"
ERR_RWOP_CONFLICT: Final = ("node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod "
                            "access mode")
ERR_MAX_VOLUME_COUNT: Final = "node(s) exceed max volume count"

HOSTNAME_LABEL: Final = "kubernetes.io/hostname"
ANN_BIND_COMPLETED: Final = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER: Final = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE: Final = "volume.kubernetes.io/selected-node"
BETA_STORAGE_CLASS: Final = "volume.beta.kubernetes.io/storage-class"
NO_PROVISIONER: Final = "kubernetes.io/no-provisioner"
WAIT_FOR_FIRST_CONSUMER: Final = "WaitForFirstConsumer"
READ_WRITE_ONCE_POD: Final = "ReadWriteOncePod"
FILESYSTEM: Final = "Filesystem"
#: VolumeZone's labels, in kube-scheduler's order, and the GA label a beta one may be matched by.
TOPOLOGY_LABELS: Final = ("failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
                          "topology.kubernetes.io/zone", "topology.kubernetes.io/region")
_GA_LABEL: Final = {"failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
                    "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region"}
#: ``cloudvolume.LabelMultiZoneDelimiter``.
ZONE_DELIMITER: Final = "__"
#: In-tree provisioners CSI migration would translate (not modelled: their volumes are not counted).
_MIGRATABLE_IN_TREE: Final = frozenset({
    "kubernetes.io/aws-ebs", "kubernetes.io/gce-pd", "kubernetes.io/azure-disk", "kubernetes.io/azure-file",
    "kubernetes.io/cinder", "kubernetes.io/vsphere-volume", "kubernetes.io/portworx-volume"})
#: kube-scheduler's default ``bindTimeoutSeconds``: how long PreBind waits for claims to be bound.
BIND_TIMEOUT: Final = 600.0
#: Seconds between looks at the claims while waiting (kube-scheduler polls every second).
BIND_POLL: Final = 0.2
MERGE_PATCH: Final = "application/merge-patch+json"
#: The free volumes of a class not pinned to hostnames.
_ANY_HOST: Final = "\x00any"

ClaimKey = tuple[str, str]
#: A CSI volume counted towards a limit: (driver, what identifies it: ("handle", id) or
#: ("claim", namespace, name) for a claim not bound yet).
VolumeId = tuple[str, tuple[str, ...]]


# --- plain data ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Refusal:
    """A filter's answer other than success: kube-scheduler's status code and message."""

    code: str
    message: str


@dataclass(frozen=True, slots=True)
class Claim:
    """A PersistentVolumeClaim as the filters read it."""

    namespace: str
    name: str
    uid: str = ""
    #: ``GetPersistentVolumeClaimClass``: the beta annotation, else ``spec.storageClassName``.
    storage_class: str = ""
    volume_name: str = ""
    bind_completed: bool = False
    selected_node: str | None = None
    request: Decimal = Decimal(0)
    access_modes: frozenset[str] = frozenset()
    volume_mode: str = FILESYSTEM
    selector: LabelSelector | None = None
    #: Why ``spec.selector`` does not parse ("" : it does).
    selector_error: str = ""
    attributes_class: str = ""
    deleting: bool = False
    lost: bool = False
    #: The uid of its controlling owner (None: none).
    controller_uid: str | None = None
    resource_version: str = ""

    @property
    def key(self) -> ClaimKey:
        return self.namespace, self.name

    @property
    def fully_bound(self) -> bool:
        return bool(self.volume_name) and self.bind_completed


@dataclass(frozen=True, slots=True)
class Volume:
    """A PersistentVolume as the filters read it."""

    name: str
    #: ``GetPersistentVolumeClass``: the beta annotation, else ``spec.storageClassName``.
    storage_class: str = ""
    capacity: Decimal = Decimal(0)
    access_modes: frozenset[str] = frozenset()
    volume_mode: str = FILESYSTEM
    labels: Mapping[str, str] = field(default_factory=dict)
    #: ``spec.nodeAffinity.required`` (a NodeSelector); None: the volume is reachable from anywhere.
    node_affinity: Mapping[str, Any] | None = None
    #: ``spec.claimRef`` as (namespace, name, uid).
    claim_ref: tuple[str, str, str] | None = None
    phase: str = ""
    deleting: bool = False
    csi_driver: str = ""
    csi_handle: str = ""
    attributes_class: str = ""
    resource_version: str = ""
    #: The hostnames the node affinity pins the volume to (every term requires
    #: ``kubernetes.io/hostname In``); None: not pinned that way. Only an index hint.
    hosts: frozenset[str] | None = None


@dataclass(frozen=True, slots=True)
class StorageClass:
    name: str
    #: ``volumeBindingMode``; None: not set (the API server defaults it to ``Immediate``).
    binding_mode: str | None = "Immediate"
    provisioner: str = ""
    allowed_topologies: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class PodVolume:
    """A volume of the pod backed by a claim."""

    name: str
    claim: str
    ephemeral: bool = False


@dataclass(frozen=True, slots=True)
class PodClaims:
    """VolumeBinding's PreFilter result: the pod's bound claims and its unbound
    ``WaitForFirstConsumer`` ones."""

    bound: tuple[Claim, ...] = ()
    delayed: tuple[Claim, ...] = ()


@dataclass(frozen=True, slots=True)
class VolumeDecision:
    """What binding the pod's claims on one node takes: volumes to bind (claim, volume) and claims
    to provision there."""

    static: tuple[tuple[Claim, Volume], ...] = ()
    dynamic: tuple[Claim, ...] = ()


@dataclass(frozen=True, slots=True)
class PVTopology:
    volume: str
    key: str
    values: frozenset[str]


class VolumeBindingError(Exception):
    """The pod's volumes could not be bound (its binding fails; the pod asks again)."""


class _Failed(Exception):
    """A filter's error status (kube-scheduler's ``AsStatus(err)``)."""


# --- parsing ------------------------------------------------------------------------------------


def _go_quote(text: str) -> str:
    """Go's ``%q`` for the names in messages."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _namespace(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "default")


def _quantity(value: Any) -> Decimal:
    if value is None:
        return Decimal(0)
    try:
        return parse_quantity(value)
    except QuantityError:
        return Decimal(0)


def _modes(values: Any) -> frozenset[str]:
    return frozenset(str(v) for v in values or () if isinstance(v, str))


def claim_of(obj: Mapping[str, Any]) -> Claim:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    annotations = meta.get("annotations") or {}
    storage_class = annotations[BETA_STORAGE_CLASS] if BETA_STORAGE_CLASS in annotations \
        else spec.get("storageClassName") or ""
    selector: LabelSelector | None = None
    problem = ""
    if spec.get("selector") is not None:
        try:
            selector = label_selector(spec["selector"], "selector")
        except SelectorError as exc:
            problem = str(exc)
    controller = next((ref for ref in meta.get("ownerReferences") or ()
                       if isinstance(ref, Mapping) and ref.get("controller") is True), None)
    selected = annotations.get(ANN_SELECTED_NODE)
    return Claim(
        namespace=_namespace(obj), name=str(meta.get("name") or ""), uid=str(meta.get("uid") or ""),
        storage_class=str(storage_class), volume_name=str(spec.get("volumeName") or ""),
        bind_completed=ANN_BIND_COMPLETED in annotations,
        selected_node=None if selected is None else str(selected),
        request=_quantity(((spec.get("resources") or {}).get("requests") or {}).get("storage")),
        access_modes=_modes(spec.get("accessModes")), volume_mode=str(spec.get("volumeMode") or FILESYSTEM),
        selector=selector, selector_error=problem, attributes_class=str(spec.get("volumeAttributesClassName") or ""),
        deleting=bool(meta.get("deletionTimestamp")), lost=(obj.get("status") or {}).get("phase") == "Lost",
        controller_uid=None if controller is None else str(controller.get("uid") or ""),
        resource_version=str(meta.get("resourceVersion") or ""))


def _pinned_hosts(required: Mapping[str, Any] | None) -> frozenset[str] | None:
    """The hostnames a node selector admits when each of its terms requires ``kubernetes.io/
    hostname In [...]``; None otherwise."""
    if required is None:
        return None
    terms = required.get("nodeSelectorTerms") or ()
    hosts: set[str] = set()
    for term in terms:
        if not isinstance(term, Mapping):
            return None
        pinned = [e for e in (term.get("matchExpressions") or ()) if isinstance(e, Mapping)
                  and e.get("key") == HOSTNAME_LABEL and e.get("operator") == "In"]
        if not pinned:
            return None
        # Every requirement of a term must hold: the intersection of the pinned values.
        values = set(str(v) for v in pinned[0].get("values") or ())
        for other in pinned[1:]:
            values &= set(str(v) for v in other.get("values") or ())
        hosts |= values
    return frozenset(hosts) if terms else None


def volume_of(obj: Mapping[str, Any]) -> Volume:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    annotations = meta.get("annotations") or {}
    storage_class = annotations[BETA_STORAGE_CLASS] if BETA_STORAGE_CLASS in annotations \
        else spec.get("storageClassName") or ""
    affinity = spec.get("nodeAffinity") or {}
    required = affinity.get("required") if isinstance(affinity, Mapping) else None
    ref = spec.get("claimRef")
    csi = spec.get("csi") or {}
    return Volume(
        name=str(meta.get("name") or ""), storage_class=str(storage_class),
        capacity=_quantity((spec.get("capacity") or {}).get("storage")), access_modes=_modes(spec.get("accessModes")),
        volume_mode=str(spec.get("volumeMode") or FILESYSTEM),
        labels={str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
        node_affinity=required if isinstance(required, Mapping) else None,
        claim_ref=None if not isinstance(ref, Mapping) else (
            str(ref.get("namespace") or "default"), str(ref.get("name") or ""), str(ref.get("uid") or "")),
        phase=str((obj.get("status") or {}).get("phase") or ""), deleting=bool(meta.get("deletionTimestamp")),
        csi_driver=str(csi.get("driver") or ""), csi_handle=str(csi.get("volumeHandle") or ""),
        attributes_class=str(spec.get("volumeAttributesClassName") or ""),
        resource_version=str(meta.get("resourceVersion") or ""),
        hosts=_pinned_hosts(required if isinstance(required, Mapping) else None))


def storage_class_of(obj: Mapping[str, Any]) -> StorageClass:
    mode = obj.get("volumeBindingMode")
    return StorageClass(name=str((obj.get("metadata") or {}).get("name") or ""),
                        binding_mode=None if mode is None else str(mode), provisioner=str(obj.get("provisioner") or ""),
                        allowed_topologies=tuple(t for t in obj.get("allowedTopologies") or ()
                                                 if isinstance(t, Mapping)))


def csi_limits_of(obj: Mapping[str, Any]) -> dict[str, int]:
    """A CSINode's attach limits: driver name -> ``allocatable.count`` (drivers without one have
    no limit)."""
    limits: dict[str, int] = {}
    for driver in (obj.get("spec") or {}).get("drivers") or ():
        count = (driver.get("allocatable") or {}).get("count") if isinstance(driver, Mapping) else None
        if isinstance(count, int) and not isinstance(count, bool):
            limits[str(driver.get("name") or "")] = count
    return limits


def pod_volumes(pod: Mapping[str, Any]) -> tuple[PodVolume, ...]:
    """The pod's volumes backed by claims, in spec order: ``persistentVolumeClaim`` ones and
    generic ephemeral ones (whose claim is ``<pod>-<volume>``)."""
    volumes = (pod.get("spec") or {}).get("volumes")
    if not volumes:
        return ()
    found: list[PodVolume] = []
    for volume in volumes:
        claim = volume.get("persistentVolumeClaim")
        if claim is not None:
            found.append(PodVolume(str(volume.get("name") or ""), str(claim.get("claimName") or "")))
        elif volume.get("ephemeral") is not None:
            name = str(volume.get("name") or "")
            found.append(PodVolume(name, f"{(pod.get('metadata') or {}).get('name') or ''}-{name}", True))
    return tuple(found)


def _pod_identity(pod: Mapping[str, Any]) -> tuple[str, str, str]:
    meta = pod.get("metadata") or {}
    return _namespace(pod), str(meta.get("name") or ""), str(meta.get("uid") or "")


def _claim_path(claim: Claim) -> str:
    return f"/api/v1/namespaces/{claim.namespace}/persistentvolumeclaims/{claim.name}"
