"""Kubernetes resource quantities: the core's one parser (:mod:`pyscheduler.common.quantity`),
under the name the shim's modules import it by."""

from __future__ import annotations

from pyscheduler.common.quantity import INT64_MAX, QuantityError, parse_quantity, to_int, to_milli

__all__ = ["INT64_MAX", "QuantityError", "parse_quantity", "to_int", "to_milli"]
