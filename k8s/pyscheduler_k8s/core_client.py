"""The shim's requests to the core (YuniKorn's ``SchedulerAPI`` calls from the shim): a pod as
an ask, an allocation recovered or of another scheduler, a release, an application added or
removed, node infos. It only builds SI messages and sends them; it never holds the cache's lock
while sending (the core may call back on this thread).

An ask's tags (:mod:`pyscheduler.si.messages`' vocabulary): its creation time and namespace,
its role and history key (:mod:`.roles`), and ``TAG_SCORE_NODES`` when it has preferred terms
(the core then asks ``score_nodes`` for its candidates). Its preemption policy: it may be
preempted unless its ``allow-preemption`` annotation (else its PriorityClass's) says false.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pyscheduler.si.api import SchedulerAPI
from pyscheduler.si import messages as si
from pyscheduler_k8s.cache.cluster import ClusterCache, si_resource
from pyscheduler_k8s.cache.tasks import TaskCache
from pyscheduler_k8s.gang import GangSpec, placeholder_ask
from pyscheduler_k8s.pods import PodView
from pyscheduler_k8s.roles import HISTORY_KEY_TAG, ROLE_TAG

__all__ = ["CoreClient"]


class CoreClient:
    def __init__(self, proxy: SchedulerAPI, rm_id: str, partition: str, cluster: ClusterCache, tasks: TaskCache) -> None:
        self.proxy = proxy
        self.rm_id = rm_id
        self.partition = partition
        self._cluster = cluster
        self._tasks = tasks

    def ask_of(self, view: PodView) -> si.Allocation:
        """The pod as an ask (see the module doc), or, bound already, as an allocation."""
        tags = {si.CREATION_TIME: str(view.created), si.KEY_NAMESPACE: view.namespace}
        if view.role:
            tags[ROLE_TAG] = view.role
        if view.history_key:
            tags[HISTORY_KEY_TAG] = view.history_key
        allow_self = view.allow_preemption
        if allow_self is None:
            allow_self = self._cluster.allow_preemption(view.priority_class)
        if self._tasks.scores_nodes(view.uid):
            tags[si.TAG_SCORE_NODES] = "true"
        return si.Allocation(
            allocation_key=view.uid, application_id=view.app_id, partition_name=self.partition,
            node_id=view.node_name, resource_per_alloc=si_resource(view.request), priority=view.priority,
            allocation_tags=tags, placeholder=view.placeholder, task_group_name=view.task_group,
            preemption_policy=si.PreemptionPolicy(allow_preempt_self=allow_self is not False,
                                                  allow_preempt_other=view.may_preempt))

    def ask(self, view: PodView) -> None:
        self.allocate(self.ask_of(view))

    def ask_all(self, views: Iterable[PodView]) -> None:
        allocations = tuple(self.ask_of(view) for view in views)
        if allocations:
            self.proxy.update_allocation(si.AllocationRequest(allocations=allocations, rm_id=self.rm_id))

    def foreign(self, view: PodView) -> None:
        """Another scheduler's pod on a node: it occupies the node."""
        self.allocate(si.Allocation(allocation_key=view.uid, node_id=view.node_name, partition_name=self.partition,
                                    resource_per_alloc=si_resource(view.request),
                                    allocation_tags={si.FOREIGN: si.ALLOC_TYPE_DEFAULT}))

    def allocate(self, allocation: si.Allocation) -> None:
        self.proxy.update_allocation(si.AllocationRequest(allocations=(allocation,), rm_id=self.rm_id))

    def release(self, app_id: str, uid: str, termination: si.TerminationType, message: str) -> None:
        """One release sent to the core (``app_id`` empty: a foreign allocation)."""
        release = si.AllocationRelease(partition_name=self.partition, application_id=app_id,
                                       allocation_key=uid, termination_type=termination, message=message)
        self.proxy.update_allocation(si.AllocationRequest(
            releases=si.AllocationReleasesRequest(allocations_to_release=(release,)), rm_id=self.rm_id))

    def add_application(self, view: PodView, gang: GangSpec | None) -> None:
        """The application of ``view``, its first pod: a gang's asks the core for its
        placeholders' total and runs it once they are placed (:mod:`.gang`)."""
        self.proxy.update_application(si.ApplicationRequest(new=(si.AddApplicationRequest(
            application_id=view.app_id, queue_name=view.queue, partition_name=self.partition,
            ugi=si.UserGroupInformation(user=view.user, groups=view.groups),
            # A gang's task-group topology fields, then the pod's own annotations (which win).
            # Its first pod's history key is the application's too: a gang's placeholders (pods of
            # the shim, no owner of their own) then keep their nodes under the job's history, so a
            # job started again finds them (pyscheduler.scheduler.history_gangs).
            tags={si.KEY_NAMESPACE: view.namespace, **({HISTORY_KEY_TAG: view.history_key} if view.history_key else {}),
                  **(gang.topology if gang is not None else {}), **dict(view.app_tags)},
            placeholder_ask=si_resource(placeholder_ask(gang)) if gang is not None else None,
            gang_scheduling_style=gang.style if gang is not None else "",
            execution_timeout_milli_seconds=gang.timeout * 1000 if gang is not None else 0),),
            rm_id=self.rm_id))

    def remove_application(self, app_id: str) -> None:
        self.proxy.update_application(si.ApplicationRequest(remove=(si.RemoveApplicationRequest(
            application_id=app_id, partition_name=self.partition),), rm_id=self.rm_id))

    def update_nodes(self, infos: Iterable[si.NodeInfo]) -> None:
        """One request per node info, in order (as the watch saw them)."""
        for info in infos:
            self.proxy.update_node(si.NodeRequest(nodes=(info,), rm_id=self.rm_id))
