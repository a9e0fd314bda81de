"""REST answer builders yield to a busy scheduling loop (pyscheduler.scheduler.read_pacing)."""

from __future__ import annotations

import threading
import time

import pytest
from rm_helpers import World, res

from pyscheduler import dao
from pyscheduler.scheduler.loop import Scheduler
from pyscheduler.scheduler.read_pacing import ReadPacer


def _work(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_an_idle_scheduler_costs_the_builder_nothing() -> None:
    pacer = ReadPacer(duty=0.1, slice_seconds=0.001)
    with pacer.building() as tick:
        for _ in range(20):
            _work(0.001)
            tick()
    assert pacer.yielded_seconds == 0.0


def test_a_busy_scheduler_gets_the_time_the_builder_yields() -> None:
    pacer = ReadPacer(duty=0.25, slice_seconds=0.002)
    pacer.scheduler_busy = True
    started = time.perf_counter()
    with pacer.building() as tick:
        for _ in range(20):
            _work(0.001)
            tick()
    elapsed = time.perf_counter() - started
    # 20 ms of work at a 25% duty: it sleeps about three times as long as it works.
    assert pacer.yielded_seconds >= 0.05
    assert elapsed >= 0.07


def test_an_answer_may_ask_for_a_smaller_share_never_a_larger_one() -> None:
    """``building(duty)``: the smaller of the pacer's share and the answer's (why answers hold
    the partition's lock while they build: 5 %)."""
    def yielded(pacer_duty: float, answer_duty: float) -> float:
        pacer = ReadPacer(duty=pacer_duty, slice_seconds=0.002)
        pacer.scheduler_busy = True
        with pacer.building(answer_duty) as tick:
            for _ in range(10):
                _work(0.001)
                tick()
        return pacer.yielded_seconds

    # 10 ms of work: at 25 % it sleeps ~30 ms; at 10 %, ~90 ms; asking 50 % of a 25 % pacer, ~30 ms.
    assert yielded(0.25, 0.10) >= 0.08
    assert 0.025 <= yielded(0.25, 0.50) < 0.08


def test_one_builder_at_a_time() -> None:
    pacer = ReadPacer()
    inside = 0
    most = 0
    guard = threading.Lock()

    def build() -> None:
        nonlocal inside, most
        with pacer.building():
            with guard:
                inside += 1
                most = max(most, inside)
            time.sleep(0.01)
            with guard:
                inside -= 1

    threads = [threading.Thread(target=build) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert most == 1


def test_duty_is_checked() -> None:
    with pytest.raises(ValueError, match="duty"):
        ReadPacer(duty=0)


def test_the_loop_marks_itself_busy_while_it_places_work_and_answers_stay_exact() -> None:
    world = World()
    for i in range(4):
        world.add_node(f"n{i}", memory=1_000_000)
    world.add_app("app-1", "root.a")
    # Work waiting before the loop starts: it places it back to back, busy all along.
    asks = 2000
    for i in range(asks):
        world.ask(f"k{i}", "app-1", res(memory=10))
    pacer = world.context.read_pacer
    seen_busy = threading.Event()
    scheduler = Scheduler(world.context)

    def watch() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not seen_busy.is_set():
            if pacer.scheduler_busy:
                seen_busy.set()
            time.sleep(0.0005)

    watcher = threading.Thread(target=watch)
    watcher.start()
    scheduler.start()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(world.app("app-1").allocations) < asks:
            # REST reads while the loop places work: exact answers, never an error.
            nodes = dao.nodes(world.context, "default")
            assert [n["nodeID"] for n in nodes] == ["n0", "n1", "n2", "n3"]
            time.sleep(0.001)
        assert len(world.app("app-1").allocations) == asks
        # Once everything is placed, the next cycle places nothing: the loop is idle again.
        assert _wait_until(lambda: not pacer.scheduler_busy)
    finally:
        scheduler.stop()
        watcher.join(30)
    assert seen_busy.is_set()
    assert not pacer.scheduler_busy  # a stopped loop is not busy
    allocated = sum(n["allocated"].get("memory", 0) for n in dao.nodes(world.context, "default"))
    assert allocated == asks * 10


def _wait_until(predicate: object, timeout: float = 10.0) -> bool:
    assert callable(predicate)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.005)
    return bool(predicate())
