"""What a simulation run is and what it recorded: the run modes, the progress callback and
:class:`SimulationRecord`, the raw figures the simulated RM collects.

Plain data, no behaviour: :mod:`pyscheduler.sim.rm` fills a record as the run goes (its
utilisation integrals through :mod:`pyscheduler.sim.usage`, its gang figures through
:mod:`pyscheduler.sim.gang_jobs`), and :mod:`pyscheduler.sim.runner` summarises it. A figure
added here is filled there and summarised there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, Literal

__all__ = ["MODES", "ProgressFunc", "SimMode", "SimulationRecord"]

SimMode = Literal["lockstep", "threaded"]
MODES: Final[tuple[SimMode, ...]] = ("lockstep", "threaded")

#: (asks finished: released or rejected, total asks, simulated seconds) -> None.
ProgressFunc = Callable[[int, int, float], None]


@dataclass
class SimulationRecord:
    """What one run recorded (raw figures; :mod:`pyscheduler.sim.runner` summarises them)."""

    policy: str
    mode: SimMode
    native_node_ordering: bool
    total_asks: int
    total_apps: int
    #: Simulated seconds from ask submission to allocation, one per allocation, in arrival order.
    latencies: list[float] = field(default_factory=list)
    allocations: int = 0
    #: Releases the RM sent that the core confirmed (STOPPED_BY_RM echo).
    releases_confirmed: int = 0
    #: Allocations the core ended itself other than by preemption (node removal): not expected.
    released_by_core: int = 0
    #: Guaranteed-share preemption on in the partition (``preemption.enabled``).
    preemption: bool = True
    #: Allocations the core preempted (released with PREEMPTED_BY_SCHEDULER): killed, confirmed
    #: and submitted again.
    preempted: int = 0
    #: Allocations of those resubmitted tasks (counted in ``allocations`` too).
    rerun_allocations: int = 0
    #: Work lost: each victim's memory (bytes) and vcore (millicores) times the simulated
    #: seconds it had run when it was killed.
    lost_memory_seconds: float = 0.0
    lost_vcore_seconds: float = 0.0
    #: The late tenant: whether the workload has one, when its applications were submitted,
    #: and when its running allocations first reached its queue's guarantee (simulated
    #: seconds; None: never).
    late_tenant: bool = False
    late_tenant_start: float | None = None
    guarantee_reached: float | None = None
    rejected_asks: int = 0
    rejected_apps: int = 0
    #: Applications whose every ask was allocated and released (then removed by the RM).
    apps_completed: int = 0
    #: Allocations for keys the RM never asked for, or twice: a core bug if ever non-zero.
    unexpected_allocations: int = 0
    cycles: int = 0
    wall_seconds: float = 0.0
    #: Simulated seconds from the first submission to the last release.
    sim_seconds: float = 0.0
    #: Time integrals (value x simulated seconds) of allocated memory, vcore and nodes in use.
    memory_seconds: float = 0.0
    vcore_seconds: float = 0.0
    node_seconds: float = 0.0
    peak_memory: int = 0
    peak_vcore: int = 0
    peak_nodes_in_use: int = 0
    #: Service instances placed: (history key, role, incarnation, node id), in arrival order.
    role_instances: list[tuple[str, str, int, str]] = field(default_factory=list)
    #: Role history was used for the services (False: their roles were placed "anywhere").
    role_history: bool = True
    cluster_memory: int = 0
    cluster_vcore: int = 0
    node_count: int = 0
    node_memory: int = 0
    node_vcore: int = 0
    #: Gang jobs: how many, how many ran their placeholders whole (the job ran before any
    #: timeout), resumed (Soft) or failed (Hard) after their placeholder timeout; per job whose
    #: members all ran at once, the simulated seconds from its submission until then; the
    #: placeholders placed and their memory (bytes) and vcore (millicores) times the seconds
    #: they held their nodes.
    gang_jobs: int = 0
    gang_started_whole: int = 0
    gang_resumed: int = 0
    gang_failed: int = 0
    gang_all_running: list[float] = field(default_factory=list)
    placeholders_allocated: int = 0
    placeholder_memory_seconds: float = 0.0
    placeholder_vcore_seconds: float = 0.0
    #: True when every ask ended (released, rejected or ended by the core) before the timeout.
    completed: bool = False
    problems: list[str] = field(default_factory=list)
