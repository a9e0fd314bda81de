"""Kubernetes resource quantities (``resource.Quantity``) as the scheduler's integers: the one
parser of them in pyscheduler (the Kubernetes shim reads a Node's and a pod's quantities with
it, the node reporter manager a plugin's).

A quantity is a signed decimal number with an optional suffix: binary (``Ki``, ``Mi``, ``Gi``,
``Ti``, ``Pi``, ``Ei``), decimal (``n``, ``u``, ``m``, ``k``, ``M``, ``G``, ``T``, ``P``, ``E``) or
a decimal exponent (``e3``, ``E-2``). It is parsed exactly (:class:`~decimal.Decimal`), then
rounded up to an integer as Kubernetes' ``Value()`` and ``MilliValue()`` do: ``cpu`` becomes
millicores (YuniKorn's ``vcore``), everything else its count of units (memory in bytes), so
``"1.5"`` CPU is 1500 and ``"1.5"`` of anything else 2.

Anything else (an empty string, ``1.2.3``, ``5Q``, an exponent beyond 1e300) raises
:class:`QuantityError` naming the text; a value beyond the int64 range raises it too, because the
core's resources are int64 and saturating would silently change what a pod asks for.

Not the queue configuration's grammar: ``queues.yaml`` follows YuniKorn's own
(:func:`pyscheduler.common.resources.parse_quantity`: whole numbers, ``vcore`` in cores).
"""

from __future__ import annotations

import decimal
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Final

from pyscheduler.common.errors import SchedulerValueError
from pyscheduler.common.resources import VCORE

__all__ = ["INT64_MAX", "QuantityError", "core_name", "core_resources", "parse_quantity", "to_int", "to_milli"]

INT64_MAX: Final = (1 << 63) - 1

_BINARY: Final = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50, "Ei": 1 << 60}
_DECIMAL: Final = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_FORM: Final = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$")
#: Exact arithmetic for any quantity Kubernetes accepts (it limits them to about 10^18 x 10^18).
_CONTEXT: Final = decimal.Context(prec=200, rounding=decimal.ROUND_CEILING)
#: Kubernetes' CPU resource, the core's ``vcore``.
_CPU: Final = "cpu"


class QuantityError(SchedulerValueError):
    """A quantity that is not one, or does not fit the scheduler's integers."""


def parse_quantity(text: object) -> Decimal:
    """The exact value of a quantity (a string, or an integer as a JSON body may carry)."""
    if not isinstance(text, str):
        if isinstance(text, int) and not isinstance(text, bool):
            return Decimal(text)
        raise QuantityError(f"quantity {text!r}: not a string")
    match = _FORM.match(text.strip())
    if match is None:
        raise QuantityError(f"quantity {text!r}: not a Kubernetes quantity")
    number, suffix = Decimal(match.group(1)), match.group(2) or ""
    if suffix in _BINARY:
        return _CONTEXT.multiply(number, Decimal(_BINARY[suffix]))
    exponent = _DECIMAL[suffix] if suffix in _DECIMAL else int(suffix[1:])
    if abs(exponent) > 300:
        raise QuantityError(f"quantity {text!r}: exponent out of range")
    return _CONTEXT.scaleb(number, exponent)


def _ceil(value: Decimal, text: object) -> int:
    result = int(value.to_integral_value(rounding=decimal.ROUND_CEILING))
    if not -INT64_MAX - 1 <= result <= INT64_MAX:
        raise QuantityError(f"quantity {text!r}: beyond the int64 range")
    return result


def to_int(text: object) -> int:
    """The quantity rounded up to a whole unit (Kubernetes' ``Value()``)."""
    return _ceil(parse_quantity(text), text)


def to_milli(text: object) -> int:
    """The quantity in thousandths, rounded up (``MilliValue()``: ``100m`` cpu is 100)."""
    return _ceil(_CONTEXT.scaleb(parse_quantity(text), 3), text)


def core_name(name: str) -> str:
    """The core's name of a Kubernetes resource (``cpu`` is ``vcore``; the others keep theirs)."""
    return VCORE if name == _CPU else name


def core_resources(quantities: Mapping[str, object]) -> dict[str, int]:
    """A Kubernetes resource list (``{"cpu": "1.5", "memory": "2Gi"}``) in the core's names and
    units: ``cpu`` (or ``vcore``) in millicores as ``vcore``, everything else rounded up to whole
    units. Raises :class:`QuantityError` for the first quantity that is not one."""
    out: dict[str, int] = {}
    for name, text in quantities.items():
        out[core_name(name)] = to_milli(text) if name in (_CPU, VCORE) else to_int(text)
    return out
