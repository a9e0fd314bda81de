"""``EventStore.open_stream``: the stream writer through the native module's own entry point,
over real loopback sockets (the HTTP side is in test_events_stream.py; the writer's
own cases, such as resuming behind its shared blocks, in cargo tests)."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from pyscheduler._native import EventStore, EventSystemStoppedError, StreamOutcome
from pyscheduler_web.streams import RELEASED_DESCRIPTION, closing_line
from web_helpers import ChunkedReader

OBJECT = "app-stream"
FIRST = b'{"InstanceUUID":"test"}\n'


def add(store: EventStore, n: int, first: int = 1) -> None:
    for i in range(first, first + n):
        store.add(2, 1, 204, i, OBJECT)
    assert store.flush(10.0)


def test_an_open_stream_gets_its_first_line_and_live_events_and_ends_with_the_closing_line(
    loopback_pair: tuple[socket.socket, socket.socket],
) -> None:
    server, client = loopback_pair
    store = EventStore(10_000, 10_000)
    sub = store.subscribe_recent(0)
    ticket = store.open_stream(sub, server.fileno(), FIRST)
    assert store.stats()["attached_streams"] == 1
    assert ticket.wait(0.05) is None and ticket.outcome is None
    add(store, 1500)
    reader = ChunkedReader(client)
    reader.read(1501)
    assert reader.lines[0] == FIRST
    assert [e["timestampNano"] for e in reader.events()] == list(range(1, 1501))
    assert {e["objectID"] for e in reader.events()} == {OBJECT}
    assert ticket.events_written == 1500
    ticket.release()
    assert ticket.wait(5.0) == StreamOutcome.RELEASED
    assert ticket.closed_reason is None
    # The writer's closing line is the one the web layer re-exports (defined once, in Rust).
    last = reader.read(1502)[-1]
    assert last == closing_line(RELEASED_DESCRIPTION)
    assert json.loads(last) == {
        "status_code": 200,
        "message": "Event stream was closed by the producer",
        "description": "the scheduler is shutting down",
    }
    assert store.stats()["attached_streams"] == 0


def test_the_history_goes_out_before_open_returns_with_the_gil_released(
    loopback_pair: tuple[socket.socket, socket.socket],
) -> None:
    server, client = loopback_pair
    store = EventStore(100_000, 100_000)
    add(store, 60_000)
    sub = store.subscribe_recent(50_000)
    reader = ChunkedReader(client)
    # More than the socket buffers hold: open returns only if this thread can read meanwhile.
    reading = threading.Thread(target=reader.read, args=(50_001, 20.0))
    reading.start()
    ticket = store.open_stream(sub, server.fileno(), FIRST)
    assert ticket.events_written == 50_000 and ticket.outcome is None
    reading.join()
    assert [e["timestampNano"] for e in reader.events()] == list(range(10_001, 60_001))
    ticket.release()


def test_a_history_nobody_reads_ends_at_the_write_deadline(loopback_pair: tuple[socket.socket, socket.socket]) -> None:
    server, client = loopback_pair  # the client never reads
    store = EventStore(300_000, 300_000)
    add(store, 200_000)
    sub = store.subscribe_recent(200_000, 1_000_000)
    started = time.monotonic()
    ticket = store.open_stream(sub, server.fileno(), FIRST, write_timeout=0.3)
    assert ticket.outcome == StreamOutcome.WRITE_TIMEOUT
    assert time.monotonic() - started < 10.0
    stats = store.stats()
    assert stats["stream_write_timeouts"] == 1 and stats["attached_streams"] == 0
    client.settimeout(5.0)
    while client.recv(1 << 20):  # the socket was shut down: the client reaches its end
        pass


def test_the_wait_releases_the_gil(loopback_pair: tuple[socket.socket, socket.socket]) -> None:
    server, _ = loopback_pair
    store = EventStore(1_000, 1_000)
    sub = store.subscribe_recent(0)  # dropping the subscription would close the stream
    ticket = store.open_stream(sub, server.fileno(), FIRST)
    counted = [0]
    stop = threading.Event()

    def count() -> None:
        while not stop.is_set():
            counted[0] += 1

    worker = threading.Thread(target=count)
    worker.start()
    assert ticket.wait(0.3) is None
    stop.set()
    worker.join()
    # A wait holding the GIL would have left the counting thread only switch-interval slices.
    assert counted[0] > 100_000
    ticket.release()


def test_a_cut_subscription_ends_with_its_reason(loopback_pair: tuple[socket.socket, socket.socket]) -> None:
    server, client = loopback_pair  # the client stalls, then reads again
    store = EventStore(500_000, 500_000)
    sub = store.subscribe_recent(0, 2000)
    ticket = store.open_stream(sub, server.fileno(), FIRST, write_timeout=30.0)
    deadline = time.monotonic() + 60
    added = 0
    # Its socket fills, a chunk waits in it, and the writer's next rounds leave the client more
    # than its 2000 events behind.
    while sub.closed_reason is None:
        assert time.monotonic() < deadline and added < 400_000, "the stalled stream was never cut"
        add(store, 10_000, added + 1)
        added += 10_000
        time.sleep(0.03)  # a round of the writer (20 ms apart)
    assert "fell behind" in sub.closed_reason
    assert ticket.outcome is None  # the closing line waits behind the chunk in the full socket
    reader = ChunkedReader(client)
    while not reader.lines or b"status_code" not in reader.lines[-1]:
        reader.read(len(reader.lines) + 1)
    assert reader.lines[-1] == closing_line(sub.closed_reason)
    assert 0 < len(reader.events()) < added
    assert ticket.wait(5.0) == StreamOutcome.CLOSED
    assert ticket.closed_reason == sub.closed_reason
    assert store.stats()["stream_write_timeouts"] == 0


def test_a_stop_delivers_the_stored_events_then_closes(loopback_pair: tuple[socket.socket, socket.socket]) -> None:
    server, client = loopback_pair
    store = EventStore(100_000, 100_000)
    sub = store.subscribe_recent(0, 100_000)
    ticket = store.open_stream(sub, server.fileno(), FIRST)
    spare = store.subscribe_recent(0)
    for i in range(1, 20_001):
        store.add(2, 1, 204, i, OBJECT)
    store.stop()
    reader = ChunkedReader(client)
    lines = reader.read(20_002)
    assert len(reader.events()) == 20_000
    assert ticket.wait(5.0) == StreamOutcome.CLOSED
    assert ticket.closed_reason is not None and "stopped" in ticket.closed_reason
    assert lines[-1] == closing_line(ticket.closed_reason)
    with pytest.raises(EventSystemStoppedError):
        store.open_stream(spare, server.fileno(), FIRST)


def test_an_http10_body_is_written_as_it_is(loopback_pair: tuple[socket.socket, socket.socket]) -> None:
    server, client = loopback_pair
    store = EventStore(1_000, 1_000)
    add(store, 3)
    sub = store.subscribe_recent(3)
    ticket = store.open_stream(sub, server.fileno(), FIRST, chunked=False)
    ticket.release()
    assert ticket.wait(5.0) == StreamOutcome.RELEASED
    server.close()
    client.settimeout(5.0)
    body = b""
    while data := client.recv(1 << 16):
        body += data
    lines = body.splitlines(keepends=True)
    assert lines[0] == FIRST and len(lines) == 5
    assert [json.loads(line)["timestampNano"] for line in lines[1:4]] == [1, 2, 3]
    assert lines[4] == closing_line("the scheduler is shutting down")


def test_bad_opens_are_refused(loopback_pair: tuple[socket.socket, socket.socket]) -> None:
    server, _ = loopback_pair
    store = EventStore(1_000, 1_000)
    sub = store.subscribe_recent(0)
    with pytest.raises(ValueError, match="socket file descriptor"):
        store.open_stream(sub, -1, FIRST)
    with pytest.raises(ValueError):
        store.open_stream(sub, server.fileno(), FIRST, write_timeout=-1.0)
    sub.close()
    with pytest.raises(ValueError, match="closed"):
        store.open_stream(sub, server.fileno(), FIRST)
    other = EventStore(1_000, 1_000)
    with pytest.raises(ValueError, match="another event store"):
        other.open_stream(store.subscribe_recent(0), server.fileno(), FIRST)
    with pytest.raises(OSError):
        # Not an open descriptor: duplicating it fails.
        store.open_stream(store.subscribe_recent(0), 1_000_000, FIRST)
    assert store.stats()["attached_streams"] == 0
