"""The simulated resource manager: drives the core through :class:`RMProxy` from a workload.

:class:`SimulatedRM` plays the part of a shim. It registers (queues.yaml built from the
workload), creates the nodes, submits each application with all its asks when it arrives,
and releases each allocation once its run time has passed; when every ask of an application
has been released it removes the application, as a shim does when the job is gone. It
implements the required RM callback and deliberately *not* ``predicates``: an RM without it
lets every node pass, and a predicates hook would cost a Python call per node tried.

Time is simulated. The RM keeps a heap of timed events (application arrivals and allocation
releases) on the simulation's clock, which is also the core's clock (ask ages, the
reservation delay and application timers all follow it). The core is assembled by its own
entry point (:class:`~pyscheduler.service.SchedulerService`) on that clock, with no background
thread (no history, health checks, reporter rounds or event publisher: a run reads none of
them). Two ways to run:

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

Where the parts live (each module imports only those listed before it, and none imports this
one):

- :mod:`~pyscheduler.sim.record`: the run modes, the progress callback and
  :class:`SimulationRecord` (the raw figures);
- :mod:`~pyscheduler.sim.timeline`: :class:`ScaledClock`, :data:`START_NS` and the event heap
  with its event kinds;
- :mod:`~pyscheduler.sim.rm_messages`: the SI messages built from the plans (nodes,
  applications, asks, releases), :data:`RM_ID` and :data:`USER`;
- :mod:`~pyscheduler.sim.usage`: utilisation, integrated over simulated time;
- :mod:`~pyscheduler.sim.gang_jobs`: the RM's side of gang jobs (placeholders, job states);
- this module: :class:`SimulatedRM`, the callback, the asks' lives (submission, allocation,
  release, preemption and rerun, application removal) and the two run loops. Every public name
  of the modules above that this one had is importable from here too.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Final

from pyscheduler.common import native as native_switch
from pyscheduler.common.clock import ManualClock
from pyscheduler.si.events import EventRecord
from pyscheduler.si import messages as si
from pyscheduler.service import CoreOptions, SchedulerService
from pyscheduler.sim.gang_jobs import GangJobs
from pyscheduler.sim.record import MODES, ProgressFunc, SimMode, SimulationRecord
from pyscheduler.sim.rm_messages import (
    RM_ID,
    USER,
    ask_message,
    new_application_message,
    node_messages,
    release_message,
)
from pyscheduler.sim.timeline import (
    CONFIRM,
    MEMBERS,
    PREEMPTED,
    RELEASE,
    START_NS,
    SUBMIT,
    WAKE,
    WAKE_INTERVAL,
    WAKE_MARGIN,
    Event,
    EventHeap,
    ScaledClock,
)
from pyscheduler.sim.usage import ClusterUsage
from pyscheduler.sim.workload import AppPlan, AskPlan, Workload

__all__ = ["DEFAULT_SPEED", "DEFAULT_TIMEOUT", "MODES", "RM_ID", "START_NS", "USER", "ProgressFunc", "ScaledClock",
           "SimMode", "SimulatedRM", "SimulationRecord"]

#: Threaded mode: simulated seconds per real second.
DEFAULT_SPEED: Final = 100.0
#: Real seconds after which a run is abandoned.
DEFAULT_TIMEOUT: Final = 600.0


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
        native_node_ordering: bool | None = None,
        speed: float = DEFAULT_SPEED,
        progress: ProgressFunc | None = None,
        role_history: bool = True,
        preemption: bool = True,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if policy not in ("fair", "binpacking"):
            raise ValueError(f"policy must be fair or binpacking, got {policy!r}")
        if native_node_ordering is None:
            native_node_ordering = native_switch.enabled()
        self.workload = workload
        self.spec = workload.spec
        self.policy = policy
        self.mode: SimMode = mode
        self.clock: ManualClock | ScaledClock = ManualClock(START_NS) if mode == "lockstep" else ScaledClock(speed)
        # The core's own entry point, with no thread but the scheduling loop's (threaded mode
        # only: lockstep runs each cycle itself) and nothing a run does not read.
        self.service = SchedulerService(CoreOptions(
            clock=self.clock, native_node_ordering=native_node_ordering, scheduling_loop=mode == "threaded",
            background=False, history=False,
        ))
        self.context = self.service.context
        self.proxy = self.service.proxy
        self.scheduler = self.service.scheduler
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
        # What happens next, in simulated time (pyscheduler.sim.timeline).
        self._events = EventHeap()
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
        # Utilisation, integrated at every change (pyscheduler.sim.usage).
        self._usage = ClusterUsage(self.record)
        self._first_submit: float | None = None
        # Gang jobs, the workload's ``gangs`` (pyscheduler.sim.gang_jobs).
        self._gangs = GangJobs(workload.apps, self.record, self._events, self._usage)

    # -- the RM callback (called by the core, possibly from the scheduling thread) ------------

    def update_allocation(self, response: si.AllocationResponse) -> None:
        """New allocations start running (their release is scheduled); releases are confirmed;
        rejected asks are finished."""
        with self._cond:
            now = self.clock.monotonic()
            record = self.record
            for alloc in response.new:
                key = alloc.allocation_key
                if self._gangs.is_placeholder(key):
                    self._gangs.placed(now, key, alloc.node_id)
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
                self._usage.change(now, alloc.node_id, memory, vcore)
                self._change_late_usage(now, key, 1)
                self._gangs.member_started(now, app_id)
                self._events.push(now + run_time, RELEASE, (app_id, key))
            for release in response.released:
                key = release.allocation_key
                if self._gangs.is_placeholder(key):
                    self._gangs.released(now, key, int(release.termination_type))
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
        gangs = self._gangs
        if response.updated and gangs.plans:
            with self._cond:
                for updated in response.updated:
                    app_id = updated.application_id
                    if app_id in gangs.plans:
                        for _ in range(gangs.state_changed(self.clock.monotonic(), app_id, updated.state)):
                            self._ask_finished(app_id)  # a failed job's asks end
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

    def _ask_finished(self, app_id: str) -> None:
        self._finished += 1
        self._remaining[app_id] -= 1
        if self._remaining[app_id] == 0 and app_id not in self._rejected_apps and app_id not in self._gangs.failed:
            self._to_remove.append(app_id)

    def _stop_running(self, now: float, key: str) -> None:
        node_id, _ = self._running.pop(key)
        _, memory, vcore, _ = self._asks[key]
        self._usage.change(now, node_id, -memory, -vcore)
        self._change_late_usage(now, key, -1)
        self._usage.released(now)

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
        self._events.push(now, PREEMPTED, (app_id, key))

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
        if self._late_asks_waiting() and self._events.has_work():
            self._events.push(now + WAKE_INTERVAL, WAKE, None)

    def _done(self) -> bool:
        return self._finished == self.record.total_asks and not self._events and not self._to_remove

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
        nodes = node_messages(spec.node_count, spec.node_memory, spec.node_vcore)
        self.proxy.update_node(si.NodeRequest(nodes=nodes, rm_id=RM_ID))
        with self._cond:
            for app in self.workload.apps:
                if not app.after:
                    self._events.push(app.arrival, SUBMIT, app)

    def _apply(self, due: list[Event]) -> None:
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
                if kind == WAKE:
                    wake = True
                    self._wake_again(now)
                elif kind == CONFIRM and isinstance(payload, tuple) and len(payload) == 3:
                    app_id, key, termination = payload
                    releases.append(release_message(app_id, key, si.TerminationType(termination),
                                                    "simulated placeholder gone"))
                elif kind == MEMBERS and isinstance(payload, tuple):
                    members.append(self._gangs.plans[payload[0]])
                elif isinstance(payload, AppPlan):  # SUBMIT
                    arrivals.append(payload)
                elif isinstance(payload, tuple) and len(payload) == 2 and kind == PREEMPTED:
                    app_id, key = payload
                    releases.append(release_message(app_id, key, si.TerminationType.PREEMPTED_BY_SCHEDULER,
                                                    "simulated task killed: preempted by the scheduler"))
                    reruns.append((key, self._rerun_key(key)))
                elif isinstance(payload, tuple) and len(payload) == 2:  # RELEASE
                    app_id, key = payload
                    if key not in self._running:
                        continue  # the core ended it already
                    self._stop_running(now, key)
                    self._releasing.add(key)
                    releases.append(release_message(app_id, key, si.TerminationType.STOPPED_BY_RM,
                                                    "simulated run time over"))
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
                asks.append(ask_message(app, ask, rerun))
        self.proxy.update_allocation(si.AllocationRequest(allocations=tuple(asks), rm_id=RM_ID))

    def _submit_members(self, jobs: list[AppPlan]) -> None:
        """A gang job's members, once it runs (or resumed), as the Kubernetes shim submits them."""
        asks: list[si.Allocation] = []
        with self._cond:
            now = self.clock.monotonic()
            for app in jobs:
                for ask in app.asks:
                    self._submitted_at[ask.key] = now
                    asks.append(ask_message(app, ask, ask.key))
        self.proxy.update_allocation(si.AllocationRequest(allocations=tuple(asks), rm_id=RM_ID))

    def _remove_completed(self) -> None:
        with self._cond:
            done, self._to_remove = self._to_remove, []
            self.record.apps_completed += len(done)
            now = self.clock.monotonic()
            for app_id in done:
                follower = self._followers.get(app_id)
                if follower is not None:  # the service's next incarnation, after its down time
                    self._events.push(now + follower.arrival, SUBMIT, follower)
        if done:
            removals = tuple(si.RemoveApplicationRequest(application_id=a, partition_name="default") for a in done)
            self.proxy.update_application(si.ApplicationRequest(remove=removals, rm_id=RM_ID))

    def _submit(self, apps: list[AppPlan]) -> None:
        role_history = self.record.role_history
        new = tuple(new_application_message(app, role_history=role_history) for app in apps)
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
                    asks.extend(self._gangs.arrived(now, app))
                    continue
                for ask in app.asks:
                    # Recorded before the request: in threaded mode the allocation can arrive
                    # before update_allocation even returns.
                    self._submitted_at[ask.key] = now
                    asks.append(ask_message(app, ask, ask.key))
        if asks:
            self.proxy.update_allocation(si.AllocationRequest(allocations=tuple(asks), rm_id=RM_ID))

    def _late_tenant_arrived(self, now: float) -> None:
        """Notes the late tenant's arrival; with preemption on, wakes the core when its asks'
        preemption delay has passed (callers hold self._cond)."""
        if self.record.late_tenant_start is None:
            self.record.late_tenant_start = now
        if self.record.preemption:
            self._events.push(now + self.spec.late_tenant.preemption_delay + WAKE_MARGIN, WAKE, None)

    def _report_progress(self) -> None:
        if self._progress is not None:
            self._progress(self._finished, self.record.total_asks, self.clock.monotonic())

    # -- running ------------------------------------------------------------------------------

    def run(self, timeout: float = DEFAULT_TIMEOUT) -> SimulationRecord:
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
            self.service.stop()
            self.record.wall_seconds = time.perf_counter() - started
            self.record.cycles = self.scheduler.cycles
        self._finish_record()
        return self.record

    def _run_lockstep(self, deadline: float) -> None:
        # Everything runs on this thread (the callbacks too, inside schedule_once and the proxy
        # calls), so the heap is only read here between calls; the lock is taken where the
        # bookkeeping helpers expect it, which costs little next to a cycle.
        clock = self.clock
        assert isinstance(clock, ManualClock)
        self.service.start()  # no thread: the cycles run below
        cycle_time = self.spec.cycle_time
        schedule_once = self.scheduler.schedule_once
        iterations = 0
        while True:
            with self._cond:
                due = self._events.take_due(clock.monotonic())
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
            if not self._events:
                self.record.problems.append(
                    f"stuck: {self.record.total_asks - self._finished} asks can never be placed "
                    "(the scheduler is idle and nothing is running)"
                )
                return
            wait = self._events.next_time() - clock.monotonic()
            if wait > 0:
                clock.advance(wait)

    def _run_threaded(self, deadline: float) -> None:
        clock = self.clock
        assert isinstance(clock, ScaledClock)
        self.service.start()  # the scheduling thread
        next_progress = 0.0
        while True:
            with self._cond:
                while True:
                    if self._done():
                        return
                    now = clock.monotonic()
                    events = self._events
                    if self._to_remove or (events and events.next_time() <= now):
                        due = events.take_due(now)
                        break
                    left = deadline - time.monotonic()
                    if left <= 0:
                        self.record.problems.append("timed out (wall clock) before every ask finished")
                        return
                    # Sleep until the next event is due; a new allocation (which pushes a
                    # release, maybe an earlier one) notifies and wakes us up sooner.
                    wait = clock.real_seconds(events.next_time() - now) if events else 0.1
                    self._cond.wait(min(wait, left, 0.1))
            self._apply(due)
            if time.monotonic() >= next_progress:
                next_progress = time.monotonic() + 0.05
                self._report_progress()

    def _finish_record(self) -> None:
        record = self.record
        with self._cond:
            # Integrate up to the end so the areas cover the whole run.
            end = max(self._usage.last_release, self._usage.last_change)
            self._usage.integrate_to(end)
            start = self._first_submit or 0.0
            record.sim_seconds = max(end - start, 0.0)
            record.completed = self._finished == record.total_asks
            if self._submitted_at:
                record.problems.append(f"{len(self._submitted_at)} asks were never allocated")
            if self._running:
                record.problems.append(f"{len(self._running)} allocations were still running at the end")
        self._report_progress()
