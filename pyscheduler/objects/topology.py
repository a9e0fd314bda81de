"""A partition's topology (issue 34): its levels, named by node label, outermost first (the
configuration's ``topology.levels``, e.g. ``topology.kubernetes.io/zone``, a block label, a rack
label), and at each level its *domains*: the nodes sharing that label's value. A node without a
level's label is in no domain of that level.

Each domain is a :class:`~pyscheduler.objects.node_groups.NodeGroup`: its sums follow its nodes
incrementally (a listener on each node in a domain), never a scan per decision; its node order
is made the first time an application searches it, and kept up to date from then on (a level
nobody asks for costs only its sums).

An application asking for a level (:mod:`pyscheduler.policies.topology_tags`) is placed in one
domain of it: ``Application.topology_domain`` is the domain's value, set by :meth:`pin`
(its first allocation or placeholder, or a preemption made for it) and cleared when the domain
loses its last node. Callers hold the partition's lock.

**Member clusters** (a hub partition, :mod:`pyscheduler.objects.member_clusters`): a domain never
spans two clusters. A node of member ``east`` (attribute ``pyscheduler.io/cluster``) is in
domain ``[east]r1`` of a level whose label it gives as ``r1``, so racks named alike in two
clusters stay two domains, and a domain names its cluster (:attr:`Domain.cluster`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from pyscheduler.common.resources import Resource
from pyscheduler.objects.application import Application
from pyscheduler.objects.node import Node
from pyscheduler.objects.node_groups import NodeGroup
from pyscheduler.objects.object_events import AppEvents
from pyscheduler.policies.node_ordering import NodeOrdering, make_node_ordering
from pyscheduler.si.events import EventChangeDetail
from pyscheduler.si.vocabulary import CLUSTER_ATTRIBUTE

__all__ = ["Domain", "TopologyIndex"]

_log = logging.getLogger(__name__)


class Domain(NodeGroup):
    """The nodes of one value of one level's label."""

    __slots__ = ("level", "cluster")

    def __init__(self, level: str, value: str, make_ordering: "_OrderingMaker", cluster: str = "") -> None:
        super().__init__(value, make_ordering=make_ordering)
        self.level = level
        #: The member cluster its nodes are in ("": a partition without member clusters).
        self.cluster = cluster

    def __repr__(self) -> str:
        return f"{self.level}={self.name}"


class _OrderingMaker:
    """Makes a domain's order with the index's policy at the time it is first needed."""

    __slots__ = ("_index",)

    def __init__(self, index: TopologyIndex) -> None:
        self._index = index

    def __call__(self) -> NodeOrdering:
        return make_node_ordering(self._index.policy, self._index.weights, native=self._index.native)


class TopologyIndex:
    """A partition's topology levels and their domains (see the module doc)."""

    def __init__(self, app_events: AppEvents, *, native: bool | None = None) -> None:
        self._app_events = app_events
        self.native = native
        self.policy = "fair"
        self.weights: dict[str, float] = {"vcore": 1.0, "memory": 1.0}
        self.levels: tuple[str, ...] = ()
        #: Level label -> value -> domain (domains with at least one node).
        self.domains: dict[str, dict[str, Domain]] = {}
        #: Node id -> its value at each level (None: not in that level).
        self._values: dict[str, tuple[str | None, ...]] = {}
        self._listening: set[str] = set()
        self._maker = _OrderingMaker(self)

    # -- configuration -------------------------------------------------------------------------

    def set_levels(self, levels: Sequence[str], nodes: Mapping[str, Node],
                   applications: Mapping[str, Application]) -> None:
        """The partition's levels changed: the domains are made again from its nodes, and
        applications placed in a level that is gone are unpinned."""
        levels = tuple(levels)
        if levels == self.levels:
            return
        self.levels = levels
        self.domains = {level: {} for level in levels}
        self._values.clear()
        for node in nodes.values():
            self.node_added(node, applications)
        for app in applications.values():  # still placed where its level and domain remain
            if app.topology_domain:
                domain = self.domains.get(app.topology_request.level, {}).get(app.topology_domain)
                if domain is None:
                    app.topology_domain = ""
                else:
                    domain.pinned.add(app.app_id)

    def set_policy(self, policy: str, weights: Mapping[str, float]) -> None:
        self.policy = policy or "fair"
        self.weights = dict(weights)
        for level in self.domains.values():
            for domain in level.values():
                domain.set_policy(self.policy, self.weights)

    # -- nodes ---------------------------------------------------------------------------------

    def node_added(self, node: Node, applications: Mapping[str, Application]) -> None:
        """A node joined (or its attributes changed): it joins the domain of each level its
        labels name, leaving those it was in."""
        if not self.levels:
            return
        values = self.values_of(node)
        before = self._values.get(node.node_id)
        if before == values:
            return
        if before is not None:
            self._leave(node.node_id, before, applications)
        if any(value is not None for value in values):
            self._values[node.node_id] = values
            for level, value in zip(self.levels, values):
                if value is None:
                    continue
                domain = self.domains[level].get(value)
                if domain is None:
                    domain = self.domains[level][value] = Domain(level, value, self._maker,
                                                                 node.attributes.get(CLUSTER_ATTRIBUTE) or "")
                domain.join(node)
            if node.node_id not in self._listening:
                self._listening.add(node.node_id)
                node.add_listener(self._node_changed)

    def values_of(self, node: Node) -> tuple[str | None, ...]:
        """The node's domain name at each level (None: no label), qualified by its member
        cluster when it has one (see the module doc)."""
        attributes = node.attributes
        member = attributes.get(CLUSTER_ATTRIBUTE)
        if member:
            return tuple(f"[{member}]{value}" if (value := attributes.get(level)) else None for level in self.levels)
        return tuple(attributes.get(level) or None for level in self.levels)

    def node_removed(self, node_id: str, applications: Mapping[str, Application]) -> None:
        self._listening.discard(node_id)
        values = self._values.get(node_id)
        if values is not None:
            self._leave(node_id, values, applications)

    def set_reserved(self, node_id: str, reserved: bool) -> None:
        for domain in self._domains_of(node_id):
            domain.set_reserved(node_id, reserved)

    def domain_of(self, node_id: str, level: str) -> Domain | None:
        values = self._values.get(node_id)
        if values is None or level not in self.domains:
            return None
        value = values[self.levels.index(level)]
        return self.domains[level].get(value) if value is not None else None

    def _domains_of(self, node_id: str) -> list[Domain]:
        values = self._values.get(node_id)
        if values is None:
            return []
        return [self.domains[level][value] for level, value in zip(self.levels, values)
                if value is not None and value in self.domains[level]]

    def _leave(self, node_id: str, values: tuple[str | None, ...], applications: Mapping[str, Application]) -> None:
        self._values.pop(node_id, None)
        for level, value in zip(self.levels, values):
            domain = self.domains[level].get(value) if value is not None else None
            if domain is None:
                continue
            domain.leave(node_id)
            if not domain.nodes:
                del self.domains[level][domain.name]
                for app_id in sorted(domain.pinned):
                    app = applications.get(app_id)
                    if app is not None and app.topology_domain == domain.name:
                        app.topology_domain = ""
                        self._say(app, f"Application no longer placed in topology domain {domain!r}: "
                                       "its last node left")

    def _node_changed(self, node: Node) -> None:
        for domain in self._domains_of(node.node_id):
            domain.node_changed(node)

    def problems(self, nodes: Mapping[str, Node]) -> list[str]:
        """Everything the index gets wrong against the partition's ``nodes`` (a test's check)."""
        found: list[str] = []
        for level, domains in self.domains.items():
            for value, domain in domains.items():
                at = self.levels.index(level)
                members = [n for n in nodes.values() if self.values_of(n)[at] == value]
                if sorted(n.node_id for n in members) != sorted(domain.nodes):
                    found.append(f"domain {level}={value} holds {sorted(domain.nodes)}")
                sums = (sum((n.total for n in members), Resource()), sum((n.allocated for n in members), Resource()),
                        sum((n.available for n in members if n.schedulable), Resource()))
                if sums != (domain.total, domain.allocated, domain.available):
                    found.append(f"domain {level}={value} sums {(domain.total, domain.allocated, domain.available)}"
                                 f" != {sums}")
        return found

    # -- applications --------------------------------------------------------------------------

    def pin(self, app: Application, domain: Domain, why: str) -> None:
        app.topology_domain = domain.name
        domain.pinned.add(app.app_id)
        self._say(app, f"Application placed in topology domain {domain!r} ({why})")

    def pin_to_node(self, app: Application, node: Node, why: str) -> None:
        """``app`` (asking for a level, placed in none of its domains yet) got an allocation on
        ``node``: it is placed in the node's domain of that level."""
        level = app.topology_request.level
        if not level or app.topology_domain:
            return
        domain = self.domain_of(node.node_id, level)
        if domain is not None:
            self.pin(app, domain, why)

    def placed_domain(self, app: Application) -> Domain | None:
        if not app.topology_domain:
            return None
        return self.domains.get(app.topology_request.level, {}).get(app.topology_domain)

    def forget(self, app: Application) -> None:
        domain = self.placed_domain(app)
        if domain is not None:
            domain.pinned.discard(app.app_id)

    def _say(self, app: Application, message: str) -> None:
        self._app_events.state_change(app.app_id, EventChangeDetail.DETAILS_NONE, message)
        _log.info("application %s: %s", app.app_id, message)
