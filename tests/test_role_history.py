"""Role history through the RM interface: an RM submits applications whose asks name roles,
the scheduling cycle places them, the RM releases them (stopped, failed), and the instances of
a resubmitted application come back to the nodes they used (shared/spec/rolehistory.md's
behaviours that apply to the core's model)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from rm_helpers import World

from pyscheduler.policies.role_history import ROLE_TAG, HISTORY_KEY_TAG
from pyscheduler.policies.role_history.settings import PlacementPolicy, role_settings
from pyscheduler.scheduler.cycle import HISTORY_TIMEOUT, HISTORY_WAIT_PREFIX, SchedulingCycle
from pyscheduler.si import messages as si

NODES = [f"node-{i:02d}" for i in range(8)]


@pytest.fixture
def w() -> Iterator[World]:
    world = World()
    for node_id in NODES:
        world.add_node(node_id, memory=1000, vcore=100)
    yield world
    world.close()


def cycle_until_idle(world: World, limit: int = 200) -> None:
    cycle = SchedulingCycle(world.context)
    for _ in range(limit):
        if not cycle.run():
            return


def start(world: World, app_id: str, role: str, count: int, key: str = "svc", **tags: str) -> list[str]:
    """An application with ``count`` asks of ``role``; returns the nodes they were placed on."""
    world.add_app(app_id, tags={HISTORY_KEY_TAG: key, **tags})
    for i in range(count):
        world.ask(f"{app_id}-{role}-{i}", app_id, {"memory": 100, "vcore": 1}, allocation_tags={ROLE_TAG: role})
    cycle_until_idle(world)
    app = world.app(app_id)
    return [app.allocations[f"{app_id}-{role}-{i}"].node_id for i in range(count) if f"{app_id}-{role}-{i}" in app.allocations]


def test_a_resubmitted_application_comes_back_to_its_nodes(w: World) -> None:
    # Busy nodes first, so the first run does not land on the nodes the default order prefers.
    first = start(w, "hbase-1", "regionserver", 3)
    assert len(set(first)) == 3
    w.remove_app("hbase-1")
    # Other work takes the nodes the default order would pick now.
    second = start(w, "hbase-2", "regionserver", 3)
    assert sorted(second) == sorted(first)
    history = w.partition().role_histories.get("svc")
    assert history is not None
    assert {n: history.entry(n, "regionserver").live for n in first} == {n: 1 for n in first}  # type: ignore[union-attr]
    assert w.partition().role_histories.history_placements == 3


def fill_history_node(world: World) -> str:
    """Role "db" of history "svc" ran on a node, stopped, and something else filled the node
    (950 of its 1000 memory); returns the node."""
    [node] = start(world, "app-1", "db", 1)
    world.remove_app("app-1")
    world.add_app("filler")
    world.ask("fill", "filler", {"memory": 950, "vcore": 1}, allocation_tags={si.TAG_REQUIRED_NODE: node})
    cycle_until_idle(world)
    return node


def test_recent_list_is_newest_first_and_never_holds_a_node_twice(w: World) -> None:
    nodes = start(w, "app-1", "worker", 3)
    for i, _ in enumerate(nodes):
        w.clock.advance(1.0)
        w.release("app-1", f"app-1-worker-{i}")
    history = w.partition().role_histories.get("svc")
    assert history is not None
    assert history.recent("worker") == list(reversed(nodes))
    # A node used again and released again moves to the front, once.
    w.ask("again", "app-1", {"memory": 100, "vcore": 1}, allocation_tags={ROLE_TAG: "worker"})
    cycle_until_idle(w)
    assert w.app("app-1").allocations["again"].node_id == nodes[-1]
    w.clock.advance(1.0)
    w.release("app-1", "again")
    assert history.recent("worker") == [nodes[-1], nodes[1], nodes[0]]


def test_roles_are_independent_and_a_role_never_shares_a_history_node(w: World) -> None:
    masters = start(w, "app-1", "master", 1)
    workers = start(w, "app-2", "worker", 2)
    w.remove_app("app-1")
    w.remove_app("app-2")
    w.add_app("app-3", tags={HISTORY_KEY_TAG: "svc"})
    w.ask("m", "app-3", {"memory": 100, "vcore": 1}, allocation_tags={ROLE_TAG: "master"})
    for i in range(2):
        w.ask(f"w{i}", "app-3", {"memory": 100, "vcore": 1}, allocation_tags={ROLE_TAG: "worker"})
    cycle_until_idle(w)
    app = w.app("app-3")
    assert app.allocations["m"].node_id == masters[0]
    assert sorted(app.allocations[f"w{i}"].node_id for i in range(2)) == sorted(workers)


def test_an_ask_that_does_not_fit_waits_for_its_node_then_falls_back(w: World) -> None:
    node = fill_history_node(w)
    assert w.app("filler").allocations["fill"].node_id == node
    w.add_app("app-2", tags={HISTORY_KEY_TAG: "svc", "pyscheduler.io/role-history.placement-timeout": "10s"})
    w.ask("db-0", "app-2", {"memory": 100, "vcore": 1}, allocation_tags={ROLE_TAG: "db"})
    cycle_until_idle(w)
    ask = w.app("app-2").asks["db-0"]
    assert HISTORY_WAIT_PREFIX + node in ask.alloc_log
    # At the deadline nothing changes; one tick after it the ask takes the normal order.
    w.clock.advance(10.0)
    cycle_until_idle(w)
    assert "db-0" in w.app("app-2").asks
    w.clock.advance(0.001)
    cycle_until_idle(w)
    placed = w.app("app-2").allocations["db-0"]
    assert placed.node_id != node and HISTORY_TIMEOUT in placed.alloc_log
    assert w.partition().role_histories.escalations == 1


def test_a_waiting_ask_holds_its_history_node_until_it_fits_there() -> None:
    w = World()
    try:
        for node_id in ("node-a", "node-b"):
            w.add_node(node_id, memory=1000, vcore=100)
        [node] = start(w, "app-1", "db", 1)
        other = "node-b" if node == "node-a" else "node-a"
        w.remove_app("app-1")
        w.add_app("filler")
        w.ask("fill-history", "filler", {"memory": 950, "vcore": 1}, allocation_tags={si.TAG_REQUIRED_NODE: node})
        # The other node has memory left but no vcore: only the history node could take more.
        w.ask("fill-other", "filler", {"memory": 900, "vcore": 100}, allocation_tags={si.TAG_REQUIRED_NODE: other})
        cycle_until_idle(w)
        w.add_app("app-2", tags={HISTORY_KEY_TAG: "svc"})
        w.ask("db-0", "app-2", {"memory": 100, "vcore": 1}, allocation_tags={ROLE_TAG: "db"})
        cycle_until_idle(w)
        hold = w.partition().reservations.by_key["db-0"]
        assert hold.node_id == node and hold.history
        # A small ask that fits only the history node's leftover is not placed there meanwhile.
        w.add_app("batch")
        w.ask("small", "batch", {"memory": 40, "vcore": 1})
        cycle_until_idle(w)
        assert "small" in w.app("batch").asks
        # The node frees up: the waiting instance gets it first, then the hold is gone.
        w.release("filler", "fill-history")
        cycle_until_idle(w)
        assert w.app("app-2").allocations["db-0"].node_id == node
        assert w.app("batch").allocations["small"].node_id == node
        assert "db-0" not in w.partition().reservations.by_key
    finally:
        w.close()


def test_the_hold_ends_at_the_placement_timeout(w: World) -> None:
    node = fill_history_node(w)
    w.add_app("app-2", tags={HISTORY_KEY_TAG: "svc", "pyscheduler.io/role-history.placement-timeout": "5s"})
    w.ask("db-0", "app-2", {"memory": 100, "vcore": 1}, allocation_tags={ROLE_TAG: "db"})
    cycle_until_idle(w)
    assert w.partition().reservations.by_key["db-0"].node_id == node
    w.clock.advance(5.001)
    cycle_until_idle(w)
    assert "db-0" not in w.partition().reservations.by_key
    assert w.app("app-2").allocations["db-0"].node_id != node


def test_strict_never_falls_back(w: World) -> None:
    node = fill_history_node(w)
    w.add_app("app-2", tags={HISTORY_KEY_TAG: "svc", "pyscheduler.io/role-history.policy": "strict"})
    w.ask("db-0", "app-2", {"memory": 100, "vcore": 1}, allocation_tags={ROLE_TAG: "db"})
    w.clock.advance(3600.0)
    cycle_until_idle(w)
    assert "db-0" in w.app("app-2").asks
    w.release("filler", "fill")
    cycle_until_idle(w)
    assert w.app("app-2").allocations["db-0"].node_id == node


def test_anywhere_skips_history(w: World) -> None:
    [node] = start(w, "app-1", "cache", 1)
    w.remove_app("app-1")
    history = w.partition().role_histories.get("svc")
    assert history is not None and history.recent("cache") == [node]
    start(w, "app-2", "cache", 1, **{"pyscheduler.io/role-history.policy.cache": "anywhere"})
    assert w.partition().role_histories.history_placements == 0, "placed by the normal order"


def test_failures_over_the_threshold_skip_the_node_until_the_window_resets(w: World) -> None:
    tags = {"pyscheduler.io/role-history.failure-threshold": "1", "pyscheduler.io/role-history.failure-window": "1h"}
    [node] = start(w, "app-1", "worker", 1, **tags)
    for attempt in range(2):  # two failures on the node: over a threshold of 1
        w.allocs(releases=(si.AllocationRelease(partition_name="default", application_id="app-1",
                                                allocation_key=f"app-1-worker-{attempt}" if attempt == 0 else "retry",
                                                termination_type=si.TerminationType.STOPPED_BY_RM, failed=True),))
        if attempt == 0:
            w.ask("retry", "app-1", {"memory": 100, "vcore": 1}, allocation_tags={ROLE_TAG: "worker"})
            cycle_until_idle(w)
            assert w.app("app-1").allocations["retry"].node_id == node, "one failure is not over the threshold"
    history = w.partition().role_histories.get("svc")
    assert history is not None and history.entry(node, "worker").failed_recently == 2  # type: ignore[union-attr]
    w.ask("next", "app-1", {"memory": 100, "vcore": 1}, allocation_tags={ROLE_TAG: "worker"})
    cycle_until_idle(w)
    assert w.app("app-1").allocations["next"].node_id != node
    w.release("app-1", "next")
    w.clock.advance(3601.0)
    w.ask("after", "app-1", {"memory": 100, "vcore": 1}, allocation_tags={ROLE_TAG: "worker"})
    cycle_until_idle(w)
    assert w.app("app-1").allocations["after"].node_id == node, "the failure window reset"


def test_an_unlimited_threshold_never_skips(w: World) -> None:
    settings = role_settings("r", {"pyscheduler.io/role-history.failure-threshold": "-1"}, {})
    assert not settings.over_threshold(10**6)
    assert role_settings("r", {}, {}).over_threshold(4) and not role_settings("r", {}, {}).over_threshold(3)


def test_unschedulable_and_removed_nodes_are_skipped_and_come_back(w: World) -> None:
    [node] = start(w, "app-1", "worker", 1)
    w.remove_app("app-1")
    w.node(node, si.NodeAction.DRAIN_NODE)
    other = start(w, "app-2", "worker", 1)
    assert other != [node]
    w.remove_app("app-2")
    history = w.partition().role_histories.get("svc")
    assert history is not None and node in history.offline


def test_settings_sources_and_bad_values() -> None:
    queue = {"role-history.policy": "strict", "role-history.placement-timeout": "2m"}
    assert role_settings("db", {}, queue).policy is PlacementPolicy.STRICT
    assert role_settings("db", {}, queue).placement_timeout == 120.0
    tags = {"pyscheduler.io/role-history.policy": "anywhere", "pyscheduler.io/role-history.policy.db": "default"}
    assert role_settings("db", tags, queue).policy is PlacementPolicy.DEFAULT
    assert role_settings("web", tags, queue).policy is PlacementPolicy.ANYWHERE
    bad = {"pyscheduler.io/role-history.policy": "sometimes", "pyscheduler.io/role-history.placement-timeout": "-3s",
           "pyscheduler.io/role-history.failure-threshold": "-7"}
    settings = role_settings("db", bad, {})
    assert (settings.policy, settings.placement_timeout, settings.failure_threshold) == (PlacementPolicy.DEFAULT, 30.0, 3)


def fail_on(world: World, app_id: str, key: str) -> None:
    world.allocs(releases=(si.AllocationRelease(partition_name="default", application_id=app_id, allocation_key=key,
                                                termination_type=si.TerminationType.STOPPED_BY_RM, failed=True),))


def test_strict_ignores_failures_where_default_moves_on(w: World) -> None:
    # Two instances of "db" and two of "log" ran on the same two nodes and failed there 4 times.
    nodes = start(w, "app-1", "db", 2) + start(w, "app-1b", "log", 2)
    history = w.partition().role_histories.get("svc")
    assert history is not None
    for role in ("db", "log"):
        for node in set(nodes):
            entry = history.entry(node, role)
            if entry is not None:
                entry.failed_recently = 4
    w.remove_app("app-1")
    w.remove_app("app-1b")
    strict = start(w, "app-2", "log", 2, **{"pyscheduler.io/role-history.policy": "strict"})
    assert sorted(strict) == sorted(nodes[2:]), "strict returns to its nodes whatever their failures"
    default = start(w, "app-3", "db", 2)
    assert not set(default) & set(nodes[:2]), "default skips nodes over the failure threshold"


def test_a_removed_ask_gives_its_target_back(w: World) -> None:
    node = fill_history_node(w)
    w.add_app("app-2", tags={HISTORY_KEY_TAG: "svc"})
    w.ask("db-0", "app-2", {"memory": 100, "vcore": 1}, allocation_tags={ROLE_TAG: "db"})
    cycle_until_idle(w)
    history = w.partition().role_histories.get("svc")
    assert history is not None and history.target_of("db-0") == node and node not in history.recent("db")
    w.release("app-2", "db-0")  # the RM takes the ask back (flex down)
    assert history.target_of("db-0") is None and history.recent("db") == [node]
    assert "db-0" not in w.partition().reservations.by_key


def test_a_role_without_a_history_key_uses_the_application_id(w: World) -> None:
    w.add_app("lonely")
    w.ask("lonely-0", "lonely", {"memory": 100, "vcore": 1}, allocation_tags={ROLE_TAG: "db"})
    cycle_until_idle(w)
    node = w.app("lonely").allocations["lonely-0"].node_id
    history = w.partition().role_histories.get("lonely")
    assert history is not None and history.entry(node, "db") is not None
    # It comes back to the node when the instance restarts under the same application.
    w.release("lonely", "lonely-0")
    w.ask("lonely-1", "lonely", {"memory": 100, "vcore": 1}, allocation_tags={ROLE_TAG: "db"})
    cycle_until_idle(w)
    assert w.app("lonely").allocations["lonely-1"].node_id == node


def test_a_failed_instance_counts_against_its_node(w: World) -> None:
    [node] = start(w, "app-1", "db", 1)
    fail_on(w, "app-1", "app-1-db-0")
    history = w.partition().role_histories.get("svc")
    assert history is not None
    entry = history.entry(node, "db")
    assert entry is not None and (entry.failed, entry.failed_recently, entry.live) == (1, 1, 0)
    assert history.recent("db") == [node], "a failed instance's node is available again"
