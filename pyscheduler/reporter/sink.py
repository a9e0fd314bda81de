"""Where the reporter manager's merged facts go: the :class:`NodeSink` protocol and the
:class:`NodeUpdate` it is given (see :mod:`.manager`, "Sinks"; the core's sink is
:mod:`.core_sink`, the Kubernetes agent's ``pyscheduler_k8s.agent``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from pyscheduler.reporter.node_fields import NodeFacts

__all__ = ["NodeSink", "NodeUpdate"]


@dataclass(frozen=True)
class NodeUpdate:
    """One node's merged facts as they go to a sink."""

    node_id: str
    #: Who the node belongs to, as :meth:`NodeSink.known_nodes` said (the RM, for the core).
    owner: str
    #: Empty when nothing reports on the node any more.
    facts: NodeFacts
    #: What the sink was last given for the node (None: nothing yet).
    previous: NodeFacts | None


class NodeSink(Protocol):
    """Where the manager's merged facts go. The manager calls it from one apply at a time
    (never two calls at once), without holding its own locks."""

    def known_nodes(self) -> Mapping[str, str]:
        """Node id -> its owner, for every node reports may be about now."""
        ...

    def send(self, updates: Sequence[NodeUpdate]) -> None:
        """Applies the changed nodes' facts (one entry per node, sorted by node id). Raising
        leaves them all unsent (the manager tries them again)."""
        ...
