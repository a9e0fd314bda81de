"""Type stub of ``pyscheduler._native``, the Rust extension (rust/python, over the workspace crates
rust/events, rust/stream and rust/schedmath)."""

from collections.abc import Callable, ItemsView, Iterable, Iterator, KeysView, Mapping, Sequence, ValuesView
from types import NotImplementedType
from typing import ClassVar, final

from typing_extensions import Self

from pyscheduler.common.errors import SchedulerRuntimeError, SchedulerValueError

__all__ = [
    "__version__",
    "EventStore",
    "Subscription",
    "StreamOutcome",
    "StreamTicket",
    "CLOSED_BY_PRODUCER",
    "RELEASED_DESCRIPTION",
    "closing_line",
    "NodeIndex",
    "PlanQueues",
    "Resource",
    "transferred",
    "component_min_undef",
    "MAX_RESOURCE_TYPES",
    "EventIdOutOfRangeError",
    "EventSystemStoppedError",
]

__version__: str

class EventIdOutOfRangeError(SchedulerValueError):
    """A start event id the ring buffer does not hold. args: (message, start, lowest, highest)."""

class EventSystemStoppedError(SchedulerRuntimeError):
    """The event pipeline was stopped."""

_EventTuple = (
    tuple[int, int, int, int, str]
    | tuple[int, int, int, int, str, str]
    | tuple[int, int, int, int, str, str, str]
    | tuple[int, int, int, int, str, str, str, Mapping[str, int] | None]
)

@final
class EventStore:
    """The event ring buffer and the non-blocking pipeline that feeds it.

    ``capacity`` events are kept (0: collection off); ``queue_capacity`` events may wait
    between ``add`` and the ring before new ones are dropped.
    """

    def __new__(cls, capacity: int = 100_000, queue_capacity: int = 100_000) -> Self: ...
    def add(
        self,
        type: int,
        change_type: int,
        change_detail: int,
        timestamp_ns: int | None,
        object_id: str,
        reference_id: str = "",
        message: str = "",
        resource: Mapping[str, int] | None = None,
    ) -> bool:
        """Queue one event (timestamp None: now); False when it was dropped."""
    def record(
        self,
        type: int,
        change_type: int,
        change_detail: int,
        object_id: str,
        reference_id: str = "",
        message: str = "",
        resource: Mapping[str, int] | None = None,
        timestamp_ns: int | None = None,
    ) -> bool:
        """The scheduler's entry point: nothing while tracking is off; REQUEST/NONE events go
        to the request sink (called with these arguments); others are queued like ``add``."""
    def set_tracking(self, enabled: bool) -> None: ...
    def set_request_sink(self, sink: Callable[..., bool] | None) -> None: ...
    def add_many(self, events: Iterable[_EventTuple]) -> int:
        """Queue many events; returns how many were accepted."""
    def flush(self, timeout: float | None = None) -> bool:
        """Wait until everything accepted so far is stored; False on timeout."""
    def lowest_id(self) -> int: ...
    def highest_id(self) -> int: ...
    def next_id(self) -> int: ...
    def id_range(self) -> tuple[int, int]: ...
    def __len__(self) -> int: ...
    @property
    def capacity(self) -> int: ...
    def resize(self, capacity: int) -> None: ...
    def batch_body(self, instance_uuid: str, start: int, count: int) -> bytes: ...
    def ndjson(self, start: int, count: int) -> bytes: ...
    def records(
        self, start: int, count: int
    ) -> list[tuple[int, int, int, int, int, str, str, str, dict[str, int]]]: ...
    # ``capacity`` defaults to 2000 events (YuniKorn's stream slack; the Rust constant).
    def subscribe_recent(self, count: int = 0, capacity: int = ...) -> Subscription: ...
    def subscribe_from(self, start: int, capacity: int = ...) -> Subscription: ...
    def open_stream(
        self, subscription: Subscription, fd: int, first_line: bytes, chunked: bool = True, write_timeout: float = 5.0
    ) -> StreamTicket:
        """Hands a subscription and its connected socket (the response head sent) to the stream
        writer, which writes the whole body: ``first_line``, the history (before this call
        returns, GIL released), live events and the closing line; HTTP/1.1 chunks when
        ``chunked``, else the bytes as they are."""
    def release_streams(self) -> None:
        """Asks every open stream to end at its next chunk boundary, with the closing line."""
    def stats(self) -> dict[str, int]: ...
    def stop(self) -> None: ...
    @property
    def stopped(self) -> bool: ...

@final
class Subscription:
    """A cursor over the ring: history first, then live events, as NDJSON chunks."""

    def next(self, max_events: int = 1000, timeout: float = 1.0) -> bytes | None:
        """Events as NDJSON; b"" when none came in time; None once closed."""
    @property
    def next_id(self) -> int: ...
    @property
    def closed_reason(self) -> str | None: ...
    def close(self) -> None: ...

@final
class StreamOutcome:
    """How a stream ended."""

    CLOSED: ClassVar[StreamOutcome]
    """The subscription closed (``StreamTicket.closed_reason``); the closing line was written."""
    RELEASED: ClassVar[StreamOutcome]
    """Ended on request; the closing line was written."""
    PEER_CLOSED: ClassVar[StreamOutcome]
    """The client hung up."""
    WRITE_FAILED: ClassVar[StreamOutcome]
    """A write failed; the socket was shut down."""
    WRITE_TIMEOUT: ClassVar[StreamOutcome]
    """One chunk was not written within the write timeout; the socket was shut down."""
    def __int__(self) -> int: ...

@final
class StreamTicket:
    """A stream handed to the stream writer (``EventStore.open_stream``)."""

    def wait(self, timeout: float = 1.0) -> StreamOutcome | None:
        """Waits (GIL released) for the stream to end: None while it runs, else its outcome."""
    def release(self) -> None:
        """Asks the writer to end the stream at its next chunk boundary, with the closing line."""
    @property
    def outcome(self) -> StreamOutcome | None: ...
    @property
    def closed_reason(self) -> str | None: ...
    @property
    def events_written(self) -> int: ...

CLOSED_BY_PRODUCER: str
"""The ``message`` of YuniKorn's closing line of an event stream."""
RELEASED_DESCRIPTION: str
"""The closing line's ``description`` when the service ends a stream (it is shutting down)."""

def closing_line(description: str) -> bytes:
    """YuniKorn's in-band end of an event stream, one NDJSON line (a YAPIError with status 200:
    the response head is gone); an empty ``description`` is the message. The stream writer's
    own bytes: the only definition of the line."""

@final
class NodeIndex:
    """Nodes ordered by (score, node id) under the ``fair`` or ``binpacking`` policy."""

    def __new__(cls, policy: str = "fair", weights: Mapping[str, float] | None = None) -> Self: ...
    def upsert(
        self, node_id: str, total: Mapping[str, int], available: Mapping[str, int], schedulable: bool = True
    ) -> None:
        """Adds a node or updates its resources (re-scored in O(log n))."""
    def remove(self, node_id: str) -> bool: ...
    def set_reserved(self, node_id: str, reserved: bool) -> bool: ...
    def set_policy(self, policy: str, weights: Mapping[str, float] | None = None) -> None: ...
    @property
    def policy(self) -> str: ...
    def first_fit(
        self, ask: Mapping[str, int], after: tuple[float, str] | None = None, skip_reserved: bool = True
    ) -> tuple[float, str] | None:
        """The first fitting node from the best (or after the cursor): (score, node_id)."""
    def closest_fits(
        self,
        ask: Mapping[str, int],
        limit: int,
        after: tuple[float, str] | None = None,
        skip_reserved: bool = True,
    ) -> list[tuple[float, str]]:
        """Up to ``limit`` nodes ``ask`` could reserve (schedulable, capacity holds it, not reserved
        when ``skip_reserved``), closest to fitting first: (fit_in_score, node_id), after the cursor."""
    def ordered(self) -> list[str]: ...
    def score(self, node_id: str) -> float | None: ...
    def __len__(self) -> int: ...

@final
class PlanQueues:
    """The queues of one ask leaf's preemption attempts on the ask's resource types (the native
    twin of ``pyscheduler.scheduler.preemption.typed``)."""

    def __new__(cls, types: int) -> Self: ...
    def add(self, parent: int | None, guaranteed: Sequence[int | None], none: bool, merge: bool) -> int:
        """Adds a queue (its parent before it); returns its index."""
    def set_used(self, queue: int, used: Sequence[int]) -> None: ...
    def plan(
        self,
        ask_queue: int,
        queues: Sequence[int],
        amounts: Sequence[Sequence[int]],
        freed: Sequence[Sequence[int]],
        wanted: Sequence[int],
        available: Sequence[int],
    ) -> tuple[int, list[int]] | None:
        """A node's plan: (start index, kept positions), or None."""
    def __len__(self) -> int: ...

MAX_RESOURCE_TYPES: int

@final
class Resource(Mapping[str, int]):
    """An immutable map of resource name to int64 quantity (see pyscheduler.common.resources).
    Registered as a Mapping by that module; typed as one here."""

    def __new__(cls, quantities: Mapping[str, int] | None = None) -> Self: ...
    def __getitem__(self, name: str, /) -> int: ...
    def get(self, name: str, default: int = 0) -> int: ...  # type: ignore[override]
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...
    def __contains__(self, name: object, /) -> bool: ...
    def items(self) -> ItemsView[str, int]: ...
    def keys(self) -> KeysView[str]: ...
    def values(self) -> ValuesView[int]: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def to_dict(self) -> dict[str, int]:
        """A plain dict copy (DAO output, events)."""
    def view(self) -> Mapping[str, int]:
        """The quantities as a dict for readers that read several types, built on the first call
        and shared: never write it (to_dict() gives a copy)."""
    def __add__(self, other: Mapping[str, int], /) -> Resource:
        """Sum over the union of types (a missing type is 0), saturated at int64."""
    def __sub__(self, other: Mapping[str, int], /) -> Resource:
        """Difference over the union of types; results may be negative."""
    # PyO3 fills the reflected slots too; they give NotImplemented, so a plain mapping on the
    # left of + or - is a TypeError rather than a silent dict-like sum.
    def __radd__(self, other: object, /) -> NotImplementedType: ...
    def __rsub__(self, other: object, /) -> NotImplementedType: ...
    def __neg__(self) -> Resource: ...
    def room_above(self, used: Mapping[str, int]) -> Resource:
        """self as a maximum: per type it names, the maximum minus used; others stay absent."""
    def sub_eliminate_negative(self, other: Mapping[str, int]) -> Resource: ...
    def multiply(self, factor: int) -> Resource: ...
    def pruned(self) -> Resource: ...
    def is_zero(self) -> bool: ...
    def is_empty(self) -> bool: ...
    def has_negative(self) -> bool: ...
    def strictly_greater_than_zero(self) -> bool: ...
    def fits_in(self, larger: Mapping[str, int]) -> bool: ...
    def fits_in_max_undef(self, maximum: Mapping[str, int] | None) -> bool: ...
    def fair_share(self, guaranteed: Resource | None, fairmax: Resource) -> float:
        """As allocated usage: the largest share over its positive types of guaranteed or, for a
        type without a guarantee, of fairmax (twin: pyscheduler.policies.sorting.fair_share)."""
    def positive_total(self) -> int:
        """The positive quantities summed."""
    def component_min(self, other: Mapping[str, int]) -> Resource: ...
    def component_max(self, other: Mapping[str, int]) -> Resource: ...

def transferred(source: Resource, target: Resource, amount: Resource) -> tuple[Resource, Resource]:
    """(source - amount, target + amount) in one pass over amount."""

def component_min_undef(a: Resource | None, b: Resource | None) -> Resource | None:
    """Per-type minimum of two maximums where a missing type (or a None maximum) is unlimited."""
