"""The simulator: a simulated RM that plays a seeded workload against the core.

- :mod:`~pyscheduler.sim.workload`: :class:`WorkloadSpec` (what to simulate; read from a
  YAML/JSON file or a mapping) and its deterministic generation into a :class:`Workload`.
- :mod:`~pyscheduler.sim.rm`: :class:`SimulatedRM`, an RM that registers, creates the nodes,
  submits applications and asks as they arrive and releases allocations after their run time,
  in lockstep with the scheduling cycle (exactly repeatable) or against the real scheduling
  thread.
- :mod:`~pyscheduler.sim.runner`: :func:`run_simulation` / :func:`run_policies` run a workload to
  completion and return :class:`SimulationSummary` (allocations, throughput, latency
  percentiles, utilisation, completed applications).

``pyscheduler simulate`` is the command-line front end; ``docs/simulator.md`` documents the
workload file format.
"""

from pyscheduler.sim.rm import MODES, ScaledClock, SimMode, SimulatedRM, SimulationRecord
from pyscheduler.sim.runner import (
    LatencySummary,
    ProgressBar,
    SimulationSummary,
    UtilisationSummary,
    format_summaries,
    percentile,
    run_policies,
    run_simulation,
    summarise,
)
from pyscheduler.sim.workload import (
    ARRIVAL_PATTERNS,
    AppPlan,
    AskPlan,
    FloatRange,
    IntRange,
    Workload,
    WorkloadError,
    WorkloadSpec,
)

__all__ = [
    # workload
    "ARRIVAL_PATTERNS",
    "AppPlan",
    "AskPlan",
    "FloatRange",
    "IntRange",
    "Workload",
    "WorkloadError",
    "WorkloadSpec",
    # rm
    "MODES",
    "ScaledClock",
    "SimMode",
    "SimulatedRM",
    "SimulationRecord",
    # runner
    "LatencySummary",
    "ProgressBar",
    "SimulationSummary",
    "UtilisationSummary",
    "format_summaries",
    "percentile",
    "run_policies",
    "run_simulation",
    "summarise",
]
