"""Inter-pod affinity as kube-scheduler's ``InterPodAffinity`` filter decides it, as pure
functions over plain data: the terms of a pod, and the filter over topology counts that the
cluster index (:mod:`.cluster_index`) keeps up to date, so a node check costs a few dictionary
reads whatever the number of pods.

**Terms** (``spec.affinity.podAffinity`` / ``podAntiAffinity``,
``requiredDuringSchedulingIgnoredDuringExecution``): a label selector over pods, the namespaces
it looks in, and a topology key (a node label: pods "together" share its value).

- Namespaces: the term's ``namespaces`` list, plus every namespace whose labels match its
  ``namespaceSelector``; with neither (no list, a null selector): the pod's own namespace. An
  empty ``namespaceSelector`` (``{}``) is every namespace.
- ``matchLabelKeys`` / ``mismatchLabelKeys``: each key the pod has becomes ``key In (value)`` /
  ``key NotIn (value)`` in the selector (the API server already merges them at creation since
  v1.33; merging again changes nothing).

**The filter** (the three checks in kube-scheduler's order, its messages):

1. *Affinity*: the node has every term's topology key, and for every term some pod matching
   **all** the terms runs in the node's domain of that term's key. Exception, so the first pod
   of a self-affine group is not pending for ever: when no pod in the cluster (on a node with
   the key) matches all the terms and the pod matches all its own terms, any node with the keys
   passes.
2. *Anti-affinity*: for no term does a pod matching it run in the node's domain (a node without
   the term's key passes that term).
3. *Existing pods' anti-affinity* (the symmetric rule): no pod running in the node's domain of
   one of its own required anti-affinity terms has a term that matches the incoming pod.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pyscheduler_k8s.selectors import NOTHING, LabelSelector, Requirement, SelectorError, label_selector

__all__ = [
    "AFFINITY_MISMATCH",
    "ANTI_AFFINITY_MISMATCH",
    "EXISTING_ANTI_AFFINITY_MISMATCH",
    "AffinityTerm",
    "NamespaceLabels",
    "TopologyCounts",
    "inter_pod_affinity",
    "matches_all",
    "preferred_terms",
    "required_terms",
]

AFFINITY_MISMATCH: Final = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_MISMATCH: Final = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY_MISMATCH: Final = "node(s) didn't satisfy existing pods anti-affinity rules"

#: (topology key, value) -> pods counted there.
TopologyCounts = Mapping[tuple[str, str], int]
#: A namespace's labels (empty for a namespace not known).
NamespaceLabels = Callable[[str], Mapping[str, str]]

_NO_LABELS: Final[Mapping[str, str]] = {}


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    selector: LabelSelector
    namespaces: frozenset[str]
    topology_key: str
    namespace_selector: LabelSelector = NOTHING

    def matches(self, namespace: str, labels: Mapping[str, str], namespace_labels: NamespaceLabels) -> bool:
        """Whether a pod of ``namespace`` with ``labels`` is one this term selects."""
        if namespace not in self.namespaces:
            if self.namespace_selector.nothing or not self.namespace_selector.matches(namespace_labels(namespace)):
                return False
        return self.selector.matches(labels)


def _keys(term: Mapping[str, Any], field: str, where: str) -> list[str]:
    keys = term.get(field) or []
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise SelectorError(f"{where}.{field}: must be a list of strings")
    return keys


def _term(term: Any, namespace: str, labels: Mapping[str, str], where: str) -> AffinityTerm:
    if not isinstance(term, Mapping):
        raise SelectorError(f"{where}: not an object")
    topology_key = term.get("topologyKey")
    if not isinstance(topology_key, str) or not topology_key:
        raise SelectorError(f"{where}.topologyKey: required")
    selector = label_selector(term.get("labelSelector"), f"{where}.labelSelector")
    extra = [Requirement(k, "In", frozenset({labels[k]})) for k in _keys(term, "matchLabelKeys", where) if k in labels]
    extra += [Requirement(k, "NotIn", frozenset({labels[k]}))
              for k in _keys(term, "mismatchLabelKeys", where) if k in labels]
    if extra:
        selector = selector.with_requirements(extra)
    names = term.get("namespaces") or []
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise SelectorError(f"{where}.namespaces: must be a list of strings")
    raw_namespace_selector = term.get("namespaceSelector")
    namespace_selector = label_selector(raw_namespace_selector, f"{where}.namespaceSelector")
    namespaces = frozenset(names) if names or raw_namespace_selector is not None else frozenset({namespace})
    return AffinityTerm(selector, namespaces, topology_key, namespace_selector)


def _section(pod: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    affinity = (pod.get("spec") or {}).get("affinity") or {}
    section = affinity.get(kind) if isinstance(affinity, Mapping) else None
    return section if isinstance(section, Mapping) else {}


def _owner(pod: Mapping[str, Any]) -> tuple[str, Mapping[str, str]]:
    meta = pod.get("metadata") or {}
    return str(meta.get("namespace") or "default"), meta.get("labels") or _NO_LABELS


def required_terms(pod: Mapping[str, Any], kind: str) -> tuple[AffinityTerm, ...]:
    """The pod's required terms of ``kind`` (``podAffinity`` or ``podAntiAffinity``).
    Raises :class:`SelectorError` for a term Kubernetes would refuse."""
    raw = _section(pod, kind).get("requiredDuringSchedulingIgnoredDuringExecution") or []
    if not isinstance(raw, list):
        raise SelectorError(f"{kind}.requiredDuringSchedulingIgnoredDuringExecution: not a list")
    namespace, labels = _owner(pod)
    return tuple(_term(term, namespace, labels, f"{kind}.required[{n}]") for n, term in enumerate(raw))


def preferred_terms(pod: Mapping[str, Any], kind: str) -> tuple[tuple[int, AffinityTerm], ...]:
    """The pod's preferred terms of ``kind`` with their weights (1-100)."""
    raw = _section(pod, kind).get("preferredDuringSchedulingIgnoredDuringExecution") or []
    if not isinstance(raw, list):
        raise SelectorError(f"{kind}.preferredDuringSchedulingIgnoredDuringExecution: not a list")
    namespace, labels = _owner(pod)
    out = []
    for n, weighted in enumerate(raw):
        where = f"{kind}.preferred[{n}]"
        if not isinstance(weighted, Mapping):
            raise SelectorError(f"{where}: not an object")
        weight = weighted.get("weight")
        if not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= 100:
            raise SelectorError(f"{where}.weight: must be an integer from 1 to 100")
        out.append((weight, _term(weighted.get("podAffinityTerm"), namespace, labels, f"{where}.podAffinityTerm")))
    return tuple(out)


def matches_all(terms: Iterable[AffinityTerm], namespace: str, labels: Mapping[str, str],
                namespace_labels: NamespaceLabels) -> bool:
    for term in terms:
        if not term.matches(namespace, labels, namespace_labels):
            return False
    return True


def inter_pod_affinity(node_labels: Mapping[str, str],
                       affinity: Sequence[AffinityTerm], affinity_counts: TopologyCounts, self_affine: bool,
                       anti_affinity: Sequence[tuple[str, TopologyCounts]],
                       existing_anti: Iterable[tuple[str, TopologyCounts]]) -> str | None:
    """None when the node passes (see the module doc), else kube-scheduler's reason.

    - ``affinity_counts``: pods matching all of ``affinity`` per topology pair of each term's key;
      ``self_affine``: the incoming pod matches all of its own ``affinity`` terms;
    - ``anti_affinity``: per anti-affinity term of the pod, its topology key and the pods
      matching it per topology pair;
    - ``existing_anti``: per anti-affinity term of running pods that matches the incoming pod,
      its topology key and where its owners run (per topology pair).
    """
    if affinity:
        pods_exist = True
        for term in affinity:
            value = node_labels.get(term.topology_key)
            if value is None:
                return AFFINITY_MISMATCH
            if affinity_counts.get((term.topology_key, value), 0) <= 0:
                pods_exist = False
        if not pods_exist and (affinity_counts or not self_affine):
            return AFFINITY_MISMATCH
    for key, counts in anti_affinity:
        value = node_labels.get(key)
        if value is not None and counts.get((key, value), 0) > 0:
            return ANTI_AFFINITY_MISMATCH
    for key, counts in existing_anti:
        value = node_labels.get(key)
        if value is not None and counts.get((key, value), 0) > 0:
            return EXISTING_ANTI_AFFINITY_MISMATCH
    return None
