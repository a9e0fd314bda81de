"""The scheduling loop thread: started, woken by RM updates, allocations reach the RM through
its callback, and stop() ends it cleanly. Every wait is bounded (RecordingRM.wait_for_*)."""

from __future__ import annotations

import threading
import time

import pytest
from scheduling_helpers import Cluster, clusters  # noqa: F401

from pyscheduler.testing.recording import WaitTimeout
from pyscheduler.scheduler.loop import Scheduler

THREAD_NAME = "pyscheduler-scheduling"


def _loop_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == THREAD_NAME]


def _threaded(clusters, idle_interval: float) -> Cluster:
    c = clusters()
    # The idle interval is long: only the wake-up on RM updates can make it schedule in time.
    c.scheduler = Scheduler(c.context, idle_interval=idle_interval)
    return c


def test_the_loop_schedules_on_rm_updates_and_stops_cleanly(clusters) -> None:
    before = len(_loop_threads())
    c = _threaded(clusters, idle_interval=60.0)
    c.scheduler.start()
    assert c.scheduler.running
    assert len(_loop_threads()) == before + 1
    c.add_nodes(2)
    c.add_app("app-1")
    keys = c.asks("app-1", 12)
    # All twelve arrive: the update woke the loop and each placement re-ran it at once.
    allocations = c.rm.wait_for_allocations(12, timeout=5.0)
    assert set(allocations) == set(keys)
    assert c.scheduler.allocations == 12
    # More work later: another update wakes it again.
    c.ask("late", "app-1")
    assert c.rm.wait_for_allocation("late", timeout=5.0).node_id in ("node-00", "node-01")
    started = time.monotonic()
    c.scheduler.stop()
    assert time.monotonic() - started < 5.0
    assert not c.scheduler.running
    assert len(_loop_threads()) == before
    # Stopped: nothing is placed any more.
    c.ask("after-stop", "app-1")
    with pytest.raises(WaitTimeout):
        c.rm.wait_for_allocation("after-stop", timeout=0.3)
    assert c.scheduler.errors == 0
    c.assert_healthy()


def test_the_loop_can_restart_and_stop_is_idempotent(clusters) -> None:
    before = len(_loop_threads())
    c = _threaded(clusters, idle_interval=60.0)
    c.scheduler.stop()  # never started: nothing to do
    c.scheduler.start()
    c.scheduler.start()  # already running: still one thread
    assert len(_loop_threads()) == before + 1
    c.add_nodes(1)
    c.add_app("app-1")
    c.ask("k1", "app-1")
    c.rm.wait_for_allocation("k1", timeout=5.0)
    c.scheduler.stop()
    c.scheduler.stop()
    assert len(_loop_threads()) == before
    c.scheduler.start()
    c.ask("k2", "app-1")
    c.rm.wait_for_allocation("k2", timeout=5.0)
    c.scheduler.stop()
    assert not c.scheduler.running and len(_loop_threads()) == before
    c.assert_healthy()


def test_the_idle_loop_fires_timers_without_rm_updates(clusters) -> None:
    # No RM update after the release: only the idle cycles (every 50 ms here) fire the
    # completing timer once the manual clock has moved past it.
    c = _threaded(clusters, idle_interval=0.05)
    c.add_nodes(1)
    c.add_app("app-1")
    c.ask("k1", "app-1")
    c.scheduler.start()
    c.rm.wait_for_allocation("k1", timeout=5.0)
    c.release("app-1", "k1")
    c.rm.wait_for_app_state("app-1", "Completing", timeout=5.0)
    assert c.rm.app_state("app-1") == "Completing"
    c.advance(30)
    c.rm.wait_for_app_state("app-1", "Completed", timeout=5.0)
    c.scheduler.stop()
    assert c.rm.app_states("app-1") == ["Accepted", "Running", "Completing", "Completed"]
    c.assert_healthy()
