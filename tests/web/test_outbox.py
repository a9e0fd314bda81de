"""``Outbox``: answers written off the pool, bounded per connection and in all (issue 31, N2).

Over a socket pair whose reader does not read (small buffers, so the writer's side fills
quickly): what the socket does not take is queued, within the bounds; past them a slow-writer
slot writes it blocking, and with no slot left the answer is dropped. Every wait is bounded.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from pyscheduler_web.outbox import AnswerBudget, Outbox

BIG = 1 << 20  # far more than the small socket buffers hold


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    writer, reader = socket.socketpair()
    for sock in (writer, reader):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    writer.settimeout(2.0)  # as a pool thread's socket: blocking with a deadline
    reader.settimeout(2.0)
    yield writer, reader
    writer.close()
    reader.close()


def _read_all(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(65536)
        assert chunk, "closed early"
        data += chunk
    return data


def test_what_the_socket_does_not_take_is_queued_and_flushed_in_order(pair: tuple[socket.socket, socket.socket]) -> None:
    writer, reader = pair
    budget = AnswerBudget(total=4 * BIG)
    box = Outbox(budget, per_connection=2 * BIG)
    head, body = b"HTTP/1.1 200 OK\r\n\r\n", bytes(range(256)) * (BIG // 256)
    box.write(writer, head)
    box.write(writer, body)  # returns at once: the reader reads nothing
    assert 0 < box.size <= len(head) + len(body) and budget.used == box.size
    # The main loop's part: the socket non-blocking, flushed as the reader reads.
    writer.setblocking(False)
    received = b""
    while box.size:
        box.flush(writer)
        received += reader.recv(65536)
    received += _read_all(reader, len(head) + len(body) - len(received))
    assert received == head + body
    assert budget.used == 0


def test_past_the_bounds_a_slow_writer_slot_writes_and_without_one_the_answer_is_dropped(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    writer, reader = pair
    budget = AnswerBudget(total=BIG, slow_writers=1)
    box = Outbox(budget, per_connection=BIG // 2)
    # Past the per-connection bound, with a slot: this thread writes it, blocking; a reader
    # drains it meanwhile.
    got: list[bytes] = []
    drain = threading.Thread(target=lambda: got.append(_read_all(reader, BIG)))
    drain.start()
    box.write(writer, b"x" * BIG)
    drain.join(5.0)
    assert got == [b"x" * BIG] and box.size == 0 and not box.dropped
    # No slot left (another thread holds it): the answer is dropped, nothing kept.
    assert budget.slow_writers.acquire(blocking=False)
    try:
        with pytest.raises(BrokenPipeError):
            box.write(writer, b"y" * BIG)
    finally:
        budget.slow_writers.release()
    assert box.dropped
    box.discard()
    assert budget.used == 0


def test_the_total_is_shared_by_every_connection(pair: tuple[socket.socket, socket.socket]) -> None:
    writer, _ = pair
    budget = AnswerBudget(total=BIG // 2, slow_writers=0)
    first, second = Outbox(budget, per_connection=BIG), Outbox(budget, per_connection=BIG)
    first.write(writer, b"a" * (BIG // 4))  # queued (the socket takes a few KiB)
    assert budget.used == first.size > 0
    with pytest.raises(BrokenPipeError):  # the total is reached, and no slow-writer slot
        second.write(writer, b"b" * (BIG // 2))
    first.discard()
    assert budget.used == 0
