"""An event system is freed once its last user drops it: the native store holds its request
sink weakly (the cyclic collector cannot see through a native object, so a bound method there
kept every context's event system and ring buffer alive; found by the preemption state
machine, which creates hundreds of contexts)."""

from __future__ import annotations

import gc
import weakref

from pyscheduler.common.clock import ManualClock
from pyscheduler.events.system import EventSystem
from pyscheduler.scheduler.context import ClusterContext


def test_a_dropped_event_system_is_freed() -> None:
    system = EventSystem(clock=ManualClock())
    ref = weakref.ref(system)
    system.stop()
    del system
    gc.collect()
    assert ref() is None


def test_a_dropped_context_frees_its_event_system() -> None:
    context = ClusterContext(clock=ManualClock())
    ref = weakref.ref(context.event_system)
    context.event_system.stop()
    del context
    gc.collect()
    assert ref() is None
