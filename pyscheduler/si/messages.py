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
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from enum import IntEnum, unique
from types import MappingProxyType
from typing import Final, TypeVar

from pyscheduler.common.resources import NO_RESOURCE, Resource

__all__ = [
    # enums
    "ContainerSchedulingState",
    "NodeAction",
    "TerminationType",
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
    # tag helpers
    "foreign_type",
    "is_app_creation_forced",
    "required_node",
]

# -- constants (SI lib/go/common/constants.go) ---------------------------------------------------

# Node attributes. NODE_PARTITION selects the partition (empty or missing: "default");
# INSTANCE_TYPE keys the resource-history buckets (missing: "UNKNOWN").
ARCH: Final = "si/arch"
HOST_NAME: Final = "si/hostname"
RACK_NAME: Final = "si/rackname"
OS: Final = "si/os"
INSTANCE_TYPE: Final = "si/instance-type"
FAILURE_DOMAIN_ZONE: Final = "si/zone"
FAILURE_DOMAIN_REGION: Final = "si/region"
LOCAL_IMAGES: Final = "si/local-images"
NODE_PARTITION: Final = "si/node-partition"

# Allocation attributes.
APPLICATION_ID: Final = "si/application-id"
CONTAINER_IMAGE: Final = "si/container-image"
CONTAINER_PORTS: Final = "si/container-ports"

# Allocation tags: keys are "<domain>[<group>]<key>", e.g. "kubernetes.io/meta/namespace".
DOMAIN_K8S: Final = "kubernetes.io/"
DOMAIN_YUNIKORN: Final = "yunikorn.apache.org/"
GROUP_META: Final = "meta/"
GROUP_LABEL: Final = "label/"
GROUP_ANNOTATION: Final = "annotation/"
KEY_POD_NAME: Final = "podName"
KEY_NAMESPACE: Final = "namespace"
KEY_REQUIRED_NODE: Final = "requiredNode"
# The core reads the required node from the domain-qualified key (GetRequiredNodeFromTag).
TAG_REQUIRED_NODE: Final = DOMAIN_YUNIKORN + KEY_REQUIRED_NODE
# Unix seconds at which the ask was created; sets the ask's createTime (else: now). The tag is
# used bare on allocations; YuniKorn reads DOMAIN_YUNIKORN + CREATION_TIME on application tags.
CREATION_TIME: Final = "creationTime"
# Marks an allocation of a pod the RM placed without YuniKorn (it occupies node resources but
# belongs to no application). "static" ones (e.g. K8s static pods) can never be preempted.
FOREIGN: Final = "foreign"
ALLOC_TYPE_DEFAULT: Final = "default"
ALLOC_TYPE_STATIC: Final = "static"

# "true" on an ask: the RM ranks the nodes it may go on (its preferred terms: Kubernetes'
# preferred affinity, ScheduleAnyway spreading), through the optional ``score_nodes`` callback.
TAG_SCORE_NODES: Final = "pyscheduler.io/score-nodes"

# Application tags and miscellaneous values shared by core and shim.
APP_TAG_NAMESPACE_RESOURCE_QUOTA: Final = "namespace.resourcequota"
APP_TAG_NAMESPACE_RESOURCE_GUARANTEED: Final = "namespace.resourceguaranteed"
APP_TAG_STATE_AWARE_DISABLE: Final = "application.stateaware.disable"
# "true" (only that exact value) places an app that no rule places in the recovery queue.
APP_TAG_CREATE_FORCE: Final = "application.create.force"
# Retired by the core (readiness is the shim's business); kept so old RMs' attributes parse.
NODE_READY_ATTRIBUTE: Final = "ready"

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


# -- coercion helpers ------------------------------------------------------------------------------

_EMPTY_MAP: Mapping[str, str] = MappingProxyType({})


def _empty_map() -> Mapping[str, str]:
    """Default factory: the shared, read-only empty map (a mappingproxy cannot be a plain default)."""
    return _EMPTY_MAP


_new_object = object.__new__
_M = TypeVar("_M")


def _slot_setters(cls: type) -> tuple[Callable[[object, object], None], ...]:
    """A slotted message class's field setters, in field order (:func:`_through_slots`)."""
    return tuple(getattr(cls, f.name).__set__ for f in fields(cls))


def _through_slots(cls: type[_M], setters: tuple[Callable[[object, object], None], ...], values: tuple[object, ...]) -> _M:
    """A frozen message of the core's own making (one per allocation), from every field's value
    in its final form: set through the slots, without the dataclass ``__init__``'s
    ``object.__setattr__`` per field and ``__post_init__`` (three to four times faster).
    ``strict``: a field added to the class and not given here fails at once."""
    message = _new_object(cls)
    for set_field, value in zip(setters, values, strict=True):
        set_field(message, value)
    return message


def _set(obj: object, name: str, value: object) -> None:
    # frozen=True forbids normal assignment; object.__setattr__ is the documented way to
    # normalise a field during construction.
    object.__setattr__(obj, name, value)


def _as_tuple(value: Iterable[object]) -> tuple[object, ...]:
    return value if type(value) is tuple else tuple(value)


def _as_map(value: Mapping[str, str]) -> Mapping[str, str]:
    # Always copy: a proxy over the caller's dict would change when the caller's dict does.
    if value is _EMPTY_MAP or not value:
        return _EMPTY_MAP
    return MappingProxyType(dict(value))


def _as_resource(value: Mapping[str, int]) -> Resource:
    return value if isinstance(value, Resource) else Resource(value)


def _as_optional_resource(value: Mapping[str, int] | None) -> Resource | None:
    return None if value is None else _as_resource(value)


def _negative_reason(what: str, resource: Resource | None) -> str | None:
    if resource is not None and resource.has_negative():
        negative = ", ".join(f"{k}={v}" for k, v in sorted(resource.items()) if v < 0)
        return f"{what} has negative quantities ({negative})"
    return None


# -- tag helpers -----------------------------------------------------------------------------------


def required_node(tags: Mapping[str, str]) -> str:
    """The node an allocation must run on (:data:`TAG_REQUIRED_NODE`), or ``""`` if none."""
    return tags.get(TAG_REQUIRED_NODE, "")


def foreign_type(tags: Mapping[str, str]) -> str:
    """The :data:`FOREIGN` tag's value (``"default"`` / ``"static"``), or ``""`` for a YuniKorn allocation."""
    return tags.get(FOREIGN, "")


def is_app_creation_forced(tags: Mapping[str, str]) -> bool:
    """True when an application's tags force its creation (:data:`APP_TAG_CREATE_FORCE` is ``"true"``).

    Any other value, including ``"True"`` or garbage, is not forced, as in YuniKorn.
    """
    return tags.get(APP_TAG_CREATE_FORCE, "") == "true"


# -- registration and configuration ----------------------------------------------------------------


def _rm_id_reason(rm_id: str) -> str | None:
    return None if rm_id else "rm ID is empty"


@dataclass(frozen=True, slots=True)
class RegisterResourceManagerRequest:
    """Registers an RM (synchronous). Re-registering an ``rm_id`` drops all its partitions first."""

    rm_id: str = ""
    version: str = ""
    policy_group: str = ""
    build_info: Mapping[str, str] = field(default_factory=_empty_map, hash=False)
    # The serialised queues.yaml for this policy group.
    config: str = ""
    # Settings not tied to the policy group (e.g. log levels, event tracking).
    extra_config: Mapping[str, str] = field(default_factory=_empty_map, hash=False)

    def __post_init__(self) -> None:
        _set(self, "build_info", _as_map(self.build_info))
        _set(self, "extra_config", _as_map(self.extra_config))

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
    extra_config: Mapping[str, str] = field(default_factory=_empty_map, hash=False)

    def __post_init__(self) -> None:
        _set(self, "extra_config", _as_map(self.extra_config))

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
    allocation_tags: Mapping[str, str] = field(default_factory=_empty_map, hash=False)
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
        _set(self, "allocation_tags", _as_map(self.allocation_tags))
        _set(self, "resource_per_alloc", _as_resource(self.resource_per_alloc))

    @classmethod
    def placed(cls, allocation_key: str, allocation_tags: Mapping[str, str], resource_per_alloc: Resource,
               priority: int, node_id: str, application_id: str, partition_name: str, task_group_name: str,
               placeholder: bool) -> Allocation:
        """The core's message for a new allocation (one per allocation): equal to the keyword
        constructor's, built three to four times faster. A frozen dataclass's ``__init__`` sets
        every field through ``object.__setattr__`` and then normalises two in ``__post_init__``;
        here the fields are set through their slots once, already normalised."""
        return _through_slots(cls, _ALLOCATION_SLOTS, (
            allocation_key, _as_map(allocation_tags), resource_per_alloc, priority, node_id, application_id,
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
        reason = _negative_reason("resource", self.resource_per_alloc)
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


_ALLOCATION_SLOTS: Final = _slot_setters(Allocation)


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

    def __post_init__(self) -> None:
        _set(self, "termination_type", TerminationType(self.termination_type))

    def validate(self) -> str | None:
        """``None`` when well formed, else why not."""
        if not self.application_id and not self.allocation_key:
            return "release names neither an application ID nor an allocation key"
        return None


@dataclass(frozen=True, slots=True)
class AllocationReleasesRequest:
    """The releases part of an :class:`AllocationRequest`."""

    allocations_to_release: tuple[AllocationRelease, ...] = ()

    def __post_init__(self) -> None:
        _set(self, "allocations_to_release", _as_tuple(self.allocations_to_release))


@dataclass(frozen=True, slots=True)
class AllocationRequest:
    """``UpdateAllocation``: new or updated asks and allocations, and releases (asynchronous)."""

    allocations: tuple[Allocation, ...] = ()
    releases: AllocationReleasesRequest | None = None
    rm_id: str = ""

    def __post_init__(self) -> None:
        _set(self, "allocations", _as_tuple(self.allocations))

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
        _set(self, "new", _as_tuple(self.new))
        _set(self, "released", _as_tuple(self.released))
        _set(self, "rejected_allocations", _as_tuple(self.rejected_allocations))

    @classmethod
    def of_new(cls, new: tuple[Allocation, ...]) -> AllocationResponse:
        """The core's response with new allocations only (see :func:`_through_slots`)."""
        return _through_slots(cls, _RESPONSE_SLOTS, (new, (), ()))


_RESPONSE_SLOTS: Final = _slot_setters(AllocationResponse)


# -- applications ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UserGroupInformation:
    """The application owner. Empty ``groups`` are resolved by the core when needed."""

    user: str = ""
    groups: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _set(self, "groups", _as_tuple(self.groups))


@dataclass(frozen=True, slots=True)
class AddApplicationRequest:
    """A new application. ``queue_name`` is a request: placement rules decide the queue."""

    application_id: str = ""
    queue_name: str = ""
    partition_name: str = ""
    ugi: UserGroupInformation | None = None
    tags: Mapping[str, str] = field(default_factory=_empty_map, hash=False)
    # How long the app may run; 0 or negative: never expires.
    execution_timeout_milli_seconds: int = 0
    # The total resource the gang placeholders will ask for.
    placeholder_ask: Resource | None = None
    # "Hard" (fail after the placeholder timeout) or "Soft" (fall back to normal scheduling).
    gang_scheduling_style: str = ""

    def __post_init__(self) -> None:
        _set(self, "tags", _as_map(self.tags))
        _set(self, "placeholder_ask", _as_optional_resource(self.placeholder_ask))

    def validate(self) -> str | None:
        """``None`` when well formed, else why not (YuniKorn cannot resolve an empty user)."""
        if not self.application_id:
            return "application ID is empty"
        if self.ugi is None or not self.ugi.user:
            return "application has no user (ugi.user is empty)"
        return _negative_reason("placeholder ask", self.placeholder_ask)


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
        _set(self, "new", _as_tuple(self.new))
        _set(self, "remove", _as_tuple(self.remove))

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
        _set(self, "rejected", _as_tuple(self.rejected))
        _set(self, "accepted", _as_tuple(self.accepted))
        _set(self, "updated", _as_tuple(self.updated))


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
    attributes: Mapping[str, str] = field(default_factory=_empty_map, hash=False)
    schedulable_resource: Resource | None = None
    # pyscheduler extensions, set by the node reporter manager (pyscheduler.reporter) on UPDATE:
    # the node's reported attributes, a layer under the RM's (the RM's win a shared key), and
    # the resources used outside the scheduler. None: unchanged; a mapping replaces the layer
    # (empty removes every reported attribute).
    reported_attributes: Mapping[str, str] | None = field(default=None, hash=False)
    reported_occupied: Resource | None = None

    def __post_init__(self) -> None:
        _set(self, "action", NodeAction(self.action))
        _set(self, "attributes", _as_map(self.attributes))
        _set(self, "schedulable_resource", _as_optional_resource(self.schedulable_resource))
        if self.reported_attributes is not None:
            _set(self, "reported_attributes", _as_map(self.reported_attributes))
        _set(self, "reported_occupied", _as_optional_resource(self.reported_occupied))

    def validate(self) -> str | None:
        """``None`` when well formed, else why not."""
        if not self.node_id:
            return "node ID is empty"
        if self.action is NodeAction.UNKNOWN_ACTION_FROM_RM:
            return "node action is not set (UNKNOWN_ACTION_FROM_RM)"
        return _negative_reason("schedulable resource", self.schedulable_resource) or _negative_reason(
            "reported occupied resource", self.reported_occupied)


@dataclass(frozen=True, slots=True)
class NodeRequest:
    """``UpdateNode``: node reports (asynchronous)."""

    nodes: tuple[NodeInfo, ...] = ()
    rm_id: str = ""

    def __post_init__(self) -> None:
        _set(self, "nodes", _as_tuple(self.nodes))

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
        _set(self, "rejected", _as_tuple(self.rejected))
        _set(self, "accepted", _as_tuple(self.accepted))


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
        _set(self, "node_ids", _as_tuple(self.node_ids))


@dataclass(frozen=True, slots=True)
class PreemptionPredicatesArgs:
    """Optional callback ``preemption_predicates``: would the ask fit on the node if the victims
    ``preempt_allocation_keys[0..i]`` were removed, trying ``i`` from ``start_index`` on?"""

    allocation_key: str = ""
    node_id: str = ""
    preempt_allocation_keys: tuple[str, ...] = ()
    start_index: int = 0

    def __post_init__(self) -> None:
        _set(self, "preempt_allocation_keys", _as_tuple(self.preempt_allocation_keys))


@dataclass(frozen=True, slots=True)
class PreemptionPredicatesResponse:
    """``success`` and, if so, the index of the last victim that had to be removed."""

    success: bool = False
    index: int = 0


@dataclass(frozen=True, slots=True)
class UpdateContainerSchedulingStateRequest:
    """Callback ``update_container_scheduling_state``: what the core did with an ask this cycle."""

    application_id: str = ""
    allocation_key: str = ""
    state: ContainerSchedulingState = ContainerSchedulingState.UNKNOWN_SCHEDULING_STATE
    reason: str = ""

    def __post_init__(self) -> None:
        _set(self, "state", ContainerSchedulingState(self.state))
