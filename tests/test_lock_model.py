"""The lock model (pyscheduler.objects.locking): one lock per partition guards its object graph.

The test run sets ``PYSCHEDULER_CHECK_LOCKS=1`` (tests/conftest.py), so a mutation of a
partition's object by a thread that does not hold the partition's lock raises.
"""

from __future__ import annotations

import threading

import pytest
from rm_helpers import World, res

from pyscheduler.objects.allocation import Allocation
from pyscheduler.objects.locking import CHECK_LOCKS, LockNotHeldError
from pyscheduler.objects.node import Node
from pyscheduler.objects.object_events import NodeEvents


def _busy_world() -> World:
    world = World()
    world.add_node("n1")
    world.add_app("app-1", "root.a")
    world.ask("ask-1", "app-1", res(memory=10))
    return world


def test_the_checks_are_on_in_the_test_run() -> None:
    assert CHECK_LOCKS


def test_objects_have_no_locks_of_their_own() -> None:
    world = _busy_world()
    partition = world.partition()
    for obj in (partition.root, partition.get_queue("root.a"), world.app("app-1"), partition.nodes["n1"]):
        assert not hasattr(obj, "lock"), obj
        assert obj.graph_lock is partition.lock  # type: ignore[union-attr]
    assert partition.ugm.graph_lock is partition.lock


@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(lambda w: w.partition().nodes["n1"].set_schedulable(False), id="node"),
        pytest.param(lambda w: w.partition().get_queue("root.a").inc_pending(res(memory=1)), id="queue"),
        pytest.param(lambda w: w.app("app-1").remove_ask("ask-1"), id="application"),
        pytest.param(
            lambda w: w.partition().ugm.increase_usage("root.a", "app-1", "alice", (), res(memory=1)), id="usage"
        ),
    ],
)
def test_a_change_without_the_partition_lock_raises_and_changes_nothing(mutate: object) -> None:
    assert callable(mutate)
    world = _busy_world()
    partition = world.partition()
    before = (partition.nodes["n1"].schedulable, partition.get_queue("root.a").pending, dict(world.app("app-1").asks))
    with pytest.raises(LockNotHeldError, match="changed without holding its partition's lock"):
        mutate(world)
    after = (partition.nodes["n1"].schedulable, partition.get_queue("root.a").pending, dict(world.app("app-1").asks))
    assert after == before
    # The same change with the lock held is fine.
    with partition.lock:
        mutate(world)


def test_the_lock_of_another_thread_does_not_count() -> None:
    world = _busy_world()
    partition = world.partition()
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with partition.lock:
            held.set()
            release.wait(5)

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert held.wait(5)
        with pytest.raises(LockNotHeldError):
            partition.nodes["n1"].set_schedulable(False)
    finally:
        release.set()
        thread.join(5)


def test_an_object_outside_any_partition_is_not_checked() -> None:
    node = Node("lonely", res(memory=10), {}, NodeEvents(lambda *a, **k: True))
    node.add_allocation(Allocation("a", "app", res(memory=1), node_id="lonely", allocated=True))
    assert node.allocated == res(memory=1)


def test_rm_updates_and_rest_reads_from_many_threads_stay_consistent() -> None:
    # Writers go through the RM interface (which takes the partition's lock), readers through
    # the DAO (which copies under it): no check fires and the books balance at the end.
    from pyscheduler import dao

    world = World()
    for i in range(4):
        world.add_node(f"n{i}", memory=100_000)
    errors: list[BaseException] = []
    stop = threading.Event()

    def writer(index: int) -> None:
        try:
            for round_ in range(40):
                app_id = f"app-{index}-{round_}"
                world.add_app(app_id, "root.a")
                world.allocate(f"{app_id}-k", app_id, f"n{round_ % 4}", res(memory=5))
                if round_ % 2:
                    world.release(app_id, f"{app_id}-k")
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    def reader() -> None:
        try:
            while not stop.is_set():
                dao.nodes(world.context, "default")
                dao.applications_by_state(world.context, "default", "active")
                dao.queues(world.context, "default")
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    writers = [threading.Thread(target=writer, args=(i,)) for i in range(3)]
    readers = [threading.Thread(target=reader) for _ in range(2)]
    for thread in (*writers, *readers):
        thread.start()
    for thread in writers:
        thread.join(60)
    stop.set()
    for thread in readers:
        thread.join(60)
    assert errors == []
    partition = world.partition()
    with partition.lock:
        allocated = sum(node.allocated.get("memory", 0) for node in partition.nodes.values())
        assert allocated == partition.root.allocated.get("memory", 0) == 3 * 20 * 5
