"""The hub: one RM whose pods come from the hub cluster and whose nodes come from its member
clusters (issue 33, level 2). Wiring only, as :mod:`..shim` is for one cluster; it is that shim
(the same cache, callback, binder, writers and pod handlers) with three differences:

- **nodes** are the members' (:mod:`.members`: ``[member]node``, labelled with the member), the
  hub's own are not followed (a hub is a place to submit, not to run);
- **placing** a pod is creating its copy in the member and marking the hub pod
  (:mod:`.delegation`), not a binding; a marked hub pod is shown to the handlers as bound to its
  ``[member]node`` (:func:`.marks.hub_pod_as_bound`), so a restart recovers it as on one cluster;
- **the copies** are kept true to their hub pods (:mod:`.mirror`: status and events back, stale
  copies deleted), swept every ``probeInterval`` seconds.

Start order: register (the hub's ConfigMap: its queues cover every member), the hub's
PriorityClasses and Namespaces, every member's nodes, the hub's pods (placed ones recovered on
their members' nodes), then every member's pods (copies judged against the hub pods) and the
ConfigMap's watch.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from typing import Any

from pyscheduler.common.background import BackgroundThread
from pyscheduler.si.api import SchedulerAPI
from pyscheduler_k8s.hub.config import HubConfig
from pyscheduler_k8s.hub.delegation import Delegation
from pyscheduler_k8s.hub.marks import hub_pod_as_bound, source_of
from pyscheduler_k8s.hub.members import Member
from pyscheduler_k8s.hub.mirror import Mirror
from pyscheduler_k8s.kubeapi import KubeApi
from pyscheduler_k8s.pod_events import PODS_PATH
from pyscheduler_k8s.shim import KubeShim, ShimOptions

__all__ = ["HubShim"]


def _hub_own(raw: Mapping[str, Any]) -> bool:
    return source_of(raw) == ""


class HubShim(KubeShim):
    def __init__(self, proxy: SchedulerAPI, api: KubeApi, config_text: str, options: ShimOptions,
                 settings: HubConfig, member_apis: Mapping[str, KubeApi], *,
                 clock: Callable[[], float] = time.time) -> None:
        names = frozenset(member.name for member in settings.members)
        super().__init__(proxy, api, config_text, options, clock=clock, place=self._place,
                         pod_transform=functools.partial(hub_pod_as_bound, members=names), pod_belongs=_hub_own)
        self.settings = settings
        self.delegation = Delegation(api, self.cache.tasks, self._answering_member)
        self.mirror = Mirror(api, self.cache.tasks, self.recorder, self._answering_member, self.delegation)
        self.members = {
            config.name: Member(config, member_apis[config.name], settings, hub=api, cluster=self.cache.cluster,
                                tasks=self.cache.tasks, core=self.core, recorder=self.recorder, writes=self.writes,
                                mirror=self.mirror, counts=self.counts, scheduler_names=self.options.scheduler_names,
                                watch_timeout=self.options.watch_timeout)
            for config in settings.members}
        self._sweeper = BackgroundThread("k8s-hub-sweep", self._sweep, interval=settings.probe_interval)

    def _place(self, namespace: str, name: str, uid: str, node: str) -> None:
        self.delegation.place(namespace, name, uid, node)

    def _answering_member(self, name: str) -> KubeApi | None:
        member = self.members.get(name)
        return member.answering_api() if member is not None else None

    def _sweep(self) -> bool:
        self.mirror.sweep()
        return False

    def start(self) -> None:
        maps_version = self.configuration.register(self.callback)
        self._follow_priority_classes_and_namespaces()
        node_versions = {name: member.list_nodes() for name, member in self.members.items()}
        self.mirror.start()
        self.informers.add("pods", PODS_PATH, self.pods.relist(), self.pods.handle, self.pods.relist)
        for name, member in self.members.items():
            member.follow(node_versions[name])
        self._follow_config_map_and_run(maps_version)
        self._sweeper.start()

    def stop(self) -> None:
        self._sweeper.stop()
        for member in self.members.values():
            member.stop()
        super().stop()
        self.mirror.stop()

    def members_status(self) -> dict[str, Any]:
        return {name: member.status() for name, member in self.members.items()}
