"""Resource usage over time, per instance type: what YuniKorn reports as an application's
``resourceHistory`` (its ``TrackedResource``).

When an allocation ends, its resources times the whole seconds it was held (bind to release,
truncated like Go's ``int64(d.Seconds())``) are added under the instance type of its node
(the ``si/instance-type`` attribute). Three are kept per application: ordinary allocations,
placeholders, and allocations preempted by the scheduler.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["TrackedResource"]

_NS_PER_S = 1_000_000_000


class TrackedResource:
    """instance type -> resource type -> resource-seconds. Changed under the owner's lock."""

    __slots__ = ("_usage",)

    def __init__(self) -> None:
        self._usage: dict[str, dict[str, int]] = {}

    def aggregate(self, instance_type: str, resource: Mapping[str, int], bind_ns: int, release_ns: int) -> None:
        seconds = max(release_ns - bind_ns, 0) // _NS_PER_S
        usage = self._usage.setdefault(instance_type, {})
        for name, quantity in resource.items():
            usage[name] = usage.get(name, 0) + quantity * seconds

    def as_map(self) -> dict[str, dict[str, int]]:
        """A copy, instance types and resource types sorted (stable REST output)."""
        return {inst: dict(sorted(usage.items())) for inst, usage in sorted(self._usage.items())}

    def __bool__(self) -> bool:
        return bool(self._usage)
