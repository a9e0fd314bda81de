"""Another checkout's core, driven by this checkout's benchmark workers: ``--baseline DIR``.

Issue 17 asks for ratios against the previous commit's code measured in the same run. A
baseline is a directory holding a ``pyscheduler`` package with its native module built (another
checkout after ``make build``, or a ``git worktree`` of an older commit with ``_native*.so``
copied into its ``pyscheduler/`` when the Rust sources did not change). The workers then run
with ``PYTHONPATH`` pointing at a directory of two links: ``benchmarks`` (this checkout's, so
both sides run the very same workload code) and ``pyscheduler`` (the baseline's). The core's
public entry points the workers use (``ClusterContext``, ``RMProxy``, ``Scheduler``, the SI
messages) must exist there: a baseline too old for the workload fails its runs with the
worker's error, reported, not hidden.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

__all__ = ["BaselineError", "baseline_environment"]

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
    return environment
