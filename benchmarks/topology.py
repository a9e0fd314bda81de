"""Topology-aware gang placement (issue 34): ``python -m benchmarks topology``.

5,000 nodes (32 GiB / 8 cores) in 10 blocks of 10 racks of 50, labelled as the core's
``topology.levels`` name them; 1,000 gangs of 8 to 32 one-core members (20,000 placeholders, half
the cluster's cores), all submitted at once to a FIFO leaf, each requiring one rack
(``pyscheduler.io/topology-required``). Timed: the wall seconds from the first submission to the
last gang placed whole (every placeholder allocated), in lockstep on the simulator's topology
harness (:func:`pyscheduler.sim.topology_run.run_topology`, ``until_placed``: nothing released),
against the same gangs without the tag (the levels still configured: the same nodes, the same
index), alternating in this process. Reported: gangs per second of each (median of the repeats)
and their ratio (target: at least 0.7x). ``--quick``: 500 nodes (2 blocks of 5 racks of 50), 100
gangs, one repeat each.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from benchmarks.machine import Progress, fmt_ratio
from pyscheduler.common.text_table import format_table
from pyscheduler.sim.topology_run import run_topology
from pyscheduler.sim.topology_spec import DEFAULT_LEVELS, GangKind, TopologySpec
from pyscheduler.sim.workload import GIB, FloatRange, IntRange, WorkloadSpec

REPEATS: Final = 3
TARGET: Final = 0.7
TAGGED, PLAIN = "required rack", "no topology"


def bench_spec(*, quick: bool) -> WorkloadSpec:
    """The benchmark's workload (see the module doc)."""
    topology = TopologySpec(
        count=100 if quick else 1_000, zones=1, blocks=2 if quick else 10, racks=5 if quick else 10, nodes=50,
        levels=DEFAULT_LEVELS, mix=(GangKind(IntRange(8, 32), 2, 1.0),), memory=2 * GIB, vcore=1_000,
        rate=1e6, run_time=FloatRange(60.0, 60.0))
    return WorkloadSpec(node_memory=32 * GIB, node_vcore=8_000, topology=topology)


@dataclass
class TopologyReport:
    quick: bool
    nodes: int = 0
    gangs: int = 0
    #: Variant -> gangs placed per wall second, each repeat.
    rates: dict[str, list[float]] = field(default_factory=dict)
    #: Gangs of the tagged runs not inside one rack (must stay 0).
    spread_required: int = 0
    failures: list[str] = field(default_factory=list)

    def rate(self, variant: str) -> float | None:
        rates = self.rates.get(variant)
        return statistics.median(rates) if rates else None

    def ratio(self) -> float | None:
        tagged, plain = self.rate(TAGGED), self.rate(PLAIN)
        return tagged / plain if tagged and plain else None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(ratio=self.ratio(), target=TARGET)
        return data

    def format(self) -> str:
        return format_report(self)


def run(*, quick: bool = False, progress: Callable[[str], None] | None = None) -> TopologyReport:
    if progress is None:
        progress = Progress()
    spec = bench_spec(quick=quick)
    report = TopologyReport(quick=quick, nodes=spec.topology.node_count, gangs=spec.topology.count)
    for repeat in range(1 if quick else REPEATS):
        # Alternating, the tagged run first on even repeats: neither variant always warms up.
        order = (True, False) if repeat % 2 == 0 else (False, True)
        for tagged in order:
            variant = TAGGED if tagged else PLAIN
            progress(f"topology: {variant}, repeat {repeat + 1}")
            summary = run_topology(spec, tagged=tagged, until_placed=True)
            if not summary.completed or summary.placed != summary.gangs:
                report.failures.append(f"{variant}: {summary.placed} of {summary.gangs} gangs placed; "
                                       f"{'; '.join(summary.problems[:3])}")
                continue
            if tagged:
                report.spread_required += summary.gangs - summary.in_required_domain
            report.rates.setdefault(variant, []).append(summary.gangs_per_second)
    if report.spread_required:
        report.failures.append(f"{report.spread_required} gangs requiring a rack were placed across racks")
    return report


def format_report(report: TopologyReport) -> str:
    ratio = report.ratio()
    rows = [
        [f"gangs requiring one rack (median of {len(report.rates.get(TAGGED, []))})",
         f"{_rate(report.rate(TAGGED))} gangs/s"],
        ["the same gangs without topology (same run)", f"{_rate(report.rate(PLAIN))} gangs/s"],
        [f"topology vs none (target {TARGET:g}x)",
         fmt_ratio(ratio) + ("" if ratio is None else " (met)" if ratio >= TARGET else " (BELOW TARGET)")],
    ]
    runs = ", ".join(f"{v}: {', '.join(f'{r:,.0f}' for r in rates)}" for v, rates in report.rates.items())
    parts = [
        "## Topology-aware gang placement",
        "",
        f"{report.nodes:,} nodes in racks of 50 (5 racks a block with --quick, else 10), {report.gangs:,} gangs of 8-32 one-core members "
        "submitted at once to a FIFO leaf, placed whole (lockstep, nothing released); each requiring one rack, "
        "against the same gangs without the requirement.",
        "",
        format_table(["what", "result"], rows, align="ll"),
        "",
        f"Runs (gangs/s): {runs or 'none'}.",
    ]
    if report.failures:
        parts += ["", "FAILURES:", *(f"- {f}" for f in report.failures)]
    return "\n".join(parts)


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"
