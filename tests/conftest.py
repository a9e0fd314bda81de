"""Shared fixtures.

Event-system fixtures (used by test_native_event_store.py, test_event_system.py and
test_event_concurrency.py): factories that stop every store / system they made, so no
consumer thread or publisher outlives its test.

``loopback_pair``: both ends of a TCP connection on 127.0.0.1 (stream fan-out tests).

Parallel runs (``make test`` runs pytest with pytest-xdist, ``--dist loadgroup``): each test module
is one group, so a module's fixtures are made once, on one worker; every module that starts a
control plane (it imports one of :data:`KUBE_KITS`) or a container is in the one group ``kube``,
so at most one kube-apiserver, etcd and kwok run at a time and the other worker runs the tests
that need none (the suite mostly waits on servers: two workers on 2 cores halve its wall time).
"""

from __future__ import annotations

import os

# Every object mutation in the test run checks that its partition's lock is held
# (pyscheduler.objects.locking); set before pyscheduler is imported, inherited by the servers
# and subprocesses the tests start.
os.environ["PYSCHEDULER_CHECK_LOCKS"] = "1"

import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pyscheduler._native import EventStore
from pyscheduler.events import EventSystem

#: The test kits that start a control plane or a container: a module naming one is in group ``kube``.
KUBE_KITS = ("kube_cluster", "kube_served", "kube_hub", "kube_jobs", "podman")


def _group(path: Path, cache: dict[Path, str]) -> str:
    if path not in cache:
        text = path.read_text(encoding="utf-8", errors="replace")
        cache[path] = "kube" if any(kit in text for kit in KUBE_KITS) else str(path)
    return cache[path]


def pytest_configure(config: pytest.Config) -> None:
    # Known without pytest-xdist too (a plain `pytest` run under --strict-markers).
    config.addinivalue_line("markers", "xdist_group(name): tests of one group run on one xdist worker")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each test in its module's group, or in ``kube`` (see the module docstring)."""
    cache: dict[Path, str] = {}
    for item in items:
        item.add_marker(pytest.mark.xdist_group(_group(Path(item.path), cache)))


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
