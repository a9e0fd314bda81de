"""The node checks the core cannot know, answered through the RM's ``predicates`` callback, as
kube-scheduler's filter plugins answer them (NodeAffinity, TaintToleration, NodePorts):

- **Node selector**: every ``spec.nodeSelector`` label has that value on the node.
- **Required node affinity**: one of ``requiredDuringSchedulingIgnoredDuringExecution``'s
  ``nodeSelectorTerms`` matches: all its ``matchExpressions`` (``In``, ``NotIn``, ``Exists``,
  ``DoesNotExist``, ``Gt``, ``Lt`` on labels) and ``matchFields`` (``metadata.name``). A term
  with neither matches nothing; no terms at all: no constraint.
- **Taints**: every ``NoSchedule`` and ``NoExecute`` taint of the node is tolerated
  (``PreferNoSchedule`` only prefers). A toleration with an empty key and ``Exists`` tolerates
  everything; an empty effect tolerates every effect; ``Equal`` (the default) needs the value.
- **Host ports**: no ``hostPort`` the pod asks for is held on the node by another pod with the
  same protocol, on the same host IP or where either side listens on every address.

Each check returns None when the node passes, else the reason (shown on the pod).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pyscheduler_k8s.nodes import NodeView

__all__ = ["HostPort", "check_node", "host_ports"]

#: (protocol, host IP, port); an empty IP or ``0.0.0.0`` is every address.
HostPort = tuple[str, str, int]
_EVERY_ADDRESS = frozenset({"", "0.0.0.0", "::"})


def host_ports(pod: Mapping[str, Any]) -> set[HostPort]:
    found: set[HostPort] = set()
    spec = pod.get("spec") or {}
    for container in [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]:
        for port in container.get("ports") or ():
            host_port = port.get("hostPort")
            if isinstance(host_port, int) and host_port > 0:
                found.add((str(port.get("protocol") or "TCP"), str(port.get("hostIP") or ""), host_port))
    return found


def _ports_clash(wanted: Iterable[HostPort], used: Iterable[HostPort]) -> HostPort | None:
    used = list(used)
    for protocol, ip, port in wanted:
        for other_protocol, other_ip, other_port in used:
            if port == other_port and protocol == other_protocol and (
                    ip == other_ip or ip in _EVERY_ADDRESS or other_ip in _EVERY_ADDRESS):
                return protocol, ip, port
    return None


def _expression_matches(expression: Mapping[str, Any], value: str | None) -> bool:
    operator = expression.get("operator", "")
    values = [str(v) for v in expression.get("values") or ()]
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt") and value is not None and len(values) == 1:
        try:
            have, limit = int(value), int(values[0])
        except ValueError:
            return False
        return have > limit if operator == "Gt" else have < limit
    return False


def _term_matches(term: Mapping[str, Any], node: NodeView) -> bool:
    expressions = term.get("matchExpressions") or ()
    fields = term.get("matchFields") or ()
    if not expressions and not fields:
        return False
    for expression in expressions:
        if not _expression_matches(expression, node.labels.get(str(expression.get("key", "")))):
            return False
    for expression in fields:
        value = node.name if expression.get("key") == "metadata.name" else None
        if not _expression_matches(expression, value):
            return False
    return True


def _tolerated(taint: tuple[str, str, str], tolerations: Iterable[Mapping[str, Any]]) -> bool:
    key, value, effect = taint
    for toleration in tolerations:
        if toleration.get("effect") and toleration.get("effect") != effect:
            continue
        operator = toleration.get("operator") or "Equal"
        if not toleration.get("key"):
            if operator == "Exists":
                return True
            continue
        if toleration.get("key") != key:
            continue
        if operator == "Exists" or str(toleration.get("value") or "") == value:
            return True
    return False


def check_node(pod: Mapping[str, Any], node: NodeView, used_ports: Iterable[HostPort] = ()) -> str | None:
    """None when the pod may go on the node, else why not (see the module doc)."""
    spec = pod.get("spec") or {}
    for key, value in (spec.get("nodeSelector") or {}).items():
        if node.labels.get(key) != value:
            return f"node {node.name} does not match the pod's node selector ({key}={value})"
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms") or ()
    if terms and not any(_term_matches(term, node) for term in terms):
        return f"node {node.name} does not match the pod's required node affinity"
    tolerations = spec.get("tolerations") or ()
    for taint in node.taints:
        if taint[2] in ("NoSchedule", "NoExecute") and not _tolerated(taint, tolerations):
            return f"node {node.name} has the taint {taint[0]}={taint[1]}:{taint[2]} the pod does not tolerate"
    clash = _ports_clash(host_ports(pod), used_ports)
    if clash is not None:
        return f"node {node.name} has the host port {clash[0]}/{clash[2]} in use"
    return None
