"""common.gc_pause: pauses of the cyclic collector nest across threads and restore what was."""

from __future__ import annotations

import gc
import threading

from pyscheduler.common.gc_pause import collector_paused


def test_nested_pauses_enable_the_collector_after_the_last() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled(), "the outer pause still holds"
    assert gc.isenabled()


def test_pauses_of_two_threads_overlap() -> None:
    entered, release = threading.Event(), threading.Event()

    def other() -> None:
        with collector_paused():
            entered.set()
            release.wait(10)

    thread = threading.Thread(target=other)
    with collector_paused():
        thread.start()
        assert entered.wait(10)
    assert not gc.isenabled(), "the other thread's pause is still running"
    release.set()
    thread.join(10)
    assert gc.isenabled()


def test_a_collector_disabled_before_stays_disabled() -> None:
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_an_exception_ends_the_pause() -> None:
    try:
        with collector_paused():
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert gc.isenabled()
