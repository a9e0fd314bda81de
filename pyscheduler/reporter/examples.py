"""Two in-process reporter plugins, the demo cluster's (``pyscheduler serve --demo``), and
examples of the plugin protocol (:mod:`.plugin`).

- :class:`TopologyLabeller` ("topology"): each node's rack and zone labels and its socket and
  NUMA topology zones, as an inventory system or a device plugin would report them. Stable:
  drawn from the node id, so the same node always gets the same place.
- :class:`ReclaimAdvisor` ("reclaim-advisor"): how much of each node could be lent to
  best-effort work: half of what is not allocated, as Katalyst's SysAdvisor reports
  reclaimed capacity (``ReclaimedResourceCapacity``). It changes as the cluster does, so
  updates flow every round for the nodes whose usage moved.

Both read the nodes with the public query function
:func:`pyscheduler.dao.node_snapshots.node_snapshots` (plain values), as any code beside the core
does.
"""

from __future__ import annotations

import json
import zlib
from typing import TYPE_CHECKING, Final

from pyscheduler.common.resources import MEMORY, VCORE
from pyscheduler.dao.node_snapshots import node_snapshots
from pyscheduler.reporter.content import FieldType, ReportContent, ReportField
from pyscheduler.reporter.node_fields import CNR, NODE
from pyscheduler.reporter.plugin import NodeReport

if TYPE_CHECKING:
    from pyscheduler.scheduler.context import ClusterContext

__all__ = ["ReclaimAdvisor", "TopologyLabeller"]

ZONE_LABEL: Final = "topology.kubernetes.io/zone"
RACK_LABEL: Final = "topology.pyscheduler.io/rack"


def _field(field_type: FieldType, name: str, value: object) -> ReportField:
    return ReportField(field_type, name, json.dumps(value, separators=(",", ":")).encode())


class TopologyLabeller:
    name = "topology"

    def __init__(self, context: ClusterContext, zones: int = 2, racks: int = 4) -> None:
        self.context = context
        self.zones = zones
        self.racks = racks

    def report(self) -> NodeReport:
        report: dict[str, list[ReportContent]] = {}
        for node_id in sorted(node.node_id for node in node_snapshots(self.context)):
            place = zlib.crc32(node_id.encode())
            labels = {ZONE_LABEL: f"zone-{place % self.zones}", RACK_LABEL: f"rack-{place % self.racks}"}
            sockets = [{"type": "Socket", "name": str(s), "children": [{"type": "Numa", "name": str(2 * s + n)}
                                                                        for n in range(2)]} for s in range(2)]
            report[node_id] = [
                ReportContent(NODE, (_field(FieldType.METADATA, "Labels", labels),)),
                ReportContent(CNR, (_field(FieldType.STATUS, "TopologyZone", sockets),
                                    _field(FieldType.STATUS, "TopologyPolicy", "None"))),
            ]
        return report


class ReclaimAdvisor:
    name = "reclaim-advisor"

    def __init__(self, context: ClusterContext, share: float = 0.5) -> None:
        self.context = context
        self.share = share

    def report(self) -> NodeReport:
        report: dict[str, list[ReportContent]] = {}
        for node in node_snapshots(self.context):
            free = node.capacity - node.allocated
            cpu = max(0, int(free.get(VCORE) * self.share))
            memory = max(0, int(free.get(MEMORY) * self.share))
            reclaimed = {"cpu": f"{cpu}m", "memory": str(memory)}
            report[node.node_id] = [ReportContent(CNR, (_field(FieldType.STATUS, "ReclaimedResourceCapacity", reclaimed),))]
        return report
