"""The hand-over of a stream's body from gunicorn to the event store's stream writer, driven
directly: a real EventStore, real loopback sockets, ``stream_body`` as gunicorn iterates it.
The race where the event system stops between the subscription and the hand-over must end
the stream with the closing line, not an exception."""

from __future__ import annotations

import json
import socket
import threading

import pytest

from pyscheduler._native import EventStore, StreamTicket, Subscription
from web_helpers import ChunkedReader
from pyscheduler_web.streams import CLOSED_BY_PRODUCER, stream_body




def test_a_stop_before_the_hand_over_ends_with_the_closing_line(
    loopback_pair: tuple[socket.socket, socket.socket],
) -> None:
    server, client = loopback_pair
    store = EventStore(1_000, 1_000)
    subscription = store.subscribe_recent(0)
    released: list[bool] = []

    def open_after_a_stop(sub: Subscription, fd: int, first: bytes, chunked: bool, timeout: float) -> StreamTicket:
        store.stop()  # the service stops just now
        return store.open_stream(sub, fd, first, chunked, timeout)

    body = stream_body(
        b'{"InstanceUUID":"x"}\n', subscription, lambda: released.append(True), threading.Event(), server,
        open_after_a_stop,
    )
    assert list(body) == [b""], "gunicorn writes the head only"
    lines = ChunkedReader(client).read(1)
    closing = json.loads(lines[-1])
    assert closing["status_code"] == 200 and closing["message"] == CLOSED_BY_PRODUCER
    assert "stopped" in closing["description"]
    assert released == [True]
