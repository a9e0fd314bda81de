"""Scheduler-wide endpoints: clusters, health check, node utilisations, history, configuration
and configuration validation.

Locks: each partition's lock is held only while its values are copied; the
configuration objects are immutable. Nothing is changed, except the health checker's own last
result.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyscheduler.dao._common import abs_used_capacity, put, sorted_map, sorted_partitions
from pyscheduler.dao.errors import HEALTH_CHECK_NOT_AVAILABLE, HISTORY_NOT_ENABLED, DAOError, NotFound
from pyscheduler.scheduler.context import external_name

if TYPE_CHECKING:
    from pyscheduler.config.queues import (
        ChildTemplateConfig,
        LimitConfig,
        PartitionConfig,
        PlacementRuleConfig,
        QueueConfig,
        ResourcesConfig,
        SchedulerConfig,
    )
    from pyscheduler.objects.partition import Partition
    from pyscheduler.scheduler.context import ClusterContext
    from pyscheduler.scheduler.history import History

__all__ = [
    "clusters",
    "config",
    "healthcheck",
    "history_apps",
    "history_containers",
    "node_utilizations",
    "validate_conf",
]

log = logging.getLogger(__name__)

CLUSTER_NAME = "kubernetes"
#: YuniKorn's lock tracking settings; pyscheduler has no deadlock detector.
DEADLOCK_TIMEOUT_SECONDS = 60


# -- clusters -------------------------------------------------------------------------------------


def _build_information(ctx: ClusterContext) -> list[dict[str, str]]:
    """Each registered RM's whole build information map plus its ``rmId`` (YuniKorn's
    rmBuildInformation), keys sorted."""
    return [sorted_map({**rm.build_info, "rmId": rm.rm_id}) for rm in ctx.registered_rms()]


def clusters(ctx: ClusterContext) -> list[dict[str, Any]]:
    """``/clusters``: one ClusterDAOInfo per partition, with its RM's ``clusterId``."""
    build = _build_information(ctx)
    out = []
    for partition in sorted_partitions(ctx):
        entry: dict[str, Any] = {}
        put(entry, "startTime", ctx.start_time_ns)
        put(entry, "rmBuildInformation", build)
        entry["partition"] = external_name(partition.name)
        entry["clusterName"] = CLUSTER_NAME
        # pyscheduler's addition: the partition's RM, as in /partitions (several RMs may each
        # have a ``default``).
        entry["clusterId"] = partition.rm_id
        out.append(entry)
    return out


# -- health check -----------------------------------------------------------------------------------

def healthcheck(ctx: ClusterContext) -> dict[str, Any]:
    """``/scheduler/healthcheck``: the last result of the context's health checker (PascalCase,
    200 even when unhealthy); NotFound ``Health check is not available`` before a check ran."""
    checker = ctx.health_checker
    result = checker.last if checker is not None else None
    if result is None:
        raise NotFound(HEALTH_CHECK_NOT_AVAILABLE)
    return result.to_dao()


# -- node utilisations ----------------------------------------------------------------------------------


def _bucket(percent: int) -> int:
    """YuniKorn's bucket of a utilisation percentage: ``Dim(ceil(v/10), 1)``, 0..9 (over 100%
    stays in the last bucket, where YuniKorn would fail)."""
    return min(9, max(0, math.ceil(percent / 10) - 1))


def partition_node_utilization(partition: Partition) -> dict[str, Any]:
    """PartitionNodesUtilDAOInfo: per resource type, the partition's nodes in 10 buckets."""
    buckets: dict[str, list[list[str]]] = {}
    with partition.lock:  # copy (Resources are immutable); bucket after
        usage = [(node_id, node.total, node.allocated) for node_id, node in sorted(partition.nodes.items())]
    for node_id, total, used in usage:
        capacity = dict(total)
        percent = abs_used_capacity(capacity, dict(used))
        for kind in capacity:
            idx = _bucket(percent[kind]) if kind in percent else 0
            buckets.setdefault(kind, [[] for _ in range(10)])[idx].append(node_id)
    out: dict[str, Any] = {"clusterId": partition.rm_id, "partition": external_name(partition.name)}
    utilizations = []
    for kind in sorted(buckets):
        entries = []
        for k, names in enumerate(buckets[kind]):
            entry: dict[str, Any] = {"bucketName": f"{k * 10}-{(k + 1) * 10}%"}
            put(entry, "numOfNodes", len(names))
            put(entry, "nodeNames", sorted(names))
            entries.append(entry)
        utilizations.append({"type": kind, "utilization": entries})
    put(out, "utilizations", utilizations)
    return out


def node_utilizations(ctx: ClusterContext) -> list[dict[str, Any]] | None:
    """``/scheduler/node-utilizations``: one entry per partition; None (JSON null, as upstream)
    when there is no partition."""
    result = [partition_node_utilization(p) for p in sorted_partitions(ctx)]
    return result or None


# -- history --------------------------------------------------------------------------------------------


def history_apps(history: History | None) -> list[dict[str, Any]]:
    """``/history/apps``: ``[{timestamp, totalApplications: "<n>"}]`` oldest first; a 500
    ``Internal metrics collection is not enabled.`` without a history."""
    if history is None:
        raise DAOError(HISTORY_NOT_ENABLED, 500)
    return [{"timestamp": ts, "totalApplications": str(n)} for ts, n in history.apps()]


def history_containers(history: History | None) -> list[dict[str, Any]]:
    """``/history/containers``: ``[{timestamp, totalContainers: "<n>"}]`` oldest first."""
    if history is None:
        raise DAOError(HISTORY_NOT_ENABLED, 500)
    return [{"timestamp": ts, "totalContainers": str(n)} for ts, n in history.containers()]


# -- configuration ----------------------------------------------------------------------------------------


def _quantity(name: str, value: int) -> str:
    """A parsed quantity back as configuration text (vcore is kept in millicores)."""
    if name == "vcore":
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    return str(value)


def _quantities(resource: Mapping[str, int] | None) -> dict[str, str]:
    if resource is None:
        return {}
    return {name: _quantity(name, resource[name]) for name in sorted(resource)}


def _resources(conf: ResourcesConfig) -> dict[str, Any]:
    out: dict[str, Any] = {}
    put(out, "Guaranteed", _quantities(conf.guaranteed))
    put(out, "Max", _quantities(conf.max))
    return out


def _limit(conf: LimitConfig) -> dict[str, Any]:
    out: dict[str, Any] = {"Limit": conf.limit}
    put(out, "Users", list(conf.users))
    put(out, "Groups", list(conf.groups))
    put(out, "MaxResources", _quantities(conf.max_resources))
    put(out, "MaxApplications", conf.max_applications)
    return out


def _child_template(conf: ChildTemplateConfig | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if conf is None:
        return out
    put(out, "MaxApplications", conf.max_applications)
    put(out, "Properties", sorted_map(conf.properties))
    out["Resources"] = _resources(conf.resources)
    return out


def _queue(conf: QueueConfig) -> dict[str, Any]:
    out: dict[str, Any] = {"Name": conf.name}
    put(out, "Parent", conf.parent)
    out["Resources"] = _resources(conf.resources)
    put(out, "MaxApplications", conf.max_applications)
    put(out, "Properties", sorted_map(conf.properties))
    put(out, "AdminACL", conf.admin_acl or "")
    put(out, "SubmitACL", conf.submit_acl or "")
    out["ChildTemplate"] = _child_template(conf.child_template)
    put(out, "Queues", [_queue(q) for q in conf.queues])
    put(out, "Limits", [_limit(limit) for limit in conf.limits])
    return out


def _rule(conf: PlacementRuleConfig) -> dict[str, Any]:
    out: dict[str, Any] = {"Name": conf.name}
    put(out, "Create", conf.create)
    rule_filter: dict[str, Any] = {"Type": conf.filter.type if conf.filter is not None else ""}
    if conf.filter is not None:
        put(rule_filter, "Users", list(conf.filter.users))
        put(rule_filter, "Groups", list(conf.filter.groups))
    out["Filter"] = rule_filter
    if conf.parent is not None:
        out["Parent"] = _rule(conf.parent)
    put(out, "Value", conf.value)
    return out


def _partition(conf: PartitionConfig) -> dict[str, Any]:
    out: dict[str, Any] = {"Name": conf.name, "Queues": [_queue(conf.queues)]}
    put(out, "PlacementRules", [_rule(r) for r in conf.placement_rules])
    put(out, "Limits", [_limit(limit) for limit in conf.limits])
    out["Preemption"] = {
        "Enabled": conf.preemption.enabled,
        "QuotaPreemptionEnabled": conf.preemption.quota_preemption_enabled,
    }
    policy: dict[str, Any] = {"Type": conf.node_sort_policy.type}
    put(policy, "ResourceWeights", {k: float(v) for k, v in sorted(conf.node_sort_policy.resource_weights.items())})
    out["NodeSortPolicy"] = policy
    out["UserGroupResolver"] = {"Type": conf.user_group_resolver.type}
    return out


def _current_config(ctx: ClusterContext) -> SchedulerConfig | None:
    """The configuration of the (first) registered RM's policy group."""
    configs = ctx.configurations()
    for rm in ctx.registered_rms():
        found = configs.get(rm.policy_group)
        if found is not None:
            return found
    return next(iter(configs.values()), None)


def _extra_config(ctx: ClusterContext) -> dict[str, str]:
    """The extra configuration of the (first) registered RM that has one (YuniKorn has one RM
    and shows its configmap's settings)."""
    for rm in ctx.registered_rms():
        if rm.extra_config:
            return sorted_map(rm.extra_config)
    return {}


def config_dao(ctx: ClusterContext) -> dict[str, Any]:
    """ConfigDAOInfo as JSON: the configuration's PascalCase structs, the extra config and the
    deadlock detection settings."""
    out: dict[str, Any] = {}
    conf = _current_config(ctx)
    if conf is not None:
        out["Partitions"] = [_partition(p) for p in conf.partitions]
        put(out, "Checksum", conf.checksum)
    put(out, "Extra", _extra_config(ctx))
    out["DeadlockDetectionEnabled"] = False
    out["DeadlockTimeoutSeconds"] = DEADLOCK_TIMEOUT_SECONDS
    return out


def _yaml_tree(value: Any) -> Any:
    """The JSON shape as YAML wants it: lower-case keys and yaml.v3's omitempty (zero values and
    empty structs left out)."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            converted = _yaml_tree(item)
            if converted in (None, False, 0, "", {}, []):
                continue
            out[key.lower()] = converted
        return out
    if isinstance(value, list):
        return [_yaml_tree(item) for item in value]
    return value


def config(ctx: ClusterContext, as_json: bool = True) -> dict[str, Any] | str:
    """``/config``: the JSON shape (``Accept: application/json``) or the same as YAML text."""
    dao = config_dao(ctx)
    if as_json:
        return dao
    import yaml

    return yaml.safe_dump(_yaml_tree(dao), sort_keys=False, default_flow_style=False, allow_unicode=True)


def validate_conf(text: str) -> dict[str, Any]:
    """``/validate-conf``: ``{"allowed": bool, "reason": "<why not>"}`` (reason only when
    refused). Never raises for a bad configuration."""
    from pyscheduler.config.loader import parse_and_validate

    try:
        parse_and_validate(text)
    except Exception as err:  # any parse or validation failure is the answer, not an error
        reason = str(err) or type(err).__name__
        return {"allowed": False, "reason": reason}
    return {"allowed": True}
