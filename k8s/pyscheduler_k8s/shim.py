"""The Kubernetes RM: nodes and pods of a real cluster in the core, the core's allocations as
bindings (issue 15).

**Configuration.** The queues come from the ConfigMap ``pyscheduler-configs`` (else
``yunikorn-configs``) in the shim's namespace: key ``queues.yaml``, every other key a setting;
without one, the service's configuration. The ConfigMaps are watched: an edit reloads the core
(a ``ConfigurationApplied`` event on the ConfigMap), an invalid one is refused by the core with
the running configuration kept and an ``InvalidConfiguration`` warning event on the ConfigMap.

**Start.** The shim registers with the core (``rm_id`` ``pyscheduler-k8s``), lists the nodes
(each one a core node: :mod:`.nodes`), then the pods: a pod of another scheduler bound to a node
occupies it (a *foreign* allocation); a pod of ours already bound is an existing allocation (a
restart recovers it, never binds it again); a pending pod of ours is an ask of its application
(:mod:`.pods`; the first pod of an application adds it). Then it follows both watches from the
lists' resource versions; a watch that expires (``410 Gone``) lists again and reconciles: what
disappeared meanwhile is released, what appeared is added.

**Placing.** A new allocation from the core is bound (``pods/binding``) by a pool of binder
threads; a successful binding writes kube-scheduler's ``Scheduled`` event, a failed one (the
pod is gone, or bound meanwhile) releases the allocation. The core asks, through the
``predicates`` callback, whether a pod may go on a node: :mod:`.predicates` answers (node
selector, required node affinity, taints, host ports). An ask the core could not place this
cycle gets the ``PodScheduled=False`` condition with reason ``Unschedulable`` and the core's
reason as its message (from the core's request events: its queue's or user's room, or every
node's predicates; or ``update_container_scheduling_state``: skipped or failed), and a
``FailedScheduling`` event, once per reason.

**Ending.** A pod that succeeds, fails or is deleted releases its allocation (or withdraws its
ask); the last pod of an application removes the application; a deleted node is decommissioned,
a cordoned one drained (no new pods), a capacity change updates it.

**Threads and locks.** Watches, binders and the core's callbacks run on their own threads. The
shim's maps are guarded by one lock that is never held while calling the core or the API
server (the core may call back on the calling thread).
"""

from __future__ import annotations

import concurrent.futures
import functools
import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, Final

from pyscheduler.common.errors import ConfigError
from pyscheduler.common.resources import Resource
from pyscheduler.si import messages as si
from pyscheduler.si.events import EventRecord, EventRecordType
from pyscheduler_k8s.cluster_index import ClusterIndex, PlacedPod, PodConstraints, pod_constraints
from pyscheduler_k8s.cnr import CNR_PATH, ReportedNode, reported_node
from pyscheduler_k8s.gang import TIMEOUT_MESSAGE, TIMEOUT_REASON, GangError, GangSpec, gang_of, placeholder_ask, \
    placeholder_pods
from pyscheduler_k8s.kubeapi import KubeApi, KubeApiError, WatchExpired
from pyscheduler_k8s.nodes import NodeView, node_view
from pyscheduler_k8s.pods import DEFAULT_SCHEDULER_NAMES, PodView, allow_preemption_of, is_terminal, pod_view
from pyscheduler_k8s.roles import HISTORY_KEY_TAG, ROLE_TAG
from pyscheduler_k8s.predicates import HostPort, check_node, host_ports, inclusion_passes, node_selector_term_matches, \
    node_unschedulable, tolerations_tolerate
from pyscheduler_k8s.selectors import SelectorError
from pyscheduler_k8s.status_writer import CoalescingWriter
from pyscheduler_k8s.volumes import STORAGE_PATHS, VolumeBinder, VolumeState

__all__ = ["DEFAULT_QUEUES", "KubeShim", "ShimOptions"]

log = logging.getLogger(__name__)

RM_ID: Final = "pyscheduler-k8s"
#: Seconds between attempts after a watch or a list failed, and the first wait before a pod
#: whose binding failed asks again (doubled each time, up to the maximum).
RETRY_DELAY: Final = 1.0
RETRY_BACKOFF_MAX: Final = 60.0
UNSCHEDULABLE: Final = "Unschedulable"
#: kube-scheduler's condition on a pod whose ``spec.schedulingGates`` are not empty.
SCHEDULING_GATED: Final = "SchedulingGated"
GATED_MESSAGE: Final = "Scheduling is blocked due to non-empty scheduling gates"
#: YuniKorn's reason on the pods of an application the core refused (they are marked Failed).
APPLICATION_REJECTED: Final = "ApplicationRejected"
#: Pod events waiting to be written; beyond it new ones are dropped (and counted), as
#: kube-scheduler's broadcaster drops when its queue is full: an event is not worth stalling
#: a binding for.
EVENT_QUEUE_MAX: Final = 10_000
#: Settings the shim registers with: the core's request events are what tells a pod why it
#: waits (they are off for other RMs by default).
DEFAULT_EXTRA_CONFIG: Final = {"service.event.requestEventsEnabled": "true"}
#: The ConfigMaps holding the configuration, the first one found wins (YuniKorn's name is
#: accepted so a YuniKorn user changes nothing): ``queues.yaml`` is the queue configuration,
#: every other key a setting (``service.event.*``, ...).
CONFIG_MAP_NAMES: Final = ("pyscheduler-configs", "yunikorn-configs")
QUEUES_KEY: Final = "queues.yaml"
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
PRIORITY_CLASSES_PATH: Final = "/apis/scheduling.k8s.io/v1/priorityclasses"
#: Namespaces are followed for their labels (pod affinity terms' ``namespaceSelector``).
NAMESPACES_PATH: Final = "/api/v1/namespaces"
#: Threads for the shim's other writes: placeholder pods created, victims and placeholders
#: deleted, a failed gang's pods marked failed, and asks the core's callbacks release.
WORKERS: Final = 4
#: The core's releases the shim acts on by deleting the pod, and confirms once it is gone.
_ENDED_BY_CORE: Final = frozenset({si.TerminationType.PREEMPTED_BY_SCHEDULER,
                                   si.TerminationType.PLACEHOLDER_REPLACED, si.TerminationType.TIMEOUT})


def _pending_reason(message: str) -> bool:
    return message.startswith("Unschedulable request") or (
        message.startswith("Request '") and ("does not fit in queue" in message or "exceeds the available" in message))


@dataclass(frozen=True)
class ShimOptions:
    #: ``spec.schedulerName`` values the shim takes pods for.
    scheduler_names: tuple[str, ...] = DEFAULT_SCHEDULER_NAMES
    #: The name in the events the shim writes (kube-scheduler's ``reportingController``).
    component: str = "pyscheduler"
    rm_id: str = RM_ID
    partition: str = "default"
    #: Threads binding pods: a binding is a round trip to the API server (10-50 ms when it is
    #: busy), so the pool, not the core, sets the rate (kube-scheduler binds each pod in a
    #: goroutine of its own).
    binders: int = 16
    #: Threads writing the pods' events (``Scheduled``, ``FailedScheduling``), apart from the
    #: binders, as kube-scheduler's event broadcaster does.
    event_writers: int = 2
    #: Threads writing pending pods' ``PodScheduled=False`` conditions (coalesced per pod:
    #: :mod:`.status_writer`), so a burst of pending pods never waits behind the core's events.
    status_writers: int = 2
    #: Seconds a watch lasts before the server ends it (it is started again at once).
    watch_timeout: int = 300
    #: The namespace of the configuration's ConfigMap (:data:`CONFIG_MAP_NAMES`).
    namespace: str = "default"
    #: Seconds between looks for a resource the shim follows when it exists (CustomNodeResources,
    #: PriorityClasses) while it does not, or the shim may not list it.
    optional_recheck: float = 30.0


@dataclass
class _Pod:
    view: PodView
    raw: Mapping[str, Any]
    #: ``ask``: pending in the core; ``allocated``: the core placed it (binding or bound);
    #: ``released``: the core ended its allocation (its node went away); ``foreign``: another
    #: scheduler's pod on a node; ``held``: ours, but not schedulable as it is (its problem is
    #: on the pod); ``gated``: ours, its ``spec.schedulingGates`` not empty yet (no ask).
    state: str
    node: str = ""
    ports: frozenset[HostPort] = frozenset()
    #: Its required inter-pod affinity and spread constraints (:mod:`.cluster_index`).
    constraints: PodConstraints | None = None
    #: The last reason written to the pod (so it is written once).
    reason: str = ""
    #: Bindings of it that failed (the next ask waits longer each time).
    failures: int = 0
    #: The core ended its allocation (preempted it, replaced the placeholder, or a gang's
    #: timeout): the pod is being deleted, and its end confirms the release with this type.
    ending: si.TerminationType | None = None


@dataclass
class _Gang:
    """A gang application (its first pod had task groups) as the shim follows it: while it is
    ``reserving`` its placeholder pods are placed and its other pods wait (state ``waiting``, no
    ask); ``running`` once the core runs it (every placeholder placed) or resumed it after a
    Soft timeout: its pods ask and replace the placeholders; ``failed`` after a Hard timeout:
    its waiting pods are marked failed."""

    spec: GangSpec
    state: str = "reserving"
    resuming: bool = False


@dataclass(frozen=True)
class _ConfigSource:
    """The configuration a ConfigMap holds, and the ConfigMap (for its events)."""

    #: (queues.yaml, every other key as a setting)
    content: tuple[str, dict[str, str]]
    reference: dict[str, str]


@dataclass
class _Counts:
    bound: int = 0
    bind_failures: int = 0
    relists: int = 0
    unschedulable_marked: int = 0
    config_reloads: int = 0
    config_rejected: int = 0
    events_dropped: int = 0
    placeholders_created: int = 0
    deleted: int = 0
    pods_failed: int = 0


class KubeShim:
    def __init__(self, proxy: Any, api: KubeApi, config_text: str, options: ShimOptions | None = None,
                 *, clock: Callable[[], float] = time.time) -> None:
        self.proxy = proxy
        self.api = api
        self.config_text = config_text
        self.options = options or ShimOptions()
        self.counts = _Counts()
        self._clock = clock
        self._lock = threading.Lock()
        self._pods: dict[str, _Pod] = {}
        self._nodes: dict[str, NodeView] = {}
        #: Node name -> what its CustomNodeResource says (the node reporter agents'), and the
        #: node as the predicates see it (its labels with the reported ones under them).
        self._reported: dict[str, ReportedNode] = {}
        self._checked_nodes: dict[str, NodeView] = {}
        #: The pods asking for host ports (a pod's spec does not change): the predicates compare
        #: a pod's ports with these only, not with every pod (that scan was most of the shim's
        #: time with 10,000 pods).
        self._port_pods: set[str] = set()
        #: The pods on nodes and the inter-pod constraints of ours, counted for the predicates
        #: (InterPodAffinity, PodTopologySpread); guarded by ``_lock``.
        self._index = ClusterIndex(node_passes=inclusion_passes)
        #: Application id -> the uids of its pods known to the core.
        self._apps: dict[str, set[str]] = {}
        #: Applications the core refused: their reason, and their pods (held, the reason on
        #: them); forgotten with their last pod, so a pod arriving meanwhile is held at once.
        self._rejected_apps: dict[str, tuple[str, set[str]]] = {}
        #: Gang applications by id (see :class:`_Gang`).
        self._gangs: dict[str, _Gang] = {}
        #: PriorityClass name -> its ``allow-preemption`` annotation (None: it has none).
        self._priority_classes: dict[str, bool | None] = {}
        self._work = concurrent.futures.ThreadPoolExecutor(WORKERS, thread_name_prefix="k8s-work")
        #: Optional resources found missing (said once until they are back).
        self._absent: set[str] = set()
        self._stop = threading.Event()
        #: Volumes (issue 30): claims, volumes, classes, CSINode limits and the pods with claims
        #: on nodes, for the volume filters; guarded by ``_lock`` (:mod:`.volumes`).
        self._volumes = VolumeState()
        self._volume_binder = VolumeBinder(api, self._volumes, self._lock, self._stop)
        self._bindings: queue.Queue[tuple[str, str] | None] = queue.Queue()
        self._events: queue.Queue[tuple[dict[str, str], str, str, str]] = queue.Queue(maxsize=EVENT_QUEUE_MAX)
        #: Pending pods' conditions to write: uid -> (message, condition reason), newest wins.
        self._conditions: CoalescingWriter[tuple[str, str]] = CoalescingWriter(
            self._write_condition, name="k8s-conditions")
        #: The ConfigMap's queues.yaml and settings last applied (None: the service's own).
        self._applied: tuple[str, dict[str, str]] | None = None
        self._threads: list[threading.Thread] = []
        self.synced = threading.Event()

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        """Registers with the core, recovers the cluster's state, and starts following it.
        Raises :class:`ConfigError` when the ConfigMap's configuration is invalid (said on the
        ConfigMap as an ``InvalidConfiguration`` event; nothing was started)."""
        maps, map_version = self.api.list(self._config_maps_path)
        found = self._configuration_of(maps)
        config, extra = found.content if found is not None else (self.config_text, {})
        try:
            self.proxy.register_resource_manager(si.RegisterResourceManagerRequest(
                rm_id=self.options.rm_id, policy_group="queues", config=config,
                extra_config={**DEFAULT_EXTRA_CONFIG, **extra}), self)
        except ConfigError as exc:
            if found is None:
                raise
            self.counts.config_rejected += 1
            self._write_event(found.reference, "Warning", "InvalidConfiguration",
                              f"configuration refused, nothing is scheduled until it is fixed: {exc}")
            raise ConfigError(f"ConfigMap {self.options.namespace}/{found.reference['name']}: {exc}") from exc
        self._applied = found.content if found is not None else None
        node_version = self._relist_nodes()
        reported_version = self._relist_reported()
        classes_version = self._relist_priority_classes()
        namespaces_version = self._relist_namespaces()
        storage_versions = {kind: self._relist_storage(kind) for kind in STORAGE_PATHS}  # volumes
        pod_version = self._relist_pods()
        self.synced.set()
        watches: list[tuple[str, tuple[Any, ...]]] = [
            ("nodes", ("/api/v1/nodes", node_version, self._on_node, self._relist_nodes)),
            ("pods", ("/api/v1/pods", pod_version, self._on_pod, self._relist_pods)),
            ("configmaps", (self._config_maps_path, map_version, self._on_config_map, self._relist_config_maps))]
        # Optional: followed while they exist; absent (None), looked for again now and then.
        watches.append(("customnoderesources", (CNR_PATH, reported_version, self._on_reported,
                                                self._relist_reported)))
        watches.append(("priorityclasses", (PRIORITY_CLASSES_PATH, classes_version, self._on_priority_class,
                                            self._relist_priority_classes)))
        watches.append(("namespaces", (NAMESPACES_PATH, namespaces_version, self._on_namespace,
                                       self._relist_namespaces)))
        for kind, path in STORAGE_PATHS.items():  # volumes
            watches.append((kind, (path, storage_versions[kind], functools.partial(self._on_storage, kind),
                                   functools.partial(self._relist_storage, kind))))
        for name, args in watches:
            self._spawn(f"k8s-watch-{name}", self._follow, *args)
        for n in range(self.options.binders):
            self._spawn(f"k8s-binder-{n}", self._bind_loop)
        for n in range(self.options.event_writers):
            self._spawn(f"k8s-events-{n}", self._event_loop)
        self._conditions.start(self.options.status_writers)

    def _background(self, task: Callable[..., None], *args: Any) -> None:
        """Runs ``task`` on a worker thread; what it raises is logged (a pool would keep it
        silently in a future nobody reads)."""
        def run() -> None:
            try:
                task(*args)
            except Exception:
                log.exception("%s failed", getattr(task, "__name__", task))

        try:
            self._work.submit(run)
        except RuntimeError:  # the pool is shut down: the shim is stopping
            pass

    def _spawn(self, name: str, target: Callable[..., None], *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        self.api.close_watches()
        for _ in range(self.options.binders):
            self._bindings.put(None)
        for thread in self._threads:
            thread.join(timeout=5.0)
        self._conditions.stop()
        self._work.shutdown(wait=False, cancel_futures=True)

    # -- following the cluster ------------------------------------------------------------------

    def _follow(self, path: str, version: str | None, handle: Callable[[str, dict[str, Any]], None],
                relist: Callable[[], str | None]) -> None:
        """Follows a watch from ``version``, listing again when it expires. A resource the
        shim can do without (its list gives None: no such resource, or not allowed) is looked
        for again every ``optional_recheck`` seconds (a CRD installed after the shim
        started, or deleted and installed again, is followed from then on)."""
        while not self._stop.is_set():
            if version is None:
                if self._stop.wait(self.options.optional_recheck):
                    return
                version = self._retrying(relist)
                continue
            try:
                for kind, obj in self.api.watch(path, version, timeout_seconds=self.options.watch_timeout,
                                                stop=self._stop):
                    version = str((obj.get("metadata") or {}).get("resourceVersion", version))
                    if kind != "BOOKMARK":
                        handle(kind, obj)
            except WatchExpired:
                log.info("watch %s expired: listing again", path)
                version = self._retrying(relist)
            except KubeApiError as exc:
                if self._stop.is_set():
                    return
                if exc.status not in (403, 404):
                    log.warning("watch %s failed; watching again in %g s: %s", path, RETRY_DELAY, exc)
                    self._stop.wait(RETRY_DELAY)
                    continue
                log.info("watch %s: %s: listing again", path, exc)  # its CRD went, or the role changed
                version = self._retrying(relist)
            except Exception as exc:  # a broken connection or answer: wait, then watch again
                if self._stop.is_set():
                    return
                # One line per failure: an API server away for a while is not worth a traceback a
                # second (the traceback goes to the debug log).
                log.warning("watch %s failed; watching again in %g s: %s", path, RETRY_DELAY, _brief(exc))
                log.debug("watch %s failed", path, exc_info=True)
                self._stop.wait(RETRY_DELAY)

    def _retrying(self, relist: Callable[[], str | None]) -> str | None:
        while not self._stop.is_set():
            try:
                self.counts.relists += 1
                return relist()
            except Exception as exc:
                log.warning("listing failed; again in %g s: %s", RETRY_DELAY, _brief(exc))
                log.debug("listing failed", exc_info=True)
                self._stop.wait(RETRY_DELAY)
        return ""

    def _relist_nodes(self) -> str:
        items, version = self.api.list("/api/v1/nodes")
        present = {str((n.get("metadata") or {}).get("name", "")) for n in items}
        for item in items:
            self._on_node("ADDED", item)
        with self._lock:
            gone = [name for name in self._nodes if name not in present]
        for name in gone:
            self._on_node("DELETED", {"metadata": {"name": name}})
        return version

    def _optional_list(self, path: str, what: str) -> tuple[list[dict[str, Any]], str] | None:
        """A list the shim can do without: None when the API server has no such resource (404)
        or the shim's role may not list it (403), said in the log."""
        try:
            listed = self.api.list(path)
        except KubeApiError as exc:
            if exc.status in (403, 404):
                if path not in self._absent:
                    self._absent.add(path)
                    log.warning("%s not followed (%s), looked for again every %g s: %s", what,
                                "no such resource" if exc.status == 404 else "the shim's role may not list them",
                                self.options.optional_recheck, exc)
                return None
            raise
        if path in self._absent:
            self._absent.discard(path)
            log.info("%s followed from now on", what)
        return listed

    def _relist_priority_classes(self) -> str | None:
        listed = self._optional_list(PRIORITY_CLASSES_PATH, "PriorityClasses (their allow-preemption annotation)")
        if listed is None:
            return None
        items, version = listed
        classes = {str((c.get("metadata") or {}).get("name", "")):
                   allow_preemption_of((c.get("metadata") or {}).get("annotations")) for c in items}
        with self._lock:
            self._priority_classes = classes
        return version

    def _on_priority_class(self, kind: str, priority_class: dict[str, Any]) -> None:
        meta = priority_class.get("metadata") or {}
        with self._lock:
            if kind == "DELETED":
                self._priority_classes.pop(str(meta.get("name", "")), None)
            else:
                self._priority_classes[str(meta.get("name", ""))] = allow_preemption_of(meta.get("annotations"))

    def _relist_namespaces(self) -> str | None:
        """Lists the namespaces for their labels; None when the shim may not (terms selecting
        namespaces by label then see only the namespaces they name)."""
        listed = self._optional_list(NAMESPACES_PATH, "Namespaces (their labels, for namespaceSelector)")
        if listed is None:
            return None
        items, version = listed
        present = {str((n.get("metadata") or {}).get("name", "")) for n in items}
        with self._lock:
            for name in [name for name in self._index.namespaces if name not in present]:
                self._index.set_namespace(name, None)
        for item in items:
            self._on_namespace("ADDED", item)
        return version

    def _on_namespace(self, kind: str, namespace: dict[str, Any]) -> None:
        meta = namespace.get("metadata") or {}
        labels = meta.get("labels") or {}
        with self._lock:
            self._index.set_namespace(str(meta.get("name", "")), None if kind == "DELETED" else
                                      {str(k): str(v) for k, v in labels.items()})

    # -- volumes (issue 30: VolumeBinding, VolumeRestrictions, VolumeZone, NodeVolumeLimits) -----

    def _relist_storage(self, kind: str) -> str | None:
        """Lists one kind of :data:`~.volumes.STORAGE_PATHS` into the volume state; None when the
        shim may not (without claims, volumes and classes the volume filters are off)."""
        listed = self._optional_list(STORAGE_PATHS[kind], f"{kind} (the volume filters)")
        with self._lock:
            if listed is None:
                self._volumes.unfollow(kind)
                return None
            self._volumes.replace(kind, listed[0])
        return listed[1]

    def _on_storage(self, kind: str, event: str, obj: dict[str, Any]) -> None:
        with self._lock:
            self._volumes.update(kind, event, obj)

    def _relist_reported(self) -> str | None:
        """Lists the CustomNodeResources; None when there are none to follow (no CRD: no node
        reporters on this cluster, or the shim's role lacks them)."""
        listed = self._optional_list(CNR_PATH, "CustomNodeResources (the node reporters')")
        if listed is None:
            return None
        items, version = listed
        present = {str((c.get("metadata") or {}).get("name", "")) for c in items}
        with self._lock:
            gone = [name for name in self._reported if name not in present]
        for name in gone:
            self._on_reported("DELETED", {"metadata": {"name": name}})
        for item in items:
            self._on_reported("ADDED", item)
        return version

    def _relist_pods(self) -> str:
        items, version = self.api.list("/api/v1/pods")
        present = {str((p.get("metadata") or {}).get("uid", "")) for p in items}
        with self._lock:
            gone = [record.raw for uid, record in self._pods.items() if uid not in present]
        for raw in gone:
            self._on_pod("DELETED", dict(raw))
        # Bound pods first: an application that already runs is recovered from its bound pods,
        # so a pending pod of it never makes it a new gang (no second set of placeholders).
        for item in sorted(items, key=lambda pod: not (pod.get("spec") or {}).get("nodeName")):
            self._on_pod("ADDED", item)
        return version

    # -- the configuration ----------------------------------------------------------------------

    @property
    def _config_maps_path(self) -> str:
        return f"/api/v1/namespaces/{self.options.namespace}/configmaps"

    def _configuration_of(self, maps: list[dict[str, Any]]) -> _ConfigSource | None:
        """The first ConfigMap of :data:`CONFIG_MAP_NAMES` present: its queues.yaml and settings."""
        by_name = {str((m.get("metadata") or {}).get("name", "")): m for m in maps}
        for name in CONFIG_MAP_NAMES:
            found = by_name.get(name)
            if found is not None:
                data = {str(k): str(v) for k, v in (found.get("data") or {}).items()}
                reference = {"kind": "ConfigMap", "namespace": self.options.namespace, "name": name,
                             "uid": str((found.get("metadata") or {}).get("uid", "")), "apiVersion": "v1"}
                return _ConfigSource((data.pop(QUEUES_KEY, ""), data), reference)
        return None

    def _relist_config_maps(self) -> str:
        maps, version = self.api.list(self._config_maps_path)
        self._apply_configuration(maps)
        return version

    def _on_config_map(self, kind: str, config_map: dict[str, Any]) -> None:
        if str((config_map.get("metadata") or {}).get("name", "")) not in CONFIG_MAP_NAMES:
            return
        self._relist_config_maps()  # which one wins depends on the others: read them all

    def _apply_configuration(self, maps: list[dict[str, Any]]) -> None:
        """Reloads the core with the winning ConfigMap when it changed. An invalid one is
        refused by the core (the running configuration stays) and said on the ConfigMap as a
        warning event. A ConfigMap deleted leaves the running configuration as it is."""
        found = self._configuration_of(maps)
        if found is None or found.content == self._applied:
            return
        (config, extra), reference = found.content, found.reference
        try:
            self.proxy.update_configuration(si.UpdateConfigurationRequest(
                rm_id=self.options.rm_id, policy_group="queues", config=config,
                extra_config={**DEFAULT_EXTRA_CONFIG, **extra}))
        except ConfigError as exc:
            self.counts.config_rejected += 1
            self._applied = found.content  # said once; the next edit is tried again
            log.warning("configuration in ConfigMap %s refused: %s", reference["name"], exc)
            self._write_event(reference, "Warning", "InvalidConfiguration",
                              f"configuration refused, the running one stays: {exc}")
            return
        self._applied = found.content
        self.counts.config_reloads += 1
        self._write_event(reference, "Normal", "ConfigurationApplied", "queues.yaml and settings applied")

    # -- nodes ----------------------------------------------------------------------------------

    def _on_node(self, kind: str, node: dict[str, Any]) -> None:
        view = node_view(node)
        if not view.name:
            return
        with self._lock:
            known = self._nodes.get(view.name)
            reported = self._reported.get(view.name)
            if kind == "DELETED":
                self._nodes.pop(view.name, None)
                self._checked_nodes.pop(view.name, None)
                self._index.remove_node(view.name)
            else:
                self._nodes[view.name] = view
                checked = self._checked_nodes[view.name] = _as_checked(view, reported)
                self._index.set_node(checked)
        capacity = self._capacity(view, reported)
        infos: list[si.NodeInfo] = []
        if kind == "DELETED":
            if known is not None:
                infos.append(si.NodeInfo(node_id=view.name, action=si.NodeAction.DECOMISSION))
        elif known is None:
            action = si.NodeAction.CREATE if view.schedulable else si.NodeAction.CREATE_DRAIN
            infos.append(si.NodeInfo(node_id=view.name, action=action, attributes=view.attributes,
                                     schedulable_resource=capacity))
            if reported is not None:
                infos.append(self._reported_update(view.name, capacity, reported))
        else:
            if known.capacity != view.capacity or known.attributes != view.attributes:
                infos.append(si.NodeInfo(node_id=view.name, action=si.NodeAction.UPDATE, attributes=view.attributes,
                                         schedulable_resource=capacity))
            if known.schedulable != view.schedulable:
                infos.append(si.NodeInfo(node_id=view.name, action=si.NodeAction.DRAIN_TO_SCHEDULABLE
                                         if view.schedulable else si.NodeAction.DRAIN_NODE))
        for info in infos:
            self.proxy.update_node(si.NodeRequest(nodes=(info,), rm_id=self.options.rm_id))

    @staticmethod
    def _capacity(view: NodeView | None, reported: ReportedNode | None) -> Resource:
        """What pods may use on the node: the capacity its reporters give, else its allocatable."""
        if reported is not None and reported.facts.capacity is not None:
            return reported.facts.capacity
        return si_resource(view.capacity if view is not None else {})

    def _reported_update(self, name: str, capacity: Resource, reported: ReportedNode | None) -> si.NodeInfo:
        facts = reported.facts if reported is not None else None
        return si.NodeInfo(node_id=name, action=si.NodeAction.UPDATE, schedulable_resource=capacity,
                           reported_attributes=dict(facts.attributes) if facts is not None else {},
                           reported_occupied=facts.occupied if facts is not None and facts.occupied else Resource())

    def _on_reported(self, kind: str, cnr: dict[str, Any]) -> None:
        """A node's CustomNodeResource (written by its reporter agent): its attributes, occupied
        resources and capacity go to the core's node as the reported layer, its labels join the
        node's for the pods' node selectors. Deleted: the reported layer is emptied."""
        reported = reported_node(cnr) if kind != "DELETED" else None
        name = reported.name if reported is not None else str((cnr.get("metadata") or {}).get("name", ""))
        if not name:
            return
        if reported is not None and reported.rejected:
            log.warning("CustomNodeResource %s: left out: %s", name, "; ".join(reported.rejected))
        with self._lock:
            previous = self._reported.get(name)
            if reported is None:
                self._reported.pop(name, None)
            else:
                self._reported[name] = reported
            view = self._nodes.get(name)
            if view is not None:
                checked = self._checked_nodes[name] = _as_checked(view, reported)
                self._index.set_node(checked)
        unchanged = (previous.facts, previous.labels) if previous is not None else None
        if view is None or unchanged == ((reported.facts, reported.labels) if reported is not None else None):
            return  # no node yet (its creation sends it), or nothing changed
        self.proxy.update_node(si.NodeRequest(
            nodes=(self._reported_update(name, self._capacity(view, reported), reported),), rm_id=self.options.rm_id))

    # -- pods -----------------------------------------------------------------------------------

    def _on_pod(self, kind: str, pod: dict[str, Any]) -> None:
        view = pod_view(pod)
        if not view.uid:
            return
        if kind == "DELETED" or is_terminal(pod):
            self._pod_gone(view)
            return
        ours = view.scheduler_name in self.options.scheduler_names
        gated = ours and not view.node_name and _gated(pod)
        bound_elsewhere = False
        with self._lock:
            known = self._pods.get(view.uid)
            if known is not None and known.state == "gated" and not gated:
                del self._pods[view.uid]  # its last gate went: from here on a new pod of ours
                known = None
            if known is not None:
                known.raw = pod
                known.view = view
                bound_elsewhere = known.state == "ask" and bool(view.node_name)
                if bound_elsewhere:  # bound by someone else while it waited: an allocation there
                    known.state, known.node = "allocated", view.node_name
                if known.node and known.state in ("allocated", "foreign"):
                    self._index.place(_placed(known))  # its labels or deletion may have changed
                    self._volumes.place(view.uid, pod, known.node)
        if known is not None:
            if bound_elsewhere:
                self._withdraw_and_recover(view)
            return
        constraints, problem = _constraints_of(pod)
        if problem and ours and not view.problem and not view.node_name:
            view = replace(view, problem=f"pod {view.key}: {problem}")
        gang: GangSpec | None = None
        if ours and not view.problem and not view.node_name and not gated:
            try:
                gang = gang_of(pod)
            except GangError as exc:
                view = replace(view, problem=f"pod {view.key}: {exc}")
        with self._lock:
            if not ours and not view.node_name:
                return  # another scheduler's pending pod: nothing yet
            record = _Pod(view, pod, "foreign" if not ours else "allocated" if view.node_name else "ask",
                          node=view.node_name, ports=frozenset(host_ports(pod)), constraints=constraints)
            if gated:
                record.state = "gated"
            refused = self._rejected_apps.get(view.app_id) if ours and not view.problem and not gated else None
            if refused is not None:
                view = record.view = replace(view, problem=refused[0])
                refused[1].add(view.uid)
            if ours and view.problem:
                record.state = "held"
            self._pods[view.uid] = record
            if record.ports:
                self._port_pods.add(view.uid)
            if record.node:
                self._index.place(_placed(record))
                self._volumes.place(view.uid, pod, record.node)
            elif ours and constraints is not None and record.state != "held":
                self._index.track(view.uid, constraints)
            new_app = ours and record.state not in ("held", "gated") and view.app_id not in self._apps
            if ours and record.state not in ("held", "gated"):
                self._apps.setdefault(view.app_id, set()).add(view.uid)
            if new_app and gang is not None:
                self._gangs[view.app_id] = _Gang(gang)
            waiting_gang = self._gangs.get(view.app_id)
            if record.state == "ask" and not view.placeholder and waiting_gang is not None \
                    and waiting_gang.state != "running":
                record.state = "waiting"  # asks once its gang runs (or is marked failed with it)
        if record.state == "foreign":
            self._allocate(si.Allocation(allocation_key=view.uid, node_id=view.node_name,
                                         partition_name=self.options.partition,
                                         resource_per_alloc=si_resource(view.request),
                                         allocation_tags={si.FOREIGN: si.ALLOC_TYPE_DEFAULT}))
            return
        if record.state == "gated":
            self._mark_pending(view.uid, GATED_MESSAGE, SCHEDULING_GATED)
            return
        if record.state == "held":
            if refused is not None:
                self._background(self._fail_pods, [view.uid], APPLICATION_REJECTED, refused[0])
            else:
                self._mark_unschedulable(view.uid, view.problem)
            return
        if new_app:
            self._add_application(view, gang)
            if gang is not None and not view.placeholder:
                self._background(self._create_placeholders, view.app_id, gang, pod)
        if record.state == "waiting":
            if waiting_gang is not None and waiting_gang.state == "failed":
                self._background(self._fail_pods, [view.uid])
            return
        self._allocate(self._ask_of(view))

    def _add_application(self, view: PodView, gang: GangSpec | None) -> None:
        """The application of the pod, first of its application: a gang's asks the core for
        its placeholders' total and runs it once they are placed (:mod:`.gang`)."""
        self.proxy.update_application(si.ApplicationRequest(new=(si.AddApplicationRequest(
            application_id=view.app_id, queue_name=view.queue, partition_name=self.options.partition,
            ugi=si.UserGroupInformation(user=view.user, groups=view.groups),
            tags={si.KEY_NAMESPACE: view.namespace},
            placeholder_ask=si_resource(placeholder_ask(gang)) if gang is not None else None,
            gang_scheduling_style=gang.style if gang is not None else "",
            execution_timeout_milli_seconds=gang.timeout * 1000 if gang is not None else 0),),
            rm_id=self.options.rm_id))

    def _withdraw_and_recover(self, view: PodView) -> None:
        """A pending pod of ours bound by someone else: its ask goes, its allocation is recorded."""
        self._release(view.app_id, view.uid, si.TerminationType.STOPPED_BY_RM, "bound by another binder")
        self._allocate(self._ask_of(view))

    def _release(self, app_id: str, uid: str, termination: si.TerminationType, message: str) -> None:
        """One release sent to the core (``app_id`` empty: a foreign allocation)."""
        release = si.AllocationRelease(partition_name=self.options.partition, application_id=app_id,
                                       allocation_key=uid, termination_type=termination, message=message)
        self.proxy.update_allocation(si.AllocationRequest(
            releases=si.AllocationReleasesRequest(allocations_to_release=(release,)), rm_id=self.options.rm_id))

    def _target(self, uid: str) -> tuple[str, str] | None:
        """The (namespace, name) of a pod the shim knows, or None (gone, or the shim stopping)."""
        with self._lock:
            record = self._pods.get(uid)
            return None if record is None or self._stop.is_set() else (record.view.namespace, record.view.name)

    def _allocate(self, allocation: si.Allocation) -> None:
        self.proxy.update_allocation(si.AllocationRequest(allocations=(allocation,), rm_id=self.options.rm_id))

    def _pod_gone(self, view: PodView) -> None:
        """The pod ended or was deleted: its allocation is released (or its ask withdrawn); a
        release the core asked for (preemption, a placeholder replaced or timed out) is
        confirmed with the core's termination type. The last pod of an application removes it."""
        with self._lock:
            record = self._pods.pop(view.uid, None)
            self._port_pods.discard(view.uid)
            self._index.remove(view.uid)
            self._volumes.remove(view.uid)
            self._index.untrack(view.uid)
            self._conditions.discard(view.uid)  # its own lock, never held while taking ours
            if record is None:
                return
            app_left = False
            refused = self._rejected_apps.get(record.view.app_id)
            if refused is not None:
                refused[1].discard(view.uid)
                if not refused[1]:
                    del self._rejected_apps[record.view.app_id]
            if record.state in ("ask", "allocated", "released", "waiting"):
                members = self._apps.get(record.view.app_id)
                if members is not None:
                    members.discard(view.uid)
                    if not members:
                        del self._apps[record.view.app_id]
                        self._gangs.pop(record.view.app_id, None)
                        app_left = True
        if record.state not in ("held", "released", "waiting", "gated"):
            self._release("" if record.state == "foreign" else record.view.app_id, view.uid,
                          record.ending or si.TerminationType.STOPPED_BY_RM,
                          "pod deleted" if record.ending else "pod ended")
        if app_left:
            self._remove_application(record.view.app_id)

    def _remove_application(self, app_id: str) -> None:
        self.proxy.update_application(si.ApplicationRequest(remove=(si.RemoveApplicationRequest(
            application_id=app_id, partition_name=self.options.partition),), rm_id=self.options.rm_id))

    # -- binding --------------------------------------------------------------------------------

    def _bind_loop(self) -> None:
        while True:
            job = self._bindings.get()
            if job is None or self._stop.is_set():
                return
            uid, node = job
            target = self._target(uid)
            if target is None:
                continue  # gone meanwhile: its release has been sent
            try:
                self._volume_binder.prebind(uid, node)  # its claims bound first (PreBind)
                self.api.bind(target[0], target[1], node)
            except Exception as exc:  # gone, bound meanwhile, or the API server failed
                self.counts.bind_failures += 1
                log.warning("binding %s/%s to %s failed: %s", target[0], target[1], node, exc)
                self._release_failed_binding(uid, exc)
                continue
            self.counts.bound += 1
            self._event(target[0], target[1], uid, "Normal", "Scheduled",
                        f"Successfully assigned {target[0]}/{target[1]} to {node}")

    def _release_failed_binding(self, uid: str, error: Exception) -> None:
        """Gives the allocation's room back. A pod that is gone (404) or bound meanwhile (409)
        is the watch's to report; after any other failure the pod asks again."""
        with self._lock:
            record = self._pods.get(uid)
            if record is None:
                return
            record.state, record.node = "ask", ""
            self._index.remove(uid)
            self._volumes.remove(uid)  # what was assumed for its claims is given back
            view = record.view
        self._release(view.app_id, uid, si.TerminationType.STOPPED_BY_RM, f"binding failed: {error}")
        if isinstance(error, KubeApiError) and error.status in (404, 409):
            return
        with self._lock:
            record.failures += 1
            delay = min(RETRY_BACKOFF_MAX, RETRY_DELAY * 2 ** (record.failures - 1))
        timer = threading.Timer(delay, self._ask_again, args=(uid,))
        timer.daemon = True
        timer.start()

    def _ask_again(self, uid: str) -> None:
        """After a failed binding (and its backoff): the pod asks again if it still waits."""
        with self._lock:
            record = self._pods.get(uid)
            if record is None or record.state != "ask" or self._stop.is_set():
                return
            view = record.view
        self._allocate(self._ask_of(view))

    def _ask_of(self, view: PodView) -> si.Allocation:
        tags = {si.CREATION_TIME: str(view.created), si.KEY_NAMESPACE: view.namespace}
        if view.role:
            tags[ROLE_TAG] = view.role
        if view.history_key:
            tags[HISTORY_KEY_TAG] = view.history_key
        allow_self = view.allow_preemption
        with self._lock:
            if allow_self is None:
                allow_self = self._priority_classes.get(view.priority_class)
            record = self._pods.get(view.uid)
            if record is not None and record.constraints is not None and not record.constraints.preferences.empty:
                tags[si.TAG_SCORE_NODES] = "true"  # the core asks score_nodes for its candidates
        return si.Allocation(
            allocation_key=view.uid, application_id=view.app_id, partition_name=self.options.partition,
            node_id=view.node_name, resource_per_alloc=si_resource(view.request), priority=view.priority,
            allocation_tags=tags, placeholder=view.placeholder, task_group_name=view.task_group,
            preemption_policy=si.PreemptionPolicy(allow_preempt_self=allow_self is not False,
                                                  allow_preempt_other=view.may_preempt))

    # -- pod conditions and events ----------------------------------------------------------------

    def _mark_unschedulable(self, uid: str, reason: str) -> None:
        self._mark_pending(uid, reason, UNSCHEDULABLE)

    def _mark_pending(self, uid: str, message: str, condition_reason: str) -> None:
        """``PodScheduled=False`` with ``condition_reason`` (``Unschedulable``: also a
        ``FailedScheduling`` event; ``SchedulingGated``: the condition only, as kube-scheduler
        writes them), once per message."""
        with self._lock:
            record = self._pods.get(uid)
            if record is None or record.reason == message or record.state == "allocated":
                return
            record.reason = message
        self._conditions.submit(uid, (message, condition_reason))

    def _write_condition(self, uid: str, pending: tuple[str, str]) -> None:
        """A status writer thread: the newest condition of a pod that still waits."""
        message, condition_reason = pending
        with self._lock:
            record = self._pods.get(uid)
            if record is None or record.state == "allocated" or self._stop.is_set():
                return
            namespace, name = record.view.namespace, record.view.name
        now = _rfc3339(self._clock())
        try:
            self.api.patch_pod_status(namespace, name, {"status": {"conditions": [{
                "type": "PodScheduled", "status": "False", "reason": condition_reason, "message": message,
                "lastTransitionTime": now}]}})
        except KubeApiError as exc:
            log.info("pod %s/%s: cannot set PodScheduled: %s", namespace, name, exc)
            return
        if condition_reason == UNSCHEDULABLE:
            self.counts.unschedulable_marked += 1
            self._event(namespace, name, uid, "Warning", "FailedScheduling", message)

    def _event(self, namespace: str, name: str, uid: str, kind: str, reason: str, message: str) -> None:
        """A pod's event, written by an event writer thread."""
        try:
            self._events.put_nowait(({"kind": "Pod", "namespace": namespace, "name": name, "uid": uid,
                                      "apiVersion": "v1"}, kind, reason, message))
        except queue.Full:
            self.counts.events_dropped += 1

    def _event_loop(self) -> None:
        while not self._stop.is_set():
            try:
                involved, kind, reason, message = self._events.get(timeout=0.5)
            except queue.Empty:
                continue
            self._write_event(involved, kind, reason, message)

    def _write_event(self, involved: Mapping[str, str], kind: str, reason: str, message: str) -> None:
        """A core/v1 Event on ``involved``, as kube-scheduler writes them."""
        stamp = _rfc3339(self._clock())
        namespace, name = involved["namespace"], involved["name"]
        try:
            self.api.create_event(namespace, {
                "metadata": {"generateName": f"{name}.", "namespace": namespace},
                "involvedObject": dict(involved), "type": kind, "reason": reason, "message": message[:1024],
                "count": 1, "firstTimestamp": stamp, "lastTimestamp": stamp,
                "source": {"component": self.options.component}, "reportingComponent": self.options.component,
            })
        except KubeApiError as exc:
            log.info("event on %s %s/%s not written: %s", involved["kind"], namespace, name, exc)

    # -- the core's callbacks ---------------------------------------------------------------------

    def update_allocation(self, response: si.AllocationResponse) -> None:
        for allocation in response.new:
            with self._lock:
                record = self._pods.get(allocation.allocation_key)
                if record is None or record.state != "ask":
                    continue
                record.state, record.node = "allocated", allocation.node_id
                # Counted at once: the core's next cycle checks the next pod against it.
                self._index.place(_placed(record))
                # Its unbound WaitForFirstConsumer claims' volumes chosen and assumed (Reserve).
                self._volumes.place(record.view.uid, record.raw, record.node,
                                    reserve=self._checked_nodes.get(record.node))
            self._bindings.put((allocation.allocation_key, allocation.node_id))
        for rejected in response.rejected_allocations:
            with self._lock:
                record = self._pods.get(rejected.allocation_key)
                held = record is not None and record.state == "held"
            if not held:  # a pod of a refused application keeps that reason
                self._mark_unschedulable(rejected.allocation_key, f"rejected by the scheduler: {rejected.reason}")
        for released in response.released:
            self._released_by_core(released)

    def _released_by_core(self, released: si.AllocationRelease) -> None:
        """The core ended an allocation or dropped an ask. Preempted, a placeholder replaced, or
        a gang's timeout: the pod is deleted (a victim gets a ``Preempted`` event saying by whom
        and why) and its end confirms the release. A gang's pending placeholder at the timeout
        goes too (the core dropped its ask: nothing to confirm); a member's pending ask dropped
        waits for what its gang does next. Anything else (its node was removed): the pod's end
        sends nothing more."""
        kind = released.termination_type
        delete = False
        with self._lock:
            record = self._pods.get(released.allocation_key)
            if record is None:
                return
            if record.state == "allocated" and kind in _ENDED_BY_CORE:
                record.ending, delete = kind, True
            elif record.state == "ask" and kind == si.TerminationType.TIMEOUT:
                record.state = "released" if record.view.placeholder else "waiting"
                delete = record.view.placeholder
            elif record.state == "allocated":
                record.state, record.node = "released", ""
                self._index.remove(record.view.uid)
                self._volumes.remove(record.view.uid)
            view = record.view
        if kind == si.TerminationType.PREEMPTED_BY_SCHEDULER and delete:
            self._event(view.namespace, view.name, view.uid, "Normal", "Preempted", self._preempted_message(released))
        if delete:
            self._background(self._delete_pod, view.uid, 0)

    def _preempted_message(self, released: si.AllocationRelease) -> str:
        """The core's reason, with the preempting pod named (the core names it by its uid)."""
        message = released.message or "preempted by the scheduler"
        last = message.split()[-1] if message.split() else ""
        with self._lock:
            preemptor = self._pods.get(last)
            if preemptor is not None and message.endswith(last):
                message = f"{message[:-len(last)]}{preemptor.view.key} (uid {last})"
        return f"Preempted by {self.options.component}: {message}"

    def _delete_pod(self, uid: str, attempt: int) -> None:
        """Deletes a pod the core ended (gracefully: the pod's own grace period). Retried with
        a growing pause while the API server fails, since the core waits for its end."""
        target = self._target(uid)
        if target is None:
            return
        try:
            self.api.delete_pod(target[0], target[1], uid=uid)
        except KubeApiError as exc:
            if exc.status in (404, 409):
                return  # gone already (or another pod took the name): the watch reports its end
            delay = min(RETRY_BACKOFF_MAX, RETRY_DELAY * 2 ** attempt)
            log.warning("deleting pod %s/%s failed (again in %g s): %s", target[0], target[1], delay, exc)
            timer = threading.Timer(delay, lambda: self._background(self._delete_pod, uid, attempt + 1))
            timer.daemon = True
            timer.start()
            return
        self.counts.deleted += 1

    def _create_placeholders(self, app_id: str, gang: GangSpec, owner: Mapping[str, Any]) -> None:
        """Creates a gang's placeholder pods (:func:`.gang.placeholder_pods`); one that exists
        already (a restart made them before) is left as it is."""
        view = pod_view(owner)
        with self._lock:
            if app_id not in self._gangs:
                return  # the core refused the application, or it ended already
        created = 0
        for body in placeholder_pods(gang, app_id, view.queue, owner):
            if self._stop.is_set():
                return
            try:
                self.api.create_pod(view.namespace, body)
                created += 1
            except KubeApiError as exc:
                if exc.status != 409:
                    log.warning("placeholder %s of application %s not created: %s", body["metadata"]["name"], app_id, exc)
                    self._event(view.namespace, view.name, view.uid, "Warning", "GangScheduling",
                                f"placeholder {body['metadata']['name']} not created: {exc}")
        self.counts.placeholders_created += created
        groups = ", ".join(f"{g.name} x{g.min_member}" for g in gang.groups)
        self._event(view.namespace, view.name, view.uid, "Normal", "GangScheduling",
                    f"{created} placeholder pods created for application {app_id} ({groups}), {gang.style} style")

    def _fail_pods(self, uids: list[str], reason: str = TIMEOUT_REASON, message: str = TIMEOUT_MESSAGE) -> None:
        """Pods that will never run are marked failed, as YuniKorn's shim does (phase
        ``Failed``): a gang's Hard timeout (reason ``ResourceReservationTimeout``), an
        application the core refused (reason ``ApplicationRejected``, the core's message)."""
        for uid in uids:
            target = self._target(uid)
            if target is None:
                continue
            try:
                self.api.patch_pod_status(target[0], target[1], {"status": {
                    "phase": "Failed", "reason": reason, "message": message[:1024]}})
            except KubeApiError as exc:
                log.warning("pod %s/%s: cannot mark it failed: %s", target[0], target[1], exc)
                continue
            self.counts.pods_failed += 1
            self._event(target[0], target[1], uid, "Warning", reason, message)

    def _gang_state(self, app_id: str, state: str) -> None:
        """Follows a gang application's state in the core (see :class:`_Gang`): Running, or
        Accepted again after Resuming (a Soft timeout), lets its waiting pods ask; Failed (a Hard
        timeout) marks them failed."""
        with self._lock:
            gang = self._gangs.get(app_id)
            if gang is None:
                return
            if state == "Resuming":
                gang.resuming = True
                return
            runs = state == "Running" or (state == "Accepted" and gang.resuming)
            if not (runs and gang.state == "reserving") and not (state == "Failed" and gang.state != "failed"):
                return
            gang.state = "running" if runs else "failed"
            waiting = [uid for uid in self._apps.get(app_id, ())
                       if (r := self._pods.get(uid)) is not None and r.state == "waiting"]
            if runs:
                for uid in waiting:
                    self._pods[uid].state = "ask"
            views = [self._pods[uid].view for uid in waiting]
        if runs:
            self._background(self._ask_all, views)
        else:
            self._background(self._fail_pods, waiting)

    def _ask_all(self, views: list[PodView]) -> None:
        if views:
            self.proxy.update_allocation(si.AllocationRequest(
                allocations=tuple(self._ask_of(view) for view in views), rm_id=self.options.rm_id))

    def update_application(self, response: si.ApplicationResponse) -> None:
        for updated in response.updated:
            self._gang_state(updated.application_id, updated.state)
        for rejected in response.rejected:
            reason = f"application {rejected.application_id} rejected: {rejected.reason}"
            with self._lock:
                uids = list(self._apps.pop(rejected.application_id, ()))
                self._gangs.pop(rejected.application_id, None)
                self._rejected_apps.setdefault(rejected.application_id, (reason, set()))[1].update(uids)
                for uid in uids:
                    record = self._pods.get(uid)
                    if record is not None:
                        record.state = "held"
                        self._index.untrack(uid)
            # As YuniKorn's shim: the pods fail (Job controllers and alerts act on that).
            self._background(self._fail_pods, uids, APPLICATION_REJECTED, reason)

    def update_node(self, response: si.NodeResponse) -> None:
        for rejected in response.rejected:
            log.warning("node %s rejected by the scheduler: %s", rejected.node_id, rejected.reason)

    def send_event(self, events: Sequence[EventRecord]) -> None:
        """The core's request events (every ~2 s): one saying why an ask stays pending (its
        queue's or user's room, or every node's predicates) marks the pod unschedulable with
        that message, as kube-scheduler does for a pod no node takes."""
        for event in events:
            if event.type is EventRecordType.REQUEST and _pending_reason(event.message):
                self._mark_unschedulable(event.object_id, event.message)

    def update_container_scheduling_state(self, request: si.UpdateContainerSchedulingStateRequest) -> None:
        if request.state in (si.ContainerSchedulingState.FAILED, si.ContainerSchedulingState.SKIPPED):
            self._mark_unschedulable(request.allocation_key, request.reason or "no node fits the pod")

    def predicates(self, args: si.PredicatesArgs) -> str | None:
        """The node filters of :mod:`.predicates`, then InterPodAffinity and PodTopologySpread
        against the cluster index (under the lock: the index is the cluster as of now)."""
        with self._lock:
            record = self._pods.get(args.allocation_key)
            node = self._checked_nodes.get(args.node_id)
            if record is None or node is None:
                return f"node {args.node_id} or pod {args.allocation_key} is not known to the shim"
            used = [] if not record.ports else [
                port for other in map(self._pods.__getitem__, self._port_pods)
                if other.node == args.node_id and other.view.uid != args.allocation_key for port in other.ports]
            raw = record.raw
            # A cordoned node is drained in the core too (as YuniKorn does), so this refuses
            # only in the moment between the cordon and the core hearing of it.
            reason = node_unschedulable(raw, node) or check_node(raw, node, used)
            if reason is None:
                reason = self._inter_pod(record, node)
            if reason is None:  # VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone
                reason = self._volumes.check(raw, node)
        return reason

    def _inter_pod(self, record: _Pod, node: NodeView, gone: frozenset[str] = frozenset()) -> str | None:
        """InterPodAffinity and PodTopologySpread (caller holds the lock)."""
        constraints = record.constraints or _NO_CONSTRAINTS
        reason = self._index.check(record.view.uid, constraints, record.raw, node, gone)
        return None if reason is None else f"node {node.name}: {reason}"

    def score_nodes(self, args: si.ScoreNodesArgs) -> list[int]:
        """The pod's preferred terms scored over the core's candidate nodes
        (:mod:`.preferences`); the core weighs them against its own node order."""
        with self._lock:
            record = self._pods.get(args.allocation_key)
            if record is None or record.constraints is None:
                return [0] * len(args.node_ids)
            nodes = [self._checked_nodes.get(n) or NodeView(n) for n in args.node_ids]
            return self._index.scores(record.view.uid, record.constraints, record.raw, nodes,
                                      node_selector_term_matches, tolerations_tolerate)

    def preemption_predicates(self, args: si.PreemptionPredicatesArgs) -> si.PreemptionPredicatesResponse:
        """Would the pod go on the node once the victims ``[0..i]`` are gone, for the first
        ``i`` from ``start_index`` on? (The core checks the resources.) A node's selector,
        affinity and taints do not depend on the victims; its host ports in use do, and so do
        inter-pod affinity and topology spread (the victims count as gone)."""
        keys = args.preempt_allocation_keys
        with self._lock:
            record = self._pods.get(args.allocation_key)
            node = self._checked_nodes.get(args.node_id)
            if record is None or node is None:
                return si.PreemptionPredicatesResponse(success=False)
            holders = [] if not record.ports else [
                (other.view.uid, other.ports) for other in map(self._pods.__getitem__, self._port_pods)
                if other.node == args.node_id and other.view.uid != args.allocation_key]
            raw = record.raw
            for index in range(max(0, args.start_index), len(keys)):
                gone = frozenset(keys[:index + 1])
                if node_unschedulable(raw, node) is None \
                        and check_node(raw, node, [port for uid, ports in holders if uid not in gone for port in ports]) is None \
                        and self._inter_pod(record, node, gone) is None \
                        and self._volumes.check(raw, node, gone) is None:
                    return si.PreemptionPredicatesResponse(success=True, index=index)
        return si.PreemptionPredicatesResponse(success=False)

    # -- for tests and the REST status -------------------------------------------------------------

    def pod_state(self, uid: str) -> str | None:
        with self._lock:
            record = self._pods.get(uid)
            return None if record is None else record.state

    def applications(self) -> dict[str, set[str]]:
        with self._lock:
            return {app: set(uids) for app, uids in self._apps.items()}


_NO_CONSTRAINTS: Final = PodConstraints("", {})


def _brief(exc: BaseException) -> str:
    """An exception as one line: its type and its first line."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__


def _gated(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("spec") or {}).get("schedulingGates"))


def _constraints_of(pod: Mapping[str, Any]) -> tuple[PodConstraints | None, str]:
    """The pod's inter-pod constraints, or why they cannot be read (a selector Kubernetes
    would refuse)."""
    try:
        return pod_constraints(pod), ""
    except SelectorError as exc:
        return None, str(exc)


def _placed(record: _Pod) -> PlacedPod:
    """The pod as the cluster index counts it on its node."""
    view = record.view
    labels = (record.raw.get("metadata") or {}).get("labels") or {}
    return PlacedPod(view.uid, view.namespace, labels, record.node, view.deleting,
                     record.constraints.anti_affinity if record.constraints is not None else ())


def _as_checked(view: NodeView, reported: ReportedNode | None) -> NodeView:
    """The node as the predicates check it: a label its reporters give counts unless the Node
    itself has that label (the Node's own labels win)."""
    if reported is None or not reported.labels:
        return view
    return replace(view, labels={**reported.labels, **view.labels})


def si_resource(quantities: Mapping[str, int]) -> Resource:
    return Resource(dict(quantities))


def _rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
