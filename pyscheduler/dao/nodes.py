"""Nodes (YuniKorn's NodeDAOInfo): ``/partition/{p}/nodes`` and ``/partition/{p}/node/{n}``.

Locks: the partition's lock is held only while the nodes' values are copied
(:mod:`pyscheduler.dao.views`), a chunk of nodes at a time; the JSON is built after it is
released. Nothing is changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyscheduler.dao._common import abs_used_capacity, build_chunked, find_partition, put, res_map, sorted_map
from pyscheduler.dao.applications import allocation_dao
from pyscheduler.dao.errors import NODE_NOT_FOUND, NotFound
from pyscheduler.dao.views import NodeView, node_view

if TYPE_CHECKING:
    from pyscheduler.common.resources import Resource
    from pyscheduler.scheduler.read_pacing import ReadPacer
    from pyscheduler.objects.partition import Partition
    from pyscheduler.scheduler.context import ClusterContext

__all__ = ["node", "node_dao", "nodes", "partition_node_daos"]


def utilized(capacity: dict[str, int], allocated: dict[str, int]) -> dict[str, int]:
    """YuniKorn's node utilisation: per allocated type with a positive capacity, the percentage
    of the capacity in use."""
    percent = abs_used_capacity(capacity, allocated)
    return {name: percent[name] for name in sorted(allocated) if capacity.get(name, 0) > 0 and name in percent}


def _foreign_dao(key: str, node_id: str, resource: Resource) -> dict[str, Any]:
    out: dict[str, Any] = {"allocationKey": key}
    put(out, "resource", res_map(resource))
    put(out, "nodeId", node_id)
    return out


def node_dao(node: NodeView) -> dict[str, Any]:
    """NodeDAOInfo, from a view copied under the partition's lock."""
    capacity = res_map(node.total)
    allocated = res_map(node.allocated, prune=True)
    out: dict[str, Any] = {"nodeID": node.node_id}
    put(out, "hostName", node.hostname)
    put(out, "rackName", node.rackname)
    put(out, "attributes", sorted_map(node.attributes))
    put(out, "capacity", capacity)
    put(out, "allocated", allocated)
    put(out, "occupied", res_map(node.occupied, prune=True))
    put(out, "available", res_map(node.available))
    put(out, "utilized", utilized(capacity, allocated))
    put(out, "allocations", [allocation_dao(a) for a in node.allocations])
    put(out, "foreignAllocations", [_foreign_dao(key, node.node_id, res) for key, res in node.foreign])
    out["schedulable"] = node.schedulable
    out["isReserved"] = bool(node.reservations)
    put(out, "reservations", list(node.reservations))
    return out


def partition_node_daos(partition: Partition, pacer: ReadPacer | None = None) -> list[dict[str, Any]]:
    """Every node's NodeDAOInfo; built through ``pacer`` when given (see read_pacing)."""
    with partition.lock:
        listed = [partition.nodes[node_id] for node_id in sorted(partition.nodes)]
    return build_chunked(partition.lock, listed, lambda node: node_view(partition, node), node_dao, pacer)


def nodes(ctx: ClusterContext, partition: str) -> list[dict[str, Any]]:
    """``/partition/{p}/nodes``: every node of the partition, by node id (``[]`` when none)."""
    return partition_node_daos(find_partition(ctx, partition), ctx.read_pacer)


def node(ctx: ClusterContext, partition: str, node_id: str) -> dict[str, Any]:
    """``/partition/{p}/node/{n}``."""
    part = find_partition(ctx, partition)
    with part.lock:
        found = part.nodes.get(node_id)
        if found is None:
            raise NotFound(NODE_NOT_FOUND)
        view = node_view(part, found)
    return node_dao(view)
