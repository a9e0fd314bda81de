"""The shim's counters (tests and the REST status read them as ``KubeShim.counts``). Each is
increased by the one module that does the counted thing; a plain ``+=`` from several threads
may lose an increase under contention, which a counter for people can afford."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ShimCounts"]


@dataclass
class ShimCounts:
    bound: int = 0
    bind_failures: int = 0
    relists: int = 0
    unschedulable_marked: int = 0
    config_reloads: int = 0
    config_rejected: int = 0
    events_dropped: int = 0
    placeholders_created: int = 0
    deleted: int = 0
    pods_failed: int = 0
