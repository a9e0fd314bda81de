"""Utilisation bookkeeping of a simulation run: what runs on which node, integrated over time.

:class:`ClusterUsage` follows every allocation's (or placeholder's) start and end on its node
and, at each change, adds the allocated memory, vcore and nodes in use times the simulated
seconds since the previous change to the run's :class:`~pyscheduler.sim.record.SimulationRecord`
(``memory_seconds``, ``vcore_seconds``, ``node_seconds``), keeping the peaks. It also notes when
the last allocation stopped (the end of the run's busy period). Not thread-safe: the simulated
RM calls it under its condition.
"""

from __future__ import annotations

from pyscheduler.sim.record import SimulationRecord

__all__ = ["ClusterUsage"]


class ClusterUsage:
    """The cluster's allocated resources over simulated time, written into ``record``."""

    def __init__(self, record: SimulationRecord) -> None:
        self.record = record
        self._node_used: dict[str, list[int]] = {}  # node id -> [memory, vcore, allocations]
        self._used_memory = 0
        self._used_vcore = 0
        self._nodes_in_use = 0
        #: When usage last changed (the integrals cover the run up to here).
        self.last_change = 0.0
        #: When an allocation last stopped running.
        self.last_release = 0.0

    def change(self, now: float, node_id: str, memory: int, vcore: int) -> None:
        """Integrates usage up to ``now``, then applies one allocation's start (positive
        ``memory`` and ``vcore``) or end (negative)."""
        record = self.record
        elapsed = now - self.last_change
        if elapsed > 0:
            record.memory_seconds += self._used_memory * elapsed
            record.vcore_seconds += self._used_vcore * elapsed
            record.node_seconds += self._nodes_in_use * elapsed
            self.last_change = now
        used = self._node_used.get(node_id)
        if used is None:
            used = self._node_used[node_id] = [0, 0, 0]
        was_used = used[2] > 0
        used[0] += memory
        used[1] += vcore
        used[2] += 1 if memory > 0 else -1
        self._nodes_in_use += (used[2] > 0) - was_used
        self._used_memory += memory
        self._used_vcore += vcore
        record.peak_memory = max(record.peak_memory, self._used_memory)
        record.peak_vcore = max(record.peak_vcore, self._used_vcore)
        record.peak_nodes_in_use = max(record.peak_nodes_in_use, self._nodes_in_use)

    def released(self, now: float) -> None:
        """An allocation stopped running at ``now``."""
        self.last_release = max(self.last_release, now)

    def integrate_to(self, end: float) -> None:
        """Integrates usage up to ``end`` (the run's end: the areas then cover the whole run)."""
        elapsed = end - self.last_change
        if elapsed > 0:
            self.record.memory_seconds += self._used_memory * elapsed
            self.record.vcore_seconds += self._used_vcore * elapsed
            self.record.node_seconds += self._nodes_in_use * elapsed
            self.last_change = end
