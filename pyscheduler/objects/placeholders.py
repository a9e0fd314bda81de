"""Gang scheduling's plain data: task groups, styles, timeouts and messages (YuniKorn's
placeholders; ``shared/spec/yunikorn/gang.md``).

A gang application declares its task groups up front: ``placeholder_ask`` is their total size.
The RM submits one placeholder ask per member (``placeholder=True`` and its task group); once
every placeholder is allocated the application runs, and each real member of a task group then
takes a placeholder's place (:mod:`pyscheduler.scheduler.cycle`, "placeholder replacement").
The placeholder timer starts at the first placeholder allocation; on expiry a running
application gives up its unused placeholders, and one still waiting for its gang resumes as a
normal application (``Soft``) or fails (``Hard``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Final

from pyscheduler.common.resources import Resource
from pyscheduler.si.vocabulary import APP_CREATION_TIME_TAG

__all__ = [
    "CANCEL_INCOMPATIBLE",
    "DEFAULT_PLACEHOLDER_TIMEOUT_NS",
    "GangCounts",
    "GangStyle",
    "PlaceholderData",
    "RELEASE_ALLOCATED_ON_TIMEOUT",
    "RELEASE_PENDING_ON_TIMEOUT",
    "REPLACING",
    "RESERVATION_TIMEOUT",
    "placeholder_timeout_ns",
]

#: A placeholder timeout of 0 (or none) means this long (YuniKorn's defaultPlaceholderTimeout).
DEFAULT_PLACEHOLDER_TIMEOUT_NS: Final = 15 * 60 * 1_000_000_000
#: The messages of the core's releases and state changes (YuniKorn's wording).
REPLACING: Final = "replacing allocationKey: "
CANCEL_INCOMPATIBLE: Final = "cancel placeholder: resource incompatible"
RELEASE_ALLOCATED_ON_TIMEOUT: Final = "releasing allocated placeholders on placeholder timeout"
RELEASE_PENDING_ON_TIMEOUT: Final = "releasing pending placeholders on placeholder timeout"
RESERVATION_TIMEOUT: Final = "ResourceReservationTimeout"


class GangStyle(str, Enum):
    """What happens to an application whose gang did not complete in time."""

    SOFT = "Soft"  # it goes on as a normal application
    HARD = "Hard"  # it fails

    @classmethod
    def parse(cls, value: str) -> GangStyle:
        """YuniKorn's rule: exactly ``Hard`` is hard, anything else (empty, unknown) soft."""
        return cls.HARD if value == cls.HARD.value else cls.SOFT


@dataclass
class PlaceholderData:
    """One task group of an application, as REST ``placeholderData`` shows it: how many
    placeholders were asked for (``count``), the size of the first (``min_resource``), and how
    many were replaced by real members or ended otherwise (``timed_out``: timeouts, preemption,
    node removal, a size mismatch). ``count - replaced - timed_out`` are still to be used."""

    task_group_name: str
    min_resource: Resource
    count: int = 0
    replaced: int = 0
    timed_out: int = 0

    @property
    def replaceable(self) -> bool:
        """Whether a real member of this group still waits for a placeholder."""
        return self.count > self.replaced + self.timed_out


@dataclass
class GangCounts:
    """A partition's placeholders since it was made (the metrics read them): asked for (one
    per placeholder ask, recovered placeholders included), allocated, replaced by a real member,
    and timed out (ended any other way, placed or not, as :class:`PlaceholderData` counts
    ``timed_out``). Its applications count under the partition's lock; completed applications
    leaving the partition take nothing away."""

    asked: int = 0
    allocated: int = 0
    replaced: int = 0
    timed_out: int = 0


def placeholder_timeout_ns(execution_timeout_ms: int, tags: Mapping[str, str], now_ns: int) -> int:
    """The placeholder timeout of a new application: the RM's execution timeout (0 or less:
    15 minutes), counted from the application's creation time tag when it has one (an
    application the RM re-submits after a restart keeps its deadline); at least 1 ms."""
    timeout = execution_timeout_ms * 1_000_000 if execution_timeout_ms > 0 else DEFAULT_PLACEHOLDER_TIMEOUT_NS
    created = tags.get(APP_CREATION_TIME_TAG, "")
    if created.isdigit():
        elapsed = now_ns - int(created) * 1_000_000_000
        if elapsed > 0:
            timeout -= elapsed
    return max(timeout, 1_000_000)
