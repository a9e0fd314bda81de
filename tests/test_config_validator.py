"""Tests for the queues.yaml validator: one broken config per rule, each error naming its path."""

from __future__ import annotations

import re
import textwrap

import pytest

from pyscheduler.common.errors import ConfigError
from pyscheduler.common.resources import Resource
from pyscheduler.config import (
    ACL,
    ConfigValidationError,
    LimitConfig,
    PartitionConfig,
    QueueConfig,
    ResourcesConfig,
    SchedulerConfig,
    check,
    load_config,
    parse_and_validate,
    validate,
)

FULL_CONFIG = """\
partitions:
  - name: default
    nodesortpolicy: {type: fair, resourceweights: {vcore: 4.0, memory: 1.0}}
    preemption: {enabled: true, quotapreemptionenabled: true}
    usergroupresolver: {type: ldap}
    placementrules:
      - {name: user, create: true, filter: {type: allow, groups: [sandbox]}, parent: {name: fixed, value: root.users}}
      - {name: tag, value: namespace, create: true, parent: {name: fixed, value: tenants}}
      - {name: provided, create: false}
      - {name: fixed, value: root.default}
    limits:
      - {limit: "everyone", users: ["*"], maxapplications: 100}
      - {limit: "dev group", groups: [dev], maxresources: {memory: 500G, vcore: 100}}
      - {limit: "all groups", groups: ["*"], maxresources: {memory: 1T}}
    queues:
      - name: root
        submitacl: "*"
        adminacl: "admin admins"
        maxapplications: 1000
        queues:
          - name: default
            maxapplications: 100
            resources: {guaranteed: {memory: 100G, vcore: 10}, max: {memory: 200G, vcore: 20}}
          - name: users
            parent: true
            maxapplications: 200
            resources: {guaranteed: {memory: 200G}, max: {memory: 800G, vcore: 80}}
            childtemplate:
              maxapplications: 10
              properties: {application.sort.policy: fair}
              resources: {max: {memory: 16G, vcore: 8}, guaranteed: {memory: 4G, vcore: 1}}
            limits:
              - {limit: "per user", users: ["*"], maxresources: {memory: 64G}, maxapplications: 20}
          - name: tenants
            maxapplications: 500
            submitacl: " tenants"
            queues:
              - name: team-a
                maxapplications: 100
                resources: {guaranteed: {memory: 100G, vcore: 10}, max: {memory: 400G}}
                properties: {application.sort.policy: fifo, preemption.policy: fence}
                limits:
                  - {limit: alice, users: [alice], maxresources: {memory: 100G}, maxapplications: 50}
                  - {limit: dev, groups: [dev], maxresources: {memory: 200G, vcore: 50}}
              - name: team_b
                maxapplications: 100
                adminacl: "bob,carol"
"""


def errors_of(text: str) -> list[str]:
    """The validation errors of a config that parses."""
    return validate(load_config(textwrap.dedent(text)))


def assert_error(errors: list[str], path: str, *fragments: str) -> str:
    """The error about exactly ``path``, containing every fragment."""
    matching = [e for e in errors if e.startswith(path + ": ")]
    assert matching, f"no error for {path!r} in {errors}"
    for error in matching:
        if all(fragment in error for fragment in fragments):
            return error
    raise AssertionError(f"no error for {path!r} containing {fragments} in {matching}")


def tree(queues_yaml: str, extra: str = "") -> str:
    """A one-partition config whose root has the given children (and partition extras)."""
    text = "partitions:\n  - name: default\n"
    if extra:
        text += textwrap.indent(textwrap.dedent(extra), "    ")
    text += "    queues:\n      - name: root\n        queues:\n"
    return text + textwrap.indent(textwrap.dedent(queues_yaml), " " * 10)


# -- valid configurations -------------------------------------------------------------------


def test_realistic_full_config_is_valid() -> None:
    config = parse_and_validate(FULL_CONFIG)
    assert validate(config) == []
    assert check(config) is config


def test_minimal_configs_are_valid() -> None:
    for text in (
        "",
        "partitions: [{queues: []}]",
        "partitions: [{name: a, queues: [{name: x}]}, {name: b, queues: []}]",
    ):
        assert validate(load_config(text)) == []


def test_programmatic_config_without_sources_validates() -> None:
    root = QueueConfig(name="root", parent=True, queues=(QueueConfig(name="Bad Name"),))
    errors = validate(SchedulerConfig(partitions=(PartitionConfig(name="default", queues=root),)))
    assert errors == [
        "name: invalid queue name 'Bad Name' under root: "
        "a name has 1 to 64 characters among letters, digits and _ : # / @ -"
    ]


def test_all_errors_are_collected() -> None:
    errors = errors_of(
        tree(
            """\
        - name: a
          maxapplications: 5
          resources: {guaranteed: {memory: 10}, max: {memory: 5}}
          submitacl: "a b c"
          queues:
            - {name: "bad name", maxapplications: 3}
            - {name: b, maxapplications: 9}
    """,
            extra="nodesortpolicy: {type: random}\n",
        )
    )
    assert len(errors) == 5
    assert_error(errors, "partitions[0].queues[0].queues[0].resources.guaranteed", "larger than its max")
    assert_error(errors, "partitions[0].queues[0].queues[0].submitacl", "multiple spaces")
    assert_error(errors, "partitions[0].queues[0].queues[0].queues[0].name", "invalid queue name")
    assert_error(errors, "partitions[0].queues[0].queues[0].queues[1].maxapplications", "larger than its parent")
    assert_error(errors, "partitions[0].nodesortpolicy.type", "unknown node sort policy 'random'")


def test_parse_and_validate_raises_with_every_error() -> None:
    with pytest.raises(ConfigValidationError) as info:
        parse_and_validate(
            "partitions: [{name: a, queues: []}, {name: A, queues: []},"
            " {name: b, queues: [], nodesortpolicy: {type: x}}]"
        )
    assert len(info.value.errors) == 2
    assert isinstance(info.value, ConfigError)
    with pytest.raises(ConfigValidationError):
        check(load_config("partitions: [{name: a, queues: []}, {name: a, queues: []}]"))


# -- partitions -----------------------------------------------------------------------------


def test_at_least_one_partition() -> None:
    assert_error(errors_of("partitions: []"), "partitions", "at least one partition")


@pytest.mark.parametrize(("first", "second"), [("a", "A"), ("default", ""), ("DEFAULT", "Default"), ("gpu", "gpu")])
def test_duplicate_partition_names(first: str, second: str) -> None:
    errors = errors_of(f'partitions: [{{name: "{first}", queues: []}}, {{name: "{second}", queues: []}}]')
    assert_error(errors, "partitions[1].name", "duplicate partition name", "partitions[0]")


# -- root and queue resources ------------------------------------------------------------------


@pytest.mark.parametrize("resources", ["{max: {memory: 1G}}", "{guaranteed: {vcore: 1}}", "{max: {}}"])
def test_root_may_not_have_resources(resources: str) -> None:
    errors = errors_of(f"partitions: [{{queues: [{{name: root, resources: {resources}}}]}}]")
    assert_error(errors, "partitions[0].queues[0].resources", "root queue may not have resources")


def test_root_with_empty_resources_section_is_fine() -> None:
    assert errors_of("partitions: [{queues: [{name: root, resources: {}}]}]") == []


def test_guaranteed_must_fit_own_max() -> None:
    errors = errors_of(tree("- {name: a, resources: {guaranteed: {memory: 2G, vcore: 1}, max: {memory: 1G}}}\n"))
    assert_error(
        errors, "partitions[0].queues[0].queues[0].resources.guaranteed", "queue root.a", "larger than its max"
    )
    # A type missing from max is unlimited.
    assert errors_of(tree("- {name: a, resources: {guaranteed: {vcore: 100}, max: {memory: 1G}}}\n")) == []


def test_child_max_must_fit_parent_max() -> None:
    errors = errors_of(
        tree("""\
        - name: a
          resources: {max: {memory: 10G}}
          queues:
            - {name: ok, resources: {max: {memory: 10G, vcore: 100}}}
            - {name: big, resources: {max: {memory: 11G}}}
    """)
    )
    assert len(errors) == 1
    assert_error(
        errors,
        "partitions[0].queues[0].queues[0].queues[1].resources.max",
        "queue root.a.big",
        "larger than the max of its parent",
    )


def test_child_max_must_fit_an_inherited_max() -> None:
    # root.a sets max memory; root.a.b has none; root.a.b.c may not exceed root.a's.
    errors = errors_of(
        tree("""\
        - name: a
          resources: {max: {memory: 10G, vcore: 10}}
          queues:
            - name: b
              resources: {max: {vcore: 5}}
              queues:
                - {name: c, resources: {max: {memory: 20G, vcore: 5}}}
    """)
    )
    assert_error(errors, "partitions[0].queues[0].queues[0].queues[0].queues[0].resources.max", "queue root.a.b.c")


def test_children_guaranteed_sum_must_fit_parent_guaranteed() -> None:
    errors = errors_of(
        tree("""\
        - name: a
          resources: {guaranteed: {memory: 10G}}
          queues:
            - {name: x, resources: {guaranteed: {memory: 6G, vcore: 100}}}
            - {name: y, resources: {guaranteed: {memory: 5G}}}
    """)
    )
    assert len(errors) == 1
    assert_error(
        errors,
        "partitions[0].queues[0].queues[0].resources.guaranteed",
        "queue root.a",
        "smaller than the sum",
        "memory: 11000000000",
    )


def test_children_guaranteed_sum_must_fit_parent_max() -> None:
    errors = errors_of(
        tree("""\
        - name: a
          resources: {max: {memory: 10G}}
          queues:
            - {name: x, resources: {guaranteed: {memory: 6G}}}
            - {name: y, resources: {guaranteed: {memory: 6G}}}
    """)
    )
    assert_error(errors, "partitions[0].queues[0].queues[0].resources.max", "queue root.a", "smaller than the sum")


def test_guaranteed_without_parent_guaranteed_is_passed_up() -> None:
    # root.a has no guaranteed: its children's sum counts against root.a's parent.
    errors = errors_of(
        tree("""\
        - name: p
          resources: {guaranteed: {memory: 4G}}
          queues:
            - name: a
              queues:
                - {name: x, resources: {guaranteed: {memory: 3G}}}
                - {name: y, resources: {guaranteed: {memory: 3G}}}
    """)
    )
    assert_error(errors, "partitions[0].queues[0].queues[0].resources.guaranteed", "queue root.p")


# -- max applications -------------------------------------------------------------------------


def test_parent_max_applications_must_cover_each_child() -> None:
    errors = errors_of(
        tree("""\
        - name: a
          maxapplications: 10
          queues:
            - {name: same, maxapplications: 10}
            - {name: more, maxapplications: 11}
            - {name: unlimited}
    """)
    )
    assert len(errors) == 2
    assert_error(
        errors,
        "partitions[0].queues[0].queues[0].queues[1].maxapplications",
        "11 is larger than its parent root.a maxapplications 10",
    )
    assert_error(
        errors,
        "partitions[0].queues[0].queues[0].queues[2].maxapplications",
        "no maxapplications (unlimited)",
        "allows 10",
    )


def test_unlimited_parent_allows_any_child() -> None:
    assert errors_of(tree("- {name: a, queues: [{name: b, maxapplications: 1000000}]}\n")) == []


def test_root_max_applications_applies_to_its_children() -> None:
    errors = errors_of("partitions: [{queues: [{name: root, maxapplications: 5, queues: [{name: a}]}]}]")
    assert_error(errors, "partitions[0].queues[0].queues[0].maxapplications", "parent root allows 5")


# -- queue names -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a_b:c#d/e@f-g", "x" * 64, "UPPER", "0"])
def test_valid_queue_names(name: str) -> None:
    assert errors_of(tree(f'- name: "{name}"\n')) == []


@pytest.mark.parametrize("name", ["", "has space", "dot.ted", "x" * 65, "star*", "é"])
def test_invalid_queue_names(name: str) -> None:
    errors = errors_of(tree(f'- name: "{name}"\n'))
    assert_error(errors, "partitions[0].queues[0].queues[0].name", "invalid queue name", "under root")


def test_queue_names_are_unique_per_level_case_insensitively() -> None:
    errors = errors_of(
        tree("""\
        - {name: Team}
        - {name: other, queues: [{name: team}]}
        - {name: TEAM}
    """)
    )
    assert len(errors) == 1
    assert_error(
        errors,
        "partitions[0].queues[0].queues[2].name",
        "duplicate queue name 'team' under root",
        "partitions[0].queues[0].queues[0]",
    )


# -- ACLs ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "acl", ["*", "", "user1", "user1,user2", "user1,user2 group1,group2", " group1", "user1 ", " *", "u1 *"]
)
def test_valid_acls(acl: str) -> None:
    assert errors_of(tree(f'- {{name: a, submitacl: "{acl}", adminacl: "{acl}"}}\n')) == []


@pytest.mark.parametrize("acl", ["a b c", "u1  g1", "u1 g1 ", "  g1", "u1\\tg1"])
@pytest.mark.parametrize("key", ["submitacl", "adminacl"])
def test_acls_with_more_than_one_space_are_rejected(acl: str, key: str) -> None:
    errors = errors_of(tree(f'- {{name: a, {key}: "{acl}"}}\n'))
    assert_error(errors, f"partitions[0].queues[0].queues[0].{key}", "queue root.a")


def test_acl_parse_forms() -> None:
    assert ACL.parse("*").allow_all
    assert ACL.parse(" *").allow_all
    assert ACL.parse("bob *").allow_all
    assert ACL.parse("*,bob") == ACL(users=frozenset({"bob"}))  # "*" is only a wildcard alone
    assert ACL.parse("") == ACL() and ACL.parse(None) == ACL()
    assert ACL.parse("u1,u2 g1,g2") == ACL(users=frozenset({"u1", "u2"}), groups=frozenset({"g1", "g2"}))
    assert ACL.parse(" g1") == ACL(groups=frozenset({"g1"}))
    assert ACL.parse("user1 ") == ACL(users=frozenset({"user1"}))
    # Invalid names are ignored, as YuniKorn does.
    assert ACL.parse("1bad,ok@example.com g-ok,g@bad") == ACL(
        users=frozenset({"ok@example.com"}), groups=frozenset({"g-ok"})
    )
    with pytest.raises(ConfigError, match="multiple spaces"):
        ACL.parse("a b c")


def test_acl_allows() -> None:
    acl = ACL.parse("alice,bob admins,ops")
    assert acl.allows("alice")
    assert acl.allows("carol", ["dev", "ops"])
    assert not acl.allows("carol", ["dev"])
    assert not ACL.parse("").allows("alice", ["admins"])
    assert ACL.parse("*").allows("anyone")
    assert ACL.parse(" admins").allows("x", ["admins"]) and not ACL.parse(" admins").allows("admins")
    assert str(ACL.parse("b,a g2,g1")) == "a,b g1,g2" and str(ACL.everyone()) == "*"


# -- limits ----------------------------------------------------------------------------------


def limits_errors(limits_yaml: str, queue_extra: str = "") -> list[str]:
    """Errors of root.a with the given limits list (and extra queue keys)."""
    return errors_of(
        tree(
            "- name: a\n"
            + textwrap.indent(textwrap.dedent(queue_extra), "  ")
            + "  limits:\n"
            + textwrap.indent(textwrap.dedent(limits_yaml), "    ")
        )
    )


LIMITS = "partitions[0].queues[0].queues[0].limits"


def test_limit_needs_users_or_groups() -> None:
    errors = limits_errors("- {limit: nobody, maxapplications: 1}\n")
    assert_error(errors, f"{LIMITS}[0]", "at least one user or group")


@pytest.mark.parametrize(
    ("entry", "path", "fragment"),
    [
        ("{users: ['1bad'], maxapplications: 1}", f"{LIMITS}[0].users[0]", "invalid user name '1bad'"),
        ("{users: [ok, 'sp ace'], maxapplications: 1}", f"{LIMITS}[0].users[1]", "invalid user name"),
        ("{groups: ['g@x'], maxapplications: 1}", f"{LIMITS}[0].groups[0]", "invalid group name 'g@x'"),
    ],
)
def test_limit_names_must_be_valid(entry: str, path: str, fragment: str) -> None:
    assert_error(limits_errors(f"- {entry}\n"), path, fragment)


def test_valid_limit_names() -> None:
    assert (
        limits_errors("- {users: [alice, bob@example.com, svc$, _x.y-z], groups: [dev, g:1.x], maxapplications: 1}\n")
        == []
    )


def test_user_or_group_at_most_once_per_queue() -> None:
    errors = limits_errors("""\
        - {users: [alice], groups: [dev], maxapplications: 1}
        - {users: [alice], groups: [dev], maxapplications: 2}
    """)
    assert_error(errors, f"{LIMITS}[1].users[0]", "user 'alice' already has a limit")
    assert_error(errors, f"{LIMITS}[1].groups[0]", "group 'dev' already has a limit")


def test_wildcard_must_be_last() -> None:
    errors = limits_errors("""\
        - {users: ["*"], maxapplications: 1}
        - {users: [alice], maxapplications: 1}
        - {groups: [dev, "*", ops], maxapplications: 1}
    """)
    assert_error(errors, f"{LIMITS}[1].users[0]", "'alice' comes after the wildcard user limit")
    assert_error(errors, f"{LIMITS}[2].groups[2]", "'ops' comes after the wildcard group limit")
    assert limits_errors("- {users: [a, b], maxapplications: 2}\n- {users: ['*'], maxapplications: 1}\n") == []


def test_a_lone_wildcard_group_limit_is_rejected() -> None:
    errors = limits_errors("- {users: [alice], groups: ['*'], maxapplications: 1}\n")
    assert_error(errors, f"{LIMITS}[0].groups", "wildcard group limit needs at least one limit for a named group")
    assert limits_errors("- {groups: [dev], maxapplications: 1}\n- {groups: ['*'], maxapplications: 1}\n") == []
    # A wildcard user alone is fine.
    assert limits_errors("- {users: ['*'], maxapplications: 1}\n") == []


@pytest.mark.parametrize(
    "entry", ["{users: [a]}", "{users: [a], maxresources: {}}", "{users: [a], maxapplications: 0}"]
)
def test_limit_may_not_be_empty(entry: str) -> None:
    assert_error(limits_errors(f"- {entry}\n"), f"{LIMITS}[0]", "the limit is empty")


def test_limit_resources_may_not_be_all_zero() -> None:
    errors = limits_errors("- {users: [a], maxresources: {memory: 0, vcore: 0}, maxapplications: 1}\n")
    assert_error(errors, f"{LIMITS}[0].maxresources", "every quantity of the limit is zero")


def test_limit_within_queue_max_applications_and_max() -> None:
    errors = limits_errors(
        "- {users: [a], maxapplications: 11, maxresources: {memory: 2G, vcore: 1}}\n",
        queue_extra="maxapplications: 10\nresources: {max: {memory: 1G}}\n",
    )
    assert_error(errors, f"{LIMITS}[0].maxapplications", "11 is larger than the queue maxapplications 10")
    assert_error(errors, f"{LIMITS}[0].maxresources", "larger than the queue max")
    fits = limits_errors(
        "- {users: [a], maxapplications: 10, maxresources: {memory: 1G, vcore: 100}}\n",
        queue_extra="maxapplications: 10\nresources: {max: {memory: 1G}}\n",
    )
    assert fits == []


def test_root_limits_are_not_checked_against_a_max() -> None:
    assert errors_of("partitions: [{queues: [], limits: [{users: [a], maxresources: {memory: 1P}}]}]") == []
    errors = errors_of(
        "partitions: [{queues: [{name: root, maxapplications: 5}], limits: [{users: [a], maxapplications: 6}]}]"
    )
    assert_error(
        errors, "partitions[0].limits[0].maxapplications", "queue root", "larger than the queue maxapplications 5"
    )


def test_partition_limits_are_checked_with_their_own_path() -> None:
    errors = errors_of("partitions: [{queues: [], limits: [{users: ['*']}, {users: [bob], maxapplications: 1}]}]")
    assert_error(errors, "partitions[0].limits[0]", "the limit is empty")
    assert_error(errors, "partitions[0].limits[1].users[0]", "after the wildcard")


def test_limit_may_not_exceed_an_ancestor_limit() -> None:
    errors = errors_of(
        tree("""\
        - name: a
          limits:
            - {users: [alice], groups: [dev], maxresources: {memory: 10G}, maxapplications: 5}
          queues:
            - name: b
              limits:
                - {users: [alice], maxresources: {memory: 20G}, maxapplications: 6}
                - {groups: [dev], maxresources: {memory: 5G}}
    """)
    )
    child = "partitions[0].queues[0].queues[0].queues[0].limits"
    assert_error(errors, f"{child}[0].maxresources", "user 'alice'", "set on root.a")
    assert_error(errors, f"{child}[0].maxapplications", "user 'alice' maxapplications 6", "limit 5 set on root.a")
    # An application limit of 0 (unlimited) exceeds the ancestor's.
    assert_error(errors, f"{child}[1].maxapplications", "group 'dev' maxapplications unlimited (0)")
    assert len(errors) == 3


def test_ancestor_limits_are_inherited_through_every_level() -> None:
    # root (partition limit) -> a (limit for someone else) -> b: bob is still bound by root's limit.
    errors = errors_of(
        tree(
            """\
        - name: a
          limits: [{users: [carol], maxapplications: 1}]
          queues:
            - name: b
              limits: [{users: [bob], maxapplications: 9, maxresources: {vcore: 200}}]
    """,
            extra="limits: [{users: [bob], maxapplications: 3, maxresources: {vcore: 100}}]\n",
        )
    )
    path = "partitions[0].queues[0].queues[0].queues[0].limits[0]"
    assert_error(errors, f"{path}.maxapplications", "user 'bob'", "limit 3 set on root")
    assert_error(errors, f"{path}.maxresources", "user 'bob'", "set on root")


def test_smaller_descendant_limits_are_fine() -> None:
    assert (
        errors_of(
            tree("""\
        - name: a
          limits: [{users: [bob], groups: [dev], maxapplications: 5, maxresources: {memory: 10G}}]
          queues:
            - name: b
              limits: [{users: [bob], groups: [dev], maxapplications: 5, maxresources: {memory: 10G, vcore: 1}}]
              queues:
                - name: c
                  limits: [{users: [bob], maxapplications: 1, maxresources: {memory: 1G}}]
    """)
        )
        == []
    )


# -- placement rules ----------------------------------------------------------------------------


def rules_errors(
    rules_yaml: str, queues_yaml: str = "- {name: leaf}\n- {name: parent, parent: true, queues: [{name: inner}]}\n"
) -> list[str]:
    return errors_of(tree(queues_yaml, extra="placementrules:\n" + textwrap.indent(textwrap.dedent(rules_yaml), "  ")))


RULES = "partitions[0].placementrules"


@pytest.mark.parametrize(
    ("rule", "path", "fragment"),
    [
        ("{name: recovery}", f"{RULES}[0].name", "recovery rule is always added implicitly"),
        ("{name: test}", f"{RULES}[0].name", "unknown placement rule 'test'"),
        ("{name: bogus}", f"{RULES}[0].name", "unknown placement rule 'bogus' (known: fixed, provided, tag, user)"),
        ("{create: true}", f"{RULES}[0].name", "needs a name"),
        ("{name: user, parent: {name: nope}}", f"{RULES}[0].parent.name", "unknown placement rule 'nope'"),
        ("{name: fixed}", f"{RULES}[0].value", "fixed rule needs a queue name"),
        ("{name: fixed, value: 'root.a b'}", f"{RULES}[0].value", "invalid queue name 'a b'"),
        ("{name: fixed, value: 'root..x'}", f"{RULES}[0].value", "invalid queue name ''"),
        ("{name: tag}", f"{RULES}[0].value", "tag rule needs the name of the tag"),
        (
            "{name: fixed, value: root.parent, parent: {name: user}}",
            f"{RULES}[0].value",
            "cannot be combined with a parent rule",
        ),
        ("{name: user, filter: {type: maybe}}", f"{RULES}[0].filter.type", "invalid filter type 'maybe'"),
        (
            "{name: user, filter: {users: ['(bad']}}",
            f"{RULES}[0].filter.users[0]",
            "neither a valid name nor a regular expression",
        ),
        (
            "{name: user, filter: {groups: ['a b']}}",
            f"{RULES}[0].filter.groups[0]",
            "neither a valid name nor a regular expression",
        ),
    ],
)
def test_rule_errors(rule: str, path: str, fragment: str) -> None:
    assert_error(rules_errors(f"- {rule}\n"), path, fragment)


@pytest.mark.parametrize(
    "rule",
    [
        "{name: Provided}",
        "{name: user, create: true}",
        "{name: tag, value: namespace, create: true}",
        "{name: user, filter: {type: deny, users: ['^admin.*$']}}",
        "{name: user, filter: {type: ALLOW, users: [alice]}}",
        # Longer lists are names; YuniKorn ignores the invalid ones.
        "{name: user, filter: {users: [alice, '(bad']}}",
        "{name: provided, parent: {name: user, parent: {name: tag, value: ns}}, create: true}",
    ],
)
def test_valid_rules(rule: str) -> None:
    assert rules_errors(f"- {rule}\n") == []


@pytest.mark.parametrize(
    ("rule", "fragment"),
    [
        # must not end at a parent
        ("{name: fixed, value: parent}", "places applications in root.parent, a parent queue"),
        ("{name: fixed, value: root}", "places applications in root, a parent queue"),
        # a queue with children is a parent even without parent: true
        ("{name: fixed, value: implicit}", "places applications in root.implicit, a parent queue"),
        # a queue that does not exist, without create
        ("{name: fixed, value: root.nope}", "needs the queue root.nope, which is not configured, and create is false"),
        ("{name: fixed, value: parent.nope}", "needs the queue root.parent.nope"),
        ("{name: user, parent: {name: fixed, value: missing}}", "needs the queue root.missing"),
        # cannot create below an existing leaf
        (
            "{name: fixed, value: root.leaf.x, create: true}",
            "would create root.leaf.x below root.leaf, which is a leaf queue",
        ),
        ("{name: fixed, value: root.leaf.x.y}", "below root.leaf, which is a leaf queue"),
        # a dynamic part below a leaf
        (
            "{name: user, create: true, parent: {name: fixed, value: leaf}}",
            "chain fixed -> user places applications below root.leaf, which is a leaf queue",
        ),
        (
            "{name: tag, value: ns, parent: {name: user, parent: {name: fixed, value: root.leaf}}}",
            "fixed -> user -> tag",
        ),
    ],
)
def test_static_path_errors(rule: str, fragment: str) -> None:
    errors = rules_errors(
        f"- {rule}\n",
        queues_yaml=(
            "- {name: leaf}\n"
            "- {name: parent, parent: true, queues: [{name: inner}]}\n"
            "- {name: implicit, queues: [{name: x}]}\n"
        ),
    )
    assert_error(errors, f"{RULES}[0]", fragment)


@pytest.mark.parametrize(
    "rule",
    [
        "{name: fixed, value: leaf}",
        "{name: fixed, value: root.parent.inner}",
        "{name: fixed, value: PARENT.Inner}",
        "{name: fixed, value: root.nope, create: true}",
        "{name: fixed, value: root.parent.new.deeper, create: true}",
        "{name: user, create: true, parent: {name: fixed, value: parent}}",
        "{name: user, create: true, parent: {name: fixed, value: root.new}}",
        # a dynamic rule first: no static path to check
        "{name: fixed, value: anything, parent: {name: user}}",
        "{name: fixed, value: x, parent: {name: fixed, value: root.parent}, create: true}",
    ],
)
def test_static_paths_that_fit(rule: str) -> None:
    assert rules_errors(f"- {rule}\n") == []


def test_each_rule_is_reported_with_its_index() -> None:
    errors = rules_errors("- {name: provided}\n- {name: fixed, value: root.nope}\n- {name: fixed, value: parent}\n")
    assert_error(errors, f"{RULES}[1]", "root.nope")
    assert_error(errors, f"{RULES}[2]", "root.parent")
    assert len(errors) == 2


# -- node sort policy and user group resolver -------------------------------------------------------


@pytest.mark.parametrize("policy", ["fair", "binpacking", "BinPacking", "FAIR", ""])
def test_known_node_sort_policies(policy: str) -> None:
    assert errors_of(f'partitions: [{{queues: [], nodesortpolicy: {{type: "{policy}"}}}}]') == []


def test_unknown_node_sort_policy() -> None:
    errors = errors_of("partitions: [{queues: [], nodesortpolicy: {type: spread}}]")
    assert_error(
        errors, "partitions[0].nodesortpolicy.type", "unknown node sort policy 'spread' (known: binpacking, fair)"
    )


def test_resource_weights_must_not_be_negative() -> None:
    errors = errors_of(
        "partitions: [{queues: [], nodesortpolicy: {resourceweights: {vcore: -0.5, memory: 0, gpu: .inf, x: .nan}}}]"
    )
    assert len(errors) == 3
    assert_error(errors, "partitions[0].nodesortpolicy.resourceweights.vcore", "negative resource weight")
    assert_error(errors, "partitions[0].nodesortpolicy.resourceweights.gpu", "not a finite number")
    assert_error(errors, "partitions[0].nodesortpolicy.resourceweights.x", "not a finite number")


@pytest.mark.parametrize(("resolver", "valid"), [("os", True), ("LDAP", True), ("", True), ("kerberos", False)])
def test_user_group_resolver_types(resolver: str, valid: bool) -> None:
    errors = errors_of(f'partitions: [{{queues: [], usergroupresolver: {{type: "{resolver}"}}}}]')
    if valid:
        assert errors == []
    else:
        assert_error(errors, "partitions[0].usergroupresolver.type", "unknown user group resolver 'kerberos'")


# -- child template ---------------------------------------------------------------------------


def test_child_template_guaranteed_must_fit_its_max() -> None:
    errors = errors_of(
        tree("- {name: p, parent: true, childtemplate: {resources: {max: {memory: 1G}, guaranteed: {memory: 2G}}}}\n")
    )
    assert_error(
        errors, "partitions[0].queues[0].queues[0].childtemplate.resources.guaranteed", "child template guaranteed"
    )


# -- the model helpers the validator relies on -------------------------------------------------------


def test_is_leaf() -> None:
    assert QueueConfig(name="a").is_leaf
    assert not QueueConfig(name="a", parent=True).is_leaf
    assert not QueueConfig(name="a", queues=(QueueConfig(name="b"),)).is_leaf


def test_limit_and_resources_equality_ignores_source() -> None:
    a = LimitConfig(users=("u",), max_applications=1, source="x")
    b = LimitConfig(users=("u",), max_applications=1, source="y")
    assert a == b
    assert ResourcesConfig(max=Resource({"memory": 1})) == ResourcesConfig(max=Resource({"memory": 1, "vcore": 0}))


def test_error_messages_name_the_path_first() -> None:
    errors = errors_of(FULL_CONFIG.replace("maxapplications: 20}", "maxapplications: 2000}"))
    assert errors
    assert all(re.match(r"^partitions\[\d+\][\w.\[\]]*: ", e) for e in errors), errors
