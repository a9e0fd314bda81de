"""One exception hierarchy: every error class pyscheduler (and its REST service) defines derives
from ``SchedulerError``, keeping its built-in base, and native ones report their module."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest

import pyscheduler
import pyscheduler_web
from pyscheduler import _native
from pyscheduler.common.errors import SchedulerError, SchedulerRuntimeError, SchedulerValueError
from pyscheduler.events import EventSystem


def _modules(package: ModuleType) -> list[ModuleType]:
    found = [package]
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if info.name.endswith("__main__"):
            continue
        found.append(importlib.import_module(info.name))
    return found


def _error_classes() -> dict[str, type[BaseException]]:
    classes: dict[str, type[BaseException]] = {}
    for module in (*_modules(pyscheduler), *_modules(pyscheduler_web)):
        for name, value in vars(module).items():
            if inspect.isclass(value) and issubclass(value, BaseException):
                if value.__module__.startswith(("pyscheduler.", "pyscheduler_web.")) or value.__module__ in (
                    "pyscheduler",
                    "pyscheduler_web",
                ):
                    classes[f"{value.__module__}.{value.__qualname__}"] = value
    return classes


def test_every_error_class_is_a_scheduler_error() -> None:
    classes = _error_classes()
    # The walk found the ones that matter (a regression that lost them would pass vacuously).
    for expected in (
        "pyscheduler.objects.partition.PartitionError",
        "pyscheduler.policies.placement.PlacementError",
        "pyscheduler.dao.errors.NotFound",
        "pyscheduler.common.errors.ResourceError",
        "pyscheduler._native.EventSystemStoppedError",
        "pyscheduler_web.http.HTTPError",
        "pyscheduler.testing.recording.WaitTimeout",
    ):
        assert expected in classes, expected
    outside = sorted(name for name, cls in classes.items() if not issubclass(cls, SchedulerError))
    assert outside == []


@pytest.mark.parametrize(
    ("name", "builtin"),
    [
        ("pyscheduler.common.errors.ResourceError", ValueError),
        ("pyscheduler.common.errors.ConfigError", ValueError),
        ("pyscheduler.common.goparse.NumError", ValueError),
        ("pyscheduler.testing.recording.WaitTimeout", TimeoutError),
        ("pyscheduler._native.EventIdOutOfRangeError", ValueError),
        ("pyscheduler._native.EventSystemStoppedError", RuntimeError),
    ],
)
def test_the_builtin_bases_stay(name: str, builtin: type[BaseException]) -> None:
    assert issubclass(_error_classes()[name], builtin)


def test_native_errors_report_their_module_and_are_caught_as_scheduler_errors() -> None:
    assert _native.EventIdOutOfRangeError.__module__ == "pyscheduler._native"
    assert _native.EventSystemStoppedError.__module__ == "pyscheduler._native"
    assert issubclass(_native.EventIdOutOfRangeError, SchedulerValueError)
    assert issubclass(_native.EventSystemStoppedError, SchedulerRuntimeError)
    system = EventSystem()
    system.start()
    try:
        system.flush()
        with pytest.raises(SchedulerError) as caught:
            system.subscribe_from(10**9)
        assert type(caught.value) is _native.EventIdOutOfRangeError
    finally:
        system.stop()
