"""The context's update listeners, through the RM interface: every listener hears every RM update
and partition change, in registration order; removing one stops only that one; one that raises is
logged and neither stops the others nor fails the update; two scheduling loops on one context
both wake up. Every wait and thread is bounded in time."""

from __future__ import annotations

import gc
import logging
import threading
import time
import weakref
from collections.abc import Callable

import pytest
from rm_helpers import BASIC, TWO_PARTITIONS, World, world  # noqa: F401

from pyscheduler.si import messages as si
from pyscheduler.testing.recording import RecordingRM
from pyscheduler.scheduler.loop import Scheduler

#: How long a test waits for something another thread does before it fails.
WAIT_S = 5.0


def _wait_until(condition: Callable[[], bool], description: str, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout:g} s waiting for {description}"
        time.sleep(0.005)


def test_every_listener_hears_every_update_in_registration_order(world: World) -> None:
    heard: list[str] = []
    world.context.add_update_listener(lambda: heard.append("first"))
    world.context.add_update_listener(lambda: heard.append("second"))
    world.proxy.update_node(si.NodeRequest(rm_id=world.rm_id, nodes=()))
    assert heard == ["first", "second"]
    heard.clear()
    world.add_node("n1")
    # The partition's change and the end of the RM update: each tells both, in order.
    assert heard and heard == ["first", "second"] * (len(heard) // 2)


def test_a_removed_listener_is_not_called_again(world: World) -> None:
    heard: list[str] = []
    remove_first = world.context.add_update_listener(lambda: heard.append("first"))
    world.context.add_update_listener(lambda: heard.append("second"))
    remove_first()
    remove_first()  # removing twice is harmless and removes nothing else
    world.add_app("app-1")
    assert heard and set(heard) == {"second"}


def test_the_same_function_added_twice_is_removed_once_per_handle(world: World) -> None:
    heard: list[str] = []

    def listener() -> None:
        heard.append("called")

    remove_one = world.context.add_update_listener(listener)
    world.context.add_update_listener(listener)
    world.add_app("app-1")
    assert len(heard) == 2
    heard.clear()
    remove_one()
    world.add_app("app-2")
    assert len(heard) == 1


def test_a_failing_listener_neither_stops_the_others_nor_fails_the_update(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    heard: list[str] = []

    def broken() -> None:
        raise RuntimeError("listener bug")

    world.context.add_update_listener(broken)
    world.context.add_update_listener(lambda: heard.append("after"))
    with caplog.at_level(logging.ERROR, logger="pyscheduler.scheduler.context"):
        world.add_node("n1")
    assert world.rm.accepted_nodes == ["n1"] and "n1" in world.partition().nodes
    assert heard, "the listener after the failing one was not called"
    assert any("update listener" in r.getMessage() and r.exc_info for r in caplog.records)


def test_listeners_run_without_the_context_lock_even_when_partitions_are_removed() -> None:
    """Re-registration removes partitions holding nodes: every notification happens with the
    context's lock free (a listener that waits for another thread taking it would hang)."""
    w = World(TWO_PARTITIONS)
    try:
        w.add_node("n1")
        w.add_node("g1", **{si.NODE_PARTITION: "gpu"})
        w.add_app("app-1")
        w.allocate("k1", "app-1", "n1")
        lock_free: list[bool] = []

        def listener() -> None:
            def try_lock() -> None:
                acquired = w.context.lock.acquire(timeout=WAIT_S)
                if acquired:
                    w.context.lock.release()
                lock_free.append(acquired)

            other = threading.Thread(target=try_lock, name="lock-probe")
            other.start()
            other.join(WAIT_S + 1)
            assert not other.is_alive()

        w.context.add_update_listener(listener)
        w.register(BASIC, rm=RecordingRM())
        assert lock_free and all(lock_free), lock_free
    finally:
        w.close()


def test_two_scheduling_loops_on_one_context_both_wake_on_rm_updates(world: World) -> None:
    # The idle interval is long: only the wake-up on the update can run a second cycle in time.
    loops = [Scheduler(world.context, idle_interval=60.0) for _ in range(2)]
    try:
        for loop in loops:
            loop.start()
        # The start runs one cycle each; after it, each loop sleeps until woken.
        _wait_until(lambda: all(loop.cycles >= 1 for loop in loops), "the first cycle of both loops")
        before = [loop.cycles for loop in loops]
        world.add_node("n1")
        _wait_until(
            lambda: all(loop.cycles > seen for loop, seen in zip(loops, before, strict=True)),
            "both loops to run a cycle after the RM update",
        )
    finally:
        for loop in loops:
            loop.stop(timeout=WAIT_S)
    assert not any(loop.running for loop in loops)


def test_a_stopped_loop_is_no_longer_a_listener(world: World) -> None:
    loop = Scheduler(world.context, idle_interval=60.0)
    loop.start()
    loop.stop(timeout=WAIT_S)
    # Nothing in the context refers to the stopped loop any more: it can be collected.
    collected = weakref.ref(loop)
    del loop
    gc.collect()
    assert collected() is None
    world.add_node("n1")
    assert world.rm.accepted_nodes == ["n1"]
