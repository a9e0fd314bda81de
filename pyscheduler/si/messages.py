"""The messages of the RM interface, mirroring YuniKorn's scheduler interface (SI).

Every message of ``si.proto`` that the in-process API uses has a class here, with the proto
field names in snake_case and the fields in proto field-number order (so positional
construction follows the proto; keywords are clearer and recommended). The SI is the
current one, where asks and allocations are the same ``Allocation`` message (YUNIKORN-2778):
``AllocationAsk``, ``AllocationAskRelease``, allocation IDs and the node's
``existingAllocations`` / ``occupiedResource`` are gone (non-YuniKorn pods are sent as
*foreign* allocations instead, see :data:`FOREIGN`).

The messages are immutable values, because one message is read by several threads (the
proxy, the cluster context, the RM callback) and is often kept (events, recordings):

- every class is a frozen, slotted dataclass;
- repeated fields are tuples (a list passed in is copied into a tuple);
- map fields are read-only copies (``types.MappingProxyType`` over a private dict);
- resources are :class:`~pyscheduler.common.resources.Resource` (a plain mapping passed in is
  converted, which checks that every quantity is an int64 and raises ``ResourceError``
  otherwise);
- enum fields are coerced to their ``IntEnum``, so an unknown number raises ``ValueError`` at
  construction rather than travelling on as a value nobody can decode.

Like proto3, every field has a zero default: an unset string is ``""``, an unset message is
``None``. Whether a request makes sense is a separate question, answered by ``validate()`` on
the requests and the items they carry: it returns ``None`` for a well-formed message, or a
short human-readable reason the proxy sends back in a ``Rejected*`` message. ``validate()``
only looks at the message itself (empty IDs, impossible values); whether an application,
node or partition exists is for the core to decide.

Why one module of ~800 lines: it mirrors one file, ``si.proto``, message for message in proto
order, so a reader checks it against the proto side by side; it holds declarations only (the
names are in :mod:`.vocabulary`, the construction helpers in :mod:`.construction`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from enum import Enum, IntEnum, unique
from types import MappingProxyType
from typing import Final, TypeVar

from pyscheduler.common.resources import NO_RESOURCE, Resource

__all__ = [
    # enums
    "ContainerSchedulingState",
    "NodeAction",
    "SchedulingReason",
    "TerminationType",
    "ApplicationState",
    # registration and configuration
    "RegisterResourceManagerRequest",
    "RegisterResourceManagerResponse",
    "UpdateConfigurationRequest",
    # allocations
    "Allocation",
    "AllocationRelease",
    "AllocationReleasesRequest",
    "AllocationRequest",
    "AllocationResponse",
    "PreemptionPolicy",
    "RejectedAllocation",
    # applications
    "AcceptedApplication",
    "AddApplicationRequest",
    "ApplicationRequest",
    "ApplicationResponse",
    "RejectedApplication",
    "RemoveApplicationRequest",
    "UpdatedApplication",
    "UserGroupInformation",
    # nodes
    "AcceptedNode",
    "NodeInfo",
    "NodeRequest",
    "NodeResponse",
    "RejectedNode",
    # plugins
    "PredicatesArgs",
    "PreemptionPredicatesArgs",
    "PreemptionPredicatesResponse",
    "ScoreNodesArgs",
    "UpdateContainerSchedulingStateRequest",
    # constants: node attributes
    "ARCH",
    "FAILURE_DOMAIN_REGION",
    "FAILURE_DOMAIN_ZONE",
    "HOST_NAME",
    "INSTANCE_TYPE",
    "LOCAL_IMAGES",
    "NODE_PARTITION",
    "OS",
    "RACK_NAME",
    # constants: allocation attributes
    "APPLICATION_ID",
    "CONTAINER_IMAGE",
    "CONTAINER_PORTS",
    # constants: allocation tags
    "ALLOC_TYPE_DEFAULT",
    "ALLOC_TYPE_STATIC",
    "CREATION_TIME",
    "DOMAIN_K8S",
    "DOMAIN_YUNIKORN",
    "FOREIGN",
    "GROUP_ANNOTATION",
    "GROUP_LABEL",
    "GROUP_META",
    "KEY_NAMESPACE",
    "KEY_POD_NAME",
    "KEY_REQUIRED_NODE",
    "TAG_REQUIRED_NODE",
    "TAG_SCORE_NODES",
    # constants: application tags and misc
    "APP_TAG_CREATE_FORCE",
    "APP_TAG_NAMESPACE_RESOURCE_GUARANTEED",
    "APP_TAG_NAMESPACE_RESOURCE_QUOTA",
    "APP_TAG_STATE_AWARE_DISABLE",
    "NODE_READY_ATTRIBUTE",
    "ROLE_TAG",
    "HISTORY_KEY_TAG",
    # tag helpers
    "foreign_type",
    "is_app_creation_forced",
    "required_node",
]

from pyscheduler.si.construction import (
    EMPTY_MAP,
    as_map,
    as_optional_resource,
    as_resource,
    as_tuple,
    empty_map,
    negative_reason,
    set_frozen,
    slot_setters,
    through_slots,
)
from pyscheduler.si.vocabulary import (  # noqa: F401  (re-exported: the SI is one namespace)
    ARCH,
    HOST_NAME,
    RACK_NAME,
    OS,
    INSTANCE_TYPE,
    FAILURE_DOMAIN_ZONE,
    FAILURE_DOMAIN_REGION,
    LOCAL_IMAGES,
    NODE_PARTITION,
    APPLICATION_ID,
    CONTAINER_IMAGE,
    CONTAINER_PORTS,
    DOMAIN_K8S,
    DOMAIN_YUNIKORN,
    GROUP_META,
    GROUP_LABEL,
    GROUP_ANNOTATION,
    KEY_POD_NAME,
    KEY_NAMESPACE,
    KEY_REQUIRED_NODE,
    TAG_REQUIRED_NODE,
    CREATION_TIME,
    FOREIGN,
    ALLOC_TYPE_DEFAULT,
    ALLOC_TYPE_STATIC,
    TAG_SCORE_NODES,
    APP_TAG_NAMESPACE_RESOURCE_QUOTA,
    APP_TAG_NAMESPACE_RESOURCE_GUARANTEED,
    APP_TAG_STATE_AWARE_DISABLE,
    APP_TAG_CREATE_FORCE,
    NODE_READY_ATTRIBUTE,
    ROLE_TAG,
    HISTORY_KEY_TAG,
    required_node,
    foreign_type,
    is_app_creation_forced,
)

_INT32_MIN: Final = -(1 << 31)
_INT32_MAX: Final = (1 << 31) - 1


# -- enums -----------------------------------------------------------------------------------------


@unique
class TerminationType(IntEnum):
    """``si.TerminationType``: who ended an allocation and why.

    A release is bidirectional: the RM sends STOPPED_BY_RM; the core sends TIMEOUT,
    PREEMPTED_BY_SCHEDULER and PLACEHOLDER_REPLACED, and the RM confirms those by sending the
    same release back (the core does not echo a confirmation).
    """

    UNKNOWN_TERMINATION_TYPE = 0
    STOPPED_BY_RM = 1
    TIMEOUT = 2
    PREEMPTED_BY_SCHEDULER = 3
    PLACEHOLDER_REPLACED = 4


@unique
class NodeAction(IntEnum):
    """``si.NodeInfo_ActionFromRM``: what the core should do with a reported node.

    ``DECOMISSION`` keeps the SI's misspelling so names match the proto.
    """

    UNKNOWN_ACTION_FROM_RM = 0
    CREATE = 1
    UPDATE = 2
    DRAIN_NODE = 3
    DECOMISSION = 4
    DRAIN_TO_SCHEDULABLE = 5
    CREATE_DRAIN = 6


@unique
class ContainerSchedulingState(IntEnum):
    """``si.UpdateContainerSchedulingStateRequest_SchedulingState``."""

    UNKNOWN_SCHEDULING_STATE = 0
    SKIPPED = 1  # the core skipped the ask this cycle (e.g. no headroom)
    SCHEDULED = 2  # the ask was allocated on a node
    RESERVED = 3  # the ask holds a reservation on a node but is not allocated yet
    FAILED = 4  # every candidate node was tried and none fits


@unique
class ApplicationState(str, Enum):
    """An application's state as the core reports it (``UpdatedApplication.state``: YuniKorn's
    names, sent as the member's value). The core's state machine
    (:mod:`pyscheduler.objects.application_state`) uses these members; an RM parses the text
    once at its boundary and compares members from then on."""

    NEW = "New"
    ACCEPTED = "Accepted"
    RUNNING = "Running"
    REJECTED = "Rejected"
    COMPLETING = "Completing"
    COMPLETED = "Completed"
    FAILING = "Failing"
    FAILED = "Failed"
    EXPIRED = "Expired"
    RESUMING = "Resuming"

    @classmethod
    def parse(cls, name: str) -> ApplicationState | None:
        """The member named ``name``; None for a state this SI does not know (a newer core)."""
        try:
            return cls(name)
        except ValueError:
            return None


@unique
class SchedulingReason(IntEnum):
    """Why the core skipped or failed an ask (a pyscheduler extension of YuniKorn's
    ``UpdateContainerSchedulingStateRequest``, whose ``reason`` is prose only).

    An RM acts on this code, never on the ``reason`` text (which is for people and may change).
    The SKIPPED codes say the ask waits for quota, not for nodes; the FAILED codes say nodes
    were tried and none could take the ask.
    """

    UNKNOWN = 0
    # SKIPPED: the ask does not fit in its queue's (or a parent's) max headroom.
    QUEUE_QUOTA = 1
    # SKIPPED: the ask exceeds its user's or group's limit.
    USER_QUOTA = 2
    # FAILED: no node has room for the ask.
    NO_NODE_FITS = 3
    # FAILED: nodes had room, but the RM's predicates refused every one of them.
    PREDICATES = 4
    # FAILED: the ask's required node (TAG_REQUIRED_NODE) refuses it.
    REQUIRED_NODE = 5


# -- registration and configuration ----------------------------------------------------------------


def _rm_id_reason(rm_id: str) -> str | None:
    return None if rm_id else "rm ID is empty"


@dataclass(frozen=True, slots=True)
class RegisterResourceManagerRequest:
    """Registers an RM (synchronous). Re-registering an ``rm_id`` drops all its partitions first."""

    rm_id: str = ""
    version: str = ""
    policy_group: str = ""
    build_info: Mapping[str, str] = field(default_factory=empty_map, hash=False)
    # The serialised queues.yaml for this policy group.
    config: str = ""
    # Settings not tied to the policy group (e.g. log levels, event tracking).
    extra_config: Mapping[str, str] = field(default_factory=empty_map, hash=False)

    def __post_init__(self) -> None:
        set_frozen(self, "build_info", as_map(self.build_info))
        set_frozen(self, "extra_config", as_map(self.extra_config))

    def validate(self) -> str | None:
        """``None`` when well formed, else why not."""
        return _rm_id_reason(self.rm_id)


@dataclass(frozen=True, slots=True)
class RegisterResourceManagerResponse:
    """Successful registration. Intentionally empty, as in the SI: failures are errors."""


@dataclass(frozen=True, slots=True)
class UpdateConfigurationRequest:
    """Replaces the RM's configuration (synchronous; ``config`` is the full queues.yaml text)."""

    rm_id: str = ""
    policy_group: str = ""
    config: str = ""
    extra_config: Mapping[str, str] = field(default_factory=empty_map, hash=False)

    def __post_init__(self) -> None:
        set_frozen(self, "extra_config", as_map(self.extra_config))

    def validate(self) -> str | None:
        """``None`` when well formed, else why not."""
        return _rm_id_reason(self.rm_id)


# -- allocations -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PreemptionPolicy:
    """Per-allocation preemption opt-outs.

    An allocation without a policy (``Allocation.preemption_policy is None``) is not the same as
    one with both flags false: the core applies its defaults to the former.
    """

    # May this allocation be preempted (by others)?
    allow_preempt_self: bool = False
    # May this allocation's ask preempt others of the same or lower priority?
    allow_preempt_other: bool = False


@dataclass(frozen=True, slots=True)
class Allocation:
    """An ask (no ``node_id``) or an allocation (with ``node_id``); one type since YUNIKORN-2778.

    From the RM: a new ask, an update of an existing one, a recovered or RM-bound allocation
    (with ``node_id``), or a foreign allocation (tag :data:`FOREIGN`, no application). From the
    core, in :class:`AllocationResponse`: a new allocation, with ``node_id`` set.
    """

    # The key the RM and the core share for this ask/allocation (the pod UID in K8s).
    allocation_key: str = ""
    allocation_tags: Mapping[str, str] = field(default_factory=empty_map, hash=False)
    resource_per_alloc: Resource = NO_RESOURCE
    # int32 in the SI; higher is more important; negative values are valid.
    priority: int = 0
    node_id: str = ""
    application_id: str = ""
    partition_name: str = ""
    task_group_name: str = ""
    placeholder: bool = False
    # This allocation created the application (e.g. the driver pod).
    originator: bool = False
    preemption_policy: PreemptionPolicy | None = None

    def __post_init__(self) -> None:
        set_frozen(self, "allocation_tags", as_map(self.allocation_tags))
        set_frozen(self, "resource_per_alloc", as_resource(self.resource_per_alloc))

    @classmethod
    def placed(cls, allocation_key: str, allocation_tags: Mapping[str, str], resource_per_alloc: Resource,
               priority: int, node_id: str, application_id: str, partition_name: str, task_group_name: str,
               placeholder: bool) -> Allocation:
        """The core's message for a new allocation (one per allocation): equal to the keyword
        constructor's, built three to four times faster. A frozen dataclass's ``__init__`` sets
        every field through ``object.__setattr__`` and then normalises two in ``__post_init__``;
        here the fields are set through their slots once, already normalised."""
        return through_slots(cls, _ALLOCATION_SLOTS, (
            allocation_key, as_map(allocation_tags), resource_per_alloc, priority, node_id, application_id,
            partition_name, task_group_name, placeholder, False, None,
        ))

    @property
    def is_foreign(self) -> bool:
        """A pod placed without YuniKorn (tag :data:`FOREIGN` present)."""
        return FOREIGN in self.allocation_tags

    def validate(self) -> str | None:
        """``None`` when well formed, else why not.

        The rules are YuniKorn's (placeholder needs a task group; an ask's resource must have a
        positive quantity and no negative one) plus the shape checks the SI implies (a key, an
        application unless foreign, a node if foreign, priority within int32).
        """
        if not self.allocation_key:
            return "allocation key is empty"
        if not _INT32_MIN <= self.priority <= _INT32_MAX:
            return f"priority {self.priority} is outside the int32 range"
        if self.placeholder and not self.task_group_name:
            return "placeholder allocation without a task group name"
        reason = negative_reason("resource", self.resource_per_alloc)
        if reason:
            return reason
        if self.is_foreign:
            kind = self.allocation_tags[FOREIGN]
            if kind not in (ALLOC_TYPE_DEFAULT, ALLOC_TYPE_STATIC):
                return f"unknown foreign allocation type {kind!r} (expected 'default' or 'static')"
            if not self.node_id:
                return "foreign allocation without a node ID"
            # A foreign pod may request nothing: it still only occupies what it declares.
            return None
        if not self.application_id:
            return "allocation without an application ID"
        if not any(v > 0 for v in self.resource_per_alloc.values()):
            return "resource has no positive quantity"
        return None


_ALLOCATION_SLOTS: Final = slot_setters(Allocation)


@dataclass(frozen=True, slots=True)
class AllocationRelease:
    """Releases allocations; sent by the RM, and by the core when it ends one.

    An empty ``allocation_key`` releases every allocation of the application; an empty
    ``application_id`` names a foreign allocation. ``partition_name`` is the RM's name (the
    proxy qualifies it with the RM ID); empty means ``default``. ``failed`` (a pyscheduler
    extension, not in YuniKorn's SI) says the released instance failed: role history counts it
    against the node for the instance's role.
    """

    partition_name: str = ""
    application_id: str = ""
    termination_type: TerminationType = TerminationType.UNKNOWN_TERMINATION_TYPE
    message: str = ""
    allocation_key: str = ""
    failed: bool = False
    # pyscheduler extensions: the ask that preempted this allocation, set by the core on a
    # PREEMPTED_BY_SCHEDULER release (empty otherwise), so the RM can name the preemptor
    # without reading it from ``message``. An RM's own release leaves them empty.
    preemptor_application_id: str = ""
    preemptor_allocation_key: str = ""

    def __post_init__(self) -> None:
        set_frozen(self, "termination_type", TerminationType(self.termination_type))

    def validate(self) -> str | None:
        """``None`` when well formed, else why not."""
        if not self.application_id and not self.allocation_key:
            return "release names neither an application ID nor an allocation key"
        if (self.preemptor_allocation_key or self.preemptor_application_id) and (
                self.termination_type is not TerminationType.PREEMPTED_BY_SCHEDULER):
            return "a preemptor is named on a release that is not PREEMPTED_BY_SCHEDULER"
        return None


@dataclass(frozen=True, slots=True)
class AllocationReleasesRequest:
    """The releases part of an :class:`AllocationRequest`."""

    allocations_to_release: tuple[AllocationRelease, ...] = ()

    def __post_init__(self) -> None:
        set_frozen(self, "allocations_to_release", as_tuple(self.allocations_to_release))


@dataclass(frozen=True, slots=True)
class AllocationRequest:
    """``UpdateAllocation``: new or updated asks and allocations, and releases (asynchronous)."""

    allocations: tuple[Allocation, ...] = ()
    releases: AllocationReleasesRequest | None = None
    rm_id: str = ""

    def __post_init__(self) -> None:
        set_frozen(self, "allocations", as_tuple(self.allocations))

    def validate(self) -> str | None:
        """The envelope only (the RM ID). Items are validated one by one (``Allocation.validate``,
        ``AllocationRelease.validate``) so one bad item is rejected without its neighbours."""
        return _rm_id_reason(self.rm_id)


@dataclass(frozen=True, slots=True)
class RejectedAllocation:
    """An ask or allocation the core refused, with why."""

    allocation_key: str = ""
    application_id: str = ""
    reason: str = ""


@dataclass(frozen=True, slots=True)
class AllocationResponse:
    """Callback ``update_allocation``: new allocations, releases and rejections."""

    new: tuple[Allocation, ...] = ()
    released: tuple[AllocationRelease, ...] = ()
    rejected_allocations: tuple[RejectedAllocation, ...] = ()

    def __post_init__(self) -> None:
        set_frozen(self, "new", as_tuple(self.new))
        set_frozen(self, "released", as_tuple(self.released))
        set_frozen(self, "rejected_allocations", as_tuple(self.rejected_allocations))

    @classmethod
    def of_new(cls, new: tuple[Allocation, ...]) -> AllocationResponse:
        """The core's response with new allocations only (see :func:`through_slots`)."""
        return through_slots(cls, _RESPONSE_SLOTS, (new, (), ()))


_RESPONSE_SLOTS: Final = slot_setters(AllocationResponse)


# -- applications ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UserGroupInformation:
    """The application owner. Empty ``groups`` are resolved by the core when needed."""

    user: str = ""
    groups: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        set_frozen(self, "groups", as_tuple(self.groups))


@dataclass(frozen=True, slots=True)
class AddApplicationRequest:
    """A new application. ``queue_name`` is a request: placement rules decide the queue."""

    application_id: str = ""
    queue_name: str = ""
    partition_name: str = ""
    ugi: UserGroupInformation | None = None
    tags: Mapping[str, str] = field(default_factory=empty_map, hash=False)
    # How long the app may run; 0 or negative: never expires.
    execution_timeout_milli_seconds: int = 0
    # The total resource the gang placeholders will ask for.
    placeholder_ask: Resource | None = None
    # "Hard" (fail after the placeholder timeout) or "Soft" (fall back to normal scheduling).
    gang_scheduling_style: str = ""

    def __post_init__(self) -> None:
        set_frozen(self, "tags", as_map(self.tags))
        set_frozen(self, "placeholder_ask", as_optional_resource(self.placeholder_ask))

    def validate(self) -> str | None:
        """``None`` when well formed, else why not (YuniKorn cannot resolve an empty user)."""
        if not self.application_id:
            return "application ID is empty"
        if self.ugi is None or not self.ugi.user:
            return "application has no user (ugi.user is empty)"
        return negative_reason("placeholder ask", self.placeholder_ask)


@dataclass(frozen=True, slots=True)
class RemoveApplicationRequest:
    """Removes an application; its allocations are released with STOPPED_BY_RM."""

    application_id: str = ""
    partition_name: str = ""

    def validate(self) -> str | None:
        """``None`` when well formed, else why not."""
        return None if self.application_id else "application ID is empty"


@dataclass(frozen=True, slots=True)
class ApplicationRequest:
    """``UpdateApplication``: applications to add and to remove (asynchronous)."""

    new: tuple[AddApplicationRequest, ...] = ()
    remove: tuple[RemoveApplicationRequest, ...] = ()
    rm_id: str = ""

    def __post_init__(self) -> None:
        set_frozen(self, "new", as_tuple(self.new))
        set_frozen(self, "remove", as_tuple(self.remove))

    def validate(self) -> str | None:
        """The envelope only (the RM ID); each application is validated on its own."""
        return _rm_id_reason(self.rm_id)


@dataclass(frozen=True, slots=True)
class RejectedApplication:
    application_id: str = ""
    reason: str = ""


@dataclass(frozen=True, slots=True)
class AcceptedApplication:
    application_id: str = ""


@dataclass(frozen=True, slots=True)
class UpdatedApplication:
    """An application state change (``state`` is YuniKorn's state name, e.g. ``"Running"``)."""

    application_id: str = ""
    state: str = ""
    # Unix nanoseconds of the transition.
    state_transition_timestamp: int = 0
    message: str = ""


@dataclass(frozen=True, slots=True)
class ApplicationResponse:
    """Callback ``update_application``: rejected, accepted and updated applications."""

    rejected: tuple[RejectedApplication, ...] = ()
    accepted: tuple[AcceptedApplication, ...] = ()
    updated: tuple[UpdatedApplication, ...] = ()

    def __post_init__(self) -> None:
        set_frozen(self, "rejected", as_tuple(self.rejected))
        set_frozen(self, "accepted", as_tuple(self.accepted))
        set_frozen(self, "updated", as_tuple(self.updated))


# -- nodes -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """A node report: create, update capacity/attributes, drain, undrain or decommission.

    ``schedulable_resource`` ``None`` on UPDATE means "capacity unchanged". There is no
    ``occupied_resource`` (removed from the SI by YUNIKORN-2888): pods placed without YuniKorn
    are sent as foreign allocations.
    """

    node_id: str = ""
    action: NodeAction = NodeAction.UNKNOWN_ACTION_FROM_RM
    # Replace the previously reported attributes (HOST_NAME, RACK_NAME, NODE_PARTITION, ...).
    # On UPDATE, empty means "attributes unchanged"; the partition attribute cannot change.
    attributes: Mapping[str, str] = field(default_factory=empty_map, hash=False)
    schedulable_resource: Resource | None = None
    # pyscheduler extensions, set by the node reporter manager (pyscheduler.reporter) on UPDATE:
    # the node's reported attributes, a layer under the RM's (the RM's win a shared key), and
    # the resources used outside the scheduler. None: unchanged; a mapping replaces the layer
    # (empty removes every reported attribute).
    reported_attributes: Mapping[str, str] | None = field(default=None, hash=False)
    reported_occupied: Resource | None = None

    def __post_init__(self) -> None:
        set_frozen(self, "action", NodeAction(self.action))
        set_frozen(self, "attributes", as_map(self.attributes))
        set_frozen(self, "schedulable_resource", as_optional_resource(self.schedulable_resource))
        if self.reported_attributes is not None:
            set_frozen(self, "reported_attributes", as_map(self.reported_attributes))
        set_frozen(self, "reported_occupied", as_optional_resource(self.reported_occupied))

    def validate(self) -> str | None:
        """``None`` when well formed, else why not."""
        if not self.node_id:
            return "node ID is empty"
        if self.action is NodeAction.UNKNOWN_ACTION_FROM_RM:
            return "node action is not set (UNKNOWN_ACTION_FROM_RM)"
        return negative_reason("schedulable resource", self.schedulable_resource) or negative_reason(
            "reported occupied resource", self.reported_occupied)


@dataclass(frozen=True, slots=True)
class NodeRequest:
    """``UpdateNode``: node reports (asynchronous)."""

    nodes: tuple[NodeInfo, ...] = ()
    rm_id: str = ""

    def __post_init__(self) -> None:
        set_frozen(self, "nodes", as_tuple(self.nodes))

    def validate(self) -> str | None:
        """The envelope only (the RM ID); each node is validated on its own."""
        return _rm_id_reason(self.rm_id)


@dataclass(frozen=True, slots=True)
class RejectedNode:
    node_id: str = ""
    reason: str = ""


@dataclass(frozen=True, slots=True)
class AcceptedNode:
    node_id: str = ""


@dataclass(frozen=True, slots=True)
class NodeResponse:
    """Callback ``update_node``: rejected and accepted nodes."""

    rejected: tuple[RejectedNode, ...] = ()
    accepted: tuple[AcceptedNode, ...] = ()

    def __post_init__(self) -> None:
        set_frozen(self, "rejected", as_tuple(self.rejected))
        set_frozen(self, "accepted", as_tuple(self.accepted))


# -- plugin messages -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PredicatesArgs:
    """Callback ``predicates``: may ``allocation_key`` go on ``node_id``?

    ``allocate`` is True when checking for an allocation, False for a reservation.
    """

    allocation_key: str = ""
    node_id: str = ""
    allocate: bool = False


@dataclass(frozen=True, slots=True)
class ScoreNodesArgs:
    """Optional callback ``score_nodes``: how much the RM prefers each of ``node_ids`` for
    ``allocation_key`` (every one fits and passed the predicates), in the core's node order."""

    allocation_key: str = ""
    node_ids: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        set_frozen(self, "node_ids", as_tuple(self.node_ids))


@dataclass(frozen=True, slots=True)
class PreemptionPredicatesArgs:
    """Optional callback ``preemption_predicates``: would the ask fit on the node if the victims
    ``preempt_allocation_keys[0..i]`` were removed, trying ``i`` from ``start_index`` on?"""

    allocation_key: str = ""
    node_id: str = ""
    preempt_allocation_keys: tuple[str, ...] = ()
    start_index: int = 0

    def __post_init__(self) -> None:
        set_frozen(self, "preempt_allocation_keys", as_tuple(self.preempt_allocation_keys))


@dataclass(frozen=True, slots=True)
class PreemptionPredicatesResponse:
    """``success`` and, if so, the index of the last victim that had to be removed."""

    success: bool = False
    index: int = 0


@dataclass(frozen=True, slots=True)
class UpdateContainerSchedulingStateRequest:
    """Callback ``update_container_scheduling_state``: what the core did with an ask this cycle.

    ``reason`` is the human message (the same text as the ask's request event); ``code`` (a
    pyscheduler extension) is what an RM acts on: SKIPPED comes with QUEUE_QUOTA or
    USER_QUOTA, FAILED with NO_NODE_FITS, PREDICATES or REQUIRED_NODE.
    """

    application_id: str = ""
    allocation_key: str = ""
    state: ContainerSchedulingState = ContainerSchedulingState.UNKNOWN_SCHEDULING_STATE
    reason: str = ""
    code: SchedulingReason = SchedulingReason.UNKNOWN

    def __post_init__(self) -> None:
        set_frozen(self, "state", ContainerSchedulingState(self.state))
        set_frozen(self, "code", SchedulingReason(self.code))

    def validate(self) -> str | None:
        """``None`` when well formed, else why not."""
        if not self.allocation_key:
            return "allocation key is empty"
        if self.state is ContainerSchedulingState.UNKNOWN_SCHEDULING_STATE:
            return "scheduling state is not set (UNKNOWN_SCHEDULING_STATE)"
        return None
