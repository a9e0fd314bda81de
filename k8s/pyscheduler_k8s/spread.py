"""Pod topology spread as kube-scheduler's ``PodTopologySpread`` filter decides it, as pure
functions over plain data: a pod's constraints, the per-pod state built from per-node counts
(which the cluster index keeps), and the node check.

**Constraints** (``spec.topologySpreadConstraints``): only ``whenUnsatisfiable: DoNotSchedule``
ones filter (``ScheduleAnyway`` ones only score). Each has a ``topologyKey``, ``maxSkew``, a
``labelSelector`` over pods **of the pod's own namespace** (``matchLabelKeys``: each key the pod
has adds ``key In (value)``), ``minDomains`` (default 1), ``nodeAffinityPolicy`` (``Honor``, the
default: only nodes the pod's node selector and required node affinity accept count) and
``nodeTaintsPolicy`` (``Ignore``, the default; ``Honor``: nodes with a ``NoSchedule`` or
``NoExecute`` taint the pod does not tolerate do not count).

Kubernetes' cluster default constraints (``defaultingType: System``) are ``ScheduleAnyway``
only (hostname maxSkew 3, zone maxSkew 5): they never filter, so a pod without constraints
passes here.

**State** (kube-scheduler's PreFilter): over the nodes that carry **every** constraint's key,
per constraint, the eligible domains (values of its key among the nodes its policies accept)
with the matching pods in each (terminating pods left out), and the smallest count; with fewer
eligible domains than ``minDomains`` the smallest count is taken as 0.

**Filter**: the node has every key (else "... (missing required label)"), and for each
constraint ``pods in the node's domain + (1 if the pod matches its own selector) - smallest``
is at most ``maxSkew``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pyscheduler_k8s.selectors import LabelSelector, Requirement, SelectorError, label_selector

__all__ = [
    "MISSING_LABEL",
    "SKEW_EXCEEDED",
    "SpreadConstraint",
    "SpreadState",
    "spread_constraints",
    "spread_filter",
    "spread_state",
]

SKEW_EXCEEDED: Final = "node(s) didn't match pod topology spread constraints"
MISSING_LABEL: Final = SKEW_EXCEEDED + " (missing required label)"
#: kube-scheduler's smallest count when no domain is eligible (math.MaxInt32): every node passes.
_NO_DOMAIN: Final = 2**31 - 1


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    max_skew: int
    topology_key: str
    selector: LabelSelector
    min_domains: int = 1
    honor_node_affinity: bool = True
    honor_taints: bool = False


def _policy(value: Any, default: str, where: str) -> bool:
    """True for ``Honor``."""
    if value is None:
        value = default
    if value not in ("Honor", "Ignore"):
        raise SelectorError(f"{where}: must be Honor or Ignore, not {value!r}")
    return bool(value == "Honor")


def spread_constraints(pod: Mapping[str, Any], when: str = "DoNotSchedule") -> tuple[SpreadConstraint, ...]:
    """The pod's constraints with ``whenUnsatisfiable`` ``when``. Raises :class:`SelectorError`
    for one Kubernetes would refuse."""
    raw = (pod.get("spec") or {}).get("topologySpreadConstraints") or []
    if not isinstance(raw, list):
        raise SelectorError("topologySpreadConstraints: not a list")
    labels = (pod.get("metadata") or {}).get("labels") or {}
    out = []
    for n, item in enumerate(raw):
        where = f"topologySpreadConstraints[{n}]"
        if not isinstance(item, Mapping):
            raise SelectorError(f"{where}: not an object")
        if item.get("whenUnsatisfiable", "DoNotSchedule") != when:
            continue
        max_skew, key = item.get("maxSkew"), item.get("topologyKey")
        if not isinstance(max_skew, int) or isinstance(max_skew, bool) or max_skew < 1:
            raise SelectorError(f"{where}.maxSkew: must be a positive integer")
        if not isinstance(key, str) or not key:
            raise SelectorError(f"{where}.topologyKey: required")
        min_domains = item.get("minDomains")
        if min_domains is None:
            min_domains = 1
        elif not isinstance(min_domains, int) or isinstance(min_domains, bool) or min_domains < 1:
            raise SelectorError(f"{where}.minDomains: must be a positive integer")
        selector = label_selector(item.get("labelSelector"), f"{where}.labelSelector")
        keys = item.get("matchLabelKeys") or []
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            raise SelectorError(f"{where}.matchLabelKeys: must be a list of strings")
        extra = [Requirement(k, "In", frozenset({str(labels[k])})) for k in keys if k in labels]
        if extra:
            selector = selector.with_requirements(extra)
        out.append(SpreadConstraint(max_skew, key, selector, min_domains,
                                    _policy(item.get("nodeAffinityPolicy"), "Honor", f"{where}.nodeAffinityPolicy"),
                                    _policy(item.get("nodeTaintsPolicy"), "Ignore", f"{where}.nodeTaintsPolicy")))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class SpreadState:
    """What the filter needs for one pod: per constraint, the matching pods per eligible domain,
    the smallest count (``minDomains`` applied), and whether the pod matches its selector."""

    constraints: tuple[SpreadConstraint, ...]
    counts: tuple[Mapping[str, int], ...]
    smallest: tuple[int, ...]
    self_match: tuple[int, ...]


def spread_state(constraints: Sequence[SpreadConstraint], pod_labels: Mapping[str, str],
                 nodes: Iterable[tuple[Mapping[str, str], Sequence[bool], Sequence[int]]]) -> SpreadState:
    """The state from every node: its labels, whether each constraint's policies accept it, and
    the pods on it matching each constraint (see the module doc)."""
    counts: list[dict[str, int]] = [{} for _ in constraints]
    keys = [c.topology_key for c in constraints]
    for labels, eligible, matching in nodes:
        if not all(key in labels for key in keys):
            continue
        for i, key in enumerate(keys):
            if eligible[i]:
                value = labels[key]
                counts[i][value] = counts[i].get(value, 0) + matching[i]
    smallest = []
    for constraint, per_domain in zip(constraints, counts):
        least = min(per_domain.values()) if per_domain else _NO_DOMAIN
        smallest.append(0 if len(per_domain) < constraint.min_domains else least)
    return SpreadState(tuple(constraints), tuple(counts), tuple(smallest),
                       tuple(int(c.selector.matches(pod_labels)) for c in constraints))


def spread_filter(state: SpreadState, node_labels: Mapping[str, str]) -> str | None:
    """None when the node passes, else kube-scheduler's reason."""
    for i, constraint in enumerate(state.constraints):
        value = node_labels.get(constraint.topology_key)
        if value is None:
            return MISSING_LABEL
        if state.counts[i].get(value, 0) + state.self_match[i] - state.smallest[i] > constraint.max_skew:
            return SKEW_EXCEEDED
    return None
