"""Events: YuniKorn's event records and enums, and the event system that keeps them.

See :mod:`pyscheduler.events.system` for the pipeline (non-blocking intake, Rust ring
buffer, request events for the RM, stream subscriptions).
"""

from pyscheduler._native import EventIdOutOfRangeError, EventSystemStoppedError, Subscription
from pyscheduler.events.system import EventStats, EventSystem
from pyscheduler.si.events import EventChangeDetail, EventChangeType, EventRecord, EventRecordType

__all__ = [
    "EventChangeDetail",
    "EventChangeType",
    "EventIdOutOfRangeError",
    "EventRecord",
    "EventRecordType",
    "EventStats",
    "EventSystem",
    "EventSystemStoppedError",
    "Subscription",
]
