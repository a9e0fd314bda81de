"""The reporter manager's sink for the core: merged facts become node UPDATEs through the RM
interface, as any resource manager sends them.

**Which nodes**: those the RMs registered, read with the public query functions of
:mod:`pyscheduler.dao.node_snapshots` (plain values; no lock of the core is held after they
return): every round which nodes exist (:func:`~pyscheduler.dao.node_snapshots.node_owners`),
and, when sending, the capacity of the few nodes whose reported capacity comes or goes. **What is sent**: per changed node one ``si.NodeInfo`` UPDATE with the SI
extensions ``reported_attributes`` and ``reported_occupied`` and, when a plugin reports one, the
capacity; one request per RM.

**A reported capacity leaves** (no plugin reports one any more, or the last plugin's grace
period ended): the node's capacity goes back to the RM's. The core keeps one capacity per node
(no reported layer under the RM's, as attributes have), so the sink remembers, when a report's
capacity first replaces the node's, the capacity the RM had given, and sends it back when the
report's leaves. When the RM sent a capacity of its own while a reported one was in force (the
node's capacity is not the one last sent), the RM's newer one is the one remembered, and the
one that stays when the report's leaves. What the sink remembers changes only once the core took
the update, so a failed send is made again the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pyscheduler.common.resources import Resource
from pyscheduler.dao.node_snapshots import node_owners, node_snapshots
from pyscheduler.reporter.sink import NodeUpdate
from pyscheduler.si import messages as si

if TYPE_CHECKING:  # the proxy is handed in; the reporter depends on its interface only
    from pyscheduler.rmproxy.proxy import RMProxy

__all__ = ["CoreSink"]


class CoreSink:
    """The core behind ``proxy``. ``rm_id``: the RM whose nodes are reported on (None: every
    registered RM's, each node's update under the RM that owns it). Called by one manager, one
    apply at a time (:class:`~pyscheduler.reporter.sink.NodeSink`)."""

    def __init__(self, proxy: RMProxy, rm_id: str | None = None) -> None:
        self.proxy = proxy
        self.rm_id = rm_id
        #: Node -> the capacity its RM gave it, while a reported capacity is in force.
        self._rm_capacity: dict[str, Resource] = {}

    def known_nodes(self) -> dict[str, str]:
        owners = node_owners(self.proxy.context, rm_id=self.rm_id)
        for gone in [node_id for node_id in self._rm_capacity if node_id not in owners]:
            del self._rm_capacity[gone]  # a node removed (and maybe added again) starts afresh
        return owners

    def send(self, updates: Sequence[NodeUpdate]) -> None:
        by_rm: dict[str, list[si.NodeInfo]] = {}
        rm_capacity = dict(self._rm_capacity)
        # The capacity now of the nodes whose reported capacity comes, changes or goes.
        involved = [update.node_id for update in updates if update.facts.capacity is not None
                    or (update.previous is not None and update.previous.capacity is not None)]
        capacity_now = {node.node_id: node.capacity for node in node_snapshots(
            self.proxy.context, rm_id=self.rm_id, node_ids=involved)} if involved else {}
        for update in updates:
            facts, previous = update.facts, update.previous
            occupied = facts.occupied
            if occupied is None and previous is not None and previous.occupied is not None:
                occupied = Resource()  # no longer reported: nothing occupied by it
            by_rm.setdefault(update.owner, []).append(si.NodeInfo(
                node_id=update.node_id, action=si.NodeAction.UPDATE,
                schedulable_resource=_capacity(update, capacity_now.get(update.node_id), rm_capacity),
                reported_attributes=dict(facts.attributes), reported_occupied=occupied))
        for rm_id, infos in sorted(by_rm.items()):
            self.proxy.update_node(si.NodeRequest(nodes=tuple(infos), rm_id=rm_id))
        self._rm_capacity = rm_capacity  # taken by the core: remembered


def _capacity(update: NodeUpdate, now: Resource | None, rm_capacity: dict[str, Resource]) -> Resource | None:
    """The capacity to send for ``update`` (None: unchanged), given the node's capacity ``now``,
    keeping ``rm_capacity`` (see the module doc)."""
    node_id, reported = update.node_id, update.facts.capacity
    sent_before = update.previous.capacity if update.previous is not None else None
    rm_set_it = now is not None and now != sent_before  # no report in force, or the RM sent one since
    if reported is not None:
        if rm_set_it and now is not None:
            rm_capacity[node_id] = now
        return reported
    if sent_before is None:
        return None  # no reported capacity before either
    remembered = rm_capacity.pop(node_id, None)
    return None if rm_set_it else remembered
