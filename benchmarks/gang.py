"""Gang scheduling (issue 14): ``python -m benchmarks gang``.

Scheduling throughput in the many-queues shape (fair, 1,000 nodes, 10,000 asks in 1,000
applications of 10 over 100 leaves, events on, threaded scheduler) where every application is a
gang: its 10 placeholders are placed first (the application runs once all are), then each of its
10 asks replaces one, the RM confirming each placeholder's release at once as a shim does. Every
pod thus costs two scheduling decisions (a placeholder's allocation, its replacement) and the
RM's confirmation. Reported as allocations plus replacements per second, next to the same asks
without gangs, alternating fresh subprocesses in one run; and per pod (a pod placed and
running: one replacement, or one allocation without gangs), the gang's cost relative to the plain
shape.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from benchmarks.machine import Progress, fmt_ratio, format_table
from benchmarks.scheduling import GANG_SHAPE, MANY_QUEUES_SHAPE, alternating_rates, median_rate

REPEATS: Final = 3


@dataclass
class GangReport:
    quick: bool
    #: Shape -> rate of each repeat (threaded): allocations plus replacements per second for
    #: the gang shape, allocations per second for the plain one.
    rates: dict[str, list[float]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def gang_rate(self) -> float | None:
        return median_rate(self.rates, GANG_SHAPE)

    def plain_rate(self) -> float | None:
        return median_rate(self.rates, MANY_QUEUES_SHAPE)

    def pods_ratio(self) -> float | None:
        """Pods running per second with gangs over without (a gang pod: two decisions)."""
        gang, plain = self.gang_rate(), self.plain_rate()
        return gang / 2 / plain if gang and plain else None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["pods_ratio"] = self.pods_ratio()
        return data

    def format(self) -> str:
        return format_report(self)


def run(*, quick: bool = False, progress: Callable[[str], None] | None = None) -> GangReport:
    if progress is None:
        progress = Progress()
    report = GangReport(quick=quick)
    alternating_rates((GANG_SHAPE, MANY_QUEUES_SHAPE), quick=quick, repeats=1 if quick else REPEATS,
                      family="gang", rates=report.rates, failures=report.failures, progress=progress, swap=True)
    return report


def format_report(report: GangReport) -> str:
    gang, plain = report.gang_rate(), report.plain_rate()
    rows = [
        ["every application a gang: placeholders placed, then replaced (threaded, median)",
         f"{_rate(gang)} allocations + replacements/s ({_rate(gang / 2 if gang else None)} pods/s)"],
        ["the same asks without gangs (threaded, median)", f"{_rate(plain)} allocations/s"],
        ["pods running per second, gangs vs none (same run)", fmt_ratio(report.pods_ratio())],
    ]
    runs = ", ".join(f"{shape}: {', '.join(f'{r:,.0f}' for r in rates)}" for shape, rates in report.rates.items())
    parts = [
        "## Gang scheduling",
        "",
        "The many-queues shape (fair, events on) with every application a gang of 10 (its placeholders, then its "
        "asks replacing them; the RM confirms each placeholder's release at once), against the same asks without "
        "gangs, alternating fresh subprocesses.",
        "",
        format_table(["what", "result"], rows, align="ll"),
        "",
        f"Runs: {runs or 'none'}.",
    ]
    if report.failures:
        parts += ["", "FAILURES:", *(f"- {f}" for f in report.failures)]
    return "\n".join(parts)


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"
