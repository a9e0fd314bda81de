"""Thread-safety of the event system, through its real entry points.

Several Python threads produce, read (batch body, NDJSON, ids), subscribe, resize and reload
at once; afterwards no event id may be lost, duplicated or out of order. Every loop is bounded
in count and in time, every join has a timeout, and waits are for conditions, not sleeps.
"""

from __future__ import annotations

import faulthandler
import json
import sys
import threading
import time
from collections.abc import Callable, Sequence

import pytest

from pyscheduler._native import EventStore
from pyscheduler.config.event_settings import EventSettings

pytestmark = pytest.mark.timeout(60)

#: A test that has not finished after this long is deadlocked: see `deadlock_watchdog`.
DEADLOCK_SECONDS = 30

REQUEST, APP = 1, 2
NONE, SET = 0, 1
APP_RUNNING = 206

CLOSED_SLOW = "Event stream was closed by the producer: the consumer fell behind by more than its buffer"


@pytest.fixture(autouse=True)
def deadlock_watchdog(request):
    """Aborts the run with every thread's traceback if a test deadlocks.

    pytest-timeout cannot end a test whose threads are stuck waiting for the GIL (its handler
    needs the GIL too); faulthandler's watchdog is a C thread that does not. The traceback goes
    to the terminal's stderr as saved by pytest's faulthandler plugin (fd 2 is captured).
    """
    out = sys.__stderr__
    try:
        from _pytest.faulthandler import fault_handler_stderr_fd_key

        out = request.config.stash[fault_handler_stderr_fd_key]
    except (ImportError, KeyError):
        pass
    faulthandler.dump_traceback_later(DEADLOCK_SECONDS, exit=True, file=out)
    yield
    faulthandler.cancel_dump_traceback_later()


def start_threads(targets: Sequence[Callable[[], None]]) -> tuple[list[threading.Thread], list[BaseException]]:
    """Starts the targets in daemon threads that record (rather than lose) their failures."""
    errors: list[BaseException] = []

    def wrap(fn: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                fn()
            except BaseException as exc:  # noqa: BLE001 - reported in the main thread
                errors.append(exc)

        return run

    threads = [threading.Thread(target=wrap(t), daemon=True) for t in targets]
    for t in threads:
        t.start()
    return threads, errors


def join_threads(threads: list[threading.Thread], errors: list[BaseException], timeout: float) -> None:
    """Joins with one overall timeout, then re-raises the first failure of any thread."""
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    assert not [t for t in threads if t.is_alive()], "threads did not finish in time"
    if errors:
        raise errors[0]


def run_threads(targets: Sequence[Callable[[], None]], timeout: float = 15.0) -> None:
    """Runs the targets in threads and waits for all of them (bounded)."""
    threads, errors = start_threads(targets)
    join_threads(threads, errors, timeout)


def read_available(sub) -> bytes:  # type: ignore[no-untyped-def]
    out = b""
    for _ in range(100_000):
        chunk = sub.next(max_events=10_000, timeout=0.0)
        if not chunk:
            break
        out += chunk
    return out


def wait_until(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.001)
    return condition()


def check_per_producer_order(lines: list[dict]) -> None:
    """Within any window of consecutive ids, each producer's sequence numbers increase."""
    last: dict[str, int] = {}
    for rec in lines:
        obj, ts = rec["objectID"], rec["timestampNano"]
        assert ts > last.get(obj, -1), (obj, ts, last.get(obj))
        last[obj] = ts


# --------------------------------------------------------------------------------------------


def test_hammer_producers_readers_and_a_live_subscriber(native_event_store_factory):
    producers, per_producer, readers = 4, 20_000, 2
    total = producers * per_producer
    store = native_event_store_factory(100_000, 100_000)
    sub = store.subscribe_recent(0, capacity=total + 1)
    gate = threading.Barrier(producers + readers + 1)
    producers_done = threading.Event()
    rejected = [0] * producers
    received: list[bytes] = []
    reader_iterations = [0] * readers
    partial_views = [0] * readers  # reads that saw the ring while it was still being filled

    def producer(t: int) -> Callable[[], None]:
        def run() -> None:
            gate.wait(5)
            obj = f"producer-{t}"
            if t == 0:  # one producer uses the batch entry point
                for c in range(0, per_producer, 500):
                    batch = [(APP, SET, APP_RUNNING, t * 1_000_000 + i + 1, obj) for i in range(c, c + 500)]
                    rejected[t] += len(batch) - store.add_many(batch)
                    time.sleep(0)  # let the other threads in (GIL)
            else:
                for i in range(per_producer):
                    if not store.add(APP, SET, APP_RUNNING, t * 1_000_000 + i + 1, obj):
                        rejected[t] += 1
                    if i % 1000 == 999:
                        time.sleep(0)

        return run

    def reader(k: int) -> Callable[[], None]:
        def run() -> None:
            gate.wait(5)
            deadline = time.monotonic() + 8.0
            last_next = 0
            step = 0
            while (not producers_done.is_set() or step < 20) and step < 20_000 and time.monotonic() < deadline:
                step += 1
                nxt = store.next_id()
                assert nxt >= last_next
                last_next = nxt
                partial_views[k] += 0 < nxt < total
                lo, hi = store.id_range()
                assert lo <= hi
                body = json.loads(store.batch_body("uuid-k", lo, 300))
                assert body["InstanceUUID"] == "uuid-k"
                assert body["LowestID"] <= body["HighestID"]
                if body["EventRecords"] is None:
                    assert body["HighestID"] == 0
                else:
                    assert 1 <= len(body["EventRecords"]) <= 300
                    check_per_producer_order(body["EventRecords"])
                start = (hi * (step % 7)) // 7
                chunk = store.ndjson(start, 200)
                lines = [json.loads(x) for x in chunk.splitlines()]
                assert len(lines) <= 200
                check_per_producer_order(lines)
                ids = [r[0] for r in store.records(start, 100)]
                assert ids == list(range(start, start + len(ids)))
            reader_iterations[k] = step

        return run

    def subscriber() -> None:
        deadline = time.monotonic() + 9.0
        count = 0
        while count < total and time.monotonic() < deadline:
            chunk = sub.next(max_events=5000, timeout=0.5)
            assert chunk is not None, sub.closed_reason
            received.append(chunk)
            count += chunk.count(b"\n")

    background, errors = start_threads([reader(k) for k in range(readers)] + [subscriber])
    run_threads([producer(t) for t in range(producers)] + [lambda: gate.wait(5)], timeout=10.0)
    producers_done.set()
    assert store.flush(10.0)
    join_threads(background, errors, timeout=10.0)
    assert all(n >= 20 for n in reader_iterations), reader_iterations
    assert sum(partial_views) > 0, "no read overlapped with production"

    assert rejected == [0] * producers  # the queue (100k) never filled
    stats = store.stats()
    assert (stats["accepted"], stats["dropped"], stats["stored"]) == (total, 0, total)
    records = store.records(0, total)
    assert [r[0] for r in records] == list(range(total)), "ids are dense 0..N-1 in order"
    for t in range(producers):
        mine = [r[4] for r in records if r[5] == f"producer-{t}"]
        assert mine == [t * 1_000_000 + i + 1 for i in range(per_producer)], f"producer {t} sequence"
    # The live subscriber saw exactly the full sequence: no loss, no duplicate, same order.
    assert b"".join(received) == store.ndjson(0, total)
    assert sub.closed_reason is None


def test_hammer_readers_ran_concurrently(native_event_store_factory):
    """A reader can read while producers are mid-way: it sees a ring that is still growing.

    The producer hands over at half-way and waits for the reader's read, so the interleaving
    is certain rather than left to the GIL's switch interval.
    """
    store = native_event_store_factory(100_000, 100_000)
    half_added, half_read = threading.Event(), threading.Event()
    seen_highest: list[int] = []

    def producer() -> None:
        for i in range(60_000):
            if i == 30_000:
                half_added.set()
                assert half_read.wait(5.0), "the reader never read"
            store.add(APP, SET, APP_RUNNING, i + 1, "p")

    def reader() -> None:
        assert half_added.wait(5.0)
        seen_highest.append(json.loads(store.batch_body("u", 0, 50))["HighestID"])
        half_read.set()

    run_threads([producer, reader], timeout=10.0)
    assert store.flush(5.0)
    assert seen_highest and seen_highest[0] < 30_000, "read while only the first half was added"
    assert json.loads(store.batch_body("u", 0, 50))["HighestID"] == 59_999
    assert [r[4] for r in store.records(0, 60_000)] == list(range(1, 60_001))


def test_waiting_subscriber_releases_the_gil(native_event_store_factory):
    store = native_event_store_factory(100)
    sub = store.subscribe_recent(0, 100)
    result: dict[str, object] = {}
    entered = threading.Event()
    count = [0]
    stop = threading.Event()

    def waiter() -> None:
        entered.set()
        t0 = time.monotonic()
        result["chunk"] = sub.next(max_events=10, timeout=2.0)
        result["returned_at"] = time.monotonic()
        result["waited"] = time.monotonic() - t0

    def counter() -> None:
        while not stop.is_set() and count[0] < 10**9:
            count[0] += 1

    w = threading.Thread(target=waiter, daemon=True)
    c = threading.Thread(target=counter, daemon=True)
    w.start()
    assert entered.wait(2.0)
    c.start()
    t_entered = time.monotonic()
    sampled = None
    # Bounded wait for the condition "the counter kept counting for 0.3 s while next() waits".
    while time.monotonic() < t_entered + 1.5:
        now = time.monotonic()
        if sampled is None and now >= t_entered + 0.1:
            sampled = count[0]
        if sampled is not None and now >= t_entered + 0.4 and count[0] > sampled + 1000:
            break
        time.sleep(0.005)
    progressed = count[0] - (sampled if sampled is not None else count[0])
    assert "chunk" not in result, "next() returned before any event arrived (or held the GIL until its timeout)"
    assert progressed > 1000, f"another Python thread could not run while next() waited ({progressed})"
    added_at = time.monotonic()
    assert store.add(APP, SET, APP_RUNNING, 77, "app-1")
    w.join(2.5)
    stop.set()
    c.join(2.0)
    assert not w.is_alive() and not c.is_alive()
    assert result["chunk"] == (
        b'{"type":2,"objectID":"app-1","timestampNano":77,"eventChangeType":1,"eventChangeDetail":206,"resource":{}}\n'
    )
    assert float(result["returned_at"]) - added_at < 1.0, "the blocked next() did not return as soon as the event arrived"  # type: ignore[arg-type]
    assert float(result["waited"]) < 1.9  # type: ignore[arg-type]


def test_subscriptions_opened_during_production_have_no_gap_or_duplicate(native_event_store_factory):
    n = 60_000
    store = native_event_store_factory(100_000, 100_000)
    opened: list[tuple[object, int]] = []

    def producer() -> None:
        for c in range(0, n, 200):
            for i in range(c, c + 200):
                assert store.add(APP, SET, APP_RUNNING, i + 1, "app")
            time.sleep(0.0005)  # pacing, so subscriptions open at many points of the stream

    def opener() -> None:
        deadline = time.monotonic() + 8.0
        last = -10_000
        k = 0
        while len(opened) < 15 and time.monotonic() < deadline and store.next_id() < n:
            nxt = store.next_id()
            if nxt - last < 2000:
                time.sleep(0.001)
                continue
            last = nxt
            if k % 3 == 0:
                sub = store.subscribe_recent(0, n)
            elif k % 3 == 1:
                sub = store.subscribe_recent(700, n)
            else:
                sub = store.subscribe_from(max(0, nxt - 250), n)
            opened.append((sub, sub.next_id))
            k += 1

    run_threads([producer, opener], timeout=10.0)
    assert store.flush(5.0)
    assert len(opened) >= 3, "too few subscriptions were opened while events were produced"
    for sub, start in opened:
        got = read_available(sub)
        assert got == store.ndjson(start, n), f"subscription from id {start}"
        assert sub.closed_reason is None  # type: ignore[attr-defined]


def test_slow_subscribers_do_not_slow_the_producer_or_other_subscribers(native_event_store_factory):
    n = 20_000
    store = native_event_store_factory(100_000, 100_000)
    slow = [store.subscribe_recent(0, 100) for _ in range(50)]
    fast = store.subscribe_recent(0, n)
    received: list[bytes] = []
    accepted = [0]
    elapsed = [0.0]

    def reader() -> None:
        deadline = time.monotonic() + 8.0
        count = 0
        while count < n and time.monotonic() < deadline:
            chunk = fast.next(max_events=5000, timeout=0.5)
            assert chunk is not None, fast.closed_reason
            received.append(chunk)
            count += chunk.count(b"\n")

    def producer() -> None:
        started = time.monotonic()
        for i in range(n):
            accepted[0] += store.add(APP, SET, APP_RUNNING, i + 1, "app")
        elapsed[0] = time.monotonic() - started

    run_threads([reader, producer], timeout=10.0)
    assert store.flush(5.0)
    assert accepted[0] == n, "the producer was refused while slow subscribers were open"
    assert elapsed[0] < 3.0, f"producing {n} events took {elapsed[0]:.2f} s with slow subscribers open"
    assert b"".join(received) == store.ndjson(0, n)
    assert fast.closed_reason is None
    assert all(s.closed_reason == CLOSED_SLOW for s in slow)
    assert all(s.next(10, 0.0) is None for s in slow)
    stats = store.stats()
    assert (stats["slow_closed"], stats["subscribers"]) == (50, 1)


def test_resize_while_producing_keeps_ids_dense_and_never_reused(native_event_store_factory):
    n = 40_000
    store = native_event_store_factory(50_000, 100_000)
    sizes = [1000, 50, 20_000, 0, 7, 50_000, 3, 0, 30_000]
    observed: list[tuple[int, int, int]] = []

    def producer() -> None:
        for c in range(0, n, 100):
            for i in range(c, c + 100):
                assert store.add(APP, SET, APP_RUNNING, i + 1, "app")
            time.sleep(0.0005)  # pacing, so the resizes land while events are produced

    def resizer() -> None:
        for size in sizes:
            target = min(store.stats()["accepted"] + 1500, n)
            wait_until(lambda: store.stats()["accepted"] >= target, 3.0)
            store.resize(size)
            lo, hi = store.id_range()
            observed.append((size, lo, hi))
            assert store.capacity == size
            assert len(store) <= size
            assert lo <= hi

    run_threads([producer, resizer], timeout=15.0)
    assert store.flush(5.0)
    stats = store.stats()
    assert stats["accepted"] == n
    assert stats["stored"] + stats["not_stored"] == n
    assert store.next_id() == stats["stored"], "an id was used by an event that was not stored"
    lo = store.lowest_id()
    records = store.records(lo, 10**9)
    assert len(records) == len(store) <= 30_000
    assert [r[0] for r in records] == list(range(lo, lo + len(records)))
    stamps = [r[4] for r in records]
    assert all(a < b for a, b in zip(stamps, stamps[1:])), "events out of order after resizes"
    # The id range only ever moves forward, and the resizes did overlap with production.
    his = [hi for _, _, hi in observed]
    assert his == sorted(his)
    assert observed[len(sizes) // 2][2] < n - 1, observed


def test_reload_while_producing(event_system_factory):
    n = 30_000
    es = event_system_factory(EventSettings(ring_buffer_capacity=100_000))
    kept = [0]
    attempts = [0]

    def producer() -> None:
        for c in range(0, n, 100):
            for i in range(c, c + 100):
                kept[0] += es.add(APP, SET, APP_RUNNING, "app", timestamp_ns=i + 1)
            attempts[0] = c + 100
            time.sleep(0)

    def reloader() -> None:
        for k in range(20):
            es.reload({"event.trackingEnabled": "false" if k % 2 == 0 else "true"})
            target = attempts[0] + 700
            wait_until(lambda: attempts[0] >= min(target, n), 2.0)  # the producer ran on
        es.reload({"event.trackingEnabled": "true"})

    run_threads([producer, reloader], timeout=10.0)
    assert es.flush(5.0)
    stats = es.stats()
    assert 0 < kept[0] < n, "the reloads did not overlap with production"
    assert stats.stored == kept[0] == es.next_id()
    assert stats.created == kept[0] and stats.dropped == 0
    records = es.records(0, n)
    assert [r[0] for r in records] == list(range(kept[0]))
    stamps = [r[4] for r in records]
    assert all(a < b for a, b in zip(stamps, stamps[1:]))


_REQUEST_THREADS_SCRIPT = r"""
import json, threading
from pyscheduler.config.event_settings import EventSettings
from pyscheduler.events import EventSystem

THREADS, PER_THREAD = 4, 2500
es = EventSystem(
    EventSettings(request_events_enabled=True, request_store_capacity=THREADS * PER_THREAD),
    publish_interval=0.005,
)
sent, lock = [], threading.Lock()

class Sink:
    def send_event(self, events):
        with lock:
            sent.extend(events)

es.set_callback(Sink())
es.start()
refused = [0] * THREADS

def produce(t):
    for i in range(PER_THREAD):
        if not es.add(1, 0, 0, f"ask-{t}", "app", f"m{i}", timestamp_ns=i + 1):
            refused[t] += 1

threads = [threading.Thread(target=produce, args=(t,)) for t in range(THREADS)]
for t in threads:
    t.start()
for t in threads:
    t.join()
es.flush(5.0)
es.stop()  # the last publication
stats = es.stats()
print(json.dumps({
    "refused": refused,
    "sent": [[e.object_id, e.timestamp_ns] for e in sent],
    "stats": [stats.request_stored, stats.request_dropped, stats.published],
    "next_id": es.next_id(),
}))
"""


def test_request_events_from_many_threads_are_published_exactly_once():
    """Four threads add request events while the publisher runs: each is sent to the RM exactly
    once, in each thread's order, and none reaches the ring.

    Runs in a child process: a deadlock there (threads stuck on a lock while holding the GIL)
    becomes a clean failure here instead of hanging the whole test run.
    """
    import os
    import subprocess

    threads_, per_thread = 4, 2500
    env = dict(os.environ, PYTHONFAULTHANDLER="1")
    try:
        done = subprocess.run(
            [sys.executable, "-X", "faulthandler", "-c", _REQUEST_THREADS_SCRIPT],
            capture_output=True,
            text=True,
            timeout=20,
            env=env,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(
            "deadlock: 4 threads calling EventSystem.add with REQUEST/NONE events did not finish in 20 s "
            f"(stderr: {exc.stderr!r})"
        )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["refused"] == [0] * threads_
    assert len(result["sent"]) == threads_ * per_thread
    for t in range(threads_):
        assert [ts for obj, ts in result["sent"] if obj == f"ask-{t}"] == list(range(1, per_thread + 1))
    assert result["stats"] == [threads_ * per_thread, 0, threads_ * per_thread]
    assert result["next_id"] == 0  # none reached the ring


def test_store_is_usable_from_threads_while_it_stops(native_event_store_factory):
    store: EventStore = native_event_store_factory(100_000, 100_000)
    results = [0, 0]

    def producer() -> None:
        for i in range(50_000):
            if store.add(APP, SET, APP_RUNNING, i + 1, "app"):
                results[0] += 1
            else:
                results[1] += 1

    def stopper() -> None:
        wait_until(lambda: store.next_id() > 1000, 3.0)
        store.stop()

    run_threads([producer, stopper], timeout=10.0)
    stats = store.stats()
    assert stats["accepted"] == results[0]
    assert stats["dropped"] == results[1]
    assert stats["stored"] == results[0] == store.next_id(), "an accepted event was lost at stop"
    assert [r[4] for r in store.records(0, 50_000)] == list(range(1, results[0] + 1))


def test_one_subscription_read_from_two_threads_delivers_each_event_once(native_event_store_factory):
    """A Subscription is a shareable Python object (its reads release the GIL), so two threads
    may call ``next`` on it at once; together they must still see every event exactly once.
    A few rounds, as the two reads have to overlap for a double delivery to show."""
    n = 50_000
    store = native_event_store_factory(100_000, 100_000)
    assert store.add_many([(APP, SET, APP_RUNNING, i + 1, "app") for i in range(n)]) == n
    assert store.flush(5.0)
    for round_ in range(4):
        sub = store.subscribe_recent(n, n)
        chunks: list[list[bytes]] = [[], []]
        gate = threading.Barrier(2)

        def reader(k: int) -> Callable[[], None]:
            def run() -> None:
                gate.wait(5)
                for _ in range(n):  # bounded
                    chunk = sub.next(max_events=64, timeout=0.0)
                    if not chunk:
                        return
                    chunks[k].append(chunk)

            return run

        run_threads([reader(0), reader(1)], timeout=20.0)
        per_reader = [[json.loads(line)["timestampNano"] for c in part for line in c.splitlines()] for part in chunks]
        stamps = sorted(per_reader[0] + per_reader[1])
        duplicates = len(stamps) - len(set(stamps))
        assert duplicates == 0, f"round {round_}: {duplicates} events were delivered twice"
        assert stamps == list(range(1, n + 1))
        for mine in per_reader:  # each reader sees the events in order
            assert mine == sorted(mine)
        sub.close()
