"""The one switch between the native (Rust) implementations and their pure-Python twins.

Contract:

- The native module ``pyscheduler._native`` is always required: :class:`~pyscheduler.common.resources.Resource`
  and the event store are native only. Their pure-Python twins exist as test oracles and live
  under :mod:`pyscheduler.testing` (which the product never imports).
- Where the product keeps a pure-Python twin it can *run* (the guaranteed-preemption node plan,
  the node ordering), the choice is made by asking :func:`enabled` when the twin is chosen,
  never by a flag of the twin's own module, a constructor argument threaded through layers or
  a ``try: import ... except ImportError``.
- The process-wide default comes from one environment variable, :data:`ENV_VAR`
  (``PYSCHEDULER_NATIVE``): ``0``, ``false``, ``no`` or ``off`` (any case) run the pure-Python
  twins; unset or anything else runs the native ones. It is read once, at import.
- Tests flip it for a block with :func:`forced` (restored on exit, nesting allowed); a command
  line option sets it for the process with :func:`set_enabled`.

The switch is a plain module-level boolean: reading it costs one global lookup, so a hot path
may ask per call; flipping it affects what is chosen afterwards, not objects already built.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

__all__ = ["ENV_VAR", "enabled", "forced", "set_enabled"]

#: The environment variable holding the process-wide default.
ENV_VAR: Final = "PYSCHEDULER_NATIVE"

_OFF: Final = frozenset({"0", "false", "no", "off"})


def _from_environment() -> bool:
    return os.environ.get(ENV_VAR, "").strip().lower() not in _OFF


#: Whether the native implementations run (False: their pure-Python twins).
_native: bool = _from_environment()


def enabled() -> bool:
    """Whether the native implementation runs where a pure-Python twin could."""
    return _native


def set_enabled(native: bool) -> None:
    """Chooses the native implementations (True) or the pure-Python twins (False) for the
    rest of the process (what is built from now on)."""
    global _native
    _native = native


@contextmanager
def forced(native: bool) -> Iterator[None]:
    """Runs the block with the native implementations (True) or the pure-Python twins (False),
    then restores the previous choice (even when the block raises)."""
    global _native
    previous = _native
    _native = native
    try:
        yield
    finally:
        _native = previous
