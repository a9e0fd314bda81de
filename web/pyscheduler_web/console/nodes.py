"""``GET /ui/nodes``: the partition's nodes as a heat map, coloured by the use of each node's
dominant resource (the resource it has the largest share of allocated), then the busiest nodes
in a table.

One element per node (an ``<i>`` with a bucket class: ``h0`` for under 10 % up to ``h10`` for
full, ``off`` for an unschedulable node, and a ``title`` naming the node and its dominant
share), so that 5,000 nodes stay a page of a few hundred kilobytes (gzipped far less). The
shares are the API's ``utilized`` percentages (``/ws/v1/partition/{p}/nodes``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from flask import Response

from pyscheduler_web.console.common import bp, ctx, dao, partition_choices, render_page, selected_partition

__all__ = ["NodeCell", "node_cells"]

#: How many of the busiest nodes the table below the map lists.
BUSIEST: Final = 20
BUCKETS: Final = 11


@dataclass(frozen=True)
class NodeCell:
    node_id: str
    #: The dominant resource and its allocated share in percent ("" / 0 for an empty node).
    resource: str
    share: int
    bucket: str
    schedulable: bool
    allocations: int


def dominant_share(utilized: dict[str, int]) -> tuple[str, int]:
    """The resource with the largest share (ties: the first by name) and that share."""
    best, share = "", 0
    for name in sorted(utilized):
        if utilized[name] > share:
            best, share = name, utilized[name]
    return best, share


def node_cells(nodes: list[dict[str, Any]]) -> list[NodeCell]:
    cells = []
    for node in nodes:
        resource, share = dominant_share(node.get("utilized", {}))
        schedulable = bool(node.get("schedulable", True))
        bucket = f"h{min(share, 100) // 10}" if schedulable else "off"
        cells.append(NodeCell(node["nodeID"], resource, share, bucket, schedulable, len(node.get("allocations", []))))
    return cells


@bp.get("/ui/nodes")
def nodes_page() -> Response:
    choices = partition_choices()
    partition = selected_partition(choices)
    cells = node_cells(dao.nodes(ctx(), partition)) if partition else []
    counts = {f"h{i}": 0 for i in range(BUCKETS)} | {"off": 0}
    for cell in cells:
        counts[cell.bucket] += 1
    busiest = sorted(cells, key=lambda c: (-c.share, c.node_id))[:BUSIEST]
    return render_page("console/nodes.html", choices=choices, partition=partition, cells=cells,
                       counts=counts, busiest=busiest)
