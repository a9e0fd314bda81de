"""Tests for the queues.yaml loader: strict parsing, normalisation, quantities, default, checksum."""

from __future__ import annotations

import hashlib
import pickle
import re
import subprocess
import sys
import textwrap

import pytest

from pyscheduler.common.errors import ConfigError
from pyscheduler.common.resources import Resource
from pyscheduler.config import (
    DEFAULT_CONFIG,
    ConfigValidationError,
    FilterConfig,
    LimitConfig,
    NodeSortPolicyConfig,
    PlacementRuleConfig,
    PreemptionConfig,
    QueueConfig,
    SchedulerConfig,
    checksum,
    default_config,
    load_config,
    parse_and_validate,
)

G = 10**9
GI = 1 << 30

# The example of scheduler.md "queues.yaml format", filled in.
FULL_CONFIG = """\
partitions:
  - name: default
    nodesortpolicy: {type: binpacking, resourceweights: {vcore: 4.0, memory: 1.0}}
    preemption: {enabled: true, quotapreemptionenabled: false}
    usergroupresolver: {type: os}
    placementrules:
      - {name: user, create: true, filter: {type: allow, groups: [sandbox]}, parent: {name: provided}}
      - {name: tag, value: namespace, create: true}
    limits:
      - {limit: "desc", users: [u1], groups: [g1], maxresources: {memory: 10G, vcore: 10}, maxapplications: 10}
    queues:
      - name: root
        submitacl: "*"
        adminacl: "admin admins"
        queues:
          - name: a
            parent: false
            maxapplications: 10
            resources: {guaranteed: {memory: 500G, vcore: 50}, max: {memory: 800G, vcore: 80}}
            properties: {application.sort.policy: fair}
            limits:
              - {limit: "a users", users: [u1], maxresources: {memory: 5G}, maxapplications: 5}
          - name: b
            parent: true
            childtemplate:
              maxapplications: 5
              properties: {application.sort.policy: fifo}
              resources: {max: {memory: 8G, vcore: 4}, guaranteed: {memory: 1G, vcore: 500m}}
            queues:
              - name: b1
                resources: {max: {memory: 100Gi}}
"""


def load(text: str) -> SchedulerConfig:
    return load_config(textwrap.dedent(text))


def load_errors(text: str) -> list[str]:
    with pytest.raises(ConfigValidationError) as info:
        load(text)
    return info.value.errors


def assert_error(errors: list[str], path: str, *fragments: str) -> str:
    """The error about ``path`` (exactly that path, optionally followed by a line number)."""
    pattern = re.compile(re.escape(path) + r"( \(line \d+\))?: ")
    matching = [e for e in errors if pattern.match(e)]
    assert matching, f"no error for {path!r} in {errors}"
    error = matching[0]
    for fragment in fragments:
        assert fragment in error, f"{fragment!r} not in {error!r}"
    return error


def one_queue(queue_yaml: str) -> QueueConfig:
    """The single child of root in a partition whose root has the given child queue."""
    text = "partitions:\n  - name: default\n    queues:\n      - name: root\n        queues:\n"
    text += textwrap.indent(textwrap.dedent(queue_yaml), " " * 10)
    return load_config(text).partitions[0].queues.queues[0]


# -- default config -----------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   \n", "# only a comment\n", "\n---\n"])
def test_empty_text_means_the_default_config(text: str) -> None:
    config = load_config(text)
    assert config == default_config()
    assert config.checksum == checksum(DEFAULT_CONFIG)


def test_default_config_shape() -> None:
    config = default_config()
    assert [p.name for p in config.partitions] == ["default"]
    partition = config.partitions[0]
    root = partition.queues
    assert root.name == "root" and root.parent and not root.is_leaf
    assert root.submit_acl == "*"
    assert [q.name for q in root.queues] == ["default"]
    assert root.queues[0].is_leaf
    assert partition.placement_rules == (PlacementRuleConfig(name="provided", create=False),)
    assert partition.node_sort_policy == NodeSortPolicyConfig()
    assert partition.preemption == PreemptionConfig(enabled=True, quota_preemption_enabled=False)


def test_default_config_text_is_valid_and_stable() -> None:
    assert parse_and_validate(DEFAULT_CONFIG) == default_config()
    assert default_config().checksum == default_config().checksum


# -- a realistic configuration --------------------------------------------------------------


def test_full_config_is_parsed() -> None:
    config = parse_and_validate(FULL_CONFIG)
    (partition,) = config.partitions
    assert partition.name == "default"
    assert partition.node_sort_policy == NodeSortPolicyConfig(
        type="binpacking", resource_weights={"vcore": 4.0, "memory": 1.0}
    )
    assert partition.preemption == PreemptionConfig(enabled=True, quota_preemption_enabled=False)
    assert partition.user_group_resolver.type == "os"

    user_rule, tag_rule = partition.placement_rules
    assert user_rule.name == "user" and user_rule.create
    assert user_rule.filter == FilterConfig(type="allow", users=(), groups=("sandbox",))
    assert user_rule.parent == PlacementRuleConfig(name="provided")
    assert [r.name for r in user_rule.chain()] == ["provided", "user"]
    assert tag_rule == PlacementRuleConfig(name="tag", create=True, value="namespace")

    root = partition.queues
    assert (root.submit_acl, root.admin_acl) == ("*", "admin admins")
    # Partition limits are the root queue's limits.
    assert root.limits == partition.limits
    assert partition.limits[0] == LimitConfig(
        limit="desc",
        users=("u1",),
        groups=("g1",),
        max_resources=Resource({"memory": 10 * G, "vcore": 10_000}),
        max_applications=10,
    )

    a, b = root.queues
    assert a.name == "a" and a.is_leaf and a.max_applications == 10
    assert a.resources.guaranteed == Resource({"memory": 500 * G, "vcore": 50_000})
    assert a.resources.max == Resource({"memory": 800 * G, "vcore": 80_000})
    assert a.properties == {"application.sort.policy": "fair"}
    assert a.limits[0].max_applications == 5
    assert b.parent and not b.is_leaf
    assert b.child_template is not None
    assert b.child_template.max_applications == 5
    assert b.child_template.resources.guaranteed == Resource({"memory": G, "vcore": 500})
    assert b.queues[0].resources.max == Resource({"memory": 100 * GI})
    assert [path for path, _ in root.walk()] == ["root", "root.a", "root.b", "root.b.b1"]
    assert root.find("ROOT.B.B1") is b.queues[0]
    assert root.find("root.nope") is None


def test_objects_are_frozen_and_carry_their_source() -> None:
    config = load_config(FULL_CONFIG)
    queue = config.partitions[0].queues.queues[1].queues[0]
    assert queue.source == "partitions[0].queues[0].queues[1].queues[0]"
    assert config.partitions[0].placement_rules[0].parent is not None
    assert config.partitions[0].placement_rules[0].parent.source == "partitions[0].placementrules[0].parent"
    with pytest.raises(AttributeError):
        queue.name = "x"  # type: ignore[misc]


# -- names ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["", "default", "DEFAULT", "Default", "dEfAuLt"])
def test_default_partition_name_is_normalised(name: str) -> None:
    config = load(f"""
        partitions:
          - name: "{name}"
            queues: []
    """)
    assert config.partitions[0].name == "default"


def test_partition_without_name_is_default_and_other_names_are_kept() -> None:
    config = load("""
        partitions:
          - queues: []
          - name: GPU
            queues: []
    """)
    assert [p.name for p in config.partitions] == ["default", "GPU"]
    assert config.partition("") is config.partitions[0]
    assert config.partition("gpu") is config.partitions[1]


def test_queue_names_are_lower_cased() -> None:
    config = load("""
        partitions:
          - queues:
              - name: ROOT
                queues:
                  - name: Dev
                    queues: [{name: TeamA}]
    """)
    root = config.partitions[0].queues
    assert [path for path, _ in root.walk()] == ["root", "root.dev", "root.dev.teama"]


def test_rule_names_filter_types_and_fixed_values_are_lower_cased() -> None:
    config = load("""
        partitions:
          - queues: []
            placementrules:
              - {name: Fixed, value: Root.Dev}
              - {name: TAG, value: Namespace, filter: {type: DENY, users: [Bob]}}
    """)
    fixed, tag = config.partitions[0].placement_rules
    assert (fixed.name, fixed.value) == ("fixed", "root.dev")
    # A tag name is not a queue name: kept as written. User names are case-sensitive.
    assert (tag.name, tag.value) == ("tag", "Namespace")
    assert tag.filter == FilterConfig(type="deny", users=("Bob",))


# -- root insertion ------------------------------------------------------------------------


def test_root_is_inserted_above_a_single_non_root_queue() -> None:
    root = (
        load("""
        partitions:
          - queues:
              - name: a
    """)
        .partitions[0]
        .queues
    )
    assert root.name == "root" and root.parent
    assert [q.name for q in root.queues] == ["a"]
    # Sources stay the places in the file.
    assert root.source == "partitions[0].queues"
    assert root.queues[0].source == "partitions[0].queues[0]"


def test_several_top_level_queues_are_wrapped_under_root() -> None:
    root = (
        load("""
        partitions:
          - queues:
              - name: a
              - name: b
              - name: root
    """)
        .partitions[0]
        .queues
    )
    # As in YuniKorn, a top-level "root" beside other queues becomes root.root.
    assert [q.name for q in root.queues] == ["a", "b", "root"]
    assert [q.source for q in root.queues] == [f"partitions[0].queues[{i}]" for i in range(3)]


def test_explicit_root_is_always_a_parent() -> None:
    root = (
        load("""
        partitions:
          - queues:
              - name: root
                parent: false
    """)
        .partitions[0]
        .queues
    )
    assert root.parent and root.queues == ()


def test_empty_queue_list_gives_a_bare_root() -> None:
    root = load("partitions: [{name: x, queues: []}]").partitions[0].queues
    assert root == QueueConfig(name="root", parent=True)


@pytest.mark.parametrize("queues", ["", "    queues:\n", "    queues: ~\n"])
def test_partition_needs_a_queue_list(queues: str) -> None:
    errors = load_errors("partitions:\n  - name: x\n" + queues)
    assert_error(errors, "partitions[0].queues", "a partition needs a queue list")


def test_partition_limits_must_agree_with_root_limits() -> None:
    same = "{limit: l, users: [u], maxapplications: 1}"
    config = load(f"""
        partitions:
          - limits: [{same}]
            queues:
              - name: root
                limits: [{same}]
    """)
    assert config.partitions[0].queues.limits == config.partitions[0].limits
    errors = load_errors(f"""
        partitions:
          - limits: [{same}]
            queues:
              - name: root
                limits: [{{limit: other, users: [u], maxapplications: 2}}]
    """)
    assert_error(errors, "partitions[0].limits", "differ from the root queue limits", "partitions[0].queues[0].limits")


# -- quantities ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("yaml_value", "expected"),
    [
        ("10", 10_000),
        ('"10"', 10_000),
        ("500m", 500),
        ("0", 0),
        ("1k", 1_000_000),
    ],
)
def test_vcore_is_in_millicores(yaml_value: str, expected: int) -> None:
    queue = one_queue(f"- {{name: q, resources: {{max: {{vcore: {yaml_value}}}}}}}\n")
    assert queue.resources.max is not None
    assert queue.resources.max["vcore"] == expected


@pytest.mark.parametrize(
    ("yaml_value", "expected"),
    [
        ("100", 100),
        ("10G", 10 * G),
        ("10k", 10_000),
        ("512Mi", 512 << 20),
        ("2Gi", 2 * GI),
        ("1Ti", 1 << 40),
        ("3M", 3_000_000),
    ],
)
def test_memory_units(yaml_value: str, expected: int) -> None:
    queue = one_queue(f"- {{name: q, resources: {{guaranteed: {{memory: {yaml_value}}}}}}}\n")
    assert queue.resources.guaranteed == Resource({"memory": expected})


def test_other_resource_types_are_kept() -> None:
    queue = one_queue("- {name: q, resources: {max: {nvidia.com/gpu: 2, pods: 110}}}\n")
    assert queue.resources.max == Resource({"nvidia.com/gpu": 2, "pods": 110})


@pytest.mark.parametrize(
    ("resource", "value", "fragment"),
    [
        ("memory", "5m", "only allowed for vcore"),
        ("pods", "5m", "only allowed for vcore"),
        ("memory", "1.5G", "invalid quantity"),
        ("memory", "-1", "invalid quantity"),
        ("memory", "10 GB", "invalid quantity"),
        ("vcore", "0.5", "invalid quantity"),
        ("memory", "''", "invalid quantity"),
        ("memory", "99999999999999999999", "does not fit in int64"),
    ],
)
def test_bad_quantities_name_their_path(resource: str, value: str, fragment: str) -> None:
    errors = load_errors(f"""
        partitions:
          - queues:
              - name: root
                queues:
                  - name: a
                    queues:
                      - name: b
                      - name: c
                        resources:
                          max:
                            {resource}: {value}
    """)
    assert_error(errors, f"partitions[0].queues[0].queues[0].queues[1].resources.max.{resource}", fragment)


def test_limit_and_child_template_quantities_are_parsed() -> None:
    queue = one_queue("""\
        - name: p
          parent: true
          childtemplate: {resources: {max: {memory: 1Gi, vcore: 250m}}}
          limits: [{users: [u], maxresources: {memory: 1k, vcore: 2}}]
    """)
    assert queue.child_template is not None
    assert queue.child_template.resources.max == Resource({"memory": GI, "vcore": 250})
    assert queue.limits[0].max_resources == Resource({"memory": 1000, "vcore": 2000})


def test_null_resource_map_is_unset_and_empty_map_is_set() -> None:
    unset = one_queue("- {name: q, resources: {max: ~}}\n")
    assert unset.resources.max is None and not unset.resources.is_set
    empty = one_queue("- {name: q, resources: {max: {}}}\n")
    assert empty.resources.max == Resource() and empty.resources.is_set


# -- strictness -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("statedumpfilepath: /tmp/x\npartitions: [{queues: []}]", "statedumpfilepath"),
        ("partitions: [{queues: [], statedumpfilepath: /tmp/x}]", "partitions[0].statedumpfilepath"),
        (
            "partitions: [{queues: [{name: root, queues: [{name: a, color: red}]}]}]",
            "partitions[0].queues[0].queues[0].color",
        ),
        (
            "partitions: [{queues: [{name: root, queues: [{name: a}, {name: b, queues: [{name: c, x: 1}]}]}]}]",
            "partitions[0].queues[0].queues[1].queues[0].x",
        ),
        ("partitions: [{queues: [{name: a, resources: {min: {memory: 1}}}]}]", "partitions[0].queues[0].resources.min"),
        (
            "partitions: [{queues: [{name: a, childtemplate: {parent: true}}]}]",
            "partitions[0].queues[0].childtemplate.parent",
        ),
        ("partitions: [{queues: [{name: a, limits: [{user: [u]}]}]}]", "partitions[0].queues[0].limits[0].user"),
        ("partitions: [{queues: [], limits: [{users: [u], maxapps: 1}]}]", "partitions[0].limits[0].maxapps"),
        (
            "partitions: [{queues: [], placementrules: [{name: user, queue: x}]}]",
            "partitions[0].placementrules[0].queue",
        ),
        (
            "partitions: [{queues: [], placementrules: [{name: user, parent: {name: fixed, valeu: x}}]}]",
            "partitions[0].placementrules[0].parent.valeu",
        ),
        (
            "partitions: [{queues: [], placementrules: [{name: user, filter: {kind: allow}}]}]",
            "partitions[0].placementrules[0].filter.kind",
        ),
        ("partitions: [{queues: [], nodesortpolicy: {policy: fair}}]", "partitions[0].nodesortpolicy.policy"),
        ("partitions: [{queues: [], preemption: {delay: 10s}}]", "partitions[0].preemption.delay"),
        ("partitions: [{queues: [], usergroupresolver: {ldap: x}}]", "partitions[0].usergroupresolver.ldap"),
        ("partitions: [{queues: [], Name: x}]", "partitions[0].Name"),
    ],
)
def test_unknown_keys_are_errors_naming_their_path(text: str, path: str) -> None:
    errors = load_errors(text)
    assert_error(errors, path, "unknown key")


def test_unknown_key_hint_for_camel_case() -> None:
    errors = load_errors("partitions: [{queues: [{name: a, maxApplications: 3, submit_acl: '*'}]}]")
    assert_error(errors, "partitions[0].queues[0].maxApplications", "did you mean 'maxapplications'")
    assert_error(errors, "partitions[0].queues[0].submit_acl", "did you mean 'submitacl'")


def test_unknown_key_error_has_line_number() -> None:
    errors = load_errors("partitions:\n  - queues: []\n    bogus: 1\n")
    assert errors == [
        "partitions[0].bogus (line 3): unknown key 'bogus' (allowed: name, queues, placementrules, limits, "
        "nodesortpolicy, preemption, usergroupresolver, topology)"
    ]


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("partitions: []\npartitions: []\n", "partitions"),
        ("partitions:\n  - name: a\n    name: b\n    queues: []\n", "partitions[0].name"),
        ("partitions: [{queues: [{name: a, properties: {x: 1, x: 2}}]}]", "partitions[0].queues[0].properties.x"),
        (
            "partitions: [{queues: [{name: a, resources: {max: {memory: 1, memory: 2}}}]}]",
            "partitions[0].queues[0].resources.max.memory",
        ),
    ],
)
def test_duplicate_keys_are_errors(text: str, path: str) -> None:
    errors = load_errors(text)
    assert_error(errors, path, "duplicate key")


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("maxapplications", '"10"', "expected a non-negative whole number"),
        ("maxapplications", "-1", "expected a non-negative whole number"),
        ("maxapplications", "1.5", "expected a non-negative whole number"),
        ("maxapplications", "0x10", "expected a non-negative whole number"),
        ("maxapplications", "[1]", "expected a non-negative whole number"),
        ("maxapplications", "18446744073709551616", "too large"),
        ("parent", '"true"', "expected true or false"),
        ("parent", "1", "expected true or false"),
        ("adminacl", "[a, b]", "expected a string, got a list"),
        ("submitacl", "{a: b}", "expected a string, got a mapping"),
        ("queues", "{a: b}", "expected a list, got a mapping"),
        ("properties", "[a]", "expected a mapping, got a list"),
        ("resources", "10G", "expected a mapping, got '10G'"),
        ("limits", "{users: [a]}", "expected a list"),
    ],
)
def test_type_errors_name_their_path(field: str, value: str, fragment: str) -> None:
    errors = load_errors(f"""
        partitions:
          - queues:
              - name: root
                queues:
                  - name: a
                    {field}: {value}
    """)
    assert_error(errors, f"partitions[0].queues[0].queues[0].{field}", fragment)


@pytest.mark.parametrize(
    ("text", "path", "fragment"),
    [
        (
            "partitions: [{queues: [], nodesortpolicy: {resourceweights: {vcore: high}}}]",
            "partitions[0].nodesortpolicy.resourceweights.vcore",
            "expected a number",
        ),
        (
            "partitions: [{queues: [], limits: [{users: bob, maxapplications: 1}]}]",
            "partitions[0].limits[0].users",
            "expected a list",
        ),
        (
            "partitions: [{queues: [], preemption: {enabled: sometimes}}]",
            "partitions[0].preemption.enabled",
            "expected true or false",
        ),
        ("partitions: [{queues: [], placementrules: {name: user}}]", "partitions[0].placementrules", "expected a list"),
        ("partitions: {name: default}", "partitions", "expected a list"),
        ("partitions: [[]]", "partitions[0]", "expected a mapping"),
        (
            "partitions: [{queues: [{name: a, properties: {x: [1]}}]}]",
            "partitions[0].queues[0].properties.x",
            "expected a string",
        ),
    ],
)
def test_more_type_errors(text: str, path: str, fragment: str) -> None:
    assert_error(load_errors(text), path, fragment)


def test_top_level_must_be_a_mapping_with_partitions() -> None:
    assert_error(load_errors("- a\n- b\n"), "(top level)", "expected a mapping")
    assert_error(load_errors("checksum: ABC\n"), "partitions", "at least one partition is required")


def test_yaml_syntax_error_names_the_line() -> None:
    errors = load_errors("partitions:\n  - name: a\n    queues: [\n")
    assert len(errors) == 1
    assert errors[0].startswith("line ") and "invalid YAML" in errors[0]


def test_several_documents_are_rejected() -> None:
    errors = load_errors("partitions: [{queues: []}]\n---\npartitions: [{queues: []}]\n")
    assert "invalid YAML" in errors[0]


def test_every_structural_error_is_reported_at_once() -> None:
    errors = load_errors("""
        partitions:
          - name: default
            foo: 1
            queues:
              - name: root
                queues:
                  - name: a
                    maxApplications: 3
                    resources: {max: {memory: 10x, vcore: 1m}}
                  - name: b
                    parent: maybe
            placementrules: [{name: user, create: 2}]
    """)
    assert len(errors) == 5
    assert_error(errors, "partitions[0].foo")
    assert_error(errors, "partitions[0].queues[0].queues[0].maxApplications")
    assert_error(errors, "partitions[0].queues[0].queues[0].resources.max.memory")
    assert_error(errors, "partitions[0].queues[0].queues[1].parent")
    assert_error(errors, "partitions[0].placementrules[0].create")


# -- YAML features and scalars ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("true", True),
        ("True", True),
        ("yes", True),
        ("on", True),
        ("false", False),
        ("No", False),
        ("off", False),
        ("~", False),
    ],
)
def test_boolean_spellings(value: str, expected: bool) -> None:
    assert one_queue(f"- {{name: q, parent: {value}}}\n").parent is expected


def test_nulls_mean_zero_values() -> None:
    queue = one_queue("- {name: q, queues: ~, properties: ~, maxapplications: ~, limits: ~, submitacl: ~}\n")
    assert queue == QueueConfig(name="q", submit_acl="")


def test_scalars_keep_their_source_text_as_strings() -> None:
    queue = one_queue("- {name: 1e3, properties: {priority.offset: 010, x: 1.50, y: true}}\n")
    assert queue.name == "1e3"
    assert queue.properties == {"priority.offset": "010", "x": "1.50", "y": "true"}


def test_anchors_aliases_and_merge_keys() -> None:
    # Unknown top-level keys are errors, so anchors live inside the tree itself.
    config = load("""
        partitions:
          - queues:
              - name: a
                maxapplications: &apps 4
                resources: &res {max: {memory: 4G}}
              - name: b
                <<: {resources: *res, maxapplications: *apps}
                maxapplications: 2
    """)
    a, b = config.partitions[0].queues.queues
    assert a.resources == b.resources
    assert a.resources.max == Resource({"memory": 4 * G})
    assert (a.max_applications, b.max_applications) == (4, 2)


def test_merged_keys_are_checked_too() -> None:
    errors = load_errors("partitions: [{queues: [{name: a, <<: {colour: red}}]}]")
    assert_error(errors, "partitions[0].queues[0].colour", "unknown key")


def test_recursive_alias_is_an_error_not_a_crash() -> None:
    errors = load_errors("partitions: [{queues: &q [{name: a, queues: *q}]}]")
    assert any("recursive" in e for e in errors)


# -- defaults of optional sections ----------------------------------------------------------


def test_optional_sections_default() -> None:
    partition = load("partitions: [{queues: []}]").partitions[0]
    assert partition.placement_rules == ()
    assert partition.effective_placement_rules == (PlacementRuleConfig(name="provided", create=False),)
    assert partition.node_sort_policy == NodeSortPolicyConfig(
        type="fair", resource_weights={"vcore": 1.0, "memory": 1.0}
    )
    assert partition.preemption == PreemptionConfig(enabled=True, quota_preemption_enabled=False)
    assert partition.user_group_resolver.type == ""
    assert partition.limits == ()


def test_partial_sections_keep_the_other_defaults() -> None:
    partition = load("""
        partitions:
          - queues: []
            nodesortpolicy: {type: BinPacking}
            preemption: {quotapreemptionenabled: true}
    """).partitions[0]
    assert partition.node_sort_policy == NodeSortPolicyConfig(type="binpacking")
    assert partition.preemption == PreemptionConfig(enabled=True, quota_preemption_enabled=True)
    disabled = load("partitions: [{queues: [], preemption: {enabled: false}}]").partitions[0]
    assert disabled.preemption == PreemptionConfig(enabled=False, quota_preemption_enabled=False)


def test_empty_resource_weights_mean_the_default_weights() -> None:
    partition = load("partitions: [{queues: [], nodesortpolicy: {type: fair, resourceweights: {}}}]").partitions[0]
    assert partition.node_sort_policy.resource_weights == {"vcore": 1.0, "memory": 1.0}
    partition = load(
        "partitions: [{queues: [], nodesortpolicy: {resourceweights: {vcore: 2, nvidia.com/gpu: 0.5}}}]"
    ).partitions[0]
    assert partition.node_sort_policy.resource_weights == {"vcore": 2.0, "nvidia.com/gpu": 0.5}


def test_filter_without_type_allows() -> None:
    rule = (
        load("partitions: [{queues: [], placementrules: [{name: user, filter: {users: [a, b]}}]}]")
        .partitions[0]
        .placement_rules[0]
    )
    assert rule.filter == FilterConfig(type="allow", users=("a", "b"))


# -- checksum -------------------------------------------------------------------------------


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest().upper()


def test_checksum_is_upper_case_sha256_of_the_text() -> None:
    digest = checksum(FULL_CONFIG)
    assert re.fullmatch(r"[0-9A-F]{64}", digest)
    assert digest == _sha(FULL_CONFIG)
    assert load_config(FULL_CONFIG).checksum == digest


def test_checksum_ignores_the_checksum_line() -> None:
    body = "partitions:\n  - queues: []\n"
    stored = "checksum: " + "A" * 64 + "\n"
    assert checksum(stored + body) == _sha(body)
    assert checksum(body + stored) == _sha(body)
    assert checksum(body + stored.rstrip("\n")) == _sha(body)
    assert checksum(body + "checksum: 1234\r\n") == _sha(body)
    # An indented "checksum:" (a property, say) is content, not the checksum line.
    nested = "partitions:\n  - queues: [{name: a, properties: {x: y}}]\n    # checksum: no\n"
    assert checksum(nested) == _sha(nested)


def test_checksum_key_is_accepted_and_recomputed() -> None:
    body = "partitions:\n  - queues: []\n"
    config = load_config(body + "checksum: 0000\n")
    assert config.checksum == _sha(body)
    assert config == load_config(body)


def test_checksum_changes_with_content() -> None:
    assert checksum("partitions: [{queues: []}]") != checksum("partitions: [{queues: [{name: a}]}]")


# -- errors ---------------------------------------------------------------------------------


def test_validation_error_is_a_config_error_and_pickles() -> None:
    with pytest.raises(ConfigError) as info:
        load_config("partitions: [{bogus: 1}]")
    error = info.value
    assert isinstance(error, ConfigValidationError) and isinstance(error, ValueError)
    assert str(error) == "\n".join(error.errors)
    copy = pickle.loads(pickle.dumps(error))
    assert isinstance(copy, ConfigValidationError)
    assert copy.errors == error.errors


def test_config_package_imports_without_pyyaml() -> None:
    # PyYAML is imported only when a text is parsed, so event settings never need it.
    code = "import sys, pyscheduler.config; print('yaml' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "False"
