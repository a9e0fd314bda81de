"""Scheduler configuration.

- ``queues.yaml``, the partition and queue configuration an RM pushes to the core:
  :func:`load_config` / :func:`parse_and_validate` turn its text into the immutable
  :class:`SchedulerConfig` model (:mod:`.queues`), :func:`validate` checks YuniKorn's rules
  without a running scheduler, :func:`checksum` identifies a configuration text, and
  :func:`default_config` is what applies when no configuration is given.
- Typed settings built from YuniKorn-style flat string maps ("extra config"), such as
  :mod:`.event_settings`.

PyYAML is only needed when a ``queues.yaml`` text is actually parsed: the loader's names are
imported on first use, so the settings modules work without it.
"""

from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from pyscheduler.config.loader import DEFAULT_CONFIG, checksum, default_config, load_config, parse_and_validate

_LOADER_NAMES = frozenset({"DEFAULT_CONFIG", "checksum", "default_config", "load_config", "parse_and_validate"})


def __getattr__(name: str) -> Any:
    """Imports the loader (and with it PyYAML) when one of its names is first used (PEP 562)."""
    if name in _LOADER_NAMES:
        from pyscheduler.config import loader

        return getattr(loader, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
