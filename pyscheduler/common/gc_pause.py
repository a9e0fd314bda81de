"""Pausing Python's cyclic garbage collector around a short burst of allocations, process-wide.

Why: the objects alive when a young collection runs are promoted to older generations and
counted toward the next *full* collection, which walks the whole heap (hundreds of ms with a
large scheduler state, the scheduling thread waiting). A burst of short-lived objects (a
snapshot under a lock, plugins' answers compared and dropped) is freed by reference counting
moments later, yet if a collection meets it, it is promoted and brings the next full
collection closer. Paused, the burst never meets a collection.

Contract: pauses nest, across threads (a count under a lock): the collector is enabled again
when the last pause ends, and only if it was enabled when the first began. A pause must be
short (milliseconds to a few hundred): nothing cyclic is collected while it lasts.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """Runs the block with the cyclic collector paused (see the module doc)."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
