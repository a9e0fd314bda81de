"""The node reporter manager of the core: a :class:`~.rounds.NodeReporter` (rounds, merging,
plugins, checkpoint) whose sink is the core behind an RM proxy (:class:`~.core_sink.CoreSink`),
as ``pyscheduler serve`` runs it.

The names of :mod:`.rounds` and :mod:`.sink` are re-exported here: this is the module callers
import the reporter manager from. Code that must not depend on the core (the Kubernetes node
agent) imports :mod:`.rounds` instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pyscheduler.common.clock import Clock
from pyscheduler.reporter.core_sink import CoreSink
from pyscheduler.reporter.rounds import (
    DEFAULT_GRACE,
    DEFAULT_PERIOD,
    DEFAULT_TIMEOUT,
    Converter,
    ManagerSettings,
    NodeReporter,
    PluginState,
    ReporterError,
    RoundResult,
)
from pyscheduler.reporter.sink import NodeSink, NodeUpdate

if TYPE_CHECKING:  # handed in; the reporter depends on the RM interface only
    from pyscheduler.rmproxy.proxy import RMProxy

__all__ = ["Converter", "CoreSink", "DEFAULT_GRACE", "DEFAULT_PERIOD", "DEFAULT_TIMEOUT", "ManagerSettings",
           "NodeReporter", "NodeSink", "NodeUpdate", "PluginState", "ReporterError", "ReporterManager", "RoundResult"]


class ReporterManager(NodeReporter):
    def __init__(self, proxy: RMProxy | None = None, rm_id: str | None = None,
                 settings: ManagerSettings | None = None, *, sink: NodeSink | None = None,
                 clock: Clock | None = None, on_round: Callable[[RoundResult], None] | None = None) -> None:
        """Reports go to ``sink``; without one, to the core behind ``proxy`` (a
        :class:`CoreSink` for the nodes of ``rm_id``, or of every RM when it is None)."""
        if sink is None:
            if proxy is None:
                raise TypeError("ReporterManager needs an RM proxy or a sink")
            sink = CoreSink(proxy, rm_id)
        super().__init__(settings, sink=sink, clock=clock, on_round=on_round)
