"""Modules split for size keep their promises: a partition is one class built in layers (no
method shadowed by a higher layer, the moved names importable from ``objects.partition``), and
the partition's and the simulator's modules import downward only (``lint-imports`` catches an
upward import)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pyscheduler.objects import partition, partition_base, partition_gangs, partition_outbox
from pyscheduler.objects.allocation import Allocation
from pyscheduler.objects.partition import Outbox, Partition, PartitionError
from pyscheduler.common.resources import Resource

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def test_a_partition_is_one_class_in_three_layers() -> None:
    assert Partition.__mro__ == (Partition, partition_gangs.PartitionGangs, partition_base.PartitionBase, object)
    # A method defined again higher up would silently replace the lower layer's.
    seen: dict[str, str] = {}
    for layer in Partition.__mro__[:-1]:
        for name, value in vars(layer).items():
            if callable(value) and not name.startswith("__"):
                assert name not in seen, f"{name} is defined in {seen[name]} and {layer.__name__}"
                seen[name] = layer.__name__
    # The cycle's per-allocation calls are plain methods of the partition.
    for name in ("commit_allocation", "unreserve", "_role_landed", "_usage_added", "start_replacement"):
        assert callable(getattr(Partition, name)), name


def test_moved_names_are_importable_from_objects_partition() -> None:
    for name in ("Outbox", "PLACEHOLDER_REPLACED", "PREEMPTED_BY_SCHEDULER", "Released", "STOPPED_BY_RM",
                 "TERMINATION_DETAIL", "TIMEOUT"):
        assert getattr(partition, name) is getattr(partition_outbox, name), name
        assert name in partition.__all__, name
    # The error stays where the exception hierarchy (and every caller) names it.
    assert PartitionError.__module__ == "pyscheduler.objects.partition"


def test_the_outbox_hands_over_what_it_collected() -> None:
    outbox = Outbox()
    alloc = Allocation("k", "app", Resource({"memory": 1}))
    outbox.allocated.append(alloc)
    outbox.released.append(partition.Released("app", "k", partition.STOPPED_BY_RM, "done"))
    updates, allocated, released, states = outbox.take()
    assert (updates, allocated, [r.allocation_key for r in released], states) == ([], [alloc], ["k"], [])
    assert outbox.take() == ([], [], [], [])


def _copy_tree(dest: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.pyc")
    shutil.copytree(ROOT / "pyscheduler", dest / "pyscheduler", ignore=ignore)
    shutil.copytree(ROOT / "web" / "pyscheduler_web", dest / "web" / "pyscheduler_web", ignore=ignore)
    shutil.copytree(ROOT / "k8s" / "pyscheduler_k8s", dest / "k8s" / "pyscheduler_k8s", ignore=ignore)
    shutil.copytree(ROOT / "benchmarks", dest / "benchmarks", ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")


@pytest.mark.parametrize(
    ("module", "upward_import", "contract"),
    [
        ("pyscheduler/objects/partition_base.py", "import pyscheduler.objects.partition_gangs",
         "A partition is one class built in layers"),
        ("pyscheduler/objects/partition_outbox.py", "import pyscheduler.objects.partition",
         "A partition is one class built in layers"),
        ("pyscheduler/sim/workload_types.py", "import pyscheduler.sim.workload",
         "The simulator's modules import downward only"),
        ("pyscheduler/sim/gang_jobs.py", "import pyscheduler.sim.rm", "The simulator's modules import downward only"),
    ],
)
def test_an_upward_import_between_split_modules_is_caught(tmp_path: Path, module: str, upward_import: str,
                                                          contract: str) -> None:
    _copy_tree(tmp_path)
    target = tmp_path / module
    target.write_text(target.read_text() + f"\n{upward_import}  # an upward import\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(tmp_path / "web"), str(tmp_path / "k8s")]))
    done = subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0
    broken = [line for line in done.stdout.splitlines() if " BROKEN" in line]
    assert any(contract in line for line in broken), done.stdout
