"""kube-scheduler's four volume filters as pure functions over :mod:`.model`'s plain data:
VolumeBinding, VolumeZone, VolumeRestrictions, NodeVolumeLimits (the package's docstring
states their rules).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Container, Iterable, Mapping
from typing import Any

from pyscheduler_k8s.nodes import NodeView
from pyscheduler_k8s.predicates import node_affinity_passes
from pyscheduler_k8s.volumes.model import (
    Claim, ClaimKey, ERROR, ERR_BIND_CONFLICT, ERR_MAX_VOLUME_COUNT, ERR_NODE_CONFLICT, ERR_PV_NOT_EXIST,
    ERR_RWOP_CONFLICT, ERR_UNBOUND_IMMEDIATE, ERR_ZONE_CONFLICT, NO_PROVISIONER, PVTopology, PodClaims,
    READ_WRITE_ONCE_POD, Refusal, StorageClass, TOPOLOGY_LABELS, UNRESOLVABLE, UNSCHEDULABLE, Volume, VolumeDecision,
    VolumeId, WAIT_FOR_FIRST_CONSUMER, ZONE_DELIMITER, _Failed, _GA_LABEL, _MIGRATABLE_IN_TREE, _go_quote,
    _namespace, _pod_identity, log, pod_volumes,
)

__all__ = ["attachable_volumes", "binding_filter", "binding_prefilter", "csi_limits_filter", "find_matching_volume", "restrictions_filter", "rwop_claims", "zone_filter", "zone_prefilter"]

log = logging.getLogger(__name__)


# --- shared checks ------------------------------------------------------------------------------


def _affinity_pod(required: Mapping[str, Any]) -> Mapping[str, Any]:
    return {"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}}}


def volume_affinity_matches(volume: Volume, labels: Mapping[str, str]) -> bool:
    """``CheckNodeAffinity``: the volume's required node selector matches a node with these
    labels (its ``matchFields`` are not compared: the check sees the node's labels only)."""
    if volume.node_affinity is None:
        return True
    return node_affinity_passes(_affinity_pod(volume.node_affinity), NodeView(name="", labels=dict(labels)))


def _bound_to_claim(volume: Volume, claim: Claim) -> bool:
    """``IsVolumeBoundToClaim``."""
    ref = volume.claim_ref
    return ref is not None and ref[0] == claim.namespace and ref[1] == claim.name and (not ref[2] or ref[2] == claim.uid)


def _topology_matches(terms: Iterable[Mapping[str, Any]], labels: Mapping[str, str]) -> bool:
    """``MatchTopologySelectorTerms``: no terms match every node; a term matches when each of
    its ``matchLabelExpressions`` has the node's label among its values."""
    terms = list(terms)
    if not terms:
        return True
    for term in terms:
        expressions = term.get("matchLabelExpressions") or ()
        if not expressions:
            continue
        if all(isinstance(e, Mapping) and e.get("values") and labels.get(str(e.get("key"))) in
               [str(v) for v in e.get("values") or ()] for e in expressions):
            return True
    return False


def _claim_not_found(name: str) -> str:
    return f"persistentvolumeclaim {_go_quote(name)} not found"


def _not_owned(pod: Mapping[str, Any], claim: Claim) -> str | None:
    """``ephemeral.VolumeIsForPod``."""
    namespace, name, uid = _pod_identity(pod)
    if claim.namespace != namespace or claim.controller_uid is None or claim.controller_uid != uid:
        return f"PVC {claim.namespace}/{claim.name} was not created for pod {namespace}/{name} (pod is not owner)"
    return None


# --- VolumeBinding ------------------------------------------------------------------------------


def binding_prefilter(pod: Mapping[str, Any], claims: Mapping[ClaimKey, Claim],
                      classes: Mapping[str, StorageClass]) -> PodClaims | Refusal | None:
    """VolumeBinding's PreFilter: None when the pod has no claims (the filter is skipped), a
    refusal for the pod as a whole, else its claims sorted (see the module doc)."""
    volumes = pod_volumes(pod)
    if not volumes:
        return None
    namespace = _namespace(pod)
    for volume in volumes:  # podHasPVCs
        claim = claims.get((namespace, volume.claim))
        if claim is None:
            if volume.ephemeral:
                return Refusal(UNRESOLVABLE, "waiting for ephemeral volume controller to create the "
                                             f"persistentvolumeclaim {_go_quote(volume.claim)}")
            return Refusal(UNRESOLVABLE, _claim_not_found(volume.claim))
        if claim.lost:
            return Refusal(UNRESOLVABLE, f"persistentvolumeclaim {_go_quote(claim.name)} bound to non-existent "
                                         f"persistentvolume {_go_quote(claim.volume_name)}")
        if claim.deleting:
            return Refusal(UNRESOLVABLE, f"persistentvolumeclaim {_go_quote(claim.name)} is being deleted")
        if volume.ephemeral:
            problem = _not_owned(pod, claim)
            if problem is not None:
                return Refusal(UNRESOLVABLE, problem)
    bound: list[Claim] = []
    delayed: list[Claim] = []
    immediate = False
    seen: set[ClaimKey] = set()
    for volume in volumes:  # GetPodVolumeClaims
        claim = claims[(namespace, volume.claim)]
        if claim.key in seen:  # the same claim twice binds once
            continue
        seen.add(claim.key)
        if claim.fully_bound:
            bound.append(claim)
            continue
        klass = classes.get(claim.storage_class) if claim.storage_class else None
        if klass is not None and klass.binding_mode is None:
            return Refusal(ERROR, f"VolumeBindingMode not set for StorageClass {_go_quote(klass.name)}")
        if klass is not None and klass.binding_mode == WAIT_FOR_FIRST_CONSUMER and not claim.volume_name:
            delayed.append(claim)
        else:  # Immediate, or pre-bound (a volume named, the binding not completed): the PV controller's
            immediate = True
    if immediate:
        return Refusal(UNRESOLVABLE, ERR_UNBOUND_IMMEDIATE)
    return PodClaims(tuple(bound), tuple(delayed))


def find_matching_volume(claim: Claim, volumes: Iterable[Volume], labels: Mapping[str, str],
                         excluded: Container[str] = ()) -> Volume | None:
    """``FindMatchingVolume`` on the scheduler's path: a volume pre-bound to the claim (None if
    its node affinity refuses the node), else the smallest volume that fits (module doc).
    Raises :class:`_Failed` when the claim's selector does not parse."""
    if claim.selector_error:
        raise _Failed(f"error creating internal label selector for claim: {claim.namespace}/{claim.name}: "
                      f"{claim.selector_error}")
    smallest: Volume | None = None
    for volume in volumes:
        if volume.name in excluded:
            continue
        if volume.claim_ref is not None and not _bound_to_claim(volume, claim):
            continue
        if volume.capacity < claim.request or volume.volume_mode != claim.volume_mode:
            continue
        if volume.attributes_class != claim.attributes_class or volume.deleting:
            continue
        if volume.claim_ref is not None:  # pre-bound to this claim: it or nothing
            return volume if volume_affinity_matches(volume, labels) else None
        if volume.phase != "Available" or volume.storage_class != claim.storage_class:
            continue
        if claim.selector is not None and not claim.selector.matches(volume.labels):
            continue
        if not claim.access_modes <= volume.access_modes or not volume_affinity_matches(volume, labels):
            continue
        if smallest is None or volume.capacity < smallest.capacity:
            smallest = volume
    return smallest


def _provisionable(claims: Iterable[Claim], node: NodeView, classes: Mapping[str, StorageClass]) -> bool:
    """``checkVolumeProvisions`` (storage capacity not tracked). Raises :class:`_Failed` for a
    claim without a class, or whose class does not exist."""
    for claim in claims:
        if not claim.storage_class:
            raise _Failed(f"no class for claim {_go_quote(claim.namespace + '/' + claim.name)}")
        klass = classes.get(claim.storage_class)
        if klass is None:
            raise _Failed(f"failed to find storage class {_go_quote(claim.storage_class)}")
        if not klass.provisioner or klass.provisioner == NO_PROVISIONER:
            return False
        if not _topology_matches(klass.allowed_topologies, node.labels):
            return False
    return True


def binding_filter(claims: PodClaims, node: NodeView, volumes: Mapping[str, Volume],
                   candidates: Callable[[Claim], Iterable[Volume]],
                   classes: Mapping[str, StorageClass]) -> tuple[Refusal | None, VolumeDecision]:
    """VolumeBinding's Filter (``FindPodVolumes``): None and the volumes to bind or provision on
    the node, else the refusal (its reasons joined as kube-scheduler joins them).
    ``candidates(claim)``: the volumes of the claim's class that may fit it (every one of the
    class will do; :class:`VolumeState` gives those its index finds for the node)."""
    bound_ok = unbound_ok = volumes_found = True
    static: list[tuple[Claim, Volume]] = []
    dynamic: list[Claim] = []
    try:
        for claim in claims.bound:
            volume = volumes.get(claim.volume_name)
            if volume is None:
                volumes_found = False
                break
            if not volume_affinity_matches(volume, node.labels):
                bound_ok = False
                break
        to_match: list[Claim] = []
        to_provision: list[Claim] = []
        elsewhere = False
        for claim in claims.delayed:
            if claim.selected_node is None:
                to_match.append(claim)
            elif claim.selected_node != node.name:
                elsewhere = True  # being provisioned for another node
                break
            else:
                to_provision.append(claim)
        if elsewhere:
            unbound_ok = False
        else:
            chosen: dict[str, Volume] = {}
            for claim in sorted(to_match, key=lambda c: c.request):
                volume = find_matching_volume(claim, candidates(claim), node.labels, chosen)
                if volume is None:
                    unbound_ok = False
                    to_provision.append(claim)
                    continue
                chosen[volume.name] = volume
                static.append((claim, volume))
            if to_provision:
                unbound_ok = _provisionable(to_provision, node, classes)
                if unbound_ok:
                    dynamic = to_provision
    except _Failed as exc:
        return Refusal(ERROR, str(exc)), VolumeDecision()
    reasons = [reason for reason, failed in ((ERR_NODE_CONFLICT, not bound_ok), (ERR_BIND_CONFLICT, not unbound_ok),
                                             (ERR_PV_NOT_EXIST, not volumes_found)) if failed]
    decision = VolumeDecision(tuple(static), tuple(dynamic))
    return (Refusal(UNRESOLVABLE, ", ".join(reasons)) if reasons else None), decision


# --- VolumeZone ---------------------------------------------------------------------------------


def zone_prefilter(pod: Mapping[str, Any], claims: Mapping[ClaimKey, Claim], volumes: Mapping[str, Volume],
                   classes: Mapping[str, StorageClass]) -> tuple[PVTopology, ...] | Refusal:
    """VolumeZone's PreFilter (``getPVbyPod``): the topology labels of the volumes of the pod's
    ``persistentVolumeClaim`` volumes (ephemeral ones are not looked at), or the refusal."""
    namespace = _namespace(pod)
    found: list[PVTopology] = []
    for pod_volume in pod_volumes(pod):
        if pod_volume.ephemeral:
            continue
        if not pod_volume.claim:
            return Refusal(UNRESOLVABLE, "PersistentVolumeClaim had no name")
        claim = claims.get((namespace, pod_volume.claim))
        if claim is None:
            return Refusal(UNRESOLVABLE, _claim_not_found(pod_volume.claim))
        if not claim.volume_name:
            if not claim.storage_class:
                return Refusal(UNRESOLVABLE, "PersistentVolumeClaim had no pv name and storageClass name")
            klass = classes.get(claim.storage_class)
            if klass is None:
                return Refusal(UNRESOLVABLE, f"storageclass.storage.k8s.io {_go_quote(claim.storage_class)} not found")
            if klass.binding_mode is None:
                return Refusal(UNRESOLVABLE, f"VolumeBindingMode not set for StorageClass {_go_quote(klass.name)}")
            if klass.binding_mode == WAIT_FOR_FIRST_CONSUMER:
                continue  # not bound yet: VolumeBinding chooses
            return Refusal(UNRESOLVABLE, "PersistentVolume had no name")
        volume = volumes.get(claim.volume_name)
        if volume is None:
            return Refusal(UNRESOLVABLE, f"persistentvolume {_go_quote(claim.volume_name)} not found")
        for key in TOPOLOGY_LABELS:
            value = volume.labels.get(key)
            if value is None:
                continue
            zones = [zone.strip() for zone in value.split(ZONE_DELIMITER)]
            if any(not zone for zone in zones):
                log.info("volume %s: label %s=%s is not a list of zones: ignored", volume.name, key, value)
                continue
            found.append(PVTopology(volume.name, key, frozenset(zones)))
    return tuple(found)


def zone_filter(topologies: Iterable[PVTopology], labels: Mapping[str, str]) -> Refusal | None:
    """VolumeZone's Filter: each volume label's key matched by the node's (see the module doc)."""
    topologies = tuple(topologies)
    if not topologies or not any(key in labels for key in TOPOLOGY_LABELS):
        return None  # a node without zone labels takes any volume (a single-zone cluster)
    for topology in topologies:
        value = labels.get(topology.key)
        if value is None:
            value = labels.get(_GA_LABEL.get(topology.key, topology.key))
        if value is None or value not in topology.values:
            return Refusal(UNRESOLVABLE, ERR_ZONE_CONFLICT)
    return None


# --- VolumeRestrictions -------------------------------------------------------------------------


def rwop_claims(pod: Mapping[str, Any], claims: Mapping[ClaimKey, Claim]) -> frozenset[str] | Refusal:
    """VolumeRestrictions' PreFilter: the names of the pod's ``ReadWriteOncePod`` claims (of its
    ``persistentVolumeClaim`` volumes), or the refusal for a claim that does not exist."""
    namespace = _namespace(pod)
    names: set[str] = set()
    for volume in pod_volumes(pod):
        if volume.ephemeral:
            continue
        claim = claims.get((namespace, volume.claim))
        if claim is None:
            return Refusal(UNRESOLVABLE, _claim_not_found(volume.claim))
        if READ_WRITE_ONCE_POD in claim.access_modes:
            names.add(claim.name)
    return frozenset(names)


def restrictions_filter(rwop: Iterable[str], namespace: str, in_use: Callable[[ClaimKey], bool]) -> Refusal | None:
    """VolumeRestrictions' Filter: a ``ReadWriteOncePod`` claim some scheduled pod uses refuses."""
    if any(in_use((namespace, name)) for name in rwop):
        return Refusal(UNSCHEDULABLE, ERR_RWOP_CONFLICT)
    return None


# --- NodeVolumeLimits ---------------------------------------------------------------------------


def _csi_volume(claim: Claim, volumes: Mapping[str, Volume], classes: Mapping[str, StorageClass]) -> VolumeId | None:
    """``getCSIDriverInfo``: the claim's CSI volume, or for a claim whose volume is not known yet,
    one volume of its class's provisioner; None: not a CSI volume (or not countable)."""
    if claim.volume_name:
        volume = volumes.get(claim.volume_name)
        if volume is not None:
            if not volume.csi_driver or not volume.csi_handle:
                return None  # not CSI (in-tree, whose migration is not modelled)
            return volume.csi_driver, ("handle", volume.csi_handle)
    if not claim.storage_class:
        return None  # no class: an immediate claim, bound before the pod is scheduled
    klass = classes.get(claim.storage_class)
    if klass is None or not klass.provisioner or klass.provisioner in _MIGRATABLE_IN_TREE:
        return None
    return klass.provisioner, ("claim", claim.namespace, claim.name)


def attachable_volumes(pod: Mapping[str, Any], claims: Mapping[ClaimKey, Claim], volumes: Mapping[str, Volume],
                       classes: Mapping[str, StorageClass], *, new_pod: bool) -> dict[VolumeId, str] | Refusal:
    """``filterAttachableVolumes``: the pod's CSI volumes -> driver. For the pod being scheduled
    (``new_pod``) a missing claim refuses; a pod already on the node just does not count it."""
    namespace = _namespace(pod)
    found: dict[VolumeId, str] = {}
    for pod_volume in pod_volumes(pod):
        if not pod_volume.claim:
            return Refusal(ERROR, "PersistentVolumeClaim had no name")
        claim = claims.get((namespace, pod_volume.claim))
        if claim is None:
            if new_pod:
                return Refusal(UNRESOLVABLE, f"looking up PVC {namespace}/{pod_volume.claim}: "
                                             f"{_claim_not_found(pod_volume.claim)}")
            continue
        if pod_volume.ephemeral:
            problem = _not_owned(pod, claim)
            if problem is not None:
                if new_pod:
                    return Refusal(ERROR, problem)
                continue
        volume = _csi_volume(claim, volumes, classes)
        if volume is not None:
            found[volume] = volume[0]
    return found


def csi_limits_filter(new: Mapping[VolumeId, str], attached: Callable[[VolumeId], bool],
                      attached_counts: Mapping[str, int], limits: Mapping[str, int]) -> Refusal | None:
    """NodeVolumeLimits' Filter: the pod's CSI volumes not attached to the node yet, per driver,
    on top of the node's attached ones (``attached_counts``), within the driver's limit."""
    if not new or not limits:
        return None
    adding: dict[str, int] = {}
    for volume, driver in new.items():
        if not attached(volume):
            adding[driver] = adding.get(driver, 0) + 1
    for driver, count in adding.items():
        limit = limits.get(driver)
        if limit is not None and attached_counts.get(driver, 0) + count > limit:
            return Refusal(UNSCHEDULABLE, ERR_MAX_VOLUME_COUNT)
    return None
