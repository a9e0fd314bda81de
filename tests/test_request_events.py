"""Request events with producers: the diagnostics an RM shows its users (pod events in
Kubernetes), as YuniKorn's ask events, driven through the RM interface.

- an ask over the queue's headroom, and over the user's quota: an event when the check starts
  failing and one when it passes again (edge-triggered, never once per cycle);
- an ask every node's predicates refuse: "Unschedulable request ..." with each reason and its
  count, at most once per ask every 15 s (the injected clock moves, nothing sleeps).

They reach the RM's ``send_event`` through the publisher when request events are enabled.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from rm_helpers import World, res

from pyscheduler.scheduler.cycle import PREDICATES_EVENT_INTERVAL, QUEUE_QUOTA, SchedulingCycle
from pyscheduler.si.events import EventChangeDetail, EventChangeType, EventRecord, EventRecordType

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
"""
ENABLED = {"service.event.requestEventsEnabled": "true"}


def refuse_every_node(allocation_key: str, node_id: str, allocate: bool) -> str | None:
    """Predicates that refuse every node, with a reason per node as a shim would."""
    return "node(s) had untolerated taint" if node_id.endswith(("0", "1")) else "node(s) didn't match affinity"


@pytest.fixture
def world() -> Iterator[World]:
    w = World(CONFIG, extra_config=ENABLED)
    for i in range(3):
        w.add_node(f"n{i}", memory=1000)
    yield w
    w.close()


def _cycle(world: World) -> None:
    SchedulingCycle(world.context).run()


def _sent(world: World) -> list[EventRecord]:
    """What the publisher delivers to the RM now (it runs every 2 s; tests publish at once)."""
    before = len(world.rm.events)
    world.context.event_system.publish_request_events()
    return world.rm.events[before:]


def _is_request(record: EventRecord, key: str, app_id: str) -> bool:
    return (
        record.type is EventRecordType.REQUEST
        and record.change_type is EventChangeType.NONE
        and record.change_detail is EventChangeDetail.DETAILS_NONE
        and record.object_id == key
        and record.reference_id == app_id
    )


def test_an_ask_over_the_queue_headroom_is_reported_once_then_when_it_fits(world: World) -> None:
    world.add_app("app-1", "root.a")
    world.ask("big", "app-1", res(memory=150))
    _cycle(world)
    _cycle(world)
    (record,) = _sent(world)
    assert _is_request(record, "big", "app-1")
    assert record.message == (
        "Request 'big' does not fit in queue 'root.a' (requested map[memory:150], available map[memory:100 vcore:300])"
    )
    assert dict(record.resource) == {"memory": 150}
    # The allocation log counts every attempt, with the time of the last one.
    assert world.app("app-1").asks["big"].alloc_log[QUEUE_QUOTA] == 2
    # Another cycle: still failing, nothing new.
    _cycle(world)
    assert _sent(world) == []
    # The queue grows: the ask fits and is placed; the RM hears it became schedulable.
    world.reload(CONFIG.replace("max: {memory: 100}", "max: {memory: 200}"), extra_config=ENABLED)
    _cycle(world)
    (fits,) = _sent(world)
    assert _is_request(fits, "big", "app-1")
    assert fits.message == "Request 'big' has become schedulable in queue 'root.a'"
    assert "big" in world.app("app-1").allocations  # placed: no longer a pending ask


def test_an_ask_over_the_user_quota_is_reported(world: World) -> None:
    world.add_app("app-1", "root.b", user="alice")
    world.ask("k1", "app-1", res(memory=40))
    world.ask("k2", "app-1", res(memory=40))
    _cycle(world)  # k1 placed: alice uses 40 of her 50
    _cycle(world)  # k2 does not fit her quota
    (record,) = _sent(world)
    assert _is_request(record, "k2", "app-1")
    assert record.message == (
        "Request 'k2' exceeds the available user quota (requested map[memory:40], available map[memory:10])"
    )
    _cycle(world)
    assert _sent(world) == []
    world.release("app-1", "k1")
    _cycle(world)
    (fits,) = _sent(world)
    assert fits.message == "Request 'k2' fits in the available user quota"


def test_predicates_refusing_every_node_are_reported_rate_limited(world: World) -> None:
    world.rm.set_predicates(refuse_every_node)
    world.add_app("app-1", "root.a")
    world.ask("k", "app-1", res(memory=10))
    _cycle(world)
    (record,) = _sent(world)
    assert _is_request(record, "k", "app-1")
    assert record.message == (
        "Unschedulable request 'k': node(s) didn't match affinity (1x); node(s) had untolerated taint (2x); "
    )
    # Within the interval: nothing more, however many cycles try.
    world.advance(PREDICATES_EVENT_INTERVAL - 1)
    _cycle(world)
    _cycle(world)
    assert _sent(world) == []
    world.advance(1)
    _cycle(world)
    (again,) = _sent(world)
    assert again.message == record.message


def test_nothing_reaches_the_rm_when_request_events_are_disabled() -> None:
    world = World(CONFIG)
    world.add_node("n0", memory=1000)
    world.add_app("app-1", "root.a")
    world.ask("big", "app-1", res(memory=150))
    _cycle(world)
    assert _sent(world) == []
    assert world.context.event_system.stats().request_stored == 0
    world.close()


def test_an_ask_that_fits_emits_nothing(world: World) -> None:
    world.add_app("app-1", "root.a")
    world.ask("small", "app-1", res(memory=10))
    _cycle(world)
    assert "small" in world.app("app-1").allocations
    assert _sent(world) == []


def test_an_ask_no_node_has_room_for_is_reported_rate_limited(world: World) -> None:
    """The cluster has room in total (the queue's headroom holds it) but no node does: the RM
    hears it at once (kube-scheduler's "0/N nodes are available: Insufficient ..."), then at most
    once per interval."""
    world.add_app("app-1", "root.b", user="bob")
    world.ask("wide", "app-1", res(memory=1500))
    _cycle(world)
    (record,) = _sent(world)
    assert _is_request(record, "wide", "app-1")
    assert record.message == "Unschedulable request 'wide': no node has room for it (requested map[memory:1500])"
    _cycle(world)
    assert _sent(world) == []
    world.advance(PREDICATES_EVENT_INTERVAL)
    _cycle(world)
    (again,) = _sent(world)
    assert again.message == record.message
