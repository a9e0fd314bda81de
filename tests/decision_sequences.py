"""The allocation sequences issue 17's optimisations must not change, recorded by a core.

``sequences()`` runs every workload below in lockstep on the core it imports and returns, per
workload, every allocation as ``[allocation key, node]`` in the order the core made them.
``python tests/decision_sequences.py FILE`` writes them (gzipped JSON); run with ``PYTHONPATH``
holding an older core (see ``benchmarks/baseline.py``) it records that core's decisions.
``tests/data/issue17_decisions.json.gz`` was recorded by the core at the start of issue 17
(e5b4b6d~1); ``tests/test_same_decisions.py`` compares today's core with it.

The workloads: the simulator's random ones (12 leaves under 3 parents, fair and binpacking
node order; 200 leaves under 20 parents) with releases, priorities and waiting asks, and the
benchmarks' own shapes, small (YuniKorn's two queues, many queues, the scale shape's 1,000
leaves).
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import sys
from pathlib import Path
from typing import Any

#: 12 leaves under 3 parents, loaded so that asks wait for releases and queues take turns.
MANY_QUEUES: dict[str, Any] = {
    "seed": 11,
    "nodes": {"count": 12, "memory": "16Gi", "vcore": 8},
    "queues": {f"p{p}.l{leaf}": 1 + (p + leaf) % 3 for p in range(3) for leaf in range(4)},
    "applications": {
        "count": 60,
        "asks": [2, 12],
        "memory": ["256Mi", "3Gi"],
        "vcore": ["250m", "2"],
        "priority": [0, 3],
        "run_time": [1, 8],
    },
    "arrival": {"pattern": "poisson", "rate": 6},
}
#: The scale shape's tree in small: 200 leaves under 20 parents, most of them idle at any time,
#: on a loaded cluster.
SCALE_LIKE: dict[str, Any] = {
    **MANY_QUEUES,
    "seed": 17,
    "nodes": {"count": 16, "memory": "16Gi", "vcore": 8},
    "queues": {f"p{p}.l{leaf}": 1 + (3 * p + leaf) % 4 for p in range(20) for leaf in range(10)},
    "applications": {**MANY_QUEUES["applications"], "count": 90},
    "arrival": {"pattern": "poisson", "rate": 8},
}
WORKLOADS = {"many-queues": MANY_QUEUES, "scale-like": SCALE_LIKE}
#: (workload, node policy) of the simulated runs, and (shape, policy, nodes, asks) of the benchmark ones.
SIMULATED = (("many-queues", "fair"), ("many-queues", "binpacking"), ("scale-like", "fair"))
BENCHMARKED = (("yunikorn", "fair", 50, 1_000), ("yunikorn", "binpacking", 50, 1_000),
               ("many-queues", "fair", 100, 1_000), ("scale", "fair", 300, 2_000))

Decisions = list[tuple[str, str]]


def simulated(policy: str, workload: str) -> Decisions:
    """(allocation key, node) of every allocation of a simulated run, in the order made."""
    from pyscheduler.sim import SimulatedRM, WorkloadSpec

    rm = SimulatedRM(WorkloadSpec.from_mapping(WORKLOADS[workload]).generate(), policy=policy, mode="lockstep")
    seen: Decisions = []
    callback = rm.update_allocation

    def spy(response: Any) -> None:
        seen.extend((a.allocation_key, a.node_id) for a in response.new)
        callback(response)

    rm.update_allocation = spy  # type: ignore[method-assign]
    record = rm.run(timeout=60)
    assert record.completed, record.problems
    return seen


def benchmarked(shape: str, policy: str, nodes: int, asks: int) -> Decisions:
    """The benchmark's own shape, scheduled in lockstep: every (key, node) in order."""
    from benchmarks import scheduling

    setup = scheduling.build(policy, nodes, asks, True, shape)
    seen: Decisions = []
    count = setup.rm.update_allocation

    def spy(response: Any) -> None:
        seen.extend((a.allocation_key, a.node_id) for a in response.new)
        count(response)

    # The core binds an RM's methods once, at registration (pyscheduler.si.callback.bind_callbacks),
    # and build() registered it: the spy replaces the bound method the core delivers to.
    registered = setup.proxy.context._rms[scheduling.RM_ID]
    registered.calls = dataclasses.replace(registered.calls, update_allocation=spy)
    try:
        scheduling.allocate_in_lockstep(setup, asks)
    finally:
        setup.proxy.stop()
    assert len(seen) == asks
    return seen


def sequences() -> dict[str, Decisions]:
    """Every workload's decisions, by a name saying what ran."""
    out = {f"sim {workload} {policy}": simulated(policy, workload) for workload, policy in SIMULATED}
    for shape, policy, nodes, asks in BENCHMARKED:
        out[f"bench {shape} {policy} {nodes} nodes {asks} asks"] = benchmarked(shape, policy, nodes, asks)
    return out


def write(path: Path) -> None:
    data = {name: [list(pair) for pair in pairs] for name, pairs in sequences().items()}
    with gzip.open(path, "wt", encoding="utf-8") as out:
        json.dump(data, out, separators=(",", ":"))


def read(path: Path) -> dict[str, Decisions]:
    with gzip.open(path, "rt", encoding="utf-8") as source:
        data = json.load(source)
    return {name: [(key, node) for key, node in pairs] for name, pairs in data.items()}


if __name__ == "__main__":
    write(Path(sys.argv[1]))
