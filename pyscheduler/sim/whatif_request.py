"""A what-if request (``POST /ws/v1/partition/{p}/whatif``), read and bounded.

:func:`parse_request` turns the request's JSON (already decoded into plain data) into a
:class:`WhatIfRequest`, or raises :class:`~pyscheduler.dao.errors.BadRequest` with the first
thing wrong. Everything a hostile request could use to make the simulation big or slow is
bounded here, before any copy of the live state is made:

- at most :data:`MAX_ASKS` asks in all (``count`` included), at most :data:`MAX_ENDS` entries in
  ``ends``, at most :data:`MAX_TAGS` tags per object, strings at most :data:`MAX_STRING` long;
- every quantity an integer in ``0..MAX_QUANTITY`` (2^48: a quantity near int64's maximum would
  only saturate the copy's totals), and each ask's resource strictly positive;
- ``maxSeconds`` (the virtual horizon) within ``0..MAX_VIRTUAL_SECONDS``, ``budgetSeconds`` (the
  wall-clock budget) positive; the caller caps it at its own maximum.

The request form (docs/whatif.md has examples)::

    {"application": {"applicationID", "queueName", "user", "groups", "tags", "placeholderAsk",
                     "gangSchedulingStyle", "executionTimeoutMilliSeconds"},
     "asks": [{"allocationKey", "resource", "count", "priority", "taskGroupName", "placeholder",
               "tags", "requiredNode", "originator", "allowPreemptSelf", "allowPreemptOther"}],
     "ends": {"<allocationKey or applicationID>": seconds},
     "maxSeconds": seconds, "budgetSeconds": seconds}

Plain functions of their input: no core state is read here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pyscheduler.common.resources import Resource, ResourceError
from pyscheduler.dao.errors import BadRequest
from pyscheduler.si import messages as si

__all__ = [
    "DEFAULT_MAX_SECONDS",
    "MAX_ASKS",
    "MAX_ENDS",
    "MAX_QUANTITY",
    "MAX_STRING",
    "MAX_TAGS",
    "MAX_VIRTUAL_SECONDS",
    "AskSpec",
    "WhatIfApplication",
    "WhatIfRequest",
    "parse_request",
]

#: Asks of one request, ``count`` expanded.
MAX_ASKS: Final = 10_000
#: Entries of ``ends``.
MAX_ENDS: Final = 200_000
#: Tags of the application or of one ask.
MAX_TAGS: Final = 64
#: Characters of any identifier, tag name or tag value.
MAX_STRING: Final = 1024
#: The largest quantity of one resource type in one ask (2^48: 256 TiB of memory, 2.8e11 cores
#: in millicores); 10,000 asks of it still sum below int64's maximum.
MAX_QUANTITY: Final = 1 << 48
#: How far the simulation may look ahead (virtual seconds).
MAX_VIRTUAL_SECONDS: Final = 7 * 24 * 3600.0
#: The horizon when the request gives none: past the default preemption delay and one retry.
DEFAULT_MAX_SECONDS: Final = 60.0

_INT32: Final = 1 << 31
_APP_KEYS: Final = frozenset({"applicationID", "queueName", "user", "groups", "tags", "placeholderAsk",
                              "gangSchedulingStyle", "executionTimeoutMilliSeconds"})
_ASK_KEYS: Final = frozenset({"allocationKey", "resource", "count", "priority", "taskGroupName", "placeholder",
                              "tags", "requiredNode", "originator", "allowPreemptSelf", "allowPreemptOther"})
_TOP_KEYS: Final = frozenset({"application", "asks", "ends", "maxSeconds", "budgetSeconds", "manifest"})


@dataclass(frozen=True)
class WhatIfApplication:
    """The application to try (``application_id`` empty: the answer names one)."""

    application_id: str
    queue_name: str
    user: str
    groups: tuple[str, ...] = ()
    tags: Mapping[str, str] = field(default_factory=dict)
    placeholder_ask: Resource | None = None
    gang_style: str = ""
    execution_timeout_ms: int = 0


@dataclass(frozen=True)
class AskSpec:
    """One ask of the application (``count`` already expanded: one spec per ask)."""

    allocation_key: str
    resource: Resource
    priority: int = 0
    task_group_name: str = ""
    placeholder: bool = False
    tags: Mapping[str, str] = field(default_factory=dict)
    originator: bool = False
    allow_preempt_self: bool = True
    allow_preempt_other: bool = False

    def message(self, application_id: str, partition: str) -> si.Allocation:
        """The SI ask an RM would send for it."""
        return si.Allocation(
            allocation_key=self.allocation_key,
            allocation_tags=self.tags,
            resource_per_alloc=self.resource,
            priority=self.priority,
            application_id=application_id,
            partition_name=partition,
            task_group_name=self.task_group_name,
            placeholder=self.placeholder,
            originator=self.originator,
            preemption_policy=si.PreemptionPolicy(allow_preempt_self=self.allow_preempt_self,
                                                  allow_preempt_other=self.allow_preempt_other),
        )


@dataclass(frozen=True)
class WhatIfRequest:
    """A parsed request: the application, its asks, the running work's ends (virtual seconds
    from now, by allocation key or application ID; empty: unknown, nothing ends), the horizon
    and the wall-clock budget (None: the caller's default)."""

    application: WhatIfApplication
    asks: tuple[AskSpec, ...]
    ends: Mapping[str, float] = field(default_factory=dict)
    max_seconds: float = DEFAULT_MAX_SECONDS
    budget_seconds: float | None = None


def parse_request(body: Any) -> WhatIfRequest:
    """The request in ``body`` (decoded JSON); raises BadRequest naming what is wrong."""
    if not isinstance(body, Mapping):
        raise BadRequest("the body must be a JSON object with an application and its asks")
    _no_unknown(body, _TOP_KEYS, "the request")
    if "manifest" in body:
        raise BadRequest("manifest: a pod or Job manifest is read by the REST service (it needs the Kubernetes "
                         "package); here, send the application and its asks (docs/whatif.md)")
    application = _application(body.get("application"))
    asks = _asks(body.get("asks"))
    if application.placeholder_ask is None and any(a.placeholder for a in asks):
        raise BadRequest("asks: a placeholder ask needs the application's placeholderAsk")
    max_seconds = _seconds(body.get("maxSeconds", DEFAULT_MAX_SECONDS), "maxSeconds", MAX_VIRTUAL_SECONDS)
    ends = _ends(body.get("ends", {}), max_seconds)
    budget = body.get("budgetSeconds")
    budget_seconds = None if budget is None else _seconds(budget, "budgetSeconds", 3600.0)
    if budget_seconds is not None and budget_seconds <= 0:
        raise BadRequest("budgetSeconds must be positive")
    return WhatIfRequest(application, asks, ends, max_seconds, budget_seconds)


def _application(value: Any) -> WhatIfApplication:
    if not isinstance(value, Mapping):
        raise BadRequest("application must be an object with at least queueName and user")
    _no_unknown(value, _APP_KEYS, "application")
    groups = value.get("groups", [])
    if not isinstance(groups, list) or len(groups) > MAX_TAGS:
        raise BadRequest(f"application.groups must be a list of at most {MAX_TAGS} names")
    placeholder = value.get("placeholderAsk")
    timeout = value.get("executionTimeoutMilliSeconds", 0)
    if not _is_int(timeout) or not 0 <= timeout < 1 << 62:
        raise BadRequest("application.executionTimeoutMilliSeconds must be a non-negative integer")
    user = _string(value.get("user"), "application.user")
    if not user:
        raise BadRequest("application.user must not be empty")
    return WhatIfApplication(
        application_id=_string(value.get("applicationID", ""), "application.applicationID"),
        queue_name=_string(value.get("queueName", ""), "application.queueName"),
        user=user,
        groups=tuple(_string(g, "application.groups[]") for g in groups),
        tags=_tags(value.get("tags", {}), "application.tags"),
        placeholder_ask=None if placeholder is None else _resource(placeholder, "application.placeholderAsk",
                                                                    positive=True),
        gang_style=_string(value.get("gangSchedulingStyle", ""), "application.gangSchedulingStyle"),
        execution_timeout_ms=int(timeout),
    )


def _asks(value: Any) -> tuple[AskSpec, ...]:
    if not isinstance(value, list) or not value:
        raise BadRequest("asks must be a non-empty list")
    if len(value) > MAX_ASKS:
        raise BadRequest(f"asks: at most {MAX_ASKS} asks")
    out: list[AskSpec] = []
    seen: set[str] = set()
    for index, item in enumerate(value):
        where = f"asks[{index}]"
        if not isinstance(item, Mapping):
            raise BadRequest(f"{where} must be an object")
        _no_unknown(item, _ASK_KEYS, where)
        count = item.get("count", 1)
        if not _is_int(count) or count < 1:
            raise BadRequest(f"{where}.count must be a positive integer, got {count!r}")
        if len(out) + count > MAX_ASKS:
            raise BadRequest(f"asks: at most {MAX_ASKS} asks in all (count included)")
        priority = item.get("priority", 0)
        if not _is_int(priority) or not -_INT32 <= priority < _INT32:
            raise BadRequest(f"{where}.priority must be an int32")
        key = _string(item.get("allocationKey", f"whatif-ask-{index}"), f"{where}.allocationKey") or \
            f"whatif-ask-{index}"
        tags = dict(_tags(item.get("tags", {}), f"{where}.tags"))
        required = _string(item.get("requiredNode", ""), f"{where}.requiredNode")
        if required:
            tags[si.TAG_REQUIRED_NODE] = required
        base = AskSpec(
            allocation_key=key,
            resource=_resource(item.get("resource"), f"{where}.resource", positive=True),
            priority=int(priority),
            task_group_name=_string(item.get("taskGroupName", ""), f"{where}.taskGroupName"),
            placeholder=_bool(item.get("placeholder", False), f"{where}.placeholder"),
            tags=tags,
            originator=_bool(item.get("originator", False), f"{where}.originator"),
            allow_preempt_self=_bool(item.get("allowPreemptSelf", True), f"{where}.allowPreemptSelf"),
            allow_preempt_other=_bool(item.get("allowPreemptOther", False), f"{where}.allowPreemptOther"),
        )
        if base.placeholder and not base.task_group_name:
            raise BadRequest(f"{where}: a placeholder ask needs a taskGroupName")
        keys = [key] if count == 1 else [f"{key}-{n}" for n in range(count)]
        for one in keys:
            if one in seen:
                raise BadRequest(f"{where}: allocation key {one!r} appears twice")
            seen.add(one)
            out.append(base if one == key else AskSpec(
                one, base.resource, base.priority, base.task_group_name, base.placeholder, base.tags, base.originator,
                base.allow_preempt_self, base.allow_preempt_other))
    return tuple(out)


def _ends(value: Any, max_seconds: float) -> dict[str, float]:
    if not isinstance(value, Mapping):
        raise BadRequest("ends must be an object of allocation keys or application IDs to seconds from now")
    if len(value) > MAX_ENDS:
        raise BadRequest(f"ends: at most {MAX_ENDS} entries")
    return {_string(key, "ends key"): _seconds(seconds, f"ends[{key!r}]", max_seconds) for key, seconds in value.items()}


def _seconds(value: Any, where: str, maximum: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise BadRequest(f"{where} must be a number of seconds")
    if not 0 <= value <= maximum:
        raise BadRequest(f"{where} must be within 0..{maximum:g} seconds, got {value}")
    return float(value)


def _resource(value: Any, where: str, *, positive: bool) -> Resource:
    if not isinstance(value, Mapping) or not value:
        raise BadRequest(f"{where} must be an object of resource names to integer quantities")
    if len(value) > MAX_TAGS:
        raise BadRequest(f"{where}: at most {MAX_TAGS} resource types")
    quantities: dict[str, int] = {}
    for name, quantity in value.items():
        _string(name, f"{where} resource name")
        if not name:
            raise BadRequest(f"{where}: a resource name is empty")
        if not _is_int(quantity) or not 0 <= quantity <= MAX_QUANTITY:
            raise BadRequest(f"{where}.{name} must be an integer within 0..{MAX_QUANTITY}, got {quantity!r}")
        quantities[name] = int(quantity)
    try:
        resource = Resource(quantities)
    except ResourceError as err:  # already bounded above; kept as the last word on quantities
        raise BadRequest(f"{where}: {err}") from None
    if positive and not resource.strictly_greater_than_zero():
        raise BadRequest(f"{where} must ask for more than nothing, got {resource}")
    return resource


def _tags(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise BadRequest(f"{where} must be an object of strings")
    if len(value) > MAX_TAGS:
        raise BadRequest(f"{where}: at most {MAX_TAGS} tags")
    return {_string(k, f"{where} name"): _string(v, f"{where}[{k!r}]") for k, v in value.items()}


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise BadRequest(f"{where} must be a string")
    if len(value) > MAX_STRING:
        raise BadRequest(f"{where} is longer than {MAX_STRING} characters")
    return value


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise BadRequest(f"{where} must be true or false")
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _no_unknown(value: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    unknown = sorted(str(k) for k in value if k not in allowed)
    if unknown:
        raise BadRequest(f"{where}: unknown field(s) {', '.join(unknown[:5])} (known: {', '.join(sorted(allowed))})")
