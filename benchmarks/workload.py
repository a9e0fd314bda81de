"""The event workload of benchmarks.md section 1, as a lazy, seeded generator.

The model comes from the seed (historical-usage-tracking.md, "Memory usage of historical
elements"): applications of 100 pods each. Per application there are 7 events: the
application is added, then six state changes (new, accepted, running, the allocation
change, completing, completed). Per pod there are 2 events for a "normal" job (the request
is added, the allocation lands on a node) and 3 for a "gang" job (plus the placeholder it
replaces). So a 100-pod application makes 207 events (normal) or 307 (gang).

Each event is a tuple in the argument order of ``EventStore.add``::

    (type, change_type, change_detail, timestamp_ns, object_id, reference_id, message, resource)

The (type, change, detail) numbers are YuniKorn's wire values (spec/yunikorn/events.md).
The seed's "state change: new" is the event YuniKorn emits when the new application is
placed in its queue (QUEUE / ADD / QUEUE_APP, objectID = queue path, referenceID = app id),
which is also how queue paths enter the workload.

Generation is lazy at application granularity (at most one application's events exist at
a time), so 9 million events can be streamed into a store without materialising them, and
it is deterministic: the same seed, mix and sizes give the same events.

The ``resource`` dict is shared by all events of one application (same pod size within an
app): consumers must copy it, not mutate it.
"""

from __future__ import annotations

import itertools
import math
import random
import uuid
from collections.abc import Iterable, Iterator
from typing import Final, Protocol, TypeAlias

# --- YuniKorn EventRecord enums (numeric wire values, spec/yunikorn/events.md) ----------
# Kept local so that the workload does not depend on the events package (or the native
# module): the tests cross-check them against pyscheduler.events when it is importable.
TYPE_APP: Final = 2
TYPE_NODE: Final = 3
TYPE_QUEUE: Final = 4

CHANGE_SET: Final = 1
CHANGE_ADD: Final = 2
CHANGE_REMOVE: Final = 3

APP_ALLOC: Final = 200
APP_REQUEST: Final = 201
APP_NEW: Final = 203
APP_ACCEPTED: Final = 204
APP_RUNNING: Final = 206
APP_COMPLETING: Final = 207
APP_COMPLETED: Final = 208
NODE_ALLOC: Final = 303
QUEUE_APP: Final = 405
ALLOC_REPLACED: Final = 503

# --- Shape of the workload ---------------------------------------------------------------
Resource: TypeAlias = dict[str, int]
EventArgs: TypeAlias = tuple[int, int, int, int, str, str, str, Resource | None]
"""One event in ``EventStore.add`` argument order."""

PODS_PER_APP: Final = 100
APP_EVENTS: Final = 7
"""Events per application that do not depend on its pods (added + six state changes)."""
NORMAL_POD_EVENTS: Final = 2
GANG_POD_EVENTS: Final = 3
NODE_COUNT: Final = 5_000
NODES_PER_RACK: Final = 100
TENANTS: Final = 20
LEAF_QUEUES: Final = ("spark", "batch", "etl")
DEFAULT_SEED: Final = 20_260_101
START_NS: Final = 1_767_225_600_000_000_000
"""2026-01-01T00:00:00Z in Unix nanoseconds: realistic (61-bit) timestamp values."""

GIB: Final = 1 << 30
POD_MEMORY_BYTES: Final = (GIB // 2, GIB, 2 * GIB, 4 * GIB, 8 * GIB, 16 * GIB)
POD_VCORE_MILLIS: Final = (250, 500, 1_000, 2_000, 4_000)

# State-change messages are short and few, as in YuniKorn, so interning them is realistic.
MSG_ACCEPTED: Final = "app state changed: New -> Accepted"
MSG_RUNNING: Final = "app state changed: Accepted -> Running"
MSG_COMPLETING: Final = "app state changed: Running -> Completing"
MSG_COMPLETED: Final = "app state changed: Completing -> Completed"

Mix: TypeAlias = str | float


def events_per_app(gang: bool, pods: int = PODS_PER_APP) -> int:
    """Return the number of events one application of ``pods`` pods generates."""
    return APP_EVENTS + pods * (GANG_POD_EVENTS if gang else NORMAL_POD_EVENTS)


def node_names(count: int = NODE_COUNT) -> list[str]:
    """Return ``count`` distinct node names such as ``node-0421.rack-04.example``."""
    return [f"node-{i:04d}.rack-{i // NODES_PER_RACK:02d}.example" for i in range(count)]


def queue_paths() -> list[str]:
    """Return the leaf queue paths applications are submitted to (``root.tenant-3.spark``)."""
    return [f"root.tenant-{t}.{leaf}" for t in range(TENANTS) for leaf in LEAF_QUEUES]


def app_id(index: int) -> str:
    """Return the application id of the ``index``-th application (``spark-app-000123``)."""
    return f"spark-app-{index:06d}"


def parse_mix(mix: Mix) -> float:
    """Return the fraction of gang applications for ``mix``.

    ``mix`` is ``"normal"`` (0), ``"gang"`` (1), or a fraction in [0, 1] given as a float
    or as a string such as ``"0.25"``.
    """
    if mix == "normal":
        return 0.0
    if mix == "gang":
        return 1.0
    try:
        fraction = float(mix)
    except (TypeError, ValueError):
        raise ValueError(f"mix must be 'normal', 'gang' or a fraction in [0, 1], not {mix!r}") from None
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"mix fraction must be in [0, 1], not {fraction}")
    return fraction


def is_gang_app(index: int, fraction: float) -> bool:
    """Tell whether application ``index`` is a gang job for a gang ``fraction``.

    Gang apps are spread evenly (not drawn at random) so that any prefix of applications
    holds the exact fraction, and the choice consumes no random numbers.
    """
    return math.floor((index + 1) * fraction) > math.floor(index * fraction)


def random_uuid4(rng: random.Random) -> str:
    """Return a UUID4 string drawn from ``rng`` (deterministic, unlike ``uuid.uuid4``)."""
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


class _AppFactory:
    """Builds the events of one application at a time from a seeded random source."""

    def __init__(self, seed: int, gang_fraction: float, pods_per_app: int, start_ns: int) -> None:
        self._rng = random.Random(seed)
        self._gang_fraction = gang_fraction
        self._pods = pods_per_app
        self._now = start_ns
        self._nodes = node_names()
        self._queues = queue_paths()

    def _tick(self) -> int:
        # Gaps of up to ~16 ms: strictly increasing, irregular like a real event stream.
        self._now += 1 + self._rng.getrandbits(24)
        return self._now

    def app_events(self, index: int) -> list[EventArgs]:
        """Return the events of application ``index`` in the order they would happen."""
        rng = self._rng
        tick = self._tick
        app = app_id(index)
        queue = rng.choice(self._queues)
        resource: Resource = {"memory": rng.choice(POD_MEMORY_BYTES), "vcore": rng.choice(POD_VCORE_MILLIS)}
        gang = is_gang_app(index, self._gang_fraction)
        events: list[EventArgs] = [
            (TYPE_APP, CHANGE_ADD, APP_NEW, tick(), app, "", "", None),
            (TYPE_QUEUE, CHANGE_ADD, QUEUE_APP, tick(), queue, app, "", None),
            (TYPE_APP, CHANGE_SET, APP_ACCEPTED, tick(), app, "", MSG_ACCEPTED, None),
        ]
        key = ""
        for pod in range(self._pods):
            key = random_uuid4(rng)
            node = self._nodes[rng.randrange(len(self._nodes))]
            events.append((TYPE_APP, CHANGE_ADD, APP_REQUEST, tick(), app, key, "", resource))
            events.append((TYPE_NODE, CHANGE_ADD, NODE_ALLOC, tick(), node, key, "", resource))
            if gang:
                # The real pod takes the place of its placeholder, which has its own key.
                placeholder = random_uuid4(rng)
                events.append((TYPE_APP, CHANGE_REMOVE, ALLOC_REPLACED, tick(), app, placeholder, "", resource))
            if pod == 0:
                events.append((TYPE_APP, CHANGE_SET, APP_RUNNING, tick(), app, "", MSG_RUNNING, None))
        events.append((TYPE_APP, CHANGE_ADD, APP_ALLOC, tick(), app, key, "", resource))
        events.append((TYPE_APP, CHANGE_SET, APP_COMPLETING, tick(), app, "", MSG_COMPLETING, None))
        events.append((TYPE_APP, CHANGE_SET, APP_COMPLETED, tick(), app, "", MSG_COMPLETED, None))
        if self._pods == 0:
            # Without pods there is no first allocation to trigger "running".
            events.insert(3, (TYPE_APP, CHANGE_SET, APP_RUNNING, tick(), app, "", MSG_RUNNING, None))
        return events


def generate_events(
    n_events: int | None = None,
    *,
    n_apps: int | None = None,
    seed: int = DEFAULT_SEED,
    mix: Mix = "normal",
    pods_per_app: int = PODS_PER_APP,
    start_ns: int = START_NS,
) -> Iterator[EventArgs]:
    """Yield workload events lazily, in ``EventStore.add`` argument order.

    Stops after ``n_events`` events (possibly in the middle of an application) or after
    ``n_apps`` whole applications, whichever comes first; with neither it never stops.
    """
    if n_events is not None and n_events < 0:
        raise ValueError("n_events must be >= 0")
    if n_apps is not None and n_apps < 0:
        raise ValueError("n_apps must be >= 0")
    if pods_per_app < 0:
        raise ValueError("pods_per_app must be >= 0")
    # Built eagerly, so that its fixed tables (node names, queues) exist before a caller
    # takes a baseline measurement, and are not counted as the cost of the first events.
    factory = _AppFactory(seed, parse_mix(mix), pods_per_app, start_ns)
    return _generate(factory, n_events, n_apps)


def _generate(factory: _AppFactory, n_events: int | None, n_apps: int | None) -> Iterator[EventArgs]:
    # Arguments were validated eagerly in generate_events; this is the lazy part.
    remaining = n_events
    apps = itertools.count() if n_apps is None else range(n_apps)
    for index in apps:
        if remaining is not None and remaining <= 0:
            return
        events = factory.app_events(index)
        if remaining is not None:
            if len(events) > remaining:
                del events[remaining:]
            remaining -= len(events)
        yield from events


def chunked(events: Iterable[EventArgs], size: int) -> Iterator[list[EventArgs]]:
    """Yield lists of at most ``size`` events (the batches given to ``add_many``)."""
    if size <= 0:
        raise ValueError("size must be > 0")
    iterator = iter(events)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


class _ChunkCallback(Protocol):
    def __call__(self, done: int, /) -> None: ...


class BatchStore(Protocol):
    """The part of ``pyscheduler._native.EventStore`` that :func:`feed_store` uses."""

    def add_many(self, events: list[EventArgs]) -> int: ...

    def flush(self, timeout: float | None = None) -> bool: ...


def feed_store(
    store: BatchStore,
    events: Iterable[EventArgs],
    *,
    queue_capacity: int,
    chunk_size: int = 10_000,
    on_chunk: _ChunkCallback | None = None,
) -> tuple[int, int]:
    """Add ``events`` to ``store`` in batches without ever overflowing its queue.

    ``add`` never blocks and drops events when the queue between the caller and the Rust
    consumer is full, so the store is flushed before a batch could overflow the queue.
    Returns ``(accepted, rejected)``; ``rejected`` is 0 unless the store drops for another
    reason. ``on_chunk(total_so_far)`` is called after each batch (progress reporting).
    """
    if queue_capacity <= 0:
        raise ValueError("queue_capacity must be > 0")
    size = min(chunk_size, queue_capacity)
    accepted = rejected = in_queue = 0
    for chunk in chunked(events, size):
        if in_queue + len(chunk) > queue_capacity:
            store.flush()
            in_queue = 0
        taken = store.add_many(chunk)
        accepted += taken
        rejected += len(chunk) - taken
        in_queue += taken
        if on_chunk is not None:
            on_chunk(accepted + rejected)
    store.flush()
    return accepted, rejected
