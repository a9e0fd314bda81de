"""Scheduler configuration.

- ``queues.yaml``, the partition and queue configuration an RM pushes to the core:
  :func:`load_config` / :func:`parse_and_validate` turn its text into the immutable
  :class:`SchedulerConfig` model (:mod:`.queues`), :func:`validate` checks YuniKorn's rules
  without a running scheduler, :func:`checksum` identifies a configuration text, and
  :func:`default_config` is what applies when no configuration is given.
- Typed settings built from YuniKorn-style flat string maps ("extra config"), such as
  :mod:`.event_settings`.

PyYAML is only needed when a ``queues.yaml`` text is actually parsed.
"""

from pyscheduler.config.loader import DEFAULT_CONFIG, checksum, default_config, load_config, parse_and_validate
from pyscheduler.config.queues import (
    ACL,
    DEFAULT_PARTITION,
    ROOT_QUEUE,
    ChildTemplateConfig,
    FilterConfig,
    LimitConfig,
    NodeSortPolicyConfig,
    PartitionConfig,
    PlacementRuleConfig,
    PreemptionConfig,
    QueueConfig,
    ResourcesConfig,
    SchedulerConfig,
    UserGroupResolverConfig,
    normalise_partition_name,
)
from pyscheduler.config.validator import ConfigValidationError, check, validate

__all__ = [
    "ACL",
    "DEFAULT_CONFIG",
    "DEFAULT_PARTITION",
    "ROOT_QUEUE",
    "ChildTemplateConfig",
    "ConfigValidationError",
    "FilterConfig",
    "LimitConfig",
    "NodeSortPolicyConfig",
    "PartitionConfig",
    "PlacementRuleConfig",
    "PreemptionConfig",
    "QueueConfig",
    "ResourcesConfig",
    "SchedulerConfig",
    "UserGroupResolverConfig",
    "check",
    "checksum",
    "default_config",
    "load_config",
    "normalise_partition_name",
    "parse_and_validate",
    "validate",
]
