"""The scale shape (issue 17): ``python -m benchmarks scale``.

The many-queues shape at cluster size: 50,000 nodes, 1,000 leaf queues under 20 parents,
10,000 applications of 10 asks (100,000 asks of memory 10, vcore 1, round-robin over the
applications, the applications round-robin over the leaves), nodes of 3 asks' room, fair node
policy, events on, the real threaded scheduling loop timed from "every ask pending" to "the RM
has every allocation" (as ``benchmarks.scheduling``). Targets: at least 10,000 allocations/s,
and the whole scheduler under 1 GiB resident.

Memory: the worker reads its resident set (``/proc/self/statm``) after a full collection at
each step: the empty core, then every node, every application, every ask submitted, and every
ask allocated. The differences divided by the counts are the resident bytes per node, per
application (without asks), per pending ask and per allocation. They are upper bounds: the
submission's own message objects are freed after each step, but CPython keeps freed arenas.
The whole process's peak (Linux: ``VmHWM`` of /proc/self/status; the interpreter and the
benchmark included) is what the 1 GiB target is checked against. Not ``ru_maxrss``: Linux
keeps it across ``execve``, so a worker started by a large parent (``make bench`` after the
event-memory family) reported the parent's peak. Every run is a fresh subprocess (``--quick``: 2,000
nodes and 4,000 asks, same queues, one run).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from benchmarks.baseline import baseline_environment
from benchmarks.machine import Progress, fmt_ratio, format_table
from benchmarks.scheduling import (
    ASKS_PER_APP,
    SCALE_SHAPE,
    SCALE_TREE,
    case_timeout,
    measure_threaded,
    run_json_worker,
)

NODES: Final = 50_000
ASKS: Final = 100_000
QUICK_NODES: Final = 2_000
QUICK_ASKS: Final = 4_000
REPEATS: Final = 3
TARGET_RATE: Final = 10_000.0
TARGET_RESIDENT: Final = 1 << 30
#: The steps the worker reads its resident set at, in order.
STEPS: Final = ("core", "nodes", "applications", "asks", "scheduled")


def resident_bytes() -> int:
    """This process's resident set now (Linux: /proc/self/statm; elsewhere the peak so far)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return peak_resident_bytes()


def peak_resident_bytes() -> int:
    """This process's own peak resident set: VmHWM (Linux), else ru_maxrss (KiB on Linux, bytes
    on macOS; only Linux is measured here), which Linux carries across execve from the parent."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def measure_worker(nodes: int, asks: int, timeout: float) -> dict[str, Any]:
    """One threaded run of the scale shape in this process, with the resident set at each step."""
    resident: dict[str, int] = {}

    def milestone(step: str) -> None:
        gc.collect()
        resident[step] = resident_bytes()

    result = measure_threaded("fair", nodes, asks, True, timeout, SCALE_SHAPE, milestone)
    result["resident"] = resident
    result["peak_resident"] = peak_resident_bytes()
    result["nodes"], result["asks"], result["applications"] = nodes, asks, max(1, asks // ASKS_PER_APP)
    return result


def run_worker(nodes: int, asks: int, timeout: float, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """One run in a fresh Python process (``env``: a baseline's, see ``benchmarks.baseline``)."""
    command = [sys.executable, "-m", "benchmarks.scale", "--worker", "--nodes", str(nodes), "--asks", str(asks),
               "--timeout", str(timeout)]
    return run_json_worker(command, 2 * timeout + 600, env)  # the setup of 50,000 nodes takes a while too


@dataclass
class ScaleReport:
    quick: bool
    nodes: int
    asks: int
    runs: list[dict[str, Any]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    #: ``--baseline DIR``: that core's runs, alternating with these in the same session.
    baseline: str | None = None
    baseline_runs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def applications(self) -> int:
        return max(1, self.asks // ASKS_PER_APP)

    def rates(self, baseline: bool = False) -> list[float]:
        return [run["rate"] for run in (self.baseline_runs if baseline else self.runs) if not run["error"]]

    def median_rate(self, baseline: bool = False) -> float | None:
        rates = self.rates(baseline)
        return statistics.median(rates) if rates else None

    def baseline_ratio(self) -> float | None:
        now, then = self.median_rate(), self.median_rate(baseline=True)
        return now / then if now and then else None

    def per_item(self) -> dict[str, float | None]:
        """Median resident bytes per node, application, pending ask and allocation."""
        counts = {"nodes": self.nodes, "applications": self.applications, "asks": self.asks, "scheduled": self.asks}
        out: dict[str, float | None] = {}
        for before, step in zip(STEPS, STEPS[1:]):
            deltas = [(run["resident"][step] - run["resident"][before]) / counts[step]
                      for run in self.runs if step in run["resident"] and before in run["resident"]]
            out[step] = statistics.median(deltas) if deltas else None
        return out

    def peak(self) -> int | None:
        peaks = [run["peak_resident"] for run in self.runs]
        return max(peaks) if peaks else None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        peak = self.peak()
        data.update(median_rate=self.median_rate(), per_item=self.per_item(), peak_resident=peak,
                    baseline_median_rate=self.median_rate(baseline=True), baseline_ratio=self.baseline_ratio(),
                    rate_target_met=_met(self.median_rate(), TARGET_RATE),
                    memory_target_met=None if peak is None else peak < TARGET_RESIDENT)
        return data

    def format(self) -> str:
        return format_report(self)


def _met(value: float | None, target: float) -> bool | None:
    return None if value is None else value >= target


def run(*, quick: bool = False, repeats: int | None = None, baseline: str | None = None,
        progress: Callable[[str], None] | None = None) -> ScaleReport:
    """``repeats`` runs (default 3, --quick 1); with ``baseline`` (a directory, see
    ``benchmarks.baseline``) each run is preceded by one of the baseline's core."""
    if progress is None:
        progress = Progress()
    nodes, asks = (QUICK_NODES, QUICK_ASKS) if quick else (NODES, ASKS)
    report = ScaleReport(quick=quick, nodes=nodes, asks=asks, baseline=baseline)
    sides: list[tuple[str, dict[str, str] | None, list[dict[str, Any]]]] = [("", None, report.runs)]
    if baseline is not None:
        sides.insert(0, ("baseline ", baseline_environment(baseline), report.baseline_runs))
    count = repeats or (1 if quick else REPEATS)
    for repeat in range(count):
        for label, env, runs in sides:
            progress(f"scale: {label}{nodes:,} nodes, {asks:,} asks, {SCALE_TREE.leaves:,} leaves, "
                     f"run {repeat + 1} of {count}")
            try:
                result = run_worker(nodes, asks, case_timeout(asks), env)
            except Exception as exc:  # one broken run must not hide the others
                report.failures.append(f"scale {label}run {repeat + 1}: {type(exc).__name__}: {exc}")
                continue
            if result["error"]:
                report.failures.append(f"scale {label}run {repeat + 1}: {result['error']}")
            runs.append(result)
    return report


def format_report(report: ScaleReport) -> str:
    rates = report.rates()
    per = report.per_item()
    peak = report.peak()
    rate = report.median_rate()
    rows = [
        ["allocations/s (threaded, median)",
         "-" if rate is None else f"{rate:,.0f} (runs: {', '.join(f'{r:,.0f}' for r in rates)})",
         f">= {TARGET_RATE:,.0f}: {_verdict(_met(rate, TARGET_RATE))}"],
        ["resident bytes per node", _bytes(per.get("nodes")), ""],
        ["resident bytes per application (no asks)", _bytes(per.get("applications")), ""],
        ["resident bytes per pending ask", _bytes(per.get("asks")), ""],
        ["resident bytes per allocation (ask placed)", _bytes(per.get("scheduled")), ""],
        ["peak resident set of the whole process", "-" if peak is None else f"{peak / (1 << 20):,.0f} MiB",
         f"< 1 GiB: {_verdict(None if peak is None else peak < TARGET_RESIDENT)}"],
    ]
    if report.baseline is not None:
        then = report.median_rate(baseline=True)
        rows.insert(1, [f"baseline ({report.baseline}) allocations/s, alternating runs",
                        "-" if then is None else f"{then:,.0f} (runs: {', '.join(f'{r:,.0f}' for r in report.rates(True))})",
                        f"this core / baseline: {fmt_ratio(report.baseline_ratio())}"])
    parts = [
        "## Scale shape (issue 17)",
        "",
        f"{report.nodes:,} nodes, {SCALE_TREE.leaves:,} leaf queues under {SCALE_TREE.parents} parents, "
        f"{report.applications:,} applications of {ASKS_PER_APP} asks ({report.asks:,} asks), fair, events on, "
        "threaded scheduling loop; one fresh subprocess per run. Resident memory read after a full collection "
        "at each step (upper bounds: freed submission messages stay in CPython's arenas).",
        "",
        format_table(["what", "result", "target"], rows, align="lrl"),
    ]
    if report.failures:
        parts += ["", "FAILURES:", *(f"- {f}" for f in report.failures)]
    return "\n".join(parts)


def _bytes(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _verdict(met: bool | None) -> str:
    return "-" if met is None else ("met" if met else "NOT met")


def worker_main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchmarks.scale --worker ...``: one run, one JSON line out."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scale")
    parser.add_argument("--worker", action="store_true", required=True, help="run once and print JSON")
    parser.add_argument("--nodes", type=int, default=NODES)
    parser.add_argument("--asks", type=int, default=ASKS)
    parser.add_argument("--timeout", type=float, default=None)
    args = parser.parse_args(argv)
    if args.nodes < 1 or args.asks < 1:
        parser.error("--nodes and --asks must be positive")
    timeout = args.timeout if args.timeout is not None else case_timeout(args.asks)
    print(json.dumps(measure_worker(args.nodes, args.asks, timeout)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(worker_main())
