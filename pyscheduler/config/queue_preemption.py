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
from pyscheduler.config.queues import QueueConfig, SchedulerConfig

__all__ = [
    "DEFAULT_PREEMPTION_DELAY_NS",
    "PREEMPTION_DELAY",
    "PREEMPTION_POLICY",
    "PreemptionPolicy",
    "QUOTA_PREEMPTION_DELAY",
    "preemption_delay_ns",
    "preemption_policy",
    "preemption_warnings",
    "property_warnings",
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


def property_warnings(properties: Mapping[str, str], path: str) -> list[str]:
    """What an invalid preemption property of the queue at ``path`` becomes (YuniKorn accepts
    the configuration and uses the default); ``validate-conf`` prints these as warnings."""
    out: list[str] = []
    policy = properties.get(PREEMPTION_POLICY)
    if policy is not None and policy.lower() not in {p.value for p in PreemptionPolicy}:
        out.append(f"{path}: {PREEMPTION_POLICY} {_shown(policy)} is not default, fence or disabled: default is used")
    for key, default in ((PREEMPTION_DELAY, "30s"), (QUOTA_PREEMPTION_DELAY, "0s (never)")):
        text = properties.get(key)
        if text is None:
            continue
        try:
            valid = parse_go_duration(text) > 0
        except ValueError:
            valid = False
        if not valid:
            out.append(f"{path}: {key} {_shown(text)} is not a duration above zero: {default} is used")
    return out


def _shown(value: str, limit: int = 64) -> str:
    """A value quoted for a warning, cut after ``limit`` characters (a hostile file may hold
    a value of any length)."""
    if len(value) <= limit:
        return repr(value)
    return f"{value[:limit]!r}... ({len(value):,} characters)"


def preemption_warnings(config: SchedulerConfig) -> list[str]:
    """:func:`property_warnings` of every queue of every partition, in tree order."""
    out: list[str] = []

    def walk(queue: QueueConfig, path: str) -> None:
        out.extend(property_warnings(queue.properties, path))
        for child in queue.queues:
            walk(child, f"{path}.{child.name.lower()}")

    for partition in config.partitions:
        walk(partition.queues, f"partition {partition.name}, queue {partition.queues.name.lower()}")
    return out
