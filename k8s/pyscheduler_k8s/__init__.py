"""pyscheduler's Kubernetes shim: an RM embedded in the served scheduler
(``pyscheduler serve --rm pyscheduler_k8s:attach``) that places the pods naming it in
``spec.schedulerName`` on a real cluster's nodes (see docs/kubernetes.md).

Settings come from the environment of the served process: ``PYSCHEDULER_K8S_KUBECONFIG`` (else
``KUBECONFIG``, ``~/.kube/config``, the pod's service account), ``PYSCHEDULER_K8S_SCHEDULER_NAMES``
(comma-separated; default ``pyscheduler,yunikorn``), ``PYSCHEDULER_K8S_NAMESPACE`` (where the
``pyscheduler-configs`` ConfigMap is; default: the pod's own namespace in a cluster, else
``default``).
"""

from __future__ import annotations

import os
from typing import Any

from pyscheduler_k8s.kubeapi import SERVICE_ACCOUNT_DIR, ClusterAccess, KubeApi
from pyscheduler_k8s.pods import DEFAULT_SCHEDULER_NAMES
from pyscheduler_k8s.shim import KubeShim, ShimOptions

__all__ = ["KubeShim", "ShimOptions", "attach"]


def _namespace() -> str:
    named = os.environ.get("PYSCHEDULER_K8S_NAMESPACE", "").strip()
    if named:
        return named
    try:
        return (SERVICE_ACCOUNT_DIR / "namespace").read_text().strip() or "default"
    except OSError:
        return "default"


def attach(service: Any) -> KubeShim:
    """The ``--rm`` entry point: a shim on the cluster the environment names, started."""
    names = tuple(n.strip() for n in os.environ.get("PYSCHEDULER_K8S_SCHEDULER_NAMES", "").split(",") if n.strip())
    access = ClusterAccess.discover(os.environ.get("PYSCHEDULER_K8S_KUBECONFIG") or None)
    shim = KubeShim(service.proxy, KubeApi(access), service.config_text,
                    ShimOptions(scheduler_names=names or DEFAULT_SCHEDULER_NAMES, namespace=_namespace()))
    shim.start()
    return shim
