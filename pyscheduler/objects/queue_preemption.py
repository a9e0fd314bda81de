"""A queue's preemption settings, read from its (merged) properties as YuniKorn reads them.

- ``preemption.policy``: ``default``, ``fence`` or ``disabled``; any other value is ``default``
  (YuniKorn logs it at debug level). Only ``disabled`` is inherited (``Queue._merge_properties``).
  ``disabled`` only stops the leaf's allocations from being victims of guaranteed-share
  preemption; its own asks may still preempt. ``fence`` stops the search for victims from
  going above the queue.
- ``preemption.delay``: a Go duration an ask waits after its creation before it may preempt;
  anything that does not parse or is not above zero is the default, 30 s.
- ``quota.preemption.delay``: a Go duration after which a lowered max is enforced by releasing
  allocations; anything that does not parse or is not above zero is 0, which means never.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Final

from pyscheduler.common.goduration import parse_go_duration

__all__ = [
    "DEFAULT_PREEMPTION_DELAY_NS",
    "PREEMPTION_DELAY",
    "PREEMPTION_POLICY",
    "PreemptionPolicy",
    "QUOTA_PREEMPTION_DELAY",
    "preemption_delay_ns",
    "preemption_policy",
    "quota_preemption_delay_ns",
]

PREEMPTION_POLICY: Final = "preemption.policy"
PREEMPTION_DELAY: Final = "preemption.delay"
QUOTA_PREEMPTION_DELAY: Final = "quota.preemption.delay"
#: YuniKorn's configs.DefaultPreemptionDelay.
DEFAULT_PREEMPTION_DELAY_NS: Final = 30 * 1_000_000_000


class PreemptionPolicy(Enum):
    DEFAULT = "default"
    FENCE = "fence"
    DISABLED = "disabled"


def preemption_policy(properties: Mapping[str, str]) -> PreemptionPolicy:
    text = properties.get(PREEMPTION_POLICY, "").lower()
    for policy in PreemptionPolicy:
        if policy.value == text:
            return policy
    return PreemptionPolicy.DEFAULT


def preemption_delay_ns(properties: Mapping[str, str]) -> int:
    return _positive_duration(properties.get(PREEMPTION_DELAY), DEFAULT_PREEMPTION_DELAY_NS)


def quota_preemption_delay_ns(properties: Mapping[str, str]) -> int:
    return _positive_duration(properties.get(QUOTA_PREEMPTION_DELAY), 0)


def _positive_duration(text: str | None, default: int) -> int:
    if not text:
        return default
    try:
        delay = parse_go_duration(text)
    except ValueError:
        return default
    return delay if delay > 0 else default
