"""The workload file's optional sections: long-lived services with roles, a late tenant with a
guarantee, and gang jobs. Each is off by default (``count: 0``).

Each section is a frozen dataclass that checks itself (``problems``: the messages name the
file's keys), turns into plans (``plans``: no random draws, so the batch workload's stream is
the same with or without it), gives its leaf queue's queues.yaml settings where it needs any,
and reads and writes its part of the file format (``from_mapping`` / ``to_mapping``). How the
sections combine with the batch workload (their queues must not overlap) is
:class:`~pyscheduler.sim.workload.WorkloadSpec`'s business.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from pyscheduler.common.resources import MEMORY, VCORE
from pyscheduler.sim.workload_format import (
    check_keys,
    format_millicores,
    read_float,
    read_int,
    read_quantity,
    read_queue_path,
    read_seconds,
)
from pyscheduler.sim.workload_types import GIB, INT32_MAX, QUEUE_NAME, AppPlan, AskPlan, WorkloadError

__all__ = ["GANG_KEYS", "LATE_TENANT_KEYS", "SERVICE_KEYS", "GangSpec", "LateTenantSpec", "ServiceSpec"]


# -- services with roles -----------------------------------------------------------------------


@dataclass(frozen=True)
class ServiceSpec:
    """Long-lived services made of roles (role history's workload), stopped and started again.

    Each of ``count`` services is submitted at ``start`` as an application with history key
    ``svc-NNN`` and one ask per instance of each role (the ``pyscheduler.io/role`` tag). Its
    instances run ``run_time`` seconds; once all have stopped the application is removed, and
    ``down_time`` seconds later the service is submitted again (a new application id, the same
    history key), ``restarts`` times. Off by default (``count: 0``).
    """

    count: int = 0
    #: (role name, instances) in submission order.
    roles: tuple[tuple[str, int], ...] = (("master", 1), ("region", 30))
    memory: int = 8 * GIB
    vcore: int = 2_000
    queue: str = "root.services"
    start: float = 0.0
    run_time: float = 300.0
    down_time: float = 60.0
    restarts: int = 3

    def problems(self, node_memory: int, node_vcore: int) -> list[str]:
        if self.count < 0:
            return [f"services.count: must be zero or more, got {self.count}"]
        if self.count == 0:
            return []
        problems: list[str] = []
        if not self.roles:
            problems.append("services.roles: at least one role is needed")
        for name, instances in self.roles:
            if not _ROLE_NAME.match(name):
                problems.append(f"services.roles: {name!r} is not a role name (letters, digits, '_', '-', '.')")
            if instances < 1:
                problems.append(f"services.roles.{name}: must be at least 1, got {instances}")
        if not (self.memory > 0 and self.vcore > 0):
            problems.append(f"services: memory and vcore must be positive, got {self.memory}, {self.vcore}")
        if self.memory > node_memory or self.vcore > node_vcore:
            problems.append("services: an instance does not fit a node")
        for key, value, minimum in (("start", self.start, 0.0), ("run_time", self.run_time, 1e-3),
                                    ("down_time", self.down_time, 0.0)):
            if not (math.isfinite(value) and value >= minimum):
                problems.append(f"services.{key}: must be a finite number of seconds >= {minimum:g}, got {value}")
        if self.restarts < 0:
            problems.append(f"services.restarts: must be zero or more, got {self.restarts}")
        parts = self.queue.split(".")
        if parts[0] != "root" or len(parts) < 2 or not all(QUEUE_NAME.match(p) for p in parts[1:]):
            problems.append(f"services.queue: {self.queue!r} is not a leaf queue path")
        return problems

    def plans(self) -> list[AppPlan]:
        """Every incarnation of every service (no random draws: the batch workload's stream
        is the same with or without services)."""
        plans: list[AppPlan] = []
        for s in range(self.count):
            key = f"svc-{s:03d}"
            for g in range(self.restarts + 1):
                app_id = f"{key}-{g}"
                asks = tuple(
                    AskPlan(f"{app_id}-{role}-{i:03d}", self.memory, self.vcore, self.run_time, role)
                    for role, instances in self.roles for i in range(instances)
                )
                plans.append(AppPlan(app_id, self.queue, self.start if g == 0 else self.down_time, 0, asks,
                                     history_key=key, after=f"{key}-{g - 1}" if g else "", generation=g))
        return plans

    def to_mapping(self) -> dict[str, Any]:
        return {"count": self.count, "roles": dict(self.roles), "memory": self.memory,
                "vcore": format_millicores(self.vcore), "queue": self.queue, "start": self.start,
                "run_time": self.run_time, "down_time": self.down_time, "restarts": self.restarts}

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> ServiceSpec:
        default = cls()
        values: dict[str, Any] = {}
        if "count" in data:
            values["count"] = read_int(data["count"], "services.count")
        if "roles" in data:
            roles = data["roles"]
            if not isinstance(roles, Mapping) or not roles:
                raise WorkloadError(f"services.roles: expected a mapping of role name to instances, got {roles!r}")
            values["roles"] = tuple((str(name), read_int(n, f"services.roles.{name}")) for name, n in roles.items())
        if "memory" in data:
            values["memory"] = read_quantity(MEMORY, data["memory"], "services.memory")
        if "vcore" in data:
            values["vcore"] = read_quantity(VCORE, data["vcore"], "services.vcore")
        if "queue" in data:
            values["queue"] = read_queue_path(data["queue"])
        for key in ("start", "run_time", "down_time"):
            if key in data:
                values[key] = read_float(data[key], f"services.{key}")
        if "restarts" in data:
            values["restarts"] = read_int(data["restarts"], "services.restarts")
        return cls(**{**{f: getattr(default, f) for f in SERVICE_KEYS}, **values})


SERVICE_KEYS: Final = ("count", "roles", "memory", "vcore", "queue", "start", "run_time", "down_time", "restarts")
_ROLE_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,63}$")


# -- a late tenant with a guarantee (preemption) -------------------------------------------------


@dataclass(frozen=True)
class LateTenantSpec:
    """A tenant whose queue has a guarantee and who arrives when the cluster is already busy:
    what guaranteed-share preemption is for (``docs/preemption.md``). Off by default
    (``count: 0``).

    ``count`` applications of ``asks`` asks each (``memory`` / ``vcore``, running ``run_time``
    seconds, priority ``priority``) are all submitted at ``start`` to ``queue``, a leaf of its
    own guaranteed ``guaranteed_memory`` / ``guaranteed_vcore`` (0: that type is not
    guaranteed) with the property ``preemption.delay`` set to ``preemption_delay`` seconds.
    Its asks may preempt others; the batch applications' asks keep the core's defaults (they
    may be preempted, and never preempt). No random draws: the batch workload is the same
    with or without the tenant.
    """

    count: int = 0
    queue: str = "root.late"
    guaranteed_memory: int = 16 * GIB
    guaranteed_vcore: int = 8_000
    start: float = 60.0
    asks: int = 8
    memory: int = 2 * GIB
    vcore: int = 1_000
    run_time: float = 60.0
    priority: int = 0
    preemption_delay: float = 5.0

    @property
    def demand(self) -> tuple[int, int]:
        """(memory, vcore) of every ask of the tenant running at once."""
        total = self.count * self.asks
        return total * self.memory, total * self.vcore

    def guarantee_met(self, memory: int, vcore: int) -> bool:
        """Whether usage ``memory`` / ``vcore`` reaches the guarantee in every guaranteed type."""
        return memory >= self.guaranteed_memory and vcore >= self.guaranteed_vcore

    def problems(self, node_memory: int, node_vcore: int, node_count: int) -> list[str]:
        if self.count < 0:
            return [f"late_tenant.count: must be zero or more, got {self.count}"]
        if self.count == 0:
            return []
        problems: list[str] = []
        if self.asks < 1:
            problems.append(f"late_tenant.asks: must be at least 1, got {self.asks}")
        if not (self.memory > 0 and self.vcore > 0):
            problems.append(f"late_tenant: memory and vcore must be positive, got {self.memory}, {self.vcore}")
        if self.memory > node_memory or self.vcore > node_vcore:
            problems.append("late_tenant: an ask does not fit a node")
        problems += self._guarantee_problems(node_memory * node_count, node_vcore * node_count)
        for key, value, minimum in (("start", self.start, 0.0), ("run_time", self.run_time, 1e-3)):
            if not (math.isfinite(value) and value >= minimum):
                problems.append(f"late_tenant.{key}: must be a finite number of seconds >= {minimum:g}, got {value}")
        if not (math.isfinite(self.preemption_delay) and 0 < self.preemption_delay < _MAX_DELAY):
            problems.append(f"late_tenant.preemption_delay: must be above zero (and below {_MAX_DELAY:g} s), "
                            f"got {self.preemption_delay}")
        if not -INT32_MAX - 1 <= self.priority <= INT32_MAX:
            problems.append(f"late_tenant.priority: must fit in int32, got {self.priority}")
        parts = self.queue.split(".")
        if parts[0] != "root" or len(parts) < 2 or not all(QUEUE_NAME.match(p) for p in parts[1:]):
            problems.append(f"late_tenant.queue: {self.queue!r} is not a leaf queue path")
        return problems

    def _guarantee_problems(self, cluster_memory: int, cluster_vcore: int) -> list[str]:
        """A guarantee the tenant could never reach would make its figure meaningless."""
        memory, vcore = self.guaranteed_memory, self.guaranteed_vcore
        if memory < 0 or vcore < 0 or not (memory or vcore):
            return ["late_tenant.guaranteed: needs memory or vcore above zero (and neither below zero)"]
        demand_memory, demand_vcore = self.demand
        if demand_memory < memory or demand_vcore < vcore:
            return ["late_tenant.guaranteed: more than all the tenant's asks together (count x asks x size): "
                    "it could never be reached"]
        if memory > cluster_memory or vcore > cluster_vcore:
            return ["late_tenant.guaranteed: larger than the cluster"]
        return []

    def plans(self) -> list[AppPlan]:
        """The tenant's applications (``late-000``, ...), all arriving at ``start``."""
        return [
            AppPlan(
                app_id=(app_id := f"late-{i:03d}"),
                queue=self.queue,
                arrival=self.start,
                priority=self.priority,
                asks=tuple(AskPlan(f"{app_id}-ask-{j:04d}", self.memory, self.vcore, self.run_time)
                           for j in range(self.asks)),
                may_preempt=True,
            )
            for i in range(self.count)
        ]

    def queue_settings(self) -> dict[str, Any]:
        """The leaf's queues.yaml settings: its guarantee and its ``preemption.delay``."""
        guaranteed: dict[str, str] = {}
        if self.guaranteed_memory:
            guaranteed[MEMORY] = str(self.guaranteed_memory)
        if self.guaranteed_vcore:
            guaranteed[VCORE] = f"{self.guaranteed_vcore}m"
        delay_ms = max(round(self.preemption_delay * 1000), 1)
        return {"resources": {"guaranteed": guaranteed}, "properties": {"preemption.delay": f"{delay_ms}ms"}}

    def to_mapping(self) -> dict[str, Any]:
        guaranteed: dict[str, Any] = {}
        if self.guaranteed_memory:
            guaranteed["memory"] = self.guaranteed_memory
        if self.guaranteed_vcore:
            guaranteed["vcore"] = format_millicores(self.guaranteed_vcore)
        return {"count": self.count, "queue": self.queue, "guaranteed": guaranteed, "start": self.start,
                "asks": self.asks, "memory": self.memory, "vcore": format_millicores(self.vcore),
                "run_time": self.run_time, "priority": self.priority, "preemption_delay": self.preemption_delay}

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], base: LateTenantSpec | None = None) -> LateTenantSpec:
        """Reads the ``late_tenant`` section; missing keys keep ``base``'s values (the defaults)."""
        base = base or cls()
        values: dict[str, Any] = {}
        for key in ("count", "asks", "priority"):
            if key in data:
                values[key] = read_int(data[key], f"late_tenant.{key}")
        if "queue" in data:
            values["queue"] = read_queue_path(data["queue"])
        if "guaranteed" in data:
            values["guaranteed_memory"], values["guaranteed_vcore"] = _guaranteed(data["guaranteed"])
        if "memory" in data:
            values["memory"] = read_quantity(MEMORY, data["memory"], "late_tenant.memory")
        if "vcore" in data:
            values["vcore"] = read_quantity(VCORE, data["vcore"], "late_tenant.vcore")
        for key in ("start", "run_time"):
            if key in data:
                values[key] = read_float(data[key], f"late_tenant.{key}")
        if "preemption_delay" in data:
            values["preemption_delay"] = read_seconds(data["preemption_delay"], "late_tenant.preemption_delay")
        return dataclasses.replace(base, **values)


#: A preemption.delay the core reads as given (Go durations end near 292 years).
_MAX_DELAY: Final = 1e9
LATE_TENANT_KEYS: Final = ("count", "queue", "guaranteed", "start", "asks", "memory", "vcore", "run_time",
                           "priority", "preemption_delay")


def _guaranteed(value: Any) -> tuple[int, int]:
    """``{memory: Q, vcore: Q}``, either optional: (memory, vcore), 0 for a type left out."""
    if not isinstance(value, Mapping):
        raise WorkloadError(f"late_tenant.guaranteed: expected a mapping with memory and/or vcore, got {value!r}")
    check_keys(value, "late_tenant.guaranteed", ("memory", "vcore"))
    memory = read_quantity(MEMORY, value["memory"], "late_tenant.guaranteed.memory") if "memory" in value else 0
    vcore = read_quantity(VCORE, value["vcore"], "late_tenant.guaranteed.vcore") if "vcore" in value else 0
    return memory, vcore


# -- gang jobs -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class GangSpec:
    """Gang jobs (``docs/gang.md``): distributed jobs that are useless until every member runs.
    Off by default (``count: 0``).

    ``count`` jobs of ``members`` members each (``memory`` / ``vcore``, running ``run_time``
    seconds) arrive at ``start``, ``start + interval``, ... in ``queue`` (a FIFO leaf of its
    own). The RM submits a job's placeholders first (one per member, task group ``workers``,
    placeholder timeout ``timeout`` seconds, style ``style``), then its members once the job
    runs (every placeholder placed), as the Kubernetes shim does; it deletes each placeholder
    the core names and confirms. A Soft job whose placeholders time out resumes: its members
    are then submitted as ordinary asks; a Hard one fails and its members never run. No random
    draws: the batch workload is the same with or without gangs.
    """

    count: int = 0
    queue: str = "root.gangs"
    members: int = 10
    memory: int = 2 * GIB
    vcore: int = 1_000
    run_time: float = 60.0
    start: float = 0.0
    interval: float = 10.0
    timeout: float = 60.0
    style: str = "Soft"

    def problems(self, node_memory: int, node_vcore: int, node_count: int) -> list[str]:
        if self.count < 0:
            return [f"gangs.count: must be zero or more, got {self.count}"]
        if self.count == 0:
            return []
        problems: list[str] = []
        if self.members < 1:
            problems.append(f"gangs.members: must be at least 1, got {self.members}")
        if not (self.memory > 0 and self.vcore > 0):
            problems.append(f"gangs: memory and vcore must be positive, got {self.memory}, {self.vcore}")
        if self.memory > node_memory or self.vcore > node_vcore:
            problems.append("gangs: a member does not fit a node")
        if self.members * self.memory > node_memory * node_count or self.members * self.vcore > node_vcore * node_count:
            problems.append("gangs: a job is larger than the cluster (the core would reject it)")
        for key, value, minimum in (("start", self.start, 0.0), ("interval", self.interval, 0.0),
                                    ("run_time", self.run_time, 1e-3), ("timeout", self.timeout, 1e-3)):
            if not (math.isfinite(value) and value >= minimum):
                problems.append(f"gangs.{key}: must be a finite number of seconds >= {minimum:g}, got {value}")
        if self.style not in ("Soft", "Hard"):
            problems.append(f"gangs.style: must be Soft or Hard, got {self.style!r}")
        parts = self.queue.split(".")
        if parts[0] != "root" or len(parts) < 2 or not all(QUEUE_NAME.match(p) for p in parts[1:]):
            problems.append(f"gangs.queue: {self.queue!r} is not a leaf queue path")
        return problems

    def plans(self) -> list[AppPlan]:
        """The jobs (``gang-000``, ...) and their members."""
        return [
            AppPlan(
                app_id=(app_id := f"gang-{i:03d}"),
                queue=self.queue,
                arrival=round(self.start + i * self.interval, 3),
                priority=0,
                asks=tuple(AskPlan(f"{app_id}-member-{j:04d}", self.memory, self.vcore, self.run_time)
                           for j in range(self.members)),
                task_group="workers",
                gang_timeout=self.timeout,
                gang_style=self.style,
            )
            for i in range(self.count)
        ]

    def queue_settings(self) -> dict[str, Any]:
        """Gang applications need a FIFO leaf."""
        return {"properties": {"application.sort.policy": "fifo"}}

    def to_mapping(self) -> dict[str, Any]:
        return {"count": self.count, "queue": self.queue, "members": self.members, "memory": self.memory,
                "vcore": format_millicores(self.vcore), "run_time": self.run_time, "start": self.start,
                "interval": self.interval, "timeout": self.timeout, "style": self.style}

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], base: GangSpec | None = None) -> GangSpec:
        """Reads the ``gangs`` section; missing keys keep ``base``'s values (the defaults)."""
        base = base or cls()
        values: dict[str, Any] = {}
        for key in ("count", "members"):
            if key in data:
                values[key] = read_int(data[key], f"gangs.{key}")
        if "queue" in data:
            values["queue"] = read_queue_path(data["queue"])
        if "memory" in data:
            values["memory"] = read_quantity(MEMORY, data["memory"], "gangs.memory")
        if "vcore" in data:
            values["vcore"] = read_quantity(VCORE, data["vcore"], "gangs.vcore")
        for key in ("run_time", "start", "interval"):
            if key in data:
                values[key] = read_float(data[key], f"gangs.{key}")
        if "timeout" in data:
            values["timeout"] = read_seconds(data["timeout"], "gangs.timeout")
        if "style" in data:
            style = data["style"]
            if not isinstance(style, str):
                raise WorkloadError(f"gangs.style: expected Soft or Hard, got {style!r}")
            values["style"] = style
        return dataclasses.replace(base, **values)


GANG_KEYS: Final = ("count", "queue", "members", "memory", "vcore", "run_time", "start", "interval", "timeout",
                    "style")
