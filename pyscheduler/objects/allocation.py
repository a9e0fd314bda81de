"""Allocations: one type for an ask (pending, no node) and an allocation (placed on a node).

Since YUNIKORN-2778 an ask and the allocation it becomes are the same object, keyed by the
allocation key (the pod UID in Kubernetes). Asks of an application are ordered by priority
(highest first), then creation time (oldest first), then key, so runs repeat exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyscheduler.common.resources import Resource

__all__ = ["Allocation", "ask_sort_key"]


@dataclass(eq=False, slots=True)
class Allocation:
    """An ask until it has a node, an allocation after. Owned by its application; changed only
    under the partition's lock."""

    allocation_key: str
    application_id: str
    resource: Resource
    priority: int = 0
    create_time_ns: int = 0
    tags: dict[str, str] = field(default_factory=dict)
    required_node: str = ""
    placeholder: bool = False
    task_group_name: str = ""
    originator: bool = False
    allow_preempt_self: bool = True
    allow_preempt_other: bool = False
    #: Set when the allocation is placed (or recovered) on a node.
    node_id: str = ""
    allocated: bool = False
    #: When it was placed (its bind time) and the instance type of that node.
    allocation_time_ns: int = 0
    instance_type: str = ""
    #: Scheduling attempts that failed, by reason (YuniKorn's allocLog, shown by REST), in
    #: order of last occurrence; ``alloc_log_time`` has the last time of a reason when known.
    alloc_log: dict[str, int] = field(default_factory=dict)
    alloc_log_time: dict[str, int] = field(default_factory=dict)
    #: Request events (YuniKorn's AskEvents): the quota checks that failed last time (an event
    #: goes out when one starts or stops failing) and when the last "predicates failed" event
    #: went out (monotonic seconds; at most one per PREDICATES_EVENT_INTERVAL).
    user_quota_failed: bool = False
    queue_headroom_failed: bool = False
    predicates_event_at: float | None = None
    #: Preemption: chosen as a victim (released by the RM later); this ask made victims (an
    #: ask preempts at most once); when it last passed the preconditions (ns, 0: never).
    preempted: bool = False
    triggered_preemption: bool = False
    #: A victim's preemptor and rule (pyscheduler.scheduler.preemption.note): the message of the
    #: APP REMOVE ALLOC_PREEMPT event that records its end.
    preemption_note: str = ""
    preempt_check_time_ns: int = 0
    #: When the last "no preemption victim found" event of a required-node ask went out.
    preemption_event_at: float | None = None
    #: Gang scheduling (pyscheduler.objects.placeholders). A placeholder the core asked the RM
    #: to release (replaced, timed out, too small) is ``released`` until the RM confirms; while
    #: a real member takes its place, the two point at each other (``replaced_by`` on the
    #: placeholder, ``replacing`` on the member, which is then placed but not yet allocated).
    released: bool = False
    replaced_by: Allocation | None = None
    replacing: Allocation | None = None
    #: A real allocation that took a placeholder's place, and when that placeholder was asked for.
    placeholder_used: bool = False
    placeholder_create_time_ns: int = 0

    def place(self, node_id: str, now_ns: int, instance_type: str = "") -> None:
        self.node_id = node_id
        self.allocated = True
        self.allocation_time_ns = now_ns
        self.instance_type = instance_type

    def unplace(self) -> None:
        """Back to a pending ask (a replacement undone)."""
        self.node_id = ""
        self.allocated = False
        self.allocation_time_ns = 0
        self.instance_type = ""

    def log_failure(self, reason: str, now_ns: int) -> None:
        """One more failed attempt for ``reason`` (YuniKorn's allocation log: count and last
        occurrence, shown by REST)."""
        # Re-inserted: the dict's order stays the order of last occurrence.
        self.alloc_log[reason] = self.alloc_log.pop(reason, 0) + 1
        self.alloc_log_time[reason] = now_ns


def ask_sort_key(ask: Allocation) -> tuple[int, int, str]:
    """Priority descending, then creation time ascending, then key (deterministic ties)."""
    return (-ask.priority, ask.create_time_ns, ask.allocation_key)
