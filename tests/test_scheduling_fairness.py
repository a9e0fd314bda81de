"""The scheduling cycle through the RM interface: fair sharing between queues, node sorting
(fair spreads, binpacking fills), queue maximums (leaf and parent) and repeatable runs."""

from __future__ import annotations

from scheduling_helpers import Cluster, clusters, config  # noqa: F401

from pyscheduler.objects.application_state import AppState
from pyscheduler.scheduler.cycle import QUEUE_QUOTA


def test_two_queues_with_equal_demand_share_the_cluster_equally(clusters) -> None:
    c = clusters()
    c.add_nodes(10)  # 10 x (100 memory, 10 vcore): room for 100 asks of (10, 1)
    c.add_app("app-a", "root.a")
    c.add_app("app-b", "root.b", user="bob")
    c.asks("app-a", 80)
    c.asks("app-b", 80)
    # One allocation per cycle: the queues take turns, never more than one apart. Equal shares
    # tie, and ties go by queue name: a, b, a, b, ...
    for i in range(100):
        decisions = c.once()
        assert len(decisions) == 1
        assert decisions[0].app.app_id == ("app-a" if i % 2 == 0 else "app-b")
        counts = c.per_app()
        assert abs(counts["app-a"] - counts["app-b"]) <= 1, counts
    assert c.once() == []
    assert c.per_app() == {"app-a": 50, "app-b": 50}
    assert c.queue("root.a").allocated == c.queue("root.b").allocated
    assert c.queue("root.a").pending == c.queue("root.b").pending
    c.assert_healthy()


def test_guaranteed_shares_are_compared_relative_to_the_guarantee(clusters) -> None:
    # a is guaranteed twice what b is: with equal demand a gets about twice b's share.
    c = clusters(config("""\
          - name: a
            resources: {guaranteed: {memory: 400, vcore: 40}}
          - name: b
            resources: {guaranteed: {memory: 200, vcore: 20}}
"""))
    c.add_nodes(6)  # 60 slots
    c.add_app("app-a", "root.a")
    c.add_app("app-b", "root.b", user="bob")
    c.asks("app-a", 60)
    c.asks("app-b", 60)
    assert c.schedule() == 60
    assert c.per_app() == {"app-a": 40, "app-b": 20}
    c.assert_healthy()


def test_fair_node_sorting_spreads_twenty_asks_two_per_node(clusters) -> None:
    c = clusters(config("          - name: a\n", policy="fair"))
    nodes = c.add_nodes(10)
    c.add_app("app-1")
    keys = c.asks("app-1", 20)
    assert c.schedule() == 20
    assert c.per_node() == {n: 2 for n in nodes}
    # The first ten go to ten different nodes (the least used node first).
    placements = c.placements()
    assert sorted(placements[k] for k in keys[:10]) == nodes
    c.assert_healthy()


def test_binpacking_fills_one_node_before_the_next(clusters) -> None:
    c = clusters(config("          - name: a\n", policy="binpacking"))
    c.add_nodes(10)
    c.add_app("app-1")
    c.asks("app-1", 20)
    assert c.schedule() == 20
    # The RM heard of the allocations in order: ten on one node, then ten on the next.
    order = [a.node_id for a in c.rm.allocations.values()]
    assert order == ["node-00"] * 10 + ["node-01"] * 10
    assert c.per_node() == {"node-00": 10, "node-01": 10}
    c.assert_healthy()


def test_binpacking_prefers_the_most_used_node_that_fits(clusters) -> None:
    c = clusters(config("          - name: a\n", policy="binpacking"))
    c.add_nodes(3)
    c.add_app("app-1")
    c.ask("big", "app-1", memory=60, vcore=6)
    c.schedule()
    used = c.placements()["big"]
    c.asks("app-1", 4, memory=10, vcore=1)
    c.schedule()
    # 40 more fits next to the 60 already there: binpacking keeps filling that node.
    assert c.per_node() == {used: 5}
    c.assert_healthy()


def test_leaf_queue_at_its_max_gets_no_more_until_releases(clusters) -> None:
    c = clusters(config("""\
          - name: a
            resources: {max: {memory: 30}}
          - name: b
"""))
    c.add_nodes(2)
    c.add_app("app-1", "root.a")
    keys = c.asks("app-1", 5)
    assert c.schedule() == 3
    assert c.queue("root.a").allocated["memory"] == 30
    # The cycle keeps trying and logs why the other asks wait.
    assert c.once() == []
    app = c.app("app-1")
    assert all(a.alloc_log.get(QUEUE_QUOTA, 0) >= 1 for a in app.asks.values())
    # Another queue is not held back by a's max.
    c.add_app("app-2", "root.b", user="bob")
    c.asks("app-2", 4)
    assert c.schedule() == 4
    # A release makes room for exactly one more in a.
    placed = [k for k in keys if k in c.placements()]
    c.release("app-1", placed[0])
    assert c.schedule() == 1
    assert c.queue("root.a").allocated["memory"] == 30
    # Releasing the rest lets the last ask in.
    for key in placed[1:]:
        c.release("app-1", key)
    assert c.schedule() == 1
    assert not app.asks and len(app.allocations) == 2
    c.assert_healthy()


def test_parent_queue_at_its_max_limits_its_children_together(clusters) -> None:
    c = clusters(config("""\
          - name: p
            resources: {max: {memory: 40}}
            queues:
              - name: x
              - name: y
          - name: other
"""))
    c.add_nodes(2)
    c.add_app("app-x", "root.p.x")
    c.add_app("app-y", "root.p.y", user="bob")
    c.asks("app-x", 3)
    c.asks("app-y", 3)
    assert c.schedule() == 4
    assert c.queue("root.p").allocated["memory"] == 40
    # Fair between the children under the parent's max.
    assert c.per_app() == {"app-x": 2, "app-y": 2}
    # A queue outside the parent is not limited by it.
    c.add_app("app-o", "root.other", user="carol")
    c.asks("app-o", 5)
    assert c.schedule() == 5
    # Releases under the parent give the rest room, one allocation per release.
    x_keys = [k for k, a in c.rm.allocations.items() if a.application_id == "app-x"]
    c.release("app-x", x_keys[0])
    assert c.schedule() == 1
    y_keys = [k for k, a in c.rm.allocations.items() if a.application_id == "app-y"]
    c.release("app-y", y_keys[0])
    assert c.schedule() == 1
    assert not c.app("app-x").asks and not c.app("app-y").asks
    assert c.queue("root.p").allocated["memory"] == 40
    c.assert_healthy()


def _mixed_workload(cluster: Cluster, node_order: list[int]) -> None:
    """Apps in two queues, asks of several sizes and priorities, nodes of equal size (ties)."""
    cluster.update_nodes(*(cluster.node_msg(f"node-{i:02d}", 100, 10) for i in node_order))
    # Added in reverse id order, at the same (manual) time: ties between them go by id.
    for app_id, queue, user in (("app-d", "root.b", "bob"), ("app-c", "root.b", "bob"),
                                ("app-b", "root.a", "alice"), ("app-a", "root.a", "alice")):
        cluster.add_app(app_id, queue, user=user)
    for n, app_id in enumerate(("app-a", "app-b", "app-c", "app-d")):
        msgs = [cluster.ask_msg(f"{app_id}-{i:02d}", app_id, memory=5 + 5 * ((i + n) % 4), vcore=1 + (i % 2),
                                priority=i % 3) for i in range(12)]
        cluster.send(*reversed(msgs))


def test_equal_sort_keys_break_by_id_so_runs_repeat_exactly(clusters) -> None:
    runs = []
    for policy in ("fair", "binpacking"):
        per_policy = []
        for node_order in (list(range(8)), list(reversed(range(8))), [3, 7, 0, 5, 1, 6, 2, 4]):
            c = clusters(config("          - name: a\n          - name: b\n", policy=policy))
            _mixed_workload(c, node_order)
            c.schedule()
            # The order the RM heard of them too, not only where they went.
            per_policy.append([(k, a.node_id) for k, a in c.rm.allocations.items()])
            c.assert_healthy()
        assert per_policy[0] == per_policy[1] == per_policy[2], policy
        assert len(per_policy[0]) > 20
        runs.append(dict(per_policy[0]))
    assert runs[0] != runs[1]  # the policies do differ, so the comparison above means something


def test_fifo_apps_with_equal_submission_time_go_by_id(clusters) -> None:
    c = clusters(config("          - name: a\n"))
    c.add_node("node-00", memory=10, vcore=1)  # room for one ask
    c.add_app("app-z")
    c.add_app("app-m")
    c.ask("z-1", "app-z")
    c.ask("m-1", "app-m")
    assert c.schedule() == 1
    assert list(c.placements()) == ["m-1"]
    assert c.app("app-m").state is AppState.RUNNING and c.app("app-z").state is AppState.ACCEPTED


def test_fair_apps_compare_usage_shares_from_the_largest_down(clusters) -> None:
    """A fair leaf orders its applications by YuniKorn's CompUsageRatio against the queue's
    guarantee: equal largest shares (memory 0.5 each) are decided by the next share (vcore
    0.1 against 0.4), not by submission time."""
    c = clusters(config("""\
          - name: f
            properties: {application.sort.policy: fair}
            resources: {guaranteed: {memory: 100, vcore: 10}}
"""))
    c.add_nodes(2)
    c.add_app("busy", "root.f")  # submitted first: it would win a tie
    c.advance(1)
    c.add_app("light", "root.f")
    c.ask("b1", "busy", memory=50, vcore=4)
    c.ask("l1", "light", memory=50, vcore=1)
    assert c.schedule() == 2
    c.ask("b2", "busy")
    c.ask("l2", "light")
    [decision] = c.once()
    assert decision.app.app_id == "light"
    c.assert_healthy()


def test_usage_shares_without_a_guarantee_are_the_usage_itself() -> None:
    from pyscheduler.policies.sorting import usage_shares

    assert usage_shares({"memory": 50, "vcore": 4}, {"memory": 100, "vcore": 10}) == (0.5, 0.4)
    # No guarantee (or none for a type): the share is the quantity, as in YuniKorn's getShares.
    assert usage_shares({"memory": 20, "vcore": 3}, None) == (20.0, 3.0)
    assert usage_shares({"memory": 20, "gpu": 1}, {"memory": 40}) == (1.0, 0.5)
    assert usage_shares({"memory": 0, "vcore": 2}, {"vcore": 4}) == (0.5,)
    # Ordered as CompUsageRatio orders: more usage in a further type ranks higher.
    assert usage_shares({"memory": 50}, {"memory": 100}) < usage_shares({"memory": 50, "vcore": 1}, {"memory": 100, "vcore": 10})
