"""Partitions (YuniKorn's PartitionInfo) and their placement rules (RuleDAO).

Locks: each partition's lock is held only while its values are copied; the JSON is built
after. Nothing is changed.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from pyscheduler.dao._common import abs_used_capacity, find_partition, put, res_map, sorted_map, sorted_partitions
from pyscheduler.policies.placement import GROUP_NAME_RE, SPECIAL_RE, USER_NAME_RE, RecoveryRule
from pyscheduler.scheduler.context import external_name

if TYPE_CHECKING:
    from pyscheduler.objects.partition import Partition
    from pyscheduler.policies.placement import FilterSpec, RuleSpec
    from pyscheduler.scheduler.context import ClusterContext

__all__ = ["partition_info", "partitions", "placement_rules", "rule_dao"]

RECOVERY_RULE = RecoveryRule.kind


def _live_allocations(partition: Partition) -> int:
    return sum(len(app.allocations) for app in partition.applications.values())


def partition_info(partition: Partition) -> dict[str, Any]:
    """PartitionInfo of one partition."""
    with partition.lock:  # copy the values; build the JSON after
        total_resource = partition.total
        used_resource = partition.root.allocated
        states: Counter[str] = Counter()
        for table in (partition.applications, partition.completed_applications, partition.rejected_applications):
            for app in table.values():
                states[app.state.value] += 1
        sort_policy = partition.node_sort_policy
        weights = dict(partition.resource_weights)
        preemption, quota_preemption = bool(partition.preemption_enabled), bool(partition.quota_preemption_enabled)
        total_nodes = len(partition.nodes)
        containers = _live_allocations(partition)
        state, state_time = partition.state.value, partition.state_time_ns
    total = res_map(total_resource)
    used = res_map(used_resource, prune=True)
    applications = sorted_map(states)
    applications["total"] = sum(states.values())
    applications = sorted_map(applications)
    capacity: dict[str, Any] = {}
    put(capacity, "capacity", total)
    put(capacity, "usedCapacity", used)
    put(capacity, "utilization", abs_used_capacity(total, used))
    policy: dict[str, Any] = {}
    put(policy, "type", sort_policy)
    put(policy, "resourceWeights", {k: float(v) for k, v in sorted(weights.items())})
    out: dict[str, Any] = {
        "clusterId": partition.rm_id,
        "name": external_name(partition.name),
        "capacity": capacity,
        "nodeSortingPolicy": policy,
        "preemptionEnabled": preemption,
        "quotaPreemptionEnabled": quota_preemption,
    }
    put(out, "totalNodes", total_nodes)
    out["applications"] = applications
    put(out, "totalContainers", containers)
    put(out, "state", state)
    put(out, "lastStateTransitionTime", state_time)
    return out


def partitions(ctx: ClusterContext) -> list[dict[str, Any]]:
    """``/partitions``: one PartitionInfo per partition (``[]`` when none)."""
    return [partition_info(p) for p in sorted_partitions(ctx)]


# -- placement rules ------------------------------------------------------------------------------


def _names_or_exp(entries: tuple[str, ...], name_re: Any) -> tuple[list[str], str]:
    """YuniKorn's filter lists: one entry with a regexp character is an expression, one valid
    name a list of one; several entries a list of the valid names."""
    if len(entries) == 1:
        entry = entries[0]
        if SPECIAL_RE.search(entry):
            return [], entry
        return ([entry] if name_re.fullmatch(entry) else []), ""
    return sorted({e for e in entries if name_re.fullmatch(e)}), ""


def _filter_dao(spec: FilterSpec | None) -> dict[str, Any] | None:
    if spec is None or (not spec.users and not spec.groups):
        return None
    users, user_exp = _names_or_exp(spec.users, USER_NAME_RE)
    groups, group_exp = _names_or_exp(spec.groups, GROUP_NAME_RE)
    out: dict[str, Any] = {"type": "deny" if spec.type.lower() == "deny" else "allow"}
    put(out, "userList", users)
    put(out, "groupList", groups)
    put(out, "userExp", user_exp)
    put(out, "groupExp", group_exp)
    return out


def _bool(value: bool) -> str:
    return "true" if value else "false"


def rule_dao(spec: RuleSpec) -> dict[str, Any]:
    """RuleDAO of a configured rule and its parent chain."""
    name = spec.name.lower()
    parameters = {"create": _bool(spec.create)}
    if name == "fixed":
        queue = spec.value.lower()
        parameters["queue"] = queue
        parameters["qualified"] = _bool(queue == "root" or queue.startswith("root."))
    elif name == "tag":
        parameters["tagName"] = spec.value.lower()
    out: dict[str, Any] = {"name": name}
    put(out, "parameters", sorted_map(parameters))
    filter_dao = _filter_dao(spec.filter)
    if filter_dao is not None:
        out["filter"] = filter_dao
    if spec.parent is not None:
        out["parentRule"] = rule_dao(spec.parent)
    return out


def partition_rule_daos(partition: Partition) -> list[dict[str, Any]]:
    """The partition's rules in evaluation order, ending with the implicit recovery rule."""
    rules = [rule_dao(spec) for spec in partition.placement.rules]
    # YuniKorn's recovery rule has no parameters, filter or parent.
    rules.append({"name": RECOVERY_RULE})
    return rules


def placement_rules(ctx: ClusterContext, partition: str) -> list[dict[str, Any]]:
    """``/partition/{p}/placementrules``."""
    return partition_rule_daos(find_partition(ctx, partition))
