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

__all__ = ["BaselineError", "baseline_environment", "core_imported"]

_BENCHMARKS = Path(__file__).resolve().parent


class BaselineError(ValueError):
    """A --baseline directory that cannot be used (no package, no native module)."""


def baseline_environment(directory: str | Path) -> dict[str, str]:
    """The environment a worker process needs to drive the baseline's core (see the module doc)."""
    root = Path(directory).expanduser().resolve()
    package = root / "pyscheduler"
    if not (package / "__init__.py").is_file():
        raise BaselineError(f"--baseline {directory}: no pyscheduler package in {root}")
    if not any(package.glob("_native*.so")) and not any(package.glob("_native*.pyd")):
        raise BaselineError(f"--baseline {directory}: {package} has no built native module (run make build there)")
    links = Path(tempfile.mkdtemp(prefix="pyscheduler-baseline-"))
    atexit.register(shutil.rmtree, links, ignore_errors=True)
    (links / "benchmarks").symlink_to(_BENCHMARKS, target_is_directory=True)
    (links / "pyscheduler").symlink_to(package, target_is_directory=True)
    environment = dict(os.environ)
    environment["PYTHONPATH"] = str(links)
    environment["PYTHONSAFEPATH"] = "1"
    imported = core_imported(environment)
    if imported != package:
        raise BaselineError(f"--baseline {directory}: a worker would import the core in {imported}, not {package}")
    return environment


def core_imported(environment: Mapping[str, str] | None = None) -> Path:
    """The ``pyscheduler`` package a worker started from this checkout with ``environment``
    (None: this process's) imports."""
    done = subprocess.run([sys.executable, "-c", "import pyscheduler; print(pyscheduler.__file__)"],
                          cwd=_BENCHMARKS.parent, env=None if environment is None else dict(environment),
                          capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        raise BaselineError(f"a worker cannot import pyscheduler: {done.stderr.strip().splitlines()[-1:]}")
    return Path(done.stdout.strip()).resolve().parent
