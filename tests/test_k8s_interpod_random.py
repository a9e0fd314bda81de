"""Random clusters against an independent checker (issue 30): pods with random required pod
affinity, anti-affinity and topology spread terms arrive on random nodes (and some leave, some
start terminating, some nodes change zone); for every pod and every node the cluster index's
answer (k8s/pyscheduler_k8s/cluster_index.py) must equal a brute-force reading of the rules over
the list of placed pods, written here without the filter code (its own selector matching, no
counters). Each pod is then placed on a node both accept, so after every placement no required
term of any placed pod is violated.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from pyscheduler_k8s.cluster_index import ClusterIndex, PlacedPod, pod_constraints
from pyscheduler_k8s.nodes import NodeView
from pyscheduler_k8s.predicates import inclusion_passes

KEYS = ("kubernetes.io/hostname", "zone", "rack")
APPS = ("a", "b", "c")
NAMESPACES = ("ns1", "ns2")


@dataclass
class Pod:
    uid: str
    namespace: str
    labels: dict[str, str]
    affinity: list[dict[str, Any]] = field(default_factory=list)
    anti: list[dict[str, Any]] = field(default_factory=list)
    spread: list[dict[str, Any]] = field(default_factory=list)
    node: str = ""
    terminating: bool = False

    def as_dict(self) -> dict[str, Any]:
        affinity: dict[str, Any] = {}
        if self.affinity:
            affinity["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": self.affinity}
        if self.anti:
            affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": self.anti}
        return {"metadata": {"uid": self.uid, "name": self.uid, "namespace": self.namespace, "labels": self.labels},
                "spec": {"affinity": affinity, "topologySpreadConstraints": self.spread}}


# -- the independent checker ------------------------------------------------------------------------

def _selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or ():
        value = labels.get(expression["key"])
        if expression["operator"] == "In" and value not in expression["values"]:
            return False
        if expression["operator"] == "NotIn" and value in expression["values"]:
            return False
    return True


def _term_selects(term: Mapping[str, Any], owner_namespace: str, pod: Pod) -> bool:
    namespaces = term.get("namespaces") or [owner_namespace]
    return pod.namespace in namespaces and _selects(term["labelSelector"], pod.labels)


def _same_domain(nodes: Mapping[str, dict[str, str]], a: str, b: str, key: str) -> bool:
    return key in nodes[a] and nodes[a].get(key) == nodes[b].get(key)


def oracle(pod: Pod, node: str, placed: list[Pod], nodes: Mapping[str, dict[str, str]]) -> bool:
    labels = nodes[node]
    # Affinity: every key on the node; a pod matching all terms in each term's domain, or none
    # matching all terms anywhere (on a node with the key) and the pod matching its own terms.
    if pod.affinity:
        if any(t["topologyKey"] not in labels for t in pod.affinity):
            return False
        matching = [q for q in placed if all(_term_selects(t, pod.namespace, q) for t in pod.affinity)]
        present = all(any(_same_domain(nodes, q.node, node, t["topologyKey"]) for q in matching) for t in pod.affinity)
        anywhere = any(t["topologyKey"] in nodes[q.node] for q in matching for t in pod.affinity)
        if not present and (anywhere or not all(_term_selects(t, pod.namespace, pod) for t in pod.affinity)):
            return False
    for term in pod.anti:
        if any(_same_domain(nodes, q.node, node, term["topologyKey"]) and _term_selects(term, pod.namespace, q)
               for q in placed):
            return False
    for q in placed:
        for term in q.anti:
            if _term_selects(term, q.namespace, pod) and _same_domain(nodes, q.node, node, term["topologyKey"]):
                return False
    keys = [c["topologyKey"] for c in pod.spread]
    for c in pod.spread:
        key = c["topologyKey"]
        if key not in labels:
            return False
        eligible = [n for n, l in nodes.items() if all(k in l for k in keys)]
        counts = {nodes[n][key]: 0 for n in eligible}
        for q in placed:
            if q.node in eligible and not q.terminating and q.namespace == pod.namespace \
                    and _selects(c["labelSelector"], q.labels):
                counts[nodes[q.node][key]] += 1
        least = min(counts.values()) if counts else 2**31 - 1
        if len(counts) < c.get("minDomains", 1):
            least = 0
        if counts.get(labels[key], 0) + int(_selects(c["labelSelector"], pod.labels)) - least > c["maxSkew"]:
            return False
    return True


# -- random pods and clusters ------------------------------------------------------------------------

def _node_labels(rng: random.Random, name: str) -> dict[str, str]:
    labels = {"kubernetes.io/hostname": name}
    if rng.random() < 0.9:
        labels["zone"] = rng.choice("xyz")
    if rng.random() < 0.7:
        labels["rack"] = rng.choice("pqrs")
    return labels


def _selector(rng: random.Random) -> dict[str, Any]:
    if rng.random() < 0.8:
        return {"matchLabels": {"app": rng.choice(APPS)}}
    return {"matchExpressions": [{"key": "tier", "operator": rng.choice(["In", "NotIn"]),
                                  "values": rng.sample(["web", "db"], rng.randint(1, 2))}]}


def _term(rng: random.Random) -> dict[str, Any]:
    term: dict[str, Any] = {"labelSelector": _selector(rng), "topologyKey": rng.choice(KEYS)}
    if rng.random() < 0.2:
        term["namespaces"] = rng.sample(NAMESPACES, rng.randint(1, 2))
    return term


def _random_pod(rng: random.Random, n: int) -> Pod:
    labels = {"app": rng.choice(APPS)}
    if rng.random() < 0.5:
        labels["tier"] = rng.choice(["web", "db"])
    pod = Pod(f"p{n}", rng.choice(NAMESPACES), labels)
    if rng.random() < 0.3:
        pod.affinity = [_term(rng) for _ in range(rng.randint(1, 2))]
    if rng.random() < 0.35:
        pod.anti = [_term(rng) for _ in range(rng.randint(1, 2))]
    if rng.random() < 0.35:
        pod.spread = [{"maxSkew": rng.randint(1, 2), "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
                       "labelSelector": _selector(rng), **({"minDomains": 4} if rng.random() < 0.2 else {})}
                      for key in rng.sample(KEYS, rng.randint(1, 2))]
    return pod


@pytest.mark.parametrize("seed", range(40))
def test_the_index_answers_as_the_rules_read(seed: int) -> None:
    rng = random.Random(seed)
    index = ClusterIndex(node_passes=inclusion_passes)
    nodes = {f"n{i}": _node_labels(rng, f"n{i}") for i in range(rng.randint(2, 8))}
    for name, labels in nodes.items():
        index.set_node(NodeView(name, labels=dict(labels)))
    placed: list[Pod] = []
    compared = 0
    for n in range(60):
        step = rng.random()
        if placed and step < 0.1:  # a pod leaves
            gone = placed.pop(rng.randrange(len(placed)))
            index.remove(gone.uid)
            index.untrack(gone.uid)
            continue
        if placed and step < 0.15:  # a pod starts terminating
            pod = rng.choice(placed)
            pod.terminating = True
            index.place(PlacedPod(pod.uid, pod.namespace, pod.labels, pod.node, True,
                                  pod_constraints(pod.as_dict()).anti_affinity))
            continue
        if step < 0.2:  # a node moves to another zone
            name = rng.choice(list(nodes))
            nodes[name] = _node_labels(rng, name)
            index.set_node(NodeView(name, labels=dict(nodes[name])))
            continue
        pod = _random_pod(rng, n)
        raw = pod.as_dict()
        constraints = pod_constraints(raw)
        index.track(pod.uid, constraints)
        accepted = []
        for name in nodes:
            want = oracle(pod, name, placed, nodes)
            got = index.check(pod.uid, constraints, raw, index.nodes[name])
            assert (got is None) == want, (seed, n, pod, name, got, nodes, placed)
            compared += 1
            if want:
                accepted.append(name)
        if not accepted:
            index.untrack(pod.uid)  # pending: it never lands
            continue
        pod.node = rng.choice(accepted)
        placed.append(pod)
        index.place(PlacedPod(pod.uid, pod.namespace, pod.labels, pod.node, False, constraints.anti_affinity))
    assert compared > 50


@pytest.mark.parametrize("seed", range(30))
def test_victims_counted_as_gone_answer_as_if_they_were_gone(seed: int) -> None:
    """Preemption's question (would the pod fit once these pods are gone) answered with the
    victims in place equals the answer after removing them."""
    rng = random.Random(1000 + seed)
    index = ClusterIndex(node_passes=inclusion_passes)
    nodes = {f"n{i}": _node_labels(rng, f"n{i}") for i in range(4)}
    for name, labels in nodes.items():
        index.set_node(NodeView(name, labels=dict(labels)))
    placed: list[Pod] = []
    for n in range(25):
        pod = _random_pod(rng, n)
        pod.node = rng.choice(list(nodes))
        placed.append(pod)
        index.place(PlacedPod(pod.uid, pod.namespace, pod.labels, pod.node, False,
                              pod_constraints(pod.as_dict()).anti_affinity))
    for k in range(20):
        pod = _random_pod(rng, 100 + k)
        raw = pod.as_dict()
        constraints = pod_constraints(raw)
        index.track(pod.uid, constraints)
        node = rng.choice(list(nodes))
        victims = [q for q in placed if q.node == node and rng.random() < 0.5]
        gone = frozenset(q.uid for q in victims)
        with_gone = index.check(pod.uid, constraints, raw, index.nodes[node], gone)
        remaining = [q for q in placed if q.uid not in gone]
        assert (with_gone is None) == oracle(pod, node, remaining, nodes), (seed, k)
        index.untrack(pod.uid)
