"""``EventStore.attach_stream``: the fan-out thread through the native module's own entry
point, over real loopback sockets (the HTTP side is in tests/web/test_events_stream.py; the
hub's own cases, such as the write deadline and resuming behind its blocks, in cargo tests)."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from pyscheduler._native import EventStore, EventSystemStoppedError

OBJECT = "app-fanout"


def add(store: EventStore, n: int, first: int = 1) -> None:
    for i in range(first, first + n):
        store.add(2, 1, 204, i, OBJECT)
    assert store.flush(10.0)




def read_chunked_lines(sock: socket.socket, n: int, timeout: float = 10.0) -> list[dict]:
    """Decodes HTTP/1.1 chunks until ``n`` NDJSON lines arrived."""
    deadline = time.monotonic() + timeout
    buf, body, lines = b"", b"", []
    while len(lines) < n:
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        data = sock.recv(1 << 16)
        assert data, "the connection ended"
        buf += data
        while b"\r\n" in buf:
            head, rest = buf.split(b"\r\n", 1)
            size = int(head, 16)
            if len(rest) < size + 2:
                break
            assert rest[size : size + 2] == b"\r\n"
            body += rest[:size]
            buf = rest[size + 2 :]
        *complete, body = body.split(b"\n")
        lines.extend(json.loads(line) for line in complete)
    return lines


def test_an_attached_stream_gets_live_events_as_chunks_and_is_released(
    loopback_pair: tuple[socket.socket, socket.socket],
) -> None:
    server, client = loopback_pair
    store = EventStore(10_000, 10_000)
    sub = store.subscribe_recent(0)
    ticket = store.attach_stream(sub, server.fileno(), 5.0)
    assert store.stats()["attached_streams"] == 1
    assert ticket.wait(0.05) is None and ticket.outcome is None
    add(store, 1500)
    lines = read_chunked_lines(client, 1500)
    assert [line["timestampNano"] for line in lines] == list(range(1, 1501))
    assert {line["objectID"] for line in lines} == {OBJECT}
    assert ticket.events_written == 1500
    ticket.release()
    assert ticket.wait(5.0) == "released"
    assert ticket.closed_reason is None
    assert store.stats()["attached_streams"] == 0


def test_the_wait_releases_the_gil(loopback_pair: tuple[socket.socket, socket.socket]) -> None:
    server, _ = loopback_pair
    store = EventStore(1_000, 1_000)
    sub = store.subscribe_recent(0)  # dropping the subscription would close the stream
    ticket = store.attach_stream(sub, server.fileno(), 5.0)
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
    server, _client = loopback_pair  # the client never reads
    store = EventStore(500_000, 500_000)
    sub = store.subscribe_recent(0, 2000)
    ticket = store.attach_stream(sub, server.fileno(), 30.0)
    deadline = time.monotonic() + 60
    added = 0
    while ticket.wait(0.01) is None:
        assert time.monotonic() < deadline and added < 400_000, "the stalled stream was never cut"
        add(store, 10_000, added + 1)
        added += 10_000
    assert ticket.outcome == "closed"
    assert ticket.closed_reason is not None and "fell behind" in ticket.closed_reason
    assert sub.closed_reason == ticket.closed_reason


def test_a_stop_delivers_the_stored_events_then_closes(loopback_pair: tuple[socket.socket, socket.socket]) -> None:
    server, client = loopback_pair
    store = EventStore(100_000, 100_000)
    sub = store.subscribe_recent(0, 100_000)
    ticket = store.attach_stream(sub, server.fileno(), 5.0)
    spare = store.subscribe_recent(0)
    for i in range(1, 20_001):
        store.add(2, 1, 204, i, OBJECT)
    store.stop()
    assert len(read_chunked_lines(client, 20_000)) == 20_000
    assert ticket.wait(5.0) == "closed"
    assert ticket.closed_reason is not None and "stopped" in ticket.closed_reason
    with pytest.raises(EventSystemStoppedError):
        store.attach_stream(spare, server.fileno(), 5.0)


def test_bad_attaches_are_refused(loopback_pair: tuple[socket.socket, socket.socket]) -> None:
    server, _ = loopback_pair
    store = EventStore(1_000, 1_000)
    sub = store.subscribe_recent(0)
    with pytest.raises(ValueError, match="socket file descriptor"):
        store.attach_stream(sub, -1, 5.0)
    with pytest.raises(ValueError):
        store.attach_stream(sub, server.fileno(), -1.0)
    sub.close()
    with pytest.raises(ValueError, match="closed"):
        store.attach_stream(sub, server.fileno(), 5.0)
    other = EventStore(1_000, 1_000)
    with pytest.raises(ValueError, match="another event store"):
        other.attach_stream(store.subscribe_recent(0), server.fileno(), 5.0)
    with pytest.raises(OSError):
        # Not an open descriptor: duplicating it fails.
        store.attach_stream(store.subscribe_recent(0), 1_000_000, 5.0)
    assert store.stats()["attached_streams"] == 0
