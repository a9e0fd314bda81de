"""The node checks the core cannot know, answered through the RM's ``predicates`` callback, as
kube-scheduler v1.37's filter plugins answer them (NodeAffinity, TaintToleration, NodePorts,
NodeUnschedulable), with the same semantics:

- **Node selector**: every ``spec.nodeSelector`` label has that value on the node.
- **Required node affinity**: when ``requiredDuringSchedulingIgnoredDuringExecution`` is set,
  one of its ``nodeSelectorTerms`` matches: all its ``matchExpressions`` on the labels (``In``,
  ``NotIn``: absent or none of the values, ``Exists``, ``DoesNotExist``, ``Gt``/``Lt``: the
  label is an integer beyond the one value) and all its ``matchFields`` (``In``/``NotIn`` with
  exactly one value; ``metadata.name`` is the node's name). A term with neither, or one
  Kubernetes cannot parse (an invalid label key or value, ``In`` without values, ``Gt`` with
  a value that is not an integer, another operator), matches nothing; so does a required
  affinity without terms.
- **Taints**: every ``NoSchedule`` and ``NoExecute`` taint of the node is tolerated
  (``PreferNoSchedule`` only prefers). A toleration tolerates a taint when its effect is empty
  or the taint's, its key empty or the taint's, and its operator ``Exists``, or ``Equal`` (also
  when empty) with the taint's value. ``Lt``/``Gt`` (numeric comparison of the taint's value,
  the TaintTolerationComparisonOperators feature) are alpha and off in v1.37: such a toleration
  tolerates nothing here; :func:`tolerations_tolerate` evaluates them when asked to.
- **Host ports**: no ``hostPort`` the pod asks for (its containers' and its sidecars', the init
  containers with ``restartPolicy: Always``; regular init containers are done before the pod
  runs) is held on the node by another pod with the same protocol (``TCP`` when empty), on the
  same host IP or where either side listens on every address (an empty host IP or
  ``0.0.0.0``).
- **Unschedulable**: :func:`node_unschedulable`: a cordoned node takes only pods that tolerate
  the taint ``node.kubernetes.io/unschedulable:NoSchedule`` (not part of :func:`check_node`;
  the shim decides where it applies).

Each check returns None when the node passes, else the reason (shown on the pod).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from pyscheduler_k8s.nodes import NodeView

__all__ = [
    "HostPort",
    "UNSCHEDULABLE_TAINT",
    "check_node",
    "host_ports",
    "inclusion_passes",
    "node_affinity_passes",
    "node_selector_term_matches",
    "node_unschedulable",
    "tolerations_tolerate",
    "untolerated_taint",
]

#: (protocol, host IP, port); an empty IP or ``0.0.0.0`` is every address.
HostPort = tuple[str, str, int]
Taint = tuple[str, str, str]
_EVERY_ADDRESS: Final = frozenset({"", "0.0.0.0"})
#: The taint a cordoned node stands for (``v1.TaintNodeUnschedulable``).
UNSCHEDULABLE_TAINT: Final[Taint] = ("node.kubernetes.io/unschedulable", "", "NoSchedule")
_REFUSING_EFFECTS: Final = frozenset({"NoSchedule", "NoExecute"})
#: A spec's objects: dicts as decoded JSON is, first (the quick check), any mapping too.
_MAPPINGS: Final = (dict, Mapping)

_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1
#: ``strconv.ParseInt(s, 10, 64)``: an optional sign and decimal digits.
_GO_INT: Final = re.compile(r"[+-]?[0-9]+")
#: apimachinery's ``IsDecimalInteger``: ``0`` or a signed integer without leading zeros.
_CANONICAL_INT: Final = re.compile(r"0|-?[1-9][0-9]*")
_LABEL_NAME: Final = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS_SUBDOMAIN: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_SET_OPERATORS: Final = frozenset({"In", "NotIn"})
_EXISTENCE_OPERATORS: Final = frozenset({"Exists", "DoesNotExist"})
_NUMERIC_OPERATORS: Final = frozenset({"Gt", "Lt"})


# --- host ports (NodePorts) -------------------------------------------------------------------


def host_ports(pod: Mapping[str, Any]) -> set[HostPort]:
    """The host ports the pod holds while it runs (``schedutil.GetHostPorts``): those of its
    containers and sidecars with a ``hostPort`` above 0."""
    found: set[HostPort] = set()
    spec = pod.get("spec") or {}
    sidecars = [c for c in spec.get("initContainers") or () if c.get("restartPolicy") == "Always"]
    for container in [*sidecars, *(spec.get("containers") or ())]:
        for port in container.get("ports") or ():
            host_port = port.get("hostPort")
            if isinstance(host_port, int) and not isinstance(host_port, bool) and host_port > 0:
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


# --- node affinity (NodeAffinity) -------------------------------------------------------------


def _go_int(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``, None where it fails."""
    if _GO_INT.fullmatch(text) is None:
        return None
    value = int(text)
    return value if _INT64_MIN <= value <= _INT64_MAX else None


def _label_key_valid(key: str) -> bool:
    """``validation.IsQualifiedName``: ``[prefix/]name``, the prefix a DNS subdomain."""
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or "/" in prefix or _DNS_SUBDOMAIN.fullmatch(prefix) is None):
        return False
    return 0 < len(name) <= 63 and _LABEL_NAME.fullmatch(name) is not None


def _label_value_valid(value: str) -> bool:
    """``validation.IsValidLabelValue``: empty, or at most 63 of a label name's characters."""
    return value == "" or (len(value) <= 63 and _LABEL_NAME.fullmatch(value) is not None)


def _strings(values: Any) -> list[str] | None:
    if values is None:
        return []
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        return None
    return values


@functools.lru_cache(maxsize=8192)
def _requirement(key: str, operator: Any, values: tuple[Any, ...]) -> tuple[str, frozenset[str], int] | None:
    """``labels.NewRequirement``: (operator, its values, its integer for ``Gt``/``Lt``) for a
    requirement Kubernetes parses, else None. Cached: a pod's terms meet every node."""
    if not _label_key_valid(key) or not all(isinstance(v, str) and _label_value_valid(v) for v in values):
        return None
    if operator in _SET_OPERATORS:
        return (operator, frozenset(values), 0) if values else None
    if operator in _EXISTENCE_OPERATORS:
        return None if values else (operator, frozenset(), 0)
    if operator in _NUMERIC_OPERATORS and len(values) == 1:
        limit = _go_int(values[0])
        return None if limit is None else (operator, frozenset(), limit)
    return None


def _expression_matches(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """One ``matchExpressions`` requirement (``labels.NewRequirement``, then ``Matches``); a
    requirement Kubernetes would not parse matches nothing."""
    key, values = expression.get("key"), expression.get("values")
    if values is None:
        values = ()
    if not isinstance(key, str) or not isinstance(values, (list, tuple)):
        return False
    try:
        parsed = _requirement(key, expression.get("operator"), tuple(values))
    except TypeError:  # an unhashable operator or value: not a string
        return False
    if parsed is None:
        return False
    operator, wanted, limit = parsed
    value = labels.get(key)
    if operator == "In":
        return value is not None and value in wanted
    if operator == "NotIn":
        return value is None or value not in wanted
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    have = None if value is None else _go_int(value)
    return have is not None and (have > limit if operator == "Gt" else have < limit)


def _field_valid(expression: Any) -> bool:
    """A ``matchFields`` requirement Kubernetes parses: ``In``/``NotIn`` with exactly one value."""
    if not isinstance(expression, _MAPPINGS) or expression.get("operator") not in _SET_OPERATORS:
        return False
    values = _strings(expression.get("values"))
    return values is not None and len(values) == 1


def _field_matches(expression: Mapping[str, Any], fields: Mapping[str, str]) -> bool:
    """A valid ``matchFields`` requirement against the node's fields (one it lacks reads as
    empty)."""
    have, wanted = fields.get(str(expression.get("key", "")), ""), str(expression["values"][0])
    return (have == wanted) if expression.get("operator") == "In" else have != wanted


def _term_matches(term: Mapping[str, Any], node: NodeView) -> bool:
    expressions = term.get("matchExpressions") or ()
    fields = term.get("matchFields") or ()
    if not expressions and not fields:
        return False
    for expression in expressions:
        if not isinstance(expression, _MAPPINGS) or not _expression_matches(expression, node.labels):
            return False
    if not all(_field_valid(f) for f in fields):
        return False
    # Kubernetes compares the field requirements only when the node has fields (a name).
    node_fields = {"metadata.name": node.name} if node.name else {}
    return not node_fields or all(_field_matches(f, node_fields) for f in fields)


def _selector_mismatch(pod: Mapping[str, Any], node: NodeView) -> str | None:
    """Why the pod's node selector or required node affinity refuses the node, else None."""
    spec = pod.get("spec") or {}
    for key, value in (spec.get("nodeSelector") or {}).items():
        if node.labels.get(str(key)) != str(value):
            return f"node {node.name} does not match the pod's node selector ({key}={value})"
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return None
    terms = (required.get("nodeSelectorTerms") if isinstance(required, _MAPPINGS) else None) or ()
    for term in terms:
        if isinstance(term, _MAPPINGS) and _term_matches(term, node):
            return None
    return f"node {node.name} does not match the pod's required node affinity"


def node_selector_term_matches(term: Mapping[str, Any], node: NodeView) -> bool:
    """One node selector term (a required term, or a preferred term's ``preference``) matches
    the node, by the rules above."""
    return _term_matches(term, node)


def node_affinity_passes(pod: Mapping[str, Any], node: NodeView) -> bool:
    """The pod's node selector and required node affinity accept the node."""
    return _selector_mismatch(pod, node) is None


# --- taints and tolerations (TaintToleration, NodeUnschedulable) ------------------------------


def _canonical_int(text: str) -> int | None:
    """``IsDecimalInteger`` then ``ParseInt``: None unless ``text`` is an int64 in canonical form."""
    if _CANONICAL_INT.fullmatch(text) is None:
        return None
    value = int(text)
    return value if _INT64_MIN <= value <= _INT64_MAX else None


def _toleration_tolerates(toleration: Mapping[str, Any], taint: Taint, comparison_operators: bool) -> bool:
    """``Toleration.ToleratesTaint``."""
    key, value, effect = taint
    wanted_effect = toleration.get("effect") or ""
    if wanted_effect and wanted_effect != effect:
        return False
    wanted_key = toleration.get("key") or ""
    if wanted_key and wanted_key != key:
        return False
    operator = toleration.get("operator") or "Equal"
    wanted_value = str(toleration.get("value") or "")
    if operator == "Equal":
        return wanted_value == value
    if operator == "Exists":
        return True
    if operator in _NUMERIC_OPERATORS and comparison_operators:
        threshold, have = _canonical_int(wanted_value), _canonical_int(value)
        if threshold is None or have is None:
            return False
        return have < threshold if operator == "Lt" else have > threshold
    return False


def tolerations_tolerate(tolerations: Iterable[Mapping[str, Any]] | None, taint: Taint, *,
                         comparison_operators: bool = False) -> bool:
    """One of the tolerations tolerates the taint (key, value, effect). ``comparison_operators``
    is the TaintTolerationComparisonOperators feature (alpha, off in v1.37): with it, ``Lt`` and
    ``Gt`` tolerate a taint whose value, an integer, is below or above theirs."""
    return any(isinstance(t, _MAPPINGS) and _toleration_tolerates(t, taint, comparison_operators)
               for t in tolerations or ())


def untolerated_taint(pod: Mapping[str, Any], node: NodeView) -> tuple[str, str, str] | None:
    """The first ``NoSchedule`` or ``NoExecute`` taint of the node the pod does not tolerate."""
    tolerations = (pod.get("spec") or {}).get("tolerations") or ()
    for taint in node.taints:
        if taint[2] in _REFUSING_EFFECTS and not tolerations_tolerate(tolerations, taint):
            return taint
    return None


def node_unschedulable(pod: Mapping[str, Any], node: NodeView) -> str | None:
    """kube-scheduler's NodeUnschedulable: a cordoned node (``spec.unschedulable``) refuses the
    pod unless it tolerates ``node.kubernetes.io/unschedulable:NoSchedule``."""
    if node.schedulable or tolerations_tolerate((pod.get("spec") or {}).get("tolerations"), UNSCHEDULABLE_TAINT):
        return None
    return f"node {node.name} is unschedulable (cordoned) and the pod does not tolerate {UNSCHEDULABLE_TAINT[0]}"


# --- together ---------------------------------------------------------------------------------


def inclusion_passes(pod: Mapping[str, Any], node: NodeView, affinity: bool, taints: bool) -> bool:
    """A spread constraint's node inclusion policies (:mod:`.spread`): with ``affinity``, the
    pod's node selector and required node affinity accept the node; with ``taints``, the pod
    tolerates its taints."""
    return (not affinity or node_affinity_passes(pod, node)) and (not taints or untolerated_taint(pod, node) is None)


def check_node(pod: Mapping[str, Any], node: NodeView, used_ports: Iterable[HostPort] = ()) -> str | None:
    """None when the pod may go on the node, else why not (see the module doc)."""
    mismatch = _selector_mismatch(pod, node)
    if mismatch is not None:
        return mismatch
    taint = untolerated_taint(pod, node)
    if taint is not None:
        return f"node {node.name} has the taint {taint[0]}={taint[1]}:{taint[2]} the pod does not tolerate"
    clash = _ports_clash(host_ports(pod), used_ports)
    if clash is not None:
        return f"node {node.name} has the host port {clash[0]}/{clash[2]} in use"
    return None
