"""User limits and maxApplications in the scheduling cycle, through the RM interface: what a
user or queue may not have it does not get, the APP_CANNOTRUN_* / APP_RUNNABLE_* events
report each change of the verdict, and the rest follows once something is released."""

from __future__ import annotations

from scheduling_helpers import C, D, T, clusters, config  # noqa: F401

from pyscheduler.objects.application_state import AppState
from pyscheduler.si import messages as si
from pyscheduler.scheduler.cycle import USER_QUOTA

USER_LIMITS = config("""\
          - name: a
            limits:
              - limit: alice in a
                users: [alice]
                maxresources: {memory: 30}
                maxapplications: 1
          - name: b
""")

QUEUE_MAX_APPS = config("""\
          - name: a
            maxapplications: 1
          - name: p
            maxapplications: 2
            queues:
              - name: x
                maxapplications: 2
              - name: y
                maxapplications: 2
""")


def _runnable_events(events, app_id):
    """The runnable-verdict events of one app: (change type, detail)."""
    details = {D.APP_CANNOTRUN_QUEUE, D.APP_RUNNABLE_QUEUE, D.APP_CANNOTRUN_QUOTA, D.APP_RUNNABLE_QUOTA}
    return [(e[1], e[2]) for e in events if e[0] == T.APP and e[3] == app_id and e[2] in details]


def test_user_max_resources_holds_and_frees_with_releases(clusters) -> None:
    c = clusters(USER_LIMITS)
    c.add_nodes(2)
    c.add_app("app-1", "root.a", user="alice")
    keys = c.asks("app-1", 5)
    assert c.schedule() == 3
    assert c.partition.ugm.user_usage("alice", "root.a")["memory"] == 30
    assert c.once() == []
    assert all(a.alloc_log.get(USER_QUOTA, 0) >= 1 for a in c.app("app-1").asks.values())
    # Another user in the same queue is not limited by alice's limit.
    c.add_app("app-2", "root.a", user="bob")
    c.asks("app-2", 5)
    assert c.schedule() == 5
    # One release: one more for alice.
    c.release("app-1", next(k for k in keys if k in c.placements()))
    assert c.schedule() == 1
    assert c.partition.ugm.user_usage("alice", "root.a")["memory"] == 30
    assert len(c.app("app-1").asks) == 1
    c.assert_healthy()


def test_user_max_applications_with_quota_events(clusters) -> None:
    c = clusters(USER_LIMITS)
    c.add_nodes(2)
    c.add_app("app-1", "root.a", user="alice")
    c.add_app("app-2", "root.a", user="alice")
    c.ask("k1", "app-1")
    c.ask("k2", "app-2")
    mark = c.mark()
    assert c.schedule() == 1
    assert list(c.placements()) == ["k1"]
    assert c.app("app-1").state is AppState.RUNNING
    assert c.app("app-2").state is AppState.ACCEPTED
    events = c.events(mark)
    assert _runnable_events(events, "app-2") == [(C.NONE, D.APP_CANNOTRUN_QUOTA)]
    assert _runnable_events(events, "app-1") == []
    # Still not runnable: the verdict did not change, so no new event.
    mark = c.mark()
    assert c.once() == []
    assert _runnable_events(c.events(mark), "app-2") == []
    # app-1's only allocation ends: alice runs no app any more and app-2 may run.
    mark = c.mark()
    c.release("app-1", "k1")
    assert c.schedule() == 1
    assert list(c.placements()) == ["k2"]
    assert _runnable_events(c.events(mark), "app-2") == [(C.NONE, D.APP_RUNNABLE_QUOTA)]
    assert c.app("app-2").state is AppState.RUNNING
    # A user without the limit was never held back.
    c.add_app("app-3", "root.a", user="bob")
    c.add_app("app-4", "root.a", user="bob")
    c.ask("k3", "app-3")
    c.ask("k4", "app-4")
    assert c.schedule() == 2
    c.assert_healthy()


def test_queue_max_applications_with_queue_events(clusters) -> None:
    c = clusters(QUEUE_MAX_APPS)
    c.add_nodes(2)
    c.add_app("app-1", "root.a")
    c.add_app("app-2", "root.a", user="bob")
    c.asks("app-1", 2)
    c.asks("app-2", 2)
    mark = c.mark()
    assert c.schedule() == 2
    assert c.per_app() == {"app-1": 2}
    assert c.queue("root.a").running_apps == 1
    assert _runnable_events(c.events(mark), "app-2") == [(C.NONE, D.APP_CANNOTRUN_QUEUE)]
    assert c.app("app-2").state is AppState.ACCEPTED
    # The RM removes app-1 (its pods are gone): its slot goes to app-2.
    mark = c.mark()
    c.remove_app("app-1")
    assert c.schedule() == 2
    assert c.per_app() == {"app-2": 2}
    assert _runnable_events(c.events(mark), "app-2") == [(C.NONE, D.APP_RUNNABLE_QUEUE)]
    assert c.queue("root.a").running_apps == 1
    c.assert_healthy()


def test_parent_max_applications_counts_the_children_together(clusters) -> None:
    c = clusters(QUEUE_MAX_APPS)
    c.add_nodes(2)
    for app_id, leaf in (("app-1", "root.p.x"), ("app-2", "root.p.y"), ("app-3", "root.p.x")):
        c.add_app(app_id, leaf)
        c.ask(f"{app_id}-k", app_id)
    mark = c.mark()
    assert c.schedule() == 2
    assert set(c.per_app()) == {"app-1", "app-2"}
    assert c.queue("root.p").running_apps == 2
    assert _runnable_events(c.events(mark), "app-3") == [(C.NONE, D.APP_CANNOTRUN_QUEUE)]
    c.remove_app("app-2")
    assert c.schedule() == 1
    assert set(c.per_app()) == {"app-1", "app-3"}
    c.assert_healthy()


def test_an_accepted_app_over_the_limit_does_not_block_others_behind_it(clusters) -> None:
    c = clusters(USER_LIMITS)
    c.add_nodes(1)
    c.add_app("app-1", "root.a", user="alice")
    c.ask("k1", "app-1")
    assert c.schedule() == 1
    # app-2 (alice, blocked) comes first in fifo order; app-3 (bob) behind it still runs.
    c.add_app("app-2", "root.a", user="alice")
    c.add_app("app-3", "root.a", user="bob")
    c.ask("k2", "app-2")
    c.ask("k3", "app-3")
    assert c.schedule() == 1
    assert set(c.placements()) == {"k1", "k3"}
    c.assert_healthy()


def test_an_app_that_lost_its_allocations_but_still_waits_keeps_its_user_slot(clusters) -> None:
    # Found by the randomized test: alice may run one app in root.a. app-1 runs, then its node
    # goes (its only allocation with it) while it still has an ask pending. It has not finished
    # (YuniKorn's hasZeroAllocations: nothing pending and nothing allocated), so alice's other
    # app must not take the slot.
    c = clusters(USER_LIMITS)
    c.add_node("node-00")
    c.add_app("app-1", "root.a", user="alice")
    c.ask("k1", "app-1")
    assert c.schedule() == 1
    c.ask("k2", "app-1", tags={si.TAG_REQUIRED_NODE: "node-09"})  # waits for a node to come
    c.remove_node("node-00")
    assert not c.app("app-1").allocations and c.app("app-1").asks
    c.add_node("node-01")
    c.add_app("app-2", "root.a", user="alice")
    c.ask("k3", "app-2")
    assert c.schedule() == 0
    assert c.app("app-2").state is AppState.ACCEPTED
    # app-1's last ask is withdrawn: it completes, and once Completed its slot is free.
    c.release("app-1", "k2")
    assert c.app("app-1").state is AppState.COMPLETING
    c.advance(30)
    assert c.schedule() == 1
    assert c.rm.app_state("app-1") == "Completed"
    assert list(c.placements()) == ["k3"]
    c.assert_healthy()


def test_an_app_that_never_ran_takes_no_max_applications_slot(clusters) -> None:
    # Found by the randomized test: an Accepted app whose asks are withdrawn goes to Completing
    # without ever running; only Running counts for maxApplications (YuniKorn's enter/leave
    # Running callbacks), so it must not push the count past the max.
    c = clusters(QUEUE_MAX_APPS)  # root.a: maxapplications 1
    c.add_nodes(1)
    c.add_app("app-1", "root.a")
    c.ask("k1", "app-1")
    assert c.schedule() == 1
    c.add_app("app-2", "root.a", user="bob")
    c.ask("k2", "app-2")
    assert c.schedule() == 0  # blocked by maxapplications
    c.release("app-2", "k2")  # withdrawn before it ever ran
    assert c.app("app-2").state is AppState.COMPLETING
    assert c.queue("root.a").running_apps == 1
    # Its slot was never taken: once app-1 is gone, a third app runs at once.
    c.remove_app("app-1")
    c.add_app("app-3", "root.a", user="carol")
    c.ask("k3", "app-3")
    assert c.schedule() == 1
    assert list(c.placements()) == ["k3"]
    c.assert_healthy()


def test_a_reserved_ask_of_an_app_that_can_no_longer_run_waits(clusters) -> None:
    # app-1 reserves a node while it may still run; app-2 then takes root.a's only slot. When the
    # reserved node frees up, app-1 (still Accepted) must not get it (YuniKorn's
    # TryReservedAllocate skips unrunnable Accepted apps).
    c = clusters(QUEUE_MAX_APPS)  # root.a: maxapplications 1
    c.add_node("node-00", memory=100, vcore=10)
    c.add_node("node-01", memory=20, vcore=2)  # too small for "big"
    c.add_app("filler", "root.p.x", user="carol")
    c.ask("f1", "filler", memory=50, vcore=1)
    assert c.schedule() == 1
    c.add_app("app-1", "root.a")
    c.ask("big", "app-1", memory=60, vcore=1)
    assert c.schedule() == 0
    c.advance(2)
    c.once()
    assert c.reserved() == {"big": "node-00"}
    c.add_app("app-2", "root.a", user="bob")
    c.ask("small", "app-2")
    assert c.schedule() == 1
    assert c.placements()["small"] == "node-01"
    assert c.queue("root.a").running_apps == 1
    c.release("filler", "f1")  # "big" would fit its reserved node now
    assert c.schedule() == 0
    assert "big" not in c.placements() and c.app("app-1").state is AppState.ACCEPTED
    assert c.queue("root.a").running_apps == 1
    # Once app-2 is gone, app-1 may run and takes its reserved node.
    c.remove_app("app-2")
    assert c.schedule() == 1
    assert c.placements()["big"] == "node-00"
    c.assert_healthy()
