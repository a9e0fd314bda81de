"""The shim's coalescing writer (k8s/pyscheduler_k8s/status_writer.py): one pending write per
key with the newest value, written off the caller's thread, a discarded key not written, a
failing write not stopping the others."""

from __future__ import annotations

import threading
import time

from pyscheduler_k8s.status_writer import CoalescingWriter


def test_a_key_submitted_again_before_its_write_is_written_once_with_the_newest_value() -> None:
    gate = threading.Event()
    written: list[tuple[str, int]] = []

    def write(key: str, value: int) -> None:
        gate.wait(5)
        written.append((key, value))

    writer: CoalescingWriter[int] = CoalescingWriter(write, name="t")
    writer.start(1)
    try:
        writer.submit("first", 0)  # taken by the thread, which waits at the gate
        deadline = time.monotonic() + 5
        while writer.pending and time.monotonic() < deadline:
            time.sleep(0.01)
        for value in range(1000):
            writer.submit("a", value)
            writer.submit("b", value)
        writer.submit("c", 1)
        writer.discard("c")
        assert writer.pending == 2  # bounded by keys, not by submissions
        gate.set()
        deadline = time.monotonic() + 5
        while len(written) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.05)
        assert written == [("first", 0), ("a", 999), ("b", 999)]
    finally:
        writer.stop()


def test_a_failing_write_does_not_stop_the_writer() -> None:
    done = threading.Event()

    def write(key: str, value: int) -> None:
        if key == "bad":
            raise RuntimeError("the API server said no")
        done.set()

    writer: CoalescingWriter[int] = CoalescingWriter(write, name="t")
    writer.start(1)
    try:
        writer.submit("bad", 1)
        writer.submit("good", 1)
        assert done.wait(5)
    finally:
        writer.stop()
    writer.submit("late", 1)  # after stop: ignored, nothing raised
    assert writer.pending == 0
