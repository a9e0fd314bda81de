"""Plain copies of the objects' values, taken under the partition's lock for the REST layer.

The lock model (:mod:`pyscheduler.objects.locking`) lets a REST read hold the partition's lock
only to copy what it needs: each ``*_view`` function below runs with the lock held and returns
immutable values (tuples, Resources, copied dicts) that the DAO builders turn into YuniKorn's
JSON after the lock is released. A view holds no reference to a mutable object of the graph,
so building the JSON never races with the scheduler.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from pyscheduler.common.resources import Resource
from pyscheduler.objects.application_state import AppState

if TYPE_CHECKING:
    from pyscheduler.objects.allocation import Allocation
    from pyscheduler.objects.application import Application
    from pyscheduler.objects.node import Node
    from pyscheduler.objects.partition import Partition

__all__ = ["AllocationView", "AppView", "NodeView", "allocation_view", "app_view", "node_view"]


class AllocationView(NamedTuple):
    """An ask's or allocation's values (YuniKorn's AllocationDAOInfo / AllocationAskDAOInfo)."""

    allocation_key: str
    application_id: str
    resource: Resource
    priority: int
    create_time_ns: int
    tags: dict[str, str]
    required_node: str
    placeholder: bool
    task_group_name: str
    originator: bool
    node_id: str
    allocated: bool
    allocation_time_ns: int
    #: The allocation log: (message, count, last occurrence ns or 0), in last-occurrence order.
    log: tuple[tuple[str, int, int], ...]
    #: A preemption victim; an ask that made victims.
    preempted: bool = False
    triggered_preemption: bool = False
    #: A real allocation that took a placeholder's place, and when that placeholder was asked for.
    placeholder_used: bool = False
    placeholder_create_time_ns: int = 0


def allocation_view(alloc: Allocation) -> AllocationView:
    """The caller holds the partition's lock."""
    times = alloc.alloc_log_time
    log = tuple((message, count, times.get(message, 0)) for message, count in alloc.alloc_log.items())
    return AllocationView(
        alloc.allocation_key,
        alloc.application_id,
        alloc.resource,
        alloc.priority,
        alloc.create_time_ns,
        dict(alloc.tags),
        alloc.required_node,
        alloc.placeholder,
        alloc.task_group_name,
        alloc.originator,
        alloc.node_id,
        alloc.allocated,
        alloc.allocation_time_ns,
        log,
        alloc.preempted,
        alloc.triggered_preemption,
        alloc.placeholder_used,
        alloc.placeholder_create_time_ns,
    )


class AppView(NamedTuple):
    """An application's values (YuniKorn's ApplicationDAOInfo)."""

    app_id: str
    partition: str
    queue_path: str
    user: str
    groups: tuple[str, ...]
    state: AppState
    rejected_message: str
    submission_time_ns: int
    state_log: tuple[tuple[AppState, int], ...]
    allocated: Resource
    max_allocated: Resource
    pending: Resource
    max_ask_priority: int | None
    #: Every ask in scheduling order (placed ones included), then the allocations by time.
    asks: tuple[AllocationView, ...]
    allocations: tuple[AllocationView, ...]
    reservations: tuple[str, ...]
    used_history: dict[str, dict[str, int]]
    preempted_history: dict[str, dict[str, int]]
    placeholder_history: dict[str, dict[str, int]]
    #: Gang scheduling: the placeholders allocated now (part of ``allocated``) and, per task
    #: group, (name, count, min resource, replaced, timed out).
    allocated_placeholder: Resource = Resource()
    placeholder_data: tuple[tuple[str, int, Resource, int, int], ...] = ()
    #: The member cluster the application is placed in ("": none; issue 33 level 2).
    member_cluster: str = ""


def app_view(partition: Partition, app: Application) -> AppView:
    """The caller holds the partition's lock."""
    queue = app.queue
    allocations = sorted(app.allocations.values(), key=lambda a: (a.allocation_time_ns, a.allocation_key))
    return AppView(
        app.app_id,
        app.partition,
        queue.path if queue is not None else app.queue_name,
        app.user,
        tuple(app.groups),
        app.state,
        app.rejected_message,
        app.submission_time_ns,
        tuple(app.state_log),
        app.allocated,
        app.max_allocated(),
        app.pending,
        app.max_ask_priority,
        tuple(allocation_view(ask) for ask in app.sorted_asks()),
        tuple(allocation_view(a) for a in allocations),
        tuple(sorted(r.allocation_key for r in partition.reservations.of_app(app.app_id))),
        app.used_history.as_map(),
        app.preempted_history.as_map(),
        app.placeholder_history.as_map(),
        app.allocated_placeholder,
        tuple((d.task_group_name, d.count, d.min_resource, d.replaced, d.timed_out)
              for _, d in sorted(app.placeholder_data.items())),
        app.member_cluster,
    )


class NodeView(NamedTuple):
    """A node's values (YuniKorn's NodeDAOInfo)."""

    node_id: str
    hostname: str
    rackname: str
    attributes: dict[str, str]
    total: Resource
    allocated: Resource
    occupied: Resource
    available: Resource
    allocations: tuple[AllocationView, ...]
    #: Foreign allocations on the node: (allocation key, resource), by key.
    foreign: tuple[tuple[str, Resource], ...]
    reservations: tuple[str, ...]
    schedulable: bool


def node_view(partition: Partition, node: Node) -> NodeView:
    """The caller holds the partition's lock."""
    node_id = node.node_id
    return NodeView(
        node_id,
        node.hostname,
        node.rackname,
        dict(node.attributes),
        node.total,
        node.allocated,
        node.occupied,
        node.available,
        tuple(allocation_view(a) for a in sorted(node.allocations.values(), key=lambda a: a.allocation_key)),
        tuple(sorted((key, res) for key, (on, res) in partition.foreign.items() if on == node_id)),
        tuple(sorted(node.reservations)),
        node.schedulable,
    )
