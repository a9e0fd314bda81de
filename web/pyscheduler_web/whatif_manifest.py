"""A pod or Job manifest as a what-if request (docs/whatif.md, "Manifests").

``{"manifest": <pod or Job, as a JSON object or YAML text>, "ends": ..., "maxSeconds": ...,
"budgetSeconds": ...}`` becomes the application form :mod:`pyscheduler.sim.whatif_request`
reads, by the Kubernetes shim's own pure functions (``pyscheduler_k8s.pods.pod_view`` and
``pyscheduler_k8s.gang.gang_of``), so the ask is the one the shim would send for that pod:

- a **Pod**: one ask; a **Job**: its ``spec.template`` as ``min(parallelism, completions)`` asks
  (``parallelism`` 1 when absent), the pods the Job controller starts at once;
- the application: the pod's application id (its labels or annotations, else the namespace's
  ``yunikorn-<namespace>-autogen``: an application the partition may run already, which the
  asks then join), queue, user and groups, namespace tag; with a task-groups annotation, the
  gang: its placeholders' total, style and timeout, and one placeholder ask per member of each
  task group (as the shim makes placeholder pods), before the real pods;
- the ask: the pod's request (``cpu`` as ``vcore`` millicores, ``memory`` in bytes, one
  ``pods``, every other resource by name), priority, preemption flags, task group, role tags.

The core does not import the shim: this translation lives in the REST layer and needs the
Kubernetes package (``pyscheduler[k8s]``); without it a manifest is a 400 saying so. YAML text
is read within the scheduler's YAML bounds (:mod:`pyscheduler.config.yaml_limits`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import yaml

from pyscheduler.config.yaml_limits import compose_bounded
from pyscheduler.dao.errors import BadRequest
from pyscheduler.si import messages as si

__all__ = ["MAX_JOB_PODS", "request_of_manifest"]

#: Pods of one Job a what-if plays (the request's own ask limit applies too).
MAX_JOB_PODS: Final = 10_000
_PASSED_ON: Final = ("ends", "maxSeconds", "budgetSeconds")


def _document(manifest: Any) -> Mapping[str, Any]:
    if isinstance(manifest, str):
        try:
            node = compose_bounded(manifest)
            loaded = yaml.SafeLoader("").construct_document(node) if node is not None else None
        except (yaml.YAMLError, ValueError) as err:
            raise BadRequest(f"manifest: not YAML the scheduler reads: {err}") from None
        manifest = loaded
    if not isinstance(manifest, Mapping):
        raise BadRequest("manifest must be a Pod or a Job, as an object or YAML text")
    return manifest


def _object(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _pod_and_count(doc: Mapping[str, Any]) -> tuple[dict[str, Any], int]:
    kind = doc.get("kind")
    meta = _object(doc.get("metadata"))
    if kind == "Pod":
        return dict(doc), 1
    if kind != "Job":
        raise BadRequest(f"manifest: kind must be Pod or Job, got {kind!r}")
    spec = _object(doc.get("spec"))
    if not isinstance(spec.get("template"), Mapping):
        raise BadRequest("manifest: a Job needs spec.template")
    template = _object(spec["template"])
    counts = [spec.get("parallelism", 1), spec.get("completions", spec.get("parallelism", 1))]
    if not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts):
        raise BadRequest("manifest: a Job's parallelism and completions must be non-negative integers")
    count = min(counts)
    if not 1 <= count <= MAX_JOB_PODS:
        raise BadRequest(f"manifest: a Job must start 1 to {MAX_JOB_PODS} pods at once, got {count}")
    template_meta = dict(_object(template.get("metadata")))
    template_meta.setdefault("namespace", meta.get("namespace", "default"))
    template_meta.setdefault("name", str(meta.get("name", "job")))
    return {"kind": "Pod", "metadata": template_meta, "spec": dict(_object(template.get("spec")))}, count


def request_of_manifest(body: Mapping[str, Any]) -> dict[str, Any]:
    """The application form for ``body["manifest"]`` (see the module doc); raises BadRequest."""
    try:
        from pyscheduler_k8s.gang import GangError, gang_of, placeholder_ask
        from pyscheduler_k8s.pods import pod_view
    except ImportError:
        raise BadRequest("manifest: reading a pod or Job needs the Kubernetes package (pip install "
                         "'pyscheduler[k8s]'); send the application and its asks instead") from None
    unknown = sorted(str(k) for k in body if k not in ("manifest", *_PASSED_ON))
    if unknown:
        raise BadRequest(f"the request: unknown field(s) {', '.join(unknown[:5])} beside a manifest")
    pod, count = _pod_and_count(_document(body["manifest"]))
    pod.setdefault("metadata", {}).setdefault("namespace", "default")
    view = pod_view(pod)
    if view.problem:
        raise BadRequest(f"manifest: {view.problem}")
    try:
        gang = gang_of(pod)
    except GangError as err:
        raise BadRequest(f"manifest: {err}") from None
    tags = {si.KEY_NAMESPACE: view.namespace, **(gang.topology if gang is not None else {}), **dict(view.app_tags)}
    if view.history_key:
        tags[si.HISTORY_KEY_TAG] = view.history_key
    application: dict[str, Any] = {"applicationID": view.app_id, "queueName": view.queue, "user": view.user,
                                   "groups": list(view.groups), "tags": tags}
    asks: list[dict[str, Any]] = []
    if gang is not None:
        application.update(placeholderAsk=placeholder_ask(gang), gangSchedulingStyle=gang.style,
                           executionTimeoutMilliSeconds=gang.timeout * 1000)
        for group in gang.groups:
            if group.min_member:
                asks.append({"allocationKey": f"tg-{group.name}", "count": group.min_member, "placeholder": True,
                             "taskGroupName": group.name, "priority": view.priority,
                             "resource": {**group.min_resource, "pods": group.min_resource.get("pods", 0) + 1}})
    ask_tags = {si.ROLE_TAG: view.role} if view.role else {}
    asks.append({"allocationKey": view.name or "pod", "count": count, "resource": view.request,
                 "priority": view.priority, "taskGroupName": view.task_group, "tags": ask_tags,
                 "allowPreemptSelf": view.allow_preemption is not False, "allowPreemptOther": view.may_preempt})
    return {"application": application, "asks": asks, **{k: body[k] for k in _PASSED_ON if k in body}}
