"""The simulated RM's side of gang jobs: their placeholders, their states and their figures.

:class:`GangJobs` follows the workload's gang jobs (its ``gangs`` section) as the Kubernetes
shim does: a job's placeholders are submitted when it arrives (one per member, under
``<member key>-placeholder``); a placed placeholder holds its node's room; a placeholder the
core releases (replaced, timed out, too small) is deleted at once and its release confirmed
(a :data:`~pyscheduler.sim.timeline.CONFIRM` event); a job that runs (every placeholder
placed) or resumed (Soft timeout) gets its members (a :data:`~pyscheduler.sim.timeline.MEMBERS`
event); a failed one (Hard timeout) ends and its members never run. It writes the gang figures
of the run's :class:`~pyscheduler.sim.record.SimulationRecord` and the placeholders' share of
utilisation (:class:`~pyscheduler.sim.usage.ClusterUsage`).

Not thread-safe: :class:`~pyscheduler.sim.rm.SimulatedRM` calls it under its condition and
does the sending itself (never under that condition).
"""

from __future__ import annotations

from collections.abc import Iterable

from pyscheduler.si import messages as si
from pyscheduler.sim.record import SimulationRecord
from pyscheduler.sim.rm_messages import ask_message
from pyscheduler.sim.timeline import CONFIRM, MEMBERS, WAKE, WAKE_MARGIN, EventHeap
from pyscheduler.sim.usage import ClusterUsage
from pyscheduler.sim.workload_types import AppPlan

__all__ = ["GangJobs"]


class GangJobs:
    """The gang jobs among ``apps``: their plans, each placeholder's (job, memory, vcore) and,
    while placed, (node, since); the jobs' last states, arrivals, members running, and the jobs
    whose members were submitted or that failed."""

    def __init__(self, apps: Iterable[AppPlan], record: SimulationRecord, events: EventHeap,
                 usage: ClusterUsage) -> None:
        #: Job id -> its plan (its asks are its members).
        self.plans: dict[str, AppPlan] = {app.app_id: app for app in apps if app.task_group}
        #: Jobs that failed (Hard timeout): the RM does not remove them.
        self.failed: set[str] = set()
        self._record = record
        self._events = events
        self._usage = usage
        record.gang_jobs = len(self.plans)
        self._placeholders: dict[str, tuple[str, int, int]] = {}
        self._placed: dict[str, tuple[str, float]] = {}
        self._states: dict[str, str] = {}
        self._arrival: dict[str, float] = {}
        self._members_running: dict[str, int] = {}
        self._members_submitted: set[str] = set()

    def is_placeholder(self, key: str) -> bool:
        return key in self._placeholders

    def arrived(self, now: float, app: AppPlan) -> list[si.Allocation]:
        """A job was submitted: the asks of its placeholders, to send now (its members follow
        once it runs)."""
        self._arrival[app.app_id] = now
        asks: list[si.Allocation] = []
        for ask in app.asks:
            key = f"{ask.key}-placeholder"
            self._placeholders[key] = (app.app_id, ask.memory, ask.vcore)
            asks.append(ask_message(app, ask, key, placeholder=True))
        return asks

    def placed(self, now: float, key: str, node_id: str) -> None:
        """A placeholder pod runs: it holds its node's room. The job's first one starts the
        core's placeholder timer: wake the core when it may fire (lockstep must not jump past)."""
        if key in self._placed:
            self._record.unexpected_allocations += 1
            return
        app_id, memory, vcore = self._placeholders[key]
        if not any(self._placeholders[k][0] == app_id for k in self._placed):
            self._events.push(now + self.plans[app_id].gang_timeout + WAKE_MARGIN, WAKE, None)
        self._record.placeholders_allocated += 1
        self._placed[key] = (node_id, now)
        self._usage.change(now, node_id, memory, vcore)

    def released(self, now: float, key: str, termination: int) -> None:
        """The core released a placeholder (replaced, timed out, too small): its pod is deleted
        now and the release confirmed. One never placed (a pending one at a timeout) is gone
        from the core already."""
        placed = self._placed.pop(key, None)
        if placed is None:
            return
        node_id, since = placed
        app_id, memory, vcore = self._placeholders[key]
        self._record.placeholder_memory_seconds += memory * (now - since)
        self._record.placeholder_vcore_seconds += vcore * (now - since)
        self._usage.change(now, node_id, -memory, -vcore)
        self._usage.released(now)
        self._events.push(now, CONFIRM, (app_id, key, termination))

    def member_started(self, now: float, app_id: str) -> None:
        """An allocation of ``app_id`` started: when it is a job's last member, the job runs whole."""
        plan = self.plans.get(app_id)
        if plan is None:
            return
        running = self._members_running[app_id] = self._members_running.get(app_id, 0) + 1
        if running == len(plan.asks):
            self._record.gang_all_running.append(now - self._arrival[app_id])

    def state_changed(self, now: float, app_id: str, state: str) -> int:
        """Follows a job's state as a shim does: Running (every placeholder placed) or Accepted
        again after Resuming (Soft timeout): its members are submitted; Failed (Hard timeout):
        its members never run. Returns how many of its asks that ends (the failed job's)."""
        previous = self._states.get(app_id)
        self._states[app_id] = state
        if state == "Running" and app_id not in self._members_submitted:
            self._record.gang_started_whole += 1
            self._members_submitted.add(app_id)
            self._events.push(now, MEMBERS, (app_id, ""))
        elif state == "Resuming":
            self._record.gang_resumed += 1
        elif state == "Accepted" and previous == "Resuming" and app_id not in self._members_submitted:
            self._members_submitted.add(app_id)
            self._events.push(now, MEMBERS, (app_id, ""))
        elif state == "Failed" and app_id not in self.failed:
            self._record.gang_failed += 1
            self.failed.add(app_id)
            return len(self.plans[app_id].asks)
        return 0
