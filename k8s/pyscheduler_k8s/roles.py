"""Which role a pod plays and which history it belongs to (role history, issue 16), so a
StatefulSet deleted and created again, or a job resubmitted, comes back to the nodes it ran on.

- **Role**: label ``pyscheduler.io/role``, else label ``app.kubernetes.io/component``, else the
  owning workload's name (a StatefulSet's, Deployment's or Job's). A StatefulSet's pods are
  not interchangeable (each ordinal has its own volumes), so a StatefulSet pod's role is its
  role and its ordinal (``db#3``): pod 3 comes back to pod 3's node, not to any of the set's.
  An Indexed Job's pods are ranks the same way (``train#3``, from the completion index the Job
  controller sets, label ``batch.kubernetes.io/job-completion-index``): a training job started
  again puts rank 3 back on rank 3's node, inside its gang's placeholders
  (``pyscheduler.scheduler.history_gangs``). A pod with none of these has no role (no history).
- **History key**: label ``pyscheduler.io/history-key``, else the owning workload:
  ``statefulset/<namespace>/<name>``, ``deployment/<namespace>/<name>`` (a pod is owned by a
  ReplicaSet named ``<deployment>-<pod-template-hash>``: the hash label names the Deployment
  without asking the API server) or ``job/<namespace>/<name>``; else none (the application id
  is the key, the core's default).

The core reads both from the ask's tags (:data:`ROLE_TAG`, :data:`HISTORY_KEY_TAG`; the names
are the core's, ``pyscheduler.policies.role_history.settings``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pyscheduler.si.vocabulary import HISTORY_KEY_TAG, ROLE_TAG  # the core's tags, re-exported

__all__ = ["HISTORY_KEY_LABEL", "HISTORY_KEY_TAG", "ROLE_LABEL", "ROLE_TAG", "history_key_of", "role_of"]

ROLE_LABEL: Final = "pyscheduler.io/role"
COMPONENT_LABEL: Final = "app.kubernetes.io/component"
HISTORY_KEY_LABEL: Final = "pyscheduler.io/history-key"
#: Set on a StatefulSet's pods by its controller (Kubernetes 1.28 and later).
POD_INDEX_LABEL: Final = "apps.kubernetes.io/pod-index"
POD_TEMPLATE_HASH_LABEL: Final = "pod-template-hash"
#: Set on an Indexed Job's pods by the Job controller (label since Kubernetes 1.28).
COMPLETION_INDEX_LABEL: Final = "batch.kubernetes.io/job-completion-index"


def _owner(meta: Mapping[str, Any]) -> tuple[str, str]:
    """(kind, name) of the workload owning the pod: StatefulSet, Deployment or Job; ("", "")."""
    labels = meta.get("labels") or {}
    for ref in meta.get("ownerReferences") or ():
        if not isinstance(ref, Mapping):
            continue
        kind, name = str(ref.get("kind", "")), str(ref.get("name", ""))
        if kind in ("StatefulSet", "Job") and name:
            return kind, name
        if kind == "ReplicaSet" and name:
            suffix = f"-{labels.get(POD_TEMPLATE_HASH_LABEL, '')}"
            if len(suffix) > 1 and name.endswith(suffix):
                return "Deployment", name[:-len(suffix)]
            return "ReplicaSet", name
    return "", ""


def _ordinal(meta: Mapping[str, Any], set_name: str) -> str:
    labels = meta.get("labels") or {}
    index = str(labels.get(POD_INDEX_LABEL, ""))
    if index.isdigit():
        return index
    name = str(meta.get("name", ""))
    rest = name[len(set_name) + 1:] if name.startswith(f"{set_name}-") else ""
    return rest if rest.isdigit() else ""


def role_of(pod: Mapping[str, Any]) -> str:
    """The pod's role (see the module doc); "" for none."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    kind, owner = _owner(meta)
    role = str(labels.get(ROLE_LABEL) or labels.get(COMPONENT_LABEL) or owner)
    if role and kind == "StatefulSet":
        ordinal = _ordinal(meta, owner)
        if ordinal:
            return f"{role}#{ordinal}"
    if role and kind == "Job":
        index = str(labels.get(COMPLETION_INDEX_LABEL, ""))
        if index.isdigit():
            return f"{role}#{index}"
    return role


def history_key_of(pod: Mapping[str, Any]) -> str:
    """The pod's history key (see the module doc); "" for the core's default."""
    meta = pod.get("metadata") or {}
    explicit = (meta.get("labels") or {}).get(HISTORY_KEY_LABEL)
    if explicit:
        return str(explicit)
    kind, owner = _owner(meta)
    if kind in ("StatefulSet", "Deployment", "Job"):
        return f"{kind.lower()}/{meta.get('namespace', '')}/{owner}"
    return ""
