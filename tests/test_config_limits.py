"""Bounded configuration parsing: alias bombs, deep nesting, deep queue trees, error floods.

Each hostile document is refused with a clear error, quickly, and changes nothing: through the
loader, the RM interface (registration and ``update_configuration``) and ``pyscheduler
validate-conf``. Deep nesting used to crash the process (PyYAML's C composer overflows the
stack), so a regression here kills the test run rather than failing one test.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
import yaml
from rm_helpers import BASIC, World

from pyscheduler.common.errors import ConfigError
from pyscheduler.config.loader import parse_and_validate
from pyscheduler.config.validator import MAX_QUEUE_DEPTH, MAX_REPORTED_ERRORS, ConfigValidationError
from pyscheduler.config.yaml_limits import MAX_EXPANDED_VALUES, MAX_NESTING, expanded_size
from pyscheduler.sim.workload import WorkloadError, WorkloadSpec


def alias_bomb(levels: int, fan_out: int = 8) -> str:
    """Lists of aliases nested ``levels`` deep: a few hundred bytes, fan_out**(levels+1) values."""
    lines = ["a0: &a0 [" + ", ".join(["x"] * fan_out) + "]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fan_out) + "]")
    return "\n".join(lines) + "\n"


def queue_chain(levels_below_root: int) -> str:
    """A queues.yaml whose tree is a chain ``root.q0.q1...`` of the given length below root."""
    text = "partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: '*'\n"
    indent = 8
    for i in range(levels_below_root):
        text += " " * indent + "queues:\n" + " " * indent + f"  - name: q{i}\n"
        indent += 4
    return text


def deep_brackets(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_an_alias_bomb_is_refused_at_once() -> None:
    text = alias_bomb(7)  # 8**8 = 16.7 million values in 645 bytes
    assert len(text) < 700
    started = time.monotonic()
    with pytest.raises(ConfigValidationError) as err:
        parse_and_validate(text)
    assert time.monotonic() - started < 2.0
    assert err.value.errors == [
        f"the document expands to more than {MAX_EXPANDED_VALUES:,} values through aliases (excessive aliasing)"
    ]


def test_moderate_aliasing_is_still_fine() -> None:
    # Anchors and aliases are ordinary YAML: a config that uses them sensibly still loads.
    text = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
            properties: &props {application.sort.policy: fair}
          - name: b
            properties: *props
"""
    root = parse_and_validate(text).partitions[0].queues
    assert [q.properties for q in root.queues] == [{"application.sort.policy": "fair"}] * 2
    # Each list counts itself and its expanded items: 9, 73, 585, 4681; the mapping adds its 4 keys.
    sizes = [9]
    for _ in range(3):
        sizes.append(1 + 8 * sizes[-1])
    assert expanded_size(yaml.compose(alias_bomb(3))) == 1 + 4 + sum(sizes) == 5353


def test_a_recursive_alias_is_refused() -> None:
    with pytest.raises(ConfigValidationError, match=r"recursive alias \(it refers to a collection that contains it\)"):
        parse_and_validate("a: &a [1, *a]\n")


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 100_000, 1_000_000])
def test_deep_nesting_is_refused_without_crashing(depth: int) -> None:
    with pytest.raises(ConfigValidationError) as err:
        parse_and_validate(deep_brackets(depth))
    assert err.value.errors == [
        f"line 1, column {MAX_NESTING + 1}: the document nests more than {MAX_NESTING} lists and mappings deep"
    ]


def test_queue_depth_limit() -> None:
    config = parse_and_validate(queue_chain(MAX_QUEUE_DEPTH - 1))  # root + 63 levels: allowed
    queue = config.partitions[0].queues
    depth = 1
    while queue.queues:
        queue = queue.queues[0]
        depth += 1
    assert depth == MAX_QUEUE_DEPTH
    with pytest.raises(ConfigValidationError) as err:
        parse_and_validate(queue_chain(MAX_QUEUE_DEPTH))
    assert len(err.value.errors) == 1
    assert f"the queue tree is more than {MAX_QUEUE_DEPTH} levels deep" in err.value.errors[0]


def test_errors_are_capped_with_a_count_of_the_rest() -> None:
    bad_keys = "".join(f"        bad{i}: 1\n" for i in range(MAX_REPORTED_ERRORS + 50))
    text = "partitions:\n  - name: default\n    queues:\n      - name: root\n" + bad_keys
    with pytest.raises(ConfigValidationError) as err:
        parse_and_validate(text)
    assert len(err.value.errors) == MAX_REPORTED_ERRORS + 1
    assert err.value.errors[-1] == "... and 50 more errors"
    assert "bad0" in err.value.errors[0]


@pytest.mark.parametrize("text", [alias_bomb(7), deep_brackets(100_000), queue_chain(MAX_QUEUE_DEPTH)])
def test_hostile_configs_through_the_rm_interface_change_nothing(text: str) -> None:
    with pytest.raises(ConfigError):
        World(config=text)  # registration refuses it
    world = World(config=BASIC)
    world.add_app("app-1", "root.a")
    mark = world.mark()
    before = sorted(world.partition().root.children)
    with pytest.raises(ConfigError):
        world.reload(text)
    assert sorted(world.partition().root.children) == before
    assert world.events(mark) == []
    world.add_app("app-2", "root.b")  # the old configuration still works
    assert "app-2" in world.partition().applications


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (alias_bomb(7), "excessive aliasing"),
        (deep_brackets(300_000), "lists and mappings deep"),
    ],
)
def test_validate_conf_cli_refuses_hostile_files(text: str, fragment: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pyscheduler.cli", "validate-conf", "-"],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr  # invalid, not a crash (-11) or a hang
    assert fragment in done.stderr


def test_workload_files_are_bounded_too() -> None:
    with pytest.raises(WorkloadError, match="lists and mappings deep"):
        WorkloadSpec.from_text(deep_brackets(100_000))


def test_placement_never_creates_a_queue_deeper_than_the_limit() -> None:
    # A fixed rule may name a path deeper than the tree the configuration allows; creating it
    # would give REST a tree it cannot render. The application is rejected, nothing is created.
    deep = "root." + ".".join(f"d{i}" for i in range(MAX_QUEUE_DEPTH))
    config = (
        "partitions:\n  - name: default\n    placementrules:\n"
        f"      - name: fixed\n        value: {deep}\n        create: true\n"
        "    queues:\n      - name: root\n        submitacl: '*'\n"
    )
    world = World(config=config)
    world.add_app("app-1", "root.anything")
    assert "app-1" not in world.partition().applications
    assert f"more than {MAX_QUEUE_DEPTH} levels deep" in world.rm.rejected_apps["app-1"]
    assert world.partition().get_queue("root.d0") is None
