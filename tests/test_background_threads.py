"""Every periodic thread runs on the one helper (pyscheduler.common.background) and stops cleanly:
promptly, leaving no thread of its name behind, and a failing step does not end it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from rm_helpers import World, res

from pyscheduler.events.publisher import ShimPublisher
from pyscheduler.events.request_store import RequestEventStore
from pyscheduler.config.loader import DEFAULT_CONFIG
from pyscheduler.rmproxy.proxy import RMProxy
from pyscheduler.scheduler.health_checker import HealthChecker
from pyscheduler.scheduler.history import History
from pyscheduler.scheduler.loop import Scheduler
from pyscheduler.si.events import EventChangeDetail, EventChangeType, EventRecord, EventRecordType
from pyscheduler_web.demo import DemoRM, DemoSettings


def _alive(name: str) -> bool:
    return any(t.name == name and t.is_alive() for t in threading.enumerate())


def _wait(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.005)
    return predicate()


def _stops_promptly(name: str, stop: Callable[[], object]) -> None:
    assert _wait(lambda: _alive(name)), f"{name} never started"
    began = time.monotonic()
    stop()
    assert time.monotonic() - began < 1.0, f"{name} took long to stop"
    assert not _alive(name), f"{name} is still running"


def test_scheduling_loop() -> None:
    world = World()
    world.add_node("n1")
    world.add_app("app-1", "root.a")
    scheduler = Scheduler(world.context, idle_interval=30.0)
    scheduler.start()
    world.ask("k1", "app-1", res(memory=10))
    # Woken by the update, not by the 30 s idle interval.
    assert _wait(lambda: "k1" in world.app("app-1").allocations)
    _stops_promptly("pyscheduler-scheduling", scheduler.stop)
    assert not scheduler.running


def test_history_sampler_survives_a_failing_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    world = World()
    history = History(world.context, world.clock, interval=0.01)
    calls = 0
    original = history.sample

    def flaky() -> tuple[int, int, int]:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("a broken sample")
        return original()

    monkeypatch.setattr(history, "sample", flaky)
    history.start()
    assert _wait(lambda: len(history) >= 2)
    _stops_promptly("pyscheduler-history", history.stop)


def test_event_publisher_publishes_once_more_on_stop() -> None:
    store = RequestEventStore(10)
    sent: list[int] = []

    class Sink:
        def send_event(self, events: object) -> None:
            sent.append(len(events))  # type: ignore[arg-type]

    publisher = ShimPublisher(store, lambda: Sink(), interval=60.0)
    publisher.start()
    store.store(EventRecord(EventRecordType.REQUEST, EventChangeType.NONE, EventChangeDetail.DETAILS_NONE, "k", "a", "m", 1, {}))
    _stops_promptly("pyscheduler-event-publisher", publisher.stop)
    assert sent == [1]  # the 60 s interval never came: the last publication on stop sent it


def test_health_checker() -> None:
    world = World()
    checker = HealthChecker(world.context, None, interval=60.0)
    assert world.context.health_checker is checker
    checker.start()
    assert _wait(lambda: checker.last is not None)
    _stops_promptly("pyscheduler-health", checker.stop)


def test_demo_rm() -> None:
    proxy = RMProxy()
    demo = DemoRM(proxy, DEFAULT_CONFIG, DemoSettings(tick=0.01, arrival_interval=0.01))
    demo.start()
    assert _wait(lambda: demo.submitted > 0)
    _stops_promptly("pyscheduler-demo-rm", demo.stop)
    proxy.stop()
