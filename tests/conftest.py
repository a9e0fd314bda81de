"""Shared fixtures.

Event-system fixtures (used by test_native_event_store.py, test_event_system.py and
test_event_concurrency.py): factories that stop every store / system they made, so no
consumer thread or publisher outlives its test.

``loopback_pair``: both ends of a TCP connection on 127.0.0.1 (stream fan-out tests).
"""

from __future__ import annotations

import os

# Every object mutation in the test run checks that its partition's lock is held
# (pyscheduler.objects.locking); set before pyscheduler is imported, inherited by the servers
# and subprocesses the tests start.
os.environ["PYSCHEDULER_CHECK_LOCKS"] = "1"

import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pyscheduler._native import EventStore
from pyscheduler.events import EventSystem


@pytest.fixture
def native_event_store_factory() -> Iterator[Callable[..., EventStore]]:
    """``make(capacity=100_000, queue_capacity=100_000)`` -> a native EventStore, stopped at teardown."""
    made: list[EventStore] = []

    def make(capacity: int = 100_000, queue_capacity: int = 100_000) -> EventStore:
        store = EventStore(capacity, queue_capacity)
        made.append(store)
        return store

    yield make
    for store in made:
        store.stop()


@pytest.fixture
def event_system_factory() -> Iterator[Callable[..., EventSystem]]:
    """``make(settings=None, **kwargs)`` -> an EventSystem, stopped at teardown."""
    made: list[EventSystem] = []

    def make(settings: Any = None, **kwargs: Any) -> EventSystem:
        system = EventSystem(settings, **kwargs)
        made.append(system)
        return system

    yield make
    for system in made:
        system.stop()


@pytest.fixture
def event_system(event_system_factory: Callable[..., EventSystem]) -> EventSystem:
    """An EventSystem with default settings."""
    return event_system_factory()


@pytest.fixture
def loopback_pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    """(server side, client side) of a TCP connection on 127.0.0.1, both closed at teardown."""
    listener = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(listener.getsockname(), timeout=10)
    server, _ = listener.accept()
    listener.close()
    yield server, client
    server.close()
    client.close()
