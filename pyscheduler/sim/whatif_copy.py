"""A copy of one live partition, as plain data, and its replay into a fresh core.

:func:`copy_partition` reads the live partition under its lock and nothing else: its nodes
(capacity, attributes, schedulable, occupied), its applications (queue, user, groups, tags, gang
settings, submission time), their allocations and pending asks (every field the scheduling
cycle and preemption read: priority, creation time, tags, preemption flags, placeholder, task
group) and the reservations. Resources are immutable and shared. Under the lock only what can
change is read (an allocation's size, node and preemption state, with a reference to it); the
fields fixed at an allocation's creation are read once the lock is released, so the lock is held
for a few attribute reads per allocation. The partition's configuration in force is taken
before the lock, from the context's configurations. The live core is never changed: the copy
only reads.

:func:`replay` builds a new core (its own :class:`ClusterContext`, event system, clock and
scheduler: none of the live one's objects) and plays the copy into it, through the RM
interface where the RM has a say (registration, applications) and through the partition's own
update path for what an RM would report (nodes, recovered allocations, asks, reservations),
which keeps every field exact (an ask's creation time to the nanosecond, a node's occupied
resources). The copy's clock starts at the oldest application's submission and steps to each
application's own, so the applications keep their order (FIFO and fair sorting read it), and
ends at the live clock's now.

The copy's core keeps no events (its emitters drop them) and reads its clock without a lock
(one thread drives it); Python's cyclic collector is paused while the copy and the replay make
their objects (they all live until the run ends: a collection meeting them would walk the whole
heap, the live state's too, for nothing), for at most the run's budget.

Applications are placed in the queue the live one is in (a ``provided`` rule with create, only
while the copy is replayed; the configured rules are back for the what-if application). Known
differences from the live state, which the answer states: the live RM's predicates and node
scores are not in the copy (every node passes), reservations keep their node but restart their
age, a gang member half-way through replacing its placeholder waits again, and role
histories start empty, and a queue's armed quota-change preemption starts again from the
configuration.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, NamedTuple

from pyscheduler.common.clock import ManualClock
from pyscheduler.common.errors import SchedulerRuntimeError
from pyscheduler.common.gc_pause import collector_paused
from pyscheduler.common.resources import Resource
from pyscheduler.config.queues import PartitionConfig
from pyscheduler.dao.errors import NotFound
from pyscheduler.objects.allocation import Allocation
from pyscheduler.objects.object_events import ObjectEvents
from pyscheduler.objects.partition import Partition, PartitionError
from pyscheduler.policies.placement import PlacementManager, RuleSpec
from pyscheduler.rmproxy.proxy import RMProxy
from pyscheduler.scheduler.config_apply import apply_partition_config
from pyscheduler.scheduler.context import ClusterContext, external_name
from pyscheduler.si import messages as si
from pyscheduler.si.callback import ResourceManagerCallback

__all__ = ["AllocCopy", "AppCopy", "BudgetExceeded", "NodeCopy", "PartitionCopy", "Replayed", "copy_partition", "replay"]

#: The copy's RM id (a new core: it names no live RM).
WHATIF_RM: str = "whatif"


class BudgetExceeded(SchedulerRuntimeError):
    """The wall-clock budget ran out while the copy was replayed."""


@dataclass(frozen=True, slots=True)
class NodeCopy:
    node_id: str
    total: Resource
    attributes: Mapping[str, str]
    schedulable: bool
    occupied: Resource


class AllocCopy(NamedTuple):
    """An allocation (``node_id`` set) or a pending ask of the live partition (a tuple: the
    copy makes one per allocation, and a tuple is the cheapest record to make)."""

    allocation_key: str
    application_id: str
    resource: Resource
    priority: int
    create_time_ns: int
    tags: Mapping[str, str]
    required_node: str
    placeholder: bool
    task_group_name: str
    originator: bool
    allow_preempt_self: bool
    allow_preempt_other: bool
    node_id: str = ""
    #: Preemption's memory of an ask: it made victims already, when it last passed the checks.
    triggered_preemption: bool = False
    preempt_check_time_ns: int = 0

    def build(self) -> Allocation:
        """A new core object with these fields (the copy's own)."""
        return Allocation(
            allocation_key=self.allocation_key, application_id=self.application_id, resource=self.resource,
            priority=self.priority, create_time_ns=self.create_time_ns, tags=dict(self.tags),
            required_node=self.required_node, placeholder=self.placeholder, task_group_name=self.task_group_name,
            originator=self.originator, allow_preempt_self=self.allow_preempt_self,
            allow_preempt_other=self.allow_preempt_other, node_id=self.node_id,
            triggered_preemption=self.triggered_preemption, preempt_check_time_ns=self.preempt_check_time_ns,
        )


@dataclass(frozen=True, slots=True)
class AppCopy:
    application_id: str
    queue_path: str
    user: str
    groups: tuple[str, ...]
    tags: Mapping[str, str]
    placeholder_ask: Resource | None
    gang_style: str
    execution_timeout_ms: int
    submission_time_ns: int


@dataclass(frozen=True, slots=True)
class ReservationCopy:
    allocation_key: str
    application_id: str
    node_id: str
    required: bool
    history: bool


@dataclass(frozen=True)
class PartitionCopy:
    """One live partition as plain data (see the module doc)."""

    name: str
    live_rm_id: str
    config: PartitionConfig
    now_ns: int
    native_node_ordering: bool | None
    #: The live RM has a predicates hook (its node filter), which the copy cannot run.
    predicates: bool
    nodes: tuple[NodeCopy, ...]
    apps: tuple[AppCopy, ...]
    allocations: tuple[AllocCopy, ...]
    asks: tuple[AllocCopy, ...]
    reservations: tuple[ReservationCopy, ...]
    #: Seconds the live partition's lock was held for the copy.
    lock_seconds: float = 0.0


def _live_config(ctx: ClusterContext, partition: Partition) -> PartitionConfig:
    """The configuration in force for the partition: its RM's policy group's."""
    configs = ctx.configurations()
    for rm in ctx.registered_rms():
        if rm.rm_id != partition.rm_id:
            continue
        found = configs.get(rm.policy_group)
        conf = found.partition(external_name(partition.name)) if found is not None else None
        if conf is not None:
            return conf
    raise NotFound(f"no configuration in force for partition {external_name(partition.name)}")


#: What is read of a live allocation under the lock: the object, and its fields that change
#: after creation (its size, its node, preemption's memory of it). The others (key, application,
#: priority, creation time, tags, required node, placeholder, task group, originator, preemption
#: flags) are set when the allocation is created and never written again: they are read from the
#: object once the lock is released, which keeps the lock's hold short.
_Taken = tuple[Allocation, Resource, str, bool, int]


def _take(alloc: Allocation) -> _Taken:
    return (alloc, alloc.resource, alloc.node_id, alloc.triggered_preemption, alloc.preempt_check_time_ns)


def _from_taken(taken: _Taken, *, as_ask: bool = False) -> AllocCopy:
    alloc, resource, node_id, triggered, checked = taken
    return AllocCopy(alloc.allocation_key, alloc.application_id, resource, alloc.priority, alloc.create_time_ns,
                     dict(alloc.tags) if alloc.tags else {}, alloc.required_node, alloc.placeholder,
                     alloc.task_group_name, alloc.originator, alloc.allow_preempt_self, alloc.allow_preempt_other,
                     "" if as_ask else node_id, triggered, checked)


def copy_partition(ctx: ClusterContext, partition: Partition) -> PartitionCopy:
    """The live partition as plain data, read under its lock (held for the copy only)."""
    # A burst of new objects (under the lock, then the records made of them): a collection
    # meeting it would walk the whole heap, the first time while the live scheduler waits for
    # the lock.
    with collector_paused():
        return _copy(ctx, partition)


def _copy(ctx: ClusterContext, partition: Partition) -> PartitionCopy:
    config = _live_config(ctx, partition)
    predicates = ctx.predicates_for(partition) is not None
    started = time.perf_counter()
    allocations: list[_Taken] = []
    members: list[_Taken] = []
    asks: list[_Taken] = []
    with partition.lock:
        now_ns = ctx.clock.now_ns()
        nodes = tuple(NodeCopy(n.node_id, n.total, dict(n.attributes), n.schedulable, n.occupied)
                      for n in partition.nodes.values())
        apps: list[AppCopy] = []
        for app in partition.applications.values():
            apps.append(AppCopy(
                app.app_id, app.queue.path if app.queue is not None else app.queue_name, app.user, tuple(app.groups),
                dict(app.tags), None if app.placeholder_ask.is_zero() else app.placeholder_ask, app.gang_style.value,
                app.execution_timeout_ms, app.submission_time_ns,
            ))
            for alloc in app.allocations.values():
                allocations.append(_take(alloc))
                member = alloc.replaced_by
                if member is not None:  # a member taking this placeholder's place: it waits again
                    members.append(_take(member))
            asks.extend(map(_take, app.asks.values()))
        reservations = tuple(ReservationCopy(r.allocation_key, r.app_id, r.node_id, r.required, r.history)
                             for r in partition.reservations.by_key.values())
    lock_seconds = time.perf_counter() - started
    return PartitionCopy(external_name(partition.name), partition.rm_id, config, now_ns, ctx.native_node_ordering,
                         predicates, nodes, tuple(apps), tuple(map(_from_taken, allocations)),
                         (*(_from_taken(m, as_ask=True) for m in members), *map(_from_taken, asks)), reservations,
                         lock_seconds)


@dataclass
class Replayed:
    """The fresh core the copy was played into."""

    clock: ManualClock
    context: ClusterContext
    proxy: RMProxy
    partition: Partition
    #: What could not be replayed (an application the placement refused, an allocation its node
    #: could not take): the answer lists them.
    problems: list[str]


#: The copy keeps no event history (nothing reads it; recording costs time).
_QUIET: Final = {"event.trackingEnabled": "false"}


def _minimal_config(name: str) -> str:
    # Only to create the partition through registration; the live configuration is applied next.
    return f"partitions:\n  - name: {name!r}\n    queues:\n      - name: root\n"


class _CopyClock(ManualClock):
    """The copy's clock: a manual clock read without its lock (only the thread that runs the
    copy reads or moves it, and the cycle reads it for every allocation)."""

    def now_ns(self) -> int:
        return self._now_ns

    def monotonic(self) -> float:
        return self._monotonic

    def advance_to_ns(self, now_ns: int) -> None:
        """Forward to exactly ``now_ns`` (nothing when it is past): the live times, to the
        nanosecond."""
        if now_ns > self._now_ns:
            self._monotonic += (now_ns - self._now_ns) / 1e9
            self._now_ns = now_ns


def _drop_event(*_args: object, **_kwargs: object) -> bool:
    """The copy's event sink: no one reads the copy's events."""
    return False


def replay(copy: PartitionCopy, rm: ResourceManagerCallback, check_budget: Callable[[], None]) -> Replayed:
    """A new core holding the copy, its RM ``rm`` (registered as :data:`WHATIF_RM`).
    ``check_budget`` is called every few hundred objects and raises :class:`BudgetExceeded`
    to stop. The caller stops the returned context when done."""
    submissions = [a.submission_time_ns for a in copy.apps]
    start_ns = min([copy.now_ns, *submissions])
    clock = _CopyClock(start_ns)
    context = ClusterContext(clock=clock, native_node_ordering=copy.native_node_ordering)
    # Before the partition exists: its objects emit into nothing (a what-if keeps no history).
    context.events = ObjectEvents(_drop_event)
    proxy = RMProxy(context)
    try:
        # Everything the replay makes lives until the run ends: a collection meeting it would
        # walk the whole heap (the live state's too) for nothing. The replay is bounded by the
        # run's budget.
        with collector_paused():
            return _fill(copy, rm, check_budget, clock, context, proxy)
    except BaseException:
        context.stop()
        raise


def _fill(copy: PartitionCopy, rm: ResourceManagerCallback, check_budget: Callable[[], None], clock: _CopyClock,
          context: ClusterContext, proxy: RMProxy) -> Replayed:
    problems: list[str] = []
    proxy.register_resource_manager(
        si.RegisterResourceManagerRequest(rm_id=WHATIF_RM, policy_group="whatif", version="whatif",
                                          config=_minimal_config(copy.config.name), extra_config=_QUIET), rm)
    partition = context.partition(WHATIF_RM, copy.config.name)
    assert partition is not None, "the copy's registration creates its partition"
    apply_partition_config(partition, copy.config)
    for index, node in enumerate(copy.nodes):
        if index % 512 == 511:
            check_budget()
        try:
            partition.add_node(node.node_id, node.total, dict(node.attributes), schedulable=node.schedulable,
                               occupied=None if node.occupied.is_zero() else node.occupied)
        except PartitionError as err:
            problems.append(f"node {node.node_id}: {err}")
    # The live applications go to the queue they are in; the configured rules come back after.
    configured = partition.placement
    partition.placement = PlacementManager([RuleSpec(name="provided", create=True)])
    rejected: set[str] = set()
    for index, app in enumerate(sorted(copy.apps, key=lambda a: (a.submission_time_ns, a.application_id))):
        if index % 256 == 255:
            check_budget()
        clock.advance_to_ns(app.submission_time_ns)
        before = len(partition.applications)
        proxy.update_application(si.ApplicationRequest(new=(si.AddApplicationRequest(
            application_id=app.application_id, queue_name=app.queue_path, partition_name=copy.config.name,
            ugi=si.UserGroupInformation(user=app.user or "nobody", groups=app.groups), tags=app.tags,
            placeholder_ask=app.placeholder_ask, gang_scheduling_style=app.gang_style,
            execution_timeout_milli_seconds=app.execution_timeout_ms,
        ),), rm_id=WHATIF_RM))
        if len(partition.applications) == before:
            rejected.add(app.application_id)
            problems.append(f"application {app.application_id}: could not be placed in {app.queue_path} in the copy")
    partition.placement = configured
    clock.advance_to_ns(copy.now_ns)
    for index, alloc in enumerate((*copy.allocations, *copy.asks)):
        if index % 512 == 511:
            check_budget()
        if alloc.application_id in rejected:
            continue
        try:
            partition.update_allocation(alloc.build())
        except PartitionError as err:
            problems.append(f"allocation {alloc.allocation_key}: {err}")
    with partition.lock:
        for reservation in copy.reservations:
            app_obj = partition.applications.get(reservation.application_id)
            ask = app_obj.asks.get(reservation.allocation_key) if app_obj is not None else None
            node_obj = partition.nodes.get(reservation.node_id)
            if ask is not None and node_obj is not None and \
                    partition.reservations.can_reserve(node_obj, reservation.required):
                partition.reservations.reserve(ask, node_obj, reservation.required, clock.monotonic(),
                                               history=reservation.history)
    context.send_outbox(partition)
    return Replayed(clock, context, proxy, partition, problems)

