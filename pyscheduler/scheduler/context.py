"""The cluster context: every partition of every registered RM, and the handling of RM messages.

Each message of an RM request (one application, one node, one allocation, one release) is
checked and applied on its own: a bad one is rejected with a reason through the RM callback
and the others go on. Nothing raises into the RM's thread except for an unknown RM id (the SI
returns an error for that) and a configuration that does not parse or validate, which is
rejected whole, leaving the old configuration in place.

Partition names are ``[rmID]name`` inside and plain outside (the RM never sees the prefix).

The RM is never called while :attr:`ClusterContext.lock` is held: what a change means for the RM
is collected in the partitions' outboxes under the locks and sent once they are released, so an
RM's callback may call back into the proxy, or wait for another thread that does (see _flush for
the one limit: a partition's deliveries go one at a time). The RM's callback methods are bound
once at registration; what a registration holds and how the outbox becomes SI messages is
:mod:`pyscheduler.scheduler.rm_delivery`.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pyscheduler.common.clock import Clock, SystemClock
from pyscheduler.common.errors import SchedulerError
from pyscheduler.common.resources import Resource
from pyscheduler.config.event_settings import EventSettings
from pyscheduler.config.loader import parse_and_validate
from pyscheduler.config.queues import SchedulerConfig
from pyscheduler.events.system import EventSystem
from pyscheduler.objects.allocation import Allocation
from pyscheduler.objects.application import Application, AppTimeouts
from pyscheduler.objects.node import NODE_PARTITION, Node
from pyscheduler.objects.object_events import ObjectEvents
from pyscheduler.objects.partition import Partition, PartitionError, Released
from pyscheduler.si import messages as si
from pyscheduler.si.callback import (
    NodeScoresFunc,
    PredicatesFunc,
    PreemptionPredicatesFunc,
    ResourceManagerCallback,
    bind_callbacks,
)
from pyscheduler.scheduler.config_apply import apply_partition_config, root_settings
from pyscheduler.scheduler.preemption.policies import default_preemptors
from pyscheduler.scheduler.preemption.preemptor import Preemptor
from pyscheduler.scheduler.read_pacing import ReadPacer
from pyscheduler.scheduler.rm_delivery import RegisteredRM, RMRegistration, deliver, deliver_outbox, external_name

if TYPE_CHECKING:
    from pyscheduler.policies.role_history.store import HistoryStore
    from pyscheduler.scheduler.health_checker import HealthChecker

__all__ = ["ClusterContext", "RegisteredRM", "UnknownRMError", "UpdateListener", "internal_name", "external_name"]

log = logging.getLogger(__name__)

DEFAULT_PARTITION = "default"
#: The message of the releases that confirm an RM's own release (YuniKorn's wording).
_RM_RELEASE = "allocation remove as per RM request"


#: Told that something may be schedulable now; called on the updating thread, so it must be quick.
UpdateListener = Callable[[], None]


class UnknownRMError(SchedulerError):
    """A request for an RM that never registered (the SI's one synchronous error)."""


def internal_name(rm_id: str, partition: str) -> str:
    return f"[{rm_id}]{(partition or DEFAULT_PARTITION).lower()}"


class ClusterContext:
    """All partitions, the registered RMs and the event system."""

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        event_system: EventSystem | None = None,
        timeouts: AppTimeouts | None = None,
        native_node_ordering: bool | None = None,
        role_history_store: HistoryStore | None = None,
        preemptors: Sequence[Preemptor] | None = None,
    ) -> None:
        self.clock = clock or SystemClock()
        #: The preemption policies (pyscheduler.scheduler.preemption.preemptor): the scheduling
        #: cycle offers them the asks it cannot place, the tick lets them act on time.
        self.preemptors: tuple[Preemptor, ...] = (
            tuple(preemptors) if preemptors is not None else default_preemptors())
        #: Where role histories are saved (a RoleHistorySaver writes them); a new partition
        #: starts with its newest readable saved history. None: histories live in memory only.
        self.role_history_store = role_history_store
        #: False: partitions order nodes in pure Python (for comparison benchmarks).
        self.native_node_ordering = native_node_ordering
        self.event_system = event_system if event_system is not None else EventSystem(clock=self.clock)
        self.events = ObjectEvents(self.event_system.add)
        self.timeouts = timeouts or AppTimeouts()
        self.partitions: dict[str, Partition] = {}
        self._rms: dict[str, RMRegistration] = {}
        self.configs: dict[str, SchedulerConfig] = {}
        self.lock = threading.RLock()
        #: REST answers yield to the scheduling loop while it is busy (read_pacing).
        self.read_pacer = ReadPacer()
        #: The health checker serving /ws/v1/scheduler/healthcheck (a new checker sets itself).
        self.health_checker: HealthChecker | None = None
        #: When this scheduler started (YuniKorn's /ws/v1/clusters ``startTime``), unix ns.
        self.start_time_ns = self.clock.now_ns()
        # Copy-on-write: notifying (every RM update and partition change) reads the tuple without a
        # lock; only adding and removing a listener, which are rare, take _listeners_lock.
        self._update_listeners: tuple[_Registration, ...] = ()
        self._listeners_lock = threading.Lock()
        # A removed partition's outbox is sent after context.lock is released, by which time a
        # re-registration has replaced its RM: what it collected still goes to the RM that owned it.
        self._removed_partition_rms: weakref.WeakKeyDictionary[Partition, RMRegistration] = weakref.WeakKeyDictionary()

    @property
    def uuid(self) -> str:
        return self.event_system.instance_uuid

    # -- read API (the REST layer's view; copies, taken under the context's lock) -------------------

    def registered_rms(self) -> list[RegisteredRM]:
        """Every registered RM, by id."""
        with self.lock:
            return [self._rms[rm_id].info() for rm_id in sorted(self._rms)]

    def configurations(self) -> dict[str, SchedulerConfig]:
        """The configuration in force for each policy group (immutable objects)."""
        with self.lock:
            return dict(self.configs)

    # -- update listeners ---------------------------------------------------------------------------

    def add_update_listener(self, listener: UpdateListener) -> Callable[[], None]:
        """Calls ``listener`` after every RM update and partition change (the scheduling loop wakes
        up on it), after the listeners added before it. Returns the function that removes it
        (calling it again does nothing). The same function added twice is called twice.

        Listeners run on the thread of the change, with no lock of the context held, and must be
        quick (setting an event); one that raises is logged and the others still run."""
        registration = _Registration(listener)
        with self._listeners_lock:
            self._update_listeners = (*self._update_listeners, registration)

        def remove() -> None:
            with self._listeners_lock:
                self._update_listeners = tuple(r for r in self._update_listeners if r is not registration)

        return remove

    def _notify_update(self) -> None:
        for registration in self._update_listeners:
            try:
                registration.listener()
            except Exception:  # a listener's bug must not fail the RM's update nor starve the others
                log.exception("update listener %r failed", registration.listener)

    # -- registration and configuration -----------------------------------------------------------

    def register_rm(self, request: si.RegisterResourceManagerRequest, callback: ResourceManagerCallback) -> None:
        """Registers an RM with its configuration; a re-registration removes the RM's old
        partitions first. Raises ConfigError for a bad configuration (nothing is changed)."""
        config, settings = self._parse(request.config, request.extra_config)
        # Bound before anything changes: an RM without a required method fails here, whole.
        calls = bind_callbacks(callback)
        removed: list[Partition] = []
        try:
            with self.lock:
                if request.rm_id in self._rms:
                    for name in [n for n, p in self.partitions.items() if p.rm_id == request.rm_id]:
                        removed.append(self._remove_partition(name))
                self._rms[request.rm_id] = RMRegistration(
                    request.rm_id,
                    callback,
                    calls,
                    request.policy_group,
                    version=request.version,
                    build_info=dict(request.build_info),
                    extra_config=dict(request.extra_config),
                )
                self.event_system.apply_settings(settings)
                self.event_system.set_callback(callback)
                self._apply_config(request.rm_id, request.policy_group, config, removed)
        finally:
            # Even if applying the new configuration failed, the old partitions are gone: the old
            # callback hears of their failed apps and released allocations (see _rm_of).
            self._flush_removed(removed)
        self._notify_update()

    def update_configuration(self, request: si.UpdateConfigurationRequest) -> None:
        """Reloads the configuration; raises ConfigError when it is invalid (the old stays)."""
        config, settings = self._parse(request.config, request.extra_config)
        removed: list[Partition] = []
        try:
            with self.lock:
                rm = self._rm(request.rm_id)
                self.event_system.apply_settings(settings)
                self._apply_config(request.rm_id, request.policy_group, config, removed)
                rm.extra_config = dict(request.extra_config)
        finally:
            self._flush_removed(removed)
        # The remaining partitions after the removed ones: the order the RM always heard them in.
        self._flush_all()
        self._notify_update()

    @staticmethod
    def _parse(text: str, extra: Mapping[str, str]) -> tuple[SchedulerConfig, EventSettings]:
        # Both are checked before anything is applied: a bad value in either rejects the whole.
        settings = EventSettings.from_config(dict(extra))
        return parse_and_validate(text), settings

    def _apply_config(self, rm_id: str, policy_group: str, config: SchedulerConfig, removed: list[Partition]) -> None:
        """Caller holds the lock. Partitions the configuration no longer has are removed and
        appended to ``removed``: the caller sends their outboxes once the lock is released."""
        rm = self._rms[rm_id]
        if rm.checksum and rm.checksum == config.checksum:
            return
        wanted = set()
        for conf in config.partitions:
            name = internal_name(rm_id, conf.name)
            wanted.add(name)
            partition = self.partitions.get(name)
            if partition is None:
                partition = Partition(
                    name,
                    rm_id,
                    root_settings(conf),
                    clock=self.clock,
                    events=self.events,
                    timeouts=self.timeouts,
                    native_node_ordering=self.native_node_ordering,
                )
                partition.on_change = self._notify_update
                if self.role_history_store is not None:
                    self._load_role_histories(partition, self.role_history_store)
                self.partitions[name] = partition
            apply_partition_config(partition, conf)
        for name in [n for n, p in self.partitions.items() if p.rm_id == rm_id and n not in wanted]:
            removed.append(self._remove_partition(name))
        rm.checksum = config.checksum
        rm.policy_group = policy_group
        self.configs[policy_group] = config

    def _load_role_histories(self, partition: Partition, store: HistoryStore) -> None:
        """The partition's newest readable saved role history; what the store could not use is
        a warning, never a failed start."""
        name = external_name(partition.name)
        result = store.load(name, self.clock.now_ns() // 1_000_000)
        for path, reason in result.skipped:
            log.warning("role history of partition %s: skipped %s: %s", name, path, reason)
        with partition.lock:
            loaded = partition.role_histories.restore(result.entries)
        if result.path:
            log.info("role history of partition %s: %d entries from %s (%d last used more than %.0f s ago "
                     "dropped, %d of unknown roles discarded)", name, loaded, result.path, result.aged_out,
                     store.max_age, result.unknown_roles)

    def _remove_partition(self, name: str) -> Partition:
        """Takes a partition out of the context, failing its applications and removing its nodes
        (which releases their allocations). Caller holds the lock, so nothing is sent here: the
        caller flushes the returned partition after releasing it."""
        partition = self.partitions[name]
        # Before the pop: a concurrent flush that no longer finds the partition finds its RM here.
        self._removed_partition_rms[partition] = self._rms[partition.rm_id]
        del self.partitions[name]
        # Its changes wake no one any more (nothing is left to schedule in it), and listeners must
        # not run under the context's lock; the caller notifies once the lock is released.
        partition.on_change = _ignore_change
        partition.fail_all("PartitionRemoved")
        for node_id in list(partition.nodes):
            partition.remove_node(node_id)
        return partition

    def _rm(self, rm_id: str) -> RMRegistration:
        rm = self._rms.get(rm_id)
        if rm is None:
            raise UnknownRMError(f"unknown resource manager {rm_id!r}: register it first")
        return rm

    def partition(self, rm_id: str, name: str) -> Partition | None:
        return self.partitions.get(internal_name(rm_id, name))

    # -- applications ------------------------------------------------------------------------------

    def update_application(self, request: si.ApplicationRequest) -> None:
        rm = self._rm(request.rm_id)
        response = _AppResponse()
        for add in request.new:
            # _guard calls both at once, in this iteration: the closures see this loop's item.
            self._guard(lambda: self._add_application(rm, add, response),
                        lambda reason: response.rejected.append(si.RejectedApplication(add.application_id, reason)))
        for remove in request.remove:
            self._guard(lambda: self._remove_application(rm, remove),
                        lambda reason: response.rejected.append(si.RejectedApplication(remove.application_id, reason)))
        self._send_app_response(rm, response)
        self._flush_all()
        self._notify_update()

    def _add_application(self, rm: RMRegistration, add: si.AddApplicationRequest, response: _AppResponse) -> None:
        _check(add.validate())
        partition = self._partition_for(rm.rm_id, add.partition_name)
        app = Application(
            add.application_id,
            partition.name,
            add.queue_name,
            add.ugi.user if add.ugi else "",
            add.ugi.groups if add.ugi else (),
            add.tags,
            clock=self.clock,
            events=self.events.app,
            notify=partition.outbox.add_update,
            timeouts=self.timeouts,
            placeholder_ask=add.placeholder_ask,
            execution_timeout_ms=add.execution_timeout_milli_seconds,
            gang_style=add.gang_scheduling_style,
        )
        partition.add_application(app)
        response.accepted.append(si.AcceptedApplication(add.application_id))

    def _remove_application(self, rm: RMRegistration, remove: si.RemoveApplicationRequest) -> None:
        _check(remove.validate())
        partition = self._partition_for(rm.rm_id, remove.partition_name)
        partition.remove_application(remove.application_id)

    def _partition_for(self, rm_id: str, name: str) -> Partition:
        partition = self.partition(rm_id, name)
        if partition is None:
            raise PartitionError(f"unknown partition {name or DEFAULT_PARTITION!r}")
        return partition

    # -- nodes -------------------------------------------------------------------------------------

    def update_node(self, request: si.NodeRequest) -> None:
        rm = self._rm(request.rm_id)
        accepted: list[si.AcceptedNode] = []
        rejected: list[si.RejectedNode] = []
        for info in request.nodes:
            def apply() -> None:
                if self._node_action(rm, info):
                    accepted.append(si.AcceptedNode(info.node_id))

            self._guard(apply, lambda reason: rejected.append(si.RejectedNode(info.node_id, reason)))
        if accepted or rejected:
            deliver(rm, rm.calls.update_node, si.NodeResponse(rejected=tuple(rejected), accepted=tuple(accepted)))
        self._flush_all()
        self._notify_update()

    def _node_action(self, rm: RMRegistration, info: si.NodeInfo) -> bool:
        """Applies one node action; True when the RM expects an "accepted" answer (CREATE)."""
        _check(info.validate())
        action = si.NodeAction(info.action)
        if action in (si.NodeAction.CREATE, si.NodeAction.CREATE_DRAIN):
            partition = self._partition_for(rm.rm_id, info.attributes.get(NODE_PARTITION, ""))
            partition.add_node(
                info.node_id,
                info.schedulable_resource or Resource(),
                dict(info.attributes),
                schedulable=action is si.NodeAction.CREATE,
            )
            return True
        partition, node = self._find_node(rm.rm_id, info.node_id)
        if action is si.NodeAction.UPDATE:
            partition.update_node(
                node.node_id,
                capacity=info.schedulable_resource,
                attributes=dict(info.attributes) if info.attributes else None,
                reported_attributes=info.reported_attributes,
                occupied=info.reported_occupied,
            )
        elif action is si.NodeAction.DRAIN_NODE:
            partition.set_node_schedulable(node.node_id, False)
        elif action is si.NodeAction.DRAIN_TO_SCHEDULABLE:
            partition.set_node_schedulable(node.node_id, True)
        elif action is si.NodeAction.DECOMISSION:
            partition.remove_node(node.node_id)
        else:
            raise PartitionError(f"node {info.node_id}: unsupported action {action.name}")
        return False

    def _find_node(self, rm_id: str, node_id: str) -> tuple[Partition, Node]:
        for partition in self._partitions_of(rm_id):
            node = partition.nodes.get(node_id)
            if node is not None:
                return partition, node
        raise PartitionError(f"unknown node {node_id}")

    def _partitions_of(self, rm_id: str) -> list[Partition]:
        with self.lock:
            return [p for p in self.partitions.values() if p.rm_id == rm_id]

    # -- asks, allocations and releases ------------------------------------------------------------

    def update_allocation(self, request: si.AllocationRequest) -> None:
        rm = self._rm(request.rm_id)
        rejected: list[si.RejectedAllocation] = []
        for alloc in request.allocations:
            self._guard(
                lambda: self._update_allocation(rm, alloc),
                lambda reason: rejected.append(si.RejectedAllocation(alloc.allocation_key, alloc.application_id, reason)),
            )
        releases = request.releases.allocations_to_release if request.releases else ()
        for release in releases:
            self._guard(
                lambda: self._release(rm, release),
                lambda reason: rejected.append(
                    si.RejectedAllocation(release.allocation_key, release.application_id, reason)
                ),
            )
        if rejected:
            deliver(rm, rm.calls.update_allocation, si.AllocationResponse(rejected_allocations=tuple(rejected)))
        self._flush_all()
        self._notify_update()

    def _update_allocation(self, rm: RMRegistration, msg: si.Allocation) -> None:
        _check(msg.validate())
        partition = self._partition_for(rm.rm_id, msg.partition_name)
        if msg.is_foreign:
            partition.add_foreign(msg.allocation_key, msg.node_id, msg.resource_per_alloc or Resource())
            return
        tags = dict(msg.allocation_tags)
        created = tags.get(si.CREATION_TIME, "")
        create_time_ns = int(created) * 1_000_000_000 if created.isdigit() else self.clock.now_ns()
        preemption = msg.preemption_policy
        alloc = Allocation(
            allocation_key=msg.allocation_key,
            application_id=msg.application_id,
            resource=msg.resource_per_alloc or Resource(),
            priority=msg.priority,
            create_time_ns=create_time_ns,
            tags=tags,
            required_node=si.required_node(tags),
            placeholder=msg.placeholder,
            task_group_name=msg.task_group_name,
            originator=msg.originator,
            allow_preempt_self=preemption.allow_preempt_self if preemption else True,
            allow_preempt_other=preemption.allow_preempt_other if preemption else False,
            node_id=msg.node_id,
        )
        partition.update_allocation(alloc)

    def _release(self, rm: RMRegistration, release: si.AllocationRelease) -> None:
        _check(release.validate())
        partition = self._partition_for(rm.rm_id, release.partition_name)
        if not release.application_id:
            partition.release_foreign(release.allocation_key)
            return
        released = partition.release(
            release.application_id, release.allocation_key, int(release.termination_type), release.message,
            failed=release.failed,
        )
        # YuniKorn answers an RM release with exactly the allocations it removed (STOPPED_BY_RM),
        # except when the RM only confirms a release the core started (TIMEOUT, PREEMPTED,
        # PLACEHOLDER_REPLACED):
        # echoing those back would make the RM release them twice.
        if release.termination_type not in (si.TerminationType.TIMEOUT, si.TerminationType.PREEMPTED_BY_SCHEDULER,
                                            si.TerminationType.PLACEHOLDER_REPLACED):
            with partition.lock:
                partition.outbox.released.extend(
                    Released(r.application_id, r.allocation_key, int(si.TerminationType.STOPPED_BY_RM), _RM_RELEASE)
                    for r in released
                )

    def commit_allocation(self, partition: Partition, app: Application, ask: Allocation, node: Node) -> None:
        """Places an ask on a node and tells the RM (outside the scheduling cycle: tests,
        tools). Raises PartitionError when the decision is stale (nothing changes)."""
        partition.commit_allocation(app, ask, node)
        self.notify_allocated(partition, ask)

    def notify_allocated(self, partition: Partition, ask: Allocation) -> None:
        """Tells the RM of a new allocation and of what else the partition collected. The
        commit put ``ask`` in the partition's outbox, so it is sent in order with the rest."""
        self._flush(partition)

    def send_outbox(self, partition: Partition) -> None:
        """Sends what the partition collected (releases a preemption made, for one)."""
        self._flush(partition)

    def predicates_for(self, partition: Partition) -> PredicatesFunc | None:
        rm = self._rms.get(partition.rm_id)
        return rm.calls.predicates if rm is not None else None

    def node_scores_for(self, partition: Partition) -> NodeScoresFunc | None:
        rm = self._rms.get(partition.rm_id)
        return rm.calls.node_scores if rm is not None else None

    def preemption_predicates_for(self, partition: Partition) -> PreemptionPredicatesFunc | None:
        rm = self._rms.get(partition.rm_id)
        return rm.calls.preemption_predicates if rm is not None else None

    # -- timers --------------------------------------------------------------------------------------

    def tick(self) -> None:
        """Fires due timers in every partition (the background loop calls it every second;
        tests call it after moving a manual clock)."""
        for partition in list(self.partitions.values()):
            partition.tick()
            for preemptor in self.preemptors:  # quota-change enforcement is due on time
                preemptor.on_tick(partition, self.clock.now_ns())
        self._flush_all()

    # -- plumbing --------------------------------------------------------------------------------------

    def _guard(self, apply: Callable[[], None], reject: Callable[[str], None]) -> None:
        """Runs one message's change; any failure becomes that message's rejection reason."""
        try:
            apply()
        except (PartitionError, SchedulerError, ValueError) as err:
            reject(str(err))
        except Exception as err:  # a bug must not reach the RM's thread: reject and log it
            log.exception("internal error while applying an RM message")
            reject(f"internal error: {err}")

    def _flush_removed(self, removed: list[Partition]) -> None:
        """Sends what partition removal collected, in removal order. Never under the context's
        lock: an RM whose callback calls back into the proxy, even from another thread it waits
        for, would block on that lock for ever."""
        for partition in removed:
            self._flush(partition)

    def _flush_all(self) -> None:
        for partition in list(self.partitions.values()):
            self._flush(partition)

    def _flush(self, partition: Partition) -> None:
        """Sends what the partition collected for its RM, outside of the partition's lock.

        Taking and sending happen under the outbox's (re-entrant) ``sending`` lock: deliveries
        keep the order of the changes even when threads flush at once, and a caller whose
        outcomes another thread took returns only once they were sent. An RM callback may call
        back into the core from the same thread; it must not wait for another thread's call that
        flushes this same partition.
        """
        outbox = partition.outbox
        with outbox.sending:
            with partition.lock:
                updates, allocated, released, states = outbox.take()
            rm = self._rm_of(partition)
            if rm is not None:
                deliver_outbox(rm, partition.name, updates, allocated, released, states)

    def _rm_of(self, partition: Partition) -> RMRegistration | None:
        """The RM a partition reports to: its RM's registration, or for a removed partition the
        registration that owned it (a re-registration replaced it before the flush)."""
        if self.partitions.get(partition.name) is not partition:
            owner = self._removed_partition_rms.get(partition)
            if owner is not None:
                return owner
        return self._rms.get(partition.rm_id)

    @staticmethod
    def _send_app_response(rm: RMRegistration, response: _AppResponse) -> None:
        if response.accepted or response.rejected:
            deliver(rm, rm.calls.update_application,
                    si.ApplicationResponse(rejected=tuple(response.rejected), accepted=tuple(response.accepted)))

    def stop(self) -> None:
        self.event_system.stop()


@dataclass(frozen=True, eq=False)
class _Registration:
    """One add_update_listener call: compared by identity, so removing it never removes another
    registration of the same function."""

    listener: UpdateListener


def _ignore_change() -> None:
    """The on_change of a removed partition."""


@dataclass
class _AppResponse:
    accepted: list[si.AcceptedApplication] = field(default_factory=list)
    rejected: list[si.RejectedApplication] = field(default_factory=list)


def _check(reason: str | None) -> None:
    """A message that is malformed on its own is rejected with its own reason."""
    if reason:
        raise PartitionError(reason)
