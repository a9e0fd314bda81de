"""The workload file's ``topology`` section: a 3-level cluster (zones, blocks, racks as node
labels) and a seeded mix of gangs, each asking for one domain of a level (issue 34).

:class:`TopologySpec` checks itself (``problems``: the messages name the file's keys), reads and
writes its part of the file format (``from_mapping`` / ``to_mapping``) and generates its gangs
(:meth:`TopologySpec.gangs`: drawn from ``random.Random(seed)`` in a fixed order). Off by default
(``count: 0``); a workload with a topology section is played by
:mod:`~pyscheduler.sim.topology_run` (with and without the tags), not by the batch runner.

The cluster: ``zones`` x ``blocks`` (per zone) x ``racks`` (per block) x ``nodes`` (per rack), of
the workload's node size; each node carries the three ``levels`` labels (outermost first) with
values ``z<i>``, ``z<i>-b<j>``, ``z<i>-b<j>-r<k>``; the partition's ``topology.levels`` are those
three labels in both runs, so the two runs see the same nodes.
"""

from __future__ import annotations

import dataclasses
import math
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
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
)
from pyscheduler.sim.workload_types import FloatRange, IntRange, WorkloadError

__all__ = ["DEFAULT_LEVELS", "TOPOLOGY_KEYS", "GangKind", "TopologyGang", "TopologySpec"]

#: The node label keys of the three levels, outermost first (Kubernetes' zone label, then two
#: labels of the example.com prefix the core's own tests use).
DEFAULT_LEVELS: Final = ("topology.kubernetes.io/zone", "example.com/block", "example.com/rack")
#: A node label key as the core's configuration accepts one (optional DNS prefix, then a name).
_LABEL_KEY: Final = re.compile(r"([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
#: Bounds that keep a hostile file from asking for a cluster or a mix no run could play.
MAX_NODES: Final = 20_000
MAX_GANGS: Final = 100_000
MAX_KINDS: Final = 32
TOPOLOGY_KEYS: Final = ("count", "zones", "blocks", "racks", "nodes", "levels", "mix", "memory", "vcore", "rate",
                        "run_time")
KIND_KEYS: Final = ("members", "level", "weight")


@dataclass(frozen=True)
class GangKind:
    """One entry of the mix: gangs of ``members`` members requiring one domain of ``level``
    (an index into the levels: 0 zone, 1 block, 2 rack), drawn with weight ``weight``."""

    members: IntRange
    level: int
    weight: float


@dataclass(frozen=True)
class TopologyGang:
    """One generated gang: ``members`` placeholders of the spec's member size, arriving at
    ``arrival`` (seconds), requiring one domain of level ``level`` (an index), running ``run_time``."""

    app_id: str
    arrival: float
    members: int
    level: int
    run_time: float


_DEFAULT_MIX: Final = (GangKind(IntRange(2, 8), 2, 6.0), GangKind(IntRange(8, 8), 2, 1.0),
                       GangKind(IntRange(9, 48), 1, 3.0))


@dataclass(frozen=True)
class TopologySpec:
    """See the module doc. ``memory`` / ``vcore``: one member's size (0: a whole node, the
    default); ``rate``: gangs per second, Poisson arrivals; ``run_time``: seconds a gang runs once
    all its placeholders are placed (drawn per gang)."""

    count: int = 0
    zones: int = 2
    blocks: int = 4
    racks: int = 8
    nodes: int = 8
    levels: tuple[str, str, str] = DEFAULT_LEVELS
    mix: tuple[GangKind, ...] = _DEFAULT_MIX
    memory: int = 0
    vcore: int = 0
    rate: float = 0.4
    run_time: FloatRange = FloatRange(30.0, 120.0)

    @property
    def node_count(self) -> int:
        return self.zones * self.blocks * self.racks * self.nodes

    def domain_nodes(self, level: int) -> int:
        """How many nodes one domain of ``level`` (0 zone, 1 block, 2 rack) has."""
        return (self.blocks * self.racks * self.nodes, self.racks * self.nodes, self.nodes)[level]

    def member_size(self, node_memory: int, node_vcore: int) -> tuple[int, int]:
        """One member's (memory, vcore): a whole node where the spec gives 0."""
        return self.memory or node_memory, self.vcore or node_vcore

    def problems(self, node_memory: int, node_vcore: int) -> list[str]:
        if self.count < 0:
            return [f"topology.count: must be zero or more, got {self.count}"]
        if self.count == 0:
            return []
        problems: list[str] = []
        if self.count > MAX_GANGS:
            problems.append(f"topology.count: at most {MAX_GANGS:,} gangs, got {self.count}")
        for key in ("zones", "blocks", "racks", "nodes"):
            if getattr(self, key) < 1:
                problems.append(f"topology.{key}: must be at least 1, got {getattr(self, key)}")
        if not problems and self.node_count > MAX_NODES:
            problems.append(f"topology: zones x blocks x racks x nodes is {self.node_count:,} nodes, at most "
                            f"{MAX_NODES:,}")
        for label in self.levels:
            if not _LABEL_KEY.fullmatch(label):
                problems.append(f"topology.levels: {label!r} is not a node label key")
        if len(set(self.levels)) != len(self.levels):
            problems.append("topology.levels: a label is named twice")
        memory, vcore = self.member_size(node_memory, node_vcore)
        if self.memory < 0 or self.vcore < 0:
            problems.append(f"topology: memory and vcore must be zero (a whole node) or positive, got "
                            f"{self.memory}, {self.vcore}")
        elif memory > node_memory or vcore > node_vcore:
            problems.append("topology: a member does not fit a node")
        per_node = min(node_memory // memory, node_vcore // vcore) if memory > 0 and vcore > 0 else 1
        problems += self._mix_problems(max(per_node, 1))
        if not (math.isfinite(self.rate) and self.rate > 0):
            problems.append(f"topology.rate: must be a positive number of gangs per second, got {self.rate}")
        low, high = self.run_time.low, self.run_time.high
        if not (math.isfinite(low) and math.isfinite(high) and 1e-3 <= low <= high):
            problems.append(f"topology.run_time: needs 0.001 <= minimum <= maximum seconds, got "
                            f"{self.run_time.to_json()}")
        return problems

    def _mix_problems(self, per_node: int) -> list[str]:
        if not self.mix:
            return ["topology.mix: at least one kind of gang is needed"]
        if len(self.mix) > MAX_KINDS:
            return [f"topology.mix: at most {MAX_KINDS} kinds, got {len(self.mix)}"]
        problems: list[str] = []
        for i, kind in enumerate(self.mix):
            where = f"topology.mix[{i}]"
            if not 0 <= kind.level < 3:
                problems.append(f"{where}.level: must be one of the levels")
                continue
            if kind.members.low < 1 or kind.members.low > kind.members.high:
                problems.append(f"{where}.members: needs 1 <= minimum <= maximum, got {kind.members.to_json()}")
            elif kind.members.high > self.domain_nodes(kind.level) * per_node:
                # Such a gang could never be placed with its requirement: the run would never end.
                problems.append(f"{where}.members: {kind.members.high} members do not fit one "
                                f"{self.levels[kind.level]} domain ({self.domain_nodes(kind.level)} nodes of "
                                f"{per_node} members each)")
            if not (math.isfinite(kind.weight) and kind.weight > 0):
                problems.append(f"{where}.weight: must be a positive number, got {kind.weight}")
        return problems

    def gangs(self, seed: int) -> list[TopologyGang]:
        """The gangs (``topo-00000``, ...), in arrival order. Draw order per gang: kind, members,
        run time, then the gap to the next arrival."""
        rng = random.Random(seed)
        weights = [kind.weight for kind in self.mix]
        arrival = 0.0
        gangs: list[TopologyGang] = []
        for i in range(self.count):
            kind = rng.choices(self.mix, weights=weights)[0]
            members = kind.members.sample(rng)
            run_time = self.run_time.sample(rng)
            gangs.append(TopologyGang(f"topo-{i:05d}", round(arrival, 3), members, kind.level, run_time))
            arrival += rng.expovariate(self.rate)
        return gangs

    # -- the file format --------------------------------------------------------------------

    def to_mapping(self) -> dict[str, Any]:
        return {
            "count": self.count, "zones": self.zones, "blocks": self.blocks, "racks": self.racks,
            "nodes": self.nodes, "levels": list(self.levels),
            "mix": [{"members": k.members.to_json(), "level": self.levels[k.level], "weight": k.weight}
                    for k in self.mix],
            "memory": self.memory, "vcore": format_millicores(self.vcore), "rate": self.rate,
            "run_time": self.run_time.to_json(),
        }

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], base: TopologySpec | None = None) -> TopologySpec:
        """Reads the ``topology`` section; missing keys keep ``base``'s values (the defaults).
        ``mix`` levels are read against the section's ``levels`` (given or kept)."""
        base = base or cls()
        values: dict[str, Any] = {}
        for key in ("count", "zones", "blocks", "racks", "nodes"):
            if key in data:
                values[key] = read_int(data[key], f"topology.{key}")
        levels = base.levels
        if "levels" in data:
            raw = data["levels"]
            if not isinstance(raw, list | tuple) or not all(isinstance(v, str) for v in raw):
                raise WorkloadError(f"topology.levels: expected a list of three node label keys, got {raw!r}")
            if len(raw) != 3:
                raise WorkloadError(f"topology.levels: three node label keys (zone, block, rack), got {len(raw)}")
            levels = values["levels"] = (raw[0], raw[1], raw[2])
        if "mix" in data:
            values["mix"] = _read_mix(data["mix"], levels)
        if "memory" in data:
            values["memory"] = read_quantity(MEMORY, data["memory"], "topology.memory")
        if "vcore" in data:
            values["vcore"] = read_quantity(VCORE, data["vcore"], "topology.vcore")
        if "rate" in data:
            values["rate"] = read_float(data["rate"], "topology.rate")
        if "run_time" in data:
            values["run_time"] = read_float_range(data["run_time"], "topology.run_time")
        return dataclasses.replace(base, **values)


def _read_mix(value: Any, levels: tuple[str, str, str]) -> tuple[GangKind, ...]:
    if not isinstance(value, list | tuple) or not value:
        raise WorkloadError(f"topology.mix: expected a non-empty list of {{members, level, weight}}, got {value!r}")
    if len(value) > MAX_KINDS:
        raise WorkloadError(f"topology.mix: at most {MAX_KINDS} kinds, got {len(value)}")
    kinds: list[GangKind] = []
    for i, entry in enumerate(value):
        where = f"topology.mix[{i}]"
        if not isinstance(entry, Mapping):
            raise WorkloadError(f"{where}: expected a mapping with keys {', '.join(KIND_KEYS)}, got {entry!r}")
        check_keys(entry, where, KIND_KEYS)
        if "members" not in entry or "level" not in entry:
            raise WorkloadError(f"{where}: members and level are required")
        level = entry["level"]
        if level not in levels:
            raise WorkloadError(f"{where}.level: {level!r} is not one of the levels ({', '.join(levels)})")
        weight = read_float(entry["weight"], f"{where}.weight") if "weight" in entry else 1.0
        kinds.append(GangKind(read_int_range(entry["members"], f"{where}.members", read_int),
                              levels.index(level), weight))
    return tuple(kinds)
