"""A pod's preferred terms and kube-scheduler's scores for them, as pure functions over plain
data: the shim answers the core's ``score_nodes`` with them (the core weighs them against its
own node order: ``pyscheduler/scheduler/node_preference.py``).

**Preferences** a pod may have (each kube-scheduler score plugin, its weight in the default
profile, and how it scores a node before normalising over the candidate nodes):

- ``NodeAffinity`` (2): ``preferredDuringSchedulingIgnoredDuringExecution`` node selector terms;
  the sum of the weights of the terms the node matches; normalised so the best node has 100.
- ``InterPodAffinity`` (2): preferred pod affinity (+weight) and anti-affinity (-weight) terms;
  per term, its weight times the pods matching it in the node's domain of its key; normalised
  from the lowest (0) to the highest (100).
- ``PodTopologySpread`` (2): ``ScheduleAnyway`` constraints; per constraint, the matching pods
  in the node's domain times ``log(domains + 2)`` plus ``maxSkew - 1``; fewer is better: the
  least crowded node has 100; a node without every key gets 0.
- ``TaintToleration`` (3), for a pod with any of the above: ``PreferNoSchedule`` taints the pod
  does not tolerate; fewer is better (none: 100).

The node's preference is the weighted mean of the plugins the pod has (0 to 100), leaving out a
plugin that scores every candidate alike (in kube-scheduler's sum it adds the same to each node;
in a mean it would only dilute the others). Left out:
the symmetric scores of existing pods' preferred terms (a running pod's preferred affinity
pulling new pods towards it), and Kubernetes' default spreading of a Service's pods
(``defaultingType: System``): pods without preferences of their own are placed by the core's
node policy alone, as on YuniKorn.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pyscheduler_k8s.affinity import AffinityTerm, TopologyCounts, preferred_terms
from pyscheduler_k8s.nodes import NodeView
from pyscheduler_k8s.selectors import SelectorError
from pyscheduler_k8s.spread import SpreadConstraint, spread_constraints

__all__ = [
    "MAX_SCORE",
    "Preferences",
    "affinity_scores",
    "node_affinity_scores",
    "preference_scores",
    "preferences_of",
    "spread_scores",
    "taint_scores",
]

MAX_SCORE: Final = 100
NODE_AFFINITY_WEIGHT: Final = 2
INTER_POD_AFFINITY_WEIGHT: Final = 2
SPREAD_WEIGHT: Final = 2
TAINT_WEIGHT: Final = 3


@dataclass(frozen=True, slots=True)
class Preferences:
    node_affinity: tuple[tuple[int, Mapping[str, Any]], ...] = ()
    #: (signed weight, term): positive for affinity, negative for anti-affinity.
    pod_affinity: tuple[tuple[int, AffinityTerm], ...] = ()
    spread: tuple[SpreadConstraint, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.node_affinity or self.pod_affinity or self.spread)


NO_PREFERENCES: Final = Preferences()


def preferences_of(pod: Mapping[str, Any]) -> Preferences:
    """The pod's preferred terms. Raises :class:`SelectorError` for a broken one."""
    node_affinity = ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}
    raw = node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []
    if not isinstance(raw, list):
        raise SelectorError("nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution: not a list")
    weighted_nodes = []
    for n, item in enumerate(raw):
        weight = item.get("weight") if isinstance(item, Mapping) else None
        if not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= 100:
            raise SelectorError(f"nodeAffinity.preferred[{n}].weight: must be an integer from 1 to 100")
        preference = item.get("preference")
        if not isinstance(preference, Mapping):
            raise SelectorError(f"nodeAffinity.preferred[{n}].preference: not an object")
        weighted_nodes.append((weight, preference))
    pods = [(w, t) for w, t in preferred_terms(pod, "podAffinity")]
    pods += [(-w, t) for w, t in preferred_terms(pod, "podAntiAffinity")]
    return Preferences(tuple(weighted_nodes), tuple(pods), spread_constraints(pod, "ScheduleAnyway"))


def _normalize_to_max(raw: Sequence[float]) -> list[int]:
    """kube's DefaultNormalizeScore: the highest gets 100, the others in proportion."""
    top = max(raw, default=0)
    return [int(MAX_SCORE * r / top) if top > 0 else 0 for r in raw]


def node_affinity_scores(preferences: Preferences, nodes: Sequence[NodeView],
                         matches: Callable[[Mapping[str, Any], NodeView], bool]) -> list[int]:
    """``matches(term, node)``: a node selector term matches the node (the required node
    affinity's rule)."""
    return _normalize_to_max([sum(w for w, term in preferences.node_affinity if matches(term, node))
                              for node in nodes])


def affinity_scores(preferences: Preferences, nodes: Sequence[NodeView],
                    counts: Callable[[AffinityTerm], TopologyCounts]) -> list[int]:
    """``counts(term)``: the pods matching the term per topology pair (the cluster index's)."""
    raw = []
    per_term = [(w, t.topology_key, counts(t)) for w, t in preferences.pod_affinity]
    for node in nodes:
        total = 0
        for weight, key, found in per_term:
            value = node.labels.get(key)
            if value is not None:
                total += weight * found.get((key, value), 0)
        raw.append(total)
    least, most = min(raw, default=0), max(raw, default=0)
    spread = most - least
    return [int(MAX_SCORE * (r - least) / spread) if spread > 0 else 0 for r in raw]


def spread_scores(preferences: Preferences, nodes: Sequence[NodeView],
                  matching: Callable[[SpreadConstraint, NodeView], int],
                  domains: Callable[[SpreadConstraint], int]) -> list[int]:
    """``matching(c, node)``: the pods matching the constraint in the node's domain;
    ``domains(c)``: how many domains the constraint's key has."""
    keys = [c.topology_key for c in preferences.spread]
    weights = [math.log(domains(c) + 2) for c in preferences.spread]
    raw: list[float | None] = []
    for node in nodes:
        if not all(key in node.labels for key in keys):
            raw.append(None)  # kube ignores such a node: it scores 0
            continue
        raw.append(sum(matching(c, node) * w + (c.max_skew - 1) for c, w in zip(preferences.spread, weights)))
    present = [r for r in raw if r is not None]
    least, most = min(present, default=0.0), max(present, default=0.0)
    out = []
    for r in raw:
        if r is None:
            out.append(0)
        elif most <= 0:
            out.append(MAX_SCORE)
        else:
            out.append(int(MAX_SCORE * (most + least - r) / most))
    return out


def taint_scores(pod: Mapping[str, Any], nodes: Sequence[NodeView],
                 tolerated: Callable[[Iterable[Mapping[str, Any]], tuple[str, str, str]], bool]) -> list[int]:
    """Fewer untolerated ``PreferNoSchedule`` taints is better (kube's reverse normalisation)."""
    tolerations = [t for t in (pod.get("spec") or {}).get("tolerations") or ()
                   if isinstance(t, Mapping) and t.get("effect") in (None, "", "PreferNoSchedule")]
    raw = [sum(1 for taint in node.taints if taint[2] == "PreferNoSchedule" and not tolerated(tolerations, taint))
           for node in nodes]
    top = max(raw, default=0)
    return [MAX_SCORE if top == 0 else MAX_SCORE - int(MAX_SCORE * r / top) for r in raw]


def preference_scores(parts: Iterable[tuple[int, Sequence[int]]], count: int) -> list[int]:
    """The weighted mean of the plugins' scores ((weight, scores) each), 0..100 per node. A
    plugin that scores every node alike is left out: in kube-scheduler's sum it adds the same
    to every node, here it would only dilute the others."""
    parts = [(w, scores) for w, scores in parts if len(set(scores)) > 1]
    total_weight = sum(w for w, _ in parts)
    if not total_weight:
        return [0] * count
    return [sum(w * scores[i] for w, scores in parts) // total_weight for i in range(count)]
