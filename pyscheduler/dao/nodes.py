"""Nodes (YuniKorn's NodeDAOInfo): ``/partition/{p}/nodes`` and ``/partition/{p}/node/{n}``.

Locks: the partition's lock is held (it orders node, allocation and foreign changes); each node
is read under its own lock, one at a time, and its allocations' fields under it (partition ->
node; allocations on a node only change with the partition's lock held). Nothing is changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyscheduler.dao._common import abs_used_capacity, find_partition, put, res_map, sorted_map
from pyscheduler.dao.applications import allocation_dao
from pyscheduler.dao.errors import NODE_NOT_FOUND, NotFound

if TYPE_CHECKING:
    from pyscheduler.objects.node import Node
    from pyscheduler.objects.partition import Partition
    from pyscheduler.scheduler.context import ClusterContext

__all__ = ["node", "node_dao", "nodes", "partition_node_daos"]


def utilized(capacity: dict[str, int], allocated: dict[str, int]) -> dict[str, int]:
    """YuniKorn's node utilisation: per allocated type with a positive capacity, the percentage
    of the capacity in use."""
    percent = abs_used_capacity(capacity, allocated)
    return {name: percent[name] for name in sorted(allocated) if capacity.get(name, 0) > 0 and name in percent}


def _foreign_dao(key: str, node_id: str, resource: dict[str, int]) -> dict[str, Any]:
    out: dict[str, Any] = {"allocationKey": key}
    put(out, "resource", res_map(resource))
    put(out, "nodeId", node_id)
    return out


def node_dao(partition: Partition, node: Node) -> dict[str, Any]:
    """NodeDAOInfo; the caller holds the partition's lock."""
    foreign = sorted((key, res) for key, (node_id, res) in partition.foreign.items() if node_id == node.node_id)
    with node.lock:
        capacity = res_map(node.total)
        allocated = res_map(node.allocated, prune=True)
        occupied = res_map(node.occupied, prune=True)
        available = res_map(node.available)
        attributes = sorted_map(node.attributes)
        allocations = [allocation_dao(a) for a in sorted(node.allocations.values(), key=lambda a: a.allocation_key)]
        reservations = sorted(node.reservations)
        schedulable = node.schedulable
        hostname, rackname = node.hostname, node.rackname
    out: dict[str, Any] = {"nodeID": node.node_id}
    put(out, "hostName", hostname)
    put(out, "rackName", rackname)
    put(out, "attributes", attributes)
    put(out, "capacity", capacity)
    put(out, "allocated", allocated)
    put(out, "occupied", occupied)
    put(out, "available", available)
    put(out, "utilized", utilized(capacity, allocated))
    put(out, "allocations", allocations)
    put(out, "foreignAllocations", [_foreign_dao(key, node.node_id, res) for key, res in foreign])
    out["schedulable"] = schedulable
    out["isReserved"] = bool(reservations)
    put(out, "reservations", reservations)
    return out


def partition_node_daos(partition: Partition) -> list[dict[str, Any]]:
    with partition.lock:
        return [node_dao(partition, partition.nodes[node_id]) for node_id in sorted(partition.nodes)]


def nodes(ctx: ClusterContext, partition: str) -> list[dict[str, Any]]:
    """``/partition/{p}/nodes``: every node of the partition, by node id (``[]`` when none)."""
    return partition_node_daos(find_partition(ctx, partition))


def node(ctx: ClusterContext, partition: str, node_id: str) -> dict[str, Any]:
    """``/partition/{p}/node/{n}``."""
    part = find_partition(ctx, partition)
    with part.lock:
        found = part.nodes.get(node_id)
        if found is None:
            raise NotFound(NODE_NOT_FOUND)
        return node_dao(part, found)
