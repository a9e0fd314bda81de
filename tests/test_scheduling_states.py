"""The asks' scheduling states an RM receives (``update_container_scheduling_state``), driven
through the RM interface: the core says SKIPPED when an ask waits for its queue's or its
user's room, FAILED when no node takes it, each with a typed code
(:class:`~pyscheduler.si.messages.SchedulingReason`) and the request event's text as reason,
at the request events' pace (when a quota check starts failing; at most once per ask every
15 s for the node failures). They reach the RM whether request events are enabled or not, and
never for an ask that is placed.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator

import pytest
from rm_helpers import World, res

from pyscheduler.scheduler.cycle import PREDICATES_EVENT_INTERVAL, SchedulingCycle
from pyscheduler.si import messages as si

SKIPPED, FAILED = si.ContainerSchedulingState.SKIPPED, si.ContainerSchedulingState.FAILED
Code = si.SchedulingReason

CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
            resources:
              max: {memory: 100}
          - name: b
            limits:
              - limit: alice at most 50
                users: [alice]
                maxresources: {memory: 50}
          - name: c
"""


@pytest.fixture
def world() -> Iterator[World]:
    w = World(CONFIG)  # request events disabled: the states do not depend on them
    for i in range(3):
        w.add_node(f"n{i}", memory=1000)
    yield w
    w.close()


def _cycle(world: World) -> None:
    SchedulingCycle(world.context).run()


def _states(world: World) -> list[tuple[str, str, si.ContainerSchedulingState, si.SchedulingReason, str]]:
    return [(s.application_id, s.allocation_key, s.state, s.code, s.reason) for s in world.rm.scheduling_states]


def test_an_ask_over_its_queue_max_is_skipped_with_queue_quota(world: World) -> None:
    world.add_app("app-1", "root.a")
    world.ask("big", "app-1", res(memory=150))
    _cycle(world)
    assert _states(world) == [("app-1", "big", SKIPPED, Code.QUEUE_QUOTA,
                               "Request 'big' does not fit in queue 'root.a' "
                               "(requested map[memory:150], available map[memory:100 vcore:300])")]
    _cycle(world)
    _cycle(world)
    assert len(world.rm.scheduling_states) == 1  # told when the check starts failing, not every cycle


def test_an_ask_over_its_user_limit_is_skipped_with_user_quota(world: World) -> None:
    world.add_app("app-1", "root.b", user="alice")
    world.ask("k1", "app-1", res(memory=40))
    world.ask("k2", "app-1", res(memory=40))
    _cycle(world)  # k1 placed: alice uses 40 of her 50
    _cycle(world)
    assert _states(world) == [("app-1", "k2", SKIPPED, Code.USER_QUOTA,
                               "Request 'k2' exceeds the available user quota "
                               "(requested map[memory:40], available map[memory:10])")]
    assert all(s.allocation_key != "k1" for s in world.rm.scheduling_states)  # placed: nothing


def test_an_ask_no_node_has_room_for_fails_with_no_node_fits_rate_limited(world: World) -> None:
    world.add_app("app-1", "root.c")
    world.ask("wide", "app-1", res(memory=1500))
    _cycle(world)
    expected = ("app-1", "wide", FAILED, Code.NO_NODE_FITS,
                "Unschedulable request 'wide': no node has room for it (requested map[memory:1500])")
    assert _states(world) == [expected]
    world.advance(PREDICATES_EVENT_INTERVAL - 1)
    _cycle(world)
    _cycle(world)
    assert _states(world) == [expected]
    world.advance(1)
    _cycle(world)
    assert _states(world) == [expected, expected]


def test_an_ask_every_nodes_predicates_refuse_fails_with_predicates(world: World) -> None:
    world.rm.set_predicates(lambda key, node_id, allocate: "node(s) had untolerated taint")
    world.add_app("app-1", "root.c")
    world.ask("k", "app-1", res(memory=10))
    _cycle(world)
    assert _states(world) == [("app-1", "k", FAILED, Code.PREDICATES,
                               "Unschedulable request 'k': node(s) had untolerated taint (3x); ")]


def test_an_ask_whose_required_node_refuses_it_fails_with_required_node() -> None:
    w = World(CONFIG)
    try:
        w.add_node("n0", memory=100)
        w.add_node("n1", memory=100)  # room in the cluster (and the queues), not on the ask's node
        w.add_app("app-1", "root.c")
        w.add_app("app-2", "root.c")
        w.allocate("held", "app-1", "n0", res(memory=100))
        w.partition().applications["app-1"].allocations["held"].priority = 1000  # no victim
        w.ask("ds", "app-2", res(memory=50), allocation_tags={si.TAG_REQUIRED_NODE: "n0"})
        cycle = SchedulingCycle(w.context)
        cycle.run()  # reserves its node
        cycle.run()  # the reserved ask's node has no room and no victim
        assert _states(w) == [("app-2", "ds", FAILED, Code.REQUIRED_NODE,
                               "Unschedulable request 'ds' with required node 'n0', no preemption victim found")]
        cycle.run()
        assert len(w.rm.scheduling_states) == 1  # at most once per interval
        w.advance(PREDICATES_EVENT_INTERVAL)
        cycle.run()
        assert [s.code for s in w.rm.scheduling_states] == [Code.REQUIRED_NODE, Code.REQUIRED_NODE]
    finally:
        w.close()


def test_a_placed_ask_gets_no_scheduling_state(world: World) -> None:
    world.add_app("app-1", "root.c")
    world.ask("small", "app-1", res(memory=10))
    _cycle(world)
    assert "small" in world.app("app-1").allocations
    assert world.rm.scheduling_states == []


def test_the_state_is_delivered_with_no_core_lock_held(world: World) -> None:
    """Delivered through the outbox once the partition's lock is released (the callback
    contract: an RM may call back into the core from another thread it waits for)."""
    partition = world.partition()
    registered = world.context._rms[world.rm_id]
    deliver = registered.calls.update_container_scheduling_state
    lock_free: list[bool] = []

    def probe(request: si.UpdateContainerSchedulingStateRequest) -> None:
        def try_lock() -> None:
            taken = partition.lock.acquire(timeout=1.0)
            if taken:
                partition.lock.release()
            lock_free.append(taken)

        other = threading.Thread(target=try_lock)
        other.start()
        other.join()
        deliver(request)

    registered.calls = dataclasses.replace(registered.calls, update_container_scheduling_state=probe)
    world.add_app("app-1", "root.a")
    world.ask("big", "app-1", res(memory=150))
    _cycle(world)
    assert lock_free == [True]
    assert [s.code for s in world.rm.scheduling_states] == [Code.QUEUE_QUOTA]
