"""kube-scheduler v1.37's volume filters (issue 30), with the same semantics, as pure functions
over plain data (:class:`Claim`, :class:`Volume`, :class:`StorageClass`, parsed once from the API
objects), fed by an incremental index (:class:`VolumeState`, one change at a time from the
shim's watches of persistentvolumeclaims, persistentvolumes, storageclasses and csinodes).

**VolumeBinding** (``volumebinding/volume_binding.go``, ``binder.go``). The pod's claims: its
``persistentVolumeClaim`` volumes and the claims of its generic ephemeral volumes (named
``<pod>-<volume>``, and controlled by the pod). For the pod (kube-scheduler's PreFilter,
:func:`binding_prefilter`): a claim that does not exist, is being deleted, or is ``Lost``, refuses
it on every node with kube-scheduler's message; so does an ephemeral claim the pod does not
control; a claim that is not fully bound (``spec.volumeName`` and the annotation
``pv.kubernetes.io/bind-completed``) whose StorageClass is not ``WaitForFirstConsumer`` (or which
names a volume already: pre-bound) makes the pod wait: ``pod has unbound immediate
PersistentVolumeClaims``. For a node (Filter, :func:`binding_filter`): a bound claim's volume
must exist (``node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)``) and
its ``spec.nodeAffinity.required`` match the node's labels (``node(s) had volume node affinity
conflict``); each unbound ``WaitForFirstConsumer`` claim, smallest request first, takes the
smallest fitting volume (:func:`find_matching_volume`: one pre-bound to the claim wins; else of
the claim's class, ``Available``, not claimed, not being deleted, capacity at least the request,
same volume mode and VolumeAttributesClass, every access mode the claim asks, the claim's
selector, node affinity matching the node; one volume per claim), or else is dynamically
provisioned when its class has a provisioner other than ``kubernetes.io/no-provisioner`` and its
``allowedTopologies`` admit the node; otherwise ``node(s) didn't find available persistent
volumes to bind``. A claim whose ``volume.kubernetes.io/selected-node`` names another node refuses
this one at once.

**Binding the claims before the pod** (kube-scheduler's Reserve and PreBind). When the core
places a pod with unbound ``WaitForFirstConsumer`` claims (the shim's ``update_allocation``),
:meth:`VolumeState.place` chooses the volumes for that node as the filter did and *assumes*
them: the chosen volume counts as claimed (its ``claimRef``) and a claim to provision as having
its selected node, so the next pod the core checks on that node does not get the same volume.
The binder thread then, before the pod's binding (:class:`VolumeBinder`): sets the volume's
``spec.claimRef`` (and ``pv.kubernetes.io/bound-by-controller``) as kube-scheduler does, and the
claim's ``spec.volumeName`` with ``pv.kubernetes.io/bind-completed`` and
``pv.kubernetes.io/bound-by-controller`` as the PV controller would: in a real cluster the PV
controller finds the binding made and finishes it (the ``Bound`` phases); without a controller
manager (the tests) the claim is bound all the same. A claim to provision gets the annotation
``volume.kubernetes.io/selected-node`` and the binder waits, as kube-scheduler does, until the
provisioner and the PV controller have bound it (at most :data:`BIND_TIMEOUT`; a provisioner
that gives up removes the annotation, which fails the binding). Every write carries the object's
``resourceVersion``: a volume claimed meanwhile by someone else fails the write, the allocation
is released and the pod asks again. A failed binding reverts the assumptions (an API write
already made stays, as in kube-scheduler: the claimed volume is then pre-bound to the claim).

**VolumeRestrictions** (``volumerestrictions``): a ``ReadWriteOncePod`` claim already used by a
pod on any node (placed by the core, bound, or another scheduler's) refuses the pod. The
in-tree disk conflicts (GCE PD, AWS EBS, Ceph RBD, ISCSI mounted by two pods) are legacy in-tree
volume types: not checked.

**VolumeZone** (``volumezone``): the topology labels of each bound claim's volume
(``topology.kubernetes.io/zone``/``region`` and the legacy ``failure-domain.beta...`` ones, a
value possibly several zones joined by ``__``) must be matched by the node's label of that key
(a volume's beta label may be matched by the node's GA label), unless the node has none of
these labels. Unbound ``WaitForFirstConsumer`` claims are skipped; other unbound claims refuse.

**NodeVolumeLimits** (``nodevolumelimits/csi.go``): the CSI volumes attached to a node (the
volumes of the pods on it: a bound claim's CSI volume, else, for an unbound claim, one volume of
its class's provisioner), each counted once however many pods use it, plus the pod's new ones,
may not exceed a driver's ``CSINode`` ``spec.drivers[].allocatable.count``: ``node(s) exceed max
volume count``. Counted incrementally per node (a pod placed or gone, a claim, volume or class
changed: only the pods using it are counted again).

**Preemption** (the RM's preemption predicates): the victims count as gone for
VolumeRestrictions and NodeVolumeLimits (kube-scheduler's ``RemovePod``/``NodeInfo``); the other
two do not depend on other pods.

**Left out**, each with its reason: CSI migration of in-tree volumes (``kubernetes.io/aws-ebs``
and the other in-tree plugins, and their inline volumes: legacy, their volumes are not counted);
VolumeAttachments counted towards the limits and the Node's legacy ``attachable-volumes-*``
allocatable (the CSINode count is the limit); storage capacity tracking (CSIStorageCapacity for
CSIDrivers with ``storageCapacity: true``: not followed, provisioning is assumed to have room);
the volume capacity score (alpha, off by default).

Costs: pod-level work (the claims) is done once per pod and cluster change (:meth:`VolumeState.
check` keeps the last pod's), a node check is dictionary reads per claim, and the volumes a
claim may take are looked up by class and by the ``kubernetes.io/hostname`` a local volume is
pinned to, not by a scan of every volume.

Not thread-safe: the shim calls :class:`VolumeState` under its own lock, and gives the same lock
to :class:`VolumeBinder`.
"""

from __future__ import annotations

from pyscheduler_k8s.volumes.model import (
    BIND_TIMEOUT, Claim, ERR_BIND_CONFLICT, ERR_MAX_VOLUME_COUNT, ERR_NODE_CONFLICT, ERR_PV_NOT_EXIST,
    ERR_RWOP_CONFLICT, ERR_UNBOUND_IMMEDIATE, ERR_ZONE_CONFLICT, PodClaims, PodVolume, Refusal, STORAGE_PATHS,
    StorageClass, Volume, VolumeBindingError, VolumeDecision, claim_of, csi_limits_of, pod_volumes, storage_class_of,
    volume_of,
)
from pyscheduler_k8s.volumes.filters import (
    attachable_volumes, binding_filter, binding_prefilter, csi_limits_filter, find_matching_volume,
    restrictions_filter, rwop_claims, zone_filter, zone_prefilter,
)
from pyscheduler_k8s.volumes.state import VolumeState
from pyscheduler_k8s.volumes.binder import VolumeBinder

__all__ = [
    "BIND_TIMEOUT",
    "Claim",
    "ERR_BIND_CONFLICT",
    "ERR_MAX_VOLUME_COUNT",
    "ERR_NODE_CONFLICT",
    "ERR_PV_NOT_EXIST",
    "ERR_RWOP_CONFLICT",
    "ERR_UNBOUND_IMMEDIATE",
    "ERR_ZONE_CONFLICT",
    "PodClaims",
    "PodVolume",
    "Refusal",
    "STORAGE_PATHS",
    "StorageClass",
    "Volume",
    "VolumeBinder",
    "VolumeBindingError",
    "VolumeDecision",
    "VolumeState",
    "attachable_volumes",
    "binding_filter",
    "binding_prefilter",
    "claim_of",
    "csi_limits_filter",
    "csi_limits_of",
    "find_matching_volume",
    "pod_volumes",
    "restrictions_filter",
    "rwop_claims",
    "storage_class_of",
    "volume_of",
    "zone_filter",
    "zone_prefilter",
]
