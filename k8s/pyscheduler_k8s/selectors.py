"""Kubernetes label selectors (``metav1.LabelSelector``) as values: compiled once from a pod's
spec, hashable (the cluster index keys its counters by them), matched against a label map.

The semantics are apimachinery's ``LabelSelectorAsSelector``:

- ``matchLabels`` ``{k: v}``: the label ``k`` has the value ``v``;
- ``matchExpressions``: ``In`` (the label is present with one of the values), ``NotIn`` (absent,
  or present with none of them), ``Exists``, ``DoesNotExist``; every requirement must hold;
- a **missing** (null) selector matches nothing, an **empty** one (``{}``) everything;
- ``In``/``NotIn`` without values, ``Exists``/``DoesNotExist`` with values, another operator, or
  a value that is not a valid label value (at most 63 characters, alphanumerics with ``-``,
  ``_``, ``.`` inside; empty is valid) are invalid: :class:`SelectorError` (kube-scheduler
  refuses such a pod, and so does the shim).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["EVERYTHING", "NOTHING", "LabelSelector", "Requirement", "SelectorError", "label_selector"]

_SET_OPERATORS: Final = frozenset({"In", "NotIn"})
_EXISTENCE_OPERATORS: Final = frozenset({"Exists", "DoesNotExist"})
#: apimachinery's IsValidLabelValue (which labels.NewRequirement applies to every value).
_LABEL_VALUE: Final = re.compile(r"(?:(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


class SelectorError(ValueError):
    """A label selector Kubernetes itself would refuse (the message says which part)."""


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        operator = self.operator
        if operator == "In":
            return value is not None and value in self.values
        if operator == "NotIn":
            return value is None or value not in self.values
        if operator == "Exists":
            return value is not None
        return value is None  # DoesNotExist


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """Every requirement must hold; ``nothing`` marks the null selector, which matches no labels
    at all (an empty requirement list with ``nothing`` False matches every label set)."""

    requirements: frozenset[Requirement] = frozenset()
    nothing: bool = False

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        for requirement in self.requirements:
            if not requirement.matches(labels):
                return False
        return True

    @property
    def everything(self) -> bool:
        return not self.nothing and not self.requirements

    def with_requirements(self, extra: Iterable[Requirement]) -> LabelSelector:
        """This selector with more requirements (a null selector stays null: matchLabelKeys on
        a term without a selector add nothing that could match)."""
        if self.nothing:
            return self
        return LabelSelector(self.requirements | frozenset(extra))


NOTHING: Final = LabelSelector(nothing=True)
EVERYTHING: Final = LabelSelector()


def _strings(values: Any, where: str) -> frozenset[str]:
    if values is None:
        return frozenset()
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise SelectorError(f"{where}: values must be a list of strings")
    for value in values:
        _check_value(value, where)
    return frozenset(values)


def _check_value(value: str, where: str) -> None:
    if len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
        raise SelectorError(f"{where}: {value!r} is not a valid label value")


def label_selector(spec: Mapping[str, Any] | None, where: str = "labelSelector") -> LabelSelector:
    """The selector of a ``metav1.LabelSelector`` object (None: the null selector)."""
    if spec is None:
        return NOTHING
    if not isinstance(spec, Mapping):
        raise SelectorError(f"{where}: not an object")
    requirements: set[Requirement] = set()
    match_labels = spec.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        raise SelectorError(f"{where}.matchLabels: not an object")
    for key, value in match_labels.items():
        _check_value("" if value is None else str(value), f"{where}.matchLabels[{key}]")
        requirements.add(Requirement(str(key), "In", frozenset({"" if value is None else str(value)})))
    expressions = spec.get("matchExpressions") or []
    if not isinstance(expressions, list):
        raise SelectorError(f"{where}.matchExpressions: not a list")
    for n, expression in enumerate(expressions):
        at = f"{where}.matchExpressions[{n}]"
        if not isinstance(expression, Mapping):
            raise SelectorError(f"{at}: not an object")
        key, operator = expression.get("key"), expression.get("operator")
        if not isinstance(key, str) or not key:
            raise SelectorError(f"{at}: a key is required")
        values = _strings(expression.get("values"), at)
        if operator in _SET_OPERATORS:
            if not values:
                raise SelectorError(f"{at}: {operator} needs at least one value")
        elif operator in _EXISTENCE_OPERATORS:
            if values:
                raise SelectorError(f"{at}: {operator} takes no values")
        else:
            raise SelectorError(f"{at}: unknown operator {operator!r}")
        requirements.add(Requirement(key, str(operator), values))
    return LabelSelector(frozenset(requirements))
