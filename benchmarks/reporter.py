"""The node reporter manager (issue 12): ``python -m benchmarks reporter``.

(a) **A round at scale**: 5,000 nodes (the scheduling benchmark's YuniKorn shape registers
    them), 8 in-process plugins reporting on every node (labels from each, plus capacity,
    topology zones, reclaimed capacity and taints from some: 11 fields per node; one plugin
    builds its whole answer anew on every call, as a decoded gRPC response would be). Timed: the
    first round (every node updated), a round where 5 % of the nodes' reports changed (only
    those updated), and a round where nothing changed (no update). Target: a round under
    100 ms, with updates only for the nodes that changed.
(b) **Scheduling while the manager works**: the YuniKorn shape (fair, 5,000 nodes, 30,000
    asks so that a run lasts several rounds, events on, threaded scheduler), alone and while the
    manager runs a round (5 % of the nodes' reports changed in each) every 5 s (the default,
    Katalyst's) or every second (a stress figure), alternating, medians of 12 (target: at least
    0.9x of alone). Runs alternate, 12 of each, because this kind of machine varies: a pure Python
    loop took 1.47-1.89 s in five runs, and single runs here vary by +-15 %.
"""

from __future__ import annotations

import gc
import json
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from benchmarks.machine import Progress, fmt_ratio, format_table
from benchmarks.scheduling import build, case_timeout
from pyscheduler.reporter.manager import DEFAULT_PERIOD

NODES: Final = 5_000
PLUGINS: Final = 8
ASKS: Final = 30_000
CHANGED: Final = 0.05
QUICK_NODES: Final = 500
QUICK_ASKS: Final = 1_000
REPEATS: Final = 12
#: Round periods of the scheduling runs: the manager's default (Katalyst's 5 s) and five times
#: faster (a stress figure).
ROUND_PERIODS: Final = (DEFAULT_PERIOD, 1.0)
TARGET_ROUND_MS: Final = 100.0
#: The round after start (every node merged from scratch and updated once): reported, not a
#: steady round (the target is for rounds in which some nodes changed).
FIRST_ROUND: Final = "first (every node)"
TARGET_RATIO: Final = 0.9


@dataclass
class ReporterReport:
    nodes: int
    plugins: int
    asks: int
    quick: bool
    #: Round name -> (milliseconds, nodes updated, milliseconds inside the plugins' own calls).
    rounds: dict[str, tuple[float, int, float]] = field(default_factory=dict)
    rates: dict[str, list[float]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def ratio(self, period: float = ROUND_PERIODS[0]) -> float | None:
        """Median rate with the manager at ``period`` over the median alone."""
        alone, busy = self.rates.get("alone"), self.rates.get(_busy_name(period))
        return statistics.median(busy) / statistics.median(alone) if alone and busy else None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ratio"] = self.ratio()
        data["ratios"] = {f"{period:g}": self.ratio(period) for period in ROUND_PERIODS}
        return data

    def format(self) -> str:
        return format_report(self)


class _Plugin:
    """Reports prebuilt content; ``change(nodes, generation)`` rewrites some nodes' content. The
    last plugin copies its whole answer on every call."""

    def __init__(self, index: int, node_ids: list[str]) -> None:
        from pyscheduler.reporter.content import FieldType, ReportContent, ReportField
        from pyscheduler.reporter.node_fields import CNR, NODE

        self.name = f"plugin-{index}"
        self._index = index
        #: Time spent in report() (the plugin's own work, part of a round).
        self.seconds = 0.0
        self._types = (FieldType, ReportContent, ReportField, CNR, NODE)
        self.content: dict[str, list[Any]] = {node_id: self._content(node_id, 0) for node_id in node_ids}

    def _content(self, node_id: str, generation: int) -> list[Any]:
        field_type, content, report_field, cnr, node = self._types
        fields = [report_field(field_type.METADATA, "Labels",
                               json.dumps({f"plugin-{self._index}/fact": f"{node_id}-{generation}"}).encode())]
        extra = []
        if self._index == 0:
            extra.append(report_field(field_type.STATUS, "Resources",
                                      b'{"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"}}'))
        elif self._index == 1:
            extra.append(report_field(field_type.STATUS, "TopologyZone",
                                      b'[{"type": "Socket", "name": "0"}, {"type": "Numa", "name": "0"}]'))
        elif self._index == 2:
            extra.append(report_field(field_type.STATUS, "ReclaimedResourceCapacity",
                                      json.dumps({"cpu": f"{generation % 7 + 1}", "memory": "8Gi"}).encode()))
        elif self._index == 3:
            extra.append(report_field(field_type.SPEC, "Taints", b'[{"key": "k", "value": "v", "effect": "E"}]'))
        return [content(node, tuple(fields)), *([content(cnr, tuple(extra))] if extra else [])]

    def change(self, node_ids: list[str], generation: int) -> None:
        content = dict(self.content)
        for node_id in node_ids:
            content[node_id] = self._content(node_id, generation)
        self.content = content

    def report(self) -> dict[str, list[Any]]:
        began = time.perf_counter()
        try:
            return self._answer()
        finally:
            self.seconds += time.perf_counter() - began

    def _answer(self) -> dict[str, list[Any]]:
        if self._index == PLUGINS - 1:
            # As a plugin that builds its answer anew on every call (a decoded gRPC response):
            # equal values, new objects, so nothing is found unchanged by identity.
            _, content, report_field, _, _ = self._types
            return {node_id: [content(c.gvk, tuple(report_field(*f) for f in c.fields)) for c in contents]
                    for node_id, contents in self.content.items()}
        return self.content


def _manager(setup: Any, period: float = 5.0) -> tuple[Any, list[_Plugin], list[str]]:
    from pyscheduler.reporter.manager import ManagerSettings, ReporterManager

    node_ids = sorted(next(iter(setup.context.partitions.values())).nodes)
    manager = ReporterManager(setup.proxy, None, ManagerSettings(period=period))
    plugins = [_Plugin(i, node_ids) for i in range(PLUGINS)]
    for plugin in plugins:
        manager.register(plugin)
    return manager, plugins, node_ids


def measure_rounds(report: ReporterReport) -> None:
    setup = build("fair", report.nodes, report.nodes, True)
    manager, plugins, node_ids = _manager(setup)
    step = max(1, int(1 / CHANGED))
    for name, change in ((FIRST_ROUND, None), ("5 % of the nodes changed", 1), ("nothing changed", None)):
        if change is not None:
            plugins[2].change(node_ids[::step], change)
        gc.collect()
        for plugin in plugins:
            plugin.seconds = 0.0
        began = time.perf_counter()
        result = manager.run_round()
        report.rounds[name] = ((time.perf_counter() - began) * 1e3, len(result.updated),
                               sum(plugin.seconds for plugin in plugins) * 1e3)
    manager.stop()
    setup.proxy.stop()


def _busy_name(period: float) -> str:
    return f"with the manager, a round every {period:g} s"


def _scheduling_run(nodes: int, asks: int, period: float | None) -> float:
    """Allocations/s of one run; the manager runs rounds every ``period`` seconds (None: not)."""
    setup = build("fair", nodes, asks, True)
    stop = threading.Event()
    worker = None
    # Both runs start from the same nodes: the reported facts (capacity included) are in place
    # before the timed run, as in a live cluster; only then does one run keep the manager busy.
    manager, plugins, node_ids = _manager(setup)
    manager.run_round()
    if period is not None:
        step = max(1, int(1 / CHANGED))

        def churn() -> None:
            generation = 0
            while not stop.is_set():
                generation += 1
                offset = generation % step
                plugins[2].change(node_ids[offset::step], generation)
                manager.run_round()
                stop.wait(period)

        worker = threading.Thread(target=churn, daemon=True)
    gc.collect()
    started = time.perf_counter()
    if worker is not None:
        worker.start()
    setup.scheduler.start()
    finished = setup.rm.done.wait(case_timeout(asks))
    seconds = time.perf_counter() - started
    stop.set()
    setup.scheduler.stop()
    if worker is not None:
        worker.join(30)
    manager.stop()
    setup.proxy.stop()
    if not finished:
        raise RuntimeError(f"{setup.rm.allocated} of {asks} allocations in {seconds:.1f} s")
    return asks / seconds


def run(*, quick: bool = False, progress: Callable[[str], None] | None = None) -> ReporterReport:
    if progress is None:
        progress = Progress()
    nodes = QUICK_NODES if quick else NODES
    asks = QUICK_ASKS if quick else ASKS
    report = ReporterReport(nodes=nodes, plugins=PLUGINS, asks=asks, quick=quick)
    progress(f"reporter: rounds for {nodes:,} nodes x {PLUGINS} plugins")
    try:
        measure_rounds(report)
    except Exception as exc:
        report.failures.append(f"rounds: {type(exc).__name__}: {exc}")
    for repeat in range(1 if quick else REPEATS):
        for name, period in (("alone", None), *((_busy_name(p), p) for p in ROUND_PERIODS)):
            progress(f"reporter: scheduling {name}, run {repeat + 1}")
            try:
                report.rates.setdefault(name, []).append(_scheduling_run(nodes, asks, period))
            except Exception as exc:
                report.failures.append(f"scheduling {name}: {type(exc).__name__}: {exc}")
    return report


def format_report(report: ReporterReport) -> str:
    rows = [[name, f"{ms:.1f}", f"{in_plugins:.1f}", f"{updated:,}",
             "start-up" if name == FIRST_ROUND else "met" if ms < TARGET_ROUND_MS else "NOT met"]
            for name, (ms, updated, in_plugins) in report.rounds.items()]
    def rates(name: str) -> str:
        return ", ".join(f"{r:,.0f}" for r in report.rates.get(name, [])) or "-"

    ratio_rows = []
    for period in ROUND_PERIODS:
        ratio = report.ratio(period)
        ratio_rows.append([f"{period:g} s" + (" (the default)" if period == DEFAULT_PERIOD else ""),
                           rates(_busy_name(period)), fmt_ratio(ratio),
                           "met" if (ratio or 0) >= TARGET_RATIO else "NOT met"])
    parts = [
        "## Node reporter manager",
        "",
        f"(a) One round of the manager: {report.nodes:,} nodes, {report.plugins} in-process plugins reporting 11 "
        "fields per node (polls, merge, node facts, diff, one UPDATE per changed node through the RM interface). "
        "The first round after start merges and updates every node once.",
        "",
        format_table(["round", "ms", "of which in the plugins", "nodes updated", f"< {TARGET_ROUND_MS:g} ms"], rows,
                     align="lrrrl"),
        "",
        f"(b) Scheduling (YuniKorn's shape, fair, {report.nodes:,} nodes, {report.asks:,} asks, threaded), alone "
        f"({rates('alone')} allocations/s) and while the manager runs rounds with 5 % of the nodes changed in each, "
        "alternating; the ratio of medians:",
        "",
        format_table(["round period", "allocations/s with the manager", "vs alone", f">= {TARGET_RATIO:g}x"],
                     ratio_rows, align="lrrl"),
    ]
    if report.failures:
        parts += ["", "FAILURES:", *(f"- {f}" for f in report.failures)]
    return "\n".join(parts)
