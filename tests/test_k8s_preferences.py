"""kube-scheduler's scores for a pod's preferred terms (k8s/pyscheduler_k8s/preferences.py), over
the cluster index's counts: preferred node affinity, preferred pod affinity and anti-affinity,
ScheduleAnyway spreading and PreferNoSchedule taints, each normalised as kube-scheduler
normalises it, and their weighted mean."""

from __future__ import annotations

from typing import Any

import pytest

from pyscheduler_k8s.cluster_index import ClusterIndex, PlacedPod, pod_constraints
from pyscheduler_k8s.nodes import NodeView
from pyscheduler_k8s.predicates import inclusion_passes, node_selector_term_matches, tolerations_tolerate
from pyscheduler_k8s.preferences import preference_scores, preferences_of
from pyscheduler_k8s.selectors import SelectorError

NODES = [NodeView("a1", labels={"zone": "a", "kubernetes.io/hostname": "a1"}),
         NodeView("a2", labels={"zone": "a", "kubernetes.io/hostname": "a2"},
                  taints=(("dedicated", "gpu", "PreferNoSchedule"),)),
         NodeView("b1", labels={"zone": "b", "kubernetes.io/hostname": "b1"}),
         NodeView("x", labels={"kubernetes.io/hostname": "x"})]


def _pod(uid: str, labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {"metadata": {"uid": uid, "name": uid, "namespace": "ns", "labels": labels}, "spec": spec}


def _index(*placed: tuple[str, dict[str, str], str]) -> ClusterIndex:
    index = ClusterIndex(node_passes=inclusion_passes)
    for node in NODES:
        index.set_node(node)
    for uid, labels, node_name in placed:
        index.place(PlacedPod(uid, "ns", labels, node_name))
    return index


def _scores(index: ClusterIndex, pod: dict[str, Any]) -> list[int]:
    uid = pod["metadata"]["uid"]
    return index.scores(uid, pod_constraints(pod), pod, NODES, node_selector_term_matches, tolerations_tolerate)


def test_preferred_node_affinity_sums_the_weights_of_matching_terms() -> None:
    pod = _pod("p", {}, affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 80, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}},
        {"weight": 20, "preference": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}}]}})
    # node affinity (weight 2): a1 20/100, a2 20/100, b1 100, x 0; taints (weight 3): a2 0, others 100.
    assert _scores(_index(), pod) == [(2 * 20 + 3 * 100) // 5, (2 * 20 + 0) // 5, (2 * 100 + 300) // 5, 300 // 5]


def test_preferred_pod_affinity_and_anti_affinity_count_matching_pods_in_the_domain() -> None:
    index = _index(("w1", {"app": "web"}, "a1"), ("w2", {"app": "web"}, "a2"), ("d1", {"app": "db"}, "b1"))
    near_web = _pod("p", {}, affinity={"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 50, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}}]}})
    # raw: a1 100, a2 100, b1 0, x 0 -> 100, 100, 0, 0; taints: a2 0.
    assert _scores(index, near_web) == [(200 + 300) // 5, 200 // 5, 300 // 5, 300 // 5]
    away_from_db = _pod("q", {}, affinity={"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "db"}},
                                           "topologyKey": "kubernetes.io/hostname"}}]}})
    # raw: a1 0, a2 0, b1 -10, x 0 -> 100, 100, 0, 100.
    assert _scores(index, away_from_db) == [(200 + 300) // 5, 200 // 5, 300 // 5, (200 + 300) // 5]


def test_schedule_anyway_spreading_prefers_the_least_crowded_domain() -> None:
    index = _index(("s1", {"app": "s"}, "a1"), ("s2", {"app": "s"}, "a2"))
    pod = _pod("p", {"app": "s"}, topologySpreadConstraints=[
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
         "labelSelector": {"matchLabels": {"app": "s"}}}])
    assert pod_constraints(pod).spread == ()  # ScheduleAnyway never filters
    scores = _scores(index, pod)
    # zone a holds 2, zone b none; x has no zone (0); taints as before.
    assert scores == [(0 + 300) // 5, 0, (200 + 300) // 5, 300 // 5]


def test_a_pod_without_preferences_scores_nothing_and_broken_ones_are_refused() -> None:
    assert _scores(_index(), _pod("p", {})) == [0, 0, 0, 0]
    assert preferences_of(_pod("p", {})).empty
    with pytest.raises(SelectorError):
        preferences_of(_pod("p", {}, affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 0, "preference": {}}]}}))
    assert preference_scores([], 3) == [0, 0, 0]
    # A plugin scoring every node alike adds nothing (no taints anywhere: no dilution).
    assert preference_scores([(2, [100, 0]), (3, [100, 100])], 2) == [100, 0]
