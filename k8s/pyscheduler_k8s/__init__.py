"""pyscheduler's Kubernetes shim: an RM embedded in the served scheduler
(``pyscheduler serve --rm pyscheduler_k8s:attach``) that places the pods naming it in
``spec.schedulerName`` on a real cluster's nodes (see docs/kubernetes.md).

Settings come from the environment of the served process: ``PYSCHEDULER_K8S_KUBECONFIG`` (else
``KUBECONFIG``, ``~/.kube/config``, the pod's service account), ``PYSCHEDULER_K8S_SCHEDULER_NAMES``
(comma-separated; default ``pyscheduler,yunikorn``), ``PYSCHEDULER_K8S_NAMESPACE`` (where the
``pyscheduler-configs`` ConfigMap is; default: the pod's own namespace in a cluster, else
``default``), ``PYSCHEDULER_K8S_CLUSTERS`` (several clusters, each named: ``NAME=KUBECONFIG``
comma-separated, see :mod:`.clusters`; ``pyscheduler serve --cluster`` sets it),
``PYSCHEDULER_K8S_CLUSTERS_FILE`` (a hub over member clusters, see :mod:`.hub`;
``pyscheduler serve --clusters-file`` sets it), ``PYSCHEDULER_K8S_LEADER_ELECTION`` (default on),
``PYSCHEDULER_K8S_LEASE_DURATION``, ``PYSCHEDULER_K8S_RENEW_DEADLINE`` and
``PYSCHEDULER_K8S_RETRY_PERIOD`` (seconds; kube-scheduler's 15, 10 and 2 by default, see
:meth:`.leader.LeaseSettings.from_environment`).

The queues come from the ``pyscheduler-configs`` (else ``yunikorn-configs``) ConfigMap, else from
``--config``, else YuniKorn's default: the ``namespace`` tag placement rule with ``create: true``
(a pod lands in ``root.<namespace>``).
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING

from pyscheduler_k8s.api_metrics import KubeApiMetrics
from pyscheduler_k8s.clusters import SeveralClusters, clusters_from_environment
from pyscheduler_k8s.hub import HubConfig, HubRM, hub_config_from_environment, hub_shim_factory
from pyscheduler_k8s.kubeapi import SERVICE_ACCOUNT_DIR, ClusterAccess, KubeApi
from pyscheduler_k8s.pods import DEFAULT_SCHEDULER_NAMES
from pyscheduler_k8s.leader import LeaseSettings, default_identity
from pyscheduler_k8s.replica import Replica
from pyscheduler_k8s.shim import DEFAULT_QUEUES, KubeShim, ShimOptions
from pyscheduler_k8s.sole import SoleShim

if TYPE_CHECKING:
    from pyscheduler.service import SchedulerService

__all__ = ["HubRM", "KubeShim", "Replica", "SeveralClusters", "ShimOptions", "SoleShim", "attach"]


def _namespace() -> str:
    named = os.environ.get("PYSCHEDULER_K8S_NAMESPACE", "").strip()
    if named:
        return named
    try:
        return (SERVICE_ACCOUNT_DIR / "namespace").read_text().strip() or "default"
    except OSError:
        return "default"


def _leader_election() -> bool:
    return os.environ.get("PYSCHEDULER_K8S_LEADER_ELECTION", "true").strip().lower() not in ("0", "false", "no", "off")


def attach(service: SchedulerService) -> Replica | SoleShim | SeveralClusters | HubRM:
    """The ``--rm`` entry point: the shim on the cluster the environment names, behind leader
    election (``PYSCHEDULER_K8S_LEADER_ELECTION``, default on: a Lease ``pyscheduler`` in the
    shim's namespace) or started at once; either declares ``GET /ws/v1/k8s/leadership``
    (which replica leads) through ``routes()``.

    With ``PYSCHEDULER_K8S_CLUSTERS`` (:mod:`.clusters`): one shim per named cluster, each its
    own RM (``rm_id`` the cluster's name) with its own ConfigMap and Lease in that cluster,
    all started in the background (a cluster away holds up nothing else).

    Every API client it makes counts its requests and bindings in one
    :class:`~.api_metrics.KubeApiMetrics`, which what it returns exports (``metrics()``): the
    served scheduler shows them on ``/ws/v1/metrics`` (docs/metrics.md)."""
    api_metrics = KubeApiMetrics()
    names = tuple(n.strip() for n in os.environ.get("PYSCHEDULER_K8S_SCHEDULER_NAMES", "").split(",") if n.strip())
    options = ShimOptions(scheduler_names=names or DEFAULT_SCHEDULER_NAMES, namespace=_namespace())
    # Without --config the queues are YuniKorn's default (the namespace placement rule), not
    # the service's own (everything in root.default); a ConfigMap overrides either.
    config_text = service.config_text if service.options.config_path is not None else DEFAULT_QUEUES
    hub = hub_config_from_environment()
    if hub is not None:
        return _hub(service, config_text, dataclasses.replace(options, rm_id=hub.hub.name), hub, api_metrics)
    clusters = clusters_from_environment()
    if clusters:
        several = SeveralClusters({
            cluster.name: _member(service, KubeApi(ClusterAccess.from_kubeconfig(cluster.kubeconfig), api_metrics),
                                  config_text, dataclasses.replace(options, rm_id=cluster.name))
            for cluster in clusters})
        several.api_metrics = api_metrics
        several.start()
        return several
    api = KubeApi(ClusterAccess.discover(os.environ.get("PYSCHEDULER_K8S_KUBECONFIG") or None), api_metrics)
    member = _member(service, api, config_text, options)
    member.api_metrics = api_metrics
    member.start()
    return member


def _hub(service: SchedulerService, config_text: str, options: ShimOptions, settings: HubConfig,
         api_metrics: KubeApiMetrics) -> HubRM:
    """The hub over its members (:mod:`.hub`), started in the background behind the hub's
    leader election (a member away holds up nothing)."""
    hub_api, make_shim = hub_shim_factory(service.proxy, config_text, options, settings, api_metrics)
    runner: Replica | SoleShim = SoleShim(make_shim) if not _leader_election() else Replica(
        make_shim, hub_api, default_identity(), LeaseSettings.from_environment(options.namespace))
    rm = HubRM(runner)
    rm.api_metrics = api_metrics
    rm.start()
    return rm


def _member(service: SchedulerService, api: KubeApi, config_text: str, options: ShimOptions) -> Replica | SoleShim:
    """The shim of one cluster behind leader election, or alone; not started. The replica's
    identity (its Lease holder name) is also the ``reportingInstance`` of the events it writes."""
    identity = default_identity()
    options = dataclasses.replace(options, instance=identity)

    def make_shim() -> KubeShim:
        return KubeShim(service.proxy, api, config_text, options)

    if not _leader_election():
        return SoleShim(make_shim)
    return Replica(make_shim, api, identity, LeaseSettings.from_environment(options.namespace))
