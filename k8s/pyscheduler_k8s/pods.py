"""What the shim reads from a pod, as YuniKorn's Kubernetes shim reads it (``shared/spec/
kubernetes.md``), so pod specs written for YuniKorn work unchanged.

- **Ours**: ``spec.schedulerName`` is one of the shim's names (``pyscheduler`` and ``yunikorn``
  by default).
- **Application id**: label ``yunikorn.apache.org/app-id``, else ``spark-app-selector``, else
  ``applicationId``, else annotation ``yunikorn.apache.org/app-id``; without one,
  ``yunikorn-<namespace>-autogen`` (one application per namespace).
- **Queue**: label ``yunikorn.apache.org/queue``, else ``queue``, else annotation
  ``yunikorn.apache.org/queue``; none: empty (the partition's placement rules decide, with the
  ``namespace`` tag).
- **User**: annotation ``yunikorn.apache.org/user.info`` (JSON ``{"user": ..., "groups":
  [...]}``), else ``nobody``.
- **Request**: Kubernetes' ``PodRequests`` (component-helpers ``resource``), as
  kube-scheduler's NodeResourcesFit takes it, per resource: the sum of the containers' and the
  sidecars' (init containers with ``restartPolicy: Always``) requests, at least the largest
  need while an init container runs (its own requests plus those of the sidecars started before
  it); pod-level requests (``spec.resources.requests``: ``cpu``, ``memory``, ``hugepages-*``)
  replace that sum for their resources; plus the pod overhead; plus one ``pods`` (a ``pods``
  request of a container is ignored, as the scheduler ignores it). The quantities are added
  exactly and rounded up once: ``cpu`` in millicores as ``vcore``, ``memory`` in bytes, every
  other resource (``ephemeral-storage``, ``hugepages-2Mi``, ``nvidia.com/gpu``) by its name.
  A container without requests asks for nothing (the API server already copied limits into
  requests where only limits were set).
- **Priority**: ``spec.priority`` (the API server sets it from the PriorityClass), else 0.
- **Preemption**: annotation ``yunikorn.apache.org/allow-preemption: "false"`` on the pod (else
  on its PriorityClass, which the shim looks up) keeps the pod from being a victim; its
  ``spec.preemptionPolicy: Never`` (set from the PriorityClass by the API server) keeps it from
  preempting others. The ask's flags: ``allow_preempt_self``, ``allow_preempt_other``.
- **Gang**: the task group named by annotation ``yunikorn.apache.org/task-group-name``; a
  placeholder pod (annotation ``yunikorn.apache.org/placeholder: "true"``) is one the shim made
  (:mod:`.gang`).
- **Role history**: the role and history key of :mod:`.roles`.

A pod whose quantities do not parse raises :class:`PodError` with the reason, which the shim
shows on the pod.
"""

from __future__ import annotations

import calendar
import decimal
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

import orjson

from pyscheduler.common.quantity import core_name, core_resources
from pyscheduler.si.vocabulary import APP_TAG_CLUSTER_SELECTOR, APP_TAG_CLUSTERS, APP_TAG_PREFERRED_CLUSTER_SELECTOR, \
    APP_TAG_PREFERRED_CLUSTERS, APP_TAG_TOPOLOGY_PREFERRED, APP_TAG_TOPOLOGY_REQUIRED, APP_TAG_TOPOLOGY_SLICE_REQUIRED, \
    APP_TAG_TOPOLOGY_SLICE_SIZE
from pyscheduler_k8s.quantity import INT64_MAX, QuantityError, parse_quantity
from pyscheduler_k8s.roles import history_key_of, role_of

__all__ = [
    "DEFAULT_SCHEDULER_NAMES",
    "allow_preemption_of",
    "PodError",
    "PodView",
    "app_id_of",
    "is_terminal",
    "pod_request",
    "pod_view",
    "timestamp_seconds",
    "queue_of",
    "resource_name",
    "resources_of",
    "user_of",
]

DEFAULT_SCHEDULER_NAMES: Final = ("pyscheduler", "yunikorn")
APP_ID_LABELS: Final = ("yunikorn.apache.org/app-id", "spark-app-selector", "applicationId")
APP_ID_ANNOTATION: Final = "yunikorn.apache.org/app-id"
QUEUE_LABELS: Final = ("yunikorn.apache.org/queue", "queue")
QUEUE_ANNOTATION: Final = "yunikorn.apache.org/queue"
USER_INFO_ANNOTATION: Final = "yunikorn.apache.org/user.info"
DEFAULT_USER: Final = "nobody"
TERMINAL_PHASES: Final = frozenset({"Succeeded", "Failed"})
ALLOW_PREEMPTION_ANNOTATION: Final = "yunikorn.apache.org/allow-preemption"
TASK_GROUP_NAME_ANNOTATION: Final = "yunikorn.apache.org/task-group-name"
PLACEHOLDER_ANNOTATION: Final = "yunikorn.apache.org/placeholder"


class PodError(ValueError):
    """A pod the scheduler cannot take as it is (the message says why)."""


#: The core's name of a Kubernetes resource (``cpu`` is ``vcore``): the one rule, in common.
resource_name: Final = core_name


def resources_of(quantities: Mapping[str, Any] | None) -> dict[str, int]:
    """A Kubernetes resource list in the core's units (``cpu`` in millicores)."""
    return core_resources(quantities or {})


#: Exact sums of quantities (Kubernetes adds ``resource.Quantity`` values before it rounds).
_EXACT: Final = decimal.Context(prec=200, rounding=decimal.ROUND_CEILING)
#: The resources a pod-level request (``spec.resources.requests``) sets; ``hugepages-*`` too.
_POD_LEVEL: Final = frozenset({"cpu", "memory"})
_HUGEPAGES: Final = "hugepages-"


def _requests(resources: Mapping[str, Any] | None) -> dict[str, Decimal]:
    """A resource list as exact quantities (Kubernetes' names; a ``pods`` entry left out)."""
    return {str(name): parse_quantity(text) for name, text in (resources or {}).items() if name != "pods"}


def _container_requests(container: Mapping[str, Any]) -> dict[str, Decimal]:
    return _requests((container.get("resources") or {}).get("requests"))


def _add_into(total: dict[str, Decimal], amounts: Mapping[str, Decimal]) -> None:
    for name, value in amounts.items():
        total[name] = _EXACT.add(total[name], value) if name in total else value


def _max_into(total: dict[str, Decimal], amounts: Mapping[str, Decimal]) -> None:
    for name, value in amounts.items():
        if name not in total or value > total[name]:
            total[name] = value


def _aggregate_requests(spec: Mapping[str, Any]) -> dict[str, Decimal]:
    """``PodRequests``: the containers and the sidecars together, at least every init step's
    need (KEP 753's formula), pod-level requests over that, plus the overhead."""
    total: dict[str, Decimal] = {}
    for container in spec.get("containers") or ():
        _add_into(total, _container_requests(container))
    sidecars: dict[str, Decimal] = {}
    init_peak: dict[str, Decimal] = {}
    for container in spec.get("initContainers") or ():
        requests = _container_requests(container)
        if container.get("restartPolicy") == "Always":
            # A sidecar runs from its start to the pod's end: it adds to the pod's steady need,
            # and to every later init container's.
            _add_into(total, requests)
            _add_into(sidecars, requests)
            step = dict(sidecars)
        else:
            step = dict(requests)
            _add_into(step, sidecars)
        _max_into(init_peak, step)
    _max_into(total, init_peak)
    pod_level = _requests((spec.get("resources") or {}).get("requests"))
    for name, value in pod_level.items():
        if name in _POD_LEVEL or name.startswith(_HUGEPAGES):
            total[name] = value
    _add_into(total, _requests(spec.get("overhead")))
    return total


def _rounded_up(name: str, value: Decimal) -> int:
    """A pod's exact request in the core's units (``MilliValue()`` for cpu, else ``Value()``)."""
    scaled = _EXACT.scaleb(value, 3) if name == "cpu" else value
    result = int(scaled.to_integral_value(rounding=decimal.ROUND_CEILING))
    if not -INT64_MAX - 1 <= result <= INT64_MAX:
        raise QuantityError(f"{name}: the pod's request {value} is beyond the int64 range")
    return result


def pod_request(pod: Mapping[str, Any]) -> dict[str, int]:
    """The pod's request (see the module doc); zero quantities are left out."""
    spec = pod.get("spec") or {}
    try:
        exact = _aggregate_requests(spec)
        total = {resource_name(name): _rounded_up(name, value) for name, value in exact.items()}
    except QuantityError as exc:
        raise PodError(f"pod {_name(pod)}: {exc}") from exc
    total["pods"] = 1
    return {name: value for name, value in total.items() if value}


def _first(mapping: Mapping[str, str], keys: Iterable[str]) -> str:
    for key in keys:
        value = mapping.get(key)
        if value:
            return value
    return ""


def app_id_of(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    found = _first(meta.get("labels") or {}, APP_ID_LABELS) or (meta.get("annotations") or {}).get(APP_ID_ANNOTATION, "")
    return found or f"yunikorn-{meta.get('namespace', 'default')}-autogen"


def queue_of(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return _first(meta.get("labels") or {}, QUEUE_LABELS) or (meta.get("annotations") or {}).get(QUEUE_ANNOTATION, "")


def user_of(pod: Mapping[str, Any]) -> tuple[str, tuple[str, ...]]:
    """(user, groups) from the user-info annotation; ``nobody`` without one or when it is
    not the JSON object it should be."""
    text = ((pod.get("metadata") or {}).get("annotations") or {}).get(USER_INFO_ANNOTATION)
    if text:
        try:
            info = orjson.loads(text)
        except orjson.JSONDecodeError:
            info = None
        if isinstance(info, dict) and isinstance(info.get("user"), str) and info["user"]:
            groups = info.get("groups")
            good = tuple(g for g in groups if isinstance(g, str)) if isinstance(groups, list) else ()
            return info["user"], good
    return DEFAULT_USER, ()


def is_terminal(pod: Mapping[str, Any]) -> bool:
    """Succeeded or Failed: it holds nothing any more."""
    return (pod.get("status") or {}).get("phase") in TERMINAL_PHASES


def _name(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def timestamp_seconds(text: str | None) -> int:
    """Seconds since the epoch of an RFC 3339 timestamp (``2026-11-26T01:02:03Z``); now when
    missing or unreadable."""
    if text:
        try:
            return calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ"))
        except ValueError:
            pass
    return int(time.time())


@dataclass(frozen=True)
class PodView:
    """One pod as the shim uses it. ``uid`` is the allocation key."""

    uid: str
    namespace: str
    name: str
    scheduler_name: str
    node_name: str
    phase: str
    app_id: str
    queue: str
    user: str
    groups: tuple[str, ...]
    priority: int
    created: int
    request: dict[str, int] = field(default_factory=dict)
    #: Why the pod cannot be scheduled as it is (a broken quantity); empty: it can.
    problem: str = ""
    deleting: bool = False
    #: The pod's own ``allow-preemption`` annotation: True or False, None when it has none (its
    #: PriorityClass's then counts, else True).
    allow_preemption: bool | None = None
    #: False with ``spec.preemptionPolicy: Never``.
    may_preempt: bool = True
    priority_class: str = ""
    task_group: str = ""
    placeholder: bool = False
    role: str = ""
    history_key: str = ""
    #: Its annotations the core reads as its application's tags (:data:`APPLICATION_TAG_ANNOTATIONS`:
    #: a hub's member cluster, the topology domain).
    app_tags: tuple[tuple[str, str], ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


#: The annotations of a pod (its application's first pod's count) that are the core's application
#: tags of the same names: the member cluster its application is placed in (a hub's,
#: docs/multicluster.md) and the topology level it asks for (docs/topology.md).
APPLICATION_TAG_ANNOTATIONS: Final = (APP_TAG_CLUSTERS, APP_TAG_CLUSTER_SELECTOR, APP_TAG_PREFERRED_CLUSTERS,
                                      APP_TAG_PREFERRED_CLUSTER_SELECTOR, APP_TAG_TOPOLOGY_REQUIRED,
                                      APP_TAG_TOPOLOGY_PREFERRED, APP_TAG_TOPOLOGY_SLICE_REQUIRED,
                                      APP_TAG_TOPOLOGY_SLICE_SIZE)


def allow_preemption_of(annotations: Mapping[str, Any] | None) -> bool | None:
    """The ``allow-preemption`` annotation: ``false`` (any case) opts out, any other value opts
    in, none: None."""
    value = (annotations or {}).get(ALLOW_PREEMPTION_ANNOTATION)
    return None if value is None else str(value).strip().lower() != "false"


def pod_view(pod: Mapping[str, Any]) -> PodView:
    meta = pod.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    spec = pod.get("spec") or {}
    problem = ""
    try:
        request = pod_request(pod)
    except PodError as exc:
        request, problem = {}, str(exc)
    user, groups = user_of(pod)
    priority = spec.get("priority")
    return PodView(
        uid=str(meta.get("uid", "")), namespace=str(meta.get("namespace", "")), name=str(meta.get("name", "")),
        scheduler_name=str(spec.get("schedulerName", "")), node_name=str(spec.get("nodeName") or ""),
        phase=str((pod.get("status") or {}).get("phase", "")), app_id=app_id_of(pod), queue=queue_of(pod),
        user=user, groups=groups, priority=priority if isinstance(priority, int) and not isinstance(priority, bool) else 0,
        created=timestamp_seconds(meta.get("creationTimestamp")), request=request, problem=problem,
        deleting=bool(meta.get("deletionTimestamp")), allow_preemption=allow_preemption_of(annotations),
        may_preempt=spec.get("preemptionPolicy") != "Never", priority_class=str(spec.get("priorityClassName") or ""),
        task_group=str(annotations.get(TASK_GROUP_NAME_ANNOTATION, "")),
        placeholder=str(annotations.get(PLACEHOLDER_ANNOTATION, "")).lower() == "true",
        role=role_of(pod), history_key=history_key_of(pod),
        app_tags=tuple((key, str(annotations[key])) for key in APPLICATION_TAG_ANNOTATIONS if key in annotations),
    )
