"""Another checkout's core, driven by this checkout's benchmark workers: ``--baseline DIR``.

Issue 17 asks for ratios against the previous commit's code measured in the same run. A
baseline is a directory holding a ``pyscheduler`` package with its native module built (another
checkout after ``make build``, or a ``git worktree`` of an older commit with ``_native*.so``
copied into its ``pyscheduler/`` when the Rust sources did not change). The workers then run
with ``PYTHONPATH`` pointing at a directory of two links: ``benchmarks`` (this checkout's, so
both sides run the very same workload code) and ``pyscheduler`` (the baseline's), and with
``PYTHONSAFEPATH`` set: ``python -m`` otherwise puts the working directory first on the path,
and run from this checkout (as ``make bench`` is) a worker imported this checkout's core,
silently measuring it against itself. The environment is checked before it is handed out: a
Python started with it, from this checkout, must import the baseline's package. The core's
public entry points the workers use (``ClusterContext``, ``RMProxy``, ``Scheduler``, the SI
messages) must exist there: a baseline too old for the workload fails its runs with the
worker's error, reported, not hidden.

The kubernetes family runs the baseline served, as ``pyscheduler serve --rm
pyscheduler_k8s:attach``: :func:`served_baseline_environment` links the baseline's three
packages instead (``pyscheduler``, ``web/pyscheduler_web``, ``k8s/pyscheduler_k8s``: the core,
its REST layer and the Kubernetes shim, so the whole served stack is the baseline's), with the
same ``PYTHONSAFEPATH`` and the same check: a Python started with it imports all three from the
baseline, else :class:`BaselineError`.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

__all__ = ["BaselineError", "baseline_environment", "core_imported", "packages_imported", "served_baseline_environment"]

_BENCHMARKS = Path(__file__).resolve().parent


class BaselineError(ValueError):
    """A --baseline directory that cannot be used (no package, no native module)."""


def baseline_environment(directory: str | Path) -> dict[str, str]:
    """The environment a worker process needs to drive the baseline's core (see the module doc)."""
    root = Path(directory).expanduser().resolve()
    package = _core_package(directory, root)
    return _linked_environment(directory, {"benchmarks": _BENCHMARKS, "pyscheduler": package})


def served_baseline_environment(directory: str | Path) -> dict[str, str]:
    """The environment ``pyscheduler serve --rm pyscheduler_k8s:attach`` needs to run the
    baseline's core, REST layer and shim (see the module doc)."""
    root = Path(directory).expanduser().resolve()
    packages = {"pyscheduler": _core_package(directory, root),
                "pyscheduler_web": root / "web" / "pyscheduler_web",
                "pyscheduler_k8s": root / "k8s" / "pyscheduler_k8s"}
    for name, package in packages.items():
        if not (package / "__init__.py").is_file():
            raise BaselineError(f"--baseline {directory}: no {name} package in {package.parent}")
    return _linked_environment(directory, packages)


def _core_package(directory: str | Path, root: Path) -> Path:
    package = root / "pyscheduler"
    if not (package / "__init__.py").is_file():
        raise BaselineError(f"--baseline {directory}: no pyscheduler package in {root}")
    if not any(package.glob("_native*.so")) and not any(package.glob("_native*.pyd")):
        raise BaselineError(f"--baseline {directory}: {package} has no built native module (run make build there)")
    return package


def _linked_environment(directory: str | Path, links: Mapping[str, Path]) -> dict[str, str]:
    """This process's environment with ``PYTHONPATH`` a new directory of ``links`` (name ->
    target, removed at exit) and ``PYTHONSAFEPATH`` set; refused unless every package among the
    links except ``benchmarks`` is imported from its target."""
    linked = Path(tempfile.mkdtemp(prefix="pyscheduler-baseline-"))
    atexit.register(shutil.rmtree, linked, ignore_errors=True)
    for name, target in links.items():
        (linked / name).symlink_to(target, target_is_directory=True)
    environment = dict(os.environ)
    environment["PYTHONPATH"] = str(linked)
    environment["PYTHONSAFEPATH"] = "1"
    expected = {name: target.resolve() for name, target in links.items() if name != "benchmarks"}
    imported = packages_imported(list(expected), environment)
    for name, package in expected.items():
        if imported[name] != package:
            raise BaselineError(f"--baseline {directory}: a worker would import {name} from {imported[name]}, "
                                f"not {package}")
    return environment


def core_imported(environment: Mapping[str, str] | None = None) -> Path:
    """The ``pyscheduler`` package a worker started from this checkout with ``environment``
    (None: this process's) imports."""
    return packages_imported(["pyscheduler"], environment)["pyscheduler"]


def packages_imported(names: list[str], environment: Mapping[str, str] | None = None) -> dict[str, Path]:
    """The directory each package of ``names`` is imported from by a Python started from this
    checkout with ``environment`` (None: this process's)."""
    script = ("import importlib, sys\n"
              "for name in sys.argv[1:]:\n"
              "    print(importlib.import_module(name).__file__)\n")
    done = subprocess.run([sys.executable, "-c", script, *names],
                          cwd=_BENCHMARKS.parent, env=None if environment is None else dict(environment),
                          capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise BaselineError(f"a worker cannot import {', '.join(names)}: {done.stderr.strip().splitlines()[-1:]}")
    files = done.stdout.strip().splitlines()
    return {name: Path(file).resolve().parent for name, file in zip(names, files, strict=True)}
