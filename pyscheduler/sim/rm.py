"""The simulated resource manager: drives the core through :class:`RMProxy` from a workload.

:class:`SimulatedRM` plays the part of a shim. It registers (queues.yaml built from the
workload), creates the nodes, submits each application with all its asks when it arrives,
and releases each allocation once its run time has passed; when every ask of an application
has been released it removes the application, as a shim does when the job is gone. It
implements the required RM callback and deliberately *not* ``predicates``: an RM without it
lets every node pass, and a predicates hook would cost a Python call per node tried.

Time is simulated. The RM keeps a heap of timed events (application arrivals and allocation
releases) on the simulation's clock, which is also the core's clock (ask ages, the
reservation delay and application timers all follow it). Two ways to run:

- ``lockstep``: a :class:`~pyscheduler.common.clock.ManualClock` and
  :meth:`Scheduler.schedule_once` called from this thread. Each cycle costs the workload's
  ``cycle_time`` of simulated time; when a cycle places nothing, the clock jumps to the next
  event. Nothing depends on the machine's speed: the same workload gives exactly the same
  allocations, latencies and utilisation every time.
- ``threaded``: the real scheduling loop on its own thread (:meth:`Scheduler.start`) and a
  :class:`ScaledClock` that runs ``speed`` times faster than the wall clock, so a workload of
  minutes runs in seconds. This is how the core runs in production (the RM's calls and the
  loop interleave); latencies then include the scheduler's real speed, scaled.

Preemption: when the core releases an allocation with termination type
``PREEMPTED_BY_SCHEDULER``, the RM acts as a shim does: the task is killed at once (it stops
using its node; the work it did is lost), the RM confirms the release to the core with the
same termination type, and the task is submitted again as a new ask of its application
(``<key>-rerun-<n>``, the same size, priority and full run time), as a job controller
replaces a killed pod. The late tenant's asks may preempt others; the RM wakes the core once
their ``preemption.delay`` has passed, then every simulated second while one of them waits:
in lockstep mode the clock's jumps then do not skip the moment preemption may start, and in
threaded mode the scheduling thread does not wait for its idle poll (100 ms of real time,
``--speed`` times longer in simulated time).

Recorded: per allocation, the latency from the ask's submission to the allocation's arrival
in the callback (simulated seconds), and the allocated memory, vcore and nodes in use
integrated over simulated time (utilisation); per victim of preemption, its resources times
the time it had run (the work lost); when the late tenant's running allocations first reach
its queue's guarantee.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from pyscheduler.common.clock import ManualClock
from pyscheduler.common.resources import MEMORY, VCORE, Resource
from pyscheduler.policies.role_history.settings import HISTORY_KEY_TAG, ROLE_TAG, TAG_PREFIX, PlacementPolicy
from pyscheduler.si.events import EventRecord
from pyscheduler.si import messages as si
from pyscheduler.rmproxy.proxy import RMProxy
from pyscheduler.scheduler.context import ClusterContext
from pyscheduler.scheduler.loop import Scheduler
from pyscheduler.sim.workload import AppPlan, AskPlan, Workload

__all__ = ["MODES", "ProgressFunc", "ScaledClock", "SimMode", "SimulatedRM", "SimulationRecord"]

SimMode = Literal["lockstep", "threaded"]
MODES: Final[tuple[SimMode, ...]] = ("lockstep", "threaded")

#: (asks finished: released or rejected, total asks, simulated seconds) -> None.
ProgressFunc = Callable[[int, int, float], None]

#: 2026-01-01T00:00:00Z: the simulated wall clock starts here (event timestamps look real).
START_NS: Final = 1_767_225_600_000_000_000
RM_ID: Final = "sim"
USER: Final = "sim-user"

# Heap event kinds. At equal times a release goes first: the freed space is then visible to
# the asks that arrive at the same instant (and the order is fixed, for repeatable runs).
_RELEASE: Final = 0
#: A victim of preemption was killed: confirm the release to the core, submit the task again.
_PREEMPTED: Final = 1
_SUBMIT: Final = 2
#: Nothing to send: wakes the core when a preemption delay has passed (in lockstep, keeps the
#: clock from jumping past it).
_WAKE: Final = 3
#: Gang jobs: a placeholder the core released is gone (its pod deleted): confirm the release;
#: a job runs (every placeholder placed) or resumed: submit its members.
_CONFIRM: Final = 4
_MEMBERS: Final = 5
#: A release's or a victim's (application id, allocation key), a placeholder's confirmation
#: (application id, key, termination type), a submission's plan, or None for a wake.
_Payload = tuple[str, str] | tuple[str, str, int] | AppPlan | None

#: The late tenant's asks are woken this long after their preemption delay (the manual
#: clock's nanoseconds may trail its seconds by a few rounding errors) ...
_WAKE_MARGIN: Final = 0.001
#: ... then every this many simulated seconds while one of them waits (preemption re-checks an
#: ask at most every 15 s: this sees it within a second).
_WAKE_INTERVAL: Final = 1.0


#: The late tenant's asks: they may preempt others, and opt in as victims themselves.
_MAY_PREEMPT: Final = si.PreemptionPolicy(allow_preempt_self=True, allow_preempt_other=True)


def _release(app_id: str, key: str, termination: si.TerminationType, message: str) -> si.AllocationRelease:
    """The RM's release of one allocation."""
    return si.AllocationRelease(
        partition_name="default",
        application_id=app_id,
        termination_type=termination,
        message=message,
        allocation_key=key,
    )


class ScaledClock:
    """A clock that runs ``speed`` times faster than the real one, starting at 0 (monotonic)
    and at :data:`START_NS` (wall). Thread-safe: it only reads ``time.monotonic``."""

    def __init__(self, speed: float, start_ns: int = START_NS) -> None:
        if not speed > 0:
            raise ValueError(f"speed must be positive, got {speed}")
        self.speed = speed
        self._origin = time.monotonic()
        self._start_ns = start_ns

    def monotonic(self) -> float:
        return (time.monotonic() - self._origin) * self.speed

    def now_ns(self) -> int:
        return self._start_ns + int(self.monotonic() * 1_000_000_000)

    def real_seconds(self, simulated: float) -> float:
        """How long ``simulated`` seconds take on the wall clock."""
        return simulated / self.speed


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


class SimulatedRM:
    """A resource manager that plays a :class:`Workload` against a fresh core.

    Construct, then :meth:`run` once. The object is the RM callback registered with the core
    (``update_allocation`` and friends below); the core calls it from the scheduling thread in
    threaded mode, so every piece of shared state is guarded by ``self._cond``, and the RM
    never holds that lock while it calls into the core.
    """

    def __init__(
        self,
        workload: Workload,
        *,
        policy: str = "fair",
        mode: SimMode = "lockstep",
        native_node_ordering: bool = True,
        speed: float = 100.0,
        progress: ProgressFunc | None = None,
        role_history: bool = True,
        preemption: bool = True,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if policy not in ("fair", "binpacking"):
            raise ValueError(f"policy must be fair or binpacking, got {policy!r}")
        self.workload = workload
        self.spec = workload.spec
        self.policy = policy
        self.mode: SimMode = mode
        self.clock: ManualClock | ScaledClock = ManualClock(START_NS) if mode == "lockstep" else ScaledClock(speed)
        self.context = ClusterContext(clock=self.clock, native_node_ordering=native_node_ordering)
        self.proxy = RMProxy(self.context)
        self.scheduler = Scheduler(self.context)
        self._progress = progress
        self._cond = threading.Condition()
        self._ran = False

        spec = self.spec
        self.record = SimulationRecord(
            policy=policy,
            mode=mode,
            native_node_ordering=native_node_ordering,
            total_asks=workload.total_asks,
            total_apps=len(workload.apps),
            cluster_memory=workload.cluster_memory,
            cluster_vcore=workload.cluster_vcore,
            node_count=spec.node_count,
            node_memory=spec.node_memory,
            node_vcore=spec.node_vcore,
            role_history=role_history,
            preemption=preemption,
            late_tenant=spec.late_tenant.count > 0,
        )
        # A service's later incarnations, by the application they follow (submitted once it
        # is removed), and each service ask's (history key, role, incarnation).
        self._followers: dict[str, AppPlan] = {app.after: app for app in workload.apps if app.after}
        self._service_asks: dict[str, tuple[str, str, int]] = {
            ask.key: (app.history_key, ask.role, app.generation) for app in workload.apps if app.history_key
            for ask in app.asks
        }
        # The event heap: (simulated time, kind, sequence, payload). The sequence keeps equal
        # times in insertion order, so the run never depends on comparing payloads.
        self._heap: list[tuple[float, int, int, _Payload]] = []
        self._seq = 0
        # Per ask: (app id, memory, vcore, run time), known from the plan, and the plans
        # themselves (a victim of preemption is submitted again from them).
        self._asks: dict[str, tuple[str, int, int, float]] = {
            ask.key: (app.app_id, ask.memory, ask.vcore, ask.run_time) for app in workload.apps for ask in app.asks
        }
        self._plans: dict[str, tuple[AppPlan, AskPlan]] = {
            ask.key: (app, ask) for app in workload.apps for ask in app.asks
        }
        self._reruns: dict[str, int] = {}  # original ask key -> times it was submitted again
        self._original: dict[str, str] = {}  # a rerun's key -> the original ask key
        self._submitted_at: dict[str, float] = {}  # asks submitted and not yet allocated
        self._running: dict[str, tuple[str, float]] = {}  # allocation key -> (node id, started)
        self._late_usage = [0, 0]  # the late tenant's running memory and vcore
        self._releasing: set[str] = set()  # released by the RM, confirmation pending
        self._remaining: dict[str, int] = {app.app_id: len(app.asks) for app in workload.apps}
        self._to_remove: list[str] = []  # completed apps the RM still has to remove
        self._rejected_apps: set[str] = set()
        self._finished = 0  # asks released (confirmed), rejected or ended by the core
        # Utilisation bookkeeping (integrated at every change).
        self._node_used: dict[str, list[int]] = {}  # node id -> [memory, vcore, allocations]
        self._used_memory = 0
        self._used_vcore = 0
        self._nodes_in_use = 0
        self._last_change = 0.0
        self._first_submit: float | None = None
        self._last_release = 0.0
        # Gang jobs (the workload's ``gangs``): their plans; each placeholder's (job, memory,
        # vcore) and, while placed, (node, since); the jobs' last states, arrivals, members
        # running, and the jobs whose members were submitted or that failed.
        self._gang_plans: dict[str, AppPlan] = {app.app_id: app for app in workload.apps if app.task_group}
        self.record.gang_jobs = len(self._gang_plans)
        self._placeholders: dict[str, tuple[str, int, int]] = {}
        self._ph_running: dict[str, tuple[str, float]] = {}
        self._gang_states: dict[str, str] = {}
        self._gang_arrival: dict[str, float] = {}
        self._members_running: dict[str, int] = {}
        self._members_submitted: set[str] = set()
        self._gang_failed: set[str] = set()

    # -- the RM callback (called by the core, possibly from the scheduling thread) ------------

    def update_allocation(self, response: si.AllocationResponse) -> None:
        """New allocations start running (their release is scheduled); releases are confirmed;
        rejected asks are finished."""
        with self._cond:
            now = self.clock.monotonic()
            record = self.record
            for alloc in response.new:
                key = alloc.allocation_key
                if key in self._placeholders:
                    self._placeholder_placed(now, key, alloc.node_id)
                    continue
                submitted = self._submitted_at.pop(key, None)
                if submitted is None:
                    record.unexpected_allocations += 1
                    continue
                app_id, memory, vcore, run_time = self._asks[key]
                record.allocations += 1
                record.rerun_allocations += key in self._original
                record.latencies.append(now - submitted)
                self._running[key] = (alloc.node_id, now)
                service = self._service_asks.get(key)
                if service is not None:
                    record.role_instances.append((*service, alloc.node_id))
                self._change_usage(now, alloc.node_id, memory, vcore)
                self._change_late_usage(now, key, 1)
                self._member_started(now, app_id)
                self._push(now + run_time, _RELEASE, (app_id, key))
            for release in response.released:
                key = release.allocation_key
                if key in self._placeholders:
                    self._placeholder_released(now, key, int(release.termination_type))
                elif key in self._releasing:
                    self._releasing.discard(key)
                    record.releases_confirmed += 1
                    self._ask_finished(self._asks[key][0])
                elif key in self._running and release.termination_type == si.TerminationType.PREEMPTED_BY_SCHEDULER:
                    self._kill_victim(now, key)
                elif key in self._running:
                    # The core ended it (node removal): it stops running now.
                    record.released_by_core += 1
                    self._stop_running(now, key)
                    self._ask_finished(self._asks[key][0])
            for rejected in response.rejected_allocations:
                key = rejected.allocation_key
                if self._submitted_at.pop(key, None) is not None:
                    record.rejected_asks += 1
                    record.problems.append(f"ask {key} rejected: {rejected.reason}")
                    self._ask_finished(self._asks[key][0])
            self._cond.notify_all()

    def update_application(self, response: si.ApplicationResponse) -> None:
        """Rejected applications are remembered: their asks are not submitted. A gang job that
        runs (every placeholder placed) or resumed gets its members; one that failed ends."""
        if response.updated and self._gang_plans:
            with self._cond:
                for updated in response.updated:
                    if updated.application_id in self._gang_plans:
                        self._gang_state(self.clock.monotonic(), updated.application_id, updated.state)
        if response.rejected:
            with self._cond:
                for rejected in response.rejected:
                    if rejected.application_id in self._remaining and rejected.application_id not in self._rejected_apps:
                        self._rejected_apps.add(rejected.application_id)
                        self.record.rejected_apps += 1
                        self.record.problems.append(f"application {rejected.application_id} rejected: {rejected.reason}")

    def update_node(self, response: si.NodeResponse) -> None:
        """A rejected node is a broken setup: say so in the record."""
        if response.rejected:
            with self._cond:
                for node in response.rejected:
                    self.record.problems.append(f"node {node.node_id} rejected: {node.reason}")

    def send_event(self, events: Sequence[EventRecord]) -> None:
        """Request events are what a shim shows on pods; the simulation has no pods."""

    def update_container_scheduling_state(self, request: si.UpdateContainerSchedulingStateRequest) -> None:
        """Autoscaler hints; the simulated cluster does not scale."""

    # -- bookkeeping (callers hold self._cond) -------------------------------------------------

    def _push(self, when: float, kind: int, payload: _Payload) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (when, kind, self._seq, payload))

    def _ask_finished(self, app_id: str) -> None:
        self._finished += 1
        self._remaining[app_id] -= 1
        if self._remaining[app_id] == 0 and app_id not in self._rejected_apps and app_id not in self._gang_failed:
            self._to_remove.append(app_id)

    # -- gang jobs (callers hold self._cond) ---------------------------------------------------

    def _placeholder_placed(self, now: float, key: str, node_id: str) -> None:
        """A placeholder pod runs: it holds its node's room. The job's first one starts the
        core's placeholder timer: wake the core when it may fire (lockstep must not jump past)."""
        if key in self._ph_running:
            self.record.unexpected_allocations += 1
            return
        app_id, memory, vcore = self._placeholders[key]
        if not any(self._placeholders[k][0] == app_id for k in self._ph_running):
            self._push(now + self._gang_plans[app_id].gang_timeout + _WAKE_MARGIN, _WAKE, None)
        self.record.placeholders_allocated += 1
        self._ph_running[key] = (node_id, now)
        self._change_usage(now, node_id, memory, vcore)

    def _placeholder_released(self, now: float, key: str, termination: int) -> None:
        """The core released a placeholder (replaced, timed out, too small): its pod is deleted
        now and the release confirmed. One never placed (a pending one at a timeout) is gone
        from the core already."""
        placed = self._ph_running.pop(key, None)
        if placed is None:
            return
        node_id, since = placed
        app_id, memory, vcore = self._placeholders[key]
        self.record.placeholder_memory_seconds += memory * (now - since)
        self.record.placeholder_vcore_seconds += vcore * (now - since)
        self._change_usage(now, node_id, -memory, -vcore)
        self._last_release = max(self._last_release, now)
        self._push(now, _CONFIRM, (app_id, key, termination))

    def _member_started(self, now: float, app_id: str) -> None:
        plan = self._gang_plans.get(app_id)
        if plan is None:
            return
        running = self._members_running[app_id] = self._members_running.get(app_id, 0) + 1
        if running == len(plan.asks):
            self.record.gang_all_running.append(now - self._gang_arrival[app_id])

    def _gang_state(self, now: float, app_id: str, state: str) -> None:
        """Follows a gang job's state as a shim does: Running (every placeholder placed) or
        Accepted again after Resuming (Soft timeout): its members are submitted; Failed (Hard
        timeout): its members never run."""
        previous = self._gang_states.get(app_id)
        self._gang_states[app_id] = state
        if state == "Running" and app_id not in self._members_submitted:
            self.record.gang_started_whole += 1
            self._members_submitted.add(app_id)
            self._push(now, _MEMBERS, (app_id, ""))
        elif state == "Resuming":
            self.record.gang_resumed += 1
        elif state == "Accepted" and previous == "Resuming" and app_id not in self._members_submitted:
            self._members_submitted.add(app_id)
            self._push(now, _MEMBERS, (app_id, ""))
        elif state == "Failed" and app_id not in self._gang_failed:
            self.record.gang_failed += 1
            self._gang_failed.add(app_id)
            for _ in self._gang_plans[app_id].asks:
                self._ask_finished(app_id)

    def _stop_running(self, now: float, key: str) -> None:
        node_id, _ = self._running.pop(key)
        _, memory, vcore, _ = self._asks[key]
        self._change_usage(now, node_id, -memory, -vcore)
        self._change_late_usage(now, key, -1)
        self._last_release = max(self._last_release, now)

    def _kill_victim(self, now: float, key: str) -> None:
        """The core preempted a running allocation: the task is killed now, the work it did so
        far counts as lost, and its confirmation and resubmission are due at once."""
        record = self.record
        _, started = self._running[key]
        app_id, memory, vcore, _ = self._asks[key]
        record.preempted += 1
        record.lost_memory_seconds += memory * (now - started)
        record.lost_vcore_seconds += vcore * (now - started)
        self._stop_running(now, key)
        self._push(now, _PREEMPTED, (app_id, key))

    def _change_late_usage(self, now: float, key: str, sign: int) -> None:
        """Follows the late tenant's running usage (``sign`` +1: an allocation started, -1: it
        ended) and notes when it first reaches the tenant's guarantee."""
        app, ask = self._plans[key]
        if not app.may_preempt:  # only the late tenant's asks may preempt
            return
        usage = self._late_usage
        usage[0] += sign * ask.memory
        usage[1] += sign * ask.vcore
        if self.record.guarantee_reached is None and self.spec.late_tenant.guarantee_met(usage[0], usage[1]):
            self.record.guarantee_reached = now

    def _rerun_key(self, key: str) -> str:
        """A new ask key for a killed task submitted again (``<original>-rerun-<n>``), known
        from then on as the original ask is."""
        original = self._original.get(key, key)
        count = self._reruns[original] = self._reruns.get(original, 0) + 1
        rerun = f"{original}-rerun-{count}"
        self._original[rerun] = original
        self._asks[rerun] = self._asks[key]
        self._plans[rerun] = self._plans[key]
        service = self._service_asks.get(key)
        if service is not None:
            self._service_asks[rerun] = service
        return rerun

    def _late_asks_waiting(self) -> bool:
        return any(self._plans[key][0].may_preempt for key in self._submitted_at)

    def _wake_again(self, now: float) -> None:
        """A wake fell due: another one a second later while a late tenant's ask still waits and
        something else is still to come (an idle cluster needs no preemption)."""
        if self._late_asks_waiting() and any(kind != _WAKE for _, kind, _, _ in self._heap):
            self._push(now + _WAKE_INTERVAL, _WAKE, None)

    def _change_usage(self, now: float, node_id: str, memory: int, vcore: int) -> None:
        """Integrates usage up to ``now``, then applies one allocation's start or end."""
        record = self.record
        elapsed = now - self._last_change
        if elapsed > 0:
            record.memory_seconds += self._used_memory * elapsed
            record.vcore_seconds += self._used_vcore * elapsed
            record.node_seconds += self._nodes_in_use * elapsed
            self._last_change = now
        used = self._node_used.get(node_id)
        if used is None:
            used = self._node_used[node_id] = [0, 0, 0]
        was_used = used[2] > 0
        used[0] += memory
        used[1] += vcore
        used[2] += 1 if memory > 0 else -1
        self._nodes_in_use += (used[2] > 0) - was_used
        self._used_memory += memory
        self._used_vcore += vcore
        record.peak_memory = max(record.peak_memory, self._used_memory)
        record.peak_vcore = max(record.peak_vcore, self._used_vcore)
        record.peak_nodes_in_use = max(record.peak_nodes_in_use, self._nodes_in_use)

    def _done(self) -> bool:
        return self._finished == self.record.total_asks and not self._heap and not self._to_remove

    def _take_due(self, now: float) -> list[tuple[float, int, int, _Payload]]:
        due = []
        while self._heap and self._heap[0][0] <= now:
            due.append(heapq.heappop(self._heap))
        return due

    # -- driving the core (this thread; never under self._cond) -------------------------------

    def _setup(self) -> None:
        """Registers, creates the nodes and schedules every application's arrival."""
        spec = self.spec
        self.proxy.register_resource_manager(
            si.RegisterResourceManagerRequest(
                rm_id=RM_ID, version="sim", policy_group="sim",
                config=spec.queues_yaml(self.policy, preemption=self.record.preemption),
            ),
            self,
        )
        capacity = Resource({MEMORY: spec.node_memory, VCORE: spec.node_vcore})
        nodes = tuple(
            si.NodeInfo(
                node_id=f"node-{i:05d}",
                action=si.NodeAction.CREATE,
                attributes={si.HOST_NAME: f"node-{i:05d}", si.INSTANCE_TYPE: "sim"},
                schedulable_resource=capacity,
            )
            for i in range(spec.node_count)
        )
        self.proxy.update_node(si.NodeRequest(nodes=nodes, rm_id=RM_ID))
        with self._cond:
            for app in self.workload.apps:
                if not app.after:
                    self._push(app.arrival, _SUBMIT, app)

    def _apply(self, due: list[tuple[float, int, int, _Payload]]) -> None:
        """Sends what fell due: releases (one request: run times over, and the confirmations of
        preempted allocations), then removals of the applications those releases completed,
        then arrivals (applications, then their asks), then the killed tasks submitted again."""
        releases: list[si.AllocationRelease] = []
        arrivals: list[AppPlan] = []
        reruns: list[tuple[str, str]] = []  # (original key, rerun key)
        members: list[AppPlan] = []
        wake = False
        with self._cond:
            now = self.clock.monotonic()
            for _, kind, _, payload in due:
                if kind == _WAKE:
                    wake = True
                    self._wake_again(now)
                elif kind == _CONFIRM and isinstance(payload, tuple) and len(payload) == 3:
                    app_id, key, termination = payload
                    releases.append(_release(app_id, key, si.TerminationType(termination), "simulated placeholder gone"))
                elif kind == _MEMBERS and isinstance(payload, tuple):
                    members.append(self._gang_plans[payload[0]])
                elif isinstance(payload, AppPlan):  # _SUBMIT
                    arrivals.append(payload)
                elif isinstance(payload, tuple) and len(payload) == 2 and kind == _PREEMPTED:
                    app_id, key = payload
                    releases.append(_release(app_id, key, si.TerminationType.PREEMPTED_BY_SCHEDULER,
                                             "simulated task killed: preempted by the scheduler"))
                    reruns.append((key, self._rerun_key(key)))
                elif isinstance(payload, tuple) and len(payload) == 2:  # _RELEASE
                    app_id, key = payload
                    if key not in self._running:
                        continue  # the core ended it already
                    self._stop_running(now, key)
                    self._releasing.add(key)
                    releases.append(_release(app_id, key, si.TerminationType.STOPPED_BY_RM, "simulated run time over"))
        if releases:
            self.proxy.update_allocation(
                si.AllocationRequest(releases=si.AllocationReleasesRequest(tuple(releases)), rm_id=RM_ID)
            )
        self._remove_completed()
        if arrivals:
            self._submit(arrivals)
        if reruns:
            self._submit_reruns(reruns)
        if members:
            self._submit_members(members)
        if wake and self.mode == "threaded":
            self.scheduler.wake()  # lockstep: the loop runs a cycle next anyway

    def _submit_reruns(self, reruns: list[tuple[str, str]]) -> None:
        """Submits killed tasks again, each as a new ask of its application (still there: its
        ask has not finished)."""
        asks: list[si.Allocation] = []
        with self._cond:
            now = self.clock.monotonic()
            for original, rerun in reruns:
                app, ask = self._plans[original]
                self._submitted_at[rerun] = now
                asks.append(self._ask_message(app, ask, rerun))
        self.proxy.update_allocation(si.AllocationRequest(allocations=tuple(asks), rm_id=RM_ID))

    def _submit_members(self, jobs: list[AppPlan]) -> None:
        """A gang job's members, once it runs (or resumed), as the Kubernetes shim submits them."""
        asks: list[si.Allocation] = []
        with self._cond:
            now = self.clock.monotonic()
            for app in jobs:
                for ask in app.asks:
                    self._submitted_at[ask.key] = now
                    asks.append(self._ask_message(app, ask, ask.key))
        self.proxy.update_allocation(si.AllocationRequest(allocations=tuple(asks), rm_id=RM_ID))

    def _ask_message(self, app: AppPlan, ask: AskPlan, key: str, *, placeholder: bool = False) -> si.Allocation:
        """The SI ask for one planned ask under ``key``; the late tenant's asks may preempt; a
        gang job's members and placeholders carry its task group."""
        return si.Allocation(
            allocation_key=key,
            resource_per_alloc=Resource({MEMORY: ask.memory, VCORE: ask.vcore}),
            priority=app.priority,
            application_id=app.app_id,
            partition_name="default",
            allocation_tags={ROLE_TAG: ask.role} if ask.role else {},
            preemption_policy=_MAY_PREEMPT if app.may_preempt else None,
            placeholder=placeholder,
            task_group_name=app.task_group,
        )

    def _remove_completed(self) -> None:
        with self._cond:
            done, self._to_remove = self._to_remove, []
            self.record.apps_completed += len(done)
            now = self.clock.monotonic()
            for app_id in done:
                follower = self._followers.get(app_id)
                if follower is not None:  # the service's next incarnation, after its down time
                    self._push(now + follower.arrival, _SUBMIT, follower)
        if done:
            removals = tuple(si.RemoveApplicationRequest(application_id=a, partition_name="default") for a in done)
            self.proxy.update_application(si.ApplicationRequest(remove=removals, rm_id=RM_ID))

    def _submit(self, apps: list[AppPlan]) -> None:
        new = tuple(
            si.AddApplicationRequest(
                application_id=app.app_id,
                queue_name=app.queue,
                partition_name="default",
                ugi=si.UserGroupInformation(user=USER),
                tags=self._service_tags(app),
                placeholder_ask=Resource({MEMORY: sum(a.memory for a in app.asks), VCORE: sum(a.vcore for a in app.asks)})
                if app.task_group else None,
                gang_scheduling_style=app.gang_style,
                execution_timeout_milli_seconds=round(app.gang_timeout * 1000),
            )
            for app in apps
        )
        self.proxy.update_application(si.ApplicationRequest(new=new, rm_id=RM_ID))
        asks: list[si.Allocation] = []
        with self._cond:
            now = self.clock.monotonic()
            if self._first_submit is None:
                self._first_submit = now
            for app in apps:
                if app.app_id in self._rejected_apps:
                    # Never submitted: its asks end here, as rejected.
                    for _ in app.asks:
                        self.record.rejected_asks += 1
                        self._ask_finished(app.app_id)
                    continue
                if app.may_preempt:
                    self._late_tenant_arrived(now)
                if app.task_group:
                    # A gang job: its placeholders now, its members once it runs.
                    self._gang_arrival[app.app_id] = now
                    for ask in app.asks:
                        key = f"{ask.key}-placeholder"
                        self._placeholders[key] = (app.app_id, ask.memory, ask.vcore)
                        asks.append(self._ask_message(app, ask, key, placeholder=True))
                    continue
                for ask in app.asks:
                    # Recorded before the request: in threaded mode the allocation can arrive
                    # before update_allocation even returns.
                    self._submitted_at[ask.key] = now
                    asks.append(self._ask_message(app, ask, ask.key))
        if asks:
            self.proxy.update_allocation(si.AllocationRequest(allocations=tuple(asks), rm_id=RM_ID))

    def _late_tenant_arrived(self, now: float) -> None:
        """Notes the late tenant's arrival; with preemption on, wakes the core when its asks'
        preemption delay has passed (callers hold self._cond)."""
        if self.record.late_tenant_start is None:
            self.record.late_tenant_start = now
        if self.record.preemption:
            self._push(now + self.spec.late_tenant.preemption_delay + _WAKE_MARGIN, _WAKE, None)

    def _service_tags(self, app: AppPlan) -> dict[str, str]:
        """A service's history key; with role history off, its roles placed anywhere."""
        if not app.history_key:
            return {}
        tags = {HISTORY_KEY_TAG: app.history_key}
        if not self.record.role_history:
            tags[f"{TAG_PREFIX}policy"] = PlacementPolicy.ANYWHERE.value
        return tags

    def _report_progress(self) -> None:
        if self._progress is not None:
            self._progress(self._finished, self.record.total_asks, self.clock.monotonic())

    # -- running ------------------------------------------------------------------------------

    def run(self, timeout: float = 600.0) -> SimulationRecord:
        """Plays the workload to the end (every ask released or rejected) or until ``timeout``
        wall seconds pass, then stops the core. Returns the record; call once."""
        if self._ran:
            raise RuntimeError("a SimulatedRM runs once: make a new one")
        self._ran = True
        started = time.perf_counter()
        deadline = time.monotonic() + timeout
        try:
            self._setup()
            if self.mode == "lockstep":
                self._run_lockstep(deadline)
            else:
                self._run_threaded(deadline)
        finally:
            self.scheduler.stop()
            self.record.wall_seconds = time.perf_counter() - started
            self.record.cycles = self.scheduler.cycles
            self.proxy.stop()
        self._finish_record()
        return self.record

    def _run_lockstep(self, deadline: float) -> None:
        # Everything runs on this thread (the callbacks too, inside schedule_once and the proxy
        # calls), so the heap is only read here between calls; the lock is taken where the
        # bookkeeping helpers expect it, which costs little next to a cycle.
        clock = self.clock
        assert isinstance(clock, ManualClock)
        cycle_time = self.spec.cycle_time
        schedule_once = self.scheduler.schedule_once
        iterations = 0
        while True:
            with self._cond:
                due = self._take_due(clock.monotonic())
            if due:
                self._apply(due)
            self._remove_completed()
            if self._done():
                return
            iterations += 1
            if iterations % 256 == 0:
                self._report_progress()
                if time.monotonic() > deadline:
                    self.record.problems.append("timed out (wall clock) before every ask finished")
                    return
            # The cycle's simulated cost is paid before its results reach the RM.
            if cycle_time:
                clock.advance(cycle_time)
            if schedule_once():
                continue
            # Nothing placed: nothing changes until the next event, so jump to it.
            if not self._heap:
                self.record.problems.append(
                    f"stuck: {self.record.total_asks - self._finished} asks can never be placed "
                    "(the scheduler is idle and nothing is running)"
                )
                return
            wait = self._heap[0][0] - clock.monotonic()
            if wait > 0:
                clock.advance(wait)

    def _run_threaded(self, deadline: float) -> None:
        clock = self.clock
        assert isinstance(clock, ScaledClock)
        self.scheduler.start()
        next_progress = 0.0
        while True:
            with self._cond:
                while True:
                    if self._done():
                        return
                    now = clock.monotonic()
                    if self._to_remove or (self._heap and self._heap[0][0] <= now):
                        due = self._take_due(now)
                        break
                    left = deadline - time.monotonic()
                    if left <= 0:
                        self.record.problems.append("timed out (wall clock) before every ask finished")
                        return
                    # Sleep until the next event is due; a new allocation (which pushes a
                    # release, maybe an earlier one) notifies and wakes us up sooner.
                    wait = clock.real_seconds(self._heap[0][0] - now) if self._heap else 0.1
                    self._cond.wait(min(wait, left, 0.1))
            self._apply(due)
            if time.monotonic() >= next_progress:
                next_progress = time.monotonic() + 0.05
                self._report_progress()

    def _finish_record(self) -> None:
        record = self.record
        with self._cond:
            # Integrate up to the end so the areas cover the whole run.
            end = max(self._last_release, self._last_change)
            self._change_usage_end(end)
            start = self._first_submit or 0.0
            record.sim_seconds = max(end - start, 0.0)
            record.completed = self._finished == record.total_asks
            if self._submitted_at:
                record.problems.append(f"{len(self._submitted_at)} asks were never allocated")
            if self._running:
                record.problems.append(f"{len(self._running)} allocations were still running at the end")
        self._report_progress()

    def _change_usage_end(self, end: float) -> None:
        elapsed = end - self._last_change
        if elapsed > 0:
            self.record.memory_seconds += self._used_memory * elapsed
            self.record.vcore_seconds += self._used_vcore * elapsed
            self.record.node_seconds += self._nodes_in_use * elapsed
            self._last_change = end
