"""Conformance of the PodTopologySpread filter with kube-scheduler's own test tables.

Follows ``pkg/scheduler/framework/plugins/podtopologyspread/filtering_test.go`` of
kubernetes/kubernetes (commit e7827879dbc282e7f5103451dc63169e964b6bb7), functions
``TestSingleConstraint`` and ``TestMultipleConstraints`` (their minDomains and
nodeAffinityPolicy / nodeTaintsPolicy cases included): one row per Go case, the Go case name as
the pytest id (Go names two different cases of ``TestSingleConstraint`` "NodeAffinityPolicy
ignored with labelSelectors"; pytest numbers the duplicates), the pods and nodes translated into
Kubernetes-shaped dicts. The Go tables assert status codes only; they map as

- ``Success`` -> None;
- ``Unschedulable`` (``ErrReasonConstraintsNotMatch``) -> SKEW_EXCEEDED;
- ``UnschedulableAndUnresolvable`` (``ErrReasonNodeLabelNotMatch``) -> MISSING_LABEL.

As in the Go tests only this filter runs: a node the pod's node affinity or taints rule out may
still pass here (the Go comments "in real case, it's ..." mark those), the node inclusion
policies only decide which nodes count towards the domains.

Every case of the two tables is taken. Notes:

- Go's ``enableNodeInclusionPolicy`` flag (the feature gate, GA and always on since v1.33) is
  always on here; the cases run with it off set no policy, so the defaults (nodeAffinityPolicy
  Honor, nodeTaintsPolicy Ignore) apply either way.
- The other test functions of the file test kube-scheduler's PreFilter state and its AddPod /
  RemovePod bookkeeping, which has no counterpart here beyond what these filter outcomes cover.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import pytest

from pyscheduler_k8s.cluster_index import ClusterIndex, PlacedPod, pod_constraints
from pyscheduler_k8s.nodes import NodeView
from pyscheduler_k8s.predicates import inclusion_passes
from pyscheduler_k8s.spread import MISSING_LABEL, SKEW_EXCEEDED

Pod = dict[str, Any]
Taint = tuple[str, str, str]

OK: Final = None
SKEW: Final = SKEW_EXCEEDED
LABEL: Final = MISSING_LABEL

#: The Go file's ``taints``: node.kubernetes.io/unschedulable:NoSchedule.
UNSCHEDULABLE: Final[tuple[Taint, ...]] = (("node.kubernetes.io/unschedulable", "", "NoSchedule"),)
FOO: Final = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR: Final = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}

# -- builders (the shape of st.MakePod() / st.MakeNode(), as Kubernetes JSON) ----------------------


def spread(max_skew: int, key: str, selector: dict[str, Any] | None, *, min_domains: int | None = None,
           node_affinity_policy: str | None = None, node_taints_policy: str | None = None) -> dict[str, Any]:
    """A ``DoNotSchedule`` constraint (every constraint of these tables is one)."""
    out: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule"}
    if selector is not None:
        out["labelSelector"] = selector
    if min_domains is not None:
        out["minDomains"] = min_domains
    if node_affinity_policy is not None:
        out["nodeAffinityPolicy"] = node_affinity_policy
    if node_taints_policy is not None:
        out["nodeTaintsPolicy"] = node_taints_policy
    return out


def node_affinity(key: str, operator: str, *values: str) -> dict[str, Any]:
    """A required node affinity of one term with one match expression."""
    return {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": operator, "values": list(values)}]}]}}


def pod(*labels: str, namespace: str = "", node: str = "", terminating: bool = False,
        constraints: Sequence[dict[str, Any]] = (), node_selector: Mapping[str, str] | None = None,
        affinity: dict[str, Any] | None = None) -> Pod:
    """A pod with each of ``labels`` set to "" (as ``.Label(k, "")``)."""
    meta: dict[str, Any] = {"namespace": namespace, "labels": dict.fromkeys(labels, "")}
    if terminating:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    spec: dict[str, Any] = {}
    if node:
        spec["nodeName"] = node
    if constraints:
        spec["topologySpreadConstraints"] = list(constraints)
    if node_selector is not None:
        spec["nodeSelector"] = dict(node_selector)
    if affinity is not None:
        spec["affinity"] = {"nodeAffinity": affinity}
    return {"metadata": meta, "spec": spec}


def node(name: str, *, zone: str | None = None, taints: tuple[Taint, ...] = (), **labels: str) -> NodeView:
    """A node labelled ``zone`` (when given) and ``labels``; ``node=...`` is the "node" label."""
    all_labels = dict(labels)
    if zone is not None:
        all_labels["zone"] = zone
    return NodeView(name, labels=all_labels, taints=taints)


def zn(name: str, zone: str, *, taints: tuple[Taint, ...] = (), foo: bool = False) -> NodeView:
    """The tables' usual node: labels zone and node (= its name), plus foo="" when ``foo``."""
    extra = {"foo": ""} if foo else {}
    return node(name, zone=zone, taints=taints, node=name, **extra)


def n(name: str, *, taints: tuple[Taint, ...] = (), foo: bool = False) -> NodeView:
    """A node labelled node (= its name) only, plus foo="" when ``foo``."""
    extra = {"foo": ""} if foo else {}
    return node(name, taints=taints, node=name, **extra)


def on(node_name: str, *labels: str, count: int = 1, namespace: str = "") -> list[Pod]:
    """``count`` existing pods on ``node_name`` with ``labels``."""
    return [pod(*labels, node=node_name, namespace=namespace) for _ in range(count)]


def statuses(incoming: Pod, nodes: Sequence[NodeView], existing: Sequence[Pod], *,
             track_first: bool = False) -> dict[str, str | None]:
    """The filter's answer per node for ``incoming``, over ``nodes`` and the ``existing`` pods
    (each with ``spec.nodeName``; ``metadata.deletionTimestamp`` marks a terminating one).
    ``track_first``: the incoming pod's counters are made before the pods are placed."""
    index = ClusterIndex(node_passes=inclusion_passes)
    for view in nodes:
        index.set_node(view)
    constraints = pod_constraints(incoming)
    if track_first:
        index.track("incoming", constraints)
    for i, other in enumerate(existing):
        theirs = pod_constraints(other)
        index.place(PlacedPod(f"existing-{i}", theirs.namespace, theirs.labels, other["spec"]["nodeName"],
                              terminating="deletionTimestamp" in other["metadata"],
                              anti_affinity=theirs.anti_affinity))
    if not track_first:
        index.track("incoming", constraints)
    return {view.name: index.check("incoming", constraints, incoming, view) for view in nodes}


# -- TestSingleConstraint ----------------------------------------------------------------------------

FOUR_ZONED: Final = [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2"), zn("node-y", "zone2")]
#: Pods spread over the four nodes as 2/1/0/3.
SPREAD_2103: Final = [*on("node-a", "foo", count=2), *on("node-b", "foo"), *on("node-y", "foo", count=3)]
#: Three nodes labelled only "node", pods 2/2/1.
THREE_NODES: Final = [n("node-a"), n("node-b"), n("node-c")]
SPREAD_221: Final = [*on("node-a", "foo", count=2), *on("node-b", "foo", count=2), *on("node-c", "foo")]
#: Nodes a, b, x with foo="", y without; pods 1/1/0/1.
FOO_ON_ABX: Final = [n("node-a", foo=True), n("node-b", foo=True), n("node-x", foo=True), n("node-y")]
FOO_ON_ABX_TAINTED_Y: Final = [n("node-a", foo=True), n("node-b", foo=True), n("node-x", foo=True),
                               n("node-y", taints=UNSCHEDULABLE)]
SPREAD_1101: Final = [*on("node-a", "foo"), *on("node-b", "foo"), *on("node-y", "foo")]

SINGLE: Final[list[tuple[str, Pod, list[NodeView], list[Pod], dict[str, str | None]]]] = [
    ("no existing pods",
     pod("foo", constraints=[spread(1, "zone", FOO)]), FOUR_ZONED, [],
     {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK}),
    ("no existing pods, incoming pod doesn't match itself",
     pod("foo", constraints=[spread(1, "zone", BAR)]), FOUR_ZONED, [],
     {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK}),
    ("existing pods in a different namespace do not count",
     pod("foo", constraints=[spread(1, "zone", FOO)]), FOUR_ZONED,
     [*on("node-a", "foo", namespace="ns1"), *on("node-a", "foo", namespace="ns2"),
      *on("node-x", "foo"), *on("node-y", "foo")],
     {"node-a": OK, "node-b": OK, "node-x": SKEW, "node-y": SKEW}),
    ("existing pods do not match null selector",
     pod("foo", constraints=[spread(1, "zone", None)]), FOUR_ZONED,
     [*on("node-x", "foo"), *on("node-y", "foo")],
     {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK}),
    ("pods spread across zones as 3/3, all nodes fit",
     pod("foo", constraints=[spread(1, "zone", FOO)]), FOUR_ZONED, SPREAD_2103,
     {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK}),
    ("pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
     pod("foo", constraints=[spread(1, "zone", FOO)]),
     [zn("node-a", "zone1"), node("node-b", zon="zone1", node="node-b"), zn("node-x", "zone2"),
      zn("node-y", "zone2")],
     [*on("node-a", "foo"), *on("node-b", "foo"), *on("node-x", "foo"), *on("node-y", "foo")],
     {"node-a": OK, "node-b": LABEL, "node-x": SKEW, "node-y": SKEW}),
    ("pod cannot be scheduled as all nodes don't have label 'rack'",
     pod("foo", constraints=[spread(1, "rack", FOO)]), [zn("node-a", "zone1"), zn("node-x", "zone2")], [],
     {"node-a": LABEL, "node-x": LABEL}),
    ("pods spread across nodes as 2/1/0/3, only node-x fits",
     pod("foo", constraints=[spread(1, "node", FOO)]), FOUR_ZONED, SPREAD_2103,
     {"node-a": SKEW, "node-b": SKEW, "node-x": OK, "node-y": SKEW}),
    ("pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
     pod("foo", constraints=[spread(2, "node", FOO)]), FOUR_ZONED, SPREAD_2103,
     {"node-a": SKEW, "node-b": OK, "node-x": OK, "node-y": SKEW}),
    ("pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
     pod("bar", constraints=[spread(1, "node", FOO)]), FOUR_ZONED, SPREAD_2103,
     {"node-a": SKEW, "node-b": OK, "node-x": OK, "node-y": SKEW}),
    ("incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
     pod("foo", constraints=[spread(1, "node", FOO)], affinity=node_affinity("node", "In", "node-a", "node-y")),
     FOUR_ZONED, SPREAD_2103,
     {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": SKEW}),
    ("terminating Pods should be excluded",
     pod("foo", constraints=[spread(1, "node", FOO)]), [n("node-a"), n("node-b")],
     [pod("foo", node="node-a", terminating=True), *on("node-b", "foo")],
     {"node-a": OK, "node-b": SKEW}),
    ("incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits",
     pod("foo", constraints=[spread(1, "zone", FOO)], affinity=node_affinity("node", "NotIn", "node-b")),
     FOUR_ZONED, [*on("node-b", "foo", count=2), *on("node-y", "foo")],
     {"node-a": OK, "node-b": OK, "node-x": SKEW, "node-y": SKEW}),
    ("pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < minDomains, then the third node "
     "fits",
     pod("foo", constraints=[spread(2, "node", FOO, min_domains=4)]), THREE_NODES, SPREAD_221,
     {"node-a": SKEW, "node-b": SKEW, "node-c": OK}),
    ("pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > minDomains, then the all nodes "
     "fit",
     pod("foo", constraints=[spread(2, "node", FOO, min_domains=2)]), THREE_NODES, SPREAD_221,
     {"node-a": OK, "node-b": OK, "node-c": OK}),
    ("pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, then the third and fourth "
     "nodes fit",
     pod("foo", constraints=[spread(2, "zone", FOO, min_domains=3)]), FOUR_ZONED,
     [*on("node-a", "foo"), *on("node-b", "foo"), *on("node-y", "foo")],
     {"node-a": SKEW, "node-b": SKEW, "node-x": OK, "node-y": OK}),
    ("pods spread across zone as 2/1, maxSkew is 2 and the number of domains > minDomains, then the all nodes fit",
     pod("foo", constraints=[spread(2, "zone", FOO, min_domains=1)]), FOUR_ZONED,
     [*on("node-a", "foo"), *on("node-b", "foo"), *on("node-y", "foo")],
     {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK}),
    ("NodeAffinityPolicy honored with labelSelectors",
     pod("foo", constraints=[spread(1, "node", FOO)], node_selector={"foo": ""}), FOO_ON_ABX, SPREAD_1101,
     {"node-a": SKEW, "node-b": SKEW, "node-x": OK, "node-y": OK}),
    ("NodeAffinityPolicy ignored with labelSelectors",
     pod("foo", constraints=[spread(1, "node", FOO, node_affinity_policy="Ignore")], node_selector={"foo": ""}),
     FOO_ON_ABX, SPREAD_1101,
     {"node-a": SKEW, "node-b": SKEW, "node-x": OK, "node-y": SKEW}),
    ("NodeAffinityPolicy honored with nodeAffinity",
     pod("foo", constraints=[spread(1, "node", FOO)], affinity=node_affinity("foo", "In", "")),
     FOO_ON_ABX, SPREAD_1101,
     {"node-a": SKEW, "node-b": SKEW, "node-x": OK, "node-y": OK}),
    ("NodeAffinityPolicy ignored with labelSelectors",  # sic: Go's name; this one ignores a nodeAffinity
     pod("foo", constraints=[spread(1, "node", FOO, node_affinity_policy="Ignore")],
         affinity=node_affinity("foo", "In", "")),
     FOO_ON_ABX, SPREAD_1101,
     {"node-a": SKEW, "node-b": SKEW, "node-x": OK, "node-y": SKEW}),
    ("NodeTaintsPolicy honored",
     pod("foo", constraints=[spread(1, "node", FOO, node_taints_policy="Honor")]), FOO_ON_ABX_TAINTED_Y, SPREAD_1101,
     {"node-a": SKEW, "node-b": SKEW, "node-x": OK, "node-y": OK}),
    ("NodeTaintsPolicy ignored",
     pod("foo", constraints=[spread(1, "node", FOO)]), FOO_ON_ABX_TAINTED_Y, SPREAD_1101,
     {"node-a": SKEW, "node-b": SKEW, "node-x": OK, "node-y": SKEW}),
]


@pytest.mark.parametrize(("incoming", "nodes", "existing", "want"), [case[1:] for case in SINGLE],
                         ids=[case[0] for case in SINGLE])
def test_single_constraint(incoming: Pod, nodes: list[NodeView], existing: list[Pod],
                           want: dict[str, str | None]) -> None:
    assert statuses(incoming, nodes, existing) == want
    assert statuses(incoming, nodes, existing, track_first=True) == want


# -- TestMultipleConstraints -------------------------------------------------------------------------

ZONE_AND_NODE: Final = [spread(1, "zone", FOO), spread(1, "node", FOO)]
ZONE_FOO_NODE_BAR: Final = [spread(1, "zone", FOO), spread(1, "node", BAR)]

MULTIPLE: Final[list[tuple[str, Pod, list[NodeView], list[Pod], dict[str, str | None]]]] = [
    ("two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
     pod("foo", constraints=ZONE_AND_NODE), FOUR_ZONED, SPREAD_2103,
     {"node-a": SKEW, "node-b": SKEW, "node-x": OK, "node-y": SKEW}),
    ("two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
     pod("foo", constraints=ZONE_AND_NODE), FOUR_ZONED, [*SPREAD_2103, *on("node-y", "foo")],
     {"node-a": SKEW, "node-b": SKEW, "node-x": SKEW, "node-y": SKEW}),
    ("Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
     pod("foo", "bar", constraints=ZONE_FOO_NODE_BAR), FOUR_ZONED, [*on("node-a", "foo"), *on("node-y", "bar")],
     {"node-a": SKEW, "node-b": SKEW, "node-x": OK, "node-y": SKEW}),
    ("Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
     pod("foo", "bar", constraints=ZONE_FOO_NODE_BAR), FOUR_ZONED,
     [*on("node-a", "foo"), *on("node-x", "bar"), *on("node-y", "bar")],
     {"node-a": SKEW, "node-b": SKEW, "node-x": SKEW, "node-y": SKEW}),
    ("Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
     pod("foo", "bar", constraints=ZONE_FOO_NODE_BAR), FOUR_ZONED,
     [*on("node-a", "foo"), *on("node-a", "foo", "bar"), *on("node-y", "foo"), *on("node-y", "foo", "bar"),
      *on("node-y", "foo")],
     {"node-a": SKEW, "node-b": OK, "node-x": SKEW, "node-y": SKEW}),
    ("Constraints hold different labelSelectors but pod doesn't match itself on 'zone' constraint",
     pod("bar", constraints=ZONE_FOO_NODE_BAR), FOUR_ZONED,
     [*on("node-a", "foo"), *on("node-x", "bar"), *on("node-y", "bar")],
     {"node-a": OK, "node-b": OK, "node-x": SKEW, "node-y": SKEW}),
    ("two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1, 1/0/0/1]",
     pod("foo", constraints=ZONE_AND_NODE),
     [zn("node-a", "zone1"), zn("node-b", "zone1"), node("node-x", zone="zone2"), zn("node-y", "zone2")],
     [*on("node-a", "foo"), *on("node-y", "foo")],
     {"node-a": SKEW, "node-b": OK, "node-x": LABEL, "node-y": SKEW}),
    ("two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
     pod("foo", constraints=[spread(1, "zone", FOO), spread(1, "node", FOO, node_affinity_policy="Ignore")],
         node_selector={"foo": ""}),
     [zn("node-a", "zone1", foo=True), zn("node-b", "zone1", foo=True), zn("node-x", "zone2", foo=True),
      zn("node-y", "zone2")],
     SPREAD_1101,
     {"node-a": SKEW, "node-b": SKEW, "node-x": OK, "node-y": SKEW}),
    ("two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
     pod("foo", constraints=[spread(1, "zone", FOO, node_taints_policy="Honor"), spread(1, "node", FOO)]),
     [zn("node-a", "zone1", foo=True), zn("node-b", "zone1", foo=True), zn("node-x", "zone2", foo=True),
      zn("node-y", "zone2", taints=UNSCHEDULABLE)],
     SPREAD_1101,
     {"node-a": SKEW, "node-b": SKEW, "node-x": OK, "node-y": SKEW}),
    ("two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
     pod("foo", constraints=ZONE_AND_NODE, node_selector={"foo": ""}),
     [zn("node-a", "zone1", foo=True), zn("node-b", "zone1"), zn("node-x", "zone2", foo=True),
      zn("node-y", "zone2", foo=True, taints=UNSCHEDULABLE)],
     SPREAD_1101,
     {"node-a": SKEW, "node-b": OK, "node-x": OK, "node-y": SKEW}),
    ("two node inclusion Constraints, zone: honor/honor, node: ignore/ignore",
     pod("foo", constraints=[spread(1, "zone", FOO, node_taints_policy="Honor"),
                             spread(1, "node", FOO, node_affinity_policy="Ignore")],
         node_selector={"foo": ""}),
     [zn("node-a", "zone1", foo=True), zn("node-b", "zone1"), zn("node-x", "zone2", foo=True),
      zn("node-y", "zone2", foo=True, taints=UNSCHEDULABLE)],
     SPREAD_1101,
     {"node-a": SKEW, "node-b": SKEW, "node-x": OK, "node-y": SKEW}),
]


@pytest.mark.parametrize(("incoming", "nodes", "existing", "want"), [case[1:] for case in MULTIPLE],
                         ids=[case[0] for case in MULTIPLE])
def test_multiple_constraints(incoming: Pod, nodes: list[NodeView], existing: list[Pod],
                              want: dict[str, str | None]) -> None:
    assert statuses(incoming, nodes, existing) == want
    assert statuses(incoming, nodes, existing, track_first=True) == want
