"""The Kubernetes RM: nodes and pods of a real cluster in the core, the core's allocations as
bindings (issue 15). This module is the wiring only; each part has its own module, as YuniKorn's
k8shim splits ``pkg/cache``, ``pkg/client`` and its scheduler callback:

- :mod:`.cache`: what the shim knows (pods as tasks whose states change through one transition
  table, :mod:`.cache.task_state`; applications and gangs; nodes and the other objects the
  predicates use), behind one lock never held while calling the core or the API server;
- :mod:`.informers`: list, watch, and list again after ``410 Gone``, per resource; the
  handlers are :mod:`.pod_events`, :mod:`.cluster_events` and :mod:`.configuration`;
- :mod:`.callback`: the core's callbacks, turned into cache events;
- :mod:`.binder`: the bindings (and the volume binder's hand-off before each);
- :mod:`.event_recorder`: Kubernetes Events and pending pods' conditions;
- :mod:`.pod_writes`: deletions, placeholder pods, pods marked failed;
- :mod:`.podgroup_events`, :mod:`.podgroup_writes`: Kubernetes' PodGroups followed (optional)
  and their ``PodGroupInitiallyScheduled`` condition;
- :mod:`.core_client`: the requests to the core.

**Start.** The shim registers with the core (``rm_id`` :attr:`ShimOptions.rm_id`: ``pyscheduler-k8s``,
or the cluster's name when several are scheduled, :mod:`.clusters`) under the ConfigMap's
configuration (:mod:`.configuration`), lists the nodes, the optional objects (reported layers,
PriorityClasses, Namespaces, storage, PodGroups) and then the pods (:mod:`.pod_events`: a restart recovers
bound pods as allocations and never binds them again, and resumes a gang it finds reserving or
running, :mod:`.gang_recovery`), sets :attr:`KubeShim.synced`, then follows
every resource from its list's version. Every thread is a
:class:`~pyscheduler.common.background.BackgroundThread` (:mod:`.threads`).
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from pyscheduler.si.api import SchedulerAPI
from pyscheduler_k8s.binder import Binder, PlacePod
from pyscheduler_k8s.cache import ShimCache
from pyscheduler_k8s.callback import ShimCallback
from pyscheduler_k8s.cluster_events import NAMESPACES_PATH, NODES_PATH, PRIORITY_CLASSES_PATH, ClusterEvents
from pyscheduler_k8s.cnr import CNR_PATH
from pyscheduler_k8s.configuration import Configuration
from pyscheduler_k8s.core_client import CoreClient
from pyscheduler_k8s.counts import ShimCounts
from pyscheduler_k8s.event_recorder import EventRecorder
from pyscheduler_k8s.informers import Informers
from pyscheduler_k8s.kubeapi import KubeApi
from pyscheduler_k8s.pod_events import PODS_PATH, PodEvents, PodTransform
from pyscheduler_k8s.pod_writes import PodWrites
from pyscheduler_k8s.podgroup import PODGROUPS_PATH
from pyscheduler_k8s.podgroup_events import PodGroupEvents
from pyscheduler_k8s.podgroup_writes import PodGroupStatus
from pyscheduler_k8s.pods import DEFAULT_SCHEDULER_NAMES
from pyscheduler_k8s.volumes import STORAGE_PATHS, VolumeBinder

__all__ = ["DEFAULT_QUEUES", "KubeShim", "RM_ID", "ShimOptions"]

RM_ID: Final = "pyscheduler-k8s"
#: The queues when neither a ConfigMap nor ``--config`` gives them: YuniKorn's default, so a pod
#: lands in ``root.<its namespace>`` (created on demand) as it does on YuniKorn.
DEFAULT_QUEUES: Final = """\
partitions:
  - name: default
    placementrules:
      - name: tag
        value: namespace
        create: true
    queues:
      - name: root
        submitacl: '*'
"""


#: Seconds a graceful stop waits for the placeholder replacements under way
#: (:meth:`KubeShim.finish_replacements`), within the 5 s gunicorn gives a stopping worker.
REPLACEMENTS_TIMEOUT: Final = 2.0


@dataclass(frozen=True)
class ShimOptions:
    #: ``spec.schedulerName`` values the shim takes pods for.
    scheduler_names: tuple[str, ...] = DEFAULT_SCHEDULER_NAMES
    #: The name in the events the shim writes (kube-scheduler's ``reportingController``).
    component: str = "pyscheduler"
    #: The replica in the events it writes (``reportingInstance``: which replica bound a pod,
    #: ``kubectl get events -o wide``); empty: left out.
    instance: str = ""
    #: The RM this shim is in the core: the partitions are ``[rm_id]<name>``.
    rm_id: str = RM_ID
    partition: str = "default"
    #: Threads binding pods (:mod:`.binder`).
    binders: int = 16
    #: Threads writing the pods' events (``Scheduled``, ``FailedScheduling``), apart from the
    #: binders, as kube-scheduler's event broadcaster does.
    event_writers: int = 2
    #: Threads writing pending pods' ``PodScheduled=False`` conditions (coalesced per pod:
    #: :mod:`.status_writer`), so a burst of pending pods never waits behind the core's events.
    status_writers: int = 2
    #: Seconds a watch lasts before the server ends it (it is started again at once).
    watch_timeout: int = 300
    #: The namespace of the configuration's ConfigMap (:data:`.configuration.CONFIG_MAP_NAMES`).
    namespace: str = "default"
    #: Seconds between looks for a resource the shim follows when it exists (CustomNodeResources,
    #: PriorityClasses) while it does not, or the shim may not list it.
    optional_recheck: float = 30.0


class KubeShim:
    def __init__(self, proxy: SchedulerAPI, api: KubeApi, config_text: str, options: ShimOptions | None = None,
                 *, clock: Callable[[], float] = time.time, place: PlacePod | None = None,
                 pod_transform: PodTransform | None = None,
                 pod_belongs: Callable[[Mapping[str, Any]], bool] | None = None) -> None:
        """``place``, ``pod_transform`` and ``pod_belongs``: a hub's (:mod:`.hub`): pods placed
        by a copy in a member instead of a binding, shown placed from their marks, and the hub's
        own records told from its members'."""
        self.proxy = proxy
        self.api = api
        self.config_text = config_text
        self.options = opts = options or ShimOptions()
        self.counts = ShimCounts()
        self.synced = threading.Event()
        self.cache = cache = ShimCache()
        self.informers = Informers(api, self.counts, watch_timeout=opts.watch_timeout,
                                   optional_recheck=opts.optional_recheck)
        stopping = self.informers.stopping
        self.clock = clock
        self.core = CoreClient(proxy, opts.rm_id, opts.partition, cache.cluster, cache.tasks)
        self.recorder = EventRecorder(api, cache.tasks, self.counts, component=opts.component, clock=clock,
                                      event_writers=opts.event_writers, status_writers=opts.status_writers,
                                      instance=opts.instance)
        self.writes = PodWrites(api, cache.tasks, self.recorder, self.counts)
        volume_binder = VolumeBinder(api, cache.volumes, cache.lock, stopping)
        self.binder = Binder(api, cache.tasks, volume_binder, self.core, self.recorder, self.counts,
                             threads=opts.binders, stop=stopping, place=place)
        self.podgroup_status = PodGroupStatus(api, cache.podgroups, clock=clock)
        self.callback = ShimCallback(cache, self.core, self.binder, self.recorder, self.writes,
                                     component=opts.component, groups=self.podgroup_status)
        self.configuration = Configuration(api, proxy, self.recorder, self.counts, rm_id=opts.rm_id,
                                           namespace=opts.namespace, config_text=config_text)
        self.pods = PodEvents(api, cache.tasks, self.core, self.recorder, self.writes, opts.scheduler_names,
                              transform=pod_transform, belongs=pod_belongs, groups=cache.podgroups)
        self.cluster = ClusterEvents(api, cache.cluster, self.core, self.informers)
        self.podgroups = PodGroupEvents(cache.podgroups, self.informers, self.pods.rehandle)

    def start(self) -> None:
        """Registers with the core, recovers the cluster's state, and starts following it.
        Raises :class:`~pyscheduler.common.errors.ConfigError` when the ConfigMap's
        configuration is invalid (said on the ConfigMap; nothing was started)."""
        maps_version = self.configuration.register(self.callback)
        cluster, informers = self.cluster, self.informers
        # Nodes before pods (a bound pod's node must be known), the optional objects before the
        # pods too (their predicates read them); bound pods before pending ones (pod_events).
        informers.add("nodes", NODES_PATH, cluster.relist_nodes(), cluster.on_node, cluster.relist_nodes)
        informers.add("customnoderesources", CNR_PATH, cluster.relist_reported(), cluster.on_reported,
                      cluster.relist_reported)
        self._follow_priority_classes_and_namespaces()
        for kind, path in STORAGE_PATHS.items():
            informers.add(kind, path, cluster.relist_storage(kind), functools.partial(cluster.on_storage, kind),
                          functools.partial(cluster.relist_storage, kind))
        # PodGroups before the pods: a member first seen finds its group.
        informers.add("podgroups", PODGROUPS_PATH, self.podgroups.relist(), self.podgroups.handle,
                      self.podgroups.relist)
        informers.add("pods", PODS_PATH, self.pods.relist(), self.pods.handle, self.pods.relist)
        self._follow_config_map_and_run(maps_version)

    def _follow_priority_classes_and_namespaces(self) -> None:
        cluster = self.cluster
        self.informers.add("priorityclasses", PRIORITY_CLASSES_PATH, cluster.relist_priority_classes(),
                           cluster.on_priority_class, cluster.relist_priority_classes)
        self.informers.add("namespaces", NAMESPACES_PATH, cluster.relist_namespaces(), cluster.on_namespace,
                           cluster.relist_namespaces)

    def _follow_config_map_and_run(self, maps_version: str | None) -> None:
        """The last step of a start: the ConfigMap followed, the shim synced, its threads running."""
        self.informers.add("configmaps", self.configuration.path, maps_version, self.configuration.on_config_map,
                           self.configuration.relist)
        self.synced.set()
        self.binder.start()
        self.recorder.start()
        self.writes.start()
        self.podgroup_status.start()
        self.informers.start()

    def finish_replacements(self, timeout: float = REPLACEMENTS_TIMEOUT) -> bool:
        """Before a graceful stop (only then: no replacement starts afterwards): waits (up to
        ``timeout`` seconds) until every placeholder the core replaced has its member bound, the
        watch and the binders still running, and leaves the placeholders the core replaces
        from now on as they are (the next leader replaces them). A gang stopped halfway through
        a replacement (its placeholder deleted, its member pending) would be resumed reserving
        by the next leader, which makes that placeholder again (:mod:`.gang_recovery`). True
        when none is left."""
        self.cache.tasks.hold_replacements()
        deadline = time.monotonic() + timeout
        while self.cache.tasks.replacements_in_flight():
            if time.monotonic() >= deadline or self.informers.stopping.wait(0.01):
                return False
        return True

    def stop(self) -> None:
        """Stops following the cluster, then the binders and writers (what they hold is
        dropped: a new leader recovers from the API server)."""
        self.informers.stop()
        self.binder.stop()
        self.writes.stop()
        self.podgroup_status.stop()
        self.recorder.stop()

    # -- for tests and the REST status ---------------------------------------------------------------

    def pod_state(self, uid: str) -> str | None:
        """The pod's record's state (:class:`.cache.task_state.TaskState` value), None if unknown."""
        state = self.cache.tasks.pod_state(uid)
        return None if state is None else state.value

    def applications(self) -> dict[str, set[str]]:
        return self.cache.tasks.applications()
