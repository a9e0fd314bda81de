"""Health checks: what YuniKorn's health checker reports, as plain functions the REST layer
(``/ws/v1/scheduler/healthcheck``) can serve.

:func:`check_health` reads each partition's state under the partition's lock (which guards its
whole object graph), never changes anything,
and returns a :class:`HealthResult`: ``healthy`` is true when every check succeeded.
:meth:`HealthResult.to_dao` gives YuniKorn's JSON shape (``SchedulerHealthDAOInfo``,
PascalCase keys, no tags)::

    {"Healthy": true, "HealthChecks": [{"Name", "Succeeded", "Description", "DiagnosisMessage"}]}

The first eleven checks are YuniKorn's (``pkg/scheduler/health_checker.go``), in its order and
with its names, descriptions and diagnosis wording (Go's ``%q``, ``%f`` and ``%v`` of slices):

 0. Scheduling errors: cycles that failed with an error (:attr:`Scheduler.errors`).
 1. Failed nodes: YuniKorn counts nodes whose reported allocations could not be added. Nodes
    here are added whole or rejected with a reason, so the count is always 0.
 2. Negative resources in the partitions (allocated = root's allocated, total).
 3. Negative resources in the nodes (allocated, available, capacity, occupied).
 4. A partition's allocated resource == the sum of its nodes' allocated resources.
 5. A partition's total resource == the sum of its node capacities.
 6. Node capacity == allocated + occupied + available.
 7. Node capacity >= allocated, per type.
 8. Reservation/node ratio per partition (informational: always succeeds, as in YuniKorn).
 9. Orphan allocations on nodes: a node holds an allocation its application does not know.
10. Orphan allocations on applications: an application's allocation is not on its node.

pyscheduler adds these, in the same style:

11. Negative resources in the queues (allocated, pending).
12. Node allocated == the sum of the allocations on the node.
13. Queue allocated and pending == the sum over its applications (leaf) or its children (parent).
14. Queue running applications == its running applications (leaf) or its children's (parent).
15. Application allocated and pending == the sum of its allocations and of its asks.
16. Root queue maximum == the total partition resource (the sum of the node capacities).
17. Reservations: every reservation's application, ask (still pending) and node exist, the node
    holds the reservation and is marked reserved in the node order; no node holds a reservation
    the partition does not know.
18. User and group tracking: the manager's own consistency
    (:meth:`UserGroupManager.check_consistency`) and each user's tracked usage per queue against
    the allocations of that user's applications.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyscheduler.common.resources import Resource
from pyscheduler.objects.allocation import Allocation
from pyscheduler.objects.application import RUNNING_STATES, Application
from pyscheduler.objects.node import Node
from pyscheduler.objects.partition import Partition

if TYPE_CHECKING:
    from pyscheduler.scheduler.context import ClusterContext
    from pyscheduler.scheduler.loop import Scheduler

__all__ = ["HealthCheck", "HealthResult", "check_health"]

NEGATIVE = "Negative resources"
CONSISTENCY = "Consistency of data"


@dataclass(frozen=True)
class HealthCheck:
    """One check (YuniKorn's ``HealthCheckInfo``)."""

    name: str
    succeeded: bool
    description: str
    diagnosis_message: str

    def to_dao(self) -> dict[str, Any]:
        return {
            "Name": self.name,
            "Succeeded": self.succeeded,
            "Description": self.description,
            "DiagnosisMessage": self.diagnosis_message,
        }


@dataclass(frozen=True)
class HealthResult:
    """Every check and the verdict (YuniKorn's ``SchedulerHealthDAOInfo``)."""

    healthy: bool
    checks: tuple[HealthCheck, ...] = field(default=())

    def to_dao(self) -> dict[str, Any]:
        return {"Healthy": self.healthy, "HealthChecks": [c.to_dao() for c in self.checks]}

    @property
    def failed(self) -> tuple[HealthCheck, ...]:
        return tuple(c for c in self.checks if not c.succeeded)

    def by_description(self, description: str) -> HealthCheck:
        """The check with this description (names repeat, descriptions do not)."""
        for check in self.checks:
            if check.description == description:
                return check
        raise KeyError(description)

    def explain(self) -> str:
        """The failed checks, one per line (for logs and assertion messages)."""
        return "\n".join(f"{c.name}: {c.description}: {c.diagnosis_message}" for c in self.failed) or "healthy"


# -- Go formatting of the diagnosis messages ------------------------------------------------------


def _go_quote(text: str) -> str:
    out = ['"']
    for ch in text:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


def _q(items: Sequence[str]) -> str:
    """Go's ``%q`` of a string slice: ``["a" "b"]``."""
    return "[" + " ".join(_go_quote(s) for s in items) + "]"


def _f(values: Sequence[float]) -> str:
    """Go's ``%f`` of a float slice: ``[0.500000 NaN]``."""

    def one(v: float) -> str:
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "+Inf" if v > 0 else "-Inf"
        return f"{v:.6f}"

    return "[" + " ".join(one(v) for v in values) + "]"


def _v(items: Iterable[str]) -> str:
    """Go's ``%v`` of a slice whose elements format themselves."""
    return "[" + " ".join(items) + "]"


def _alloc_str(alloc: Allocation) -> str:
    return f"applicationID={alloc.application_id}, allocationKey={alloc.allocation_key}, Node={alloc.node_id}"


def _greater_or_equal(larger: Resource, smaller: Resource) -> bool:
    """YuniKorn's StrictlyGreaterThanOrEquals: every type of either, a missing type being 0."""
    return all(larger.get(k, 0) >= smaller.get(k, 0) for k in set(larger) | set(smaller))


def _sum(resources: Iterable[Resource]) -> Resource:
    total = Resource()
    for r in resources:
        total = total + r
    return total


# -- the checks -------------------------------------------------------------------------------------


@dataclass
class _Findings:
    """What the walk over the partitions found, per check."""

    partitions_negative: list[str] = field(default_factory=list)
    nodes_negative: list[str] = field(default_factory=list)
    allocation_mismatch: list[str] = field(default_factory=list)
    total_mismatch: list[str] = field(default_factory=list)
    node_total_mismatch: list[str] = field(default_factory=list)
    node_capacity_mismatch: list[str] = field(default_factory=list)
    reservation_ratio: list[float] = field(default_factory=list)
    orphans_on_node: list[str] = field(default_factory=list)
    orphans_on_app: list[str] = field(default_factory=list)
    queues_negative: list[str] = field(default_factory=list)
    node_sum_mismatch: list[str] = field(default_factory=list)
    queue_usage_mismatch: list[str] = field(default_factory=list)
    queue_running_mismatch: list[str] = field(default_factory=list)
    app_mismatch: list[str] = field(default_factory=list)
    root_max_mismatch: list[str] = field(default_factory=list)
    reservations: list[str] = field(default_factory=list)
    ugm: list[str] = field(default_factory=list)


def check_health(context: ClusterContext, scheduler: Scheduler | None = None) -> HealthResult:
    """Runs every check over every partition of ``context``; reads only.

    ``scheduler`` supplies the count of failed scheduling cycles (none without it)."""
    with context.lock:
        partitions = [context.partitions[name] for name in sorted(context.partitions)]
    found = _Findings()
    for partition in partitions:
        with partition.lock:
            _check_partition(partition, found)

    errors = scheduler.errors if scheduler is not None else 0
    checks = (
        HealthCheck("Scheduling errors", errors == 0, "Check for scheduling error entries in metrics",
                    f"There were {errors} scheduling errors logged in the metrics"),
        HealthCheck("Failed nodes", True, "Check for failed nodes entries in metrics",
                    "There were 0 failed nodes logged in the metrics"),
        HealthCheck(NEGATIVE, not found.partitions_negative, "Check for negative resources in the partitions",
                    f"Partitions with negative resources: {_q(found.partitions_negative)}"),
        HealthCheck(NEGATIVE, not found.nodes_negative, "Check for negative resources in the nodes",
                    f"Nodes with negative resources: {_q(found.nodes_negative)}"),
        HealthCheck(CONSISTENCY, not found.allocation_mismatch,
                    "Check if a partition's allocated resource <= total resource of the partition",
                    f"Partitions with inconsistent data: {_q(found.allocation_mismatch)}"),
        HealthCheck(CONSISTENCY, not found.total_mismatch,
                    "Check if total partition resource == sum of the node resources from the partition",
                    f"Partitions with inconsistent data: {_q(found.total_mismatch)}"),
        HealthCheck(CONSISTENCY, not found.node_total_mismatch,
                    "Check if node total resource = allocated resource + occupied resource + available resource",
                    f"Nodes with inconsistent data: {_q(found.node_total_mismatch)}"),
        HealthCheck(CONSISTENCY, not found.node_capacity_mismatch,
                    "Check if node capacity >= allocated resources on the node",
                    f"Nodes with inconsistent data: {_q(found.node_capacity_mismatch)}"),
        # Informational, as in YuniKorn: no threshold is known to be abnormal.
        HealthCheck("Reservation check", True, "Check the reservation nr compared to the number of nodes",
                    f"Reservation/node nr ratio: {_f(found.reservation_ratio)}"),
        HealthCheck("Orphan allocation on node check", not found.orphans_on_node,
                    "Check if there are orphan allocations on the nodes",
                    f"Orphan allocations: {_v(found.orphans_on_node)}"),
        HealthCheck("Orphan allocation on app check", not found.orphans_on_app,
                    "Check if there are orphan allocations on the applications",
                    f"OrphanAllocations: {_v(found.orphans_on_app)}"),
        # -- pyscheduler's additions -----------------------------------------------------------
        HealthCheck(NEGATIVE, not found.queues_negative, "Check for negative resources in the queues",
                    f"Queues with negative resources: {_q(found.queues_negative)}"),
        HealthCheck(CONSISTENCY, not found.node_sum_mismatch,
                    "Check if node allocated resource == sum of the allocations on the node",
                    f"Nodes with inconsistent data: {_q(found.node_sum_mismatch)}"),
        HealthCheck(CONSISTENCY, not found.queue_usage_mismatch,
                    "Check if queue allocated and pending resources == sum of its applications (leaf) "
                    "or of its children (parent)",
                    f"Queues with inconsistent data: {_q(found.queue_usage_mismatch)}"),
        HealthCheck(CONSISTENCY, not found.queue_running_mismatch,
                    "Check if queue running applications == running applications in the queue (leaf) "
                    "or in its children (parent)",
                    f"Queues with inconsistent data: {_q(found.queue_running_mismatch)}"),
        HealthCheck(CONSISTENCY, not found.app_mismatch,
                    "Check if application allocated and pending resources == sum of its allocations and asks",
                    f"Applications with inconsistent data: {_q(found.app_mismatch)}"),
        HealthCheck(CONSISTENCY, not found.root_max_mismatch,
                    "Check if root queue max resource == total resource of the partition",
                    f"Partitions with inconsistent data: {_q(found.root_max_mismatch)}"),
        HealthCheck("Reservation consistency check", not found.reservations,
                    "Check if every reservation links an existing application, ask and node, "
                    "and the node holds it",
                    f"Inconsistent reservations: {_q(found.reservations)}"),
        HealthCheck("User and group tracking check", not found.ugm,
                    "Check if the user and group usage matches the applications and their allocations",
                    f"Inconsistent user and group tracking: {_q(found.ugm)}"),
    )
    return HealthResult(all(c.succeeded for c in checks), checks)


def _check_partition(partition: Partition, found: _Findings) -> None:
    """All per-partition checks. The caller holds the partition's lock."""
    name = partition.name
    root = partition.root
    partition_allocated = root.allocated
    root_max = root.max_resource
    total = partition.total
    if partition_allocated.has_negative() or total.has_negative():
        found.partitions_negative.append(name)

    nodes = [partition.nodes[node_id] for node_id in sorted(partition.nodes)]
    node_capacity = Resource()
    node_allocated = Resource()
    in_flight = Resource()
    reservation_keys = 0
    for node in nodes:
        capacity, allocated, occupied, available = node.total, node.allocated, node.occupied, node.available
        allocations = list(node.allocations.items())
        reserved = dict(node.reservations)
        node_capacity = node_capacity + capacity
        node_allocated = node_allocated + allocated
        reservation_keys += len(reserved)
        if allocated + occupied + available != capacity:
            found.node_total_mismatch.append(node.node_id)
        if any(r.has_negative() for r in (allocated, available, capacity, occupied)):
            found.nodes_negative.append(node.node_id)
        if not _greater_or_equal(capacity, allocated):
            found.node_capacity_mismatch.append(node.node_id)
        if _sum(a.resource for _, a in allocations) != allocated:
            found.node_sum_mismatch.append(node.node_id)
        for key, alloc in sorted(allocations, key=lambda kv: kv[0]):
            app = partition.applications.get(alloc.application_id)
            if app is None:
                found.orphans_on_node.append(_alloc_str(alloc))
                continue
            known = app.allocations.get(key)
            if known is not alloc and _member_in_flight(app, alloc):
                # A gang member holding room here while its placeholder, on another node, waits
                # for the RM's confirmation: not yet the application's, nor its queue's.
                in_flight = in_flight + alloc.resource
                continue
            if known is not alloc:
                found.orphans_on_node.append(_alloc_str(alloc))

    found.reservation_ratio.append(reservation_keys / len(nodes) if nodes else math.nan)
    if node_allocated - in_flight != partition_allocated:
        found.allocation_mismatch.append(name)
    if node_capacity != total:
        found.total_mismatch.append(name)
    if not (root_max == total or (root_max is None and total.is_zero())):
        found.root_max_mismatch.append(name)

    apps = [partition.applications[app_id] for app_id in sorted(partition.applications)]
    for app in apps:
        allocations = sorted(app.allocations.items(), key=lambda kv: kv[0])
        asks = list(app.asks.values())
        allocated, pending = app.allocated, app.pending
        if (
            _sum(a.resource for _, a in allocations) != allocated
            or _sum(a.resource for a in asks) != pending
            or allocated.has_negative()
            or pending.has_negative()
        ):
            found.app_mismatch.append(app.app_id)
        for key, alloc in allocations:
            on_node = partition.nodes.get(alloc.node_id)
            held = None
            if on_node is not None:
                held = on_node.allocations.get(key)
            if held is not alloc:
                found.orphans_on_app.append(_alloc_str(alloc))

    _check_queues(partition, found)
    _check_reservations(partition, nodes, found)
    _check_ugm(partition, apps, found)


def _member_in_flight(app: Application, alloc: Allocation) -> bool:
    """A gang member placed on another node than the placeholder it is taking the place of."""
    placeholder = alloc.replacing
    return (placeholder is not None and placeholder.replaced_by is alloc
            and app.allocations.get(placeholder.allocation_key) is placeholder
            and placeholder.node_id != alloc.node_id)


def _check_queues(partition: Partition, found: _Findings) -> None:
    for queue in partition.queues():
        allocated, pending, running = queue.allocated, queue.pending, queue.running_apps
        is_leaf = queue.is_leaf
        apps = list(queue.applications.values())
        children = list(queue.children.values())
        if allocated.has_negative() or pending.has_negative():
            found.queues_negative.append(queue.path)
        # (allocated, pending, running applications) of each application or child queue.
        parts: list[tuple[Resource, Resource, int]]
        if is_leaf:
            parts = [(app.allocated, app.pending, int(app.state in RUNNING_STATES)) for app in apps]
        else:
            parts = [(child.allocated, child.pending, child.running_apps) for child in children]
        want_allocated = _sum(p[0] for p in parts)
        want_pending = _sum(p[1] for p in parts)
        want_running = sum(int(p[2]) for p in parts)
        if want_allocated != allocated or want_pending != pending:
            found.queue_usage_mismatch.append(queue.path)
        if want_running != running:
            found.queue_running_mismatch.append(queue.path)


def _walk_order(partition: Partition, skip_reserved: bool) -> set[str]:
    """The nodes the node order yields (read only: first-fit queries for an empty ask)."""
    seen: set[str] = set()
    cursor = None
    while True:
        hit = partition.node_ordering.first_fit({}, cursor, skip_reserved)
        if hit is None or hit[1] in seen:
            return seen
        seen.add(hit[1])
        cursor = hit


def _check_reservations(partition: Partition, nodes: list[Node], found: _Findings) -> None:
    reservations = partition.reservations
    problems = found.reservations
    by_key = dict(reservations.by_key)
    for key in sorted(by_key):
        r = by_key[key]
        label = f"{key} ({r.app_id} on {r.node_id})"
        app = partition.applications.get(r.app_id)
        node = partition.nodes.get(r.node_id)
        if app is None:
            problems.append(f"{label}: unknown application")
        else:
            ask = app.asks.get(key)
            placed = key in app.allocations
            if ask is None:
                problems.append(f"{label}: {'ask already allocated' if placed else 'unknown ask'}")
        if node is None:
            problems.append(f"{label}: unknown node")
        else:
            held = key in node.reservations
            if not held:
                problems.append(f"{label}: the node does not hold it")
        if r not in reservations.on_node(r.node_id):
            problems.append(f"{label}: not listed for its node")
    reserved_nodes: set[str] = set()
    for node in nodes:
        keys = sorted(node.reservations)
        if keys:
            reserved_nodes.add(node.node_id)
        for key in keys:
            held_by = by_key.get(key)
            if held_by is None or held_by.node_id != node.node_id:
                problems.append(f"{key} (on {node.node_id}): held by the node, unknown to the partition")
    # Reserved nodes are hidden from regular allocation: the node order must say so. It only
    # walks schedulable nodes with something available, so those are the ones compared.
    walkable = _walk_order(partition, skip_reserved=False)
    unreserved = _walk_order(partition, skip_reserved=True)
    for node_id in sorted(walkable):
        flagged = node_id not in unreserved
        if flagged != (node_id in reserved_nodes):
            state = "reserved" if flagged else "not reserved"
            problems.append(f"node {node_id}: {state} in the node order, {len(reservations.on_node(node_id))} reservations")


def _check_ugm(partition: Partition, apps: list[Any], found: _Findings) -> None:
    ugm = partition.ugm
    found.ugm.extend(ugm.check_consistency())
    expected: dict[tuple[str, str], Resource] = {}
    for app in apps:
        queue = app.queue
        allocated = app.allocated
        if queue is None or allocated.is_zero():
            continue
        for path in (queue.path, "root"):
            key = (app.user, path)
            expected[key] = expected.get(key, Resource()) + allocated
    users = set(ugm.tracked_users()) | {user for user, _ in expected}
    for user in sorted(users):
        paths = {path for u, path in expected if u == user} | {"root"}
        for path in sorted(paths):
            want = expected.get((user, path), Resource())
            have = ugm.user_usage(user, path)
            if have != want:
                found.ugm.append(f"user {user} at {path}: tracked {have}, allocated {want}")
