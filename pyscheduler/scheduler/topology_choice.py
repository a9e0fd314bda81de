"""Which topology domain an application goes to (issue 34): the cycle's view of
:mod:`pyscheduler.objects.topology` for one application asking for a level
(:mod:`pyscheduler.policies.topology_tags`).

An application placed in a domain already gets that domain alone. Otherwise its *members* are
its pending asks (a gang's placeholders while it reserves, once they add up to its placeholder
ask: an RM sends them one by one, and a domain chosen for the first few could not hold the
rest; every pending ask of another application), and a domain of the level is a candidate when they all fit in it: first the sum
against the domain's available resources, then each member on a node of the domain (first fit,
largest member first, over the schedulable nodes' free room) that the RM accepts for it (its
predicates, :class:`Acceptance`: on Kubernetes the members' node selector, affinity and taints):
a rack with 3 free nodes never takes a gang of 4 one-node members, whatever its sums, nor a rack
whose nodes the members' selector refuses. Among the candidates the one holding
the most of the nodes its roles last ran on wins (role history: a job started again goes back to
its rack, and each rank to its node, :mod:`pyscheduler.policies.role_history`), then the
**tightest** (the most used once the members are placed, then the name): best fit keeps the
large domains free for the large gangs.

No candidate: a *required* request waits (its asks try no node; the cycle reports why, naming
the level and the domain with the most room; preemption may free room for it in one domain: of
the domains whose capacity could hold it, the one where the lowest-priority and fewest victims
free enough, :mod:`pyscheduler.scheduler.preemption.domains`), a *preferred* one is placed
anywhere (no scope);
a preferred application placed in a domain stays there while its remaining members fit in it.
**Slices** (``topology-slice-required`` and ``-slice-size``): a domain of the application's level
is a candidate only when its members also fit slice by slice, each slice in one domain of the
slice level inside it (:func:`slices_pack`); each member then goes to its slice's domain
(:func:`choose_slice_scope`: the slice's first member chooses the tightest with room for the
slice's members still to place, and places the slice there).

The scope is a :class:`~pyscheduler.scheduler.cluster_choice.ClusterScope` of one domain, so the
cycle's steps (node search, reservations, preemption, replacement) keep to its nodes as they do
to a member cluster's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from pyscheduler.common.resources import Resource, go_string
from pyscheduler.objects.allocation import Allocation
from pyscheduler.objects.application import Application
from pyscheduler.objects.node import Node
from pyscheduler.objects.topology import Domain, TopologyIndex
from pyscheduler.scheduler.cluster_choice import ClusterScope
from pyscheduler.si.callback import PredicatesFunc, check_predicates
from pyscheduler.si.messages import PredicatesArgs

__all__ = ["Acceptance", "acceptance", "choose_domain_scope", "choose_slice_scope", "members_pack", "slices_pack"]


class Acceptance:
    """Whether the RM accepts a member on a node (its predicates: node selector, affinity,
    taints...), asked at most once per node and kind of member in one choice: a gang's
    placeholders of one task group carry the same constraints, so they share the answers.
    ``check`` None: every node is accepted (an RM without predicates)."""

    __slots__ = ("_check", "_seen", "refused")

    def __init__(self, check: Callable[[Allocation, Node], bool]) -> None:
        self._check = check
        self._seen: dict[tuple[str, str], bool] = {}
        #: Domains whose free room would hold the members but whose nodes the RM refused.
        self.refused = 0

    def __call__(self, member: Allocation, node: Node) -> bool:
        kind = member.task_group_name if member.placeholder and member.task_group_name else member.allocation_key
        key = (kind, node.node_id)
        found = self._seen.get(key)
        if found is None:
            found = self._seen[key] = self._check(member, node)
        return found


def acceptance(predicates: PredicatesFunc | None) -> Acceptance | None:
    """The RM's predicates as a topology choice asks them (None: the RM has none): whether a
    member may go to a node, nothing logged on the member (a choice asks many nodes)."""
    if predicates is None:
        return None
    return Acceptance(lambda member, node: not check_predicates(
        predicates, PredicatesArgs(member.allocation_key, node.node_id, False)))


def members_pack(domain: Domain, members: list[Allocation], accepts: Acceptance | None = None) -> bool:
    """Whether every member fits on a schedulable node of ``domain`` at once (first fit, largest
    member first, each node's free room reduced as members land), on a node ``accepts``."""
    nodes = [node for node in domain.nodes.values() if node.schedulable]
    free = [node.available for node in nodes]
    for member in sorted(members, key=_member_size, reverse=True):
        resource = member.resource
        for index, room in enumerate(free):
            if resource.fits_in(room) and (accepts is None or accepts(member, nodes[index])):
                free[index] = room - resource
                break
        else:
            return False
    return True


def slices_pack(topology: TopologyIndex, domain: Domain, members: list[Allocation], level: str, size: int,
                accepts: Acceptance | None = None) -> bool:
    """Whether ``members`` fit in ``domain`` in slices of ``size``, each slice on the nodes of one
    domain of ``level`` inside it (largest members first, each slice where it first fits, the
    room it takes gone for the next), on nodes ``accepts``."""
    free = {node_id: node.available for node_id, node in domain.nodes.items() if node.schedulable}
    inner: dict[str, list[str]] = {}
    for node_id in free:
        value = topology.domain_of(node_id, level)
        if value is not None:
            inner.setdefault(value.name, []).append(node_id)
    ordered = sorted(members, key=_member_size, reverse=True)
    for start in range(0, len(ordered), size):
        group = ordered[start:start + size]
        for node_ids in inner.values():
            trial = {node_id: free[node_id] for node_id in node_ids}
            if _first_fit(group, trial, domain, accepts):
                free.update(trial)
                break
        else:
            return False
    return True


def _first_fit(members: list[Allocation], free: dict[str, Resource], domain: Domain,
               accepts: Acceptance | None) -> bool:
    """Places ``members`` on ``free`` (node id -> room; reduced in place); whether all fit."""
    for member in members:
        resource = member.resource
        for node_id, room in free.items():
            if resource.fits_in(room) and (accepts is None or accepts(member, domain.nodes[node_id])):
                free[node_id] = room - resource
                break
        else:
            return False
    return True


def choose_slice_scope(topology: TopologyIndex, app: Application, ask: Allocation,
                       outer: ClusterScope | None, accepts: Acceptance | None = None) -> ClusterScope:
    """Where ``ask``, a member of one of ``app``'s slices, may go: its slice's domain once the
    slice has one, else the tightest domain of the slice level (inside ``outer``'s domain when
    there is one) where the slice's members still to place fit; none: it waits, the slice
    level and size named."""
    request, slices = app.topology_request, app.topology_slices
    assert slices is not None
    level = request.slice_level
    group_of = functools.partial(_domain_of, topology, level)
    gang = not app.placeholder_ask.is_zero()
    pending = [member for member in app.iter_asks() if member.placeholder or not gang]
    for member in pending:  # every member known now has its slice, in the order they are tried
        slices.slice_of(member.allocation_key)
    index = slices.slice_of(ask.allocation_key)
    domains = topology.domains.get(level, {})
    placed = domains.get(slices.domains.get(index, ""))
    if placed is not None:
        return ClusterScope((placed,), group_of=group_of)
    if gang and not slices.placed and not app.placeholder_ask.fits_in(sum((m.resource for m in pending), Resource())):
        return ClusterScope((), False, f"the placeholders of gang '{app.app_id}' are still arriving", group_of=group_of)
    within = outer.clusters if outer is not None else ()
    inside = [d for d in domains.values()
              if not within or any(next(iter(d.nodes)) in group.nodes for group in within)]
    members = [ask] * max(1, slices.remaining(index))  # the slice's members as this one
    need = ask.resource.multiply(len(members))
    weights = topology.weights
    for domain in sorted((d for d in inside if d.fits(need)), key=lambda d: (-d.usage_after(need, weights), d.name)):
        if members_pack(domain, members, accepts):
            return ClusterScope((domain,), group_of=group_of)
    return ClusterScope(tuple(sorted(inside, key=lambda d: (d.usage_after(need, weights), d.name))), False,
                        f"no {level} domain has room for slice {index + 1} of application '{app.app_id}' "
                        f"({len(members)} members of {go_string(ask.resource)})", group_of=group_of)


def _member_size(member: Allocation) -> tuple[int, ...]:
    return tuple(sorted(member.resource.values(), reverse=True))


def choose_domain_scope(topology: TopologyIndex, app: Application,
                        remembered: Callable[[], frozenset[str]] | None = None,
                        clusters: ClusterScope | None = None, accepts: Acceptance | None = None) -> ClusterScope | None:
    """The domain ``app`` may use now (see the module doc); None: anywhere. ``remembered``: the
    nodes its roles last ran on (role history), asked only when a domain is to be chosen;
    ``clusters``: a hub partition's member clusters ``app`` may use (domains elsewhere are not
    candidates); ``accepts``: the RM's predicates for a member on a node (None: every node)."""
    request = app.topology_request
    group_of = functools.partial(_domain_of, topology, request.level)
    placed = topology.placed_domain(app)
    if placed is not None and request.required:
        return ClusterScope((placed,), group_of=group_of)
    gang = not app.placeholder_ask.is_zero()
    members = [ask for ask in app.iter_asks() if ask.placeholder or not gang]
    if placed is not None:  # preferred: its domain while the rest fits there, else anywhere
        return ClusterScope((placed,), group_of=group_of) if members_pack(placed, members, accepts) else None
    if not members:
        return None
    need = sum((member.resource for member in members), Resource())
    if gang and not app.placeholder_ask.fits_in(need):
        # Its placeholders are still arriving (an RM sends them one by one): a domain chosen for
        # the first few could not hold the rest.
        return ClusterScope((), False, f"the placeholders of gang '{app.app_id}' are still arriving "
                                       f"({go_string(need)} of {go_string(app.placeholder_ask)})", group_of=group_of)
    weights = topology.weights
    domains = topology.domains.get(request.level, {})
    if clusters is not None:
        names = {c.name for c in clusters.clusters}
        domains = {value: d for value, d in domains.items() if d.cluster in names}
    history = remembered() if remembered is not None else frozenset()
    ordered = sorted((d for d in domains.values() if d.fits(need)),
                     key=lambda d: (-_remembered_in(d, history), -d.usage_after(need, weights), d.name))
    sliced = request.slice_level and request.slice_level != request.level
    for domain in ordered:
        if members_pack(domain, members, accepts) and (not sliced or slices_pack(
                topology, domain, members, request.slice_level, request.slice_size, accepts)):
            return ClusterScope((domain,), group_of=group_of)
        if accepts is not None and members_pack(domain, members) and (not sliced or slices_pack(
                topology, domain, members, request.slice_level, request.slice_size)):
            accepts.refused += 1  # room enough: the members' constraints refused it
    if not request.required:
        return None
    # It waits; preemption may still make room, in one domain: those whose nodes could hold it
    # once freed (preemption ranks them by their victims; most free first otherwise).
    reachable = tuple(sorted((d for d in domains.values() if need.fits_in(d.total)),
                             key=lambda d: (d.usage_after(need, weights), d.name)))
    reason = _no_room(app, request.level, need, list(domains.values()))
    if accepts is not None and accepts.refused:
        reason += (f"; {accepts.refused} {request.level} domain(s) with room refuse its members "
                   "(node selector, affinity, taints or other constraints of its pods)")
    return ClusterScope(reachable, False, reason, group_of=group_of, preempt_for=need)


def _remembered_in(domain: Domain, nodes: frozenset[str]) -> int:
    return sum(1 for node_id in nodes if node_id in domain.nodes) if nodes else 0


def _domain_of(topology: TopologyIndex, level: str, node_id: str) -> Domain | None:
    return topology.domain_of(node_id, level)


def _no_room(app: Application, level: str, need: Resource, domains: list[Domain]) -> str:
    if not domains:
        return f"no node has the topology level {level} that application '{app.app_id}' requires"
    largest = max(domains, key=lambda d: (d.available.get("vcore", 0), d.available.get("memory", 0), d.name))
    return (f"no {level} domain has room for the whole application '{app.app_id}' "
            f"(needs {go_string(need)} in {level}; the most free: {level}={largest.name} "
            f"with {go_string(largest.available)})")
