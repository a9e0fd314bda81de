"""Plain snapshots of the cluster's nodes, for the code beside the core that works on nodes
without being part of it: the node reporter manager (``pyscheduler.reporter``) and its example
plugins. Not a REST answer: the REST API's nodes are :mod:`.nodes`.

A :class:`NodeSnapshot` holds values only (the node's id, its partition and RM, its capacity and
what is allocated on it; resources are immutable); :func:`node_owners` only which RM owns each
node, the cheap question asked every reporter round. Values are copied under each partition's
lock, held one partition at a time and only while copying; nothing is changed. A snapshot is of
one moment: a node may be gone, or its values changed, by the time the caller reads it.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, NamedTuple

from pyscheduler.dao._common import find_partition, sorted_partitions
from pyscheduler.dao.errors import NODE_NOT_FOUND, NotFound
from pyscheduler.scheduler.context import external_name

if TYPE_CHECKING:
    from pyscheduler.common.resources import Resource
    from pyscheduler.scheduler.context import ClusterContext

__all__ = ["NodeSnapshot", "node_owners", "node_snapshot", "node_snapshots"]


class NodeSnapshot(NamedTuple):
    node_id: str
    #: The partition's name as its RM knows it (``default``, without the ``[rmID]`` prefix).
    partition: str
    #: The RM that registered the node.
    rm_id: str
    #: The node's schedulable capacity now (the RM's, or the one a node report gave).
    capacity: Resource
    allocated: Resource


def node_owners(context: ClusterContext, *, rm_id: str | None = None) -> dict[str, str]:
    """Node id -> the RM that registered it, for every node (of ``rm_id``'s partitions only,
    when given)."""
    owners: dict[str, str] = {}
    for partition in sorted_partitions(context):
        if rm_id is None or partition.rm_id == rm_id:
            with partition.lock:
                owners.update(dict.fromkeys(partition.nodes, partition.rm_id))
    return owners


def node_snapshots(context: ClusterContext, *, rm_id: str | None = None,
                   node_ids: Collection[str] | None = None) -> list[NodeSnapshot]:
    """Every node of every partition (of ``rm_id``'s partitions only, when given), or only those
    of ``node_ids`` that exist (looked up, not searched for), sorted by partition and node id."""
    found: list[NodeSnapshot] = []
    for partition in sorted_partitions(context):
        if rm_id is not None and partition.rm_id != rm_id:
            continue
        name, owner = external_name(partition.name), partition.rm_id
        with partition.lock:
            nodes = partition.nodes
            chosen = nodes.items() if node_ids is None else (
                (node_id, nodes[node_id]) for node_id in node_ids if node_id in nodes)
            copied = [NodeSnapshot(node_id, name, owner, node.total, node.allocated) for node_id, node in chosen]
        found.extend(sorted(copied))
    return found


def node_snapshot(context: ClusterContext, partition_name: str, node_id: str) -> NodeSnapshot:
    """One node of the partition ``partition_name`` names (plain or ``[rmID]name``, see
    :func:`~pyscheduler.dao._common.find_partition`); raises :class:`NotFound` with
    YuniKorn's message when the partition or the node does not exist."""
    partition = find_partition(context, partition_name)
    with partition.lock:
        node = partition.nodes.get(node_id)
        if node is None:
            raise NotFound(NODE_NOT_FOUND)
        return NodeSnapshot(node_id, external_name(partition.name), partition.rm_id, node.total, node.allocated)
