"""Applying a parsed partition configuration to a partition: at creation and on reload.

On reload (YuniKorn's ``updatePartitionDetails``): existing queues take their new settings,
new queues are created, queues no longer configured are marked Draining (removed once empty),
a dynamic queue that appears in the configuration becomes managed; placement rules, node
sorting, preemption flags and user/group limits are replaced.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from pyscheduler.config.queues import (
    ACL,
    ChildTemplateConfig,
    FilterConfig,
    LimitConfig,
    PartitionConfig,
    PlacementRuleConfig,
    QueueConfig,
)
from pyscheduler.objects.partition import Partition
from pyscheduler.objects.queue import Queue, QueueSettings
from pyscheduler.objects.ugm import LimitSpec
from pyscheduler.policies.placement import FilterSpec, PlacementManager, RuleSpec
from pyscheduler.scheduler.preemption import quota as quota_preemption

__all__ = ["apply_partition_config", "queue_settings", "root_settings"]


def _acl(text: str | None) -> ACL | None:
    return None if text is None else ACL.parse(text)


def queue_settings(conf: QueueConfig | ChildTemplateConfig, *, is_root: bool = False) -> QueueSettings:
    children = getattr(conf, "queues", ())
    template = getattr(conf, "child_template", None)
    return QueueSettings(
        parent=is_root or bool(getattr(conf, "parent", False)) or bool(children),
        max_resource=conf.resources.max if conf.resources else None,
        guaranteed=conf.resources.guaranteed if conf.resources else None,
        max_applications=conf.max_applications,
        properties=dict(conf.properties),
        submit_acl=_acl(getattr(conf, "submit_acl", None)),
        admin_acl=_acl(getattr(conf, "admin_acl", None)),
        child_template=queue_settings(template) if template is not None else None,
    )


def root_settings(conf: PartitionConfig) -> QueueSettings:
    return queue_settings(conf.queues, is_root=True)


def _rule(conf: PlacementRuleConfig) -> RuleSpec:
    return RuleSpec(
        name=conf.name,
        create=conf.create,
        value=conf.value,
        filter=_filter(conf.filter),
        parent=_rule(conf.parent) if conf.parent is not None else None,
    )


def _filter(conf: FilterConfig | None) -> FilterSpec | None:
    if conf is None:
        return None
    return FilterSpec(type=conf.type, users=tuple(conf.users), groups=tuple(conf.groups))


def _limits(limits: Sequence[LimitConfig]) -> list[LimitSpec]:
    return [
        LimitSpec(
            users=tuple(limit.users),
            groups=tuple(limit.groups),
            max_resources=limit.max_resources,
            max_applications=limit.max_applications,
        )
        for limit in limits
    ]


def apply_partition_config(partition: Partition, conf: PartitionConfig) -> None:
    """Applies ``conf`` (already validated) to ``partition`` under its lock."""
    with partition.lock:
        root_conf = conf.queues
        # Root's max is not configurable: it is the cluster size, kept by the partition.
        partition.root.apply_settings(replace(root_settings(conf), max_resource=partition.root.max_resource))
        _apply_children(partition, partition.root, root_conf)
        partition.placement = PlacementManager([_rule(r) for r in conf.placement_rules])
        policy = conf.node_sort_policy
        if (policy.type, dict(policy.resource_weights)) != (partition.node_sort_policy, partition.resource_weights):
            partition.set_node_sort_policy(policy.type, dict(policy.resource_weights))
        if conf.topology_levels != partition.topology.levels:
            partition.set_topology_levels(conf.topology_levels)
        partition.preemption_enabled = conf.preemption.enabled
        partition.quota_preemption_enabled = conf.preemption.quota_preemption_enabled
        # A lowered max arms quota-change preemption (fired by the context's tick).
        quota_preemption.arm(partition, partition.clock.now_ns())
        # Partition-level limits apply to root; queue limits to their queue. All are replaced at
        # once, so a queue whose limits were removed loses them.
        limits: dict[str, list[LimitSpec]] = {"root": _limits(list(conf.limits) or list(root_conf.limits))}
        _collect_limits(root_conf, "root", limits)
        partition.ugm.update_limits(limits)


def _apply_children(partition: Partition, queue: Queue, conf: QueueConfig) -> None:
    configured = {child.name for child in conf.queues}
    for child_conf in conf.queues:
        settings = queue_settings(child_conf)
        child = queue.children.get(child_conf.name)
        if child is None:
            child = Queue(child_conf.name, queue, partition.events.queue, settings)
        else:
            child.apply_settings(settings, managed=True)
        _apply_children(partition, child, child_conf)
    for name, child in list(queue.children.items()):
        if name not in configured and child.managed:
            child.mark_draining()


def _collect_limits(conf: QueueConfig, path: str, out: dict[str, list[LimitSpec]]) -> None:
    for child in conf.queues:
        child_path = f"{path}.{child.name}"
        if child.limits:
            out[child_path] = _limits(child.limits)
        _collect_limits(child, child_path, out)
