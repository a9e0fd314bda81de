"""The built wheel installs into a clean virtual environment and works there.

`make test` builds the wheel (`make wheels`) before pytest runs; this test installs that
wheel, with no access to the source tree, and uses the native event store through it.
"""

from __future__ import annotations

import json
import subprocess
import venv
import zipfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _newest_wheel() -> Path:
    wheels = sorted((ROOT / "dist").glob("pyscheduler-*.whl"), key=lambda p: p.stat().st_mtime)
    if not wheels:
        pytest.fail("no wheel in dist/: run `make wheels` (make test does it first)")
    return wheels[-1]


def _fresh_venv_with(tmp_path: Path, *pip_args: str) -> Path:
    """A new virtual environment with ``pip install --no-index <pip_args>`` done; its python."""
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-index", *pip_args], check=True, timeout=180)
    return python


def _run_json(python: Path, script: str, cwd: Path) -> dict[str, Any]:
    """Runs ``script`` (which prints one JSON document) with ``python`` from ``cwd``, outside
    the source tree so that it cannot be imported by accident."""
    out = subprocess.run([python, "-c", script], check=True, capture_output=True, text=True, cwd=cwd, timeout=120)
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def test_wheel_contents() -> None:
    names = zipfile.ZipFile(_newest_wheel()).namelist()
    assert "pyscheduler/py.typed" in names
    assert "pyscheduler/_native.pyi" in names
    assert any(n.startswith("pyscheduler/_native") and n.endswith(".so") for n in names)
    assert "pyscheduler/events/system.py" in names
    assert not any(n.startswith("tests/") for n in names), "tests are not shipped"


def test_wheel_installs_and_imports_in_a_clean_venv(tmp_path: Path) -> None:
    python = _fresh_venv_with(tmp_path, "--no-deps", str(_newest_wheel()))
    env_dir = tmp_path / "venv"
    script = (
        "import json, pyscheduler, pyscheduler._native as n\n"
        "from pyscheduler.events import EventSystem\n"
        "es = EventSystem()\n"
        "es.add(4, 2, 0, 'root', timestamp_ns=5)\n"
        "assert es.flush(5.0)\n"
        "print(json.dumps({'file': pyscheduler.__file__, 'version': pyscheduler.__version__,\n"
        "                  'body': es.batch_body(0, 10).decode()}))\n"
        "es.stop()\n"
    )
    result = _run_json(python, script, tmp_path)
    assert str(env_dir) in result["file"], "imported from the installed wheel"
    assert result["version"] != "0+unknown"
    body = json.loads(result["body"])
    assert body["EventRecords"] == [{"type": 4, "objectID": "root", "timestampNano": 5, "eventChangeType": 2, "resource": {}}]


def test_the_wheel_ships_only_the_product() -> None:
    names = zipfile.ZipFile(_newest_wheel()).namelist()
    assert not any(n.startswith(("benchmarks/", "pyscheduler/bench/")) for n in names), "benchmarks are not shipped"
    assert "pyscheduler/testing/recording.py" in names  # the public test kit is (as flask.testing)


#: Imports every module of the installed package; prints what failed and what is installed.
_IMPORT_EVERY_MODULE = (
    "import importlib, importlib.util, json, pkgutil, pyscheduler\n"
    "names = ['pyscheduler']\n"
    "for info in pkgutil.walk_packages(pyscheduler.__path__, 'pyscheduler.'):\n"
    "    names.append(info.name)\n"
    "failed = {}\n"
    "for name in names:\n"
    "    try:\n"
    "        importlib.import_module(name)\n"
    "    except Exception as exc:\n"
    "        failed[name] = f'{type(exc).__name__}: {exc}'\n"
    "print(json.dumps({'names': names, 'failed': failed, 'file': pyscheduler.__file__,\n"
    "    'flask': importlib.util.find_spec('flask') is not None,\n"
    "    'grpc': importlib.util.find_spec('grpc') is not None,\n"
    "    'benchmarks': importlib.util.find_spec('benchmarks') is not None}))\n"
)


def _dependency_wheels() -> Path:
    deps = ROOT / "dist" / "deps"
    if not any(deps.glob("*.whl")):
        pytest.fail("no dependency wheels in dist/deps: run `make wheels` (make test does it first)")
    return deps


def test_every_module_imports_without_the_web_stack(tmp_path: Path) -> None:
    """The core wheel and its declared dependencies (PyYAML, fsspec, from dist/deps: no index), nothing
    else: every module of the installed package imports but the socket reporter plugins (the
    reporter-grpc extra, not pulled in: they say how to install it), and Flask is not there to lean on."""
    python = _fresh_venv_with(tmp_path, "--find-links", str(_dependency_wheels()), str(_newest_wheel()))
    env_dir = tmp_path / "venv"
    result = _run_json(python, _IMPORT_EVERY_MODULE, tmp_path)
    assert str(env_dir) in result["file"], "imported from the installed wheel"
    assert result["flask"] is False and result["benchmarks"] is False
    assert result["grpc"] is False, "gRPC is the reporter-grpc extra, not a dependency"
    grpc_modules = {name for name in result["names"]
                    if name == "pyscheduler.reporter.socket_plugins" or name.startswith("pyscheduler.reporter.grpc_api.")}
    assert set(result["failed"]) == grpc_modules, result["failed"]
    assert "pip install 'pyscheduler[reporter-grpc]'" in result["failed"]["pyscheduler.reporter.socket_plugins"]
    # The walk saw the whole package (a broken walk would pass vacuously).
    for module in ("pyscheduler.cli", "pyscheduler.dao.nodes", "pyscheduler.scheduler.loop", "pyscheduler.testing",
                   "pyscheduler.si.messages", "pyscheduler.sim.runner", "pyscheduler._native"):
        assert module in result["names"], module


def test_with_the_reporter_grpc_extra_every_module_imports(tmp_path: Path) -> None:
    wheel = _newest_wheel()
    python = _fresh_venv_with(tmp_path, "--find-links", str(_dependency_wheels()),
                              f"pyscheduler[reporter-grpc] @ {wheel.as_uri()}")
    result = _run_json(python, _IMPORT_EVERY_MODULE, tmp_path)
    assert result["grpc"] is True and result["failed"] == {}
    assert "pyscheduler.reporter.socket_plugins" in result["names"]
