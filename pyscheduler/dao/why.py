"""Why is it pending (issue 35): ``GET /ws/v1/partition/{p}/application/{app}/why``, the answer
whose JSON docs/design/why.md fixes.

For each pending ask the **first** thing that stops it, in the order the scheduling cycle
checks (:meth:`pyscheduler.scheduler.cycle.SchedulingCycle._try_app` and the reserved-asks
phase before it), so the answer says what the next cycle will meet:

1. the application: its leaf, a stopped queue or partition, maxApplications of an Accepted one
   (``APPLICATION_STATE``);
2. an ask holding a reservation is the reserved phase's (``cycle_reservations``): its quotas,
   then its node (``RESERVED``, ``REQUIRED_NODE``, ``ROLE_HISTORY_NODE``), then, for a normal
   reservation, any other node;
3. a gang member waits for its placeholders (``GANG_RESERVING``) or for the one it will take
   (``WAITING_FOR_PLACEHOLDER``);
4. the user's and group's limits (``USER_LIMIT`` / ``GROUP_LIMIT``, the binding level named),
   then the queue path's maxes (``QUEUE_MAX`` / ``PARENT_MAX``);
5. the member clusters and topology domain the application may use (the cycle's own
   ``choose_scope`` and ``choose_domain_scope``): waiting is ``MEMBER_CLUSTER`` /
   ``TOPOLOGY_DOMAIN``; a required node outside them is ``REQUIRED_NODE``;
6. a required node (``REQUIRED_NODE``), a role-history target (``ROLE_HISTORY_NODE``);
7. the nodes (:mod:`pyscheduler.dao.why_nodes`): none fits (``NO_NODE_FITS``), the RM refuses
   every one with room (``PREDICATES``), or one fits but the applications ahead in its leaf
   need more than the room left (``FAIR_SHARE_ORDER``); else ``NONE``.

**Reads only.** Everything is computed under the partition's lock (through the read pacer's
gate, as other reads, and paced after the lock is released: a busy scheduling loop keeps most
of the time however many clients ask) from the live objects, with the cycle's own functions where they are
side-effect free (``choose_scope``, ``choose_domain_scope``: neither pins, only the cycle's
commit and preemption do; ``ugm.headroom``, ``queue.headroom``; the RM's predicates asked as a
reservation check, ``allocate=False``) and never the ones that change state (the role history's
``choose`` targets a node, ``choose_slice_scope`` assigns slices, the cycle's ``_runnable``
sends events, its fifo and child-order caches are written: the sorters are called afresh). A
slice member keeps to its slice's domain once its slice is placed; one whose slice is not chosen yet
is answered with its application's scope (choosing would assign it one).
"""

from __future__ import annotations

import re
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, Final

from pyscheduler.common.resources import Resource, readable
from pyscheduler.dao._common import find_partition, res_map
from pyscheduler.dao.errors import APPLICATION_NOT_FOUND, BadRequest, NotFound
from pyscheduler.dao.queue_position import position_dao, position_of
from pyscheduler.dao.why_details import Stop, iso_time, log_dao, preemption_dao, queue_limit, user_limit
from pyscheduler.dao.why_nodes import NodeGrouping, NodeGroupings
from pyscheduler.objects.application_state import AppState
from pyscheduler.objects.queue import ObjectState
from pyscheduler.policies.role_history import history_key_of, role_of
from pyscheduler.policies.role_history.settings import PlacementPolicy, role_settings
from pyscheduler.scheduler.cluster_choice import ClusterScope, choose_scope
from pyscheduler.scheduler.context import external_name
from pyscheduler.scheduler.cycle_clusters import REQUIRED_NODE_ELSEWHERE
from pyscheduler.scheduler.history_gangs import remembered_nodes
from pyscheduler.scheduler.topology_choice import acceptance, choose_domain_scope
from pyscheduler.si.callback import PredicatesFunc, check_predicates
from pyscheduler.si.messages import PredicatesArgs

if TYPE_CHECKING:
    from pyscheduler.objects.allocation import Allocation
    from pyscheduler.objects.application import Application
    from pyscheduler.objects.partition import Partition
    from pyscheduler.objects.queue import Queue
    from pyscheduler.scheduler.context import ClusterContext

__all__ = ["ASK_NOT_FOUND", "CODES", "why"]

ASK_NOT_FOUND = "Allocation ask not found"
#: Every code an ask may get (docs/design/why.md).
CODES = (
    "NONE", "APPLICATION_STATE", "GANG_RESERVING", "WAITING_FOR_PLACEHOLDER", "USER_LIMIT", "GROUP_LIMIT",
    "QUEUE_MAX", "PARENT_MAX", "FAIR_SHARE_ORDER", "REQUIRED_NODE", "ROLE_HISTORY_NODE", "MEMBER_CLUSTER",
    "TOPOLOGY_DOMAIN", "RESERVED", "NO_NODE_FITS", "PREDICATES",
)
#: What ``ask=`` may hold: the characters of allocation keys (pod UIDs, names), 1 to 256 of them.
_ASK_KEY = re.compile(r"[A-Za-z0-9._:/@+=~-]{1,256}")
_NONE = Stop("NONE", "nothing stops it: the next cycle places it", {})


def _bool_param(raw: str | None, name: str) -> bool:
    if raw is None or raw == "":
        return True
    lowered = raw.lower()
    if lowered in ("true", "1"):
        return True
    if lowered in ("false", "0"):
        return False
    raise BadRequest(f'"{name}" must be true or false, got {raw[:40]!r}')


def why(ctx: ClusterContext, partition: str, app_id: str, ask: str | None = None,
        nodes: str | None = None) -> dict[str, Any]:
    """The why answer of one application (or of its pending ask ``ask``); ``nodes=false`` leaves
    out the per-node grouping. 400 for a malformed ``ask`` or ``nodes``, 404 for an unknown
    partition, application or pending ask."""
    if ask is not None and not _ASK_KEY.fullmatch(ask):
        raise BadRequest('"ask" must be an allocation key: 1 to 256 letters, digits or ._:/@+=~-')
    with_nodes = _bool_param(nodes, "nodes")
    part = find_partition(ctx, partition)
    pacer = ctx.read_pacer
    with pacer.building(WHY_DUTY) if pacer is not None else nullcontext(_no_tick) as tick:
        with part.lock:
            app = part.applications.get(app_id)
            if app is None:
                raise NotFound(APPLICATION_NOT_FOUND)
            if ask is not None and ask not in app.asks:
                raise NotFound(ASK_NOT_FOUND)
            answer = _Answer(ctx, part, app, with_nodes).build(ask)
        # Outside the lock, still holding the readers' gate: while the scheduling loop is busy
        # this sleeps so that answers take at most the pacer's share of the time.
        tick()
    return answer


#: The share of a busy scheduler's time "why" answers may take (the read pacer's 10 % for other
#: answers): a why answer holds the partition's lock while it builds, so the loop waits for it,
#: not only for the interpreter; at 10 % four clients asking in a loop cost the loop 12 % of its
#: throughput, at 5 % 7 % (docs/benchmarks.md, "Issue 35"), answers then taking twice as long
#: while the loop is busy (as fast as ever when it is idle).
WHY_DUTY: Final = 0.05


def _no_tick() -> None:
    """Without a pacer nothing yields."""


class _Answer:
    """One why answer, computed under the partition's lock (see the module doc)."""

    def __init__(self, ctx: ClusterContext, partition: Partition, app: Application, with_nodes: bool) -> None:
        self.ctx = ctx
        self.partition = partition
        self.app = app
        self.with_nodes = with_nodes
        self.predicates: PredicatesFunc | None = ctx.predicates_for(partition)
        self.groupings = NodeGroupings(partition, self.predicates, first_only=not with_nodes)
        #: The free room of the nodes a scope may use (FAIR_SHARE_ORDER), once per scope.
        self._free: dict[frozenset[str] | None, Resource] = {}
        self.now_ns = ctx.clock.now_ns()
        self.monotonic = ctx.clock.monotonic()
        self.position, self.pending_apps = position_of(partition, app.app_id)

    # -- the answer ------------------------------------------------------------------------------

    def build(self, only: str | None) -> dict[str, Any]:
        app = self.app
        app_stop = self._app_stop()
        scope, scope_code = self._scope() if app_stop is None and app.queue is not None else (None, "")
        answers = []
        ahead = Resource()
        for ask in app.iter_asks():
            if only is None or ask.allocation_key == only:
                answers.append(self._ask(ask, app_stop, scope, scope_code, ahead))
            ahead = ahead + ask.resource
        waiting = [a for a in answers if a["code"] != "NONE"]
        if not answers:
            summary = "no pending ask"
        elif not waiting:
            summary = "nothing stops it: the next cycle places its asks"
        else:
            summary = f"{len(waiting)} of {len(answers)} asks wait: {waiting[0]['message']}"
        return {
            "partition": external_name(self.partition.name),
            "applicationID": app.app_id,
            "queueName": app.queue.path if app.queue is not None else app.queue_name,
            "applicationState": app.state.value,
            "summary": summary,
            "gang": self._gang(),
            "position": position_dao(self.position, self.pending_apps) if self.position is not None else None,
            "asks": answers,
        }

    def _gang(self) -> dict[str, Any] | None:
        app = self.app
        if app.placeholder_ask.is_zero() and not app.placeholder_data:
            return None
        placed = sum(1 for a in app.allocations.values() if a.placeholder)
        pending = sum(1 for a in app.asks.values() if a.placeholder)
        if pending:
            state = "RESERVING"
        elif app.ready_for_replacement:
            state = "REPLACING"
        elif placed:
            state = "RESERVING"
        else:
            state = "DONE"
        return {"style": app.gang_style.value, "placeholderAsk": res_map(app.placeholder_ask),
                "placeholdersPlaced": placed, "placeholdersPending": pending, "state": state}

    def _ask(self, ask: Allocation, app_stop: Stop | None, scope: ClusterScope | None, scope_code: str,
             ahead_in_app: Resource) -> dict[str, Any]:
        grouping: NodeGrouping | None = None
        waits_for: dict[str, Any] | None = None
        if app_stop is not None:
            stop = app_stop
        else:
            stop, grouping, waits_for = self._first_stop(ask, scope, scope_code, ahead_in_app)
        if self.with_nodes and grouping is None:
            grouping = self.groupings.of(ask, self._scope_nodes(scope))
        reservation = self.partition.reservations.by_key.get(ask.allocation_key)
        return {
            "allocationKey": ask.allocation_key,
            "taskGroupName": ask.task_group_name,
            "placeholder": ask.placeholder,
            "priority": ask.priority,
            "resource": res_map(ask.resource),
            "code": stop.code,
            "message": stop.message,
            "details": stop.details,
            "nodes": grouping.dao() if self.with_nodes and grouping is not None else None,
            "reservation": {"nodeID": reservation.node_id, "since": self._wall(reservation.since)}
            if reservation is not None else None,
            "preemption": preemption_dao(ask),
            "waitsFor": waits_for,
            "log": log_dao(ask),
        }

    def _wall(self, monotonic: float) -> str:
        return iso_time(self.now_ns - int((self.monotonic - monotonic) * 1e9))

    # -- the application ---------------------------------------------------------------------------

    def _app_stop(self) -> Stop | None:
        app, partition = self.app, self.partition
        queue = app.queue
        if queue is None:
            return Stop("APPLICATION_STATE", f"the application is in no queue ({app.state.value})",
                        {"state": app.state.value})
        if partition.state is ObjectState.STOPPED:
            return Stop("APPLICATION_STATE", f"partition {external_name(partition.name)} is stopped",
                        {"state": app.state.value, "reason": "partition stopped"})
        for current in queue.ancestors():
            if current.state is ObjectState.STOPPED:
                return Stop("APPLICATION_STATE", f"queue {current.path} is stopped",
                            {"state": app.state.value, "reason": f"queue {current.path} stopped"})
        if app.state is AppState.ACCEPTED:
            if not queue.can_run_app():
                return Stop("APPLICATION_STATE", "the queue path's maxApplications is reached: it may not start yet",
                            {"state": app.state.value, "reason": "queue maxApplications"})
            if not partition.ugm.can_run_app(queue.path, app.app_id, app.user, app.groups):
                return Stop("APPLICATION_STATE",
                            "the user's or group's maxApplications is reached: it may not start yet",
                            {"state": app.state.value, "reason": "user or group maxApplications"})
        return None

    def _scope(self) -> tuple[ClusterScope | None, str]:
        """The cycle's scope of the application (``_try_app``), and the code a waiting one gets."""
        partition, app = self.partition, self.app
        scope = choose_scope(partition.member_clusters, app) if partition.member_clusters.clusters else None
        code = "MEMBER_CLUSTER" if scope is not None else ""
        if app.topology_request.level and (scope is None or scope.search_nodes):
            domain = choose_domain_scope(partition.topology, app, lambda: remembered_nodes(partition, app),
                                         scope, acceptance(self.predicates))
            if domain is not None:
                scope, code = domain, "TOPOLOGY_DOMAIN"
        return scope, code

    def _slice_scope(self, ask: Allocation, scope: ClusterScope | None) -> ClusterScope | None:
        """A slice member whose slice is placed keeps to its slice's domain (read from the
        application's slices; one not given a slice or domain yet keeps the application's scope:
        choosing one would assign it, and a read changes nothing)."""
        app = self.app
        slices = app.topology_slices
        if slices is None or (scope is not None and not scope.search_nodes) or not (
                ask.placeholder or app.placeholder_ask.is_zero()):
            return scope
        index = slices.of_member.get(ask.allocation_key)
        value = slices.domains.get(index, "") if index is not None else ""
        topology, level = self.partition.topology, app.topology_request.slice_level
        domain = topology.domains.get(level, {}).get(value)
        if domain is None:
            return scope
        return ClusterScope((domain,), group_of=lambda node_id: topology.domain_of(node_id, level))

    @staticmethod
    def _scope_nodes(scope: ClusterScope | None) -> frozenset[str] | None:
        if scope is None or not scope.search_nodes:
            return None  # a waiting scope says why itself; its nodes are grouped as the partition's
        return frozenset(node_id for group in scope.clusters for node_id in group.nodes)

    # -- one ask ---------------------------------------------------------------------------------------

    def _first_stop(self, ask: Allocation, scope: ClusterScope | None, scope_code: str,
                    ahead_in_app: Resource) -> tuple[Stop, NodeGrouping | None, dict[str, Any] | None]:
        partition, app = self.partition, self.app
        queue = app.queue
        assert queue is not None
        reservation = partition.reservations.by_key.get(ask.allocation_key)
        user_room = partition.ugm.headroom(queue.path, app.app_id, app.user, app.groups)
        if reservation is None and app.can_replace(ask):
            return self._gang_stop(ask)
        if not ask.resource.fits_in_max_undef(user_room):
            return user_limit(partition, queue, app, ask, user_room), None, None
        if not ask.resource.fits_in_max_undef(queue.headroom()):
            return queue_limit(queue, ask), None, None
        if reservation is not None:
            return self._reserved_stop(ask, reservation.node_id, reservation.required, reservation.history, scope)
        scope = self._slice_scope(ask, scope)
        if scope is not None and not scope.search_nodes:
            return self._scope_stop(scope, scope_code), None, None
        if ask.required_node:
            if scope is not None:
                group_of = scope.group_of or partition.member_clusters.cluster_of
                if not scope.allows(group_of(ask.required_node)):
                    return Stop("REQUIRED_NODE", REQUIRED_NODE_ELSEWHERE,
                                {"nodeID": ask.required_node, "reason": REQUIRED_NODE_ELSEWHERE}), None, None
            refusal = self._node_refusal(ask, ask.required_node)
            if refusal:
                return Stop("REQUIRED_NODE", f"its required node {ask.required_node} refuses it: {refusal}",
                            {"nodeID": ask.required_node, "reason": refusal}), None, None
            return _NONE, None, None
        history = self._history_stop(ask, scope)
        if history is not None:
            return history
        return self._nodes_stop(ask, scope, ahead_in_app)

    def _gang_stop(self, ask: Allocation) -> tuple[Stop, None, dict[str, Any] | None]:
        app = self.app
        if not app.ready_for_replacement:
            placed = sum(1 for a in app.allocations.values() if a.placeholder)
            pending = sum(1 for a in app.asks.values() if a.placeholder)
            return Stop("GANG_RESERVING", f"its gang reserves: {placed} placeholders placed, {pending} pending",
                        {"placed": placed, "pending": pending}), None, None
        target = next((p for p in app.placeholders() if p.task_group_name == ask.task_group_name
                       and not p.released and not p.preempted), None)
        key = target.allocation_key if target is not None else ""
        stop = Stop("WAITING_FOR_PLACEHOLDER", f"it takes the place of placeholder {key or '(none left)'}",
                    {"placeholder": key})
        return stop, None, {"kind": "PLACEHOLDER", "target": key} if key else None

    def _scope_stop(self, scope: ClusterScope, code: str) -> Stop:
        details: dict[str, Any] = {"reason": scope.waiting}
        request = self.app.topology_request
        if code == "TOPOLOGY_DOMAIN":
            domains = list(self.partition.topology.domains.get(request.level, {}).values())
            details = {"level": request.level, "need": res_map(scope.preempt_for), "reason": scope.waiting,
                       "largestFree": None}
            if domains:
                largest = max(domains, key=lambda d: (d.available.get("vcore", 0), d.available.get("memory", 0),
                                                      d.name))
                details["largestFree"] = {"domain": largest.name, "available": res_map(largest.available)}
        return Stop(code, scope.waiting, details)

    def _node_refusal(self, ask: Allocation, node_id: str) -> str:
        """Why ``node_id`` does not take ``ask`` now ("" when it does)."""
        node = self.partition.nodes.get(node_id)
        if node is None:
            return "the node is not in the partition"
        if not node.schedulable:
            return "the node is unschedulable"
        if not node.fits(ask.resource):
            return (f"not enough room: it needs ({readable(ask.resource)}); "
                    f"the node has ({readable(node.available)}) available")
        if self.predicates is not None:
            reason = check_predicates(self.predicates, PredicatesArgs(ask.allocation_key, node_id, False))
            if reason:
                return reason
        return ""

    def _reserved_stop(self, ask: Allocation, node_id: str, required: bool, history: bool,
                       scope: ClusterScope | None) -> tuple[Stop, NodeGrouping | None, dict[str, Any] | None]:
        """The reserved phase (``cycle_reservations``): its node, then any other for a normal one."""
        refusal = self._node_refusal(ask, node_id)
        if not refusal:
            return _NONE, None, None
        if history:
            return self._history_node(ask, node_id)
        if required or ask.required_node:
            return Stop("REQUIRED_NODE", f"its required node {node_id} refuses it: {refusal}",
                        {"nodeID": node_id, "reason": refusal}), None, None
        grouping = self.groupings.of(ask, self._scope_nodes(scope))
        if grouping.fit:
            return _NONE, grouping, None
        return Stop("RESERVED", f"it holds a reservation on node {node_id}, which has no room for it yet ({refusal})",
                    {"nodeID": node_id}), grouping, None

    def _history_stop(self, ask: Allocation, scope: ClusterScope | None
                      ) -> tuple[Stop, NodeGrouping | None, dict[str, Any] | None] | None:
        """An ask sent to its role-history node that does not take it now (the target the cycle
        chose; an ask without one yet is the normal order's until the cycle chooses)."""
        role = role_of(ask.tags, ask.task_group_name)
        if not role:
            return None
        history = self.partition.role_histories.get(history_key_of(self.app.app_id, self.app.tags, ask.tags))
        node_id = history.target_of(ask.allocation_key) if history is not None else None
        if node_id is None:
            return None
        if scope is not None:
            group_of = scope.group_of or self.partition.member_clusters.cluster_of
            if not scope.allows(group_of(node_id)):
                return None
        if not self._node_refusal(ask, node_id):
            return _NONE, None, None
        return self._history_node(ask, node_id)

    def _history_node(self, ask: Allocation, node_id: str) -> tuple[Stop, None, dict[str, Any]]:
        app = self.app
        role = role_of(ask.tags, ask.task_group_name)
        history = self.partition.role_histories.get(history_key_of(app.app_id, app.tags, ask.tags))
        since = history.target_since(ask.allocation_key) if history is not None else None
        until = None
        if since is not None and app.queue is not None:
            settings = role_settings(role, app.tags, app.queue.properties)
            if settings.policy is not PlacementPolicy.STRICT:
                until = self._wall(since + settings.placement_timeout)
        refusal = self._node_refusal(ask, node_id)
        message = f"it waits for its role history node {node_id} ({refusal})"
        if until:
            message += f" until {until}"
        return (Stop("ROLE_HISTORY_NODE", message, {"nodeID": node_id, "role": role, "until": until}), None,
                {"kind": "ROLE_HISTORY_NODE", "target": node_id})

    def _nodes_stop(self, ask: Allocation, scope: ClusterScope | None, ahead_in_app: Resource
                    ) -> tuple[Stop, NodeGrouping | None, dict[str, Any] | None]:
        scope_nodes = self._scope_nodes(scope)
        grouping = self.groupings.of(ask, scope_nodes)
        if not grouping.fit:
            if grouping.refused_by_predicates:
                return Stop("PREDICATES", f"the RM refuses it on all {grouping.refused_by_predicates} nodes with room",
                            {}), grouping, None
            return Stop("NO_NODE_FITS", f"no node has room for {readable(ask.resource)}", {}), grouping, None
        return self._order_stop(ask, scope_nodes, ahead_in_app), grouping, None

    def _free_room(self, scope_nodes: frozenset[str] | None) -> Resource:
        found = self._free.get(scope_nodes)
        if found is None:
            found = self._free[scope_nodes] = _free_room(self.partition, scope_nodes)
        return found

    def _order_stop(self, ask: Allocation, scope_nodes: frozenset[str] | None, ahead_in_app: Resource) -> Stop:
        """FAIR_SHARE_ORDER when what goes first in its leaf (the applications ahead of it, and
        its own asks before this one) leaves too little room for it: in the queue path's
        headroom, or in the free room of the nodes it may use."""
        position, queue = self.position, self.app.queue
        if position is None or queue is None:
            return _NONE
        ahead = position.ahead_in_queue + ahead_in_app
        if not ahead.strictly_greater_than_zero():
            return _NONE
        need = ahead + ask.resource
        if need.fits_in_max_undef(queue.headroom()) and need.fits_in(self._free_room(scope_nodes)):
            return _NONE
        others = position.in_queue - 1
        return Stop("FAIR_SHARE_ORDER",
                    f"{_ordinal(position.in_queue)} of {position.queue_length} applications in {queue.path}, "
                    f"{others} ahead need {readable(position.ahead_in_queue)}",
                    {"queue": queue.path, "ahead": others, "aheadNeed": res_map(ahead, prune=True)})


def _free_room(partition: Partition, scope_nodes: frozenset[str] | None) -> Resource:
    """The available resources summed over the schedulable nodes without a reservation (of
    ``scope_nodes`` when given): what asks placed in order may take at most."""
    free = Resource()
    for node in partition.nodes.values():
        if not node.schedulable or node.reservations or (scope_nodes is not None and node.node_id not in scope_nodes):
            continue
        free = free + node.available
    return free


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
