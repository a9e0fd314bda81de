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

Where the parts live (each module imports only those listed before it):

- :mod:`~pyscheduler.sim.workload_types`: units (:data:`MIB`, :data:`GIB`),
  :class:`WorkloadError`, the sampled ranges and the generated plans (:class:`AskPlan`,
  :class:`AppPlan`);
- :mod:`~pyscheduler.sim.workload_format`: the file format's value readers and writers;
- :mod:`~pyscheduler.sim.workload_sections`: the optional sections (:class:`ServiceSpec`,
  :class:`LateTenantSpec`, :class:`GangSpec`);
- this module: :class:`WorkloadSpec` (checks, generation, queues.yaml, the file format as a
  whole, loading text and files), :class:`Workload` and :data:`PRESETS`. Every public name of
  the modules above is importable from here too.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pyscheduler.common.resources import MEMORY, VCORE
from pyscheduler.sim.workload_format import (
    check_keys,
    format_millicores,
    read_float,
    read_float_range,
    read_int,
    read_int_range,
    read_quantity,
    read_queues,
    read_section,
    vcore_range_json,
)
from pyscheduler.sim.workload_sections import (
    GANG_KEYS,
    LATE_TENANT_KEYS,
    SERVICE_KEYS,
    GangSpec,
    LateTenantSpec,
    ServiceSpec,
)
from pyscheduler.sim.topology_spec import TOPOLOGY_KEYS, GangKind, TopologySpec
from pyscheduler.sim.workload_types import (
    ARRIVAL_PATTERNS,
    GIB,
    INT32_MAX,
    MIB,
    QUEUE_NAME,
    AppPlan,
    AskPlan,
    FloatRange,
    IntRange,
    WorkloadError,
)

__all__ = [
    "ARRIVAL_PATTERNS",
    "AppPlan",
    "AskPlan",
    "FloatRange",
    "GIB",
    "GangSpec",
    "IntRange",
    "LateTenantSpec",
    "MIB",
    "PRESETS",
    "ServiceSpec",
    "TopologySpec",
    "Workload",
    "WorkloadError",
    "WorkloadSpec",
]


# -- the generated workload ------------------------------------------------------------------


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
    "topology": "topology",
}

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
    #: A 3-level cluster and gangs requiring a domain (issue 34; none by default): a workload with
    #: one is played by pyscheduler.sim.topology_run, with and without topology placement.
    topology: TopologySpec = TopologySpec()

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
        int_range("priority", self.priority, -INT32_MAX - 1)
        if self.priority.high > INT32_MAX:
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
            if parts[0] != "root" or len(parts) < 2 or not all(QUEUE_NAME.match(p) for p in parts[1:]):
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
        problems += self.topology.problems(self.node_memory, self.node_vcore)
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
            "nodes": {"count": self.node_count, "memory": self.node_memory,
                      "vcore": format_millicores(self.node_vcore)},
            "queues": dict(zip(self.queues, self.queue_weights, strict=True)),
            "applications": {
                "count": self.app_count,
                "asks": self.asks_per_app.to_json(),
                "memory": self.ask_memory.to_json(),
                "vcore": vcore_range_json(self.ask_vcore),
                "priority": self.priority.to_json(),
                "run_time": self.run_time.to_json(),
            },
            "arrival": {"pattern": self.arrival, "rate": self.arrival_rate},
            "cycle_time": self.cycle_time,
            "services": self.services.to_mapping(),
            "late_tenant": self.late_tenant.to_mapping(),
            "gangs": self.gangs.to_mapping(),
            "topology": self.topology.to_mapping(),
        }

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], base: WorkloadSpec | None = None) -> WorkloadSpec:
        """Reads the file format (see ``docs/simulator.md``); a missing key takes ``base``'s value
        (the built-in workload by default, or a preset's). Raises :class:`WorkloadError` naming
        the key for an unknown key, a value of the wrong type or an impossible value."""
        if not isinstance(data, Mapping):
            raise WorkloadError(f"a workload is a mapping of keys to values, got {type(data).__name__}")
        default = base or cls()
        check_keys(data, "", ("seed", "nodes", "queues", "applications", "arrival", "cycle_time", "services",
                         "late_tenant", "gangs", "topology"))
        values: dict[str, Any] = {}
        if "seed" in data:
            values["seed"] = read_int(data["seed"], "seed")
        nodes = read_section(data, "nodes", ("count", "memory", "vcore"))
        if "count" in nodes:
            values["node_count"] = read_int(nodes["count"], "nodes.count")
        if "memory" in nodes:
            values["node_memory"] = read_quantity(MEMORY, nodes["memory"], "nodes.memory")
        if "vcore" in nodes:
            values["node_vcore"] = read_quantity(VCORE, nodes["vcore"], "nodes.vcore")
        if "queues" in data:
            values["queues"], values["queue_weights"] = read_queues(data["queues"])
        apps = read_section(data, "applications", ("count", "asks", "memory", "vcore", "priority", "run_time"))
        if "count" in apps:
            values["app_count"] = read_int(apps["count"], "applications.count")
        if "asks" in apps:
            values["asks_per_app"] = read_int_range(apps["asks"], "applications.asks", read_int)
        if "memory" in apps:
            values["ask_memory"] = read_int_range(apps["memory"], "applications.memory",
                                                  lambda v, p: read_quantity(MEMORY, v, p))
        if "vcore" in apps:
            values["ask_vcore"] = read_int_range(apps["vcore"], "applications.vcore",
                                                 lambda v, p: read_quantity(VCORE, v, p))
        if "priority" in apps:
            values["priority"] = read_int_range(apps["priority"], "applications.priority", read_int)
        if "run_time" in apps:
            values["run_time"] = read_float_range(apps["run_time"], "applications.run_time")
        arrival = read_section(data, "arrival", ("pattern", "rate"))
        if "pattern" in arrival:
            pattern = arrival["pattern"]
            if not isinstance(pattern, str):
                raise WorkloadError(f"arrival.pattern: expected one of {', '.join(ARRIVAL_PATTERNS)}, got {pattern!r}")
            values["arrival"] = pattern
        if "rate" in arrival:
            values["arrival_rate"] = read_float(arrival["rate"], "arrival.rate")
        if "cycle_time" in data:
            values["cycle_time"] = read_float(data["cycle_time"], "cycle_time")
        services = read_section(data, "services", SERVICE_KEYS)
        if services:
            values["services"] = ServiceSpec.from_mapping(services)
        late_tenant = read_section(data, "late_tenant", LATE_TENANT_KEYS)
        if late_tenant:
            values["late_tenant"] = LateTenantSpec.from_mapping(late_tenant, default.late_tenant)
        gangs = read_section(data, "gangs", GANG_KEYS)
        if gangs:
            values["gangs"] = GangSpec.from_mapping(gangs, default.gangs)
        topology = read_section(data, "topology", TOPOLOGY_KEYS)
        if topology:
            values["topology"] = TopologySpec.from_mapping(topology, default.topology)
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


# -- queue paths and queues.yaml ----------------------------------------------------------------


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
#:
#: ``topology``: 512 whole-node members' worth of cluster, 2 zones x 4 blocks x 8 racks x 8 nodes
#: (32 GiB / 8 cores each) and 300 gangs arriving 0.4/s (Poisson), running 30 s to 2 min, each
#: member a whole node: 60 % (weight 6) of 2-8 members requiring a rack, 10 % of exactly 8 (a
#: whole rack) requiring a rack, 30 % of 9-48 members requiring a block (64 nodes). About 70 % of
#: the nodes are asked for on average. Played with the tags and without (``topology_run``).
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
    "topology": WorkloadSpec(
        topology=TopologySpec(count=300, zones=2, blocks=4, racks=8, nodes=8, rate=0.4,
                              run_time=FloatRange(30.0, 120.0),
                              mix=(GangKind(IntRange(2, 8), 2, 6.0), GangKind(IntRange(8, 8), 2, 1.0),
                                   GangKind(IntRange(9, 48), 1, 3.0))),
    ),
}
