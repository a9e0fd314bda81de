"""Behaviour tests of ``pyscheduler.policies.placement``: every rule kind with and without create,
filters, nested parent rules, the queue checks (leaf, submit ACL, draining), the ``root.default``
fallback, the recovery rule and the exact rejection messages.

The queue tree is a small in-test implementation of the ``QueueView`` / ``QueueInfo`` protocols
(the lead's queue objects implement the same protocol).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pytest

from pyscheduler.common.errors import ConfigError
from pyscheduler.policies.placement import (
    REJECTED_MESSAGE,
    FilterSpec,
    PlacementManager,
    PlacementRejected,
    PlacementResult,
    RuleSpec,
)

pytestmark = pytest.mark.timeout(60)


@dataclass
class Queue:
    """One queue of the test tree; ``acl`` holds users and groups allowed to submit (``*``: all)."""

    path: str
    is_leaf: bool = True
    is_draining: bool = False
    acl: frozenset[str] = frozenset({"*"})

    def submit_allowed(self, user: str, groups: Sequence[str]) -> bool:
        return "*" in self.acl or user in self.acl or any(g in self.acl for g in groups)


class Tree:
    """A queue tree: ``root`` is always a parent; ``parents`` are parent queues, ``leaves`` leaf
    queues; ``draining`` and ``acls`` (path -> allowed names) adjust queues."""

    def __init__(
        self,
        leaves: Iterable[str] = (),
        parents: Iterable[str] = (),
        *,
        draining: Iterable[str] = (),
        acls: dict[str, Iterable[str]] | None = None,
    ) -> None:
        self.queues: dict[str, Queue] = {"root": Queue("root", is_leaf=False)}
        for path in parents:
            self.queues[path] = Queue(path, is_leaf=False)
        for path in leaves:
            self.queues[path] = Queue(path)
        for path in draining:
            self.queues[path].is_draining = True
        for path, names in (acls or {}).items():
            self.queues[path].acl = frozenset(names)
        self.lookups: list[str] = []

    def get_queue(self, path: str) -> Queue | None:
        self.lookups.append(path)
        return self.queues.get(path)


def place(
    rules: Sequence[RuleSpec],
    view: Tree,
    *,
    queue: str = "",
    user: str = "alice",
    groups: Sequence[str] = (),
    tags: dict[str, str] | None = None,
) -> PlacementResult:
    return PlacementManager(rules).place("app-1", queue, user, groups, tags, view)


def rejected(rules: Sequence[RuleSpec], view: Tree, **kwargs: object) -> str:
    with pytest.raises(PlacementRejected) as info:
        place(rules, view, **kwargs)  # type: ignore[arg-type]
    assert str(info.value) == info.value.reason
    return info.value.reason


# --------------------------------------------------------------------------------------------
# default rules, fallback and rejection
# --------------------------------------------------------------------------------------------


def test_no_rules_means_one_provided_rule_without_create_then_recovery():
    manager = PlacementManager([])
    assert manager.rules == (RuleSpec("provided", create=False),)
    assert manager.rule_names == ("provided", "recovery")


def test_default_rules_place_in_an_existing_leaf():
    view = Tree(leaves=["root.a"])
    assert place([], view, queue="root.a") == PlacementResult("root.a", False)
    assert place([], view, queue="a") == PlacementResult("root.a", False)


def test_default_rules_do_not_create_and_fall_back_to_root_default():
    view = Tree(leaves=["root.default"])
    assert place([], view, queue="root.missing") == PlacementResult("root.default", False)
    assert place([], view, queue="") == PlacementResult("root.default", False)


def test_rejection_message_is_exact_when_nothing_matches_and_no_default_queue():
    assert REJECTED_MESSAGE == "application rejected: no placement rule matched"
    assert rejected([], Tree(leaves=["root.a"]), queue="root.missing") == REJECTED_MESSAGE


def test_fallback_root_default_is_checked_like_any_queue():
    draining = Tree(leaves=["root.default"], draining=["root.default"])
    assert rejected([], draining, queue="root.missing") == REJECTED_MESSAGE
    denied = Tree(leaves=["root.default"], acls={"root.default": ["bob"]})
    assert rejected([], denied, queue="root.missing", user="alice") == REJECTED_MESSAGE
    assert place([], denied, queue="root.missing", user="bob") == PlacementResult("root.default", False)


def test_fallback_only_after_the_last_rule():
    rules = [RuleSpec("provided"), RuleSpec("user", create=True)]
    view = Tree(leaves=["root.default"])
    # provided yields nothing (no create, no queue), the user rule still gets its turn
    assert place(rules, view, queue="missing", user="bob") == PlacementResult("root.bob", True)


# --------------------------------------------------------------------------------------------
# provided
# --------------------------------------------------------------------------------------------


def test_provided_with_create_makes_a_queue_under_root():
    rules = [RuleSpec("provided", create=True)]
    assert place(rules, Tree(), queue="Sales") == PlacementResult("root.sales", True)


def test_provided_fully_qualified_name_is_used_as_given():
    rules = [RuleSpec("provided", create=True)]
    view = Tree(parents=["root.a"])
    assert place(rules, view, queue="root.a.new") == PlacementResult("root.a.new", True)
    assert place(rules, view, queue="ROOT.A.New") == PlacementResult("root.a.new", True)
    assert place(rules, view, queue="root.x.y") == PlacementResult("root.x.y", True)


def test_provided_name_with_dots_is_one_queue_with_dots_replaced():
    rules = [RuleSpec("provided", create=True)]
    assert place(rules, Tree(), queue="team.a") == PlacementResult("root.team_dot_a", True)


def test_provided_without_create_skips_a_missing_queue_and_tries_the_next_rule():
    rules = [RuleSpec("provided"), RuleSpec("fixed", value="catch")]
    view = Tree(leaves=["root.catch"])
    assert place(rules, view, queue="missing") == PlacementResult("root.catch", False)


def test_provided_without_a_queue_name_yields_nothing():
    rules = [RuleSpec("provided", create=True)]
    assert rejected(rules, Tree(), queue="") == REJECTED_MESSAGE


def test_provided_result_that_is_a_parent_queue_is_skipped():
    rules = [RuleSpec("provided"), RuleSpec("fixed", value="other")]
    view = Tree(parents=["root.a"], leaves=["root.other"])
    assert place(rules, view, queue="root.a") == PlacementResult("root.other", False)


# --------------------------------------------------------------------------------------------
# user
# --------------------------------------------------------------------------------------------


def test_user_rule_with_create_replaces_dots_and_lower_cases():
    rules = [RuleSpec("user", create=True)]
    assert place(rules, Tree(), user="John.Doe") == PlacementResult("root.john_dot_doe", True)


def test_user_rule_without_create_needs_the_queue():
    rules = [RuleSpec("user")]
    assert rejected(rules, Tree(), user="bob") == REJECTED_MESSAGE
    assert place(rules, Tree(leaves=["root.bob"]), user="bob") == PlacementResult("root.bob", False)


def test_user_name_that_is_no_valid_queue_name_rejects_with_the_name_error():
    rules = [RuleSpec("user", create=True)]
    reason = rejected(rules, Tree(), user="bad user")
    assert reason == (
        "invalid queue name bad user, a name must only have alphanumeric characters, - or _, "
        "and be no longer than 64 characters"
    )


# --------------------------------------------------------------------------------------------
# fixed
# --------------------------------------------------------------------------------------------


def test_fixed_qualified_and_relative():
    view = Tree(leaves=["root.fixed"])
    assert place([RuleSpec("fixed", value="root.fixed")], view) == PlacementResult("root.fixed", False)
    assert place([RuleSpec("fixed", value="Fixed")], view) == PlacementResult("root.fixed", False)


def test_fixed_with_and_without_create():
    assert rejected([RuleSpec("fixed", value="nowhere")], Tree()) == REJECTED_MESSAGE
    assert place([RuleSpec("fixed", value="nowhere", create=True)], Tree()) == PlacementResult("root.nowhere", True)
    assert place([RuleSpec("fixed", value="root.p.q", create=True)], Tree()) == PlacementResult("root.p.q", True)


def test_fixed_relative_name_goes_under_the_parent_rule():
    rules = [RuleSpec("fixed", value="jobs", create=True, parent=RuleSpec("user", create=True))]
    assert place(rules, Tree(), user="alice") == PlacementResult("root.alice.jobs", True)


def test_fixed_configuration_errors():
    with pytest.raises(ConfigError, match="a fixed queue rule must have a queue name set"):
        PlacementManager([RuleSpec("fixed")])
    with pytest.raises(ConfigError, match="qualified queue name and a parent rule"):
        PlacementManager([RuleSpec("fixed", value="root.a", parent=RuleSpec("user"))])
    with pytest.raises(ConfigError, match="invalid queue name"):
        PlacementManager([RuleSpec("fixed", value="root.a b")])


# --------------------------------------------------------------------------------------------
# tag
# --------------------------------------------------------------------------------------------


def test_tag_rule_uses_the_tag_value_with_dots_replaced():
    rules = [RuleSpec("tag", value="Namespace", create=True)]
    assert place(rules, Tree(), tags={"namespace": "Dev.Team"}) == PlacementResult("root.dev_dot_team", True)
    # tag names are compared case-insensitively
    assert place(rules, Tree(), tags={"NAMESPACE": "ns1"}) == PlacementResult("root.ns1", True)


def test_tag_rule_without_create_needs_the_queue():
    rules = [RuleSpec("tag", value="namespace")]
    assert rejected(rules, Tree(), tags={"namespace": "ns1"}) == REJECTED_MESSAGE
    assert place(rules, Tree(leaves=["root.ns1"]), tags={"namespace": "ns1"}) == PlacementResult("root.ns1", False)


def test_tag_absent_or_empty_yields_nothing():
    rules = [RuleSpec("tag", value="namespace", create=True), RuleSpec("fixed", value="other")]
    view = Tree(leaves=["root.other"])
    assert place(rules, view, tags={}) == PlacementResult("root.other", False)
    assert place(rules, view, tags={"namespace": ""}) == PlacementResult("root.other", False)


def test_tag_value_fully_qualified_is_a_path():
    rules = [RuleSpec("tag", value="namespace", create=True, parent=RuleSpec("user", create=True))]
    assert place(rules, Tree(), tags={"namespace": "root.ns.x"}) == PlacementResult("root.ns.x", True)


def test_tag_value_too_long_rejects():
    rules = [RuleSpec("tag", value="namespace", create=True)]
    reason = rejected(rules, Tree(), tags={"namespace": "n" * 65})
    assert reason.startswith("invalid queue name " + "n" * 65 + ", a name must only have")


def test_tag_rule_needs_a_tag_name():
    with pytest.raises(ConfigError, match="a tag queue rule must have a tag name set"):
        PlacementManager([RuleSpec("tag")])


# --------------------------------------------------------------------------------------------
# filters
# --------------------------------------------------------------------------------------------


def user_rule(filter_spec: FilterSpec) -> list[RuleSpec]:
    return [RuleSpec("user", create=True, filter=filter_spec)]


def test_allow_filter_by_user_list():
    rules = user_rule(FilterSpec("allow", users=("alice", "bob")))
    assert place(rules, Tree(), user="bob") == PlacementResult("root.bob", True)
    assert rejected(rules, Tree(), user="carol") == REJECTED_MESSAGE


def test_deny_filter_by_user():
    rules = user_rule(FilterSpec("deny", users=("alice",)))
    assert rejected(rules, Tree(), user="alice") == REJECTED_MESSAGE
    assert place(rules, Tree(), user="bob") == PlacementResult("root.bob", True)


def test_allow_and_deny_filters_by_group():
    allow = user_rule(FilterSpec("allow", groups=("dev", "ops")))
    assert place(allow, Tree(), user="bob", groups=["x", "ops"]) == PlacementResult("root.bob", True)
    assert rejected(allow, Tree(), user="bob", groups=["x"]) == REJECTED_MESSAGE
    deny = user_rule(FilterSpec("DENY", groups=("sandbox",)))
    assert rejected(deny, Tree(), user="bob", groups=["sandbox"]) == REJECTED_MESSAGE
    assert place(deny, Tree(), user="bob", groups=["dev"]) == PlacementResult("root.bob", True)


def test_single_filter_entry_with_regexp_characters_is_a_regexp():
    users = user_rule(FilterSpec("allow", users=("^dev.*",)))
    assert place(users, Tree(), user="devon") == PlacementResult("root.devon", True)
    assert rejected(users, Tree(), user="adev") == REJECTED_MESSAGE
    groups = user_rule(FilterSpec("deny", groups=("test$",)))
    assert rejected(groups, Tree(), user="bob", groups=["unittest"]) == REJECTED_MESSAGE
    assert place(groups, Tree(), user="bob", groups=["tests"]) == PlacementResult("root.bob", True)


def test_regexp_characters_in_a_list_are_not_regexps():
    rules = user_rule(FilterSpec("allow", users=("dev.*", "bob")))
    assert rejected(rules, Tree(), user="devon") == REJECTED_MESSAGE
    assert place(rules, Tree(), user="bob") == PlacementResult("root.bob", True)


def test_user_match_wins_over_group_match():
    rules = user_rule(FilterSpec("deny", users=("alice",), groups=("ops",)))
    assert rejected(rules, Tree(), user="alice", groups=["dev"]) == REJECTED_MESSAGE
    assert rejected(rules, Tree(), user="bob", groups=["ops"]) == REJECTED_MESSAGE
    assert place(rules, Tree(), user="bob", groups=["dev"]) == PlacementResult("root.bob", True)


def test_empty_filter_allows_and_empty_deny_filter_denies():
    assert place(user_rule(FilterSpec()), Tree(), user="bob") == PlacementResult("root.bob", True)
    assert rejected(user_rule(FilterSpec("deny")), Tree(), user="bob") == REJECTED_MESSAGE


def test_filtered_rule_falls_through_to_the_next_rule():
    rules = [RuleSpec("user", create=True, filter=FilterSpec(users=("alice",))), RuleSpec("fixed", value="rest")]
    assert place(rules, Tree(leaves=["root.rest"]), user="bob") == PlacementResult("root.rest", False)


def test_filter_configuration_errors():
    with pytest.raises(ConfigError, match="invalid rule filter type maybe"):
        PlacementManager(user_rule(FilterSpec("maybe")))
    with pytest.raises(ConfigError, match=r"invalid rule filter user list is not a proper list or regexp: \[\(a\]"):
        PlacementManager(user_rule(FilterSpec(users=("(a",))))
    with pytest.raises(ConfigError, match="invalid rule filter group list"):
        PlacementManager(user_rule(FilterSpec(groups=("9bad",))))


# --------------------------------------------------------------------------------------------
# nested parent rules
# --------------------------------------------------------------------------------------------


def test_provided_under_a_user_parent_created_with_create():
    rules = [RuleSpec("provided", create=True, parent=RuleSpec("user", create=True))]
    assert place(rules, Tree(), queue="jobs", user="bob") == PlacementResult("root.bob.jobs", True)


def test_parent_rule_without_create_needs_its_queue():
    rules = [RuleSpec("provided", create=True, parent=RuleSpec("user"))]
    assert rejected(rules, Tree(), queue="jobs", user="bob") == REJECTED_MESSAGE
    view = Tree(parents=["root.bob"])
    assert place(rules, view, queue="jobs", user="bob") == PlacementResult("root.bob.jobs", True)
    view = Tree(parents=["root.bob"], leaves=["root.bob.jobs"])
    assert place(rules, view, queue="jobs", user="bob") == PlacementResult("root.bob.jobs", False)


def test_parent_rule_returning_a_leaf_rejects_with_the_parent_error():
    rules = [RuleSpec("provided", create=True, parent=RuleSpec("user")), RuleSpec("fixed", value="other")]
    view = Tree(leaves=["root.bob", "root.other"])
    assert rejected(rules, view, queue="jobs", user="bob") == "parent rule returned a leaf queue: root.bob"


def test_fully_qualified_provided_name_skips_the_parent_rule():
    rules = [RuleSpec("provided", create=True, parent=RuleSpec("user"))]
    assert place(rules, Tree(), queue="root.direct", user="bob") == PlacementResult("root.direct", True)


def test_parent_rule_filter_applies_to_the_whole_rule():
    parent = RuleSpec("user", create=True, filter=FilterSpec(users=("alice",)))
    rules = [RuleSpec("provided", create=True, parent=parent)]
    assert place(rules, Tree(), queue="jobs", user="alice") == PlacementResult("root.alice.jobs", True)
    assert rejected(rules, Tree(), queue="jobs", user="bob") == REJECTED_MESSAGE


def test_two_level_parent_chain_with_fixed_and_tag():
    rules = [
        RuleSpec(
            "user",
            create=True,
            parent=RuleSpec("tag", value="namespace", create=True, parent=RuleSpec("fixed", value="tenants")),
        )
    ]
    view = Tree(parents=["root.tenants"])
    result = place(rules, view, user="bob", tags={"namespace": "ns1"})
    assert result == PlacementResult("root.tenants.ns1.bob", True)


# --------------------------------------------------------------------------------------------
# queue checks: draining, ACL, creation below a leaf
# --------------------------------------------------------------------------------------------


def test_draining_queue_is_skipped():
    rules = [RuleSpec("provided"), RuleSpec("fixed", value="other")]
    view = Tree(leaves=["root.a", "root.other"], draining=["root.a"])
    assert place(rules, view, queue="root.a") == PlacementResult("root.other", False)


def test_submit_acl_denial_is_skipped():
    rules = [RuleSpec("provided"), RuleSpec("fixed", value="other")]
    view = Tree(leaves=["root.a", "root.other"], acls={"root.a": ["bob", "admins"]})
    assert place(rules, view, queue="root.a", user="alice") == PlacementResult("root.other", False)
    assert place(rules, view, queue="root.a", user="bob") == PlacementResult("root.a", False)
    assert place(rules, view, queue="root.a", user="carol", groups=["admins"]) == PlacementResult("root.a", False)


def test_queue_to_create_is_checked_against_its_nearest_existing_ancestor():
    rules = [RuleSpec("provided", create=True)]
    view = Tree(parents=["root.restricted"], acls={"root.restricted": ["admin"]})
    assert rejected(rules, view, queue="root.restricted.x.y", user="bob") == REJECTED_MESSAGE
    assert place(rules, view, queue="root.restricted.x.y", user="admin") == PlacementResult("root.restricted.x.y", True)
    assert "root.restricted.x" in view.lookups


def test_queue_to_create_below_a_leaf_rejects():
    rules = [RuleSpec("provided", create=True)]
    reason = rejected(rules, Tree(leaves=["root.leaf"]), queue="root.leaf.sub")
    assert reason == "failed to create rule based queue root.leaf.sub for application app-1: root.leaf is a leaf queue"


# --------------------------------------------------------------------------------------------
# recovery
# --------------------------------------------------------------------------------------------


def test_forced_application_goes_to_the_recovery_queue_without_checks():
    view = Tree(acls={"root": ["nobody"]})
    tags = {"application.create.force": "true"}
    assert place([], view, queue="root.missing", tags=tags) == PlacementResult("root.@recovery@", True)
    view.queues["root.@recovery@"] = Queue("root.@recovery@", acl=frozenset())
    assert place([], view, queue="root.missing", tags=tags) == PlacementResult("root.@recovery@", False)


def test_forced_application_still_uses_a_matching_rule_first():
    view = Tree(leaves=["root.a"])
    tags = {"Application.Create.Force": "1"}
    assert place([], view, queue="root.a", tags=tags) == PlacementResult("root.a", False)


def test_force_tag_is_parsed_like_go_parse_bool():
    view = Tree()
    for value in ("TRUE", "True", "t", "1"):
        result = place([], view, queue="x", tags={"application.create.force": value})
        assert result == PlacementResult("root.@recovery@", True)
    for value in ("yes", "false", " true", ""):
        assert rejected([], view, queue="x", tags={"application.create.force": value}) == REJECTED_MESSAGE


# --------------------------------------------------------------------------------------------
# rule set management
# --------------------------------------------------------------------------------------------


def test_rule_names_are_case_insensitive():
    manager = PlacementManager([RuleSpec("Provided"), RuleSpec("USER", create=True), RuleSpec("Tag", value="ns")])
    assert manager.rule_names == ("provided", "user", "tag", "recovery")


def test_unknown_rule_names_and_recovery_are_rejected_in_configuration():
    with pytest.raises(ConfigError, match="unknown rule name specified recovery, failing placement rule config"):
        PlacementManager([RuleSpec("recovery")])
    with pytest.raises(ConfigError, match="unknown rule name specified bogus"):
        PlacementManager([RuleSpec("provided", parent=RuleSpec("bogus"))])


def test_update_rules_replaces_the_rules_and_keeps_them_on_error():
    manager = PlacementManager([RuleSpec("user", create=True)])
    view = Tree(leaves=["root.fixed"])
    assert manager.place("a1", "", "bob", (), None, view) == PlacementResult("root.bob", True)
    manager.update_rules([RuleSpec("fixed", value="fixed")])
    assert manager.place("a1", "", "bob", (), None, view) == PlacementResult("root.fixed", False)
    with pytest.raises(ConfigError):
        manager.update_rules([RuleSpec("fixed", value="x"), RuleSpec("nope")])
    assert manager.rules == (RuleSpec("fixed", value="fixed"),)
    manager.update_rules([])
    assert manager.rule_names == ("provided", "recovery")


def test_first_matching_rule_wins():
    rules = [RuleSpec("tag", value="namespace", create=True), RuleSpec("user", create=True)]
    assert place(rules, Tree(), user="bob", tags={"namespace": "ns"}) == PlacementResult("root.ns", True)
    assert place(rules, Tree(), user="bob") == PlacementResult("root.bob", True)
