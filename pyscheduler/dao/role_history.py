"""One role history (a pyscheduler extension, not in YuniKorn):
``/partition/{p}/rolehistory/{historyKey}``.

The answer, keys in this order::

    {"partition": "default", "clusterId": "rm-1", "historyKey": "hbase",
     "nodes": {"node-1": {"offline": false,
                          "roles": {"region": {"live": 1, "requested": 0, "failed": 0,
                                               "failedRecently": 0, "preempted": 0,
                                               "lastUsed": 1700000000000000000}}}},
     "recent": {"region": ["node-2", "node-3"]},
     "targets": [{"allocationKey": "hbase-region-4", "role": "region", "nodeID": "node-2"}]}

``partition`` is the partition's plain name and ``clusterId`` its RM (whichever form of the
name the path used). ``nodes`` holds every node the history knows, by node id (sorted), each with
its entry per role name: ``live`` instances running there, ``requested`` pending asks headed
there, ``failed`` instances that ended in failure (``failedRecently``: since the role's failure
window last reset), ``preempted``, and ``lastUsed`` (Unix ns; 0: never stopped there).
``offline``: the node left the partition or is unschedulable. ``recent``: per role, the nodes a new instance would be
sent to, in order (newest ``lastUsed`` first). ``targets``: the pending asks placed on a history
node. There is no ``releasing`` count: the core releases an allocation when the RM reports it
gone, so no instance is ever between the two.

Locks: the partition's lock is held while the values are copied; the JSON is built after.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyscheduler.dao._common import find_partition
from pyscheduler.dao.errors import ROLE_HISTORY_NOT_FOUND, NotFound
from pyscheduler.scheduler.context import external_name

if TYPE_CHECKING:
    from pyscheduler.scheduler.context import ClusterContext

__all__ = ["role_history", "role_history_keys"]


def role_history_keys(ctx: ClusterContext, partition_name: str) -> list[str]:
    """The partition's role history keys, sorted (the web console's list; not a REST route)."""
    partition = find_partition(ctx, partition_name)
    with partition.lock:
        keys = [history.key for history in partition.role_histories]
    return sorted(keys)


def role_history(ctx: ClusterContext, partition_name: str, history_key: str) -> dict[str, Any]:
    partition = find_partition(ctx, partition_name)
    with partition.lock:
        history = partition.role_histories.get(history_key)
        if history is None:
            raise NotFound(ROLE_HISTORY_NOT_FOUND)
        nodes = {
            node_id: (node_id in history.offline, [
                (role, e.live, e.requested, e.failed, e.failed_recently, e.preempted, e.last_used_ns)
                for role, e in entries.items()
            ])
            for node_id, entries in history.nodes.items()
        }
        recent = {role: history.recent(role) for role in history.roles()}
        targets = history.targets()
    return {
        "partition": external_name(partition.name),
        "clusterId": partition.rm_id,
        "historyKey": history_key,
        "nodes": {
            node_id: {
                "offline": offline,
                "roles": {
                    role: {"live": live, "requested": requested, "failed": failed, "failedRecently": recently,
                           "preempted": preempted, "lastUsed": last_used}
                    for role, live, requested, failed, recently, preempted, last_used in sorted(entries)
                },
            }
            for node_id, (offline, entries) in sorted(nodes.items())
        },
        "recent": recent,
        "targets": [{"allocationKey": key, "role": role, "nodeID": node_id} for key, role, node_id in targets],
    }
