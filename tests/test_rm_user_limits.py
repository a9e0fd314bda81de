"""User and group tracking through the RM interface: usage follows allocations and releases
(USERGROUP events), limits come from queues.yaml (partition and queue level, wildcards, groups)
and change on reload; headroom and can-run queries through ``partition.ugm``."""

from __future__ import annotations

from rm_helpers import C, D, T, World, check_invariants, res

LIMITS = """
partitions:
  - name: default
    limits:
      - limit: alice at root
        users: [alice]
        maxresources: {memory: 100, vcore: 10}
        maxapplications: 2
      - limit: dev group
        groups: [dev]
        maxresources: {memory: 150}
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
            limits:
              - limit: everyone in a
                users: ["*"]
                maxresources: {memory: 50}
          - name: b
"""


def _world(config: str = LIMITS) -> World:
    w = World(config)
    w.add_node("n1", memory=10_000, vcore=10_000)
    return w


def test_usage_follows_allocations_with_events() -> None:
    w = _world()
    try:
        w.add_app("app-1", "root.a", user="alice", groups=("dev", "other"))
        w.ask("k1", "app-1", res(memory=20, vcore=1000))
        mark = w.mark()
        w.commit("app-1", "k1", "n1")
        ugm = w.partition().ugm
        assert ugm.user_usage("alice", "root.a") == res(memory=20, vcore=1000)
        assert ugm.user_usage("alice", "root") == res(memory=20, vcore=1000)
        # dev has a limit, so app-1 is tracked for dev too.
        assert ugm.app_group("app-1") == "dev"
        assert ugm.group_usage("dev", "root.a") == res(memory=20, vcore=1000)
        records = w.records(mark)
        ug = [r for r in records if r[0] == T.USERGROUP]
        assert [r[:6] for r in ug] == [
            (T.USERGROUP, C.SET, D.UG_APP_LINK, "dev", "app-1", ""),
            (T.USERGROUP, C.ADD, D.UG_USER_RESOURCE, "alice", "root.a", ""),
            (T.USERGROUP, C.ADD, D.UG_GROUP_RESOURCE, "dev", "root.a", ""),
        ]
        assert ug[1][6] == {"memory": 20, "vcore": 1000}
        # The usage comes after the app is running and before the APP_ALLOC event (YuniKorn's order).
        tuples = [r[:3] for r in records]
        assert tuples.index((T.APP, C.SET, D.APP_RUNNING)) < tuples.index((T.USERGROUP, C.ADD, D.UG_USER_RESOURCE))
        assert tuples[-1] == (T.APP, C.ADD, D.APP_ALLOC)

        mark = w.mark()
        w.release("app-1", "k1")
        ug = [r[:6] for r in w.records(mark) if r[0] == T.USERGROUP]
        assert (T.USERGROUP, C.REMOVE, D.UG_USER_RESOURCE, "alice", "root.a", "") in ug
        assert (T.USERGROUP, C.REMOVE, D.UG_GROUP_RESOURCE, "dev", "root.a", "") in ug
        assert ugm.user_usage("alice").is_zero() and ugm.group_usage("dev").is_zero()
        check_invariants(w.context)
    finally:
        w.close()


def test_group_is_not_tracked_without_a_group_limit() -> None:
    w = _world()
    try:
        w.add_app("app-1", "root.b", user="bob", groups=("ops",))
        mark = w.mark()
        w.allocate("k1", "app-1", "n1", res(memory=5))
        ugm = w.partition().ugm
        assert ugm.app_group("app-1") is None
        assert ugm.tracked_groups() == []
        ug = [r[:6] for r in w.records(mark) if r[0] == T.USERGROUP]
        assert ug == [(T.USERGROUP, C.ADD, D.UG_USER_RESOURCE, "bob", "root.b", "")]
    finally:
        w.close()


def test_headroom_is_the_tightest_limit_on_the_path() -> None:
    w = _world()
    try:
        ugm = w.partition().ugm
        w.add_app("app-1", "root.a", user="alice", groups=("dev",))
        # root: alice 100 mem / 10 vcore; root.a: everyone 50 mem; dev group 150 mem.
        assert ugm.headroom("root.a", "app-1", "alice", ("dev",)) == res(memory=50, vcore=10_000)
        assert ugm.headroom("root.b", "app-1", "alice", ("dev",)) == res(memory=100, vcore=10_000)
        w.allocate("k1", "app-1", "n1", res(memory=30, vcore=4000))
        assert ugm.headroom("root.a", "app-1", "alice", ("dev",)) == res(memory=20, vcore=6000)
        # Another user: only the wildcard of root.a applies to carol.
        assert ugm.headroom("root.a", "app-x", "carol", ()) == res(memory=50)
        assert ugm.headroom("root.b", "app-x", "carol", ()) is None
        # bob (dev) in root.b: alice's usage is not his, the dev group's is shared.
        w.add_app("app-2", "root.b", user="bob", groups=("dev",))
        w.allocate("k2", "app-2", "n1", res(memory=100))
        assert ugm.group_usage("dev") == res(memory=130, vcore=4000)
        assert ugm.headroom("root.b", "app-2", "bob", ("dev",)) == res(memory=20)
        # Headroom may go negative when usage was recovered past the limit.
        w.ask("k3", "app-1", res(memory=40), node_id="n1")
        assert ugm.headroom("root.a", "app-1", "alice", ("dev",))["memory"] == -20
        check_invariants(w.context)
    finally:
        w.close()


def test_max_applications_per_user() -> None:
    w = _world()
    try:
        ugm = w.partition().ugm
        for app_id in ("app-1", "app-2", "app-3"):
            w.add_app(app_id, "root.b", user="alice")
        w.allocate("k1", "app-1", "n1", res(memory=1))
        assert ugm.can_run_app("root.b", "app-2", "alice", ())
        w.allocate("k2", "app-2", "n1", res(memory=1))
        # Two running: a third may not run, the running ones may.
        assert not ugm.can_run_app("root.b", "app-3", "alice", ())
        assert ugm.can_run_app("root.b", "app-1", "alice", ())
        assert ugm.can_run_app("root.b", "app-3", "bob", ())
        # app-1 done: the slot is free again.
        w.release("app-1", "k1")
        assert ugm.can_run_app("root.b", "app-3", "alice", ())
    finally:
        w.close()


def test_removed_or_completed_app_leaves_no_usage() -> None:
    w = _world()
    try:
        ugm = w.partition().ugm
        w.add_app("app-1", "root.a", user="alice", groups=("dev",))
        w.allocate("k1", "app-1", "n1", res(memory=10))
        w.allocate("k2", "app-1", "n1", res(memory=10))
        w.remove_app("app-1")
        assert ugm.tracked_users() == [] and ugm.tracked_groups() == []
        w.add_app("app-2", "root.a", user="alice", groups=("dev",))
        w.allocate("k3", "app-2", "n1", res(memory=10))
        w.release("app-2", "k3")
        w.advance(30)
        assert "app-2" not in w.partition().applications
        assert ugm.tracked_users() == [] and ugm.usage_dao() == {"users": [], "groups": []}
        check_invariants(w.context)
    finally:
        w.close()


def test_reload_changes_limits() -> None:
    w = _world()
    try:
        ugm = w.partition().ugm
        w.add_app("app-1", "root.b", user="alice")
        w.allocate("k1", "app-1", "n1", res(memory=10))
        assert ugm.headroom("root.b", "app-1", "alice", ()) == res(memory=90, vcore=10_000)
        mark = w.mark()
        w.reload(LIMITS.replace("maxresources: {memory: 100, vcore: 10}", "maxresources: {memory: 60, vcore: 10}"))
        assert ugm.headroom("root.b", "app-1", "alice", ()) == res(memory=50, vcore=10_000)
        assert (T.USERGROUP, C.SET, D.UG_USER_LIMIT, "alice", "root", "") in w.events(mark)
        # Limits removed from the configuration are gone.
        mark = w.mark()
        w.reload("""
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
          - name: b
""")
        assert ugm.headroom("root.b", "app-1", "alice", ()) is None
        assert ugm.headroom("root.a", "app-x", "carol", ()) is None
        events = w.events(mark)
        assert (T.USERGROUP, C.REMOVE, D.UG_USER_LIMIT, "alice", "root", "") in events
        assert (T.USERGROUP, C.REMOVE, D.UG_USER_LIMIT, "*", "root.a", "") in events
        # Usage itself is untouched by the reload.
        assert ugm.user_usage("alice") == res(memory=10)
    finally:
        w.close()


def test_group_limit_removed_on_reload_unlinks_the_app() -> None:
    w = _world()
    try:
        ugm = w.partition().ugm
        w.add_app("app-1", "root.b", user="alice", groups=("dev",))
        w.allocate("k1", "app-1", "n1", res(memory=10))
        assert ugm.app_group("app-1") == "dev"
        mark = w.mark()
        w.reload(LIMITS.replace("      - limit: dev group\n        groups: [dev]\n        maxresources: {memory: 150}\n", ""))
        assert ugm.app_group("app-1") is None
        assert ugm.tracked_groups() == []
        events = w.events(mark)
        assert (T.USERGROUP, C.REMOVE, D.UG_GROUP_RESOURCE, "dev", "root.b", "") in events
        assert (T.USERGROUP, C.REMOVE, D.UG_APP_LINK, "dev", "app-1", "") in events
        check_invariants(w.context)
    finally:
        w.close()
