"""The marks a hub writes and reads, and the pure functions over pods and nodes that use them
(no I/O: tested on plain dictionaries).

**Names.** A member's node is ``[member]node`` in the core (YuniKorn's ``[rmID]partition``
spelling: a node name, a DNS subdomain, never has brackets). :func:`qualified` and
:func:`split_qualified` convert.

**The hub pod** (the user's pod, the record): placing it writes, in one patch,

- label ``pyscheduler.io/cluster: <member>`` (so ``kubectl get pods -L pyscheduler.io/cluster``
  shows where each pod runs, and ``-l`` selects by member);
- annotation ``pyscheduler.io/node: <node>`` (the node in the member);
- annotation ``pyscheduler.io/placement: <id>``: this placement's id (a new one each time the
  pod is placed: a copy carrying another id is stale).

A hub pod with these is *placed*: :func:`hub_pod_as_bound` shows it to the shim's pod handlers
as a pod bound to ``[member]node`` (so a restart recovers it as an allocation, exactly as a
bound pod on one cluster).

**The copy** (the delegate pod in the member, :func:`delegate_of`): the hub pod's spec bound to
the node (``spec.nodeName`` set at creation: no scheduler in the member sees it), its labels
plus ``pyscheduler.io/hub-pod-uid``, its annotations plus the placement id; without what only
makes sense on the hub (owner references, finalizers, the hub's service-account token volume,
priority fields the member's admission recomputes).

**A member's pods** other than copies occupy their nodes (:func:`member_pod_as_foreign`: another
scheduler's pod on ``[member]node``).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Container, Mapping
from typing import Any, Final

from pyscheduler.si.vocabulary import CLUSTER_ATTRIBUTE, CLUSTER_LABELS_ATTRIBUTE

__all__ = [
    "CLUSTER_LABEL", "HUB_POD_UID_LABEL", "NODE_ANNOTATION", "PLACEMENT_ANNOTATION", "SOURCE_ANNOTATION",
    "delegate_of", "hub_pod_as_bound", "member_node_as_hub", "member_pod_as_foreign", "placement_of",
    "qualified", "split_qualified",
]

#: The hub pod's label naming its member, and the member's nodes' (the core's cluster attribute).
CLUSTER_LABEL: Final = CLUSTER_ATTRIBUTE
NODE_ANNOTATION: Final = "pyscheduler.io/node"
PLACEMENT_ANNOTATION: Final = "pyscheduler.io/placement"
#: On a copy: the hub pod it stands for.
HUB_POD_UID_LABEL: Final = "pyscheduler.io/hub-pod-uid"
#: Written by the transforms (never to the API server): the member a pod or node was read from,
#: so a member's fresh list reconciles only that member's records.
SOURCE_ANNOTATION: Final = "pyscheduler.io/source-cluster"
#: The scheduler name a member's pod is shown with: never one of ours (it only occupies its node).
MEMBER_SCHEDULER: Final = "pyscheduler.io/member-pod"
#: The node label carrying the member's labels as ``k=v,k=v`` (the core's attribute).
CLUSTER_LABELS_LABEL: Final = CLUSTER_LABELS_ATTRIBUTE
_QUALIFIED: Final = re.compile(r"\[([^\]]+)\](.+)")
#: The hub's service-account token volume (the member's admission adds its own).
_TOKEN_VOLUME: Final = re.compile(r"kube-api-access-[a-z0-9]+")


def qualified(member: str, node: str) -> str:
    return f"[{member}]{node}"


def split_qualified(name: str) -> tuple[str, str] | None:
    """``[member]node`` as (member, node); None for another name."""
    match = _QUALIFIED.fullmatch(name)
    return (match.group(1), match.group(2)) if match else None


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def placement_of(pod: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """A hub pod's placement: (member, node, placement id), None when it is not placed."""
    meta = _meta(pod)
    member = str((meta.get("labels") or {}).get(CLUSTER_LABEL, ""))
    annotations = meta.get("annotations") or {}
    node = str(annotations.get(NODE_ANNOTATION, ""))
    if not member or not node:
        return None
    return member, node, str(annotations.get(PLACEMENT_ANNOTATION, ""))


def hub_pod_as_bound(pod: dict[str, Any], members: Container[str] | None = None) -> dict[str, Any]:
    """The hub pod as the shim's handlers see it: placed (in one of ``members``: marks naming
    another are not the hub's), it is bound to ``[member]node``."""
    placed = placement_of(pod)
    if placed is None or (pod.get("spec") or {}).get("nodeName") or (members is not None and placed[0] not in members):
        return pod
    shown = dict(pod)
    shown["spec"] = {**(pod.get("spec") or {}), "nodeName": qualified(placed[0], placed[1])}
    return shown


def member_node_as_hub(member: str, labels: Mapping[str, str], node: Mapping[str, Any],
                       *, unschedulable: bool = False) -> dict[str, Any]:
    """A member's node as the hub's core sees it: named ``[member]node``, labelled with its
    member (the core's cluster attribute) and the member's labels; ``unschedulable`` while the
    member does not answer (no new pod goes there)."""
    meta = dict(_meta(node))
    node_labels = {**(meta.get("labels") or {}), CLUSTER_LABEL: member}
    if labels:
        node_labels[CLUSTER_LABELS_LABEL] = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    meta.update(name=qualified(member, str(meta.get("name", ""))), labels=node_labels,
                annotations={**(meta.get("annotations") or {}), SOURCE_ANNOTATION: member})
    shown = {**node, "metadata": meta}
    if unschedulable:
        shown["spec"] = {**(node.get("spec") or {}), "unschedulable": True}
    return shown


def is_delegate(pod: Mapping[str, Any]) -> bool:
    return bool((_meta(pod).get("labels") or {}).get(HUB_POD_UID_LABEL))


def member_pod_as_foreign(member: str, pod: Mapping[str, Any]) -> dict[str, Any]:
    """A member's own pod (not a copy) as the hub sees it: another scheduler's pod on
    ``[member]node`` (pending: nothing to count yet)."""
    spec = dict(pod.get("spec") or {})
    if spec.get("nodeName"):
        spec["nodeName"] = qualified(member, str(spec["nodeName"]))
    spec["schedulerName"] = MEMBER_SCHEDULER
    meta = dict(_meta(pod))
    meta["annotations"] = {**(meta.get("annotations") or {}), SOURCE_ANNOTATION: member}
    return {**pod, "metadata": meta, "spec": spec}


def source_of(obj: Mapping[str, Any]) -> str:
    """The member a record was read from ("" for the hub's own pods)."""
    return str((_meta(obj).get("annotations") or {}).get(SOURCE_ANNOTATION, ""))


#: Metadata only the hub's copy of an object has (identity, history, owners, finalizers).
_HUB_ONLY_META: Final = ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp",
                         "deletionGracePeriodSeconds", "managedFields", "ownerReferences", "finalizers",
                         "generateName", "generation", "selfLink")
#: Spec fields the member's admission sets itself (a value given that differs is refused).
_MEMBER_ADMITTED: Final = ("priority", "priorityClassName", "preemptionPolicy", "nodeName", "schedulingGates")


def delegate_of(pod: Mapping[str, Any], node: str, placement: str) -> dict[str, Any]:
    """The copy of hub ``pod`` to create in the member, bound to ``node`` (see the module doc)."""
    meta = _meta(pod)
    spec = copy.deepcopy(dict(pod.get("spec") or {}))
    for name in _MEMBER_ADMITTED:
        spec.pop(name, None)
    hub_volumes = {v.get("name") for v in spec.get("volumes") or () if _TOKEN_VOLUME.fullmatch(str(v.get("name")))}
    if hub_volumes:
        spec["volumes"] = [v for v in spec["volumes"] if v.get("name") not in hub_volumes]
        for key in ("containers", "initContainers"):
            for container in spec.get(key) or ():
                mounts = container.get("volumeMounts")
                if mounts:
                    container["volumeMounts"] = [m for m in mounts if m.get("name") not in hub_volumes]
    spec["nodeName"] = node
    labels = {**(meta.get("labels") or {}), HUB_POD_UID_LABEL: str(meta.get("uid", ""))}
    labels.pop(CLUSTER_LABEL, None)
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != NODE_ANNOTATION}
    annotations[PLACEMENT_ANNOTATION] = placement
    out_meta = {k: v for k, v in meta.items() if k not in _HUB_ONLY_META}
    out_meta.update(labels=labels, annotations=annotations)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": out_meta, "spec": spec}


def hub_status_of(delegate: Mapping[str, Any], member: str) -> dict[str, Any]:
    """The status to write on the hub pod from its copy's: phase, conditions, IPs, start time and
    containers' states (what ``kubectl get``/``describe`` shows), with the member named in the
    message."""
    status = delegate.get("status") or {}
    node = str((delegate.get("spec") or {}).get("nodeName", ""))
    out: dict[str, Any] = {k: status[k] for k in ("phase", "conditions", "podIP", "podIPs", "hostIP", "hostIPs",
                                                  "startTime", "containerStatuses", "initContainerStatuses",
                                                  "reason") if k in status}
    out["message"] = f"runs in cluster {member} on node {node}" + (
        f": {status['message']}" if status.get("message") else "")
    return out
