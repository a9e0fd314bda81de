"""An in-process RM that records every callback: the way tests drive the core.

:class:`RecordingRM` implements :class:`~pyscheduler.si.callback.ResourceManagerCallback`
and :class:`~pyscheduler.si.callback.PredicatesPlugin`. Register it with the proxy, send
requests, then wait for the outcomes::

    rm = RecordingRM()
    proxy.register_resource_manager(RegisterResourceManagerRequest(rm_id="rm", ...), rm)
    proxy.update_application(ApplicationRequest(new=[...], rm_id="rm"))
    rm.wait_for_accepted_app("app-1")
    proxy.update_allocation(AllocationRequest(allocations=[...], rm_id="rm"))
    alloc = rm.wait_for_allocation("ask-1")

Everything is recorded under one lock, in arrival order, and the ``wait_for_*`` helpers sleep
on a condition variable that every callback notifies, so a wait returns as soon as the
outcome arrives (no polling) and fails after its timeout (default 5 s) with a
:class:`WaitTimeout` that says what was seen instead.

What "seen" means for each helper:

- applications, nodes, releases, rejections, state updates and events are *outcomes*: a wait
  succeeds if one was ever recorded since the last :meth:`RecordingRM.clear`, even if it came
  before the wait started;
- allocations are *state*: ``wait_for_allocation(s)`` look at the live allocations, i.e. new
  allocations minus the ones released since. An allocation that arrived and was released
  before the wait does not count (wait for its release instead).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from pyscheduler.common.errors import SchedulerError
from pyscheduler.si.events import EventRecord
from pyscheduler.si.messages import (
    AcceptedApplication,
    AcceptedNode,
    Allocation,
    AllocationRelease,
    AllocationResponse,
    ApplicationResponse,
    ContainerSchedulingState,
    NodeResponse,
    PredicatesArgs,
    RejectedAllocation,
    RejectedApplication,
    RejectedNode,
    UpdateContainerSchedulingStateRequest,
    UpdatedApplication,
)

__all__ = ["PredicateFunc", "RecordedCall", "RecordingRM", "WaitTimeout"]

T = TypeVar("T")

# (allocation_key, node_id, allocate) -> None to let the node pass, or the refusal reason.
PredicateFunc = Callable[[str, str, bool], "str | None"]

# One recorded callback: (method name, message). For send_event the message is the tuple of
# events of that call.
RecordedCall = tuple[str, object]

DEFAULT_TIMEOUT = 5.0

# How many recent callbacks a timeout message lists, so it stays readable.
_RECENT_CALLS = 10


class WaitTimeout(SchedulerError, TimeoutError, AssertionError):
    """A ``wait_for_*`` helper gave up. The message says what was awaited and what was seen.

    Both a ``TimeoutError`` (what happened) and an ``AssertionError`` (pytest reports it as a
    failed expectation, not as an error in the test's machinery).
    """


class RecordingRM:
    """Thread-safe in-process RM that records every callback (see the module docstring).

    ``predicates`` decides which nodes pass; the default lets every node pass, exactly like an
    RM without the predicates plugin. ``timeout`` is the default for every ``wait_for_*``.
    """

    def __init__(self, predicates: PredicateFunc | None = None, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        # RLock so conditions passed to wait_for may call the public accessors (which lock).
        self._cond = threading.Condition(threading.RLock())
        self._predicates = predicates
        self.timeout = timeout
        self._reset()

    def _reset(self) -> None:
        """Empties every record. Caller holds the lock (or is __init__)."""
        self._calls: list[RecordedCall] = []
        self._accepted_apps: dict[str, AcceptedApplication] = {}
        self._rejected_apps: dict[str, RejectedApplication] = {}
        self._app_updates: list[UpdatedApplication] = []
        self._accepted_nodes: dict[str, AcceptedNode] = {}
        self._rejected_nodes: dict[str, RejectedNode] = {}
        # Live allocations, by key, in allocation order.
        self._allocations: dict[str, Allocation] = {}
        self._allocation_count = 0
        self._released: list[AllocationRelease] = []
        self._rejected_allocations: list[RejectedAllocation] = []
        self._events: list[EventRecord] = []
        self._scheduling_states: list[UpdateContainerSchedulingStateRequest] = []
        self._predicate_calls: list[PredicatesArgs] = []

    # -- the callback ------------------------------------------------------------------------

    def update_allocation(self, response: AllocationResponse) -> None:
        """Records new, released and rejected allocations.

        New allocations are applied before releases, so a response that both allocates and
        releases a key leaves it released.
        """
        with self._cond:
            self._calls.append(("update_allocation", response))
            for alloc in response.new:
                # Re-sending a key replaces it and moves it to the end, like a fresh allocation.
                self._allocations.pop(alloc.allocation_key, None)
                self._allocations[alloc.allocation_key] = alloc
            self._allocation_count += len(response.new)
            for release in response.released:
                self._released.append(release)
                self._drop_released(release)
            self._rejected_allocations.extend(response.rejected_allocations)
            self._cond.notify_all()

    def _drop_released(self, release: AllocationRelease) -> None:
        if release.allocation_key:
            self._allocations.pop(release.allocation_key, None)
            return
        # SI: an empty key releases every allocation of the application.
        for key in [k for k, a in self._allocations.items() if a.application_id == release.application_id]:
            del self._allocations[key]

    def update_application(self, response: ApplicationResponse) -> None:
        """Records accepted, rejected and updated applications."""
        with self._cond:
            self._calls.append(("update_application", response))
            for accepted in response.accepted:
                self._accepted_apps[accepted.application_id] = accepted
            for rejected in response.rejected:
                self._rejected_apps[rejected.application_id] = rejected
            self._app_updates.extend(response.updated)
            self._cond.notify_all()

    def update_node(self, response: NodeResponse) -> None:
        """Records accepted and rejected nodes."""
        with self._cond:
            self._calls.append(("update_node", response))
            for accepted in response.accepted:
                self._accepted_nodes[accepted.node_id] = accepted
            for rejected in response.rejected:
                self._rejected_nodes[rejected.node_id] = rejected
            self._cond.notify_all()

    def predicates(self, args: PredicatesArgs) -> str | None:
        """Records the call, then asks the configured predicate (default: every node passes)."""
        with self._cond:
            self._calls.append(("predicates", args))
            self._predicate_calls.append(args)
            fn = self._predicates
            self._cond.notify_all()
        # Outside the lock: the predicate is test code and may be slow or read this RM.
        return None if fn is None else fn(args.allocation_key, args.node_id, args.allocate)

    def send_event(self, events: Sequence[EventRecord]) -> None:
        """Records a batch of request events."""
        batch = tuple(events)
        with self._cond:
            self._calls.append(("send_event", batch))
            self._events.extend(batch)
            self._cond.notify_all()

    def update_container_scheduling_state(self, request: UpdateContainerSchedulingStateRequest) -> None:
        """Records an ask's scheduling state."""
        with self._cond:
            self._calls.append(("update_container_scheduling_state", request))
            self._scheduling_states.append(request)
            self._cond.notify_all()

    # -- configuration -------------------------------------------------------------------------

    def set_predicates(self, predicates: PredicateFunc | None) -> None:
        """Replaces the predicate (``None``: every node passes). Applies to the next call."""
        with self._cond:
            self._predicates = predicates

    def clear(self) -> None:
        """Forgets everything recorded (the predicate and the timeout stay)."""
        with self._cond:
            self._reset()
            self._cond.notify_all()

    # -- accessors (snapshots: safe to keep and iterate while callbacks continue) ---------------

    @property
    def calls(self) -> list[RecordedCall]:
        """Every callback in arrival order, as ``(method name, message)``."""
        with self._cond:
            return list(self._calls)

    def calls_of(self, method: str) -> list[object]:
        """The messages of every call to ``method`` (e.g. ``"update_node"``), in order."""
        with self._cond:
            return [message for name, message in self._calls if name == method]

    @property
    def accepted_apps(self) -> list[str]:
        """IDs of the accepted applications, in order of acceptance."""
        with self._cond:
            return list(self._accepted_apps)

    @property
    def rejected_apps(self) -> dict[str, str]:
        """Rejected application ID -> reason."""
        with self._cond:
            return {app_id: r.reason for app_id, r in self._rejected_apps.items()}

    @property
    def app_updates(self) -> list[UpdatedApplication]:
        """Every application state update, in order."""
        with self._cond:
            return list(self._app_updates)

    def app_states(self, app_id: str) -> list[str]:
        """The states ``app_id`` was reported in, in order (e.g. ``["Accepted", "Running"]``)."""
        with self._cond:
            return [u.state for u in self._app_updates if u.application_id == app_id]

    def app_state(self, app_id: str) -> str | None:
        """The last reported state of ``app_id``, or ``None`` if none was reported."""
        states = self.app_states(app_id)
        return states[-1] if states else None

    @property
    def accepted_nodes(self) -> list[str]:
        """IDs of the accepted nodes, in order of acceptance."""
        with self._cond:
            return list(self._accepted_nodes)

    @property
    def rejected_nodes(self) -> dict[str, str]:
        """Rejected node ID -> reason."""
        with self._cond:
            return {node_id: r.reason for node_id, r in self._rejected_nodes.items()}

    @property
    def allocations(self) -> dict[str, Allocation]:
        """Live allocations by key (new minus released), in allocation order."""
        with self._cond:
            return dict(self._allocations)

    @property
    def allocation_count(self) -> int:
        """How many allocations were received in total, released ones included."""
        with self._cond:
            return self._allocation_count

    @property
    def released(self) -> list[AllocationRelease]:
        """Every release the core sent, in order."""
        with self._cond:
            return list(self._released)

    @property
    def rejected_allocations(self) -> dict[str, str]:
        """Rejected allocation key -> reason (the latest, if a key was rejected twice)."""
        with self._cond:
            return {r.allocation_key: r.reason for r in self._rejected_allocations}

    @property
    def events(self) -> list[EventRecord]:
        """Every event sent, across batches, in order."""
        with self._cond:
            return list(self._events)

    @property
    def scheduling_states(self) -> list[UpdateContainerSchedulingStateRequest]:
        """Every scheduling-state update, in order."""
        with self._cond:
            return list(self._scheduling_states)

    def scheduling_states_of(self, allocation_key: str) -> list[ContainerSchedulingState]:
        """The scheduling states reported for one ask, in order."""
        with self._cond:
            return [s.state for s in self._scheduling_states if s.allocation_key == allocation_key]

    @property
    def predicate_calls(self) -> list[PredicatesArgs]:
        """Every predicates call, in order."""
        with self._cond:
            return list(self._predicate_calls)

    # -- waiting ---------------------------------------------------------------------------------

    def wait_for(
        self,
        condition: Callable[[RecordingRM], T | None],
        description: str,
        timeout: float | None = None,
    ) -> T:
        """Waits until ``condition(self)`` returns something other than ``None`` or ``False``,
        and returns it.

        ``condition`` runs with the lock held (the accessors may be used in it; it must not
        block) after every callback. ``description`` completes "waiting for ..." in the
        :class:`WaitTimeout` raised after ``timeout`` seconds (default: ``self.timeout``).
        """
        return self._wait(lambda: condition(self), description, timeout, self.describe)

    def _wait(
        self,
        probe: Callable[[], T | None],
        description: str,
        timeout: float | None,
        seen: Callable[[], str],
    ) -> T:
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        with self._cond:
            while True:
                result = probe()
                if result is not None and result is not False:
                    return result
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise WaitTimeout(f"timed out after {limit:g} s waiting for {description}; seen: {seen()}")
                # Woken by every callback (notify_all); a spurious wake just re-probes.
                self._cond.wait(remaining)

    def wait_for_accepted_app(self, app_id: str, timeout: float | None = None) -> AcceptedApplication:
        """Waits until ``app_id`` is accepted."""
        return self._wait(
            lambda: self._accepted_apps.get(app_id),
            f"application {app_id!r} to be accepted",
            timeout,
            lambda: self._describe_app(app_id),
        )

    def wait_for_rejected_app(self, app_id: str, timeout: float | None = None) -> str:
        """Waits until ``app_id`` is rejected; returns the reason."""
        rejected = self._wait(
            lambda: self._rejected_apps.get(app_id),
            f"application {app_id!r} to be rejected",
            timeout,
            lambda: self._describe_app(app_id),
        )
        return rejected.reason

    def wait_for_app_state(self, app_id: str, state: str, timeout: float | None = None) -> UpdatedApplication:
        """Waits until ``app_id`` has been reported in ``state`` (at any point, not necessarily
        the last, since apps may pass through states quickly); returns that update."""

        def probe() -> UpdatedApplication | None:
            return next((u for u in self._app_updates if u.application_id == app_id and u.state == state), None)

        return self._wait(
            probe,
            f"application {app_id!r} to reach state {state!r}",
            timeout,
            lambda: self._describe_app(app_id),
        )

    def wait_for_accepted_node(self, node_id: str, timeout: float | None = None) -> AcceptedNode:
        """Waits until ``node_id`` is accepted."""
        return self._wait(
            lambda: self._accepted_nodes.get(node_id),
            f"node {node_id!r} to be accepted",
            timeout,
            self.describe,
        )

    def wait_for_rejected_node(self, node_id: str, timeout: float | None = None) -> str:
        """Waits until ``node_id`` is rejected; returns the reason."""
        rejected = self._wait(
            lambda: self._rejected_nodes.get(node_id),
            f"node {node_id!r} to be rejected",
            timeout,
            self.describe,
        )
        return rejected.reason

    def wait_for_allocation(self, allocation_key: str, timeout: float | None = None) -> Allocation:
        """Waits until ``allocation_key`` is a live allocation; returns it."""
        return self._wait(
            lambda: self._allocations.get(allocation_key),
            f"allocation {allocation_key!r}",
            timeout,
            lambda: self._describe_allocation(allocation_key),
        )

    def wait_for_allocations(self, count: int, timeout: float | None = None) -> dict[str, Allocation]:
        """Waits until at least ``count`` allocations are live; returns them by key."""

        def probe() -> dict[str, Allocation] | None:
            return dict(self._allocations) if len(self._allocations) >= count else None

        return self._wait(probe, f"{count} live allocations", timeout, self._describe_allocations)

    def wait_for_release(self, allocation_key: str, timeout: float | None = None) -> AllocationRelease:
        """Waits until the core has released ``allocation_key``; returns the (latest) release."""

        def probe() -> AllocationRelease | None:
            return next((r for r in reversed(self._released) if r.allocation_key == allocation_key), None)

        return self._wait(
            probe,
            f"release of allocation {allocation_key!r}",
            timeout,
            lambda: self._describe_allocation(allocation_key),
        )

    def wait_for_rejected_allocation(self, allocation_key: str, timeout: float | None = None) -> str:
        """Waits until ``allocation_key`` is rejected; returns the reason."""

        def probe() -> RejectedAllocation | None:
            return next((r for r in reversed(self._rejected_allocations) if r.allocation_key == allocation_key), None)

        rejected = self._wait(
            probe,
            f"rejection of allocation {allocation_key!r}",
            timeout,
            lambda: self._describe_allocation(allocation_key),
        )
        return rejected.reason

    def wait_for_scheduling_state(
        self, allocation_key: str, state: ContainerSchedulingState, timeout: float | None = None
    ) -> UpdateContainerSchedulingStateRequest:
        """Waits until ``allocation_key`` has been reported in ``state``; returns that update."""

        def probe() -> UpdateContainerSchedulingStateRequest | None:
            return next(
                (s for s in self._scheduling_states if s.allocation_key == allocation_key and s.state == state), None
            )

        def seen() -> str:
            states = [s.name for s in self.scheduling_states_of(allocation_key)]
            return f"states of {allocation_key!r}: {states}; {self.describe()}"

        return self._wait(probe, f"ask {allocation_key!r} to be {state.name}", timeout, seen)

    def wait_for_events(self, count: int, timeout: float | None = None) -> list[EventRecord]:
        """Waits until at least ``count`` events were sent; returns them all."""
        return self._wait(
            lambda: list(self._events) if len(self._events) >= count else None,
            f"{count} events",
            timeout,
            self.describe,
        )

    # -- descriptions for timeout messages ---------------------------------------------------------

    def describe(self) -> str:
        """A one-line summary of everything recorded, for failure messages."""
        with self._cond:
            counts: dict[str, int] = {}
            for name, _ in self._calls:
                counts[name] = counts.get(name, 0) + 1
            recent = ", ".join(_short(name, message) for name, message in self._calls[-_RECENT_CALLS:])
            return (
                f"callbacks {counts or 'none'}; "
                f"accepted apps {list(self._accepted_apps)}, rejected apps {_reasons(self._rejected_apps)}; "
                f"accepted nodes {list(self._accepted_nodes)}, rejected nodes {_reasons(self._rejected_nodes)}; "
                f"live allocations {list(self._allocations)}, released {[r.allocation_key for r in self._released]}, "
                f"rejected allocations {[r.allocation_key for r in self._rejected_allocations]}; "
                f"events {len(self._events)}; last calls [{recent}]"
            )

    def _describe_app(self, app_id: str) -> str:
        parts = []
        if app_id in self._rejected_apps:
            parts.append(f"{app_id!r} was REJECTED: {self._rejected_apps[app_id].reason!r}")
        if app_id in self._accepted_apps:
            parts.append(f"{app_id!r} was accepted")
        parts.append(f"states of {app_id!r}: {self.app_states(app_id)}")
        return "; ".join(parts) + "; " + self.describe()

    def _describe_allocation(self, key: str) -> str:
        parts = []
        releases = [r for r in self._released if r.allocation_key == key]
        if releases:
            parts.append(f"{key!r} was released ({', '.join(r.termination_type.name for r in releases)})")
        rejections = [r.reason for r in self._rejected_allocations if r.allocation_key == key]
        if rejections:
            parts.append(f"{key!r} was REJECTED: {rejections[-1]!r}")
        states = [s.state.name for s in self._scheduling_states if s.allocation_key == key]
        if states:
            parts.append(f"scheduling states of {key!r}: {states}")
        return "; ".join([*parts, self.describe()])

    def _describe_allocations(self) -> str:
        return f"{len(self._allocations)} live of {self._allocation_count} received; {self.describe()}"


def _reasons(rejected: Mapping[str, RejectedApplication | RejectedNode]) -> dict[str, str]:
    return {key: r.reason for key, r in rejected.items()}


def _short(name: str, message: object) -> str:
    """A compact rendering of one call for the "last calls" list."""
    if isinstance(message, AllocationResponse):
        return (
            f"{name}(new={[a.allocation_key for a in message.new]}, "
            f"released={[r.allocation_key for r in message.released]}, "
            f"rejected={[r.allocation_key for r in message.rejected_allocations]})"
        )
    if isinstance(message, ApplicationResponse):
        return (
            f"{name}(accepted={[a.application_id for a in message.accepted]}, "
            f"rejected={[r.application_id for r in message.rejected]}, "
            f"updated={[(u.application_id, u.state) for u in message.updated]})"
        )
    if isinstance(message, NodeResponse):
        return (
            f"{name}(accepted={[a.node_id for a in message.accepted]}, "
            f"rejected={[r.node_id for r in message.rejected]})"
        )
    if isinstance(message, PredicatesArgs):
        return f"{name}({message.allocation_key!r} on {message.node_id!r})"
    if isinstance(message, UpdateContainerSchedulingStateRequest):
        return f"{name}({message.allocation_key!r}: {message.state.name})"
    if isinstance(message, tuple):
        return f"{name}({len(message)} events)"
    return name
