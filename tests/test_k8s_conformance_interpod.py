"""Conformance of the InterPodAffinity filter with kube-scheduler's own test tables.

Follows ``pkg/scheduler/framework/plugins/interpodaffinity/filtering_test.go`` of
kubernetes/kubernetes (commit 072825f9a367e9ca0f73f91830945f1b7f46e0d9), functions
``TestRequiredAffinitySingleNode`` and ``TestRequiredAffinityMultipleNodes``: one row per Go
case, the Go case name as the pytest id, the pods, nodes and namespaces translated into
Kubernetes-shaped dicts, and the expected statuses per node mapped as

- ``nil`` (and a PreFilter ``Skip``, after which kube-scheduler does not run the filter: the
  node passes) -> None;
- ``Unschedulable`` / ``UnschedulableAndUnresolvable`` with ``ErrReasonAffinityRulesNotMatch``,
  ``ErrReasonAntiAffinityRulesNotMatch``, ``ErrReasonExistingAntiAffinityRulesNotMatch`` ->
  AFFINITY_MISMATCH, ANTI_AFFINITY_MISMATCH, EXISTING_ANTI_AFFINITY_MISMATCH;
- a PreFilter ``UnschedulableAndUnresolvable`` for a selector that does not parse -> REFUSED
  (:func:`pod_constraints` raises :class:`SelectorError`).

Go's default namespace ``""`` is ours ``"default"`` (the parser maps an empty namespace there),
for the incoming and the existing pods alike, so the namespace semantics are the same.

Cases not taken as they are (everything else in the two tables is taken):

- Deliberate deviation, asserted as REFUSED: "Does not satisfy the PodAffinity with
  labelSelector because of diff Namespace" and "Doesn't satisfy the PodAffinity because of
  unmatching labelSelector with the existing pod" give a required term no ``topologyKey``. Our
  parser refuses such a pod (SelectorError) where kube-scheduler lets it through to the filter
  and fails every node (no node has the label ""). The API server rejects an empty topologyKey
  in a required term, so no such pod exists in a cluster; either way the pod is placed nowhere.
- The other test functions of the file are not filter tables (PreFilter state bookkeeping,
  ``getIncomingAffinityAntiAffinityCounts``, Clone): they test kube-scheduler's internal state,
  which has no counterpart here beyond what these filter outcomes already cover.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import pytest

from pyscheduler_k8s.affinity import AFFINITY_MISMATCH, ANTI_AFFINITY_MISMATCH, EXISTING_ANTI_AFFINITY_MISMATCH
from pyscheduler_k8s.cluster_index import ClusterIndex, PlacedPod, pod_constraints
from pyscheduler_k8s.nodes import NodeView
from pyscheduler_k8s.predicates import inclusion_passes
from pyscheduler_k8s.selectors import SelectorError

Pod = dict[str, Any]
Term = dict[str, Any]
Node = tuple[str, dict[str, str]]

#: The pod is refused (kube-scheduler: PreFilter error), see the module doc.
REFUSED: Final = "refused"
AFF: Final = AFFINITY_MISMATCH
ANTI: Final = ANTI_AFFINITY_MISMATCH
EXISTING: Final = EXISTING_ANTI_AFFINITY_MISMATCH

# -- builders (the shape of st.MakePod() & co., as Kubernetes JSON) ------------------------------


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def term(topology_key: str | None, *expressions: dict[str, Any], namespaces: Sequence[str] | None = None,
         namespace_selector: dict[str, Any] | None = None) -> Term:
    """A PodAffinityTerm; ``topology_key`` None leaves the field out (Go's zero value)."""
    out: Term = {"labelSelector": {"matchExpressions": list(expressions)}}
    if topology_key is not None:
        out["topologyKey"] = topology_key
    if namespaces is not None:
        out["namespaces"] = list(namespaces)
    if namespace_selector is not None:
        out["namespaceSelector"] = namespace_selector
    return out


def t_in(key: str, topology_key: str, *values: str) -> Term:
    return term(topology_key, expr(key, "In", *values))


def t_not_in(key: str, topology_key: str, *values: str) -> Term:
    return term(topology_key, expr(key, "NotIn", *values))


def t_exists(key: str, topology_key: str) -> Term:
    return term(topology_key, expr(key, "Exists"))


def pod(labels: Mapping[str, str] | None = None, *, namespace: str = "", node: str = "",
        affinity: Sequence[Term] = (), anti: Sequence[Term] = ()) -> Pod:
    spec: dict[str, Any] = {}
    if node:
        spec["nodeName"] = node
    if affinity or anti:
        spec["affinity"] = {
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": list(affinity)},
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": list(anti)},
        }
    return {"metadata": {"namespace": namespace, "labels": dict(labels or {})}, "spec": spec}


def statuses(incoming: Pod, nodes: Sequence[Node], existing: Sequence[Pod],
             namespaces: Mapping[str, Mapping[str, str]], *, track_first: bool = False) -> dict[str, str | None]:
    """The filter's answer per node for ``incoming``, over a cluster of ``nodes`` (name, labels),
    ``existing`` pods (each with ``spec.nodeName``) and ``namespaces`` (name -> labels).
    ``track_first``: the incoming pod's counters are made before the pods are placed (so they
    are kept up to date one pod at a time rather than counted in one pass)."""
    index = ClusterIndex(node_passes=inclusion_passes)
    views = [NodeView(name, labels=dict(labels)) for name, labels in nodes]
    for view in views:
        index.set_node(view)
    for name, labels in namespaces.items():
        index.set_namespace(name, labels)
    constraints = pod_constraints(incoming)
    if track_first:
        index.track("incoming", constraints)
    for n, other in enumerate(existing):
        theirs = pod_constraints(other)
        index.place(PlacedPod(f"existing-{n}", theirs.namespace, theirs.labels, other["spec"]["nodeName"],
                              anti_affinity=theirs.anti_affinity))
    if not track_first:
        index.track("incoming", constraints)
    return {view.name: index.check("incoming", constraints, incoming, view) for view in views}


def assert_statuses(incoming: Pod, nodes: Sequence[Node], existing: Sequence[Pod],
                    namespaces: Mapping[str, Mapping[str, str]], want: Sequence[str | None] | str) -> None:
    if want == REFUSED:
        with pytest.raises(SelectorError):
            pod_constraints(incoming)
        return
    expected = dict(zip((name for name, _ in nodes), want, strict=True))
    assert statuses(incoming, nodes, existing, namespaces) == expected
    assert statuses(incoming, nodes, existing, namespaces, track_first=True) == expected


# -- TestRequiredAffinitySingleNode ------------------------------------------------------------------

SERVICE: Final = {"service": "securityscan"}
SECURITY: Final = {"security": "S1"}
NODE1: Final[Node] = ("node1", {"region": "r1", "zone": "z11"})
#: The Go package's ``namespaces`` informer objects.
TEAM_NAMESPACES: Final = {
    "subteam1.team1": {"team": "team1"},
    "subteam2.team1": {"team": "team1"},
    "subteam1.team2": {"team": "team2"},
    "subteam2.team2": {"team": "team2"},
}
#: st.MakePod().Labels(podLabel).Node("node1")
ON_NODE1: Final = pod(SERVICE, node="node1")
TEAM1: Final = {"matchExpressions": [expr("team", "In", "team1")]}

SINGLE_NODE: Final[list[tuple[str, Pod, list[Pod], str | None]]] = [
    ("A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing pods",
     pod(), [], None),
    ("satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that matches "
     "the existing pod",
     pod(SECURITY, affinity=[t_in("service", "region", "securityscan", "value2")]), [ON_NODE1], None),
    ("satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using not in operator in "
     "labelSelector that matches the existing pod",
     pod(SECURITY, affinity=[t_not_in("service", "region", "securityscan3", "value3")]), [ON_NODE1], None),
    ("Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
     pod(SECURITY, affinity=[term(None, expr("service", "In", "securityscan", "value2"),
                                  namespaces=["DiffNameSpace"])]),
     [pod(SERVICE, namespace="ns", node="node1")],
     REFUSED),  # kube: AFF (empty topologyKey, see the module doc)
    ("Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
     pod(SERVICE, affinity=[t_in("service", "", "antivirusscan", "value2")]), [ON_NODE1],
     REFUSED),  # kube: AFF (empty topologyKey, see the module doc)
    ("satisfies the PodAffinity with different label Operators in multiple RequiredDuringSchedulingIgnoredDuringExecution ",
     pod(SECURITY, affinity=[
         term("region", expr("service", "Exists"), expr("wrongkey", "DoesNotExist")),
         term("region", expr("service", "In", "securityscan"), expr("service", "NotIn", "WrongValue")),
     ]), [ON_NODE1], None),
    ("The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot schedule onto the node "
     "because one of the matchExpression item don't match.",
     pod(SECURITY, affinity=[
         term("region", expr("service", "Exists"), expr("wrongkey", "DoesNotExist")),
         term("region", expr("service", "In", "securityscan2"), expr("service", "NotIn", "WrongValue")),
     ]), [ON_NODE1], AFF),
    ("satisfies the PodAffinity and PodAntiAffinity with the existing pod",
     pod(SECURITY, affinity=[t_in("service", "region", "securityscan", "value2")],
         anti=[t_in("service", "node", "antivirusscan", "value2")]),
     [ON_NODE1], None),
    ("satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the existing pod",
     pod(SECURITY, affinity=[t_in("service", "region", "securityscan", "value2")],
         anti=[t_in("service", "node", "antivirusscan", "value2")]),
     [pod(SERVICE, node="node1", anti=[t_in("service", "node", "antivirusscan", "value2")])], None),
    ("satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
     pod(SECURITY, affinity=[t_in("service", "region", "securityscan", "value2")],
         anti=[t_in("service", "zone", "securityscan", "value2")]),
     [ON_NODE1], ANTI),
    ("satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with the existing pod",
     pod(SERVICE, affinity=[t_in("service", "region", "securityscan", "value2")],
         anti=[t_in("service", "node", "antivirusscan", "value2")]),
     [pod(SERVICE, node="node1", anti=[t_in("service", "zone", "securityscan", "value2")])], EXISTING),
    ("pod matches its own Label in PodAffinity and that matches the existing pod Labels",
     pod(SERVICE, affinity=[t_not_in("service", "region", "securityscan", "value2")]),
     [pod(SERVICE, node="node2")], AFF),
    ("verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. doesn't "
     "satisfy PodAntiAffinity symmetry with the existing pod",
     pod(SERVICE), [pod(SERVICE, node="node1", anti=[t_in("service", "zone", "securityscan", "value2")])], EXISTING),
    ("verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. satisfy "
     "PodAntiAffinity symmetry with the existing pod",
     pod(SERVICE), [pod(SERVICE, node="node1", anti=[t_not_in("service", "zone", "securityscan", "value2")])],
     None),  # kube: PreFilter Skip
    ("satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity symmetry with incoming pod",
     pod(SERVICE, anti=[t_exists("service", "region"), t_exists("security", "region")]),
     [pod(SECURITY, node="node1", anti=[t_exists("security", "zone")])], ANTI),
    ("PodAntiAffinity symmetry check a1: incoming pod and existing pod partially match each other on AffinityTerms",
     pod(SERVICE, anti=[t_exists("service", "zone"), t_exists("security", "zone")]),
     [pod(SECURITY, node="node1", anti=[t_exists("security", "zone")])], ANTI),
    ("PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match each other on AffinityTerms",
     pod(SECURITY, anti=[t_exists("security", "zone")]),
     [pod(SERVICE, node="node1", anti=[t_exists("service", "zone"), t_exists("security", "zone")])], EXISTING),
    ("PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match each other on AffinityTerms",
     pod({"abc": "", "xyz": ""}, anti=[t_exists("abc", "zone"), t_exists("def", "zone")]),
     [pod({"def": "", "xyz": ""}, node="node1", anti=[t_exists("abc", "zone"), t_exists("def", "zone")])], ANTI),
    ("PodAntiAffinity symmetry check b2: incoming pod and existing pod partially match each other on AffinityTerms",
     pod({"def": "", "xyz": ""}, anti=[t_exists("abc", "zone"), t_exists("def", "zone")]),
     [pod({"abc": "", "xyz": ""}, node="node1", anti=[t_exists("abc", "zone"), t_exists("def", "zone")])], ANTI),
    ("PodAffinity fails PreFilter with an invalid affinity label syntax",
     pod(SERVICE, affinity=[t_in("service", "region", "{{.bad-value.}}"),
                            t_in("service", "node", "antivirusscan", "value2")]),
     [], REFUSED),
    ("PodAntiAffinity fails PreFilter with an invalid antiaffinity label syntax",
     pod(SERVICE, affinity=[t_in("service", "region", "foo"), t_in("service", "node", "{{.bad-value.}}")]),
     [], REFUSED),
    ("affinity with NamespaceSelector",
     pod(SECURITY, affinity=[term("region", expr("service", "In", "securityscan", "value2"),
                                  namespace_selector=TEAM1)]),
     [pod(SERVICE, namespace="subteam1.team1", node="node1")], None),
    ("affinity with non-matching NamespaceSelector",
     pod(SECURITY, affinity=[term("region", expr("service", "In", "securityscan", "value2"),
                                  namespace_selector=TEAM1)]),
     [pod(SERVICE, namespace="subteam1.team2", node="node1")], AFF),
    ("anti-affinity with matching NamespaceSelector",
     pod(SECURITY, namespace="subteam1.team1",
         anti=[term("zone", expr("service", "In", "securityscan", "value2"), namespace_selector=TEAM1)]),
     [pod(SERVICE, namespace="subteam2.team1", node="node1")], ANTI),
    ("anti-affinity with matching all NamespaceSelector",
     pod(SECURITY, namespace="subteam1.team1",
         anti=[term("zone", expr("service", "In", "securityscan", "value2"), namespace_selector={})]),
     [pod(SERVICE, namespace="subteam2.team1", node="node1")], ANTI),
    ("anti-affinity with non-matching NamespaceSelector",
     pod(SECURITY, namespace="subteam1.team1",
         anti=[term("zone", expr("service", "In", "securityscan", "value2"), namespace_selector=TEAM1)]),
     [pod(SERVICE, namespace="subteam1.team2", node="node1")], None),
]


@pytest.mark.parametrize(("incoming", "existing", "want"), [case[1:] for case in SINGLE_NODE],
                         ids=[case[0] for case in SINGLE_NODE])
def test_required_affinity_single_node(incoming: Pod, existing: list[Pod], want: str | None) -> None:
    assert_statuses(incoming, [NODE1], existing, TEAM_NAMESPACES, REFUSED if want == REFUSED else [want])


# -- TestRequiredAffinityMultipleNodes ---------------------------------------------------------------

RG_CHINA: Final = {"region": "China"}
RG_CHINA_AZ1: Final = {"region": "China", "az": "az1"}
RG_INDIA: Final = {"region": "India"}


def rzh(name: str, zone: str) -> Node:
    """A node labelled region r1, the zone, and hostname = its name."""
    return name, {"region": "r1", "zone": zone, "hostname": name}


MULTIPLE_NODES: Final[list[tuple[str, Pod, list[Pod], list[Node], list[str | None]]]] = [
    ("A pod can be scheduled onto all the nodes that have the same topology key & label value with one of them has "
     "an existing pod that matches the affinity rules",
     pod(affinity=[t_in("foo", "region", "bar")]),
     [pod({"foo": "bar"}, node="node1")],
     [("node1", RG_CHINA), ("node2", RG_CHINA_AZ1), ("node3", RG_INDIA)],
     [None, None, AFF]),
    ("The affinity rule is to schedule all of the pods of this collection to the same zone. The first pod of the "
     "collection should not be blocked from being scheduled onto any node, even there's no existing pod that "
     "matches the rule anywhere.",
     pod({"foo": "bar", "service": "securityscan"},
         affinity=[t_in("foo", "zone", "bar"), t_in("service", "zone", "securityscan")]),
     [pod({"foo": "bar"}, node="nodeA")],
     [("nodeA", {"zone": "az1", "hostname": "h1"}), ("nodeB", {"zone": "az2", "hostname": "h2"})],
     [None, None]),
    ("The first pod of the collection can only be scheduled on nodes labelled with the requested topology keys",
     pod({"foo": "bar", "service": "securityscan"},
         affinity=[t_in("foo", "zone", "bar"), t_in("service", "zone", "securityscan")]),
     [pod({"foo": "bar"}, node="nodeA")],
     [("nodeA", {"zoneLabel": "az1", "hostname": "h1"}), ("nodeB", {"zoneLabel": "az2", "hostname": "h2"})],
     [AFF, AFF]),
    ("NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod "
     "affinity rule. The pod can not be scheduled onto nodeA and nodeB.",
     pod(anti=[t_in("foo", "region", "abc")]),
     [pod({"foo": "abc"}, node="nodeA")],
     [("nodeA", {"region": "r1", "hostname": "nodeA"}), ("nodeB", {"region": "r1", "hostname": "nodeB"})],
     [ANTI, ANTI]),
    ("This test ensures that anti-affinity matches a pod when any term of the anti-affinity rule matches a pod.",
     pod(anti=[t_in("foo", "region", "abc"), t_in("service", "zone", "securityscan")]),
     [pod({"foo": "abc", "service": "securityscan"}, node="nodeA")],
     [rzh("nodeA", "z1"), rzh("nodeB", "z2")],
     [ANTI, ANTI]),
    ("NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod "
     "affinity rule. The pod can not be scheduled onto nodeA and nodeB but can be scheduled onto nodeC",
     pod(anti=[t_in("foo", "region", "abc")]),
     [pod({"foo": "abc"}, node="nodeA")],
     [("nodeA", RG_CHINA), ("nodeB", RG_CHINA_AZ1), ("nodeC", RG_INDIA)],
     [ANTI, ANTI, None]),
    ("NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod "
     "affinity rule. The pod can not be scheduled onto nodeA, nodeB, but can be scheduled onto nodeC (NodeC has an "
     "existing pod that match the inter pod affinity rule but in different namespace)",
     pod({"foo": "123"}, namespace="NS1", anti=[t_in("foo", "region", "bar")]),
     [pod({"foo": "bar"}, namespace="NS1", node="nodeA"),
      pod(namespace="NS2", node="nodeC", anti=[t_in("foo", "region", "123")])],
     [("nodeA", RG_CHINA), ("nodeB", RG_CHINA_AZ1), ("nodeC", RG_INDIA)],
     [ANTI, ANTI, None]),
    ("Test existing pod's anti-affinity: if an existing pod has a term with invalid topologyKey, labelSelector of "
     "the term is firstly checked, and then topologyKey of the term is also checked",
     pod({"foo": ""}),
     [pod(node="nodeA", anti=[t_exists("foo", "invalid-node-label")])],
     [rzh("nodeA", "z1"), rzh("nodeB", "z1")],
     [None, None]),  # kube: PreFilter Skip
    ("Test incoming pod's anti-affinity: even if labelSelector matches, we still check if topologyKey matches",
     pod(node="nodeA", anti=[t_exists("foo", "invalid-node-label")]),
     [pod({"foo": ""}, node="nodeA")],
     [rzh("nodeA", "z1"), rzh("nodeB", "z1")],
     [None, None]),
    ("Test existing pod's anti-affinity: incoming pod wouldn't considered as a fit as it violates each existingPod's "
     "terms on all nodes",
     pod({"foo": "", "bar": ""}),
     [pod(node="nodeA", anti=[t_exists("foo", "zone")]), pod(node="nodeA", anti=[t_exists("bar", "region")])],
     [rzh("nodeA", "z1"), rzh("nodeB", "z2")],
     [EXISTING, EXISTING]),
    ("Test incoming pod's anti-affinity: incoming pod wouldn't considered as a fit as it at least violates one "
     "anti-affinity rule of existingPod",
     pod(anti=[t_exists("foo", "zone"), t_exists("bar", "region")]),
     [pod({"foo": ""}, node="nodeA"), pod({"bar": ""}, node="nodeB")],
     [rzh("nodeA", "z1"), rzh("nodeB", "z2")],
     [ANTI, ANTI]),
    ("Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a "
     "single term match - case when one term has invalid topologyKey",
     pod({"foo": "", "bar": ""}),
     [pod(node="nodeA", anti=[t_exists("foo", "invalid-node-label"), t_exists("bar", "zone")])],
     [rzh("nodeA", "z1"), rzh("nodeB", "z2")],
     [EXISTING, None]),
    ("Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a "
     "single term match - case when one term has invalid topologyKey",
     pod(anti=[t_exists("foo", "invalid-node-label"), t_exists("bar", "zone")]),
     [pod({"foo": "", "bar": ""}, node="nodeA")],
     [rzh("nodeA", "z1"), rzh("nodeB", "z2")],
     [ANTI, None]),
    ("Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a "
     "single term match - case when all terms have valid topologyKey",
     pod({"foo": "", "bar": ""}),
     [pod(node="nodeA", anti=[t_exists("foo", "region"), t_exists("bar", "zone")])],
     [rzh("nodeA", "z1"), rzh("nodeB", "z2")],
     [EXISTING, EXISTING]),
    ("Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a "
     "single term match - case when all terms have valid topologyKey",
     pod(anti=[t_exists("foo", "region"), t_exists("bar", "zone")]),
     [pod({"foo": "", "bar": ""}, node="nodeA")],
     [rzh("nodeA", "z1"), rzh("nodeB", "z2")],
     [ANTI, ANTI]),
    ("Test existing pod's anti-affinity: existingPod on nodeA and nodeB has at least one anti-affinity term matches "
     "incoming pod, so incoming pod can only be scheduled to nodeC",
     pod({"foo": "", "bar": ""}),
     [pod(node="nodeA", anti=[t_exists("foo", "zone"), t_exists("labelA", "zone")]),
      pod(node="nodeB", anti=[t_exists("bar", "zone"), t_exists("labelB", "zone")])],
     [rzh("nodeA", "z1"), rzh("nodeB", "z2"), rzh("nodeC", "z3")],
     [EXISTING, EXISTING, None]),
    ("Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all topologyKeys "
     "match",
     pod(affinity=[t_exists("foo", "region"), t_exists("bar", "zone")]),
     [pod({"foo": "", "bar": ""}, node="nodeA")],
     [rzh("nodeA", "z1"), rzh("nodeB", "z1")],
     [None, None]),
    ("Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all topologyKeys "
     "match, and the match logic should be satisfied on the same pod",
     pod(affinity=[t_exists("foo", "region"), t_exists("bar", "zone")]),
     [pod({"foo": ""}, node="nodeA"), pod({"bar": ""}, node="nodeB")],
     [rzh("nodeA", "z1"), rzh("nodeB", "z2")],
     [AFF, AFF]),
]


@pytest.mark.parametrize(("incoming", "existing", "nodes", "want"), [case[1:] for case in MULTIPLE_NODES],
                         ids=[case[0] for case in MULTIPLE_NODES])
def test_required_affinity_multiple_nodes(incoming: Pod, existing: list[Pod], nodes: list[Node],
                                          want: list[str | None]) -> None:
    assert_statuses(incoming, nodes, existing, {"NS1": {}}, want)
