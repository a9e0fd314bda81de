"""kube-scheduler's node-level filter plugins, case by case, against the shim's pure functions
(pyscheduler_k8s.predicates): the cases of kube-scheduler's own test tables (kubernetes
v1.37), written here as Python data, each under its Go name so the two can be read side by
side.

Followed (in kubernetes/kubernetes):

- pkg/scheduler/framework/plugins/nodeports/node_ports_test.go: ``TestNodePorts``, ``TestFits``
  (semantics: node_ports.go; pkg/scheduler/util ``GetHostPorts``: containers and sidecars;
  kube-scheduler/framework ``HostPortInfo.CheckConflict``: ``0.0.0.0`` or an empty IP is every
  address, an empty protocol is TCP).
- pkg/scheduler/framework/plugins/tainttoleration/taint_toleration_test.go:
  ``TestTaintTolerationFilter``, ``TestTaintTolerationFilterWithFeatureGate`` (semantics:
  k8s.io/api core/v1 toleration.go ``ToleratesTaint``; component-helpers scheduling/corev1
  ``FindMatchingUntoleratedTaint``).
- pkg/scheduler/framework/plugins/nodeaffinity/node_affinity_test.go: ``TestNodeAffinity``, the
  Filter outcome (semantics: component-helpers scheduling/corev1/nodeaffinity; apimachinery
  labels ``NewRequirement``/``Matches``).
- pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable_test.go:
  ``TestNodeUnschedulable``.

Each case asserts pass or fail and, on failure, which check refused. Cases with
``enableTaintTolerationComparisonOps: true`` run through ``tolerations_tolerate(...,
comparison_operators=True)``: the feature is alpha and off in v1.37, so ``check_node`` runs
with it off (and the gate-off cases assert that too).

Skipped (listed as skips below):

- TestNodeAffinity "Matches added affinity and Pod's node affinity", "Matches added affinity but
  not Pod's node affinity", "Doesn't match added affinity": ``NodeAffinityArgs.addedAffinity``
  is a kube-scheduler profile setting the shim does not have.
- TestNodePorts PreFilter statuses ("skip filter", "non-sidecar initContainer using hostPort")
  are kept as Filter outcomes: a skipped filter passes every node.
"""

from __future__ import annotations

from typing import Any

import pytest

from pyscheduler_k8s.nodes import NodeView, node_view
from pyscheduler_k8s.predicates import (
    check_node,
    host_ports,
    inclusion_passes,
    node_affinity_passes,
    node_unschedulable,
    tolerations_tolerate,
    untolerated_taint,
)

PASS = None
ADDED_AFFINITY = "NodeAffinityArgs.addedAffinity is a kube-scheduler profile setting the shim does not have"


def _node(name: str = "", labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None,
          unschedulable: bool = False) -> NodeView:
    spec: dict[str, Any] = {"unschedulable": unschedulable}
    if taints is not None:
        spec["taints"] = taints
    return node_view({"metadata": {"name": name, "labels": labels or {}}, "spec": spec, "status": {}})


def _pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns"}, "spec": spec}


# --- NodePorts ----------------------------------------------------------------------------------


def _ports(*infos: str) -> list[dict[str, Any]]:
    """Container ports from "PROTOCOL/HOSTIP/PORT" (node_ports_test.go's newPod)."""
    out = []
    for info in infos:
        protocol, ip, port = info.split("/")
        out.append({"containerPort": int(port), "hostPort": int(port), "hostIP": ip, "protocol": protocol})
    return out


def _port_pod(*infos: str) -> dict[str, Any]:
    return _pod(containers=[{"name": "c", "ports": _ports(*infos)}])


def _init_port_pod(sidecar: bool) -> dict[str, Any]:
    """A pod whose only host port (TCP 8001, no host IP) is on an init container."""
    init: dict[str, Any] = {"name": "init", "ports": [{"containerPort": 8001, "hostPort": 8001, "protocol": "TCP"}]}
    if sidecar:
        init["restartPolicy"] = "Always"
    return _pod(initContainers=[init], containers=[{"name": "c"}])


NODE_PORTS_CASES = [
    # (name, pod, the pod already on the node, refused)
    ("skip filter", _pod(), _pod(), False),
    ("other port", _port_pod("UDP/127.0.0.1/8080"), _port_pod("UDP/127.0.0.1/9090"), False),
    ("same udp port", _port_pod("UDP/127.0.0.1/8080"), _port_pod("UDP/127.0.0.1/8080"), True),
    ("same tcp port", _port_pod("TCP/127.0.0.1/8080"), _port_pod("TCP/127.0.0.1/8080"), True),
    ("different host ip", _port_pod("TCP/127.0.0.1/8080"), _port_pod("TCP/127.0.0.2/8080"), False),
    ("different protocol", _port_pod("UDP/127.0.0.1/8080"), _port_pod("TCP/127.0.0.1/8080"), False),
    ("second udp port conflict", _port_pod("UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"),
     _port_pod("UDP/127.0.0.1/8080"), True),
    ("first tcp port conflict", _port_pod("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
     _port_pod("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"), True),
    ("first tcp port conflict due to 0.0.0.0 hostIP", _port_pod("TCP/0.0.0.0/8001"),
     _port_pod("TCP/127.0.0.1/8001"), True),
    ("TCP hostPort conflict due to 0.0.0.0 hostIP", _port_pod("TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"),
     _port_pod("TCP/127.0.0.1/8001"), True),
    ("second tcp port conflict to 0.0.0.0 hostIP", _port_pod("TCP/127.0.0.1/8001"),
     _port_pod("TCP/0.0.0.0/8001"), True),
    ("second different protocol", _port_pod("UDP/127.0.0.1/8001"), _port_pod("TCP/0.0.0.0/8001"), False),
    ("UDP hostPort conflict due to 0.0.0.0 hostIP", _port_pod("UDP/127.0.0.1/8001"),
     _port_pod("TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"), True),
    ("non-sidecar initContainer using hostPort", _init_port_pod(sidecar=False), _port_pod("TCP/0.0.0.0/8001"), False),
    ("TCP hostPort conflict from sidecar initContainer", _init_port_pod(sidecar=True),
     _port_pod("TCP/0.0.0.0/8001"), True),
]


@pytest.mark.parametrize(("pod", "existing", "refused"), [pytest.param(*c[1:], id=c[0]) for c in NODE_PORTS_CASES])
def test_node_ports(pod: dict[str, Any], existing: dict[str, Any], refused: bool) -> None:
    """TestNodePorts: the pod against the host ports the pod already on the node holds."""
    reason = check_node(pod, _node("m1"), host_ports(existing))
    if refused:
        assert reason is not None and "host port" in reason
    else:
        assert reason is PASS


FITS_CASES = [
    ("non-conflicting ports", _port_pod("TCP/127.0.0.1/80"), _port_pod("TCP/127.0.0.1/9090"), True),
    ("multiple non-conflicting ports",
     _port_pod("TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"),
     _port_pod("TCP/127.0.0.1/9090", "TCP/127.0.0.1/9191", "TCP/127.0.1.1/8080"), True),
    ("same ports on different protocols", _port_pod("TCP/127.0.0.1/80"), _port_pod("UDP/127.0.0.1/80"), True),
    ("conflicting ports", _port_pod("TCP/127.0.0.1/80"), _port_pod("TCP/127.0.0.1/80"), False),
    ("multiple ports, some conflicting",
     _port_pod("TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"),
     _port_pod("TCP/127.0.0.1/9090", "TCP/127.0.1.1/90", "TCP/127.0.1.1/8080"), False),
]


@pytest.mark.parametrize(("pod", "existing", "fits"), [pytest.param(*c[1:], id=c[0]) for c in FITS_CASES])
def test_node_ports_fits(pod: dict[str, Any], existing: dict[str, Any], fits: bool) -> None:
    """TestFits (nodeports)."""
    assert (check_node(pod, _node("p"), host_ports(existing)) is None) == fits


def test_ports_held_are_the_containers_and_sidecars_not_regular_init_containers() -> None:
    """Ours, from NodeInfo.updateUsedPorts (GetHostPorts): a pod on the node holds its
    containers' and sidecars' host ports; a regular init container's are free again once it
    ends; a port of 0 (no host port) and an empty protocol (TCP) as Kubernetes reads them."""
    assert host_ports(_init_port_pod(sidecar=False)) == set()
    assert host_ports(_init_port_pod(sidecar=True)) == {("TCP", "", 8001)}
    pod = _pod(containers=[{"name": "c", "ports": [{"containerPort": 80}, {"containerPort": 81, "hostPort": 0},
                                                   {"containerPort": 82, "hostPort": 9000}]}])
    assert host_ports(pod) == {("TCP", "", 9000)}
    # "::" is a specific address to kube-scheduler: only "0.0.0.0" and "" stand for every one.
    assert check_node(_port_pod("TCP/::/8001"), _node("n"), [("TCP", "::1", 8001)]) is None
    assert check_node(_port_pod("TCP/::/8001"), _node("n"), [("TCP", "", 8001)]) is not None


# --- TaintToleration ----------------------------------------------------------------------------


def _taint(key: str, value: str, effect: str) -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


def _tol(key: str, value: str = "", effect: str = "", operator: str = "") -> dict[str, str]:
    toleration = {"key": key, "value": value, "effect": effect}
    if operator:
        toleration["operator"] = operator
    return toleration


SLA = "node.kubernetes.io/sla"
PRIORITY = "node.example.com/priority-level"

TAINT_CASES = [
    # (name, tolerations, taints, comparison operators on, refused)
    ("A pod having no tolerations can't be scheduled onto a node with nonempty taints",
     [], [_taint("dedicated", "user1", "NoSchedule")], False, True),
    ("A pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
     [_tol("dedicated", "user1", "NoSchedule")], [_taint("dedicated", "user1", "NoSchedule")], False, False),
    ("A pod which can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule",
     [_tol("dedicated", "user2", "NoSchedule", "Equal")], [_taint("dedicated", "user1", "NoSchedule")], False, True),
    ("A pod can be scheduled onto the node, with a toleration uses operator Exists that tolerates the taints on the node",
     [_tol("foo", "", "NoSchedule", "Exists")], [_taint("foo", "bar", "NoSchedule")], False, False),
    ("A pod has multiple tolerations, node has multiple taints, all the taints are tolerated, pod can be scheduled "
     "onto the node",
     [_tol("dedicated", "user2", "NoSchedule", "Equal"), _tol("foo", "", "NoSchedule", "Exists")],
     [_taint("dedicated", "user2", "NoSchedule"), _taint("foo", "bar", "NoSchedule")], False, False),
    ("A pod has a toleration that keys and values match the taint on the node, but (non-empty) effect doesn't match, "
     "can't be scheduled onto the node",
     [_tol("foo", "bar", "PreferNoSchedule", "Equal")], [_taint("foo", "bar", "NoSchedule")], False, True),
    ("The pod has a toleration that keys and values match the taint on the node, the effect of toleration is empty, "
     "and the effect of taint is NoSchedule. Pod can be scheduled onto the node",
     [_tol("foo", "bar", "", "Equal")], [_taint("foo", "bar", "NoSchedule")], False, False),
    ("The pod has a toleration that key and value don't match the taint on the node, "
     "but the effect of taint on node is PreferNoSchedule. Pod can be scheduled onto the node",
     [_tol("dedicated", "user2", "NoSchedule", "Equal")], [_taint("dedicated", "user1", "PreferNoSchedule")],
     False, False),
    ("The pod has no toleration, but the effect of taint on node is PreferNoSchedule. Pod can be scheduled onto the node",
     [], [_taint("dedicated", "user1", "PreferNoSchedule")], False, False),
    ("Pod with Gt toleration cannot be scheduled on node when taint value is lower than threshold",
     [_tol(PRIORITY, "950", "NoSchedule", "Gt")], [_taint(PRIORITY, "800", "NoSchedule")], True, True),
    ("Pod with Gt toleration can be scheduled on node when taint value is higher than threshold",
     [_tol(SLA, "750", "NoSchedule", "Gt")], [_taint(SLA, "950", "NoSchedule")], True, False),
    ("Pod with Lt toleration cannot be scheduled on node when taint value is higher than threshold",
     [_tol(PRIORITY, "800", "NoSchedule", "Lt")], [_taint(PRIORITY, "950", "NoSchedule")], True, True),
    ("Pod with Lt toleration can be scheduled on node when taint value is lower than threshold",
     [_tol(SLA, "950", "NoSchedule", "Lt")], [_taint(SLA, "800", "NoSchedule")], True, False),
    ("Pod with Gt toleration cannot be scheduled on node with non-numeric taint value",
     [_tol(SLA, "950", "NoSchedule", "Gt")], [_taint(SLA, "high", "NoSchedule")], True, True),
]

TAINT_GATE_CASES = [
    ("Pod with Gt toleration can be scheduled when feature gate is enabled and taint value is higher",
     [_tol(SLA, "750", "NoSchedule", "Gt")], [_taint(SLA, "950", "NoSchedule")], True, False),
    ("Pod with Gt toleration cannot be scheduled when feature gate is disabled",
     [_tol(SLA, "750", "NoSchedule", "Gt")], [_taint(SLA, "950", "NoSchedule")], False, True),
    ("Pod with Lt toleration can be scheduled when feature gate is enabled and taint value is lower",
     [_tol(SLA, "950", "NoSchedule", "Lt")], [_taint(SLA, "800", "NoSchedule")], True, False),
    ("Pod with Lt toleration cannot be scheduled when feature gate is disabled",
     [_tol(SLA, "950", "NoSchedule", "Lt")], [_taint(SLA, "800", "NoSchedule")], False, True),
    ("Pod with mixed tolerations (Equal and Gt) when feature gate is disabled - only Equal is honored",
     [_tol("dedicated", "user1", "NoSchedule", "Equal"), _tol(SLA, "750", "NoSchedule", "Gt")],
     [_taint("dedicated", "user1", "NoSchedule")], False, False),
    ("Pod with mixed tolerations, Gt toleration needed but filtered out when feature gate is disabled",
     [_tol("dedicated", "user1", "NoSchedule", "Equal"), _tol(SLA, "750", "NoSchedule", "Gt")],
     [_taint("dedicated", "user1", "NoSchedule"), _taint(SLA, "950", "NoSchedule")], False, True),
]


def _taint_filter(tolerations: list[dict[str, str]], node: NodeView, comparison_operators: bool) -> bool:
    """TaintToleration's Filter with the feature on or off: every NoSchedule/NoExecute taint is
    tolerated."""
    return all(tolerations_tolerate(tolerations, taint, comparison_operators=comparison_operators)
               for taint in node.taints if taint[2] in ("NoSchedule", "NoExecute"))


@pytest.mark.parametrize(("tolerations", "taints", "comparison_operators", "refused"),
                         [pytest.param(*c[1:], id=c[0]) for c in TAINT_CASES + TAINT_GATE_CASES])
def test_taint_toleration_filter(tolerations: list[dict[str, str]], taints: list[dict[str, str]],
                                 comparison_operators: bool, refused: bool) -> None:
    """TestTaintTolerationFilter and TestTaintTolerationFilterWithFeatureGate."""
    node, pod = _node("nodeA", taints=taints), _pod(tolerations=tolerations)
    assert _taint_filter(tolerations, node, comparison_operators) is not refused
    if not comparison_operators:  # v1.37's default: what check_node and the spread policies see
        reason = check_node(pod, node)
        if refused:
            assert reason is not None and "taint" in reason and "does not tolerate" in reason
            assert untolerated_taint(pod, node) is not None
        else:
            assert reason is PASS and untolerated_taint(pod, node) is None
        assert inclusion_passes(pod, node, affinity=False, taints=True) is not refused


def test_toleration_rules_of_tolerates_taint() -> None:
    """Ours, from ToleratesTaint's rules: an empty effect matches every effect, an empty key
    every key, an empty operator is Equal; Exists ignores the value; an unknown operator
    tolerates nothing; Lt/Gt compare int64s written canonically (no leading zeros or '+')."""
    taint = ("gpu", "yes", "NoExecute")
    assert tolerations_tolerate([{"operator": "Exists"}], taint)
    assert tolerations_tolerate([{"key": "gpu", "operator": "Exists"}], taint)
    assert tolerations_tolerate([{"key": "gpu", "value": "yes"}], taint)
    assert not tolerations_tolerate([{"key": "gpu", "value": "no"}], taint)
    assert not tolerations_tolerate([{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}], taint)
    assert not tolerations_tolerate([{"key": "gpu", "value": "yes", "operator": "Matches"}], taint)
    # An empty key with Equal (the API server refuses such a pod) matches every key by value.
    assert tolerations_tolerate([{"value": "yes"}], taint)
    # Lt/Gt with the feature off: the value is not compared, not even for equality.
    assert not tolerations_tolerate([{"key": "sla", "operator": "Gt", "value": "5"}], ("sla", "5", "NoSchedule"))
    on = {"comparison_operators": True}
    assert tolerations_tolerate([{"key": "sla", "operator": "Gt", "value": "-5"}], ("sla", "0", "NoSchedule"), **on)
    assert not tolerations_tolerate([{"key": "sla", "operator": "Gt", "value": "5"}], ("sla", "5", "NoSchedule"), **on)
    assert not tolerations_tolerate([{"key": "sla", "operator": "Gt", "value": "5"}], ("sla", "07", "NoSchedule"), **on)
    assert not tolerations_tolerate([{"key": "sla", "operator": "Lt", "value": "+9"}], ("sla", "1", "NoSchedule"), **on)
    assert not tolerations_tolerate([{"key": "sla", "operator": "Gt", "value": "1"}],
                                    ("sla", "9223372036854775808", "NoSchedule"), **on)


# --- NodeAffinity -------------------------------------------------------------------------------


def _required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def _expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    expression: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        expression["values"] = list(values)
    return expression


def _name_in(*names: str) -> dict[str, Any]:
    return _expr("metadata.name", "In", *names)


NODE_AFFINITY_CASES: list[Any] = [
    # (name, pod spec, node labels, node name, refused)
    ("missing labels", {"nodeSelector": {"foo": "bar"}}, {}, "", True),
    ("same labels", {"nodeSelector": {"foo": "bar"}}, {"foo": "bar"}, "", False),
    ("node labels are superset", {"nodeSelector": {"foo": "bar"}}, {"foo": "bar", "baz": "blah"}, "", False),
    ("node labels are subset", {"nodeSelector": {"foo": "bar", "baz": "blah"}}, {"foo": "bar"}, "", True),
    ("Pod with matchExpressions using In operator that matches the existing node",
     {"affinity": _required({"matchExpressions": [_expr("foo", "In", "bar", "value2")]})}, {"foo": "bar"}, "", False),
    ("Pod with matchExpressions using Gt operator that matches the existing node",
     {"affinity": _required({"matchExpressions": [_expr("kernel-version", "Gt", "0204")]})},
     {"kernel-version": "0206"}, "", False),
    ("Pod with matchExpressions using NotIn operator that matches the existing node",
     {"affinity": _required({"matchExpressions": [_expr("mem-type", "NotIn", "DDR", "DDR2")]})},
     {"mem-type": "DDR3"}, "", False),
    ("Pod with matchExpressions using Exists operator that matches the existing node",
     {"affinity": _required({"matchExpressions": [_expr("GPU", "Exists")]})}, {"GPU": "NVIDIA-GRID-K1"}, "", False),
    ("Pod with affinity that don't match node's labels won't schedule onto the node",
     {"affinity": _required({"matchExpressions": [_expr("foo", "In", "value1", "value2")]})}, {"foo": "bar"}, "", True),
    ("Pod with empty MatchExpressions is not a valid value will match no objects and won't schedule onto the node",
     {"affinity": _required({"matchExpressions": []})}, {"foo": "bar"}, "", True),
    ("Pod with no Affinity will schedule onto a node", {}, {"foo": "bar"}, "", False),
    ("Pod with Affinity but nil NodeSelector will schedule onto a node",
     {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": None}}}, {"foo": "bar"}, "", False),
    ("Pod with multiple matchExpressions ANDed that matches the existing node",
     {"affinity": _required({"matchExpressions": [_expr("GPU", "Exists"), _expr("GPU", "NotIn", "AMD", "INTER")]})},
     {"GPU": "NVIDIA-GRID-K1"}, "", False),
    ("Pod with multiple matchExpressions ANDed that doesn't match the existing node",
     {"affinity": _required({"matchExpressions": [_expr("GPU", "Exists"), _expr("GPU", "In", "AMD", "INTER")]})},
     {"GPU": "NVIDIA-GRID-K1"}, "", True),
    ("Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and will schedule onto the node",
     {"affinity": _required({"matchExpressions": [_expr("foo", "In", "bar", "value2")]},
                            {"matchExpressions": [_expr("diffkey", "In", "wrong", "value2")]})}, {"foo": "bar"}, "", False),
    ("Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are deprecating) both are satisfied, "
     "will schedule onto the node",
     {"nodeSelector": {"foo": "bar"}, "affinity": _required({"matchExpressions": [_expr("foo", "Exists")]})},
     {"foo": "bar"}, "", False),
    ("Pod with an Affinity matches node's labels but the PodSpec.NodeSelector(the old thing that we are deprecating) "
     "is not satisfied, won't schedule onto the node",
     {"nodeSelector": {"foo": "bar"}, "affinity": _required({"matchExpressions": [_expr("foo", "Exists")]})},
     {"foo": "barrrrrr"}, "", True),
    ("Pod with an invalid value in Affinity term won't be scheduled onto the node",
     {"affinity": _required({"matchExpressions": [_expr("foo", "NotIn", "invalid value: ___@#$%^")]})},
     {"foo": "bar"}, "", True),
    ("Pod with matchFields using In operator that matches the existing node",
     {"affinity": _required({"matchFields": [_name_in("node1")]})}, {}, "node1", False),
    ("Pod with matchFields using In operator that does not match the existing node",
     {"affinity": _required({"matchFields": [_name_in("node1")]})}, {}, "node2", True),
    ("Pod with two terms: matchFields does not match, but matchExpressions matches",
     {"affinity": _required({"matchFields": [_name_in("node1"), _name_in("node2")]},
                            {"matchExpressions": [_expr("foo", "In", "bar")]})}, {"foo": "bar"}, "node2", False),
    ("Pod with one term: matchFields does not match, but matchExpressions matches",
     {"affinity": _required({"matchFields": [_name_in("node1")], "matchExpressions": [_expr("foo", "In", "bar")]})},
     {"foo": "bar"}, "node2", True),
    ("Pod with one term: both matchFields and matchExpressions match",
     {"affinity": _required({"matchFields": [_name_in("node1")], "matchExpressions": [_expr("foo", "In", "bar")]})},
     {"foo": "bar"}, "node1", False),
    ("Pod with two terms: both matchFields and matchExpressions do not match",
     {"affinity": _required({"matchFields": [_name_in("node1")]},
                            {"matchExpressions": [_expr("foo", "In", "not-match-to-bar")]})}, {"foo": "bar"}, "node2", True),
    ("Pod with two terms of node.Name affinity",
     {"affinity": _required({"matchFields": [_name_in("node1")]}, {"matchFields": [_name_in("node2")]})},
     {}, "node2", False),
    ("Pod with two conflicting mach field requirements",
     {"affinity": _required({"matchFields": [_name_in("node1"), _name_in("node2")]})}, {"foo": "bar"}, "node2", True),
    pytest.param({"affinity": _required({"matchExpressions": [_expr("zone", "In", "foo")]})}, {"zone": "foo"}, "node2",
                 False, id="Matches added affinity and Pod's node affinity", marks=pytest.mark.skip(reason=ADDED_AFFINITY)),
    pytest.param({"affinity": _required({"matchExpressions": [_expr("zone", "In", "bar")]})}, {"zone": "foo"}, "node2",
                 True, id="Matches added affinity but not Pod's node affinity",
                 marks=pytest.mark.skip(reason=ADDED_AFFINITY)),
    pytest.param({}, {"zone": "foo"}, "node2", True, id="Doesn't match added affinity",
                 marks=pytest.mark.skip(reason=ADDED_AFFINITY)),
    ("Matches node selector correctly even if PreFilter is not called",
     {"nodeSelector": {"foo": "bar"}}, {"foo": "bar", "baz": "blah"}, "", False),
    ("Matches node affinity correctly even if PreFilter is not called",
     {"affinity": _required({"matchExpressions": [_expr("GPU", "Exists"), _expr("GPU", "NotIn", "AMD", "INTER")]})},
     {"GPU": "NVIDIA-GRID-K1"}, "", False),
]


@pytest.mark.parametrize(("spec", "labels", "node_name", "refused"),
                         [pytest.param(*c[1:], id=c[0]) if isinstance(c[0], str) else c
                          for c in NODE_AFFINITY_CASES])
def test_node_affinity(spec: dict[str, Any], labels: dict[str, str], node_name: str, refused: bool) -> None:
    """TestNodeAffinity: the Filter's outcome."""
    pod, node = _pod(**spec), _node(node_name, labels)
    reason = check_node(pod, node)
    if refused:
        assert reason is not None and "does not match the pod's" in reason
    else:
        assert reason is PASS
    assert node_affinity_passes(pod, node) is not refused
    assert inclusion_passes(pod, node, affinity=True, taints=False) is not refused


@pytest.mark.parametrize(("expression", "labels", "matches"), [
    (_expr("n", "Gt", "+5"), {"n": "6"}, False),  # every value must be a valid label value
    (_expr("n", "Gt", "05"), {"n": "6"}, True),
    (_expr("n", "Lt", "5"), {"n": "-0004"}, True),  # the node's label is read by ParseInt: a sign, zeros
    (_expr("n", "Lt", "5"), {"n": "+4"}, True),
    (_expr("n", "Gt", "5"), {"n": "6.0"}, False),
    (_expr("n", "Gt", "5"), {"n": " 6"}, False),
    (_expr("n", "Gt", "5"), {"n": "1_000"}, False),
    (_expr("n", "Gt", "5"), {"n": "9223372036854775808"}, False),  # beyond int64
    (_expr("n", "Gt", "5", "6"), {"n": "9"}, False),  # Gt takes exactly one value
    (_expr("n", "Gt", "five"), {"n": "9"}, False),
    (_expr("n", "Gt", "5"), {}, False),
    (_expr("n", "NotIn"), {"n": "1"}, False),  # NotIn without values does not parse
    (_expr("n", "NotIn", "2"), {}, True),
    (_expr("n", "Exists", "1"), {"n": "1"}, False),  # Exists with values does not parse
    (_expr("bad key", "Exists"), {"bad key": "1"}, False),
    (_expr("example.com/zone", "In", "a"), {"example.com/zone": "a"}, True),
    (_expr("Example.com/zone", "In", "a"), {"Example.com/zone": "a"}, False),  # the prefix is a DNS subdomain
    (_expr("n", "Matches", "a"), {"n": "a"}, False),
])
def test_node_affinity_requirement_parsing(expression: dict[str, Any], labels: dict[str, str], matches: bool) -> None:
    """Ours, from labels.NewRequirement and Requirement.Matches: what a matchExpressions
    requirement accepts, and that one Kubernetes cannot parse matches nothing."""
    pod = _pod(affinity=_required({"matchExpressions": [expression]}))
    assert node_affinity_passes(pod, _node("n", labels)) is matches


@pytest.mark.parametrize(("fields", "node_name", "matches"), [
    ([_expr("metadata.name", "NotIn", "node1")], "node2", True),
    ([_expr("metadata.name", "NotIn", "node1")], "node1", False),
    ([_expr("metadata.name", "In", "node1", "node2")], "node2", False),  # In takes exactly one value
    ([_expr("metadata.name", "Exists")], "node2", False),  # only In and NotIn
    ([_expr("metadata.uid", "In", "x")], "node2", False),  # a field the node lacks reads as ""
    ([_name_in("node1")], "", True),  # a nameless node has no fields: they are not compared
])
def test_node_affinity_match_fields(fields: list[dict[str, Any]], node_name: str, matches: bool) -> None:
    """Ours, from nodeaffinity's field selector and ``match``."""
    pod = _pod(affinity=_required({"matchFields": fields}))
    assert node_affinity_passes(pod, _node(node_name)) is matches


def test_a_required_affinity_without_terms_matches_no_node() -> None:
    """Ours, from LazyErrorNodeSelector.Match: no (non-empty) term, no match."""
    required: dict[str, Any] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}
    assert not node_affinity_passes(_pod(affinity=required), _node("n"))
    assert not node_affinity_passes(_pod(affinity=_required()), _node("n"))
    assert node_affinity_passes(_pod(affinity={"nodeAffinity": {}}), _node("n"))


# --- NodeUnschedulable --------------------------------------------------------------------------


@pytest.mark.parametrize(("tolerations", "unschedulable", "refused"), [
    pytest.param([], True, True, id="Does not schedule pod to unschedulable node (node.Spec.Unschedulable==true)"),
    pytest.param([], False, False, id="Schedule pod to normal node"),
    pytest.param([{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}], True, False,
                 id="Schedule pod with toleration to unschedulable node (node.Spec.Unschedulable==true)"),
])
def test_node_unschedulable(tolerations: list[dict[str, str]], unschedulable: bool, refused: bool) -> None:
    """TestNodeUnschedulable; check_node leaves cordoning to the shim."""
    pod, node = _pod(tolerations=tolerations), _node("", unschedulable=unschedulable)
    reason = node_unschedulable(pod, node)
    if refused:
        assert reason is not None and "unschedulable" in reason
    else:
        assert reason is PASS
    assert check_node(pod, node) is PASS


def test_node_unschedulable_takes_every_toleration_of_the_taint() -> None:
    """Ours: any toleration of node.kubernetes.io/unschedulable:NoSchedule will do (Exists,
    an empty effect, the tolerate-everything toleration); one for NoExecute will not."""
    cordoned = _node("n", unschedulable=True)
    for tolerations in ([{"operator": "Exists"}], [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}],
                        [{"key": "node.kubernetes.io/unschedulable"}]):
        assert node_unschedulable(_pod(tolerations=tolerations), cordoned) is None
    wrong_effect = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoExecute"}]
    assert node_unschedulable(_pod(tolerations=wrong_effect), cordoned) is not None
