"""The lock model of the object graph, and its debug check.

The lock model, in two rules:

1. **One lock per partition.** ``Partition.lock`` (an ``RLock``) guards the partition's whole
   object graph: its queues, applications, asks and allocations, nodes, reservations and
   user/group usage. Every change, and every read that needs a consistent view (the
   scheduling cycle, the REST layer copying values), holds it. The objects have no locks of
   their own. ``ClusterContext.lock`` guards registration and configuration (which RMs and
   partitions exist); it is taken before a partition's lock, never after.
2. **Nothing reaches the RM under a lock.** What a change means for the RM is collected in the
   partition's outbox while the lock is held and sent once it is released, so an RM may call
   back in from any thread.

The check: with ``PYSCHEDULER_CHECK_LOCKS=1`` in the environment (the test suite sets it), the
objects' mutating methods raise :class:`LockNotHeldError` when the calling thread does not
hold their partition's lock. Off by default: the check is one module-level flag test on the
hot path then. Objects built outside a partition (unit tests of one queue or node) have no
partition lock and are never checked.
"""

from __future__ import annotations

import os
import threading
from typing import Final

from pyscheduler.common.errors import SchedulerError

__all__ = ["CHECK_LOCKS", "LockNotHeldError", "check_held", "new_graph_lock"]

#: Whether mutations check that their partition's lock is held (read once, at import).
CHECK_LOCKS: Final = os.environ.get("PYSCHEDULER_CHECK_LOCKS", "") not in ("", "0")

class LockNotHeldError(SchedulerError, RuntimeError):
    """An object of a partition was changed by a thread that does not hold the partition's lock."""


def new_graph_lock() -> threading.RLock:
    """A partition's lock: re-entrant, as the cycle calls methods that take it again."""
    return threading.RLock()


def check_held(lock: threading.RLock | None, what: str) -> None:
    """Raises :class:`LockNotHeldError` unless the calling thread holds ``lock`` (None: an
    object outside any partition, not checked). Call only when :data:`CHECK_LOCKS` is set."""
    # _is_owned is the RLock's own owner test (C and pure-Python implementations alike).
    if lock is not None and not lock._is_owned():  # type: ignore[attr-defined]
        raise LockNotHeldError(f"{what} changed without holding its partition's lock")
