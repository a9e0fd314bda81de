"""The simulator: a simulated RM that plays a seeded workload against the core.

- :mod:`~pyscheduler.sim.workload`: :class:`WorkloadSpec` (what to simulate; read from a
  YAML/JSON file or a mapping, over a named preset of :data:`PRESETS` if wanted) and its
  deterministic generation into a :class:`Workload`; :class:`LateTenantSpec`, a tenant with a
  guarantee arriving on a busy cluster (preemption's workload).
- :mod:`~pyscheduler.sim.rm`: :class:`SimulatedRM`, an RM that registers, creates the nodes,
  submits applications and asks as they arrive and releases allocations after their run time,
  in lockstep with the scheduling cycle (exactly repeatable) or against the real scheduling
  thread; it kills, confirms and resubmits the allocations the core preempts.
- :mod:`~pyscheduler.sim.runner`: :func:`run_simulation` / :func:`run_policies` run a workload to
  completion and return :class:`SimulationSummary` (allocations, throughput, latency
  percentiles, utilisation, completed applications; allocations preempted, work lost and the
  late tenant's time to its guarantee); :func:`plan_runs` lists the runs a workload calls for.

``workload`` and ``rm`` are each split into smaller modules their docstrings list
(``workload_types``, ``workload_format``, ``workload_sections``; ``record``, ``timeline``,
``rm_messages``, ``usage``, ``gang_jobs``); every name above is still importable from them.

- :mod:`~pyscheduler.sim.topology_spec` / :mod:`~pyscheduler.sim.topology_run`: the workload's
  ``topology`` section (a 3-level cluster, gangs requiring a rack or a block) and its own RM,
  which plays those gangs with topology placement and without (``--preset topology``).

- :mod:`~pyscheduler.sim.whatif` (with ``whatif_request`` and ``whatif_copy``): what if an
  application were submitted now? A copy of a live partition played forward on a fresh core
  (``POST /ws/v1/partition/{p}/whatif``, ``docs/whatif.md``).

``pyscheduler simulate`` is the command-line front end; ``docs/simulator.md`` documents the
workload file format.
"""

from pyscheduler.sim.rm import MODES, ScaledClock, SimMode, SimulatedRM, SimulationRecord
from pyscheduler.sim.runner import (
    LatencySummary,
    LateTenantSummary,
    ProgressBar,
    RunVariant,
    SimulationSummary,
    UtilisationSummary,
    WorkLost,
    format_summaries,
    percentile,
    plan_runs,
    run_policies,
    run_simulation,
    summarise,
)
from pyscheduler.sim.workload import (
    ARRIVAL_PATTERNS,
    PRESETS,
    AppPlan,
    AskPlan,
    FloatRange,
    IntRange,
    LateTenantSpec,
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
    "LateTenantSpec",
    "PRESETS",
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
    "LateTenantSummary",
    "ProgressBar",
    "RunVariant",
    "SimulationSummary",
    "UtilisationSummary",
    "WorkLost",
    "format_summaries",
    "percentile",
    "plan_runs",
    "run_policies",
    "run_simulation",
    "summarise",
]
