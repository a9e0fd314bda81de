"""The kubernetes family's results (:mod:`benchmarks.kubernetes`): one :class:`PhaseResult` per
contender, phase and workload, and the :class:`KubernetesReport` that tables them.

Per workload and phase, every contender's bound/s is given as a ratio to the limit's (column
``of limit``; :mod:`benchmarks.kube_limit`). For ``plain`` that is the share of the API
server's own binding rate a scheduler reaches; for the other workloads the limit ignores what
the pods ask, so its rate is the API server's ceiling for that many bindings (the heading says
so) and a ratio below it may be the decisions' cost as much as the binding path's. Below each
table, pyscheduler's bound/s over each other contender's.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from benchmarks.kube_contenders import BASELINE, KUBE_SCHEDULER, PYSCHEDULER
from benchmarks.kube_limit import LIMIT
from benchmarks.kube_workloads import Workload
from benchmarks.kube_yunikorn import YUNIKORN
from pyscheduler.common.text_table import format_table

PHASES = ("stream", "backlog")
#: The contenders pyscheduler's ratios are given against, with their label, in this order.
OTHERS = ((LIMIT, "limit"), (BASELINE, "baseline"), (KUBE_SCHEDULER, KUBE_SCHEDULER), (YUNIKORN, YUNIKORN))
#: Contenders that do not implement a workload's decisions, and what the report says of them.
NOT_DECIDING = {("gangs", KUBE_SCHEDULER): "no gangs: scheduled as plain pods"}


@dataclass
class PhaseResult:
    """One contender, one phase of one workload."""

    scheduler: str
    phase: str
    pods: int
    bound: int
    running: int
    seconds: float
    """The phase's span: first creation (stream) or first binding (backlog) to the last binding."""
    bound_per_second: float
    created_per_second: float
    bind_p50_ms: float | None
    bind_p99_ms: float | None
    running_p50_ms: float | None
    running_p99_ms: float | None
    client_limits: str
    scheduler_cpu_s: float
    """CPU time of the contender, from its start to the end of the phase."""
    apiserver_cpu_s: float
    """CPU time of kube-apiserver during the phase."""
    workload: str = "plain"
    violations: int | None = None
    """Pods placed against their workload's constraint, found by :func:`violations` from the
    pods as listed at the end of the phase (None: not checked)."""
    check: str = ""
    """What :func:`violations` found (the anti-affinity groups' most pods on one node; the
    spread's zone counts)."""
    scheduler_peak_mib: float | None = None
    """The contender's peak memory: its process group's summed VmHWM (:mod:`benchmarks.kube_memory`)."""
    preemptions: int | None = None
    """preemption: the low-priority pods gone by the end of the wave (None: other workloads)."""
    note: str = ""
    """What the contender does not decide in this workload (:data:`NOT_DECIDING`)."""


@dataclass
class KubernetesReport:
    nodes: int
    pods: int
    """The plain workload's pods per contender and phase."""
    workloads: list[Workload] = field(default_factory=list)
    results: list[PhaseResult] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    contenders: list[str] = field(default_factory=lambda: [PYSCHEDULER, KUBE_SCHEDULER])
    """The contenders run (names as in the results), in their order."""

    def rate(self, scheduler: str, phase: str, workload: str = "plain") -> float | None:
        for result in self.results:
            if result.scheduler == scheduler and result.phase == phase and result.workload == workload \
                    and result.bound == result.pods:
                return result.bound_per_second
        return None

    def ratio(self, phase: str, workload: str = "plain", against: str = KUBE_SCHEDULER,
              ours: str = PYSCHEDULER) -> float | None:
        """``ours``' bound/s (default pyscheduler's) over ``against``'s (None unless both bound
        all their pods)."""
        mine, theirs = self.rate(ours, phase, workload), self.rate(against, phase, workload)
        return mine / theirs if mine and theirs else None

    def _ratios(self, against: str) -> dict[str, dict[str, float | None]]:
        return {w.name: {phase: self.ratio(phase, w.name, against) for phase in PHASES} for w in self.workloads}

    def limit_ratios(self) -> dict[str, dict[str, dict[str, float | None]]]:
        """Every contender's bound/s over the limit's: contender -> workload -> phase."""
        return {name: {w.name: {phase: self.ratio(phase, w.name, LIMIT, ours=name) for phase in PHASES}
                       for w in self.workloads} for name in self.contenders if name != LIMIT}

    def to_dict(self) -> dict[str, Any]:
        """``ratios``: pyscheduler / kube-scheduler, ``baseline_ratios``: pyscheduler / its
        baseline, ``yunikorn_ratios``: pyscheduler / YuniKorn, each per workload and phase (None: not measured); ``limit_ratios``: each
        contender / the limit (:meth:`limit_ratios`)."""
        return {"nodes": self.nodes, "pods": self.pods, "workloads": [asdict(w) for w in self.workloads],
                "contenders": self.contenders, "results": [asdict(r) for r in self.results],
                "ratios": self._ratios(KUBE_SCHEDULER), "baseline_ratios": self._ratios(BASELINE),
                "yunikorn_ratios": self._ratios(YUNIKORN), "limit_ratios": self.limit_ratios(),
                "failures": self.failures}

    def ratio_line(self, phase: str, workload: str) -> str:
        """pyscheduler's bound/s over each other contender's run, e.g. ``- stream: pyscheduler /
        baseline bound/s = 1.05x; pyscheduler / kube-scheduler bound/s = 0.80x``."""
        parts = []
        for against, label in OTHERS:
            if against in self.contenders:
                ratio = self.ratio(phase, workload, against)
                parts.append(f"pyscheduler / {label} bound/s = " + ("-" if ratio is None else f"{ratio:.2f}x"))
        return f"- {phase}: " + ("; ".join(parts) or "no other contender")

    def _heading(self, workload: Workload) -> list[str]:
        if workload.name == "plain":
            lines = [f"## kubernetes: pods bound per second, {workload.pods:,} pods on {self.nodes:,} kwok nodes"]
        else:
            lines = [f"## kubernetes, {workload.name}: pods bound per second, {workload.pods:,} pods on "
                     f"{self.nodes:,} kwok nodes, {workload.title}"]
        if workload.name != "plain" and LIMIT in self.contenders:
            lines += ["", "The limit ignores this workload's constraints: its rate is the API server's ceiling for "
                          "these bindings, not a scheduler's result."]
        return lines

    def format(self) -> str:
        def ms(value: float | None) -> str:
            return "-" if value is None else f"{value:,.0f}"

        def of_limit(r: PhaseResult) -> str:
            ratio = None if r.scheduler == LIMIT else self.ratio(r.phase, r.workload, LIMIT, ours=r.scheduler)
            return "-" if ratio is None else f"{ratio:.2f}x"

        lines: list[str] = []
        for workload in self.workloads:
            constrained = workload.name in ("anti-affinity", "spread")
            preempting = workload.name == "preemption"
            rows = [[r.scheduler, r.phase, f"{r.bound:,}/{r.pods:,}", f"{r.seconds:.1f}", f"{r.bound_per_second:,.0f}",
                     of_limit(r), f"{r.created_per_second:,.0f}", ms(r.bind_p50_ms), ms(r.bind_p99_ms),
                     ms(r.running_p50_ms), ms(r.running_p99_ms), f"{r.scheduler_cpu_s:.1f}",
                     ms(r.scheduler_peak_mib), f"{r.apiserver_cpu_s:.1f}", r.client_limits]
                    + ([("-" if r.violations is None else f"{r.violations:,}") + (f" ({r.check})" if r.check else "")]
                       if constrained else [])
                    + (["-" if r.preemptions is None else f"{r.preemptions:,}"] if preempting else [])
                    + ([r.note] if any(x.note for x in self.results if x.workload == workload.name) else [])
                    for r in self.results if r.workload == workload.name]
            noted = any(r.note for r in self.results if r.workload == workload.name)
            lines += self._heading(workload)
            lines += ["", format_table(["scheduler", "phase", "bound", "s", "bound/s", "of limit", "created/s",
                                        "bind p50 ms", "bind p99 ms", "running p50 ms", "running p99 ms",
                                        "scheduler cpu s", "scheduler peak MiB", "apiserver cpu s", "client limits"]
                                       + (["violations"] if constrained else [])
                                       + (["preempted"] if preempting else []) + (["note"] if noted else []), rows),
                      ""]
            lines += [self.ratio_line(phase, workload.name) for phase in PHASES]
            lines.append("")
        lines += [f"- FAILED: {failure}" for failure in self.failures]
        return "\n".join(lines).rstrip()
