"""A hub over member clusters (issue 33, level 2): users submit to the hub; one core, one queue
tree over every member's nodes; each application placed whole in one member, its pods copied
there and mirrored back (see docs/multicluster.md).

``pyscheduler serve --rm pyscheduler_k8s:attach --clusters-file FILE`` (:mod:`.config`) starts
it: :func:`attach_hub` builds the :class:`HubRM` the service holds (behind the hub's leader
election, as one cluster's shim is).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pyscheduler.service.rm import Route
from pyscheduler.si.api import SchedulerAPI
from pyscheduler_k8s.hub.config import CLUSTERS_FILE_ENV, HubConfig, MemberConfig, hub_config_from_environment, \
    load_hub_config, parse_hub_config
from pyscheduler_k8s.hub.shim import HubShim
from pyscheduler_k8s.api_metrics import ApiMeasured, KubeApiMetrics
from pyscheduler_k8s.kubeapi import ClusterAccess, KubeApi
from pyscheduler_k8s.replica import Replica
from pyscheduler_k8s.shim import ShimOptions
from pyscheduler_k8s.sole import SoleShim

__all__ = ["CLUSTERS_FILE_ENV", "HubConfig", "HubRM", "HubShim", "MemberConfig", "hub_config_from_environment",
           "hub_shim_factory", "load_hub_config", "parse_hub_config"]

#: Where the served scheduler says how each member answers.
MEMBERS_RULE = "/ws/v1/k8s/members"


def hub_shim_factory(proxy: SchedulerAPI, config_text: str, options: ShimOptions, settings: HubConfig,
                     metrics: KubeApiMetrics | None = None) -> tuple[KubeApi, Callable[[], HubShim]]:
    """The hub's API and a maker of fresh hub shims (one per term led: a new leader lists the
    hub and every member again); ``metrics``: where every API client counts its requests."""
    hub_api = KubeApi(ClusterAccess.from_kubeconfig(settings.hub.kubeconfig), metrics)
    member_apis = {m.name: KubeApi(ClusterAccess.from_kubeconfig(m.cluster.kubeconfig), metrics)
                   for m in settings.members}

    def make_shim() -> HubShim:
        return HubShim(proxy, hub_api, config_text, options, settings, member_apis)

    return hub_api, make_shim


class HubRM(ApiMeasured):
    """What ``attach`` returns for a hub: the hub's replica (or sole shim) plus the members' status."""

    def __init__(self, runner: Replica | SoleShim) -> None:
        self.runner = runner

    @property
    def shim(self) -> HubShim | None:
        shim = self.runner.shim
        return shim if isinstance(shim, HubShim) else None

    def start(self) -> None:
        self.runner.start_in_background()

    def stop(self) -> None:
        self.runner.stop()

    def members_status(self) -> dict[str, Any]:
        shim = self.shim
        return {"members": shim.members_status() if shim is not None else {},
                "hub": "running" if shim is not None else "not leading or starting"}

    def routes(self) -> Sequence[Route]:
        return (*self.runner.routes(), Route(MEMBERS_RULE, "k8s_members", self.members_status))
