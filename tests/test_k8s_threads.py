"""The shim's thread shapes (pyscheduler_k8s.threads), on BackgroundThread: a queue pool handles
every item once, survives a failing one and stops promptly (or, asked to, drains what waits
within a bound); delayed calls run after their delay
and a stop cancels the ones not run yet; the backoff doubles up to its maximum."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from pyscheduler_k8s.threads import BACKOFF_FIRST, BACKOFF_MAX, DelayedCalls, QueuePool, backoff


def test_a_pool_handles_every_item_once_and_goes_on_after_a_failure(caplog: pytest.LogCaptureFixture) -> None:
    handled: list[int] = []
    done = threading.Event()

    def handle(item: int) -> None:
        if item == 3:
            raise RuntimeError("item 3 fails")
        handled.append(item)
        if len(handled) == 9:
            done.set()

    pool: QueuePool[int] = QueuePool("test-pool", 3, handle)
    for item in range(10):
        pool.put(item)  # queued before the threads start: handled once they do
    with caplog.at_level(logging.ERROR, logger="pyscheduler_k8s.threads"):
        pool.start()
        assert done.wait(5)
    started = time.monotonic()
    pool.stop()
    assert time.monotonic() - started < 2  # every thread woken by its marker, none waits its interval
    assert sorted(handled) == [0, 1, 2, 4, 5, 6, 7, 8, 9]
    assert any("test-pool: handling 3 failed" in r.getMessage() for r in caplog.records)
    assert not [t for t in threading.enumerate() if t.name.startswith("test-pool-")]
    pool.put(11)  # after a stop: dropped
    assert not pool.offer(12)


def test_a_bounded_pool_refuses_when_full_and_stops_with_items_waiting() -> None:
    taken, release = threading.Event(), threading.Event()

    def handle(item: int) -> None:
        taken.set()
        release.wait(5)

    pool: QueuePool[int] = QueuePool("test-bounded", 1, handle, maxsize=2)
    pool.start()
    assert pool.offer(1)
    assert taken.wait(5)  # the thread holds item 1: room for two more, not three
    assert pool.offer(2) and pool.offer(3)
    assert not pool.offer(4)
    release.set()
    pool.stop()
    assert not [t for t in threading.enumerate() if t.name.startswith("test-bounded-")]


def test_a_drained_stop_handles_what_waits_within_its_bound() -> None:
    """``stop(drain=...)``: the items queued are handled first (the events of the bindings
    done), up to the drain's bound; past it the rest is dropped."""
    handled: list[int] = []

    def handle(item: int) -> None:
        time.sleep(0.02)
        handled.append(item)

    pool: QueuePool[int] = QueuePool("test-drain", 1, handle)
    for item in range(10):
        pool.put(item)
    pool.start()
    pool.stop(drain=5.0)
    assert handled == list(range(10))
    slow: QueuePool[int] = QueuePool("test-drain-slow", 1, lambda item: time.sleep(0.1))
    for item in range(100):
        slow.put(item)
    slow.start()
    started = time.monotonic()
    slow.stop(drain=0.3)
    assert time.monotonic() - started < 1.5  # 0.3 s of draining, the item in hand, not 10 s
    assert not [t for t in threading.enumerate() if t.name.startswith("test-drain")]


def test_a_delayed_call_runs_after_its_delay_and_a_stop_cancels_the_rest() -> None:
    ran: list[str] = []
    calls = DelayedCalls("test-later")
    started = time.monotonic()
    calls.call_later(0.1, ran.append, "soon")
    calls.call_later(30, ran.append, "never")
    deadline = started + 5
    while not ran:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert ran == ["soon"] and time.monotonic() - started >= 0.1
    calls.stop()
    calls.call_later(0, ran.append, "after the stop")
    time.sleep(0.1)
    assert ran == ["soon"]
    assert not [t for t in threading.enumerate() if t.name.startswith("test-later-")]


def test_the_backoff_doubles_up_to_its_maximum() -> None:
    assert [backoff(n) for n in range(3)] == [BACKOFF_FIRST, 2 * BACKOFF_FIRST, 4 * BACKOFF_FIRST]
    assert backoff(40) == BACKOFF_MAX
