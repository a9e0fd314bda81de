"""pyscheduler's Kubernetes shim: an RM embedded in the served scheduler
(``pyscheduler serve --rm pyscheduler_k8s:attach``) that places the pods naming it in
``spec.schedulerName`` on a real cluster's nodes (see docs/kubernetes.md).

Settings come from the environment of the served process: ``PYSCHEDULER_K8S_KUBECONFIG`` (else
``KUBECONFIG``, ``~/.kube/config``, the pod's service account), ``PYSCHEDULER_K8S_SCHEDULER_NAMES``
(comma-separated; default ``pyscheduler,yunikorn``), ``PYSCHEDULER_K8S_NAMESPACE`` (where the
``pyscheduler-configs`` ConfigMap is; default: the pod's own namespace in a cluster, else
``default``).

The queues come from the ``pyscheduler-configs`` (else ``yunikorn-configs``) ConfigMap, else from
``--config``, else YuniKorn's default: the ``namespace`` tag placement rule with ``create: true``
(a pod lands in ``root.<namespace>``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from pyscheduler.service.rm import Route
from pyscheduler_k8s.kubeapi import SERVICE_ACCOUNT_DIR, ClusterAccess, KubeApi
from pyscheduler_k8s.pods import DEFAULT_SCHEDULER_NAMES
from pyscheduler_k8s.leader import LeaseSettings, default_identity
from pyscheduler_k8s.replica import LEADERSHIP_RULE, Replica
from pyscheduler_k8s.shim import DEFAULT_QUEUES, KubeShim, ShimOptions

if TYPE_CHECKING:
    from pyscheduler.service import SchedulerService

__all__ = ["KubeShim", "Replica", "ShimOptions", "SoleShim", "attach"]


def _namespace() -> str:
    named = os.environ.get("PYSCHEDULER_K8S_NAMESPACE", "").strip()
    if named:
        return named
    try:
        return (SERVICE_ACCOUNT_DIR / "namespace").read_text().strip() or "default"
    except OSError:
        return "default"


class SoleShim:
    """The shim started without leader election: the only replica, always the leader. It
    declares the same ``GET /ws/v1/k8s/leadership`` as a :class:`Replica` does."""

    def __init__(self, shim: KubeShim) -> None:
        self.shim = shim

    def start(self) -> None:
        self.shim.start()

    def stop(self) -> None:
        self.shim.stop()

    def status(self) -> Mapping[str, object]:
        return {"role": "leader", "identity": "", "holder": "", "lease": ""}

    def routes(self) -> Sequence[Route]:
        return (Route(LEADERSHIP_RULE, "k8s_leadership", self.status),)


def attach(service: SchedulerService) -> Replica | SoleShim:
    """The ``--rm`` entry point: the shim on the cluster the environment names, behind leader
    election (``PYSCHEDULER_K8S_LEADER_ELECTION``, default on: a Lease ``pyscheduler`` in the
    shim's namespace) or started at once; either declares ``GET /ws/v1/k8s/leadership``
    (which replica leads) through ``routes()``."""
    names = tuple(n.strip() for n in os.environ.get("PYSCHEDULER_K8S_SCHEDULER_NAMES", "").split(",") if n.strip())
    access = ClusterAccess.discover(os.environ.get("PYSCHEDULER_K8S_KUBECONFIG") or None)
    api = KubeApi(access)
    options = ShimOptions(scheduler_names=names or DEFAULT_SCHEDULER_NAMES, namespace=_namespace())

    # Without --config the queues are YuniKorn's default (the namespace placement rule), not
    # the service's own (everything in root.default); a ConfigMap overrides either.
    config_text = service.config_text if service.options.config_path is not None else DEFAULT_QUEUES

    def make_shim() -> KubeShim:
        return KubeShim(service.proxy, api, config_text, options)

    if os.environ.get("PYSCHEDULER_K8S_LEADER_ELECTION", "true").strip().lower() in ("0", "false", "no", "off"):
        sole = SoleShim(make_shim())
        sole.start()
        return sole
    replica = Replica(make_shim, api, default_identity(), LeaseSettings(namespace=options.namespace))
    replica.start()
    return replica
