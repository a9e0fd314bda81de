"""The background-thread helper every periodic thread uses (pyscheduler.common.background)."""

from __future__ import annotations

import threading
import time

from pyscheduler.common.background import BackgroundThread


def wait_for(predicate: object, timeout: float = 5.0) -> bool:
    assert callable(predicate)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.005)
    return bool(predicate())


def test_runs_at_once_then_every_interval_and_wakes_early() -> None:
    calls: list[float] = []
    bg = BackgroundThread("t-interval", lambda: calls.append(time.monotonic()) and None, interval=30.0)
    bg.start()
    try:
        assert wait_for(lambda: len(calls) == 1)
        time.sleep(0.05)
        assert len(calls) == 1  # the next one waits for the 30 s interval...
        bg.wake()
        assert wait_for(lambda: len(calls) == 2)  # ...or a wake-up
        assert threading.current_thread().name != "t-interval"
        assert any(t.name == "t-interval" for t in threading.enumerate())
    finally:
        assert bg.stop(timeout=2.0)
    assert not bg.running and not any(t.name == "t-interval" for t in threading.enumerate())


def test_step_returning_true_runs_again_without_waiting() -> None:
    count = 0

    def step() -> bool:
        nonlocal count
        count += 1
        return count < 50

    bg = BackgroundThread("t-again", step, interval=30.0)
    bg.start()
    try:
        assert wait_for(lambda: count == 50, timeout=2.0)
    finally:
        bg.stop()


def test_a_failing_step_is_logged_counted_and_the_thread_goes_on(caplog: object) -> None:
    count = 0

    def step() -> None:
        nonlocal count
        count += 1
        if count == 1:
            raise RuntimeError("boom")

    bg = BackgroundThread("t-fail", step, interval=0.01)
    bg.start()
    try:
        assert wait_for(lambda: count >= 3)
        assert bg.errors == 1 and bg.last_error == "RuntimeError: boom"
        assert bg.alive
    finally:
        bg.stop()


def test_first_delay_and_one_shot() -> None:
    calls: list[float] = []
    started = time.monotonic()
    bg = BackgroundThread("t-once", lambda: calls.append(time.monotonic()) and None, interval=0, first_delay=0.1)
    bg.start()
    assert wait_for(lambda: not bg.alive)
    assert len(calls) == 1 and calls[0] - started >= 0.09
    assert bg.stop()


def test_stop_is_prompt_idempotent_runs_on_stop_once_and_restarts() -> None:
    stopped: list[int] = []
    bg = BackgroundThread("t-stop", lambda: None, interval=60.0, first_delay=60.0, on_stop=lambda: stopped.append(1))
    bg.start()
    bg.start()  # a no-op while running
    began = time.monotonic()
    assert bg.stop(timeout=2.0)
    assert time.monotonic() - began < 1.0  # the 60 s sleep is cut short
    assert bg.stop() and stopped == [1]  # the second stop does nothing
    calls: list[int] = []
    again = BackgroundThread("t-restart", lambda: calls.append(1) and None, interval=60.0)
    again.start()
    assert wait_for(lambda: calls == [1])
    again.stop()
    again.start()
    assert wait_for(lambda: calls == [1, 1])
    again.stop()


def test_stop_times_out_on_a_stuck_step_and_says_so() -> None:
    release = threading.Event()
    bg = BackgroundThread("t-stuck", lambda: release.wait(5.0) and None, interval=60.0)
    bg.start()
    time.sleep(0.05)
    assert bg.stop(timeout=0.1) is False
    release.set()


def test_stopping_tells_a_long_step_to_return() -> None:
    seen = threading.Event()
    holder: list[BackgroundThread] = []

    def step() -> None:
        while not holder[0].stopping:
            time.sleep(0.005)
        seen.set()

    bg = BackgroundThread("t-long", step, interval=60.0)
    holder.append(bg)
    bg.start()
    time.sleep(0.05)
    assert bg.stop(timeout=2.0)
    assert seen.is_set()
