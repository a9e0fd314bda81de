"""Applications: their asks and allocations, their state machine and its timers.

State changes follow :mod:`pyscheduler.objects.application_state`. Each one is logged, emitted
as an APP event and (except entering Rejected) reported to the RM; the RM notifications go to
an outbox that the cluster context sends once the partition's locks are released.

Timers run on the injected clock: the partition's ``tick`` fires the ones that are due, so
tests move a :class:`~pyscheduler.common.clock.ManualClock` instead of sleeping.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Final

from pyscheduler.common.clock import Clock
from pyscheduler.common.resources import NO_RESOURCE, Resource, transferred
from pyscheduler.si.events import EventChangeDetail
from pyscheduler.objects.allocation import Allocation, ask_sort_key
from pyscheduler.objects.application_state import (
    STATE_EVENT_DETAIL,
    AppEvent,
    AppState,
    next_state,
)
from pyscheduler.objects.locking import CHECK_LOCKS, check_held
from pyscheduler.objects.object_events import AppEvents
from pyscheduler.objects.placeholders import (
    RESERVATION_TIMEOUT,
    GangCounts,
    GangStyle,
    PlaceholderData,
    placeholder_timeout_ns,
)
from pyscheduler.objects.topology_slices import Slices
from pyscheduler.objects.tracked_resource import TrackedResource
from pyscheduler.objects.queue import Queue
from pyscheduler.policies.member_cluster_tags import NO_CLUSTER_REQUEST
from pyscheduler.policies.topology_tags import NO_TOPOLOGY_REQUEST

__all__ = ["Application", "AppTimeouts", "StateUpdate", "RUNNING_STATES"]

#: States in which an application counts as running for maxApplications: Running only, as in
#: YuniKorn (an app withdrawn before it ever ran goes Accepted -> Completing without a slot).
RUNNING_STATES = frozenset({AppState.RUNNING})

#: The states an allocation runs an application from (a module constant: on CPython 3.11 an
#: enum member read through its class is slow, see common.enums).
_RUN_ON_ALLOCATION: Final = frozenset({AppState.ACCEPTED, AppState.COMPLETING})


@dataclass(frozen=True)
class AppTimeouts:
    """Application timers, in seconds (YuniKorn's defaults)."""

    completing: float = 30.0
    terminated: float = 3 * 24 * 3600.0


@dataclass(frozen=True)
class StateUpdate:
    """A state change to report to the RM (an SI ``UpdatedApplication``)."""

    application_id: str
    state: str
    state_transition_timestamp: int
    message: str


class Application:
    """One application of a partition (guarded by the partition's lock)."""

    def __init__(
        self,
        app_id: str,
        partition: str,
        queue_name: str,
        user: str,
        groups: Iterable[str],
        tags: Mapping[str, str],
        *,
        clock: Clock,
        events: AppEvents,
        notify: Callable[[StateUpdate], None],
        timeouts: AppTimeouts | None = None,
        placeholder_ask: Resource | None = None,
        execution_timeout_ms: int = 0,
        gang_style: str = "",
    ) -> None:
        self.app_id = app_id
        self.partition = partition
        #: The queue the RM asked for; ``queue`` is where placement put the app.
        self.queue_name = queue_name
        self.queue: Queue | None = None
        self.user = user
        self.groups = tuple(groups)
        self.tags = dict(tags)
        #: What the tags ask of the member cluster (pyscheduler.policies.member_cluster_tags;
        #: the partition parses them when it adds the app) and the cluster the app is placed in,
        #: whole ("": not placed yet; pyscheduler.objects.member_clusters).
        self.cluster_request = NO_CLUSTER_REQUEST
        self.member_cluster = ""
        #: What the tags ask of the partition's topology (pyscheduler.policies.topology_tags) and
        #: the value of the domain of that level the app is placed in ("": not yet;
        #: pyscheduler.objects.topology).
        self.topology_request = NO_TOPOLOGY_REQUEST
        self.topology_domain = ""
        #: Its members' slices when its topology request has slices (set when the partition adds it).
        self.topology_slices: Slices | None = None
        #: The partition's lock, set when the partition adds the application (see
        #: pyscheduler.objects.locking).
        self.graph_lock: threading.RLock | None = None
        self._clock = clock
        self._events = events
        self._notify = notify
        self.timeouts = timeouts or AppTimeouts()
        self.placeholder_ask = placeholder_ask or NO_RESOURCE
        self.execution_timeout_ms = execution_timeout_ms
        self.gang_style = GangStyle.parse(gang_style)
        #: Gang scheduling (pyscheduler.objects.placeholders): the task groups by name, the
        #: placeholders allocated now (part of ``allocated``), and when the placeholder timer
        #: fires (monotonic seconds; set at the first placeholder allocation while Accepted).
        self.placeholder_timeout_ns = placeholder_timeout_ns(execution_timeout_ms, tags, clock.now_ns())
        self.placeholder_data: dict[str, PlaceholderData] = {}
        #: The partition's placeholder counters (set when the partition adds the application).
        self.gang_counts: GangCounts | None = None
        self.allocated_placeholder = NO_RESOURCE
        self._placeholder_deadline: float | None = None
        #: Told whenever the application may have become ready for placeholder replacement or
        #: stopped being ready (the partition keeps the set the cycle looks at).
        self.on_replacement_readiness: Callable[[Application], None] | None = None
        #: Told of every timer this application sets (its monotonic due time): the partition
        #: keeps them in a queue and ticks only the applications whose timer is due.
        self.on_timer: Callable[[Application, float], None] | None = None
        #: The partition's stamp of when this application entered its current table (live,
        #: completed or rejected): due applications are ticked in that order, the tables' own.
        self.table_order = 0
        self.state = AppState.NEW
        self.submission_time_ns = clock.now_ns()
        self.state_log: list[tuple[AppState, int]] = [(AppState.NEW, self.submission_time_ns)]
        self.rejected_message = ""
        self.asks: dict[str, Allocation] = {}
        #: The pending asks in scheduling order, kept sorted as asks come and go (the cycle
        #: walks it for every allocation: re-sorting thousands of asks each time would not do).
        self._ordered: list[tuple[tuple[int, int, str], Allocation]] = []
        self.allocations: dict[str, Allocation] = {}
        # Resources are immutable: every application starts from the one empty resource.
        self.pending = NO_RESOURCE
        self.allocated = NO_RESOURCE
        #: The peak of ``allocated`` per type, as of the last time it went down (the current
        #: value may be higher: see :meth:`max_allocated`). Kept off the allocation path.
        self._peak_before_decrease = NO_RESOURCE
        #: Resource-seconds of ended allocations per instance type (REST ``resourceHistory``).
        self.used_history = TrackedResource()
        self.placeholder_history = TrackedResource()
        self.preempted_history = TrackedResource()
        self._completing_deadline: float | None = None
        self._expire_deadline: float | None = None
        #: The last runnable verdicts (maxApplications of the queue path, user/group limits):
        #: the cycle emits an event each time one changes.
        self.runnable_in_queue = True
        self.runnable_by_quota = True
        #: Set when the app entered Completed or Failed: the partition moves it aside.
        self.terminated_at_s: int | None = None
        events.new(app_id)

    # -- state machine -------------------------------------------------------------------------

    def handle(self, event: AppEvent, message: str = "") -> AppState:
        """Applies ``event``; raises InvalidTransition when the state does not accept it."""
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"application {self.app_id}")
        old = self.state
        new = next_state(self.app_id, old, event)
        if new is old:
            return new
        now_ns = self._clock.now_ns()
        self.state = new
        self.state_log.append((new, now_ns))
        self._enter(old, new)
        if self.on_replacement_readiness is not None:
            self.on_replacement_readiness(self)
        self._events.state_change(self.app_id, STATE_EVENT_DETAIL[new], message)
        if new is not AppState.REJECTED:
            self._notify(StateUpdate(self.app_id, new.value, now_ns, message))
        return new

    def _enter(self, old: AppState, new: AppState) -> None:
        queue = self.queue
        if queue is not None and old is AppState.ACCEPTED:
            queue.clear_allocating_accepted(self.app_id)
        if queue is not None and (new in RUNNING_STATES) != (old in RUNNING_STATES):
            if new in RUNNING_STATES:
                queue.inc_running_apps()
            else:
                queue.dec_running_apps()
        now = self._clock.monotonic()
        self._completing_deadline = self._timer(now + self.timeouts.completing) if new is AppState.COMPLETING else None
        if new in (AppState.COMPLETED, AppState.FAILED, AppState.REJECTED):
            self._expire_deadline = self._timer(now + self.timeouts.terminated)
        if new in (AppState.COMPLETED, AppState.FAILED):
            self.terminated_at_s = self._clock.now_ns() // 1_000_000_000

    def reject(self, message: str) -> None:
        self.rejected_message = message
        self.handle(AppEvent.REJECT, message)

    def _timer(self, due: float) -> float:
        """A timer of this application set to ``due`` (monotonic seconds): told to the partition."""
        if self.on_timer is not None:
            self.on_timer(self, due)
        return due

    def tick(self) -> AppState | None:
        """Fires the timers that are due; returns the new state when one fired."""
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"application {self.app_id}")
        now = self._clock.monotonic()
        completing = self._completing_deadline is not None and now >= self._completing_deadline
        expire = self._expire_deadline is not None and now >= self._expire_deadline
        if completing:
            return self.handle(AppEvent.COMPLETE)
        # The placeholder timer is the partition's to fire (it releases through the outbox):
        # see placeholder_timeout_due and time_out_placeholders.
        if expire:
            self._expire_deadline = None
            return self.handle(AppEvent.EXPIRE)
        return None

    def _check_completion(self) -> None:
        """Nothing pending and nothing allocated: the app starts completing."""
        done = not self.asks and not self.allocations and self.state in (AppState.ACCEPTED, AppState.RUNNING)
        if done:
            self.handle(AppEvent.COMPLETE)

    # -- asks ----------------------------------------------------------------------------------

    def _note_create_time(self, alloc: Allocation) -> None:
        """The submission time is the earliest of the app's creation and its asks' (or recovered
        allocations') creation times: an RM that restarts recreates the app "now", but the
        creationTime tag of its pods says when the work was really submitted. Caller holds the lock."""
        if alloc.create_time_ns and alloc.create_time_ns < self.submission_time_ns:
            self.submission_time_ns = alloc.create_time_ns

    def sorted_asks(self) -> list[Allocation]:
        """Pending asks: priority descending, then oldest first, then key."""
        return [ask for _, ask in self._ordered]

    def iter_asks(self) -> Iterator[Allocation]:
        """The pending asks in order, without a copy: for the scheduling cycle, which stops
        iterating at the first ask it places (a change of the asks ends the walk)."""
        ordered = self._ordered
        i = 0
        while i < len(ordered):
            yield ordered[i][1]
            i += 1

    @property
    def max_ask_priority(self) -> int | None:
        """The highest priority of a pending ask (app and queue sorting), None without asks."""
        ordered = self._ordered
        return -ordered[0][0][0] if ordered else None

    def _fifo_keys(self) -> tuple[int | None, int]:
        """What places this application among its queue's (highest pending ask priority, then
        submission time; the id never changes). Caller holds the lock."""
        return self.max_ask_priority, self.submission_time_ns

    def _report_to_queue(self, before: tuple[int | None, int], after: tuple[int | None, int]) -> None:
        """Tells the queue when this application's fifo keys changed (its priority, or whether
        it has asks at all): the queue's incremental scheduling state follows (under the
        partition's lock, as every change)."""
        if before != after and self.queue is not None:
            self.queue.app_asks_changed(self, after[0])

    def _index_ask(self, ask: Allocation) -> None:
        bisect.insort(self._ordered, (ask_sort_key(ask), ask), key=lambda entry: entry[0])

    def _unindex_ask(self, ask: Allocation) -> None:
        ordered = self._ordered
        if ordered and ordered[0][1] is ask:
            del ordered[0]  # the scheduling cycle places asks in order: mostly the first one
            return
        key = ask_sort_key(ask)
        i = bisect.bisect_left(self._ordered, key, key=lambda entry: entry[0])
        if i < len(self._ordered) and self._ordered[i][1] is ask:
            del self._ordered[i]

    def add_ask(self, ask: Allocation) -> None:
        """A new ask, or a new size for a pending one. A first ask (or one arriving while
        Completing) runs the application."""
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"application {self.app_id}")
        assert self.queue is not None, "an application gets asks only once placed"
        before = self._fifo_keys()
        old = self.asks.get(ask.allocation_key)
        delta = ask.resource - old.resource if old is not None else ask.resource
        if old is not None:
            self._unindex_ask(old)
        self.asks[ask.allocation_key] = ask
        self._index_ask(ask)
        if ask.placeholder and old is None:
            self._count_placeholder(ask)
        self.pending = self.pending + delta
        self._note_create_time(ask)
        run = self.state in (AppState.NEW, AppState.COMPLETING)
        after = self._fifo_keys()
        self.queue.inc_pending(delta)
        self._report_to_queue(before, after)
        if run:
            self.handle(AppEvent.RUN)
        self._events.ask_added(self.app_id, ask.allocation_key, ask.resource)

    def remove_ask(self, key: str, detail: EventChangeDetail = EventChangeDetail.REQUEST_CANCEL) -> Allocation | None:
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"application {self.app_id}")
        assert self.queue is not None
        before = self._fifo_keys()
        ask = self.asks.pop(key, None)
        if ask is None:
            return None
        self._unindex_ask(ask)
        self.pending = self.pending - ask.resource
        if ask.placeholder:
            # A placeholder that will never be placed (cancelled, timed out): counted, so that a
            # group's count is always allocated + pending + replaced + timed out.
            data = self.placeholder_data.get(ask.task_group_name)
            if data is not None:
                data.timed_out += 1
            if self.gang_counts is not None:
                self.gang_counts.timed_out += 1
        after = self._fifo_keys()
        self.queue.dec_pending(ask.resource)
        self._report_to_queue(before, after)
        self._events.ask_removed(self.app_id, key, ask.resource, detail)
        self._check_completion()
        return ask

    # -- allocations ---------------------------------------------------------------------------

    def allocate(
        self, ask: Allocation, node_id: str, on_usage: Callable[[Allocation], None], instance_type: str = ""
    ) -> None:
        """Turns a pending ask into an allocation on ``node_id`` (the node already holds it).
        ``on_usage`` updates user/group usage between the state change and the APP event,
        in YuniKorn's order."""
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"application {self.app_id}")
        assert self.queue is not None
        before = self._fifo_keys()
        if self.asks.pop(ask.allocation_key, None) is not None:
            self._unindex_ask(ask)
        ask.place(node_id, self._clock.now_ns(), instance_type)
        self.allocations[ask.allocation_key] = ask
        self.pending, self.allocated = transferred(self.pending, self.allocated, ask.resource)
        after = self._fifo_keys()
        self.queue.pending_allocated(ask.resource)
        self._report_to_queue(before, after)
        if ask.placeholder:
            self._placeholder_allocated(ask)
        else:
            self._run_after_allocation()
        on_usage(ask)
        self._events.allocation_added(self.app_id, ask.allocation_key, ask.resource)

    def recover_allocation(self, alloc: Allocation, on_usage: Callable[[Allocation], None]) -> None:
        """An allocation the RM already placed (recovery): counted even past queue max."""
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"application {self.app_id}")
        assert self.queue is not None
        before = self._fifo_keys()
        self.allocations[alloc.allocation_key] = alloc
        self.allocated = self.allocated + alloc.resource
        self._note_create_time(alloc)
        after = self._fifo_keys()
        self.queue.inc_allocated(alloc.resource)
        self._report_to_queue(before, after)
        if self.state is AppState.NEW:
            self.handle(AppEvent.RUN)
        if alloc.placeholder:
            self._count_placeholder(alloc)
            self._placeholder_allocated(alloc)
        else:
            self._run_after_allocation()
        on_usage(alloc)
        self._events.allocation_added(self.app_id, alloc.allocation_key, alloc.resource)

    def resize_allocation(self, key: str, resource: Resource) -> Resource:
        """The RM changed the size of a placed allocation: the application and its queues follow
        (unchecked, like a recovery: the pod already runs). Returns the change (new - old)."""
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"application {self.app_id}")
        assert self.queue is not None
        alloc = self.allocations[key]
        delta = resource - alloc.resource
        alloc.resource = resource
        self._note_peak()
        self.allocated = self.allocated + delta
        self.queue.inc_allocated(delta)
        return delta

    def _run_after_allocation(self) -> None:
        if self.state in _RUN_ON_ALLOCATION:
            self.handle(AppEvent.RUN)

    def remove_allocation(
        self, key: str, detail: EventChangeDetail, on_usage: Callable[[Allocation], None], *,
        check_completion: bool = True,
    ) -> Allocation | None:
        """Releases an allocation; the caller removes it from its node afterwards.
        ``check_completion`` False: a placeholder whose real member is added right after."""
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"application {self.app_id}")
        assert self.queue is not None
        alloc = self.allocations.pop(key, None)
        if alloc is None:
            return None
        self._note_peak()
        self.allocated = self.allocated - alloc.resource
        self._track_ended(alloc, detail)
        self.queue.dec_allocated(alloc.resource)
        if alloc.preempted:  # a preemption victim is gone, whatever ended it
            self.queue.dec_preempting(alloc.resource)
        on_usage(alloc)
        if alloc.placeholder:
            self._placeholder_removed(alloc, detail, check_completion)
        elif check_completion:
            self._check_completion()
        # A victim's end names its preemptor (pyscheduler.scheduler.preemption.note).
        note = alloc.preemption_note if detail is EventChangeDetail.ALLOC_PREEMPT else ""
        self._events.allocation_removed(self.app_id, key, alloc.resource, detail, note)
        return alloc

    # -- gang scheduling ---------------------------------------------------------------------

    def _count_placeholder(self, ask: Allocation) -> None:
        """One more placeholder of its task group (the first one's size is the group's)."""
        data = self.placeholder_data.get(ask.task_group_name)
        if data is None:
            data = self.placeholder_data[ask.task_group_name] = PlaceholderData(ask.task_group_name, ask.resource)
        data.count += 1
        if self.gang_counts is not None:
            self.gang_counts.asked += 1

    def _placeholder_allocated(self, alloc: Allocation) -> None:
        """A placeholder placed: the first one starts the placeholder timer (and makes an
        Accepted application count as allocating for maxApplications); the last of the gang
        runs the application. Placeholders never run it before that."""
        first = self.allocated_placeholder.is_zero()
        self.allocated_placeholder = self.allocated_placeholder + alloc.resource
        if self.gang_counts is not None:
            self.gang_counts.allocated += 1
        if first and self.on_replacement_readiness is not None:
            self.on_replacement_readiness(self)
        if first and self.state is AppState.ACCEPTED:
            if self.placeholder_timeout_ns > 0 and self._placeholder_deadline is None:
                self._placeholder_deadline = self._timer(self._clock.monotonic() + self.placeholder_timeout_ns / 1e9)
            if self.queue is not None:
                self.queue.set_allocating_accepted(self.app_id)
        if _same(self.allocated_placeholder, self.placeholder_ask) and self.state in (
                AppState.ACCEPTED, AppState.RUNNING, AppState.COMPLETING):
            self.handle(AppEvent.RUN)

    def _placeholder_removed(self, alloc: Allocation, detail: EventChangeDetail, check_completion: bool) -> None:
        """A placeholder gone: replaced by a real member, or counted as timed out (timeouts,
        preemption, node removal, a size mismatch, the application's removal). When the last
        one leaves, the timer stops and an application waiting for that moves on: Resuming
        (Soft, timed out) becomes Accepted, Failing (Hard) becomes Failed."""
        data = self.placeholder_data.get(alloc.task_group_name)
        if data is not None:
            if detail is EventChangeDetail.ALLOC_REPLACED:
                data.replaced += 1
            else:
                data.timed_out += 1
        if self.gang_counts is not None:
            if detail is EventChangeDetail.ALLOC_REPLACED:
                self.gang_counts.replaced += 1
            else:
                self.gang_counts.timed_out += 1
        self.allocated_placeholder = _pruned(self.allocated_placeholder - alloc.resource)
        if not self.allocated_placeholder.is_zero():
            return
        self._placeholder_deadline = None
        if self.on_replacement_readiness is not None:
            self.on_replacement_readiness(self)
        if self.state is AppState.FAILING:
            self.handle(AppEvent.FAIL)
        elif self.state is AppState.RESUMING:
            self.handle(AppEvent.RUN)
        elif check_completion:
            self._check_completion()

    @property
    def ready_for_replacement(self) -> bool:
        """The whole gang was placed (the application runs, or completes) and placeholders are
        left: its members may take their places."""
        return (self.state in (AppState.RUNNING, AppState.COMPLETING)
                and not self.allocated_placeholder.is_zero())

    def can_replace(self, ask: Allocation) -> bool:
        """A real member of a task group that still has placeholders to take: it waits for
        one (the replacement phase places it) instead of being allocated normally."""
        if ask.placeholder or not ask.task_group_name:
            return False
        data = self.placeholder_data.get(ask.task_group_name)
        return data is not None and data.replaceable

    def placeholders(self) -> list[Allocation]:
        """The placeholder allocations, by key."""
        return sorted((a for a in self.allocations.values() if a.placeholder), key=lambda a: a.allocation_key)

    def start_replacement(self, real: Allocation, placeholder: Allocation, node_id: str, instance_type: str) -> None:
        """``real`` takes ``placeholder``'s place on ``node_id``: it leaves the pending asks and
        is placed, but is allocated only when the RM confirms the placeholder's release
        (:meth:`finish_replacement`)."""
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"application {self.app_id}")
        assert self.queue is not None
        before = self._fifo_keys()
        if self.asks.pop(real.allocation_key, None) is not None:
            self._unindex_ask(real)
            self.pending = self.pending - real.resource
            self.queue.dec_pending(real.resource)
        self._report_to_queue(before, self._fifo_keys())
        real.place(node_id, self._clock.now_ns(), instance_type)
        real.replacing = placeholder
        placeholder.replaced_by = real
        placeholder.released = True

    def undo_replacement(self, placeholder: Allocation) -> Allocation | None:
        """A replacement under way ends without the RM's confirmation (the node of either
        went away, or the placeholder ended otherwise): the real member is pending again and
        the placeholder is usable again (unless it goes too). Returns the real member."""
        real = placeholder.replaced_by
        if real is None:
            return None
        placeholder.replaced_by = None
        placeholder.released = False
        real.replacing = None
        real.unplace()
        self.add_ask(real)
        return real

    def finish_replacement(self, placeholder: Allocation, on_removed: Callable[[Allocation], None],
                           on_added: Callable[[Allocation], None]) -> Allocation | None:
        """The RM confirmed the placeholder's release: it goes (counted replaced, APP REMOVE
        ALLOC_REPLACED) and its real member becomes an allocation (``placeholder_used``).
        Returns the real member (None for a placeholder no member was taking)."""
        real = placeholder.replaced_by
        self.remove_allocation(placeholder.allocation_key, EventChangeDetail.ALLOC_REPLACED, on_removed,
                               check_completion=real is None)
        if real is None:
            return None
        assert self.queue is not None
        placeholder.replaced_by = None
        real.replacing = None
        real.placeholder_used = True
        real.placeholder_create_time_ns = placeholder.create_time_ns
        real.allocation_time_ns = self._clock.now_ns()
        # YuniKorn's rule: the first real member does not move the state (the last placeholder
        # did); later ones, or one arriving while Completing, run the application.
        had_real = not _pruned(self.allocated - self.allocated_placeholder).is_zero()
        self.allocations[real.allocation_key] = real
        self.allocated = self.allocated + real.resource
        self.queue.inc_allocated(real.resource)
        if had_real or self.state is AppState.COMPLETING:
            self._run_after_allocation()
        on_added(real)
        self._events.allocation_added(self.app_id, real.allocation_key, real.resource)
        return real

    def placeholder_timeout_due(self) -> bool:
        deadline = self._placeholder_deadline
        return deadline is not None and self._clock.monotonic() >= deadline

    def time_out_placeholders(self) -> tuple[list[Allocation], list[Allocation]]:
        """The placeholder timer fired (YuniKorn's timeoutPlaceholderProcessing). A running
        application releases its placeholders not being replaced. One still waiting for its gang
        resumes as a normal application (Soft: Resuming) or fails (Hard: Failing) and releases
        every allocation (all placeholders) and every pending ask (APP REMOVE REQUEST_TIMEOUT;
        the placeholders among them counted timed out in their task group; YuniKorn counts the
        real members too, and crashes on one without a task group). Returns (allocations to
        release, asks removed); the caller releases them through the RM."""
        if CHECK_LOCKS:
            check_held(self.graph_lock, f"application {self.app_id}")
        self._placeholder_deadline = None
        if self.state in (AppState.RUNNING, AppState.COMPLETING) and not self.allocated_placeholder.is_zero():
            # Those being replaced, and a preempted one, are on their way out already.
            unused = [ph for ph in self.placeholders() if not ph.released and not ph.preempted]
            for ph in unused:
                ph.released = True
            return unused, []
        if self.state in (AppState.NEW, AppState.ACCEPTED):
            event = AppEvent.FAIL if self.gang_style is GangStyle.HARD else AppEvent.RESUME
            self.handle(event, RESERVATION_TIMEOUT)
        # A preempted one's release is under way already: not released twice.
        allocations = sorted((a for a in self.allocations.values() if not a.preempted), key=lambda a: a.allocation_key)
        for alloc in allocations:
            alloc.released = True
        pending = self.sorted_asks()
        for ask in pending:  # placeholders among them count timed out (remove_ask)
            self.remove_ask(ask.allocation_key, EventChangeDetail.REQUEST_TIMEOUT)
        return allocations, pending

    def _note_peak(self) -> None:
        # Between two decreases ``allocated`` only grows: its peak is reached just before one.
        self._peak_before_decrease = self._peak_before_decrease.component_max(self.allocated)

    def max_allocated(self) -> Resource:
        """The most this application had allocated, per resource type (REST ``maxUsedResource``)."""
        return self._peak_before_decrease.component_max(self.allocated)

    def _track_ended(self, alloc: Allocation, detail: EventChangeDetail) -> None:
        if detail is EventChangeDetail.ALLOC_PREEMPT:
            history = self.preempted_history
        elif alloc.placeholder:
            history = self.placeholder_history
        else:
            history = self.used_history
        history.aggregate(alloc.instance_type, alloc.resource, alloc.allocation_time_ns, self._clock.now_ns())

    def is_consistent(self) -> bool:
        """Pending and allocated equal the sums of asks and allocations (a health check)."""
        pending = sum((a.resource for a in self.asks.values()), Resource())
        allocated = sum((a.resource for a in self.allocations.values()), Resource())
        return pending == self.pending and allocated == self.allocated

    def __repr__(self) -> str:
        return f"Application({self.app_id}, {self.state.value}, queue={self.queue.path if self.queue else None})"


def _pruned(resource: Resource) -> Resource:
    """Without the types at zero (placeholder totals are compared with the gang's size)."""
    return Resource({k: v for k, v in resource.items() if v != 0})


def _same(left: Resource, right: Resource) -> bool:
    """Equal quantities, a missing type counting as zero (YuniKorn's Equals after Prune)."""
    return _pruned(left) == _pruned(right)
