"""Reporter plugins as the manager sees them, and which of them are turned on.

An **in-process plugin** is any object with a ``name`` and a ``report()`` method returning its
content per node id (``{node_id: [ReportContent, ...]}``); it may also have ``watch()``, an
iterator that yields such a mapping each time its content changes (the manager then applies
it at once instead of waiting for the next poll). A socket plugin (Katalyst's gRPC
``ReporterPlugin``) is wrapped to look the same.

Plugins are turned on and off by name with Katalyst's (and Kubernetes' controller-manager's)
rule, :func:`is_enabled`: a list of entries, ``foo`` turns ``foo`` on, ``-foo`` turns it off,
``*`` turns on every plugin not named; the first entry naming a plugin wins.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Protocol, runtime_checkable

from pyscheduler.reporter.content import ReportContent

__all__ = ["NodeReport", "ReporterPlugin", "WatchingPlugin", "is_enabled"]

#: What a plugin reports: node id -> its content for that node.
NodeReport = Mapping[str, Sequence[ReportContent]]


@runtime_checkable
class ReporterPlugin(Protocol):
    @property
    def name(self) -> str: ...

    def report(self) -> NodeReport: ...


@runtime_checkable
class WatchingPlugin(ReporterPlugin, Protocol):
    def watch(self) -> Iterator[NodeReport]: ...


def is_enabled(name: str, rules: Sequence[str]) -> bool:
    """Whether plugin ``name`` is on under ``rules`` (see the module doc). No rules: all on."""
    if not rules:
        return True
    star = False
    for rule in rules:
        if rule == name:
            return True
        if rule == f"-{name}":
            return False
        if rule == "*":
            star = True
    return star
