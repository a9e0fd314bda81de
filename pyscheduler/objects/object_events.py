"""The events the scheduler objects emit, with YuniKorn's exact (type, change, detail) tuples.

One small emitter per object family (YuniKorn's ``pkg/scheduler/objects/events`` and the ugm
events): the objects call these at the moment a change happens, and never build records
themselves. Every call goes to :attr:`EventSystem.add`, which never blocks and keeps nothing
while tracking is disabled. The tuples and messages are pinned by ``shared/spec/yunikorn/events.md``.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyscheduler.common.enums import member_table
from pyscheduler.common.resources import Resource, go_string
from pyscheduler.si.events import AddEvent, EventChangeDetail, EventChangeType, EventRecordType

# Member tables (common.enums): several events go out per allocation, each reading three members.
T = member_table(EventRecordType)
C = member_table(EventChangeType)
D = member_table(EventChangeDetail)

__all__ = ["AppEvents", "NodeEvents", "ObjectEvents", "QueueEvents", "UserGroupEvents"]

Res = Mapping[str, int] | None

NODE_ADDED_MESSAGE = "Node added to the scheduler"
NODE_REMOVED_MESSAGE = "Node removed from the scheduler"


class AppEvents:
    """Application events: APP records, objectID = application id."""

    __slots__ = ("_add",)

    def __init__(self, add: AddEvent) -> None:
        self._add = add

    def new(self, app_id: str) -> None:
        self._add(T.APP, C.ADD, D.APP_NEW, app_id)

    def removed(self, app_id: str) -> None:
        self._add(T.APP, C.REMOVE, D.DETAILS_NONE, app_id)

    def state_change(self, app_id: str, detail: EventChangeDetail, message: str = "") -> None:
        """APP SET APP_ACCEPTED / RUNNING / COMPLETING / ... / REJECT / EXPIRED."""
        self._add(T.APP, C.SET, detail, app_id, "", message)

    def ask_added(self, app_id: str, allocation_key: str, resource: Res) -> None:
        self._add(T.APP, C.ADD, D.APP_REQUEST, app_id, allocation_key, "", resource)

    def ask_removed(self, app_id: str, allocation_key: str, resource: Res, detail: EventChangeDetail = D.REQUEST_CANCEL) -> None:
        self._add(T.APP, C.REMOVE, detail, app_id, allocation_key, "", resource)

    def allocation_added(self, app_id: str, allocation_key: str, resource: Res) -> None:
        self._add(T.APP, C.ADD, D.APP_ALLOC, app_id, allocation_key, "", resource)

    def allocation_removed(self, app_id: str, allocation_key: str, resource: Res, detail: EventChangeDetail,
                           message: str = "") -> None:
        """APP REMOVE ALLOC_CANCEL / ALLOC_PREEMPT / ALLOC_TIMEOUT / ALLOC_REPLACED / ALLOC_NODEREMOVED;
        ``message``: a preemption victim's note (its preemptor and rule), empty otherwise."""
        self._add(T.APP, C.REMOVE, detail, app_id, allocation_key, message, resource)

    def runnable(self, app_id: str, detail: EventChangeDetail, message: str = "") -> None:
        """APP_CANNOTRUN_QUEUE / APP_RUNNABLE_QUEUE / APP_CANNOTRUN_QUOTA / APP_RUNNABLE_QUOTA
        (change type NONE, left out on the wire)."""
        self._add(T.APP, C.NONE, detail, app_id, "", message)

    def request_diagnostic(self, allocation_key: str, app_id: str, message: str, resource: Res = None) -> None:
        """A REQUEST/NONE event: why an ask is pending. Goes to the RM only, never to REST."""
        self._add(T.REQUEST, C.NONE, D.DETAILS_NONE, allocation_key, app_id, message, resource)

    # YuniKorn's ask events (objects/events/ask_events.go), with its exact messages.

    # The four "why pending" events return their message: the cycle sends the same text to the
    # RM as the reason of the ask's scheduling state (UpdateContainerSchedulingStateRequest).

    def request_exceeds_queue_headroom(
        self, allocation_key: str, app_id: str, headroom: Res, requested: Resource, queue_path: str
    ) -> str:
        message = (f"Request '{allocation_key}' does not fit in queue '{queue_path}' "
                   f"(requested {go_string(requested)}, available {go_string(headroom)})")
        self.request_diagnostic(allocation_key, app_id, message, requested)
        return message

    def request_fits_in_queue(self, allocation_key: str, app_id: str, queue_path: str, requested: Resource) -> None:
        self.request_diagnostic(
            allocation_key, app_id, f"Request '{allocation_key}' has become schedulable in queue '{queue_path}'", requested
        )

    def request_exceeds_user_quota(self, allocation_key: str, app_id: str, headroom: Res, requested: Resource) -> str:
        message = (f"Request '{allocation_key}' exceeds the available user quota "
                   f"(requested {go_string(requested)}, available {go_string(headroom)})")
        self.request_diagnostic(allocation_key, app_id, message, requested)
        return message

    def request_fits_in_user_quota(self, allocation_key: str, app_id: str, requested: Resource) -> None:
        self.request_diagnostic(
            allocation_key, app_id, f"Request '{allocation_key}' fits in the available user quota", requested
        )

    def request_predicates_failed(
        self, allocation_key: str, app_id: str, failures: Mapping[str, int], requested: Resource
    ) -> str:
        """Every node's predicates refused the ask: each reason with how many nodes gave it,
        sorted (YuniKorn's SendPredicatesFailed; the caller rate-limits it per ask)."""
        listed = "".join(f"{reason} ({failures[reason]}x); " for reason in sorted(failures))
        message = f"Unschedulable request '{allocation_key}': {listed}"
        self.request_diagnostic(allocation_key, app_id, message, requested)
        return message

    def request_no_node_fits(self, allocation_key: str, app_id: str, requested: Resource) -> str:
        """No schedulable node has room for the ask (the caller rate-limits it per ask, as the
        predicates event): the RM says so on the pod, as kube-scheduler's ``0/N nodes are
        available: Insufficient ...``, which the cluster autoscaler acts on."""
        message = f"Unschedulable request '{allocation_key}': no node has room for it (requested {go_string(requested)})"
        self.request_diagnostic(allocation_key, app_id, message, requested)
        return message

    def request_required_node_refuses(self, allocation_key: str, app_id: str, node_id: str, requested: Resource) -> str:
        """A required-node ask (a daemon set's pod) that fits neither its node nor by
        preemption (the caller rate-limits it per ask)."""
        message = (f"Unschedulable request '{allocation_key}' with required node '{node_id}', "
                   "no preemption victim found")
        self.request_diagnostic(allocation_key, app_id, message, requested)
        return message


class NodeEvents:
    """Node events: NODE records, objectID = node id."""

    __slots__ = ("_add",)

    def __init__(self, add: AddEvent) -> None:
        self._add = add

    def added(self, node_id: str, capacity: Res) -> None:
        self._add(T.NODE, C.ADD, D.DETAILS_NONE, node_id, "", NODE_ADDED_MESSAGE, capacity)

    def removed(self, node_id: str) -> None:
        self._add(T.NODE, C.REMOVE, D.NODE_DECOMISSION, node_id, "", NODE_REMOVED_MESSAGE)

    def schedulable(self, node_id: str, schedulable: bool) -> None:
        self._add(T.NODE, C.SET, D.NODE_SCHEDULABLE, node_id, "", f"schedulable: {str(schedulable).lower()}")

    def allocation_added(self, node_id: str, allocation_key: str, resource: Res) -> None:
        self._add(T.NODE, C.ADD, D.NODE_ALLOC, node_id, allocation_key, "", resource)

    def allocation_removed(self, node_id: str, allocation_key: str, resource: Res) -> None:
        self._add(T.NODE, C.REMOVE, D.NODE_ALLOC, node_id, allocation_key, "", resource)

    def capacity(self, node_id: str, capacity: Res) -> None:
        self._add(T.NODE, C.SET, D.NODE_CAPACITY, node_id, "", "", capacity)

    def occupied(self, node_id: str, occupied: Res) -> None:
        self._add(T.NODE, C.SET, D.NODE_OCCUPIED, node_id, "", "", occupied)

    def reserved(self, node_id: str, allocation_key: str, resource: Res) -> None:
        self._add(T.NODE, C.ADD, D.NODE_RESERVATION, node_id, allocation_key, "", resource)

    def unreserved(self, node_id: str, allocation_key: str, resource: Res) -> None:
        self._add(T.NODE, C.REMOVE, D.NODE_RESERVATION, node_id, allocation_key, "", resource)


class QueueEvents:
    """Queue events: QUEUE records, objectID = queue path."""

    __slots__ = ("_add",)

    def __init__(self, add: AddEvent) -> None:
        self._add = add

    def added(self, path: str, managed: bool) -> None:
        self._add(T.QUEUE, C.ADD, D.DETAILS_NONE if managed else D.QUEUE_DYNAMIC, path)

    def removed(self, path: str, managed: bool) -> None:
        self._add(T.QUEUE, C.REMOVE, D.DETAILS_NONE if managed else D.QUEUE_DYNAMIC, path)

    def app_added(self, path: str, app_id: str) -> None:
        self._add(T.QUEUE, C.ADD, D.QUEUE_APP, path, app_id)

    def app_removed(self, path: str, app_id: str) -> None:
        self._add(T.QUEUE, C.REMOVE, D.QUEUE_APP, path, app_id)

    def max_changed(self, path: str, maximum: Res) -> None:
        self._add(T.QUEUE, C.SET, D.QUEUE_MAX, path, "", "", maximum)

    def guaranteed_changed(self, path: str, guaranteed: Res) -> None:
        self._add(T.QUEUE, C.SET, D.QUEUE_GUARANTEED, path, "", "", guaranteed)

    def type_changed(self, path: str, is_leaf: bool) -> None:
        self._add(T.QUEUE, C.SET, D.QUEUE_TYPE, path, "", "leaf" if is_leaf else "parent")

    def quota_preemption(self, path: str, summary: str, maximum: Res) -> None:
        """YuniKorn's quota preemption summary (QUEUE SET QUEUE_PREEMPTION, resource = max)."""
        self._add(T.QUEUE, C.SET, D.QUEUE_PREEMPTION, path, "", summary, maximum)


class UserGroupEvents:
    """User and group tracking events: USERGROUP records, objectID = user or group."""

    __slots__ = ("_add",)

    def __init__(self, add: AddEvent) -> None:
        self._add = add

    def usage_added(self, name: str, queue_path: str, resource: Res, *, group: bool = False) -> None:
        detail = D.UG_GROUP_RESOURCE if group else D.UG_USER_RESOURCE
        self._add(T.USERGROUP, C.ADD, detail, name, queue_path, "", resource)

    def usage_removed(self, name: str, queue_path: str, resource: Res, *, group: bool = False) -> None:
        detail = D.UG_GROUP_RESOURCE if group else D.UG_USER_RESOURCE
        self._add(T.USERGROUP, C.REMOVE, detail, name, queue_path, "", resource)

    def app_linked(self, group: str, app_id: str) -> None:
        self._add(T.USERGROUP, C.SET, D.UG_APP_LINK, group, app_id)

    def app_unlinked(self, group: str, app_id: str) -> None:
        self._add(T.USERGROUP, C.REMOVE, D.UG_APP_LINK, group, app_id)

    def limit_set(self, name: str, queue_path: str, *, group: bool = False) -> None:
        self._add(T.USERGROUP, C.SET, D.UG_GROUP_LIMIT if group else D.UG_USER_LIMIT, name, queue_path)

    def limit_removed(self, name: str, queue_path: str, *, group: bool = False) -> None:
        self._add(T.USERGROUP, C.REMOVE, D.UG_GROUP_LIMIT if group else D.UG_USER_LIMIT, name, queue_path)


class ObjectEvents:
    """All emitters over one event system's ``add``."""

    __slots__ = ("app", "node", "queue", "ugm")

    def __init__(self, add: AddEvent) -> None:
        self.app = AppEvents(add)
        self.node = NodeEvents(add)
        self.queue = QueueEvents(add)
        self.ugm = UserGroupEvents(add)
