"""Kubernetes' own gangs, the ``scheduling.k8s.io/v1beta1`` PodGroup (v1.37, feature gate
``GenericWorkload``; ``docs/design/workload-api.md``), mapped to what the shim already does for
YuniKorn's task groups (:mod:`.gang`). Pure: no I/O, no state.

- **Membership**: a pod naming a group in ``spec.schedulingGroup.podGroupName`` (same namespace)
  is a member of the application :func:`application_id` ``podgroup-<namespace>-<name>``,
  whatever application-id label it carries (each PodGroup is its own gang in Kubernetes). The id
  is the placeholders' ``applicationId`` label, so it is kept to a label value's 63 characters:
  a longer one (the Job controller's PodGroups are ``<job>-<hash>-<job>-pgt-0-<hash>``) is cut
  and ends in a hash of the namespace and name instead.
- **Gang** (``spec.schedulingPolicy.gang.minCount``): one task group named after the PodGroup,
  ``minMember`` = ``minCount``; a PodGroup has no ``minResource``, so the placeholders are sized
  by the member that creates the application (its request, node selector, tolerations and
  affinity: :func:`gang_spec`). Timeout and style: the member's
  ``yunikorn.apache.org/schedulingPolicyParameters`` if any, else Soft and the core's default.
- **Basic** (``spec.schedulingPolicy.basic``): members of one application, no gang.
- **Topology** (``spec.schedulingConstraints.topology[0].key``, gate
  ``TopologyAwareWorkloadScheduling``): the application tag ``pyscheduler.io/topology-required``
  of that node label (a required constraint, the only kind the API has).
- **Status**: :func:`condition_patch` is the strategic-merge patch of ``podgroups/<name>/status``
  that writes ``PodGroupInitiallyScheduled`` as kube-scheduler does (True/``Scheduled`` once the
  gang runs, terminal; False/``Unschedulable`` with the reason while it waits).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

import orjson

from pyscheduler.si.vocabulary import APP_TAG_TOPOLOGY_REQUIRED
from pyscheduler_k8s.gang import MAX_MEMBERS, GangSpec, TaskGroup, scheduling_parameters
from pyscheduler_k8s.pods import PodView

__all__ = [
    "INITIALLY_SCHEDULED", "PODGROUPS_PATH", "PodGroupSpec", "SCHEDULED", "UNSCHEDULABLE", "application_id",
    "condition_patch", "gang_spec", "group_name_of", "member_view", "podgroup_of", "status_path",
]

GROUP_VERSION: Final = "/apis/scheduling.k8s.io/v1beta1"
PODGROUPS_PATH: Final = GROUP_VERSION + "/podgroups"
#: The condition kube-scheduler writes on a PodGroup, and its reasons.
INITIALLY_SCHEDULED: Final = "PodGroupInitiallyScheduled"
SCHEDULED: Final = "Scheduled"
UNSCHEDULABLE: Final = "Unschedulable"
#: metav1.Condition's limit on ``message``.
MAX_MESSAGE: Final = 32768
#: A label value's limit: an application id is its placeholders' ``applicationId`` label.
MAX_APP_ID: Final = 63
#: The hex digits of the hash ending an application id that had to be cut.
APP_ID_HASH: Final = 10


@dataclass(frozen=True)
class PodGroupSpec:
    """What the shim reads of one PodGroup."""

    namespace: str
    name: str
    #: True: ``gang`` policy (``min_count`` members or none); False: ``basic``.
    gang: bool
    min_count: int = 0
    #: ``schedulingConstraints.topology[0].key``; empty: no constraint.
    topology_key: str = ""
    generation: int = 0
    #: Its ``PodGroupInitiallyScheduled`` is True already (terminal: never written again).
    scheduled: bool = False

    @property
    def key(self) -> tuple[str, str]:
        return self.namespace, self.name

    @property
    def app_id(self) -> str:
        return application_id(self.namespace, self.name)


def application_id(namespace: str, name: str) -> str:
    """The application of a PodGroup's members: ``podgroup-<namespace>-<name>``, or, past
    :data:`MAX_APP_ID` characters, its start and a hash of ``<namespace>/<name>`` (the same
    for the same group, in every shim and after a restart; a valid label value either way: a
    PodGroup's name is a DNS subdomain)."""
    full = f"podgroup-{namespace}-{name}"
    if len(full) <= MAX_APP_ID:
        return full
    digest = hashlib.sha256(f"{namespace}/{name}".encode()).hexdigest()[:APP_ID_HASH]
    return f"{full[:MAX_APP_ID - APP_ID_HASH - 1].rstrip('-.')}-{digest}"


def status_path(namespace: str, name: str) -> str:
    return f"{GROUP_VERSION}/namespaces/{namespace}/podgroups/{name}/status"


def group_name_of(pod: Mapping[str, Any]) -> str:
    """The PodGroup the pod names (``spec.schedulingGroup.podGroupName``), or ""."""
    group = (pod.get("spec") or {}).get("schedulingGroup") or {}
    name = group.get("podGroupName") if isinstance(group, dict) else None
    return name if isinstance(name, str) else ""


def _positive(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def podgroup_of(obj: Mapping[str, Any]) -> PodGroupSpec:
    """A PodGroup object as the shim reads it. The API server validated it; a policy it does not
    know is taken as ``basic`` (no gang is better than a gang of a guessed size)."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    gang = ((spec.get("schedulingPolicy") or {}).get("gang"))
    topology = (spec.get("schedulingConstraints") or {}).get("topology") or []
    key = topology[0].get("key", "") if topology and isinstance(topology[0], dict) else ""
    conditions = (obj.get("status") or {}).get("conditions") or []
    scheduled = any(isinstance(c, dict) and c.get("type") == INITIALLY_SCHEDULED and c.get("status") == "True"
                    for c in conditions)
    min_count = min(_positive((gang or {}).get("minCount")), MAX_MEMBERS) if isinstance(gang, dict) else 0
    return PodGroupSpec(str(meta.get("namespace", "")), str(meta.get("name", "")), gang=min_count > 0,
                        min_count=min_count, topology_key=str(key or ""), generation=_positive(meta.get("generation")),
                        scheduled=scheduled)


def member_view(view: PodView, group_name: str, group: PodGroupSpec | None) -> PodView:
    """The pod as a member of PodGroup ``group_name`` (see the module doc); ``group`` None: not
    known yet (only the application id is set; the pod waits for it)."""
    if group is None:
        return replace(view, app_id=application_id(view.namespace, group_name))
    tags = dict(view.app_tags)
    if group.topology_key:
        tags[APP_TAG_TOPOLOGY_REQUIRED] = group.topology_key
    return replace(view, app_id=group.app_id, task_group=group.name if group.gang else view.task_group,
                   app_tags=tuple(tags.items()))


def _kubernetes_quantities(request: Mapping[str, int]) -> dict[str, str]:
    """A pod's request (the core's units) as a Kubernetes resource list, ``pods`` left out."""
    return {("cpu" if name == "vcore" else name): (f"{value}m" if name == "vcore" else str(value))
            for name, value in request.items() if name != "pods" and value}


def gang_spec(group: PodGroupSpec, member: Mapping[str, Any], view: PodView) -> GangSpec:
    """The gang of a ``gang`` PodGroup whose application ``member`` (seen as ``view``) creates
    (see the module doc)."""
    spec = member.get("spec") or {}
    annotations = (member.get("metadata") or {}).get("annotations") or {}
    resources = {name: value for name, value in view.request.items() if name != "pods" and value}
    quantities = _kubernetes_quantities(resources)
    selector = spec.get("nodeSelector") or {}
    tolerations = spec.get("tolerations") or []
    affinity = spec.get("affinity") or {}
    task_group = TaskGroup(group.name, group.min_count, resources, quantities,
                           {str(k): str(v) for k, v in selector.items()} if isinstance(selector, dict) else {},
                           tuple(tolerations) if isinstance(tolerations, list) else (),
                           dict(affinity) if isinstance(affinity, dict) else {})
    timeout, style = scheduling_parameters(annotations)
    definition = orjson.dumps([{"name": group.name, "minMember": group.min_count, "minResource": quantities}])
    return GangSpec((task_group,), timeout, style, definition.decode())


def condition_patch(group: PodGroupSpec, scheduled: bool, message: str, since: str) -> dict[str, Any]:
    """The status patch writing ``PodGroupInitiallyScheduled`` (``since``: its RFC 3339
    ``lastTransitionTime``); ``observedGeneration`` only when the group has a generation
    (kube-apiserver v1.37.2 sets none on PodGroups)."""
    condition: dict[str, Any] = {
        "type": INITIALLY_SCHEDULED, "status": "True" if scheduled else "False",
        "reason": SCHEDULED if scheduled else UNSCHEDULABLE, "message": message[:MAX_MESSAGE],
        "lastTransitionTime": since}
    if group.generation:
        condition["observedGeneration"] = group.generation
    return {"status": {"conditions": [condition]}}
