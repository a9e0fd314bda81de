"""Gang scheduling from pod annotations, as YuniKorn's Kubernetes shim reads them (issue 16).

- ``yunikorn.apache.org/task-groups`` on an application's pods (the first one read counts): a
  JSON list of ``{name, minMember, minResource, nodeSelector, tolerations, affinity, labels,
  annotations}``. ``minResource`` is a Kubernetes resource list. pyscheduler also reads the
  topology fields ``topologyRequired``, ``topologyPreferred``, ``topologySliceRequired`` and
  ``topologySliceSize`` (docs/topology.md): the gang's application tags of the same meaning (the
  groups that give one agree; the pod's own ``pyscheduler.io/topology-*`` annotations win).
- ``yunikorn.apache.org/task-group-name`` on each member: its task group.
- ``yunikorn.apache.org/schedulingPolicyParameters``: ``placeholderTimeoutInSeconds=N`` and
  ``gangSchedulingStyle=Hard|Soft`` separated by spaces (unknown style: Soft, the core's rule;
  no timeout: the core's default of 15 minutes).

The application asks the core for ``placeholderAsk`` = the sum over the task groups of
``minMember`` x (``minResource`` + one ``pods``), which is what its placeholder pods ask for in
total: the core runs the application once that much is placed.

**Placeholder pods** (:func:`placeholder_pods`), one per member of each task group, as
YuniKorn's: image ``registry.k8s.io/pause:3.7``, container ``pause`` requesting the group's
``minResource``, restart policy ``Never``, the group's node selector, tolerations and affinity,
no termination grace period (a pause container has nothing to finish, and the member that
replaces a placeholder waits for it to be gone; YuniKorn leaves the default 30 s),
labels ``applicationId``, ``queue`` and ``placeholder: "true"``, annotations
``yunikorn.apache.org/placeholder: "true"`` and the task group's name, owned (not controlled)
by the application's first pod so they are garbage collected with it. Their names are
deterministic (``tg-<app>-<group>-<first pod's uid>-<n>``): a shim that restarts and creates
them again (for the same owner, the pod their ``ownerReferences`` name: :mod:`.gang_recovery`)
gets ``AlreadyExists``, not a second set.

A task-groups annotation that does not parse, or a group without a name or with a negative
``minMember``, raises :class:`GangError` with the reason (the shim shows it on the pod).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from pyscheduler.si import messages as si
from pyscheduler.si.vocabulary import APP_TAG_TOPOLOGY_PREFERRED, APP_TAG_TOPOLOGY_REQUIRED, APP_TAG_TOPOLOGY_SLICE_REQUIRED, \
    APP_TAG_TOPOLOGY_SLICE_SIZE
from pyscheduler_k8s.pods import PLACEHOLDER_ANNOTATION, TASK_GROUP_NAME_ANNOTATION, resources_of
from pyscheduler_k8s.quantity import QuantityError

__all__ = ["GangError", "GangSpec", "TaskGroup", "gang_of", "placeholder_ask", "placeholder_pods",
           "scheduling_parameters"]

TASK_GROUPS_ANNOTATION: Final = si.DOMAIN_YUNIKORN + "task-groups"
POLICY_ANNOTATION: Final = si.DOMAIN_YUNIKORN + "schedulingPolicyParameters"
PLACEHOLDER_LABEL: Final = "placeholder"
PLACEHOLDER_IMAGE: Final = "registry.k8s.io/pause:3.7"
PLACEHOLDER_CONTAINER: Final = "pause"
HARD: Final = "Hard"
SOFT: Final = "Soft"
#: More members than this in one application is refused (a typo such as 1e6 must not make the
#: shim create a million pods).
MAX_MEMBERS: Final = 10_000
#: Seconds (int32's range, 68 years): more is a typo, and would overflow the core's milliseconds.
MAX_TIMEOUT: Final = (1 << 31) - 1
#: YuniKorn's failure reason and message for the pods of an application whose Hard timeout hit.
TIMEOUT_REASON: Final = "ResourceReservationTimeout"
TIMEOUT_MESSAGE: Final = "Scheduling has timed out due to insufficient resources"


class GangError(ValueError):
    """A task-groups annotation the shim cannot use (the message says why)."""


@dataclass(frozen=True)
class TaskGroup:
    name: str
    min_member: int
    #: In the core's units (``cpu`` as ``vcore`` millicores), without the ``pods`` the pod adds.
    min_resource: dict[str, int]
    #: The group's Kubernetes resource list as written (the placeholder pods request it).
    min_resource_k8s: dict[str, str]
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: tuple[Any, ...] = ()
    affinity: dict[str, Any] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    #: Its topology fields as the core's application tags (:data:`TOPOLOGY_FIELDS`).
    topology: dict[str, str] = field(default_factory=dict)


#: A task group's topology fields (pyscheduler's, docs/topology.md) -> the application tags they
#: set: the gang's request is one for the whole application, so every group that gives a field
#: gives the same value.
TOPOLOGY_FIELDS: Final = {"topologyRequired": APP_TAG_TOPOLOGY_REQUIRED, "topologyPreferred": APP_TAG_TOPOLOGY_PREFERRED,
                          "topologySliceRequired": APP_TAG_TOPOLOGY_SLICE_REQUIRED,
                          "topologySliceSize": APP_TAG_TOPOLOGY_SLICE_SIZE}


@dataclass(frozen=True)
class GangSpec:
    groups: tuple[TaskGroup, ...]
    #: Seconds; 0: the core's default.
    timeout: int = 0
    style: str = SOFT
    #: The annotation's text (copied onto the placeholder pods, as YuniKorn does).
    definition: str = ""
    #: The application tags of its task groups' topology fields.
    topology: dict[str, str] = field(default_factory=dict)


def _strings(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise GangError(f"{what} must be a map of strings")
    return dict(value)


def _group(raw: Any) -> TaskGroup:
    if not isinstance(raw, dict):
        raise GangError("a task group must be an object")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise GangError("a task group needs a name")
    members = raw.get("minMember", 0)
    if isinstance(members, bool) or not isinstance(members, int) or not 0 <= members <= MAX_MEMBERS:
        raise GangError(f"task group {name}: minMember must be an integer from 0 to {MAX_MEMBERS}, got {members!r}")
    listed = raw.get("minResource") or {}
    if not isinstance(listed, dict):
        raise GangError(f"task group {name}: minResource must be a resource list")
    quantities = {str(k): str(v) for k, v in listed.items()}
    try:
        resources = {k: v for k, v in resources_of(quantities).items() if v}
    except QuantityError as exc:
        raise GangError(f"task group {name}: minResource: {exc}") from exc
    tolerations = raw.get("tolerations") or []
    affinity = raw.get("affinity") or {}
    if not isinstance(tolerations, list) or not isinstance(affinity, dict):
        raise GangError(f"task group {name}: tolerations must be a list and affinity an object")
    topology: dict[str, str] = {}
    for key, tag in TOPOLOGY_FIELDS.items():
        value = raw.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise GangError(f"task group {name}: {key} must be a string (a node label) or, for the size, a number")
        topology[tag] = str(value)
    return TaskGroup(name, members, resources, quantities, _strings(raw.get("nodeSelector"), f"task group {name}: nodeSelector"),
                     tuple(tolerations), affinity, _strings(raw.get("labels"), f"task group {name}: labels"),
                     _strings(raw.get("annotations"), f"task group {name}: annotations"), topology)


def _parameters(text: str) -> tuple[int, str]:
    timeout, style = 0, SOFT
    for word in text.split():
        key, _, value = word.partition("=")
        if key == "placeholderTimeoutInSeconds":
            if not value.isdigit() or len(value) > 10 or int(value) > MAX_TIMEOUT:
                raise GangError(f"placeholderTimeoutInSeconds must be a whole number of seconds up to {MAX_TIMEOUT}, "
                                f"got {value[:20]!r}")
            timeout = int(value)
        elif key == "gangSchedulingStyle":
            style = HARD if value.lower() == "hard" else SOFT
    return timeout, style


def scheduling_parameters(annotations: Mapping[str, Any]) -> tuple[int, str]:
    """(timeout in seconds, 0: the core's default; style) of the pod's
    ``schedulingPolicyParameters`` annotation (a PodGroup's members read it too)."""
    return _parameters(str(annotations.get(POLICY_ANNOTATION, "")))


def gang_of(pod: Mapping[str, Any]) -> GangSpec | None:
    """The pod's task groups and parameters; None when it has no task-groups annotation."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(TASK_GROUPS_ANNOTATION)
    if not text:
        return None
    try:
        raw = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise GangError(f"{TASK_GROUPS_ANNOTATION} is not JSON: {exc}") from exc
    if not isinstance(raw, list):
        raise GangError(f"{TASK_GROUPS_ANNOTATION} must be a list of task groups")
    groups = tuple(_group(item) for item in raw)
    names = [g.name for g in groups]
    if len(set(names)) != len(names):
        raise GangError(f"{TASK_GROUPS_ANNOTATION}: task group names must be unique, got {names}")
    if sum(g.min_member for g in groups) > MAX_MEMBERS:
        raise GangError(f"{TASK_GROUPS_ANNOTATION}: more than {MAX_MEMBERS} members in all")
    timeout, style = _parameters(str(annotations.get(POLICY_ANNOTATION, "")))
    topology: dict[str, str] = {}
    for group in groups:
        for tag, value in group.topology.items():
            if topology.setdefault(tag, value) != value:
                raise GangError(f"{TASK_GROUPS_ANNOTATION}: the task groups disagree on {tag}: "
                                f"{topology[tag]!r} and {value!r} (one request for the whole gang)")
    return GangSpec(groups, timeout, style, str(text), topology)


def placeholder_ask(gang: GangSpec) -> dict[str, int]:
    """The sum of the placeholder pods' requests (see the module doc)."""
    total: dict[str, int] = {}
    for group in gang.groups:
        for name, value in {**group.min_resource, "pods": group.min_resource.get("pods", 0) + 1}.items():
            total[name] = total.get(name, 0) + value * group.min_member
    return {k: v for k, v in total.items() if v}


_NOT_NAME: Final = re.compile(r"[^a-z0-9-]+")


def _name_part(text: str, limit: int) -> str:
    return _NOT_NAME.sub("-", text.lower()).strip("-")[:limit].strip("-") or "x"


def placeholder_pods(gang: GangSpec, app_id: str, queue: str, owner: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The placeholder pods of an application whose first pod is ``owner`` (see the module doc)."""
    meta = owner.get("metadata") or {}
    uid = str(meta.get("uid", ""))
    scheduler = str((owner.get("spec") or {}).get("schedulerName", ""))
    reference = {"apiVersion": "v1", "kind": "Pod", "name": str(meta.get("name", "")), "uid": uid,
                 "controller": False, "blockOwnerDeletion": False}
    pods: list[dict[str, Any]] = []
    for group in gang.groups:
        stem = f"tg-{_name_part(app_id, 28)}-{_name_part(group.name, 20)}-{_name_part(uid, 8)}"
        for n in range(group.min_member):
            spec: dict[str, Any] = {
                "schedulerName": scheduler, "restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                "securityContext": {"runAsUser": 1000, "runAsGroup": 3000},
                "containers": [{"name": PLACEHOLDER_CONTAINER, "image": PLACEHOLDER_IMAGE,
                                "resources": {"requests": dict(group.min_resource_k8s)}}]}
            if group.node_selector:
                spec["nodeSelector"] = dict(group.node_selector)
            if group.tolerations:
                spec["tolerations"] = list(group.tolerations)
            if group.affinity:
                spec["affinity"] = dict(group.affinity)
            pods.append({"metadata": {
                "name": f"{stem}-{n}", "namespace": str(meta.get("namespace", "")),
                "labels": {**group.labels, "applicationId": app_id, "queue": queue, PLACEHOLDER_LABEL: "true"},
                "annotations": {**group.annotations, PLACEHOLDER_ANNOTATION: "true",
                                TASK_GROUP_NAME_ANNOTATION: group.name, TASK_GROUPS_ANNOTATION: gang.definition},
                "ownerReferences": [reference]}, "spec": spec})
    return pods
