"""The one switch between native implementations and their pure-Python twins
(:mod:`pyscheduler.common.native`): its environment variable, its scoped and process-wide
settings, and a product twin that follows it (the node ordering)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pyscheduler.common import native
from pyscheduler.policies.node_ordering import NativeNodeOrdering, PythonNodeOrdering, make_node_ordering


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, True), ("", True), ("1", True), ("yes", True), ("0", False), ("false", False), (" OFF ", False), ("No", False)],
)
def test_the_environment_variable_sets_the_default(value: str | None, expected: bool) -> None:
    env = {"PATH": "/usr/bin:/bin"}
    if value is not None:
        env[native.ENV_VAR] = value
    code = "from pyscheduler.common import native; print(native.enabled())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(expected)


def test_forced_applies_to_the_block_and_restores_even_after_an_error() -> None:
    before = native.enabled()
    with native.forced(not before):
        assert native.enabled() is (not before)
        with native.forced(before):
            assert native.enabled() is before
        assert native.enabled() is (not before)
    assert native.enabled() is before
    with pytest.raises(RuntimeError), native.forced(not before):
        raise RuntimeError("boom")
    assert native.enabled() is before


def test_set_enabled_is_process_wide() -> None:
    before = native.enabled()
    try:
        native.set_enabled(False)
        assert native.enabled() is False
        native.set_enabled(True)
        assert native.enabled() is True
    finally:
        native.set_enabled(before)


def test_the_node_ordering_follows_the_switch_unless_told() -> None:
    with native.forced(True):
        assert isinstance(make_node_ordering(), NativeNodeOrdering)
        assert isinstance(make_node_ordering(native=False), PythonNodeOrdering)
    with native.forced(False):
        assert isinstance(make_node_ordering(), PythonNodeOrdering)
        assert isinstance(make_node_ordering(native=True), NativeNodeOrdering)


def test_the_pure_resource_twin_is_a_test_oracle_not_part_of_the_product() -> None:
    with pytest.raises(ImportError):
        __import__("pyscheduler.common.resources_py")
    from pyscheduler.testing import resources_py

    assert resources_py.Resource({"memory": 1}) + resources_py.Resource({"memory": 2}) == {"memory": 3}



def test_a_partition_and_the_simulator_follow_the_switch_when_not_told() -> None:
    """The core's default is the switch: a simulation built without a choice orders its
    partition's nodes as ``PYSCHEDULER_NATIVE`` says, and records what ran."""
    from pyscheduler.sim.rm import SimulatedRM
    from pyscheduler.sim.workload import WorkloadSpec

    for flag, kind in ((True, NativeNodeOrdering), (False, PythonNodeOrdering)):
        with native.forced(flag):
            rm = SimulatedRM(WorkloadSpec(node_count=4, app_count=2).generate())
            assert rm.record.native_node_ordering is flag
            assert rm.run(timeout=60).completed
            partitions = list(rm.context.partitions.values())
            assert partitions and all(isinstance(p.node_ordering, kind) for p in partitions)
