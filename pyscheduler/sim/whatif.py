"""What if this application were submitted now? A copy of the partition played forward.

:func:`what_if` answers ``POST /ws/v1/partition/{p}/whatif`` (docs/whatif.md): the request
(:mod:`~pyscheduler.sim.whatif_request`) names an application and its asks; a copy of the live
partition (:mod:`~pyscheduler.sim.whatif_copy`) is replayed into a fresh core with its own
clock, the application and its asks are submitted to it through the RM interface, and its
scheduler runs in lockstep:

1. now (virtual time 0): cycles until one places nothing. Asks placed here are **placed now**.
2. then the clock jumps from moment to moment up to ``maxSeconds``, where something may
   change: the ``ends`` the request gives (the RM releases those allocations, or all of an
   application's, then), and each pending ask's moments (its age reaching the reservation
   delay; with preemption on, its queue's ``preemption.delay`` and the guaranteed-share
   policy's 15-s retry), and, after a cycle that made or dropped a reservation (which ends a
   cycle's walk early), the live loop's next cycle one idle interval later; all rounded up to
   the live loop's pace (its 100-ms idle interval); cycles until idle at each. Nothing else ends: **the running work's ends are unknown** unless
   given.

The what-if RM acts as a shim would: it confirms every release the core starts (preemption
victims are killed at once, replaced placeholders go), and it records the core's answers: new
allocations, releases naming their preemptor, rejections and the asks' scheduling states
(the typed codes of :class:`~pyscheduler.si.messages.SchedulingReason`).

The answer: whether every ask is placed now, where, which allocations preemption removes for
it (and when), and for each ask still waiting, why (its scheduling state's code and reason, the
copy's allocation log for it, a rejection). It also says what the copy could not know: the live
RM's predicates are not evaluated (a Kubernetes node filter cannot run outside its shim), and
whether ends were given.

**Bounds.** The request is bounded when parsed. The live partition's lock is held only while it
is copied into plain data; everything after runs on the copy, never on the live core (the new
core holds no live object; the copy reads fields of live allocations that never change after
their creation, see :mod:`~pyscheduler.sim.whatif_copy`). The wall-clock budget (``budgetSeconds``, capped by
:attr:`WhatIfLimits.max_budget_seconds`) is checked while the copy is replayed and between
cycles, and the number of cycles is capped: a run cut short says so (``complete: false``,
``truncated``) with what it found so far.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pyscheduler.dao._common import find_partition
from pyscheduler.objects.partition import Partition
from pyscheduler.scheduler.context import ClusterContext
from pyscheduler.scheduler.cycle import DEFAULT_RESERVATION_DELAY
from pyscheduler.scheduler.loop import IDLE_INTERVAL, Scheduler
from pyscheduler.si import messages as si
from pyscheduler.si.events import EventRecord
from pyscheduler.sim.whatif_copy import WHATIF_RM, BudgetExceeded, PartitionCopy, Replayed, copy_partition, replay
from pyscheduler.sim.whatif_request import AskSpec, WhatIfRequest, parse_request

__all__ = ["WhatIfLimits", "WhatIfRM", "what_if", "what_if_request"]

#: The guaranteed-share policy checks an ask at most once per this many seconds.
_PREEMPTION_RETRY: Final = 15.0
#: Moments the clock stops at, at most (each costs at least one cycle).
_MAX_CHECKPOINTS: Final = 2_000
#: Termination types the core starts and the RM confirms (the shim's part).
_CONFIRMED: Final = frozenset({si.TerminationType.PREEMPTED_BY_SCHEDULER, si.TerminationType.PLACEHOLDER_REPLACED,
                               si.TerminationType.TIMEOUT})


@dataclass(frozen=True)
class WhatIfLimits:
    """The service's bounds: the budget a request gets by default and at most (wall seconds),
    and the cycles one run may take in all."""

    budget_seconds: float = 3.0
    max_budget_seconds: float = 10.0
    max_cycles: int = 200_000


@dataclass
class _Placed:
    node_id: str
    at: float


@dataclass
class _Victim:
    application_id: str
    allocation_key: str
    node_id: str
    preemptor_application_id: str
    preemptor_allocation_key: str
    at: float


class WhatIfRM:
    """The copy's resource manager: records what the core tells it and queues the
    confirmations a shim would send. Called on the thread that runs the copy only."""

    def __init__(self) -> None:
        self.now = 0.0  # virtual seconds since the copy's now, set by the runner
        self.placed: dict[str, _Placed] = {}
        self.released: list[_Victim] = []
        self.rejected_asks: dict[str, str] = {}
        self.rejected_apps: dict[str, str] = {}
        self.states: dict[str, si.UpdateContainerSchedulingStateRequest] = {}
        self.app_states: dict[str, str] = {}
        self.to_confirm: list[si.AllocationRelease] = []
        #: Allocation key -> node, of the allocations placed or recovered (victims' nodes).
        self.nodes: dict[str, str] = {}

    def forget(self) -> None:
        """Drops what the replay caused: only what follows the what-if submission counts."""
        self.placed.clear()
        self.released.clear()
        self.rejected_asks.clear()
        self.rejected_apps.clear()
        self.states.clear()
        self.app_states.clear()

    # -- the RM callback --------------------------------------------------------------------------

    def update_allocation(self, response: si.AllocationResponse) -> None:
        for alloc in response.new:
            self.placed[alloc.allocation_key] = _Placed(alloc.node_id, self.now)
            self.nodes[alloc.allocation_key] = alloc.node_id
        for release in response.released:
            termination = si.TerminationType(release.termination_type)
            if termination is si.TerminationType.PREEMPTED_BY_SCHEDULER:
                self.released.append(_Victim(
                    release.application_id, release.allocation_key, self.nodes.get(release.allocation_key, ""),
                    release.preemptor_application_id, release.preemptor_allocation_key, self.now))
            if termination in _CONFIRMED:
                self.to_confirm.append(si.AllocationRelease(
                    partition_name=release.partition_name, application_id=release.application_id,
                    allocation_key=release.allocation_key, termination_type=termination,
                    message="what-if: the RM confirms"))
        for rejected in response.rejected_allocations:
            self.rejected_asks[rejected.allocation_key] = rejected.reason

    def update_application(self, response: si.ApplicationResponse) -> None:
        for rejected in response.rejected:
            self.rejected_apps[rejected.application_id] = rejected.reason
        for updated in response.updated:
            self.app_states[updated.application_id] = updated.state

    def update_node(self, response: si.NodeResponse) -> None:
        """Nodes are added to the copy directly: nothing to record."""

    def send_event(self, events: Sequence[EventRecord]) -> None:
        """Request events say what the scheduling states recorded below say."""

    def update_container_scheduling_state(self, request: si.UpdateContainerSchedulingStateRequest) -> None:
        self.states[request.allocation_key] = request


class _Run:
    """One what-if run on one copy (see the module doc for the steps)."""

    def __init__(self, request: WhatIfRequest, copy: PartitionCopy, limits: WhatIfLimits, started: float) -> None:
        self.request = request
        self.copy = copy
        self.limits = limits
        budget = request.budget_seconds if request.budget_seconds is not None else limits.budget_seconds
        self.budget = min(budget, limits.max_budget_seconds)
        self.deadline = started + self.budget
        self.started = started
        self.rm = WhatIfRM()
        self.rm.nodes.update((a.allocation_key, a.node_id) for a in copy.allocations)
        self.cycles = 0
        self.truncated = ""
        # A name no live application has (a name it has would make the asks join that one).
        self.app_id = request.application.application_id or f"whatif-{uuid.uuid4().hex[:16]}"
        self.keys = [ask.allocation_key for ask in request.asks]
        self.unknown_ends: list[str] = []
        #: The application is one the partition has already: only its asks are new.
        self.existing = False

    def check_budget(self) -> None:
        if time.perf_counter() > self.deadline:
            raise BudgetExceeded()

    def run(self) -> dict[str, Any]:
        try:
            replayed = replay(self.copy, self.rm, self.check_budget)
        except BudgetExceeded:
            self.truncated = f"the budget of {self.budget:g} s ran out while the partition's copy was built"
            return self._answer(None)
        try:
            self.rm.forget()
            self._submit(replayed)
            if not self.rm.rejected_apps.get(self.app_id):
                self._play(replayed)
            return self._answer(replayed)
        finally:
            replayed.context.stop()

    # -- submission and play ----------------------------------------------------------------------

    def _submit(self, replayed: Replayed) -> None:
        app = self.request.application
        name = self.copy.config.name
        with replayed.partition.lock:
            self.existing = self.app_id in replayed.partition.applications
        if self.existing:
            # An application the partition runs already: its new asks join it, as an RM sends them.
            replayed.proxy.update_allocation(si.AllocationRequest(
                allocations=tuple(ask.message(self.app_id, name) for ask in self.request.asks), rm_id=WHATIF_RM))
            return
        replayed.proxy.update_application(si.ApplicationRequest(new=(si.AddApplicationRequest(
            application_id=self.app_id, queue_name=app.queue_name, partition_name=name,
            ugi=si.UserGroupInformation(user=app.user, groups=app.groups), tags=app.tags,
            placeholder_ask=app.placeholder_ask, gang_scheduling_style=app.gang_style,
            execution_timeout_milli_seconds=app.execution_timeout_ms),), rm_id=WHATIF_RM))
        if self.app_id in self.rm.rejected_apps:
            return
        asks = tuple(ask.message(self.app_id, name) for ask in self.request.asks)
        replayed.proxy.update_allocation(si.AllocationRequest(allocations=asks, rm_id=WHATIF_RM))

    def _play(self, replayed: Replayed) -> None:
        scheduler = Scheduler(replayed.context)
        clock = replayed.clock
        ends = self._ends(replayed.partition)
        try:
            again = self._cycles(scheduler, replayed)
            times = self._checkpoints(replayed.partition, ends)
            while not self._all_placed():
                if again:  # the live loop's next cycle, one idle interval later
                    times.append(_paced(self.rm.now + IDLE_INTERVAL))
                later = [t for t in times if t > self.rm.now and t <= self.request.max_seconds]
                if not later:
                    break
                at = min(later)
                clock.advance(at - self.rm.now)
                self.rm.now = at
                due = [release for when in [t for t in ends if t <= at] for release in ends.pop(when)]
                if due:
                    replayed.proxy.update_allocation(si.AllocationRequest(
                        releases=si.AllocationReleasesRequest(tuple(due)), rm_id=WHATIF_RM))
                again = self._cycles(scheduler, replayed)
        except BudgetExceeded:
            self.truncated = self.truncated or (f"the budget of {self.budget:g} s ran out after {self.cycles} cycles, "
                                                f"at virtual second {self.rm.now:g}")

    def _cycles(self, scheduler: Scheduler, replayed: Replayed) -> bool:
        """Cycles until one places nothing and leaves no confirmation to send, as the live loop
        runs them back to back. True when that last cycle made or dropped a reservation (which
        ends a cycle's walk early): the live loop's next cycle, one idle interval later, may
        then place what this one did not reach."""
        partition = replayed.partition
        while True:
            self.check_budget()
            if self.cycles >= self.limits.max_cycles:
                self.truncated = f"stopped after {self.cycles} cycles (the service's limit)"
                raise BudgetExceeded()
            before = _reservations(partition)
            decisions = scheduler.schedule_once()
            self.cycles += 1
            confirmations, self.rm.to_confirm = self.rm.to_confirm, []
            if confirmations:
                replayed.proxy.update_allocation(si.AllocationRequest(
                    releases=si.AllocationReleasesRequest(tuple(confirmations)), rm_id=WHATIF_RM))
            if not decisions and not confirmations:
                return _reservations(partition) != before

    def _all_placed(self) -> bool:
        return all(key in self.rm.placed for key in self.keys)

    def _ends(self, partition: Partition) -> dict[float, list[si.AllocationRelease]]:
        """The releases the request's ``ends`` call for, by virtual time."""
        out: dict[float, list[si.AllocationRelease]] = {}
        name = self.copy.config.name
        with partition.lock:
            owner = {key: app.app_id for app in partition.applications.values() for key in app.allocations}
            apps = set(partition.applications)
        for key, at in self.request.ends.items():
            if key in owner:
                release = si.AllocationRelease(partition_name=name, application_id=owner[key], allocation_key=key,
                                               termination_type=si.TerminationType.STOPPED_BY_RM,
                                               message="what-if: ends as the request says")
            elif key in apps:
                release = si.AllocationRelease(partition_name=name, application_id=key,
                                               termination_type=si.TerminationType.STOPPED_BY_RM,
                                               message="what-if: ends as the request says")
            else:
                self.unknown_ends.append(key)
                continue
            out.setdefault(max(at, 1e-9), []).append(release)
        return out

    def _checkpoints(self, partition: Partition, ends: Mapping[float, list[si.AllocationRelease]]) -> list[float]:
        """When something may change, in virtual seconds from now: the ends, and each pending
        ask's moments (its age reaching the reservation delay; with preemption, its queue's
        preemption delay and the 15-s retry after it or after its last check). Rounded up to the
        live loop's pace (its idle interval), at most :data:`_MAX_CHECKPOINTS` of them."""
        times = set(ends)
        now_ns = partition.clock.now_ns()
        with partition.lock:
            preemption = partition.preemption_enabled
            for app in partition.applications.values():
                delay_ns = app.queue.preemption_delay_ns if app.queue is not None else 0
                for ask in app.asks.values():
                    times.add((ask.create_time_ns - now_ns) / 1e9 + DEFAULT_RESERVATION_DELAY)
                    if not preemption or not ask.allow_preempt_other or ask.triggered_preemption:
                        continue
                    eligible = (ask.create_time_ns + delay_ns - now_ns) / 1e9
                    times.update((eligible, eligible + _PREEMPTION_RETRY))
                    if ask.preempt_check_time_ns:
                        times.add((ask.preempt_check_time_ns - now_ns) / 1e9 + _PREEMPTION_RETRY)
        paced = sorted({_paced(t) for t in times if 0 < t <= self.request.max_seconds})
        return paced[:_MAX_CHECKPOINTS]

    # -- the answer -------------------------------------------------------------------------------

    def _answer(self, replayed: Replayed | None) -> dict[str, Any]:
        rm = self.rm
        asks = [self._ask_answer(ask, replayed) for ask in self.request.asks]
        placed_now = replayed is not None and all(a["placed"] and a["atSeconds"] == 0 for a in asks)
        placed = replayed is not None and all(a["placed"] for a in asks)
        mine = set(self.keys)
        victims = [_victim_json(v) for v in rm.released
                   if v.preemptor_application_id == self.app_id and v.preemptor_allocation_key in mine]
        others = len(rm.released) - len(victims)
        answer: dict[str, Any] = {
            "partition": self.copy.name,
            "applicationID": self.app_id,
            "existingApplication": self.existing,
            "complete": not self.truncated,
            "placedNow": placed_now,
            "placed": placed,
            "placedAsks": sum(1 for a in asks if a["placed"]),
            "totalAsks": len(asks),
            "asks": asks,
            "preemption": {"victims": victims, "otherVictims": others},
            "application": self._app_answer(replayed),
            "assumptions": self._assumptions(),
            "horizonSeconds": self.request.max_seconds,
            "virtualSeconds": rm.now,
            "cycles": self.cycles,
            "budgetSeconds": self.budget,
            "elapsedSeconds": round(time.perf_counter() - self.started, 6),
            "lockSeconds": round(self.copy.lock_seconds, 6),
        }
        if self.truncated:
            answer["truncated"] = self.truncated
        problems = replayed.problems if replayed is not None else []
        if problems:
            answer["copyProblems"] = problems[:20] + ([f"... and {len(problems) - 20} more"] if len(problems) > 20
                                                      else [])
        if self.unknown_ends:
            answer["unknownEnds"] = self.unknown_ends[:20]
        return answer

    def _ask_answer(self, ask: AskSpec, replayed: Replayed | None) -> dict[str, Any]:
        key = ask.allocation_key
        placed = self.rm.placed.get(key)
        out: dict[str, Any] = {"allocationKey": key, "placed": placed is not None}
        if placed is not None:
            out["nodeID"] = placed.node_id
            out["atSeconds"] = placed.at
            preempted = [v.allocation_key for v in self.rm.released if v.preemptor_allocation_key == key]
            if preempted:
                out["preempted"] = preempted
            return out
        out["atSeconds"] = None
        why: dict[str, Any] = {}
        rejected = self.rm.rejected_asks.get(key) or self.rm.rejected_apps.get(self.app_id)
        if rejected:
            why["rejected"] = rejected
        state = self.rm.states.get(key)
        if state is not None:
            why["state"] = si.ContainerSchedulingState(state.state).name
            why["code"] = si.SchedulingReason(state.code).name
            why["reason"] = state.reason
        if replayed is not None:
            with replayed.partition.lock:
                app = replayed.partition.applications.get(self.app_id)
                pending = app.asks.get(key) if app is not None else None
                log = dict(pending.alloc_log) if pending is not None else {}
                reservation = replayed.partition.reservations.by_key.get(key)
            if log:
                why["allocationLog"] = log
            if reservation is not None:
                why["reservedNode"] = reservation.node_id
                why.setdefault("reason", f"holds a reservation on node {reservation.node_id}: waits for room there")
        if not why and self.truncated:
            why["reason"] = "not decided: the run was cut short (see truncated)"
        elif not why:
            why["reason"] = ("not reached: the scheduling walk did not get to this ask within the horizon (other "
                             "applications or asks first, or the application may not run yet)")
        out["why"] = why
        return out

    def _app_answer(self, replayed: Replayed | None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        rejected = self.rm.rejected_apps.get(self.app_id)
        if rejected:
            out["rejected"] = rejected
        if replayed is None:
            return out
        with replayed.partition.lock:
            app = replayed.partition.applications.get(self.app_id)
            if app is not None:
                out.update({"queue": app.queue.path if app.queue is not None else "", "state": app.state.value,
                            "runnableInQueue": app.runnable_in_queue, "runnableByQuota": app.runnable_by_quota})
        return out

    def _assumptions(self) -> dict[str, str]:
        ends = self.request.ends
        return {
            "ends": (f"given for {len(ends)} allocations or applications; nothing else ends" if ends else
                     "unknown: no running allocation ends within the horizon (give 'ends' to play them out)"),
            "predicates": ("not evaluated: the live RM's node filter (Kubernetes taints, affinity, volumes, ...) "
                           "cannot run on the copy; every node whose free resources fit passes"
                           if self.copy.predicates else "none: the RM has no node filter"),
            "roleHistory": "not copied: role-tagged asks are placed as if their roles had no history",
        }


def _paced(seconds: float) -> float:
    """``seconds`` rounded up to the live loop's pace (its idle interval)."""
    return round(math.ceil(seconds / IDLE_INTERVAL - 1e-6) * IDLE_INTERVAL, 6)


def _reservations(partition: Partition) -> frozenset[tuple[str, str]]:
    """The partition's reservations, (ask, node), to tell whether a cycle changed them."""
    with partition.lock:
        return frozenset((key, r.node_id) for key, r in partition.reservations.by_key.items())


def _victim_json(victim: _Victim) -> dict[str, Any]:
    return {"applicationID": victim.application_id, "allocationKey": victim.allocation_key, "nodeID": victim.node_id,
            "preemptorAllocationKey": victim.preemptor_allocation_key, "atSeconds": victim.at}


def what_if_request(ctx: ClusterContext, partition_name: str, request: WhatIfRequest,
                    limits: WhatIfLimits = WhatIfLimits()) -> dict[str, Any]:
    """The answer for a parsed request on the live partition ``partition_name`` (its REST name:
    plain or ``[clusterId]name``). Raises NotFound / BadRequest (pyscheduler.dao.errors)."""
    started = time.perf_counter()
    live = find_partition(ctx, partition_name)
    copy = copy_partition(ctx, live)
    return _Run(request, copy, limits, started).run()


def what_if(ctx: ClusterContext, partition_name: str, body: Any, limits: WhatIfLimits = WhatIfLimits()) -> dict[str, Any]:
    """The answer for a request body (decoded JSON): :func:`what_if_request` after
    :func:`~pyscheduler.sim.whatif_request.parse_request`."""
    return what_if_request(ctx, partition_name, parse_request(body), limits)

