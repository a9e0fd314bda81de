"""Placement through the RM interface with real queues.yaml configurations: every rule
(provided, user, fixed, tag, the implicit recovery rule), create, filters, parent rules, ACLs,
the root.default fallback, dynamic queues (child templates, removal once empty), draining queues
and the gang-scheduling checks."""

from __future__ import annotations

import pytest
from rm_helpers import C, D, T, World, res

from pyscheduler.objects.queue import RECOVERY_QUEUE
from pyscheduler.si import messages as si

NO_MATCH = "application rejected: no placement rule matched"


def _config(rules: str, queues: str) -> str:
    return f"""
partitions:
  - name: default
    placementrules:
{rules}
    queues:
      - name: root
        submitacl: "*"
        queues:
{queues}
"""


@pytest.fixture
def make_world():
    made: list[World] = []

    def make(config: str) -> World:
        w = World(config)
        made.append(w)
        return w

    yield make
    for w in made:
        w.close()


def placed(w: World, app_id: str, queue: str = "", **kwargs) -> str:
    """Adds an app; returns its queue path, or "rejected: <reason>"."""
    w.add_app(app_id, queue, **kwargs)
    rejected = w.rm.rejected_apps.get(app_id)
    if rejected is not None:
        return f"rejected: {rejected}"
    assert app_id in w.rm.accepted_apps
    return w.app(app_id).queue.path


# -- provided -------------------------------------------------------------------------------------


def test_no_rules_means_provided_without_create(make_world) -> None:
    w = make_world(_config("", "          - name: a\n          - name: p\n            parent: true"))
    assert w.partition().placement.rule_names == ("provided", "recovery")
    assert placed(w, "q", "root.a") == "root.a"
    assert placed(w, "u", "a") == "root.a"  # unqualified: under root
    assert placed(w, "case", "ROOT.A") == "root.a"  # lower-cased
    assert placed(w, "missing", "root.nothere") == f"rejected: {NO_MATCH}"
    assert placed(w, "empty", "") == f"rejected: {NO_MATCH}"
    assert placed(w, "parent", "root.p") == f"rejected: {NO_MATCH}"  # only leaves hold apps
    assert w.queue("root.nothere") is None


def test_root_default_is_the_fallback_when_it_exists(make_world) -> None:
    w = make_world(_config("", "          - name: default\n          - name: a"))
    assert placed(w, "x", "root.nothere") == "root.default"
    assert placed(w, "y", "") == "root.default"
    assert placed(w, "z", "root.a") == "root.a"


def test_provided_with_create_makes_dynamic_queues(make_world) -> None:
    rules = "      - name: provided\n        create: true"
    queues = """          - name: a
          - name: p
            parent: true
            childtemplate:
              maxapplications: 4
              properties: {application.sort.policy: fair}
              resources:
                max: {memory: 100, vcore: 10}
                guaranteed: {memory: 50}"""
    w = make_world(_config(rules, queues))
    mark = w.mark()
    assert placed(w, "app-1", "root.p.x.y") == "root.p.x.y"
    events = w.events(mark)
    assert (T.QUEUE, C.ADD, D.QUEUE_DYNAMIC, "root.p.x", "", "") in events
    assert (T.QUEUE, C.ADD, D.QUEUE_DYNAMIC, "root.p.x.y", "", "") in events
    leaf = w.queue("root.p.x.y")
    assert leaf.is_leaf and not leaf.is_managed
    # The leaf takes the child template.
    assert leaf.max_resource == res(memory=100, vcore=10_000)
    assert leaf.guaranteed == res(memory=50)
    assert leaf.max_applications == 4
    assert leaf.sort_policy == "fair"
    assert not w.queue("root.p.x").is_leaf
    # Unqualified names have their dots replaced and go under root.
    assert placed(w, "app-2", "my.queue") == "root.my_dot_queue"
    # Invalid names are an error of the rule: the app is rejected with it.
    assert "invalid queue name" in placed(w, "app-3", "root.bad name!")
    # Nothing can be created below a leaf.
    assert "leaf" in placed(w, "app-4", "root.a.below")


def test_dynamic_queues_are_removed_once_empty(make_world) -> None:
    w = make_world(_config("      - name: provided\n        create: true", "          - name: p\n            parent: true"))
    w.add_node("n1")
    assert placed(w, "app-1", "root.p.x.y") == "root.p.x.y"
    w.allocate("k1", "app-1", "n1")
    w.advance(100)
    assert w.queue("root.p.x.y") is not None  # still used
    w.release("app-1", "k1")
    mark = w.mark()
    w.advance(30)  # completing timer: Completed, out of its queue, which then goes
    assert w.queue("root.p.x.y") is None and w.queue("root.p.x") is None
    assert w.queue("root.p") is not None  # managed: stays
    removed = [e for e in w.events(mark) if e[0] == T.QUEUE and e[1] == C.REMOVE]
    # Bottom-up: the leaf, then its dynamic parent; after the app left its queue.
    assert [e[2:4] for e in removed] == [
        (D.QUEUE_APP, "root.p.x.y"), (D.QUEUE_DYNAMIC, "root.p.x.y"), (D.QUEUE_DYNAMIC, "root.p.x"),
    ]


# -- user, fixed, tag ------------------------------------------------------------------------------


def test_user_rule_with_fixed_parent(make_world) -> None:
    rules = """      - name: user
        create: true
        parent:
          name: fixed
          value: users"""
    queues = """          - name: users
            parent: true
            childtemplate:
              maxapplications: 3"""
    w = make_world(_config(rules, queues))
    assert placed(w, "app-1", "ignored", user="john.doe") == "root.users.john_dot_doe"
    assert w.queue("root.users.john_dot_doe").max_applications == 3
    assert placed(w, "app-2", user="Mary") == "root.users.mary"


def test_user_rule_without_create_needs_the_queue(make_world) -> None:
    w = make_world(_config("      - name: user", "          - name: alice"))
    assert placed(w, "a1", user="alice") == "root.alice"
    assert placed(w, "b1", user="bob") == f"rejected: {NO_MATCH}"


def test_fixed_rule_qualified_and_under_a_parent(make_world) -> None:
    rules = """      - name: fixed
        value: leaf
        parent:
          name: fixed
          value: root.team
      - name: fixed
        value: root.other"""
    queues = """          - name: team
            queues:
              - name: leaf
          - name: other"""
    w = make_world(_config(rules, queues))
    assert placed(w, "app-1", "root.other") == "root.team.leaf"  # the request is ignored


def test_tag_rule(make_world) -> None:
    rules = """      - name: tag
        value: namespace
        create: true
        parent:
          name: fixed
          value: root.ns
      - name: provided"""
    queues = """          - name: ns
            parent: true
          - name: a"""
    w = make_world(_config(rules, queues))
    assert placed(w, "app-1", "root.a", tags={"namespace": "Dev"}) == "root.ns.dev"
    # Tag names are matched case-insensitively.
    assert placed(w, "app-2", "root.a", tags={"NameSpace": "prod"}) == "root.ns.prod"
    # No tag: the rule yields nothing and the next rule places the app.
    assert placed(w, "app-3", "root.a") == "root.a"
    assert placed(w, "app-4", "root.a", tags={"namespace": ""}) == "root.a"
    assert placed(w, "app-5", "root.a", tags={"namespace": "a.b"}) == "root.ns.a_dot_b"


# -- filters, ACLs, parents ------------------------------------------------------------------------


def test_filters_allow_and_deny(make_world) -> None:
    rules = """      - name: user
        create: true
        filter:
          type: allow
          groups: [devs]
      - name: fixed
        value: everyone
        filter:
          type: deny
          users: ["^bad.*"]
      - name: fixed
        value: quarantine"""
    queues = """          - name: everyone
          - name: quarantine"""
    w = make_world(_config(rules, queues))
    assert placed(w, "a1", user="dave", groups=("devs",)) == "root.dave"
    assert placed(w, "a2", user="erin", groups=("ops",)) == "root.everyone"
    assert placed(w, "a3", user="badguy") == "root.quarantine"


def test_submit_acl_skips_to_the_next_rule(make_world) -> None:
    config = """
partitions:
  - name: default
    placementrules:
      - name: provided
      - name: fixed
        value: open
    queues:
      - name: root
        submitacl: " admins"
        queues:
          - name: secret
            submitacl: "bob"
          - name: open
            submitacl: "*"
"""
    w = make_world(config)
    assert placed(w, "a1", "root.secret", user="bob") == "root.secret"
    assert placed(w, "a2", "root.secret", user="alice") == "root.open"
    assert placed(w, "a3", "root.secret", user="carol", groups=("admins",)) == "root.secret"


def test_submit_acl_denies_creation_under_a_closed_parent(make_world) -> None:
    config = """
partitions:
  - name: default
    placementrules:
      - name: provided
        create: true
    queues:
      - name: root
        submitacl: "admin"
        queues:
          - name: closed
            parent: true
"""
    w = make_world(config)
    assert placed(w, "a1", "root.closed.new", user="alice") == f"rejected: {NO_MATCH}"
    assert w.queue("root.closed.new") is None
    assert placed(w, "a2", "root.closed.new", user="admin") == "root.closed.new"


def test_parent_rule_returning_a_leaf_rejects(make_world) -> None:
    rules = """      - name: user
        create: true
        parent:
          name: tag
          value: team
      - name: fixed
        value: fallback"""
    queues = """          - name: leafy
          - name: fallback"""
    w = make_world(_config(rules, queues))
    assert "parent rule returned a leaf queue" in placed(w, "a1", tags={"team": "leafy"})
    # A parent rule that yields nothing just skips the rule.
    assert placed(w, "a2") == "root.fallback"


# -- recovery, draining, gang ----------------------------------------------------------------------


def test_forced_creation_goes_to_the_recovery_queue(make_world) -> None:
    w = make_world(_config("      - name: provided", "          - name: a"))
    mark = w.mark()
    assert placed(w, "forced", "root.gone", tags={si.APP_TAG_CREATE_FORCE: "true"}) == RECOVERY_QUEUE
    assert (T.QUEUE, C.ADD, D.QUEUE_DYNAMIC, RECOVERY_QUEUE, "", "") in w.events(mark)
    # Without the tag the same request is rejected; a rule that matches wins over recovery.
    assert placed(w, "plain", "root.gone") == f"rejected: {NO_MATCH}"
    assert placed(w, "forced-ok", "root.a", tags={si.APP_TAG_CREATE_FORCE: "true"}) == "root.a"


def test_draining_queue_takes_no_new_apps(make_world) -> None:
    rules = "      - name: provided"
    w = make_world(_config(rules, "          - name: a\n          - name: b\n          - name: default"))
    w.add_node("n1")
    assert placed(w, "old", "root.a") == "root.a"
    w.allocate("k1", "old", "n1")
    w.reload(_config(rules, "          - name: b\n          - name: default"))
    assert w.queue("root.a").is_draining
    # The draining queue is skipped: the app falls back to root.default.
    assert placed(w, "new", "root.a") == "root.default"
    # The running app keeps its queue until it is done.
    assert w.app("old").queue is w.queue("root.a")


def test_gang_application_needs_a_fifo_queue_that_fits(make_world) -> None:
    queues = """          - name: fifo
            resources:
              max: {memory: 100, vcore: 10}
          - name: fair
            properties: {application.sort.policy: fair}"""
    w = make_world(_config("      - name: provided", queues))
    assert placed(w, "g1", "root.fifo", placeholder_ask=res(memory=100, vcore=1)) == "root.fifo"
    reason = placed(w, "g2", "root.fifo", placeholder_ask=res(memory=101))
    assert reason.startswith("rejected: ") and "larger than max" in reason
    reason = placed(w, "g3", "root.fair", placeholder_ask=res(memory=1))
    assert reason.startswith("rejected: ") and "unsupported sort type" in reason
    # A normal app in the fair queue is fine.
    assert placed(w, "plain", "root.fair") == "root.fair"
    assert set(w.queue("root.fifo").applications) == {"g1"}
    assert set(w.queue("root.fair").applications) == {"plain"}
