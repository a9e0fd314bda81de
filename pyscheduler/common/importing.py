"""The one loader of ``module:attr`` names, as the command line takes them (``--rm
mypackage.shim:attach``, the reporter agent's ``--plugin mypackage.plugins:Probe``).

Contract:

- ``module:attr`` imports ``module`` and walks ``attr`` through dotted attributes
  (``pkg.mod:Outer.factory``); ``module`` alone means ``module:<default_attr>`` when the
  caller names a default, and is refused otherwise.
- A malformed name (empty module or attribute, no attribute and no default) raises
  :class:`ValueError`; a module that cannot be imported raises the :class:`ImportError`
  the import raised (``name`` set to the missing module); a missing attribute raises
  :class:`AttributeError` naming the whole spec. Nothing is called: what the object is for
  (a callable, a plugin) is the caller's check.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

__all__ = ["ObjectName", "load_object", "parse_object_name"]


@dataclass(frozen=True)
class ObjectName:
    """A parsed ``module:attr``: the module to import and the dotted attribute path in it."""

    module: str
    attr: str

    def __str__(self) -> str:
        return f"{self.module}:{self.attr}"


def parse_object_name(spec: str, *, default_attr: str | None = None) -> ObjectName:
    """``spec`` split into module and attribute (ValueError for a malformed one)."""
    module, colon, attr = spec.strip().partition(":")
    if not colon:
        attr = default_attr or ""
    if not module or not attr or any(not part for part in attr.split(".")):
        expected = "MODULE[:ATTR]" if default_attr else "MODULE:ATTR"
        raise ValueError(f"{spec!r}: expected {expected}")
    return ObjectName(module, attr)


def load_object(spec: str, *, default_attr: str | None = None) -> object:
    """The object ``spec`` names (see the module doc for the errors)."""
    name = parse_object_name(spec, default_attr=default_attr)
    found: object = importlib.import_module(name.module)
    for part in name.attr.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise AttributeError(f"{name}: {name.module!r} has no attribute {name.attr!r}") from None
    return found
