"""Workload descriptions for the simulator, and their deterministic generation.

A :class:`WorkloadSpec` says what to simulate: the nodes (count and size), the leaf queues
(with a weight each: how applications spread over them), the applications (count, asks per
application, ask size, priority, run time of each allocation) and how applications arrive.
:meth:`WorkloadSpec.generate` turns it into a :class:`Workload`: the concrete applications
and asks, drawn from ``random.Random(seed)`` in a fixed order, so one spec (seed included)
always gives the same workload, on any machine and Python version that keeps ``random``'s
documented sequence for ``randint``, ``uniform``, ``choices`` and ``expovariate``.

The file format (YAML or JSON; every key optional, a missing key takes the default
workload's value) is documented in ``docs/simulator.md``; :meth:`WorkloadSpec.from_mapping`
reads it, :meth:`WorkloadSpec.to_mapping` writes it back. :data:`PRESETS` names ready-made
specs (``pyscheduler simulate --preset NAME``); a file read over a preset takes the preset's
values for the keys it leaves out.

Inside, resource quantities are the SI's: memory in bytes, vcore in millicores. In a file they
are read exactly as queues.yaml reads them (Kubernetes' quantity grammar, numbers included):
``4Gi``, ``512Mi``, ``1073741824`` (bytes) for memory; ``2`` (two cores), ``500m`` for vcore.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pyscheduler.common.errors import SchedulerValueError
from pyscheduler.common.goduration import parse_seconds
from pyscheduler.common.resources import MEMORY, VCORE, ResourceError, parse_quantity

__all__ = [
    "ARRIVAL_PATTERNS",
    "AppPlan",
    "AskPlan",
    "FloatRange",
    "GangSpec",
    "IntRange",
    "LateTenantSpec",
    "PRESETS",
    "ServiceSpec",
    "Workload",
    "WorkloadError",
    "WorkloadSpec",
]

MIB: Final = 1 << 20
GIB: Final = 1 << 30

#: How applications arrive: all at once, evenly spaced at ``rate`` per second, or as a
#: Poisson process of ``rate`` per second (exponential gaps). The first one arrives at 0.
ARRIVAL_PATTERNS: Final = ("burst", "uniform", "poisson")

# A queue path element, as queues.yaml allows it (lower-cased by the core anyway).
_QUEUE_NAME = re.compile(r"^[a-z0-9_-]{1,64}$")


class WorkloadError(SchedulerValueError):
    """A workload description that cannot be used; the message names the key and the problem."""


# -- ranges ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IntRange:
    """An inclusive range of integers, sampled uniformly (``low == high``: a constant)."""

    low: int
    high: int

    def sample(self, rng: random.Random) -> int:
        """One value drawn from ``rng``. A constant draws nothing, so it never shifts the stream."""
        return self.low if self.low == self.high else rng.randint(self.low, self.high)

    @property
    def mean(self) -> float:
        return (self.low + self.high) / 2

    def to_json(self) -> int | list[int]:
        """The file-format value: a number for a constant, else ``[low, high]``."""
        return self.low if self.low == self.high else [self.low, self.high]


@dataclass(frozen=True)
class FloatRange:
    """An inclusive range of seconds, sampled uniformly and rounded to the millisecond
    (readable, and the same on every platform's float formatting)."""

    low: float
    high: float

    def sample(self, rng: random.Random) -> float:
        """One value drawn from ``rng``. A constant draws nothing, so it never shifts the stream."""
        return self.low if self.low == self.high else round(rng.uniform(self.low, self.high), 3)

    @property
    def mean(self) -> float:
        return (self.low + self.high) / 2

    def to_json(self) -> float | list[float]:
        """The file-format value: a number for a constant, else ``[low, high]``."""
        return self.low if self.low == self.high else [self.low, self.high]


# -- the generated workload ------------------------------------------------------------------


@dataclass(frozen=True)
class AskPlan:
    """One ask of a generated application: its key, size and how long its allocation runs;
    for a service's instance, its role."""

    key: str
    memory: int
    vcore: int
    run_time: float
    role: str = ""


@dataclass(frozen=True)
class AppPlan:
    """One generated application: submitted with all its asks at ``arrival`` (seconds)."""

    app_id: str
    queue: str
    #: Seconds from the start; for a service's later incarnation (``after`` set), seconds
    #: after the previous incarnation was removed.
    arrival: float
    priority: int
    asks: tuple[AskPlan, ...]
    #: A service's incarnation: its role history key, the application it follows, and its
    #: number (0: the first submission).
    history_key: str = ""
    after: str = ""
    generation: int = 0
    #: The late tenant's applications: their asks may preempt others (the SI's
    #: ``PreemptionPolicy(allow_preempt_self=True, allow_preempt_other=True)``).
    may_preempt: bool = False
    #: A gang job (the ``gangs`` section): its asks are the members of one task group, placed
    #: through placeholders; the placeholder timeout (seconds) and style (Soft or Hard).
    task_group: str = ""
    gang_timeout: float = 0.0
    gang_style: str = ""


@dataclass(frozen=True)
class Workload:
    """The concrete applications of a spec, in arrival order."""

    spec: WorkloadSpec
    apps: tuple[AppPlan, ...]

    @property
    def total_asks(self) -> int:
        return sum(len(app.asks) for app in self.apps)

    @property
    def cluster_memory(self) -> int:
        return self.spec.node_count * self.spec.node_memory

    @property
    def cluster_vcore(self) -> int:
        return self.spec.node_count * self.spec.node_vcore


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
        if parts[0] != "root" or len(parts) < 2 or not all(_QUEUE_NAME.match(p) for p in parts[1:]):
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
                "vcore": _millicores(self.vcore), "queue": self.queue, "start": self.start,
                "run_time": self.run_time, "down_time": self.down_time, "restarts": self.restarts}

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> ServiceSpec:
        default = cls()
        values: dict[str, Any] = {}
        if "count" in data:
            values["count"] = _int(data["count"], "services.count")
        if "roles" in data:
            roles = data["roles"]
            if not isinstance(roles, Mapping) or not roles:
                raise WorkloadError(f"services.roles: expected a mapping of role name to instances, got {roles!r}")
            values["roles"] = tuple((str(name), _int(n, f"services.roles.{name}")) for name, n in roles.items())
        if "memory" in data:
            values["memory"] = _quantity(MEMORY, data["memory"], "services.memory")
        if "vcore" in data:
            values["vcore"] = _quantity(VCORE, data["vcore"], "services.vcore")
        if "queue" in data:
            values["queue"] = _queue_path(data["queue"])
        for key in ("start", "run_time", "down_time"):
            if key in data:
                values[key] = _float(data[key], f"services.{key}")
        if "restarts" in data:
            values["restarts"] = _int(data["restarts"], "services.restarts")
        return cls(**{**{f: getattr(default, f) for f in _SERVICE_KEYS}, **values})


_SERVICE_KEYS: Final = ("count", "roles", "memory", "vcore", "queue", "start", "run_time", "down_time", "restarts")
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
        if not -_INT32_MAX - 1 <= self.priority <= _INT32_MAX:
            problems.append(f"late_tenant.priority: must fit in int32, got {self.priority}")
        parts = self.queue.split(".")
        if parts[0] != "root" or len(parts) < 2 or not all(_QUEUE_NAME.match(p) for p in parts[1:]):
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
            guaranteed["vcore"] = _millicores(self.guaranteed_vcore)
        return {"count": self.count, "queue": self.queue, "guaranteed": guaranteed, "start": self.start,
                "asks": self.asks, "memory": self.memory, "vcore": _millicores(self.vcore),
                "run_time": self.run_time, "priority": self.priority, "preemption_delay": self.preemption_delay}

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], base: LateTenantSpec | None = None) -> LateTenantSpec:
        """Reads the ``late_tenant`` section; missing keys keep ``base``'s values (the defaults)."""
        base = base or cls()
        values: dict[str, Any] = {}
        for key in ("count", "asks", "priority"):
            if key in data:
                values[key] = _int(data[key], f"late_tenant.{key}")
        if "queue" in data:
            values["queue"] = _queue_path(data["queue"])
        if "guaranteed" in data:
            values["guaranteed_memory"], values["guaranteed_vcore"] = _guaranteed(data["guaranteed"])
        if "memory" in data:
            values["memory"] = _quantity(MEMORY, data["memory"], "late_tenant.memory")
        if "vcore" in data:
            values["vcore"] = _quantity(VCORE, data["vcore"], "late_tenant.vcore")
        for key in ("start", "run_time"):
            if key in data:
                values[key] = _float(data[key], f"late_tenant.{key}")
        if "preemption_delay" in data:
            values["preemption_delay"] = _seconds(data["preemption_delay"], "late_tenant.preemption_delay")
        return dataclasses.replace(base, **values)


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
        if parts[0] != "root" or len(parts) < 2 or not all(_QUEUE_NAME.match(p) for p in parts[1:]):
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
                "vcore": _millicores(self.vcore), "run_time": self.run_time, "start": self.start,
                "interval": self.interval, "timeout": self.timeout, "style": self.style}

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], base: GangSpec | None = None) -> GangSpec:
        """Reads the ``gangs`` section; missing keys keep ``base``'s values (the defaults)."""
        base = base or cls()
        values: dict[str, Any] = {}
        for key in ("count", "members"):
            if key in data:
                values[key] = _int(data[key], f"gangs.{key}")
        if "queue" in data:
            values["queue"] = _queue_path(data["queue"])
        if "memory" in data:
            values["memory"] = _quantity(MEMORY, data["memory"], "gangs.memory")
        if "vcore" in data:
            values["vcore"] = _quantity(VCORE, data["vcore"], "gangs.vcore")
        for key in ("run_time", "start", "interval"):
            if key in data:
                values[key] = _float(data[key], f"gangs.{key}")
        if "timeout" in data:
            values["timeout"] = _seconds(data["timeout"], "gangs.timeout")
        if "style" in data:
            style = data["style"]
            if not isinstance(style, str):
                raise WorkloadError(f"gangs.style: expected Soft or Hard, got {style!r}")
            values["style"] = style
        return dataclasses.replace(base, **values)


_GANG_KEYS: Final = ("count", "queue", "members", "memory", "vcore", "run_time", "start", "interval", "timeout",
                     "style")


#: A preemption.delay the core reads as given (Go durations end near 292 years).
_MAX_DELAY: Final = 1e9
_LATE_TENANT_KEYS: Final = ("count", "queue", "guaranteed", "start", "asks", "memory", "vcore", "run_time",
                            "priority", "preemption_delay")


# -- the spec ----------------------------------------------------------------------------------

#: The file key each field is read from, so that errors name what the user wrote.
_KEY_OF_FIELD: Final = {
    "seed": "seed",
    "node_count": "nodes.count",
    "node_memory": "nodes.memory",
    "node_vcore": "nodes.vcore",
    "queues": "queues",
    "queue_weights": "queues",
    "app_count": "applications.count",
    "asks_per_app": "applications.asks",
    "ask_memory": "applications.memory",
    "ask_vcore": "applications.vcore",
    "priority": "applications.priority",
    "run_time": "applications.run_time",
    "arrival": "arrival.pattern",
    "arrival_rate": "arrival.rate",
    "cycle_time": "cycle_time",
    "services": "services",
    "late_tenant": "late_tenant",
    "gangs": "gangs",
}

_INT32_MAX: Final = (1 << 31) - 1


@dataclass(frozen=True)
class WorkloadSpec:
    """What to simulate; every field has the default workload's value.

    The default is a moderately loaded cluster: 100 nodes of 32 GiB / 8 cores, three leaf
    queues weighted 2:1:1, 200 applications of 5-40 asks (4,440 in all with seed 1) arriving
    at 0.55 per second, asks of 512 MiB-4 GiB and 0.25-1.5 cores that run 10-120 s. On
    average about 45 % of the memory and 65 % of the vcores are allocated; Poisson bursts
    briefly fill the vcores, so some asks wait seconds for a release.
    """

    seed: int = 1
    node_count: int = 100
    node_memory: int = 32 * GIB
    node_vcore: int = 8_000
    #: Leaf queue paths (``root.`` is prepended to names that lack it).
    queues: tuple[str, ...] = ("root.a", "root.b", "root.c")
    #: One positive weight per queue: the share of applications submitted to it.
    queue_weights: tuple[float, ...] = (2.0, 1.0, 1.0)
    app_count: int = 200
    asks_per_app: IntRange = IntRange(5, 40)
    ask_memory: IntRange = IntRange(512 * MIB, 4 * GIB)
    ask_vcore: IntRange = IntRange(250, 1_500)
    #: Drawn once per application: every ask of an application has its priority.
    priority: IntRange = IntRange(0, 3)
    #: Seconds an allocation runs before the RM releases it, drawn per ask.
    run_time: FloatRange = FloatRange(10.0, 120.0)
    arrival: str = "poisson"
    #: Applications per second (uniform and poisson; ignored for burst).
    arrival_rate: float = 0.55
    #: Simulated seconds one scheduling cycle takes in lockstep mode: with one allocation per
    #: cycle, this is what makes a burst of asks queue up in simulated time (0.1 ms: about
    #: the 10,000 allocations/s the core manages; 0 makes every cycle instantaneous).
    cycle_time: float = 0.0001
    #: Services with roles, stopped and started again (none by default).
    services: ServiceSpec = ServiceSpec()
    #: A tenant with a guarantee arriving on a busy cluster: preemption's workload (none by default).
    late_tenant: LateTenantSpec = LateTenantSpec()
    gangs: GangSpec = GangSpec()

    def __post_init__(self) -> None:
        for reason in self._problems():
            raise WorkloadError(reason)

    def _problems(self) -> list[str]:
        """Every problem with the values, first one first (``__post_init__`` raises it)."""
        k = _KEY_OF_FIELD
        problems: list[str] = []

        def positive(name: str, value: float) -> None:
            if not value > 0:
                problems.append(f"{k[name]}: must be positive, got {value}")

        def int_range(name: str, rng: IntRange, minimum: int) -> None:
            if rng.low < minimum:
                problems.append(f"{k[name]}: must be at least {minimum}, got {rng.low}")
            if rng.low > rng.high:
                problems.append(f"{k[name]}: the minimum {rng.low} is larger than the maximum {rng.high}")

        positive("node_count", self.node_count)
        positive("node_memory", self.node_memory)
        positive("node_vcore", self.node_vcore)
        positive("app_count", self.app_count)
        int_range("asks_per_app", self.asks_per_app, 1)
        int_range("ask_memory", self.ask_memory, 1)
        int_range("ask_vcore", self.ask_vcore, 1)
        int_range("priority", self.priority, -_INT32_MAX - 1)
        if self.priority.high > _INT32_MAX:
            problems.append(f"{k['priority']}: must fit in int32, got {self.priority.high}")
        if not (math.isfinite(self.run_time.low) and math.isfinite(self.run_time.high)):
            problems.append(f"{k['run_time']}: must be finite, got {self.run_time.to_json()}")
        elif self.run_time.low < 0 or self.run_time.low > self.run_time.high:
            problems.append(f"{k['run_time']}: needs 0 <= minimum <= maximum, got {self.run_time.to_json()}")
        # An ask larger than a node could never be placed: the run would never finish.
        if self.ask_memory.high > self.node_memory:
            problems.append(
                f"{k['ask_memory']}: the largest ask ({self.ask_memory.high}) does not fit a node "
                f"({k['node_memory']} = {self.node_memory})"
            )
        if self.ask_vcore.high > self.node_vcore:
            problems.append(
                f"{k['ask_vcore']}: the largest ask ({self.ask_vcore.high}) does not fit a node "
                f"({k['node_vcore']} = {self.node_vcore})"
            )
        if not self.queues:
            problems.append("queues: at least one leaf queue is needed")
        if len(self.queue_weights) != len(self.queues):
            problems.append(f"queues: {len(self.queues)} queues but {len(self.queue_weights)} weights")
        for path in self.queues:
            parts = path.split(".")
            if parts[0] != "root" or len(parts) < 2 or not all(_QUEUE_NAME.match(p) for p in parts[1:]):
                problems.append(
                    f"queues: {path!r} is not a leaf queue path (root.<name>[.<name>...], names of "
                    "lower-case letters, digits, '_' and '-')"
                )
        if len(set(self.queues)) != len(self.queues):
            problems.append("queues: a queue is listed twice")
        for path in self.queues:
            if any(other.startswith(path + ".") for other in self.queues):
                problems.append(f"queues: {path!r} is a parent of another listed queue, not a leaf")
        for weight in self.queue_weights:
            if not (math.isfinite(weight) and weight > 0):
                problems.append(f"queues: weights must be positive numbers, got {weight}")
        if self.arrival not in ARRIVAL_PATTERNS:
            problems.append(f"{k['arrival']}: must be one of {', '.join(ARRIVAL_PATTERNS)}, got {self.arrival!r}")
        elif self.arrival != "burst" and not (math.isfinite(self.arrival_rate) and self.arrival_rate > 0):
            problems.append(f"{k['arrival_rate']}: must be a positive number of applications per second, "
                            f"got {self.arrival_rate}")
        if not (math.isfinite(self.cycle_time) and self.cycle_time >= 0):
            problems.append(f"{k['cycle_time']}: must be zero or a positive number of seconds, got {self.cycle_time}")
        problems += self.services.problems(self.node_memory, self.node_vcore)
        if self.services.count and any(
            q == self.services.queue or q.startswith(self.services.queue + ".") or self.services.queue.startswith(q + ".")
            for q in self.queues
        ):
            problems.append(f"services.queue: {self.services.queue!r} must be a leaf queue of its own, not one of "
                            "the batch queues, their parent or their child")
        problems += self.late_tenant.problems(self.node_memory, self.node_vcore, self.node_count)
        problems += self.gangs.problems(self.node_memory, self.node_vcore, self.node_count)
        if self.gangs.count and any(
            _related(q, self.gangs.queue)
            for q in self.queues + ((self.services.queue,) if self.services.count else ())
            + ((self.late_tenant.queue,) if self.late_tenant.count else ())
        ):
            problems.append(f"gangs.queue: {self.gangs.queue!r} must be a leaf queue of its own, not one of the "
                            "other workloads' queues, their parent or their child")
        if self.late_tenant.count and any(
            _related(q, self.late_tenant.queue)
            for q in self.queues + ((self.services.queue,) if self.services.count else ())
        ):
            problems.append(f"late_tenant.queue: {self.late_tenant.queue!r} must be a leaf queue of its own, not "
                            "one of the batch or services queues, their parent or their child")
        return problems

    # -- generation ---------------------------------------------------------------------------

    def generate(self) -> Workload:
        """The concrete workload: the same spec always gives the same applications and asks.

        Draw order (fixed, so adding a field's draw later must not reorder these): per
        application, queue, priority, ask count, then per ask memory, vcore and run time,
        then the gap to the next arrival.
        """
        rng = random.Random(self.seed)
        apps: list[AppPlan] = []
        arrival = 0.0
        for i in range(self.app_count):
            app_id = f"app-{i:05d}"
            queue = rng.choices(self.queues, weights=self.queue_weights)[0]
            priority = self.priority.sample(rng)
            asks = tuple(
                AskPlan(
                    key=f"{app_id}-ask-{j:04d}",
                    memory=self.ask_memory.sample(rng),
                    vcore=self.ask_vcore.sample(rng),
                    run_time=self.run_time.sample(rng),
                )
                for j in range(self.asks_per_app.sample(rng))
            )
            apps.append(AppPlan(app_id, queue, round(arrival, 3), priority, asks))
            if self.arrival == "uniform":
                arrival += 1.0 / self.arrival_rate
            elif self.arrival == "poisson":
                arrival += rng.expovariate(self.arrival_rate)
        return Workload(self, tuple(apps) + tuple(self.services.plans()) + tuple(self.late_tenant.plans())
                        + tuple(self.gangs.plans()))

    def queues_yaml(self, policy: str, *, preemption: bool = True) -> str:
        """The queues.yaml for this workload: one partition, the listed leaves (and the parents
        they need) under a root open to everyone, with node sort policy ``policy`` and
        guaranteed-share preemption on or off (``preemption.enabled``); the late tenant's leaf
        has its guarantee and ``preemption.delay``."""
        leaves: dict[str, dict[str, Any]] = {path: {} for path in self.queues}
        if self.services.count:
            leaves[self.services.queue] = {}
        if self.late_tenant.count:
            leaves[self.late_tenant.queue] = self.late_tenant.queue_settings()
        if self.gangs.count:
            leaves[self.gangs.queue] = self.gangs.queue_settings()
        config = {
            "partitions": [
                {
                    "name": "default",
                    "nodesortpolicy": {"type": policy},
                    "preemption": {"enabled": preemption},
                    "queues": [{"name": "root", "submitacl": "*", "queues": _queue_entries(leaves)}],
                }
            ]
        }
        # JSON is YAML: no need to depend on a YAML emitter's formatting.
        return json.dumps(config, indent=2)

    # -- the file format --------------------------------------------------------------------

    def to_mapping(self) -> dict[str, Any]:
        """The file format for this spec (``from_mapping(spec.to_mapping()) == spec``)."""
        return {
            "seed": self.seed,
            "nodes": {"count": self.node_count, "memory": self.node_memory, "vcore": _millicores(self.node_vcore)},
            "queues": dict(zip(self.queues, self.queue_weights, strict=True)),
            "applications": {
                "count": self.app_count,
                "asks": self.asks_per_app.to_json(),
                "memory": self.ask_memory.to_json(),
                "vcore": _vcore_json(self.ask_vcore),
                "priority": self.priority.to_json(),
                "run_time": self.run_time.to_json(),
            },
            "arrival": {"pattern": self.arrival, "rate": self.arrival_rate},
            "cycle_time": self.cycle_time,
            "services": self.services.to_mapping(),
            "late_tenant": self.late_tenant.to_mapping(),
            "gangs": self.gangs.to_mapping(),
        }

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], base: WorkloadSpec | None = None) -> WorkloadSpec:
        """Reads the file format (see ``docs/simulator.md``); a missing key takes ``base``'s value
        (the built-in workload by default, or a preset's). Raises :class:`WorkloadError` naming
        the key for an unknown key, a value of the wrong type or an impossible value."""
        if not isinstance(data, Mapping):
            raise WorkloadError(f"a workload is a mapping of keys to values, got {type(data).__name__}")
        default = base or cls()
        _only(data, "", ("seed", "nodes", "queues", "applications", "arrival", "cycle_time", "services",
                         "late_tenant", "gangs"))
        values: dict[str, Any] = {}
        if "seed" in data:
            values["seed"] = _int(data["seed"], "seed")
        nodes = _section(data, "nodes", ("count", "memory", "vcore"))
        if "count" in nodes:
            values["node_count"] = _int(nodes["count"], "nodes.count")
        if "memory" in nodes:
            values["node_memory"] = _quantity(MEMORY, nodes["memory"], "nodes.memory")
        if "vcore" in nodes:
            values["node_vcore"] = _quantity(VCORE, nodes["vcore"], "nodes.vcore")
        if "queues" in data:
            values["queues"], values["queue_weights"] = _queues(data["queues"])
        apps = _section(data, "applications", ("count", "asks", "memory", "vcore", "priority", "run_time"))
        if "count" in apps:
            values["app_count"] = _int(apps["count"], "applications.count")
        if "asks" in apps:
            values["asks_per_app"] = _int_range(apps["asks"], "applications.asks", _int)
        if "memory" in apps:
            values["ask_memory"] = _int_range(apps["memory"], "applications.memory", lambda v, p: _quantity(MEMORY, v, p))
        if "vcore" in apps:
            values["ask_vcore"] = _int_range(apps["vcore"], "applications.vcore", lambda v, p: _quantity(VCORE, v, p))
        if "priority" in apps:
            values["priority"] = _int_range(apps["priority"], "applications.priority", _int)
        if "run_time" in apps:
            values["run_time"] = _float_range(apps["run_time"], "applications.run_time")
        arrival = _section(data, "arrival", ("pattern", "rate"))
        if "pattern" in arrival:
            pattern = arrival["pattern"]
            if not isinstance(pattern, str):
                raise WorkloadError(f"arrival.pattern: expected one of {', '.join(ARRIVAL_PATTERNS)}, got {pattern!r}")
            values["arrival"] = pattern
        if "rate" in arrival:
            values["arrival_rate"] = _float(arrival["rate"], "arrival.rate")
        if "cycle_time" in data:
            values["cycle_time"] = _float(data["cycle_time"], "cycle_time")
        services = _section(data, "services", _SERVICE_KEYS)
        if services:
            values["services"] = ServiceSpec.from_mapping(services)
        late_tenant = _section(data, "late_tenant", _LATE_TENANT_KEYS)
        if late_tenant:
            values["late_tenant"] = LateTenantSpec.from_mapping(late_tenant, default.late_tenant)
        gangs = _section(data, "gangs", _GANG_KEYS)
        if gangs:
            values["gangs"] = GangSpec.from_mapping(gangs, default.gangs)
        merged = {name: getattr(default, name) for name in _KEY_OF_FIELD}
        merged.update(values)
        return cls(**merged)

    @classmethod
    def from_text(cls, text: str, *, json_only: bool = False, base: WorkloadSpec | None = None) -> WorkloadSpec:
        """Reads a YAML (or JSON: JSON is YAML) document over ``base`` (see :meth:`from_mapping`).
        Raises :class:`WorkloadError`."""
        if json_only:
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise WorkloadError(f"not valid JSON: {exc}") from None
        else:
            import yaml  # deferred: only file-based workloads need it

            from pyscheduler.config.yaml_limits import YamlLimitError, check_nesting

            try:
                # Deep nesting crashes PyYAML's C composer: refuse it before loading.
                check_nesting(text)
                data = yaml.safe_load(text)
            except YamlLimitError as exc:
                raise WorkloadError(str(exc)) from None
            except yaml.YAMLError as exc:
                raise WorkloadError(f"not valid YAML: {' '.join(str(exc).split())}") from None
        if data is None:
            data = {}  # an empty file: the default workload (or base)
        return cls.from_mapping(data, base)

    @classmethod
    def from_file(cls, path: str | Path, base: WorkloadSpec | None = None) -> WorkloadSpec:
        """Reads a workload file over ``base`` (see :meth:`from_mapping`): ``.json`` as JSON,
        anything else as YAML. Raises :class:`WorkloadError` prefixed with the file name
        (``OSError`` if unreadable)."""
        path = Path(path)
        text = path.read_text(encoding="utf-8")
        try:
            return cls.from_text(text, json_only=path.suffix.lower() == ".json", base=base)
        except WorkloadError as exc:
            raise WorkloadError(f"{path}: {exc}") from None


# -- file-format readers -------------------------------------------------------------------------


def _only(data: Mapping[str, Any], where: str, allowed: tuple[str, ...]) -> None:
    for key in data:
        if key not in allowed:
            place = f"{where}: " if where else ""
            raise WorkloadError(f"{place}unknown key {key!r} (expected one of: {', '.join(allowed)})")


def _section(data: Mapping[str, Any], name: str, allowed: tuple[str, ...]) -> Mapping[str, Any]:
    section = data.get(name)
    if section is None:
        return {}
    if not isinstance(section, Mapping):
        raise WorkloadError(f"{name}: expected a mapping with keys {', '.join(allowed)}, got {section!r}")
    _only(section, name, allowed)
    return section


def _int(value: Any, path: str) -> int:
    # bool is an int subclass: "count: yes" is a mistake, not 1.
    if isinstance(value, bool) or not isinstance(value, int):
        raise WorkloadError(f"{path}: expected an integer, got {value!r}")
    return value


def _float(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise WorkloadError(f"{path}: expected a number, got {value!r}")
    return float(value)


def _quantity(name: str, value: Any, path: str) -> int:
    """A quantity as queues.yaml reads it: a number is the same as its text (vcore ``2`` is two
    cores, as in the queue configuration), so the two files never disagree on units."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise WorkloadError(f"{path}: expected a quantity such as 4Gi, 512Mi, 2 or 500m, got {value!r}")
    try:
        return parse_quantity(name, str(value), path)
    except ResourceError as exc:
        raise WorkloadError(str(exc)) from None


def _millicores(value: int) -> str:
    """A vcore quantity in the file format (whole cores when exact, else millicores)."""
    return str(value // 1000) if value % 1000 == 0 else f"{value}m"


def _vcore_json(rng: IntRange) -> str | list[str]:
    return _millicores(rng.low) if rng.low == rng.high else [_millicores(rng.low), _millicores(rng.high)]


def _pair(value: Any, path: str) -> tuple[Any, Any]:
    """``x`` -> (x, x); ``[lo, hi]`` or ``{min: lo, max: hi}`` -> (lo, hi)."""
    if isinstance(value, list | tuple):
        if len(value) != 2:
            raise WorkloadError(f"{path}: a range is [minimum, maximum], got {len(value)} values")
        return value[0], value[1]
    if isinstance(value, Mapping):
        _only(value, path, ("min", "max"))
        if "min" not in value or "max" not in value:
            raise WorkloadError(f"{path}: a range needs both min and max")
        return value["min"], value["max"]
    return value, value


def _int_range(value: Any, path: str, read: Callable[[Any, str], int]) -> IntRange:
    low, high = _pair(value, path)
    return IntRange(read(low, path), read(high, path))


def _float_range(value: Any, path: str) -> FloatRange:
    low, high = _pair(value, path)
    return FloatRange(_float(low, path), _float(high, path))


def _seconds(value: Any, path: str) -> float:
    """A number of seconds, or a Go duration such as ``5s`` or ``1m30s``."""
    if isinstance(value, str):
        try:
            return parse_seconds(value)
        except ValueError:
            raise WorkloadError(f"{path}: expected seconds or a duration such as 5s, got {value!r}") from None
    return _float(value, path)


def _guaranteed(value: Any) -> tuple[int, int]:
    """``{memory: Q, vcore: Q}``, either optional: (memory, vcore), 0 for a type left out."""
    if not isinstance(value, Mapping):
        raise WorkloadError(f"late_tenant.guaranteed: expected a mapping with memory and/or vcore, got {value!r}")
    _only(value, "late_tenant.guaranteed", ("memory", "vcore"))
    memory = _quantity(MEMORY, value["memory"], "late_tenant.guaranteed.memory") if "memory" in value else 0
    vcore = _quantity(VCORE, value["vcore"], "late_tenant.guaranteed.vcore") if "vcore" in value else 0
    return memory, vcore


def _related(a: str, b: str) -> bool:
    """Whether queue paths ``a`` and ``b`` are the same queue, or one is the other's ancestor."""
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def _queue_entries(leaves: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """queues.yaml entries under root for leaf paths (``root.x.y``) with their settings; the
    parents the paths need are created without settings."""
    tree: dict[str, Any] = {}
    settings: dict[tuple[str, ...], Mapping[str, Any]] = {}
    for path, leaf_settings in leaves.items():
        names = tuple(path.split(".")[1:])
        node = tree
        for name in names:
            node = node.setdefault(name, {})
        settings[names] = leaf_settings

    def entries(children: dict[str, Any], prefix: tuple[str, ...]) -> list[dict[str, Any]]:
        result = []
        for name, grandchildren in children.items():
            entry: dict[str, Any] = {"name": name, **settings.get((*prefix, name), {})}
            if grandchildren:
                entry["queues"] = entries(grandchildren, (*prefix, name))
            result.append(entry)
        return result

    return entries(tree, ())


def _queue_path(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise WorkloadError(f"queues: a queue name must be a non-empty string, got {name!r}")
    name = name.strip().lower()
    return name if name == "root" or name.startswith("root.") else f"root.{name}"


def _queues(value: Any) -> tuple[tuple[str, ...], tuple[float, ...]]:
    """A list of names (equal weights) or a mapping of name to weight."""
    if isinstance(value, Mapping):
        names = tuple(_queue_path(name) for name in value)
        weights = tuple(_float(weight, f"queues.{name}") for name, weight in value.items())
        return names, weights
    if isinstance(value, list | tuple):
        names = tuple(_queue_path(name) for name in value)
        return names, tuple(1.0 for _ in names)
    if isinstance(value, str):
        return (_queue_path(value),), (1.0,)
    raise WorkloadError(f"queues: expected a list of queue names or a mapping of name to weight, got {value!r}")


# -- presets ---------------------------------------------------------------------------------------

#: Ready-made workloads, by name (``pyscheduler simulate --preset NAME``; a workload file read
#: over a preset changes only the keys it gives).
#:
#: ``preemption``: tenant A (``root.tenant-a``, no guarantee) fills 10 nodes of 32 GiB / 8 cores
#: at time 0 with 100 one-core tasks of 4 to 6 minutes (80 run, 20 wait); at 60 s tenant B
#: (``root.tenant-b``, guaranteed 16 cores and 32 GiB, ``preemption.delay`` 5 s) submits 2
#: applications of 8 one-core tasks of 2 minutes. Without preemption B waits for A's tasks to
#: end; with it, B takes its guarantee back about 5 s after it arrives.
#:
#: ``gang``: 10 nodes of 32 GiB / 8 cores shared by a batch tenant (``root.batch``: 30
#: applications of 5 to 15 one-core tasks of 30 s to 2 min, arriving about one every 2 s) and
#: 8 distributed jobs (``root.gangs``: 24 one-core members each, a 90 s run, one every 15 s,
#: a 60 s placeholder timeout, Soft): a job starts only when all 24 members can run, or falls
#: back to an ordinary job after its timeout.
PRESETS: Final[Mapping[str, WorkloadSpec]] = {
    "preemption": WorkloadSpec(
        node_count=10,
        queues=("root.tenant-a",),
        queue_weights=(1.0,),
        app_count=10,
        asks_per_app=IntRange(10, 10),
        ask_memory=IntRange(2 * GIB, 2 * GIB),
        ask_vcore=IntRange(1_000, 1_000),
        priority=IntRange(0, 0),
        run_time=FloatRange(240.0, 360.0),
        arrival="burst",
        late_tenant=LateTenantSpec(
            count=2, queue="root.tenant-b", guaranteed_memory=32 * GIB, guaranteed_vcore=16_000, start=60.0,
            asks=8, memory=2 * GIB, vcore=1_000, run_time=120.0, priority=0, preemption_delay=5.0,
        ),
    ),
    "gang": WorkloadSpec(
        node_count=10,
        queues=("root.batch",),
        queue_weights=(1.0,),
        app_count=30,
        asks_per_app=IntRange(5, 15),
        ask_memory=IntRange(2 * GIB, 2 * GIB),
        ask_vcore=IntRange(1_000, 1_000),
        priority=IntRange(0, 0),
        run_time=FloatRange(30.0, 120.0),
        arrival="uniform",
        arrival_rate=0.5,
        gangs=GangSpec(count=8, queue="root.gangs", members=24, memory=2 * GIB, vcore=1_000, run_time=90.0,
                       start=0.0, interval=15.0, timeout=60.0, style="Soft"),
    ),
}
