"""The cluster as the inter-pod filters need it, kept up to date one change at a time, so that
checking a node for a pod costs a few dictionary reads (affinity), or one pass over the
topology domains per pod and cluster change (spread), never a pass over the pods.

**What it holds.** Nodes (labels, taints), namespaces (labels), the pods that occupy nodes
(bound, placed by the core and being bound, other schedulers' pods) with their labels and their
own required anti-affinity terms, and the constraints of the pods the shim follows (tracked).

**Counters**, one per distinct constraint among the tracked pods, created on first use with one
pass over the pods and updated on every pod or node change after that; a counter lives while a
pod having that constraint is tracked (a StatefulSet's pods share theirs):

- per set of required affinity terms: the pods matching all of them, per topology pair of each
  term's key;
- per required anti-affinity term: the pods matching it, per topology pair;
- per term of the occupying pods' own anti-affinity (the symmetric rule): where its owners run,
  per topology pair; which of these terms match an incoming pod is worked out once per pod and
  kept until the set of such terms (or a namespace's labels) changes;
- per (namespace, selector, key) of a spread constraint: matching non-terminating pods per node
  and per value of the key.

A spread constraint's per-pod state (the domains and their counts) is built per pod and cluster
change: from the per-value counts, O(domains), when every node carrying the key is eligible;
otherwise from the per-node counts over the nodes carrying the keys.

**Preemption.** :meth:`ClusterIndex.check` takes the uids of pods to count as gone (the victims
the core proposes): their contributions are taken off copies of the counts.

Not thread-safe: the shim calls it under its own lock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pyscheduler_k8s.affinity import AffinityTerm, TopologyCounts, inter_pod_affinity, matches_all, required_terms
from pyscheduler_k8s.nodes import NodeView
from pyscheduler_k8s.preferences import (
    INTER_POD_AFFINITY_WEIGHT, NO_PREFERENCES, NODE_AFFINITY_WEIGHT, SPREAD_WEIGHT, TAINT_WEIGHT, Preferences,
    affinity_scores, node_affinity_scores, preference_scores, preferences_of, spread_scores, taint_scores)
from pyscheduler_k8s.selectors import LabelSelector
from pyscheduler_k8s.spread import SpreadConstraint, SpreadState, spread_constraints, spread_filter, spread_state

__all__ = ["ClusterIndex", "PlacedPod", "PodConstraints", "pod_constraints"]

_NO_LABELS: Final[Mapping[str, str]] = {}


@dataclass(frozen=True, slots=True)
class PodConstraints:
    """What the inter-pod filters read from a pod, parsed once (see :func:`pod_constraints`)."""

    namespace: str
    labels: Mapping[str, str]
    affinity: tuple[AffinityTerm, ...] = ()
    anti_affinity: tuple[AffinityTerm, ...] = ()
    spread: tuple[SpreadConstraint, ...] = ()
    #: Its preferred terms (scores only, :mod:`.preferences`).
    preferences: Preferences = NO_PREFERENCES

    @property
    def empty(self) -> bool:
        """No required inter-pod constraint (preferences aside)."""
        return not (self.affinity or self.anti_affinity or self.spread)


def pod_constraints(pod: Mapping[str, Any]) -> PodConstraints:
    """The pod's required affinity and anti-affinity terms, its ``DoNotSchedule`` spread
    constraints and its preferred terms. Raises
    :class:`~pyscheduler_k8s.selectors.SelectorError` for a broken one."""
    meta = pod.get("metadata") or {}
    return PodConstraints(str(meta.get("namespace") or "default"), dict(meta.get("labels") or {}),
                          required_terms(pod, "podAffinity"), required_terms(pod, "podAntiAffinity"),
                          spread_constraints(pod), preferences_of(pod))


@dataclass(frozen=True, slots=True)
class PlacedPod:
    """A pod occupying a node, as the counters see it."""

    uid: str
    namespace: str
    labels: Mapping[str, str]
    node: str
    #: Being deleted: it still counts for affinity, not for spreading (as kube-scheduler counts).
    terminating: bool = False
    #: Its own required anti-affinity terms (the symmetric rule).
    anti_affinity: tuple[AffinityTerm, ...] = ()


def _bump(pairs: dict[tuple[str, str], int], pair: tuple[str, str], by: int) -> None:
    count = pairs.get(pair, 0) + by
    if count:
        pairs[pair] = count
    else:
        del pairs[pair]


@dataclass(eq=False, slots=True)
class _TermCounter:
    """Pods matching every term of ``terms``, counted per topology pair of each term's key."""

    terms: tuple[AffinityTerm, ...]
    pairs: dict[tuple[str, str], int] = field(default_factory=dict)
    refs: int = 0

    def account(self, pod: PlacedPod, node_labels: Mapping[str, str], by: int,
                namespace_labels: Callable[[str], Mapping[str, str]]) -> None:
        if matches_all(self.terms, pod.namespace, pod.labels, namespace_labels):
            for term in self.terms:
                value = node_labels.get(term.topology_key)
                if value is not None:
                    _bump(self.pairs, (term.topology_key, value), by)


@dataclass(eq=False, slots=True)
class _OwnedTerm:
    """Where the owners of one anti-affinity term run, per topology pair."""

    term: AffinityTerm
    pairs: dict[tuple[str, str], int] = field(default_factory=dict)
    refs: int = 0

    def account(self, node_labels: Mapping[str, str], by: int) -> None:
        value = node_labels.get(self.term.topology_key)
        if value is not None:
            _bump(self.pairs, (self.term.topology_key, value), by)


@dataclass(eq=False, slots=True)
class _SpreadCounter:
    namespace: str
    selector: LabelSelector
    key: str
    by_node: dict[str, int] = field(default_factory=dict)
    by_value: dict[str, int] = field(default_factory=dict)
    refs: int = 0

    def counts(self, pod: PlacedPod) -> bool:
        return not pod.terminating and pod.namespace == self.namespace and self.selector.matches(pod.labels)

    def account(self, pod: PlacedPod, node_labels: Mapping[str, str], by: int) -> None:
        if not self.counts(pod):
            return
        count = self.by_node.get(pod.node, 0) + by
        if count:
            self.by_node[pod.node] = count
        else:
            self.by_node.pop(pod.node, None)
        value = node_labels.get(self.key)
        if value is not None:
            count = self.by_value.get(value, 0) + by
            if count:
                self.by_value[value] = count
            else:
                self.by_value.pop(value, None)


_SpreadKey = tuple[str, LabelSelector, str]
#: :func:`inter_pod_affinity`'s arguments after the node's labels.
_Plan = tuple[tuple[AffinityTerm, ...], TopologyCounts, bool, list[tuple[str, TopologyCounts]],
              list[tuple[str, TopologyCounts]]]


class ClusterIndex:
    def __init__(self, *, node_passes: Callable[[Mapping[str, Any], NodeView, bool, bool], bool] | None = None) -> None:
        """``node_passes(pod, node, affinity, taints)``: whether the pod's required node
        affinity (and node selector) accepts the node (when ``affinity``) and it tolerates the
        node's ``NoSchedule``/``NoExecute`` taints (when ``taints``): the spread constraints'
        node inclusion policies. Without it every node is eligible."""
        self._node_passes = node_passes
        self.nodes: dict[str, NodeView] = {}
        self.namespaces: dict[str, Mapping[str, str]] = {}
        self.pods: dict[str, PlacedPod] = {}
        self._on_node: dict[str, set[str]] = {}
        #: Per topology key: value -> nodes carrying it.
        self._domains: dict[str, dict[str, int]] = {}
        self._tracked: dict[str, PodConstraints] = {}
        self._affinity: dict[tuple[AffinityTerm, ...], _TermCounter] = {}
        self._owned: dict[AffinityTerm, _OwnedTerm] = {}
        self._spread: dict[_SpreadKey, _SpreadCounter] = {}
        #: Bumped when the set of owned anti-affinity terms or a namespace's labels change.
        self._owned_version = 0
        self._owned_matches: dict[str, tuple[int, list[_OwnedTerm]]] = {}
        #: Per pod: what its checks read (:meth:`_plan`), valid while ``_owned_version`` holds.
        self._plans: dict[str, tuple[int, _Plan | None]] = {}
        #: Bumped on every change the spread state depends on.
        self.generation = 0
        self._spread_states: dict[str, tuple[int, SpreadState]] = {}

    # -- namespaces -----------------------------------------------------------------------------

    def namespace_labels(self, name: str) -> Mapping[str, str]:
        return self.namespaces.get(name, _NO_LABELS)

    def set_namespace(self, name: str, labels: Mapping[str, str] | None) -> None:
        """A namespace's labels (None: it is gone). Counters of terms that select namespaces by
        label are counted again."""
        labels = dict(labels) if labels is not None else None
        if self.namespaces.get(name) == labels:
            return
        if labels is None:
            self.namespaces.pop(name, None)
        else:
            self.namespaces[name] = labels
        self._owned_version += 1
        self.generation += 1
        for counter in self._affinity.values():
            if any(not t.namespace_selector.nothing for t in counter.terms):
                counter.pairs.clear()
                for pod in self.pods.values():
                    counter.account(pod, self._labels_of(pod.node), 1, self.namespace_labels)

    # -- nodes ----------------------------------------------------------------------------------

    def _labels_of(self, node: str) -> Mapping[str, str]:
        view = self.nodes.get(node)
        return view.labels if view is not None else _NO_LABELS

    def set_node(self, node: NodeView) -> None:
        """A node added or changed: the pods on it are counted again under its new labels."""
        known = self.nodes.get(node.name)
        if known is not None and known.labels == node.labels:
            if known.taints != node.taints:
                self.generation += 1
            self.nodes[node.name] = node
            return
        on_node = [self.pods[uid] for uid in self._on_node.get(node.name, ())]
        for pod in on_node:
            self._account(pod, -1)
        if known is not None:
            self._count_domains(known.labels, -1)
        self.nodes[node.name] = node
        self._count_domains(node.labels, 1)
        for pod in on_node:
            self._account(pod, 1)
        self.generation += 1

    def remove_node(self, name: str) -> None:
        """The node is gone; pods still recorded on it stay recorded (their own removal comes)
        but count in no topology domain."""
        known = self.nodes.get(name)
        if known is None:
            return
        on_node = [self.pods[uid] for uid in self._on_node.get(name, ())]
        for pod in on_node:
            self._account(pod, -1)
        self._count_domains(known.labels, -1)
        del self.nodes[name]
        for pod in on_node:
            self._account(pod, 1)
        self.generation += 1

    def _count_domains(self, labels: Mapping[str, str], by: int) -> None:
        for key, value in labels.items():
            values = self._domains.setdefault(key, {})
            count = values.get(value, 0) + by
            if count:
                values[value] = count
            else:
                values.pop(value, None)
                if not values:
                    del self._domains[key]

    # -- pods on nodes --------------------------------------------------------------------------

    def place(self, pod: PlacedPod) -> None:
        """A pod occupies ``pod.node`` (or changed: labels, terminating); replaces what was
        recorded under its uid."""
        self.remove(pod.uid)
        self.pods[pod.uid] = pod
        self._on_node.setdefault(pod.node, set()).add(pod.uid)
        for term in pod.anti_affinity:
            owned = self._owned.get(term)
            if owned is None:
                owned = self._owned[term] = _OwnedTerm(term)
                self._owned_version += 1
            owned.refs += 1
        self._account(pod, 1)
        self.generation += 1

    def remove(self, uid: str) -> None:
        pod = self.pods.pop(uid, None)
        if pod is None:
            return
        self._account(pod, -1)
        on_node = self._on_node.get(pod.node)
        if on_node is not None:
            on_node.discard(uid)
            if not on_node:
                del self._on_node[pod.node]
        for term in pod.anti_affinity:
            owned = self._owned[term]
            owned.refs -= 1
            if owned.refs <= 0:
                del self._owned[term]
                self._owned_version += 1
        self.generation += 1

    def _account(self, pod: PlacedPod, by: int) -> None:
        labels = self._labels_of(pod.node)
        for counter in self._affinity.values():
            counter.account(pod, labels, by, self.namespace_labels)
        for spread in self._spread.values():
            spread.account(pod, labels, by)
        for term in pod.anti_affinity:  # a pod may repeat a term: counted each time
            self._owned[term].account(labels, by)

    # -- pods the filters check -------------------------------------------------------------------

    def track(self, uid: str, constraints: PodConstraints) -> None:
        """The pod will be checked (and may be again while it exists): its counters are made."""
        self.untrack(uid)
        if constraints.empty and constraints.preferences.empty:
            return
        self._tracked[uid] = constraints
        for key in self._affinity_keys(constraints):
            counter = self._affinity.get(key)
            if counter is None:
                counter = self._affinity[key] = _TermCounter(key)
                for pod in self.pods.values():
                    counter.account(pod, self._labels_of(pod.node), 1, self.namespace_labels)
            counter.refs += 1
        for spread_key in self._spread_keys(constraints):
            spread = self._spread.get(spread_key)
            if spread is None:
                spread = self._spread[spread_key] = _SpreadCounter(*spread_key)
                for pod in self.pods.values():
                    spread.account(pod, self._labels_of(pod.node), 1)
            spread.refs += 1

    def untrack(self, uid: str) -> None:
        constraints = self._tracked.pop(uid, None)
        self._owned_matches.pop(uid, None)
        self._plans.pop(uid, None)
        self._spread_states.pop(uid, None)
        if constraints is None:
            return
        for key in self._affinity_keys(constraints):
            counter = self._affinity[key]
            counter.refs -= 1
            if counter.refs <= 0:
                del self._affinity[key]
        for spread_key in self._spread_keys(constraints):
            spread = self._spread[spread_key]
            spread.refs -= 1
            if spread.refs <= 0:
                del self._spread[spread_key]

    @staticmethod
    def _affinity_keys(constraints: PodConstraints) -> list[tuple[AffinityTerm, ...]]:
        keys: list[tuple[AffinityTerm, ...]] = [(term,) for term in constraints.anti_affinity]
        if constraints.affinity:
            keys.append(constraints.affinity)
        keys += [(term,) for _, term in constraints.preferences.pod_affinity]
        return keys

    @staticmethod
    def _spread_keys(constraints: PodConstraints, soft: bool = True) -> list[_SpreadKey]:
        spread = constraints.spread + constraints.preferences.spread if soft else constraints.spread
        return [(constraints.namespace, c.selector, c.topology_key) for c in spread]

    # -- the check ----------------------------------------------------------------------------------

    def _existing_anti(self, uid: str, constraints: PodConstraints) -> list[_OwnedTerm]:
        """The running pods' anti-affinity terms that match this pod."""
        cached = self._owned_matches.get(uid)
        if cached is not None and cached[0] == self._owned_version:
            return cached[1]
        found = [owned for owned in self._owned.values()
                 if owned.term.matches(constraints.namespace, constraints.labels, self.namespace_labels)]
        self._owned_matches[uid] = (self._owned_version, found)  # dropped by untrack(uid)
        return found

    def _without(self, gone: Iterable[str]) -> list[PlacedPod]:
        return [pod for uid in gone if (pod := self.pods.get(uid)) is not None]

    def check(self, uid: str, constraints: PodConstraints, pod: Mapping[str, Any], node: NodeView,
              gone: frozenset[str] = frozenset()) -> str | None:
        """None when ``node`` passes InterPodAffinity and PodTopologySpread for the pod, else
        kube-scheduler's reason. ``constraints`` must be what :meth:`track` was given for
        ``uid`` (an untracked pod is checked against fresh counts, slower). ``gone``: pods to
        count as removed (preemption victims)."""
        if not gone and (uid in self._tracked or constraints.empty):
            # The common case: what the pod's checks read is gathered once (the counters' live
            # dictionaries), kept until the set of running pods' anti-affinity terms changes.
            cached = self._plans.get(uid)
            plan = cached[1] if cached is not None and cached[0] == self._owned_version else self._plan(uid, constraints)
            if plan is None:
                return None
            reason = inter_pod_affinity(node.labels, *plan)
            if reason is None and constraints.spread:
                return spread_filter(self._spread_state(uid, constraints, pod, []), node.labels)
            return reason
        return self._check_without(uid, constraints, pod, node, gone)

    def _plan(self, uid: str, constraints: PodConstraints) -> _Plan | None:
        """The arguments of :func:`inter_pod_affinity` for the pod (less the node's labels), or
        None when it has no inter-pod constraint and no running pod's anti-affinity matches it."""
        owned = self._existing_anti(uid, constraints)
        if constraints.empty and not owned:
            self._plans[uid] = (self._owned_version, None)
            return None
        plan: _Plan = (
            constraints.affinity,
            self._affinity[constraints.affinity].pairs if constraints.affinity else {},
            bool(constraints.affinity) and matches_all(constraints.affinity, constraints.namespace,
                                                       constraints.labels, self.namespace_labels),
            [(t.topology_key, self._affinity[(t,)].pairs) for t in constraints.anti_affinity],
            [(o.term.topology_key, o.pairs) for o in owned])
        self._plans[uid] = (self._owned_version, plan)
        return plan

    def _check_without(self, uid: str, constraints: PodConstraints, pod: Mapping[str, Any], node: NodeView,
                       gone: frozenset[str]) -> str | None:
        """:meth:`check` with the pods of ``gone`` counted as removed."""
        owned = self._existing_anti(uid, constraints)
        if constraints.empty and not owned:
            return None
        if uid not in self._tracked and not constraints.empty:
            self.track(uid, constraints)
            try:
                return self._check_without(uid, constraints, pod, node, gone)
            finally:
                self.untrack(uid)
        removed = self._without(gone)
        labels = node.labels
        if constraints.affinity or constraints.anti_affinity or owned:
            affinity: TopologyCounts = {}
            if constraints.affinity:
                affinity = self._counts(self._affinity[constraints.affinity], removed)
            anti = [(t.topology_key, self._counts(self._affinity[(t,)], removed)) for t in constraints.anti_affinity]
            existing = [(o.term.topology_key, self._owned_counts(o, removed)) for o in owned]
            reason = inter_pod_affinity(
                labels, constraints.affinity, affinity,
                bool(constraints.affinity) and matches_all(constraints.affinity, constraints.namespace,
                                                           constraints.labels, self.namespace_labels),
                anti, existing)
            if reason is not None:
                return reason
        if constraints.spread:
            return spread_filter(self._spread_state(uid, constraints, pod, removed), labels)
        return None

    def _counts(self, counter: _TermCounter, removed: list[PlacedPod]) -> TopologyCounts:
        """The counter's pairs with ``removed`` taken away (its own pairs when none is)."""
        if not removed:
            return counter.pairs
        without = _TermCounter(counter.terms, dict(counter.pairs))
        for pod in removed:
            without.account(pod, self._labels_of(pod.node), -1, self.namespace_labels)
        return without.pairs

    def _owned_counts(self, owned: _OwnedTerm, removed: list[PlacedPod]) -> TopologyCounts:
        """As :meth:`_counts`, for where the owners of one anti-affinity term run."""
        if not removed:
            return owned.pairs
        without = _OwnedTerm(owned.term, dict(owned.pairs))
        for pod in removed:
            times = pod.anti_affinity.count(owned.term)
            if times:
                without.account(self._labels_of(pod.node), -times)
        return without.pairs

    def _spread_state(self, uid: str, constraints: PodConstraints, pod: Mapping[str, Any],
                      removed: list[PlacedPod]) -> SpreadState:
        if not removed:
            cached = self._spread_states.get(uid)
            if cached is not None and cached[0] == self.generation:
                return cached[1]
        counters = [self._spread[key] for key in self._spread_keys(constraints, soft=False)]
        honors = self._node_passes is not None and any(
            (c.honor_node_affinity and _has_node_filter(pod)) or c.honor_taints for c in constraints.spread)
        keys = {c.topology_key for c in constraints.spread}
        if not honors and not removed and len(keys) == 1:
            # Every node carrying the one key is eligible: the domains are its values.
            values = self._domains.get(next(iter(keys)), {})
            state = spread_state(constraints.spread, constraints.labels,
                                 [({c.topology_key: value for c in constraints.spread},
                                   [True] * len(counters), [s.by_value.get(value, 0) for s in counters])
                                  for value in values])
        else:
            state = spread_state(constraints.spread, constraints.labels,
                                 self._spread_nodes(constraints, pod, counters, removed))
        if not removed:
            self._spread_states[uid] = (self.generation, state)
        return state

    def _spread_nodes(self, constraints: PodConstraints, pod: Mapping[str, Any], counters: list[_SpreadCounter],
                      removed: list[PlacedPod]) -> Iterable[tuple[Mapping[str, str], list[bool], list[int]]]:
        keys = [c.topology_key for c in constraints.spread]
        passes = self._node_passes
        for name, node in self.nodes.items():
            labels = node.labels
            if not all(key in labels for key in keys):
                continue
            eligible = [True] * len(keys)
            if passes is not None:
                for i, c in enumerate(constraints.spread):
                    if c.honor_node_affinity or c.honor_taints:
                        eligible[i] = passes(pod, node, c.honor_node_affinity, c.honor_taints)
            matching = [s.by_node.get(name, 0) for s in counters]
            for gone in removed:
                if gone.node == name:
                    for i, s in enumerate(counters):
                        if s.counts(gone):
                            matching[i] -= 1
            yield labels, eligible, matching

    # -- preferences ----------------------------------------------------------------------------------

    def scores(self, uid: str, constraints: PodConstraints, pod: Mapping[str, Any], nodes: list[NodeView],
               node_term_matches: Callable[[Mapping[str, Any], NodeView], bool],
               tolerated: Callable[[Iterable[Mapping[str, Any]], tuple[str, str, str]], bool]) -> list[int]:
        """The pod's preference for each of ``nodes`` (0..100, :mod:`.preferences`);
        ``node_term_matches`` and ``tolerated`` are the node affinity and toleration rules."""
        preferences = constraints.preferences
        if preferences.empty:
            return [0] * len(nodes)
        if uid not in self._tracked:
            self.track(uid, constraints)
            try:
                return self.scores(uid, constraints, pod, nodes, node_term_matches, tolerated)
            finally:
                self.untrack(uid)
        parts: list[tuple[int, list[int]]] = []
        if preferences.node_affinity:
            parts.append((NODE_AFFINITY_WEIGHT, node_affinity_scores(preferences, nodes, node_term_matches)))
        if preferences.pod_affinity:
            parts.append((INTER_POD_AFFINITY_WEIGHT, affinity_scores(
                preferences, nodes, lambda term: self._affinity[(term,)].pairs)))
        if preferences.spread:
            def matching(c: SpreadConstraint, node: NodeView) -> int:
                value = node.labels.get(c.topology_key)
                counter = self._spread[(constraints.namespace, c.selector, c.topology_key)]
                return counter.by_value.get(value, 0) if value is not None else 0

            parts.append((SPREAD_WEIGHT, spread_scores(preferences, nodes, matching,
                                                       lambda c: len(self._domains.get(c.topology_key, ())))))
        parts.append((TAINT_WEIGHT, taint_scores(pod, nodes, tolerated)))
        return preference_scores(parts, len(nodes))


def _has_node_filter(pod: Mapping[str, Any]) -> bool:
    spec = pod.get("spec") or {}
    if spec.get("nodeSelector"):
        return True
    node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    return bool(node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution"))
