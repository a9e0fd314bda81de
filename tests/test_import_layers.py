"""The import layers are enforced: ``lint-imports`` (import-linter, the contracts in
pyproject.toml) passes on the tree and fails on a copy with one upward import added."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _copy_tree(dest: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.pyc")
    shutil.copytree(ROOT / "pyscheduler", dest / "pyscheduler", ignore=ignore)
    shutil.copytree(ROOT / "web" / "pyscheduler_web", dest / "web" / "pyscheduler_web", ignore=ignore)
    shutil.copytree(ROOT / "k8s" / "pyscheduler_k8s", dest / "k8s" / "pyscheduler_k8s", ignore=ignore)
    shutil.copytree(ROOT / "benchmarks", dest / "benchmarks", ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree), str(tree / "web"), str(tree / "k8s")]))
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=tree, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def clean_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tree = tmp_path_factory.mktemp("layers")
    _copy_tree(tree)
    return tree


def test_the_tree_keeps_every_contract(clean_copy: Path) -> None:
    done = _lint(clean_copy)
    assert done.returncode == 0, done.stdout + done.stderr
    assert " kept, 0 broken" in done.stdout


@pytest.mark.parametrize(
    ("module", "upward_import", "contract"),
    [
        ("pyscheduler/si/messages.py", "import pyscheduler.scheduler.context", "The SI is a leaf"),
        ("pyscheduler/objects/node.py", "import pyscheduler.scheduler.cycle", "The core imports downward only"),
        ("pyscheduler/events/system.py", "import pyscheduler.testing", "never imports the test kit"),
        ("pyscheduler/dao/nodes.py", "import pyscheduler_web.http", "does not depend on the REST service"),
        ("pyscheduler/rmproxy/proxy.py", "import pyscheduler_k8s.shim", "does not depend on the REST service"),
        ("k8s/pyscheduler_k8s/shim.py", "import pyscheduler.scheduler.cycle", "The Kubernetes shim is an RM"),
        # The shim may use the service's RM protocol at run time, not the service itself.
        ("k8s/pyscheduler_k8s/replica.py", "import pyscheduler.service.entrypoint", "The Kubernetes shim is an RM"),
        ("pyscheduler/reporter/views.py", "import pyscheduler.service", "The core imports downward only"),
        ("pyscheduler/service/rm.py", "import pyscheduler.sim", "The core imports downward only"),
        # The shim's layers: the cache knows no callback, a writer no watch handler, a pure module no cache.
        ("k8s/pyscheduler_k8s/cache/tasks.py", "import pyscheduler_k8s.callback", "The Kubernetes shim in layers"),
        ("k8s/pyscheduler_k8s/binder.py", "import pyscheduler_k8s.pod_events", "The Kubernetes shim in layers"),
        ("k8s/pyscheduler_k8s/pods.py", "import pyscheduler_k8s.cache", "The Kubernetes shim in layers"),
    ],
)
def test_an_upward_import_is_caught(tmp_path: Path, module: str, upward_import: str, contract: str) -> None:
    _copy_tree(tmp_path)
    target = tmp_path / module
    target.write_text(target.read_text() + f"\n{upward_import}  # an upward import\n")
    done = _lint(tmp_path)
    assert done.returncode != 0
    broken = [line for line in done.stdout.splitlines() if " BROKEN" in line]
    assert any(contract in line for line in broken), done.stdout
