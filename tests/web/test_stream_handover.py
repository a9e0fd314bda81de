"""The hand-over of a stream from its request thread (history) to the event store's fan-out
thread, driven directly: a real EventStore, real loopback sockets, ``stream_body`` as gunicorn
iterates it. The race where the event system stops between the history and the hand-over
must end the stream with the closing line, not an exception."""

from __future__ import annotations

import json
import socket
import threading

import pytest

from pyscheduler._native import EventStore, StreamTicket, Subscription
from pyscheduler_web.streams import CLOSED_BY_PRODUCER, stream_body




def test_a_stop_between_history_and_hand_over_ends_with_the_closing_line(
    loopback_pair: tuple[socket.socket, socket.socket],
) -> None:
    server, _ = loopback_pair
    store = EventStore(1_000, 1_000)
    subscription = store.subscribe_recent(0)
    released: list[bool] = []

    def attach_after_a_stop(sub: Subscription, fd: int, write_timeout: float) -> StreamTicket:
        store.stop()  # the service stops just now
        return store.attach_stream(sub, fd, write_timeout)

    body = stream_body(
        b'{"InstanceUUID":"x"}\n', subscription, lambda: released.append(True), threading.Event(), server,
        attach=attach_after_a_stop,
    )
    items = list(body)  # what gunicorn would write, in order
    assert items[0] == b'{"InstanceUUID":"x"}\n'
    closing = json.loads(items[-1])
    assert closing["status_code"] == 200 and closing["message"] == CLOSED_BY_PRODUCER
    assert "stopped" in closing["description"]
    assert released == [True]
