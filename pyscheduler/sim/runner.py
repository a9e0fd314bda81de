"""Runs a workload to completion and summarises it; the text progress bar of ``simulate``.

:func:`run_simulation` plays one workload with one node sort policy (a fresh core each time)
and returns a :class:`SimulationSummary`: allocations, throughput, latency percentiles,
utilisation and completed applications; with preemption, the allocations preempted and the
work they lost, and how long the late tenant took to reach its guarantee.
:func:`plan_runs` lists the runs a workload calls for (each policy; with services, with and
without role history; with a late tenant, with preemption on and off) and
:func:`run_policies` plays them all on the same generated workload, which is how
``pyscheduler simulate`` compares them; :func:`format_summaries` prints the comparison.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, TextIO

from pyscheduler.common.text_table import format_table
from pyscheduler.sim.rm import DEFAULT_SPEED, DEFAULT_TIMEOUT, ProgressFunc, SimMode, SimulatedRM, SimulationRecord
from pyscheduler.sim.workload import Workload, WorkloadSpec

__all__ = [
    "LateTenantSummary",
    "LatencySummary",
    "ProgressBar",
    "RunVariant",
    "ServicesSummary",
    "SimulationSummary",
    "UtilisationSummary",
    "format_summaries",
    "percentile",
    "plan_runs",
    "run_policies",
    "run_simulation",
    "summarise",
]

GIB = 1 << 30


def percentile(ordered: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of sorted values, interpolating linearly between the two
    nearest ranks (numpy's default), so it is monotonic in ``q``. 0.0 for no values."""
    if not ordered:
        return 0.0
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be within 0..100, got {q}")
    position = (len(ordered) - 1) * q / 100
    lower = math.floor(position)
    upper = min(lower + 1, len(ordered) - 1)
    fraction = position - lower
    return ordered[lower] + (ordered[upper] - ordered[lower]) * fraction


@dataclass(frozen=True)
class LatencySummary:
    """Ask submitted -> allocation received by the RM, in simulated seconds."""

    p50: float
    p90: float
    p99: float
    max: float
    mean: float

    @classmethod
    def of(cls, latencies: Sequence[float]) -> LatencySummary:
        ordered = sorted(latencies)
        mean = sum(ordered) / len(ordered) if ordered else 0.0
        return cls(
            p50=percentile(ordered, 50),
            p90=percentile(ordered, 90),
            p99=percentile(ordered, 99),
            max=ordered[-1] if ordered else 0.0,
            mean=mean,
        )


@dataclass(frozen=True)
class UtilisationSummary:
    """How the node policy used the cluster, over the run's simulated time.

    ``memory``/``vcore``: time-weighted mean fraction of the cluster allocated; ``peak_*``: the
    highest fraction at any instant; ``nodes_in_use``: time-weighted mean number of nodes with at
    least one allocation (binpacking should keep it low); ``packing``: allocated share of the
    nodes in use (mean of memory and vcore over the node-seconds in use: how full the used
    nodes were).
    """

    memory: float
    vcore: float
    peak_memory: float
    peak_vcore: float
    nodes_in_use: float
    peak_nodes_in_use: int
    packing: float

    @classmethod
    def of(cls, record: SimulationRecord) -> UtilisationSummary:
        span = record.sim_seconds
        memory = record.memory_seconds / (record.cluster_memory * span) if span > 0 else 0.0
        vcore = record.vcore_seconds / (record.cluster_vcore * span) if span > 0 else 0.0
        in_use = record.node_seconds / span if span > 0 else 0.0
        if record.node_seconds > 0:
            packing = (
                record.memory_seconds / (record.node_memory * record.node_seconds)
                + record.vcore_seconds / (record.node_vcore * record.node_seconds)
            ) / 2
        else:
            packing = 0.0
        return cls(
            memory=memory,
            vcore=vcore,
            peak_memory=record.peak_memory / record.cluster_memory if record.cluster_memory else 0.0,
            peak_vcore=record.peak_vcore / record.cluster_vcore if record.cluster_vcore else 0.0,
            nodes_in_use=in_use,
            peak_nodes_in_use=record.peak_nodes_in_use,
            packing=packing,
        )


@dataclass(frozen=True)
class ServicesSummary:
    """Where the instances of a service's later incarnations landed.

    ``instances``: instances placed in incarnations after the first; ``back``: those placed on a
    node their role (same service) ran on in an earlier incarnation; ``random_expected``: what
    placing each of them on a node drawn at random would give on average (the size of its
    role's set of used nodes over the number of nodes)."""

    instances: int
    back: int
    random_expected: float

    @property
    def fraction(self) -> float:
        return self.back / self.instances if self.instances else 0.0

    @classmethod
    def of(cls, record: SimulationRecord) -> ServicesSummary | None:
        if not record.role_instances:
            return None
        by_incarnation: dict[tuple[str, str], dict[int, list[str]]] = {}
        for key, role, generation, node_id in record.role_instances:
            by_incarnation.setdefault((key, role), {}).setdefault(generation, []).append(node_id)
        instances = back = 0
        expected = 0.0
        for incarnations in by_incarnation.values():
            before: set[str] = set()  # nodes the role used in earlier incarnations
            for generation in sorted(incarnations):
                placed = incarnations[generation]
                if generation > 0:
                    instances += len(placed)
                    back += sum(node_id in before for node_id in placed)
                    expected += len(placed) * len(before) / max(record.node_count, 1)
                before.update(placed)
        return cls(instances, back, expected / instances if instances else 0.0)


@dataclass(frozen=True)
class WorkLost:
    """The work preemption's victims had done when they were killed (and will do again):
    each victim's resources times the simulated seconds it had run, summed."""

    #: Cores x seconds (a one-core task killed after 60 s lost 60 vcore-seconds).
    vcore_seconds: float
    #: GiB x seconds.
    memory_gib_seconds: float

    @classmethod
    def of(cls, record: SimulationRecord) -> WorkLost:
        return cls(record.lost_vcore_seconds / 1000, record.lost_memory_seconds / GIB)


@dataclass(frozen=True)
class LateTenantSummary:
    """The late tenant (preemption's workload): when it arrived and how long its running
    allocations took to reach its queue's guarantee, in simulated seconds (None: not submitted,
    or never reached within the run)."""

    start: float | None
    time_to_guarantee: float | None

    @classmethod
    def of(cls, record: SimulationRecord) -> LateTenantSummary | None:
        if not record.late_tenant:
            return None
        start, reached = record.late_tenant_start, record.guarantee_reached
        return cls(start, None if start is None or reached is None else reached - start)


@dataclass(frozen=True)
class GangSummary:
    """Gang jobs (``docs/gang.md``): how many started whole (every placeholder placed before
    the timeout, then their members replaced them), resumed as ordinary jobs (Soft) or failed
    (Hard) after their placeholder timeout; the simulated seconds from a job's submission to all
    its members running at once (median and max, over the jobs that got there); and what the
    placeholders held (cores x seconds, GiB x seconds)."""

    jobs: int
    started_whole: int
    resumed: int
    failed: int
    all_running: int
    all_running_p50: float
    all_running_max: float
    placeholder_vcore_seconds: float
    placeholder_memory_gib_seconds: float

    @classmethod
    def of(cls, record: SimulationRecord) -> GangSummary | None:
        if not record.gang_jobs:
            return None
        waits = sorted(record.gang_all_running)
        return cls(record.gang_jobs, record.gang_started_whole, record.gang_resumed, record.gang_failed, len(waits),
                   percentile(waits, 50) if waits else 0.0, waits[-1] if waits else 0.0,
                   record.placeholder_vcore_seconds / 1000, record.placeholder_memory_seconds / GIB)


@dataclass(frozen=True)
class SimulationSummary:
    """One run of a workload with one node sort policy."""

    policy: str
    mode: SimMode
    node_ordering: str
    seed: int
    nodes: int
    apps: int
    asks: int
    allocations: int
    releases: int
    rejected_asks: int
    apps_completed: int
    cycles: int
    wall_seconds: float
    sim_seconds: float
    #: Allocations per wall-clock second (scheduler and simulated RM together).
    throughput: float
    #: Allocations per simulated second (depends on the workload's arrivals, not the machine).
    sim_throughput: float
    latency: LatencySummary
    utilisation: UtilisationSummary
    completed: bool
    problems: tuple[str, ...]
    #: Services (role history's workload): whether role history placed them, and how their
    #: later incarnations' instances landed (None without services).
    role_history: bool = True
    services: ServicesSummary | None = None
    #: Preemption: whether the partition allowed it, the allocations preempted (each killed,
    #: confirmed and submitted again), their re-runs' allocations (counted in ``allocations``
    #: too), the work they lost, and the late tenant's figures (None without one).
    preemption: bool = True
    preempted: int = 0
    reruns: int = 0
    work_lost: WorkLost = WorkLost(0.0, 0.0)
    late_tenant: LateTenantSummary | None = None
    #: Gang jobs' figures (None without any).
    gangs: GangSummary | None = None

    @property
    def label(self) -> str:
        """The run's column heading: the policy, whether role history was off (with services),
        whether preemption was on (with a late tenant)."""
        return RunVariant(self.policy, self.role_history, self.preemption).label(
            services=self.services is not None, late_tenant=self.late_tenant is not None
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (nested dicts for latency and utilisation)."""
        return asdict(self)


def summarise(record: SimulationRecord, seed: int) -> SimulationSummary:
    """Turns a run's raw record into its summary."""
    return SimulationSummary(
        policy=record.policy,
        mode=record.mode,
        node_ordering="native" if record.native_node_ordering else "python",
        seed=seed,
        nodes=record.node_count,
        apps=record.total_apps,
        asks=record.total_asks,
        allocations=record.allocations,
        releases=record.releases_confirmed,
        rejected_asks=record.rejected_asks,
        apps_completed=record.apps_completed,
        cycles=record.cycles,
        wall_seconds=record.wall_seconds,
        sim_seconds=record.sim_seconds,
        throughput=record.allocations / record.wall_seconds if record.wall_seconds > 0 else 0.0,
        sim_throughput=record.allocations / record.sim_seconds if record.sim_seconds > 0 else 0.0,
        latency=LatencySummary.of(record.latencies),
        utilisation=UtilisationSummary.of(record),
        completed=record.completed,
        # Many rejections would flood a report: keep the first few, and say how many.
        problems=_first_problems(record.problems),
        role_history=record.role_history,
        services=ServicesSummary.of(record),
        preemption=record.preemption,
        preempted=record.preempted,
        reruns=record.rerun_allocations,
        work_lost=WorkLost.of(record),
        late_tenant=LateTenantSummary.of(record),
        gangs=GangSummary.of(record),
    )


def _first_problems(problems: Sequence[str], keep: int = 10) -> tuple[str, ...]:
    if len(problems) <= keep:
        return tuple(problems)
    return (*problems[:keep], f"... and {len(problems) - keep} more")


def run_simulation(
    workload: WorkloadSpec | Workload,
    *,
    policy: str = "fair",
    mode: SimMode = "lockstep",
    native_node_ordering: bool | None = None,
    speed: float = DEFAULT_SPEED,
    timeout: float = DEFAULT_TIMEOUT,
    progress: ProgressFunc | None = None,
    role_history: bool = True,
    preemption: bool = True,
) -> SimulationSummary:
    """Runs a workload to completion on a fresh core and summarises it.

    ``speed`` (threaded mode only): simulated seconds per wall second. ``timeout``: wall
    seconds before the run is abandoned (the summary then says ``completed=False``).
    ``preemption``: the partition's ``preemption.enabled``.
    """
    plan = workload.generate() if isinstance(workload, WorkloadSpec) else workload
    rm = SimulatedRM(
        plan, policy=policy, mode=mode, native_node_ordering=native_node_ordering, speed=speed, progress=progress,
        role_history=role_history, preemption=preemption,
    )
    return summarise(rm.run(timeout=timeout), plan.spec.seed)


@dataclass(frozen=True)
class RunVariant:
    """One run a workload calls for: a node sort policy, role history on or off, preemption on
    or off."""

    policy: str
    role_history: bool = True
    preemption: bool = True

    def label(self, *, services: bool, late_tenant: bool) -> str:
        """The run's column heading: the policy, then ``no role history`` (a workload with
        services) and ``preemption on``/``off`` (a workload with a late tenant)."""
        parts = [self.policy]
        if services and not self.role_history:
            parts.append("no role history")
        if late_tenant:
            parts.append("preemption on" if self.preemption else "preemption off")
        return ", ".join(parts)


def plan_runs(spec: WorkloadSpec, policies: Sequence[str] = ("fair", "binpacking")) -> list[RunVariant]:
    """The runs ``spec`` calls for, in order: per policy, with services once with role history
    and once without, and with a late tenant once with preemption on and once off (all
    combinations)."""
    histories = (True, False) if spec.services.count else (True,)
    preemptions = (True, False) if spec.late_tenant.count else (True,)
    return [RunVariant(policy, history, preemption)
            for policy in policies for history in histories for preemption in preemptions]


def run_label(spec: WorkloadSpec, run: RunVariant) -> str:
    """The heading of ``run`` of ``spec`` (as its summary's :attr:`SimulationSummary.label`)."""
    return run.label(services=bool(spec.services.count), late_tenant=bool(spec.late_tenant.count))


def run_policies(
    spec: WorkloadSpec,
    policies: Sequence[str] = ("fair", "binpacking"),
    *,
    mode: SimMode = "lockstep",
    native_node_ordering: bool | None = None,
    speed: float = DEFAULT_SPEED,
    timeout: float = DEFAULT_TIMEOUT,
    progress: Callable[[str], ProgressFunc | None] | None = None,
) -> list[SimulationSummary]:
    """Runs the same generated workload once per run of :func:`plan_runs` (the label says
    which). ``progress(label)`` may return the progress function for that run."""
    plan = spec.generate()
    return [
        run_simulation(
            plan,
            policy=run.policy,
            mode=mode,
            native_node_ordering=native_node_ordering,
            speed=speed,
            timeout=timeout,
            progress=progress(run_label(spec, run)) if progress is not None else None,
            role_history=run.role_history,
            preemption=run.preemption,
        )
        for run in plan_runs(spec, policies)
    ]


# -- presentation ---------------------------------------------------------------------------------


def describe_workload(spec: WorkloadSpec, plan: Workload | None = None) -> str:
    """One paragraph saying what is simulated."""
    plan = plan or spec.generate()
    queues = ", ".join(f"{q} ({w:g})" for q, w in zip(spec.queues, spec.queue_weights, strict=True))
    arrival = "all at once" if spec.arrival == "burst" else f"{spec.arrival}, {spec.arrival_rate:g}/s"
    text = (
        f"workload (seed {spec.seed}): {spec.node_count:,} nodes of {_gib(spec.node_memory)} / "
        f"{_cores(spec.node_vcore)}; {len(plan.apps):,} applications, {plan.total_asks:,} asks; "
        f"queues {queues}; arrivals {arrival}; run times {spec.run_time.low:g}-{spec.run_time.high:g} s"
    )
    services = spec.services
    if services.count:
        roles = ", ".join(f"{n} {role}" for role, n in services.roles)
        text += (
            f"; {services.count} service(s) of {roles} ({_gib(services.memory)} / {_cores(services.vcore)} each) "
            f"in {services.queue}, from {services.start:g} s: run {services.run_time:g} s, down "
            f"{services.down_time:g} s, {services.restarts} restart(s)"
        )
    late = spec.late_tenant
    if late.count:
        guaranteed = " / ".join(part for part in (
            _gib(late.guaranteed_memory) if late.guaranteed_memory else "",
            _cores(late.guaranteed_vcore) if late.guaranteed_vcore else "") if part)
        text += (
            f"; late tenant: {late.count} application(s) of {late.asks} asks ({_gib(late.memory)} / "
            f"{_cores(late.vcore)}, {late.run_time:g} s each) in {late.queue} at {late.start:g} s, guaranteed "
            f"{guaranteed}, preemption.delay {late.preemption_delay:g} s"
        )
    gangs = spec.gangs
    if gangs.count:
        text += (
            f"; gang jobs: {gangs.count} of {gangs.members} members ({_gib(gangs.memory)} / {_cores(gangs.vcore)}, "
            f"{gangs.run_time:g} s each) in {gangs.queue}, from {gangs.start:g} s every {gangs.interval:g} s, "
            f"placeholder timeout {gangs.timeout:g} s, {gangs.style}"
        )
    return text


def _gib(value: float) -> str:
    return f"{value / GIB:.3g} GiB"


def _cores(millis: float) -> str:
    return f"{millis / 1000:.3g} cores"


def _seconds(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f} s"
    if value >= 1:
        return f"{value:.2f} s"
    return f"{value * 1000:.1f} ms"


def _services_back(services: ServicesSummary | None) -> str:
    if services is None:
        return "-"
    return f"{_pct(services.fraction)} ({services.back:,} of {services.instances:,})"


def _pct(value: float) -> str:
    return f"{value * 100:.1f} %"


def _allocations(s: SimulationSummary) -> str:
    if not s.reruns:
        return f"{s.allocations:,} of {s.asks:,} asks"
    return f"{s.allocations:,} for {s.asks:,} asks ({s.reruns:,} re-runs)"


def _time_to_guarantee(s: SimulationSummary) -> str:
    if s.late_tenant is None:
        return "-"
    wait = s.late_tenant.time_to_guarantee
    return "never within the run" if wait is None else _seconds(wait)


def _work_lost(s: SimulationSummary) -> str:
    return f"{s.work_lost.vcore_seconds:,.0f} / {s.work_lost.memory_gib_seconds:,.0f}"


#: The preemption rows, shown when a run has a late tenant or preempted anything.
_PREEMPTION_ROWS: tuple[tuple[str, Callable[[SimulationSummary], str]], ...] = (
    ("late tenant: time to its guarantee", _time_to_guarantee),
    ("preempted allocations", lambda s: f"{s.preempted:,}"),
    ("work lost (vcore-s / memory GiB-s)", _work_lost),
)


def _gang_jobs(s: SimulationSummary) -> str:
    g = s.gangs
    if g is None:
        return "-"
    return f"{g.started_whole:,} whole, {g.resumed:,} resumed, {g.failed:,} failed, of {g.jobs:,}"


def _gang_wait(s: SimulationSummary) -> str:
    g = s.gangs
    if g is None or not g.all_running:
        return "-"
    return f"{_seconds(g.all_running_p50)} / {_seconds(g.all_running_max)} ({g.all_running:,} jobs)"


def _placeholder_held(s: SimulationSummary) -> str:
    g = s.gangs
    return "-" if g is None else f"{g.placeholder_vcore_seconds:,.0f} / {g.placeholder_memory_gib_seconds:,.0f}"


#: The gang rows, shown when a run has gang jobs.
_GANG_ROWS: tuple[tuple[str, Callable[[SimulationSummary], str]], ...] = (
    ("gang jobs", _gang_jobs),
    ("gang: submission to all members running (median / max)", _gang_wait),
    ("placeholders held (vcore-s / memory GiB-s)", _placeholder_held),
)


def format_summaries(summaries: Sequence[SimulationSummary]) -> str:
    """The summary table: one column per run (policy), one row per figure."""
    rows: list[tuple[str, Callable[[SimulationSummary], str]]] = [
        ("mode / node ordering", lambda s: f"{s.mode} / {s.node_ordering}"),
        ("allocations", _allocations),
        ("released", lambda s: f"{s.releases:,}"),
        ("rejected asks", lambda s: f"{s.rejected_asks:,}"),
        ("apps completed", lambda s: f"{s.apps_completed:,} of {s.apps:,}"),
        ("scheduling cycles", lambda s: f"{s.cycles:,}"),
        ("wall time", lambda s: _seconds(s.wall_seconds)),
        ("throughput (allocations / wall s)", lambda s: f"{s.throughput:,.0f}"),
        ("simulated time", lambda s: _seconds(s.sim_seconds)),
        ("allocations / simulated s", lambda s: f"{s.sim_throughput:,.1f}"),
        ("latency p50", lambda s: _seconds(s.latency.p50)),
        ("latency p90", lambda s: _seconds(s.latency.p90)),
        ("latency p99", lambda s: _seconds(s.latency.p99)),
        ("latency max", lambda s: _seconds(s.latency.max)),
        ("memory utilisation (mean / peak)", lambda s: f"{_pct(s.utilisation.memory)} / {_pct(s.utilisation.peak_memory)}"),
        ("vcore utilisation (mean / peak)", lambda s: f"{_pct(s.utilisation.vcore)} / {_pct(s.utilisation.peak_vcore)}"),
        ("nodes in use (mean / peak)", lambda s: f"{s.utilisation.nodes_in_use:,.1f} / {s.utilisation.peak_nodes_in_use:,} of {s.nodes:,}"),
        ("packing of nodes in use", lambda s: _pct(s.utilisation.packing)),
        ("completed", lambda s: "yes" if s.completed else "NO"),
    ]
    if any(s.services is not None for s in summaries):
        rows[-1:-1] = [
            ("service instances back on a used node", lambda s: _services_back(s.services)),
            ("random placement would give", lambda s: _pct(s.services.random_expected) if s.services else "-"),
        ]
    if any(s.late_tenant is not None or s.preempted for s in summaries):
        rows[-1:-1] = _PREEMPTION_ROWS
    if any(s.gangs is not None for s in summaries):
        rows[-1:-1] = _GANG_ROWS
    table = format_table(
        ["", *(s.label for s in summaries)],
        [[label, *(cell(s) for s in summaries)] for label, cell in rows],
        align="l" + "r" * len(summaries),
    )
    notes = [f"- {s.label}: {problem}" for s in summaries for problem in s.problems]
    return table + ("\n\nProblems:\n" + "\n".join(notes) if notes else "")


class ProgressBar:
    """A text progress bar on a stream (stderr by default).

    On a terminal it redraws one line in place, at most ten times a second; on anything else
    (a pipe, a log file) it prints a line at every 10 % so the output stays readable.
    Call it as a :data:`~pyscheduler.sim.rm.ProgressFunc`; :meth:`close` ends the line.
    """

    WIDTH = 30

    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.interactive = bool(getattr(self.stream, "isatty", lambda: False)())
        self._last_draw = 0.0
        self._last_decile = -1
        self._drawn = False
        self._last_len = 0

    def __call__(self, done: int, total: int, sim_seconds: float) -> None:
        fraction = done / total if total else 1.0
        if self.interactive:
            now = time.monotonic()
            if now - self._last_draw < 0.1 and done < total:
                return
            self._last_draw = now
            line = self._line(done, total, fraction, sim_seconds)
            # Padded to the previous line's length so a shorter line leaves no leftovers.
            self.stream.write("\r" + line.ljust(self._last_len))
            self._last_len = len(line)
            self._drawn = True
        else:
            decile = int(fraction * 10)
            if decile == self._last_decile:
                return
            self._last_decile = decile
            self.stream.write(self._line(done, total, fraction, sim_seconds) + "\n")
        self.stream.flush()

    def _line(self, done: int, total: int, fraction: float, sim_seconds: float) -> str:
        filled = int(fraction * self.WIDTH)
        bar = "#" * filled + "." * (self.WIDTH - filled)
        return f"{self.label} [{bar}] {fraction * 100:5.1f} % {done:,}/{total:,} asks done, t={sim_seconds:,.1f} s"

    def close(self) -> None:
        """Ends the in-place line (so what follows starts on a fresh one)."""
        if self.interactive and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
