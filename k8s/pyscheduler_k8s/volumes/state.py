"""The volume filters' incremental index (:class:`VolumeState`): claims, volumes, classes and
CSINodes one change at a time from the shim's watches, the volumes a pod assumes when the core
places it, and the node check over :mod:`.filters`. Not thread-safe: the shim calls it under
its own lock.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pyscheduler_k8s.nodes import NodeView
from pyscheduler_k8s.volumes.model import (
    _claim_path, ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER, ANN_SELECTED_NODE, Claim, ClaimKey, HOSTNAME_LABEL,
    PVTopology, PodClaims, PodVolume, Refusal, STORAGE_PATHS, StorageClass, Volume, VolumeBindingError, VolumeId,
    _ANY_HOST, _REQUIRED, _go_quote, _namespace, _pod_identity, claim_of, csi_limits_of, pod_volumes,
    storage_class_of, volume_of,
)
from pyscheduler_k8s.volumes.filters import (
    _bound_to_claim, attachable_volumes, binding_filter, binding_prefilter, csi_limits_filter, restrictions_filter,
    rwop_claims, volume_affinity_matches, zone_filter, zone_prefilter,
)

__all__ = ["VolumeState"]

log = logging.getLogger(__name__)


# --- the index ----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Placed:
    """A pod with claims on a node, and the CSI volumes it was counted with."""

    pod: Mapping[str, Any]
    namespace: str
    node: str
    volumes: tuple[PodVolume, ...]
    counted: dict[VolumeId, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Reservation:
    """The volumes assumed for a pod placed on ``node`` (or why none could be)."""

    node: str
    static: tuple[tuple[ClaimKey, str], ...] = ()
    dynamic: tuple[ClaimKey, ...] = ()
    error: str = ""


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A pod's PreFilter results (the same on every node)."""

    refusal: Refusal | None
    rwop: frozenset[str] = frozenset()
    claims: PodClaims | None = None
    zones: tuple[PVTopology, ...] = ()
    attachable: Mapping[VolumeId, str] | Refusal = field(default_factory=dict)


def _older(new_version: str, old_version: str) -> bool:
    """An object's ``resourceVersion`` older than the one kept (a late watch event after the
    answer to the shim's own write)."""
    try:
        return int(new_version) < int(old_version)
    except ValueError:
        return False


class VolumeState:
    """The claims, volumes, classes and CSINode limits, the pods with claims on each node, and the
    volumes assumed for the pods being bound: what :meth:`check` answers from.

    Fed by :meth:`replace` (a list) and :meth:`update` (a watch event) per kind of
    :data:`STORAGE_PATHS`, and by :meth:`place`/:meth:`remove` for the pods occupying nodes (the
    same calls the shim makes to its cluster index)."""

    def __init__(self) -> None:
        self.claims: dict[ClaimKey, Claim] = {}  # as the filters see them (with assumptions)
        self.volumes: dict[str, Volume] = {}
        self.classes: dict[str, StorageClass] = {}
        self.csi_limits: dict[str, dict[str, int]] = {}
        self._real_claims: dict[ClaimKey, Claim] = {}
        self._real_volumes: dict[str, Volume] = {}
        self._followed: set[str] = set()
        #: Assumptions: volume -> (claim, claim uid, pods relying on it); claim -> (node, pods).
        self._assumed_refs: dict[str, tuple[ClaimKey, str, set[str]]] = {}
        self._assumed_nodes: dict[ClaimKey, tuple[str, set[str]]] = {}
        self._reservations: dict[str, _Reservation] = {}
        #: Unclaimed volumes by class and by the hostname they are pinned to (or _ANY_HOST), and
        #: claimed ones by the claim they name.
        self._free: dict[str, dict[str, set[str]]] = {}
        self._prebound: dict[ClaimKey, set[str]] = {}
        self._indexed: dict[str, tuple[str, tuple[str, ...]]] = {}
        #: Claims naming a volume (spec.volumeName): who to count again when it changes.
        self._naming: dict[str, set[ClaimKey]] = {}
        #: Pods with claims on nodes; the users of each claim (all, and by persistentVolumeClaim
        #: volumes only: the ReadWriteOncePod users).
        self._pods: dict[str, _Placed] = {}
        self._users: dict[ClaimKey, set[str]] = {}
        self._pvc_users: dict[ClaimKey, set[str]] = {}
        #: Per node: CSI volume -> pods using it, and attached volumes per driver.
        self._attached: dict[str, dict[VolumeId, int]] = {}
        self._attached_counts: dict[str, dict[str, int]] = {}
        #: Bumped on every claim, volume or class change (the prepared pod below is then stale).
        self._version = 0
        self._prepared: tuple[str, int, int, _Prepared] | None = None

    # -- feeding ---------------------------------------------------------------------------------

    @property
    def active(self) -> bool:
        """The filters apply once claims, volumes and classes are followed."""
        return _REQUIRED <= self._followed

    def unfollow(self, kind: str) -> None:
        self._followed.discard(kind)

    def replace(self, kind: str, items: Iterable[Mapping[str, Any]]) -> None:
        """A list of ``kind``: what it lacks is gone, the rest updated."""
        items = list(items)
        self._followed.add(kind)
        if kind == "persistentvolumeclaims":
            present_claims = {claim_of(item).key for item in items}
            for key in [k for k in self._real_claims if k not in present_claims]:
                self._set_claim(key, None)
        elif kind == "persistentvolumes":
            present = {str((item.get("metadata") or {}).get("name") or "") for item in items}
            for name in [n for n in self._real_volumes if n not in present]:
                self._set_volume(name, None)
        elif kind == "storageclasses":
            present = {str((item.get("metadata") or {}).get("name") or "") for item in items}
            for name in [n for n in self.classes if n not in present]:
                self.update(kind, "DELETED", {"metadata": {"name": name}})
        elif kind == "csinodes":
            present = {str((item.get("metadata") or {}).get("name") or "") for item in items}
            for name in [n for n in self.csi_limits if n not in present]:
                self.csi_limits.pop(name, None)
        for item in items:
            self.update(kind, "ADDED", item)

    def update(self, kind: str, event: str, obj: Mapping[str, Any]) -> None:
        """One watch event (``ADDED``, ``MODIFIED``, ``DELETED``) of ``kind``."""
        gone = event == "DELETED"
        if kind == "persistentvolumeclaims":
            claim = claim_of(obj)
            known = self._real_claims.get(claim.key)
            if not gone and known is not None and _older(claim.resource_version, known.resource_version):
                return
            self._set_claim(claim.key, None if gone else claim)
        elif kind == "persistentvolumes":
            volume = volume_of(obj)
            old = self._real_volumes.get(volume.name)
            if not gone and old is not None and _older(volume.resource_version, old.resource_version):
                return
            self._set_volume(volume.name, None if gone else volume)
        elif kind == "storageclasses":
            klass = storage_class_of(obj)
            if gone:
                self.classes.pop(klass.name, None)
            else:
                self.classes[klass.name] = klass
            self._version += 1
            self._recount(list(self._pods))  # unbound claims are counted by their class's driver
        elif kind == "csinodes":
            name = str((obj.get("metadata") or {}).get("name") or "")
            if gone:
                self.csi_limits.pop(name, None)
            else:
                self.csi_limits[name] = csi_limits_of(obj)

    def _set_claim(self, key: ClaimKey, claim: Claim | None) -> None:
        old = self._real_claims.pop(key, None)
        if old is not None and old.volume_name:
            naming = self._naming.get(old.volume_name)
            if naming is not None:
                naming.discard(key)
                if not naming:
                    del self._naming[old.volume_name]
        if claim is not None:
            self._real_claims[key] = claim
            if claim.volume_name:
                self._naming.setdefault(claim.volume_name, set()).add(key)
        self._refresh_claim(key)
        self._recount(list(self._users.get(key, ())))

    def _refresh_claim(self, key: ClaimKey) -> None:
        """The claim as the filters see it: a selected node assumed while it has none."""
        self._version += 1
        real = self._real_claims.get(key)
        assumed = self._assumed_nodes.get(key)
        if real is None:
            self.claims.pop(key, None)
        elif assumed is not None and real.selected_node is None:
            self.claims[key] = replace(real, selected_node=assumed[0])
        else:
            self.claims[key] = real

    def _set_volume(self, name: str, volume: Volume | None) -> None:
        if volume is None:
            self._real_volumes.pop(name, None)
        else:
            self._real_volumes[name] = volume
        self._refresh_volume(name)
        self._recount([uid for key in self._naming.get(name, ()) for uid in self._users.get(key, ())])

    def _refresh_volume(self, name: str) -> None:
        """The volume as the filters see it (a claim assumed while it has none), re-indexed."""
        self._version += 1
        indexed = self._indexed.pop(name, None)
        if indexed is not None:
            where, key = indexed
            if where == "free":
                hosts = self._free.get(key[0])
                if hosts is not None:
                    for host in key[1:]:
                        names = hosts.get(host)
                        if names is not None:
                            names.discard(name)
                            if not names:
                                del hosts[host]
                    if not hosts:
                        del self._free[key[0]]
            else:
                claimed = self._prebound.get((key[0], key[1]))
                if claimed is not None:
                    claimed.discard(name)
                    if not claimed:
                        del self._prebound[(key[0], key[1])]
        real = self._real_volumes.get(name)
        assumed = self._assumed_refs.get(name)
        if real is None:
            self.volumes.pop(name, None)
            return
        volume = real
        if assumed is not None and real.claim_ref is None:
            volume = replace(real, claim_ref=(assumed[0][0], assumed[0][1], assumed[1]))
        self.volumes[name] = volume
        if volume.claim_ref is None:
            hosts_of = tuple(sorted(volume.hosts)) if volume.hosts is not None else (_ANY_HOST,)
            by_host = self._free.setdefault(volume.storage_class, {})
            for host in hosts_of:
                by_host.setdefault(host, set()).add(name)
            self._indexed[name] = ("free", (volume.storage_class, *hosts_of))
        else:
            claim_key = (volume.claim_ref[0], volume.claim_ref[1])
            self._prebound.setdefault(claim_key, set()).add(name)
            self._indexed[name] = ("claimed", claim_key)

    def candidates(self, claim: Claim, node: NodeView) -> list[Volume]:
        """The volumes that may fit the claim on the node: those of its class claimed by it, and
        its class's unclaimed ones pinned to the node's hostname or not pinned by hostname."""
        names = {name for name in self._prebound.get(claim.key, ())
                 if self.volumes[name].storage_class == claim.storage_class}
        free = self._free.get(claim.storage_class)
        if free:
            host = node.labels.get(HOSTNAME_LABEL)
            if host is not None:
                names.update(free.get(host, ()))
            names.update(free.get(_ANY_HOST, ()))
        return [self.volumes[name] for name in sorted(names)]

    # -- pods on nodes -----------------------------------------------------------------------------

    def place(self, uid: str, pod: Mapping[str, Any], node: str, *, reserve: NodeView | None = None) -> None:
        """The pod occupies ``node`` (again: idempotent). ``reserve``: the core placed it there
        just now: the volumes its unbound ``WaitForFirstConsumer`` claims take on that node are
        chosen and assumed, for :class:`VolumeBinder` to bind."""
        known = self._pods.get(uid)
        if known is None and (pod.get("spec") or {}).get("volumes") is None:
            return
        volumes = pod_volumes(pod)
        if known is not None and (known.node != node or known.volumes != volumes):
            self._unplace(uid)
            known = None
        if known is not None:
            known.pod = pod
        elif volumes:
            placed = self._pods[uid] = _Placed(pod, _namespace(pod), node, volumes)
            for volume in volumes:
                key = (placed.namespace, volume.claim)
                self._users.setdefault(key, set()).add(uid)
                if not volume.ephemeral:
                    self._pvc_users.setdefault(key, set()).add(uid)
            self._count(uid, 1)
        if reserve is not None and volumes and uid not in self._reservations:
            self._reserve(uid, pod, reserve)

    def remove(self, uid: str) -> None:
        """The pod no longer occupies a node (gone, released, its binding failed): what was
        assumed for it is given back."""
        self._unplace(uid)
        reservation = self._reservations.pop(uid, None)
        if reservation is not None:
            self._forget(uid, reservation)

    def _unplace(self, uid: str) -> None:
        placed = self._pods.get(uid)
        if placed is None:
            return
        self._count(uid, -1)
        del self._pods[uid]
        for volume in placed.volumes:
            key = (placed.namespace, volume.claim)
            for users in (self._users, self._pvc_users):
                found = users.get(key)
                if found is not None:
                    found.discard(uid)
                    if not found:
                        del users[key]

    def _count(self, uid: str, by: int) -> None:
        """Adds (1) or takes off (-1) the pod's CSI volumes on its node; adding works them out
        from the claims as they are now."""
        placed = self._pods[uid]
        if by > 0:
            counted = attachable_volumes(placed.pod, self.claims, self.volumes, self.classes, new_pod=False)
            placed.counted = counted if isinstance(counted, dict) else {}
        if not placed.counted:
            return
        refs = self._attached.setdefault(placed.node, {})
        counts = self._attached_counts.setdefault(placed.node, {})
        for volume, driver in placed.counted.items():
            before = refs.get(volume, 0)
            after = before + by
            if after > 0:
                refs[volume] = after
            else:
                refs.pop(volume, None)
            if (before > 0) != (after > 0):
                counts[driver] = counts.get(driver, 0) + (1 if after > 0 else -1)
                if not counts[driver]:
                    del counts[driver]
        if by < 0:
            placed.counted = {}
        if not refs:
            self._attached.pop(placed.node, None)
            self._attached_counts.pop(placed.node, None)

    def _recount(self, uids: Iterable[str]) -> None:
        for uid in set(uids):
            if uid in self._pods:
                self._count(uid, -1)
                self._count(uid, 1)

    # -- reserving volumes for a placed pod ------------------------------------------------------

    def _reserve(self, uid: str, pod: Mapping[str, Any], node: NodeView) -> None:
        claims = binding_prefilter(pod, self.claims, self.classes)
        if claims is None:
            return
        if isinstance(claims, Refusal):
            self._reservations[uid] = _Reservation(node.name, error=claims.message)
            return
        if not claims.delayed:
            return  # every claim bound already
        refusal, decision = binding_filter(claims, node, self.volumes, lambda c: self.candidates(c, node),
                                           self.classes)
        if refusal is not None:
            self._reservations[uid] = _Reservation(node.name, error=f"node {node.name}: {refusal.message}")
            return
        for claim, volume in decision.static:
            assumed = self._assumed_refs.get(volume.name)
            if assumed is None or assumed[0] != claim.key:
                assumed = self._assumed_refs[volume.name] = (claim.key, claim.uid, set())
            assumed[2].add(uid)
            self._refresh_volume(volume.name)
        for claim in decision.dynamic:
            selected = self._assumed_nodes.get(claim.key)
            if selected is None or selected[0] != node.name:
                selected = self._assumed_nodes[claim.key] = (node.name, set())
            selected[1].add(uid)
            self._refresh_claim(claim.key)
        self._reservations[uid] = _Reservation(node.name, tuple((c.key, v.name) for c, v in decision.static),
                                               tuple(c.key for c in decision.dynamic))

    def _forget(self, uid: str, reservation: _Reservation) -> None:
        for claim_key, name in reservation.static:
            assumed = self._assumed_refs.get(name)
            if assumed is not None and assumed[0] == claim_key:
                assumed[2].discard(uid)
                if not assumed[2]:
                    del self._assumed_refs[name]
                self._refresh_volume(name)
        for claim_key in reservation.dynamic:
            selected = self._assumed_nodes.get(claim_key)
            if selected is not None:
                selected[1].discard(uid)
                if not selected[1]:
                    del self._assumed_nodes[claim_key]
                self._refresh_claim(claim_key)

    def reserved(self, uid: str) -> tuple[dict[str, str], list[str]] | None:
        """For tests and the status: the pod's assumed (claim name -> volume) and claims to
        provision, or None."""
        reservation = self._reservations.get(uid)
        if reservation is None:
            return None
        return {key[1]: name for key, name in reservation.static}, [key[1] for key in reservation.dynamic]

    def plan(self, uid: str, node: str) -> list[tuple[str, str, dict[str, Any]]] | None:
        """The writes that bind the pod's assumed volumes: (kind, path, merge patch), volumes
        first; None when the pod has nothing to bind. Raises :class:`VolumeBindingError` when
        its volumes could not be chosen, or changed meanwhile."""
        reservation = self._reservations.get(uid)
        if reservation is None:
            return None
        if reservation.error:
            raise VolumeBindingError(reservation.error)
        if reservation.node != node:
            raise VolumeBindingError(f"volumes were chosen on node {reservation.node}, not {node}")
        writes: list[tuple[str, str, dict[str, Any]]] = []
        claim_writes: list[tuple[str, str, dict[str, Any]]] = []
        for claim_key, name in reservation.static:
            claim, volume = self._real_claims.get(claim_key), self._real_volumes.get(name)
            if claim is None or volume is None:
                raise VolumeBindingError(f"persistentvolumeclaim {claim_key[0]}/{claim_key[1]} or persistentvolume "
                                         f"{name} is gone")
            if volume.claim_ref is not None and not _bound_to_claim(volume, claim):
                raise VolumeBindingError(f"persistentvolume {name} was claimed by {volume.claim_ref[0]}/"
                                         f"{volume.claim_ref[1]} meanwhile")
            if volume.claim_ref != (claim.namespace, claim.name, claim.uid):  # GetBindVolumeToClaim
                metadata: dict[str, Any] = {"resourceVersion": volume.resource_version}
                if not _bound_to_claim(volume, claim):
                    metadata["annotations"] = {ANN_BOUND_BY_CONTROLLER: "yes"}
                writes.append(("persistentvolumes", f"/api/v1/persistentvolumes/{name}", {
                    "metadata": metadata, "spec": {"claimRef": {
                        "kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": claim.namespace,
                        "name": claim.name, "uid": claim.uid, "resourceVersion": claim.resource_version}}}))
            if claim.volume_name != name or not claim.bind_completed:  # what the PV controller writes
                claim_writes.append(("persistentvolumeclaims", _claim_path(claim), {
                    "metadata": {"resourceVersion": claim.resource_version, "annotations": {
                        ANN_BIND_COMPLETED: "yes", ANN_BOUND_BY_CONTROLLER: "yes"}},
                    "spec": {"volumeName": name}}))
        for claim_key in reservation.dynamic:
            claim = self._real_claims.get(claim_key)
            if claim is None:
                raise VolumeBindingError(f"persistentvolumeclaim {claim_key[0]}/{claim_key[1]} is gone")
            if claim.selected_node != node:
                claim_writes.append(("persistentvolumeclaims", _claim_path(claim), {"metadata": {
                    "resourceVersion": claim.resource_version, "annotations": {ANN_SELECTED_NODE: node}}}))
        return writes + claim_writes

    def bound(self, uid: str, labels: Mapping[str, str] | None = None) -> bool:
        """``checkBindings``: every claim of the pod's reservation is fully bound (and a
        provisioned volume's node affinity takes the node, when its ``labels`` are given).
        Raises :class:`VolumeBindingError` when it will not be: the pod is gone, a volume lost
        its claim, a provisioner gave up (the selected node removed)."""
        reservation = self._reservations.get(uid)
        if reservation is None:
            raise VolumeBindingError("pod does not exist any more")
        for claim_key, name in reservation.static:
            claim, volume = self._real_claims.get(claim_key), self._real_volumes.get(name)
            if claim is None or volume is None:
                raise VolumeBindingError(f"failed to check binding: {claim_key[0]}/{claim_key[1]} or {name} is gone")
            if volume.claim_ref is None or not volume.claim_ref[2]:
                raise VolumeBindingError(f"ClaimRef got reset for pv {_go_quote(name)}")
            if not claim.fully_bound:
                return False
        for claim_key in reservation.dynamic:
            claim = self._real_claims.get(claim_key)
            if claim is None:
                raise VolumeBindingError(f"failed to check provisioning pvc: {claim_key[0]}/{claim_key[1]} is gone")
            if claim.selected_node != reservation.node:
                raise VolumeBindingError(f"provisioning failed for PVC {_go_quote(claim.name)}")
            if claim.volume_name:
                volume = self._real_volumes.get(claim.volume_name)
                if volume is None:
                    return False
                if labels is not None and not volume_affinity_matches(volume, labels):
                    raise VolumeBindingError(f"pv {_go_quote(volume.name)} node affinity doesn't match node "
                                             f"{_go_quote(reservation.node)}")
            if not claim.fully_bound:
                return False
        return True

    def finish(self, uid: str) -> None:
        """The pod's claims are bound: its assumptions are the API's state now."""
        reservation = self._reservations.pop(uid, None)
        if reservation is not None:
            self._forget(uid, reservation)

    # -- the filters -------------------------------------------------------------------------------

    def _prepare(self, pod: Mapping[str, Any], uid: str) -> _Prepared:
        """The pod's PreFilters, kept for the next node (the last pod's, while nothing changed)."""
        cached = self._prepared
        if cached is not None and cached[0] == uid and cached[1] == id(pod) and cached[2] == self._version:
            return cached[3]
        prepared = self._prefilters(pod)
        self._prepared = (uid, id(pod), self._version, prepared)
        return prepared

    def _prefilters(self, pod: Mapping[str, Any]) -> _Prepared:
        rwop = rwop_claims(pod, self.claims)
        if isinstance(rwop, Refusal):
            return _Prepared(rwop)
        claims = binding_prefilter(pod, self.claims, self.classes)
        if isinstance(claims, Refusal):
            return _Prepared(claims)
        zones = zone_prefilter(pod, self.claims, self.volumes, self.classes)
        if isinstance(zones, Refusal):
            return _Prepared(zones)
        return _Prepared(None, rwop, claims, zones,
                         attachable_volumes(pod, self.claims, self.volumes, self.classes, new_pod=True))

    def check(self, pod: Mapping[str, Any], node: NodeView, gone: Collection[str] = frozenset()) -> str | None:
        """None when the volume filters take the node for the pod, else why not. ``gone``: the
        uids of pods to count as removed (preemption's victims)."""
        if not self.active or not (pod.get("spec") or {}).get("volumes"):
            return None
        namespace, _, uid = _pod_identity(pod)
        prepared = self._prepare(pod, uid)
        if prepared.claims is None and not prepared.rwop and prepared.refusal is None and not prepared.attachable:
            return None
        refusal = prepared.refusal or self._filters(prepared, namespace, uid, node, gone)
        return None if refusal is None else f"node {node.name}: {refusal.message}"

    def _filters(self, prepared: _Prepared, namespace: str, uid: str, node: NodeView,
                 gone: Collection[str]) -> Refusal | None:
        def in_use(key: ClaimKey) -> bool:
            return any(user != uid and user not in gone for user in self._pvc_users.get(key, ()))

        refusal = restrictions_filter(prepared.rwop, namespace, in_use)
        if refusal is not None:
            return refusal
        if isinstance(prepared.attachable, Refusal):
            return prepared.attachable
        limits = self.csi_limits.get(node.name)
        if limits and prepared.attachable:
            refusal = self._limits(prepared.attachable, uid, node.name, limits, gone)
            if refusal is not None:
                return refusal
        if prepared.claims is not None:
            refusal, _ = binding_filter(prepared.claims, node, self.volumes, lambda c: self.candidates(c, node),
                                        self.classes)
            if refusal is not None:
                return refusal
        return zone_filter(prepared.zones, node.labels)

    def _limits(self, new: Mapping[VolumeId, str], uid: str, node: str, limits: Mapping[str, int],
                gone: Collection[str]) -> Refusal | None:
        refs = self._attached.get(node, {})
        counts: Mapping[str, int] = self._attached_counts.get(node, {})
        removed: dict[VolumeId, int] = {}
        for other in (uid, *gone):  # the pod itself (placed before?) and the victims
            placed = self._pods.get(other)
            if placed is not None and placed.node == node:
                for volume in placed.counted:
                    removed[volume] = removed.get(volume, 0) + 1
        if removed:
            adjusted = dict(counts)
            for volume, times in removed.items():
                if volume in refs and refs[volume] - times <= 0:
                    adjusted[volume[0]] = adjusted.get(volume[0], 0) - 1
            counts = adjusted
        return csi_limits_filter(new, lambda v: refs.get(v, 0) - removed.get(v, 0) > 0, counts, limits)
