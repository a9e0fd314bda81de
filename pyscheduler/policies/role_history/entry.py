"""The counters of one role on one node (Slider's ``NodeEntry``, without its YARN-only states).

An allocation of the role on the node is ``live`` from the moment the core places it (or the
RM reports it, recovered or bound); ``requested`` counts pending asks of the role that target
the node. ``lastUsed`` is when an instance last stopped there (the time it became available
again); a node with no entry for a role has never run it. Counters never go below zero.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NodeEntry"]


@dataclass(slots=True)
class NodeEntry:
    requested: int = 0
    live: int = 0
    #: Instances that ended on this node: all failures, recent failures (forgotten every
    #: failure window), preemptions.
    failed: int = 0
    failed_recently: int = 0
    preempted: int = 0
    #: Unix ns of the last time an instance of the role stopped here (0: never).
    last_used_ns: int = 0

    @property
    def available(self) -> bool:
        """No instance of the role runs or is headed here."""
        return self.live + self.requested <= 0

    def decrement_requested(self) -> None:
        self.requested = max(0, self.requested - 1)

    def stopped(self, now_ns: int) -> None:
        """One live instance ended."""
        self.live = max(0, self.live - 1)
        self.last_used_ns = now_ns
