"""What the REST API shows of the reporter manager (pyscheduler extensions, not in YuniKorn).

- :func:`reporters` answers ``GET /ws/v1/reporters``: each plugin in registration order::

      [{"name": "zones", "kind": "in-process", "order": 0, "state": "running",  # or socket, restored
        "polls": 12, "failures": 1, "lastPoll": 1700000000000000000,
        "lastError": "RuntimeError: ...",
        "rejectedFields": [{"field": "Labels", "reason": "not JSON: ..."}]}]

  ``state`` is ``running``, or ``stopped`` for a plugin that went away and whose last report
  is still merged (its grace period); ``lastPoll`` is Unix ns (0: never polled);
  ``rejectedFields`` are the last round's.
- :func:`reported` answers ``GET /ws/v1/partition/{partition}/node/{node}/reported``: the
  node's merged fields and who supplied each::

      {"nodeID": "node-1", "partition": "default",
       "fields": {"Labels": {"value": {"rack": "r1"}, "source": {"rack": "zones"}},
                  "TopologyPolicy": {"value": "None", "source": "advisor"}}}

  ``source`` is per key for a map field, per element for a slice, the plugin for the rest. An
  unknown partition or node raises :class:`pyscheduler.dao.NotFound` with YuniKorn's message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyscheduler.dao.node_snapshots import node_snapshot
from pyscheduler.reporter.rounds import NodeReporter

if TYPE_CHECKING:
    from pyscheduler.scheduler.context import ClusterContext

__all__ = ["reported", "reporters"]


def reporters(manager: NodeReporter | None) -> list[dict[str, Any]]:
    if manager is None:
        return []
    return [
        {
            "name": state.name,
            "kind": state.kind,
            "order": state.order,
            "state": state.state,
            "polls": state.polls,
            "failures": state.failures,
            "lastPoll": state.last_poll_ns,
            "lastError": state.last_error,
            "rejectedFields": [{"field": r.field, "reason": r.reason} for r in state.rejected],
        }
        for state in manager.plugins()
    ]


def reported(context: ClusterContext, manager: NodeReporter | None, partition_name: str, node_id: str) -> dict[str, Any]:
    node_snapshot(context, partition_name, node_id)  # NotFound (YuniKorn's messages) when it does not exist
    merged = manager.merged(node_id) if manager is not None else None
    fields = {} if merged is None else {
        name: {"value": merged.values[name], "source": merged.sources[name]} for name in sorted(merged.values)
    }
    return {"nodeID": node_id, "partition": partition_name, "fields": fields}
