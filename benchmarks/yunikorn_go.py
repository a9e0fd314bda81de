"""YuniKorn's Go core side by side (issue 17): ``python -m benchmarks yunikorn-go``.

Issue 17's targets are ratios to YuniKorn's Go core "measured the same way on this kind of
machine", and this machine's speed moves by up to 2x between days, so the two cores run in one
session, alternating fresh processes: ``benchmarks/yunikorn_go`` (a Go program over
``github.com/apache/yunikorn-core`` at the version its go.mod pins, built once with ``go build``
from the Go module proxy into ``~/.cache/pyscheduler/``) and pyscheduler's threaded worker
(``benchmarks.scheduling``), on the same shapes: many queues (100 leaves, 1,000 applications of
10 asks, 1,000 nodes, fair) and YuniKorn's own at 5,000 nodes (fair and binpacking), 10,000 asks
each. Both clocks start with every ask pending and stop when the RM has every allocation (the
Go program's docstring says how). Reported: each side's median and range, and the ratio of
medians (pyscheduler / YuniKorn).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

from benchmarks.machine import Progress, fmt_ratio, format_table
from benchmarks.scheduling import (
    MANY_QUEUES_SHAPE,
    YUNIKORN_SHAPE,
    case_timeout,
    run_json_worker,
    run_worker,
)

SOURCE: Final = Path(__file__).resolve().parent / "yunikorn_go"
#: (shape, policy, nodes): the issue's three comparisons; 10,000 asks each (--quick: fewer).
CASES: Final = ((MANY_QUEUES_SHAPE, "fair", 1_000), (YUNIKORN_SHAPE, "fair", 5_000), (YUNIKORN_SHAPE, "binpacking", 5_000))
QUICK_CASES: Final = ((MANY_QUEUES_SHAPE, "fair", 200), (YUNIKORN_SHAPE, "fair", 200))
ASKS: Final = 10_000
QUICK_ASKS: Final = 1_000
#: The issue's target: at least three times YuniKorn's rate.
TARGET_RATIO: Final = 3.0


def _pinned_version() -> str:
    for line in (SOURCE / "go.mod").read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "github.com/apache/yunikorn-core":
            return parts[1]
    raise RuntimeError(f"{SOURCE / 'go.mod'} pins no github.com/apache/yunikorn-core version")


def build(progress: Progress) -> Path:
    """The Go program, built once per pinned version into the user's cache (a few minutes the
    first time: the module proxy's sources are compiled)."""
    go = shutil.which("go")
    if go is None:
        raise RuntimeError("the yunikorn-go family needs Go (https://go.dev) on PATH")
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pyscheduler"
    binary = cache / f"yunikorn-go-{_pinned_version()}" / "yunikorn-go"
    if not binary.exists():
        progress(f"yunikorn-go: building YuniKorn's core {_pinned_version()} (go build, once)")
        binary.parent.mkdir(parents=True, exist_ok=True)
        # A name of this build's own, then renamed: two processes building at once (pytest's
        # workers) each rename a whole binary, never one the other is still writing.
        partial = binary.with_name(f"{binary.name}.{os.getpid()}.tmp")
        done = subprocess.run([go, "build", "-o", str(partial), "."], cwd=SOURCE, capture_output=True, text=True,
                              timeout=1800, check=False)
        if done.returncode != 0:
            partial.unlink(missing_ok=True)
            raise RuntimeError(f"go build failed: {' | '.join(done.stderr.strip().splitlines()[-3:])}")
        partial.replace(binary)
    return binary


@dataclass
class Comparison:
    """One shape: both cores' threaded rates, alternating runs."""

    shape: str
    policy: str
    nodes: int
    asks: int
    yunikorn: list[float] = field(default_factory=list)
    pyscheduler: list[float] = field(default_factory=list)

    def ratio(self) -> float | None:
        if not self.yunikorn or not self.pyscheduler:
            return None
        return statistics.median(self.pyscheduler) / statistics.median(self.yunikorn)


@dataclass
class GoReport:
    version: str
    repeats: int
    comparisons: list[Comparison] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"yunikorn_core": self.version, "repeats": self.repeats, "target_ratio": TARGET_RATIO,
                "comparisons": [{**asdict(c), "ratio": c.ratio()} for c in self.comparisons], "failures": self.failures}

    def format(self) -> str:
        return format_report(self)


def _rate_text(rates: Sequence[float]) -> str:
    if not rates:
        return "-"
    return f"{statistics.median(rates):,.0f} ({min(rates):,.0f}-{max(rates):,.0f})"


def format_report(report: GoReport) -> str:
    rows = []
    for c in report.comparisons:
        ratio = c.ratio()
        verdict = "-" if ratio is None else ("met" if ratio >= TARGET_RATIO else "not met")
        rows.append([f"{c.shape}, {c.policy}, {c.nodes:,} nodes, {c.asks:,} asks", _rate_text(c.yunikorn),
                     _rate_text(c.pyscheduler), fmt_ratio(ratio), verdict])
    table = format_table(["shape", f"YuniKorn {report.version} (Go), /s", "pyscheduler, /s", "ratio",
                          f">= {TARGET_RATIO:g}x"], rows)
    lines = [f"### YuniKorn's Go core side by side ({report.repeats} alternating runs each, median (range))", "", table]
    lines += [f"- failed: {f}" for f in report.failures]
    return "\n".join(lines)


def run(*, quick: bool = False, repeats: int | None = None, progress: Progress | None = None) -> GoReport:
    progress = progress or Progress()
    repeats = repeats or (1 if quick else 3)
    report = GoReport(version=_pinned_version(), repeats=repeats)
    try:
        binary = build(progress)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        report.failures.append(f"yunikorn-go build: {exc}")
        return report
    asks = QUICK_ASKS if quick else ASKS
    for shape, policy, nodes in QUICK_CASES if quick else CASES:
        comparison = Comparison(shape, policy, nodes, asks)
        report.comparisons.append(comparison)
        timeout = case_timeout(asks)
        for repeat in range(repeats):
            progress(f"yunikorn-go: {shape}, {policy}, {nodes} nodes, run {repeat + 1} of {repeats}")
            _measure_go(binary, comparison, timeout, report.failures)
            _measure_pyscheduler(comparison, timeout, report.failures)
    return report


def _measure_go(binary: Path, c: Comparison, timeout: float, failures: list[str]) -> None:
    command = [str(binary), "-shape", c.shape, "-policy", c.policy, "-nodes", str(c.nodes), "-asks", str(c.asks),
               "-timeout", f"{timeout:.0f}s"]
    try:
        result = run_json_worker(command, timeout + 120)
    except (RuntimeError, ValueError, subprocess.TimeoutExpired) as exc:
        failures.append(f"yunikorn-go {c.shape} {c.policy}: {exc}")
        return
    if result.get("error") or result.get("rejected"):
        failures.append(f"yunikorn-go {c.shape} {c.policy}: {result.get('error') or 'asks rejected'}")
        return
    c.yunikorn.append(float(result["rate"]))


def _measure_pyscheduler(c: Comparison, timeout: float, failures: list[str]) -> None:
    try:
        threaded = run_worker(c.policy, c.nodes, c.asks, "native", timeout, c.shape)["threaded"]
    except (RuntimeError, ValueError, subprocess.TimeoutExpired) as exc:
        failures.append(f"pyscheduler {c.shape} {c.policy}: {exc}")
        return
    if threaded["error"]:
        failures.append(f"pyscheduler {c.shape} {c.policy}: {threaded['error']}")
        return
    c.pyscheduler.append(float(threaded["rate"]))
