"""Event enums and the Python-side event record, with YuniKorn's wire values.

The numbers of :class:`EventRecordType`, :class:`EventChangeType` and
:class:`EventChangeDetail` are the wire values of ``si.EventRecord`` (the
scheduler-interface protobuf) as emitted in YuniKorn's REST JSON and sent to
the resource manager. They must never be renumbered: clients, the Rust event
system and stored histories all compare the raw integers. Retired values
(205, formerly APP_STARTING, and 301, formerly NODE_READY) are reserved and
deliberately have no member, so decoding them fails loudly.

:class:`AddEvent` is the signature of ``EventSystem.add``: the objects emit their events
through it without importing the event system.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum, unique
from types import MappingProxyType
from typing import Any, Protocol

__all__ = ["AddEvent", "EventChangeDetail", "EventChangeType", "EventRecord", "EventRecordType"]


@unique
class EventRecordType(IntEnum):
    """``EventRecord_Type``: which kind of object ``objectID`` names."""

    UNKNOWN_EVENTRECORD_TYPE = 0
    REQUEST = 1
    APP = 2
    NODE = 3
    QUEUE = 4
    USERGROUP = 5


@unique
class EventChangeType(IntEnum):
    """``EventRecord_ChangeType``: how the object changed."""

    NONE = 0
    SET = 1
    ADD = 2
    REMOVE = 3


@unique
class EventChangeDetail(IntEnum):
    """``EventRecord_ChangeDetail``: why the object changed.

    The hundreds digit groups the details by object kind: 1xx request,
    2xx application, 3xx node, 4xx queue, 5xx allocation, 6xx user/group.
    """

    DETAILS_NONE = 0

    REQUEST_CANCEL = 100
    REQUEST_ALLOC = 101
    REQUEST_TIMEOUT = 102

    APP_ALLOC = 200
    APP_REQUEST = 201
    APP_REJECT = 202
    APP_NEW = 203
    APP_ACCEPTED = 204
    # 205 is reserved (was APP_STARTING).
    APP_RUNNING = 206
    APP_COMPLETING = 207
    APP_COMPLETED = 208
    APP_FAILING = 209
    APP_FAILED = 210
    APP_RESUMING = 211
    APP_EXPIRED = 212
    APP_CANNOTRUN_QUEUE = 213
    APP_RUNNABLE_QUEUE = 214
    APP_CANNOTRUN_QUOTA = 215
    APP_RUNNABLE_QUOTA = 216

    # The misspelling is YuniKorn's and is kept so names match the proto.
    NODE_DECOMISSION = 300
    # 301 is reserved (was NODE_READY).
    NODE_SCHEDULABLE = 302
    NODE_ALLOC = 303
    NODE_CAPACITY = 304
    NODE_OCCUPIED = 305
    NODE_RESERVATION = 306

    QUEUE_CONFIG = 400
    QUEUE_DYNAMIC = 401
    QUEUE_TYPE = 402
    QUEUE_MAX = 403
    QUEUE_GUARANTEED = 404
    QUEUE_APP = 405
    QUEUE_ALLOC = 406
    QUEUE_PREEMPTION = 407

    ALLOC_CANCEL = 500
    ALLOC_PREEMPT = 501
    ALLOC_TIMEOUT = 502
    ALLOC_REPLACED = 503
    ALLOC_NODEREMOVED = 504

    UG_USER_LIMIT = 600
    UG_GROUP_LIMIT = 601
    UG_APP_LINK = 602
    UG_USER_RESOURCE = 603
    UG_GROUP_RESOURCE = 604


_EMPTY_RESOURCE: Mapping[str, int] = MappingProxyType({})


def _empty_resource() -> Mapping[str, int]:
    """Default factory: the shared, immutable empty resource."""
    return _EMPTY_RESOURCE


@dataclass(frozen=True, slots=True)
class EventRecord:
    """One event, for the few events that are built in Python.

    Most events are created and stored by the Rust event system; this class
    covers the rare ones that stay in Python, such as request events sent to
    the resource manager. Field values are coerced to the enums on creation,
    so an unknown or reserved number raises ``ValueError`` here rather than
    producing a record no client can decode. ``resource`` maps resource
    names to quantities and is copied into a read-only mapping.
    """

    type: EventRecordType
    change_type: EventChangeType
    change_detail: EventChangeDetail
    object_id: str
    reference_id: str = ""
    message: str = ""
    timestamp_ns: int = 0
    # Excluded from the hash (a mapping is not hashable) but still compared.
    resource: Mapping[str, int] = field(default_factory=_empty_resource, hash=False)

    def __post_init__(self) -> None:
        # frozen=True forbids normal assignment; object.__setattr__ is the
        # documented way to normalise fields during construction.
        object.__setattr__(self, "type", EventRecordType(self.type))
        object.__setattr__(self, "change_type", EventChangeType(self.change_type))
        object.__setattr__(self, "change_detail", EventChangeDetail(self.change_detail))
        if self.resource is not _EMPTY_RESOURCE:
            object.__setattr__(self, "resource", MappingProxyType(dict(self.resource)))

    def to_wire_dict(self) -> dict[str, Any]:
        """Return the record as YuniKorn's JSON object.

        Keys follow Go's field order (type, objectID, message, timestampNano,
        eventChangeType, eventChangeDetail, referenceID, resource). Every key
        but ``resource`` is ``omitempty`` in Go and is left out when it is 0
        or empty; upstream always sets a non-nil Resource, so ``resource`` is
        always present, as ``{}`` when there is nothing in it.
        """
        wire: dict[str, Any] = {}
        if self.type:
            wire["type"] = int(self.type)
        if self.object_id:
            wire["objectID"] = self.object_id
        if self.message:
            wire["message"] = self.message
        if self.timestamp_ns:
            wire["timestampNano"] = self.timestamp_ns
        if self.change_type:
            wire["eventChangeType"] = int(self.change_type)
        if self.change_detail:
            wire["eventChangeDetail"] = int(self.change_detail)
        if self.reference_id:
            wire["referenceID"] = self.reference_id
        wire["resource"] = _resource_to_wire(self.resource)
        return wire


def _resource_to_wire(resource: Mapping[str, int]) -> dict[str, Any]:
    """Encode an ``si.Resource`` as Go's encoding/json would.

    Go sorts map keys by their UTF-8 bytes, which for ``str`` is the same as
    sorting by code point. ``resources`` and ``value`` are both omitempty, so
    an empty map disappears and a zero quantity becomes ``{}``.
    """
    if not resource:
        return {}
    return {
        "resources": {
            name: ({"value": int(resource[name])} if resource[name] else {})
            for name in sorted(resource)
        }
    }


class AddEvent(Protocol):
    """The signature of :attr:`EventSystem.add`."""

    def __call__(
        self,
        type: int,
        change_type: int,
        change_detail: int,
        object_id: str,
        reference_id: str = "",
        message: str = "",
        resource: Mapping[str, int] | None = None,
        timestamp_ns: int | None = None,
    ) -> bool:
        """Record one event; never blocks. False when it was not kept (tracking disabled,
        queue or request store full, request events disabled). ``timestamp_ns`` None: now."""
        ...
