"""The pyscheduler-web wheel (``make wheels`` builds it into dist/ beside the core wheel):
pure Python, the whole package, no tests, the documented dependencies."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent


def _newest_web_wheel() -> Path:
    wheels = sorted((ROOT / "dist").glob("pyscheduler_web-*.whl"), key=lambda p: p.stat().st_mtime)
    if not wheels:
        pytest.fail("no pyscheduler-web wheel in dist/: run `make wheels` (make test does it first)")
    return wheels[-1]


def test_web_wheel_contents_and_metadata() -> None:
    wheel = _newest_web_wheel()
    assert wheel.name.endswith("-py3-none-any.whl"), "pure Python"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = next(archive.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
    for module in ("app", "service", "rm_routes", "errors", "http", "gunicorn_conf", "streams", "demo", "server"):
        assert f"pyscheduler_web/{module}.py" in names
    for source in ("__init__", "source", "events", "event_streams", "role_history", "reporter", "preemption", "scheduler"):
        assert f"pyscheduler_web/metrics/{source}.py" in names
    for family in ("events", "partitions", "queues", "nodes", "applications", "usage", "scheduler", "debug"):
        assert f"pyscheduler_web/blueprints/{family}.py" in names
    assert "pyscheduler_web/py.typed" in names
    assert not any(n.startswith(("tests/", "pyscheduler/")) for n in names)
    requires = {line.split(":", 1)[1].strip().split("<")[0].split(">")[0].split("~")[0].lower()
                for line in metadata.splitlines() if line.startswith("Requires-Dist:")}
    assert requires == {"pyscheduler", "flask", "gunicorn", "orjson", "prometheus-client"}
