"""Typed, immutable model of a parsed ``queues.yaml`` (YuniKorn's ``SchedulerConfig``).

The loader (:mod:`pyscheduler.config.loader`) builds these objects from the YAML text and
the validator (:mod:`pyscheduler.config.validator`) checks them; the scheduler then reads
them to build partitions, queues, placement rules and user/group limits.

Normalisation already applied by the loader, so consumers never redo it:

- queue names are lower-cased, and every partition has exactly one top-level queue, the
  ``root`` queue (inserted when the file has none or several top-level queues), which is
  always a parent;
- the partition name ``""`` or any case of ``default`` is ``default``;
- partition ``limits`` are copied to the root queue's ``limits``;
- placement rule names, filter types, node-sort-policy types and user-group-resolver types
  are lower-cased; the ``fixed`` rule's queue path is lower-cased;
- quantities are parsed (``vcore`` in millicores, memory in bytes) into
  :class:`~pyscheduler.common.resources.Resource`.

Every object that comes from a place in the file carries that place in ``source`` (for
example ``partitions[0].queues[0].queues[1]``) so errors found later can name it. ``source``
is left out of equality and ``repr``: two configurations that say the same thing are equal
wherever they say it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final

from pyscheduler.common.errors import ConfigError
from pyscheduler.common.resources import MEMORY, VCORE, Resource

__all__ = [
    "ACL",
    "DEFAULT_PARTITION",
    "DEFAULT_RESOURCE_WEIGHTS",
    "FILTER_TYPES",
    "GROUP_NAME_RE",
    "NODE_SORT_POLICIES",
    "PLACEMENT_RULE_NAMES",
    "QUEUE_NAME_RE",
    "ROOT_QUEUE",
    "USER_GROUP_RESOLVERS",
    "USER_NAME_RE",
    "WILDCARD",
    "ChildTemplateConfig",
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
    "normalise_partition_name",
]

ROOT_QUEUE: Final = "root"
DEFAULT_PARTITION: Final = "default"
WILDCARD: Final = "*"

#: One segment of a queue path (YuniKorn ``QueueNameRegExp``, with the characters that
#: user and tag values may bring into dynamic queue names).
QUEUE_NAME_RE: Final = re.compile(r"[a-zA-Z0-9_:#/@-]{1,64}")
#: User names in limits, ACLs and placement filters (YuniKorn ``UserRegExp``).
USER_NAME_RE: Final = re.compile(r"[_a-zA-Z][a-zA-Z0-9:_.@-]*[$]?")
#: Group names in limits, ACLs and placement filters (YuniKorn ``GroupRegExp``).
GROUP_NAME_RE: Final = re.compile(r"[_a-zA-Z][a-zA-Z0-9:_.-]*")

#: Rule names a configuration may use. ``recovery`` exists but is appended implicitly and
#: is illegal in a configuration; ``test`` exists only in YuniKorn's tests.
PLACEMENT_RULE_NAMES: Final = frozenset({"provided", "user", "fixed", "tag"})
FILTER_TYPES: Final = frozenset({"allow", "deny"})
NODE_SORT_POLICIES: Final = frozenset({"fair", "binpacking"})
#: ``""`` means no resolver: the groups come from the RM as they are.
USER_GROUP_RESOLVERS: Final = frozenset({"", "os", "ldap"})
#: Node-sorting weights used when the configuration gives none.
DEFAULT_RESOURCE_WEIGHTS: Final[Mapping[str, float]] = {VCORE: 1.0, MEMORY: 1.0}


@dataclass(frozen=True, slots=True)
class ResourcesConfig:
    """The ``resources`` of a queue or child template; ``None`` means not configured."""

    max: Resource | None = None
    guaranteed: Resource | None = None

    @property
    def is_set(self) -> bool:
        """Whether either map appears in the file (even empty: root may not have it)."""
        return self.max is not None or self.guaranteed is not None


@dataclass(frozen=True, slots=True)
class ChildTemplateConfig:
    """Settings given to the dynamic children a placement rule creates under a parent."""

    max_applications: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    resources: ResourcesConfig = ResourcesConfig()
    source: str = field(default="", compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class LimitConfig:
    """One entry of a ``limits`` list: a quota for some users and/or groups.

    ``max_applications`` 0 means no application limit; ``max_resources`` ``None`` means no
    resource limit (a type missing from it is unlimited).
    """

    limit: str = ""
    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    max_resources: Resource | None = None
    max_applications: int = 0
    source: str = field(default="", compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class QueueConfig:
    """One queue of the hierarchy, with its configured children.

    ``max_applications`` 0 means unlimited. ``submit_acl``/``admin_acl`` are the raw ACL
    strings (``None`` when absent); parse them with :meth:`ACL.parse`.
    """

    name: str
    parent: bool = False
    resources: ResourcesConfig = ResourcesConfig()
    max_applications: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    submit_acl: str | None = None
    admin_acl: str | None = None
    child_template: ChildTemplateConfig | None = None
    limits: tuple[LimitConfig, ...] = ()
    queues: tuple[QueueConfig, ...] = ()
    source: str = field(default="", compare=False, repr=False)

    @property
    def is_leaf(self) -> bool:
        """A leaf holds applications: no configured children and not marked ``parent``."""
        return not self.queues and not self.parent

    def child(self, name: str) -> QueueConfig | None:
        """The direct child called ``name`` (case-insensitive), or ``None``."""
        wanted = name.lower()
        return next((q for q in self.queues if q.name == wanted), None)

    def find(self, path: str) -> QueueConfig | None:
        """The queue at the dotted ``path`` below and including this one (``root.a.b``)."""
        parts = path.lower().split(".")
        if parts[0] != self.name:
            return None
        queue: QueueConfig | None = self
        for part in parts[1:]:
            queue = queue.child(part) if queue is not None else None
        return queue

    def walk(self, prefix: str = "") -> Iterator[tuple[str, QueueConfig]]:
        """Every queue of the subtree, depth first, with its full dotted path."""
        path = f"{prefix}.{self.name}" if prefix else self.name
        yield path, self
        for child in self.queues:
            yield from child.walk(path)


@dataclass(frozen=True, slots=True)
class FilterConfig:
    """A placement rule's user/group filter. A list of one entry may be a regexp."""

    type: str = "allow"
    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    source: str = field(default="", compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class PlacementRuleConfig:
    """A placement rule; ``parent`` is the rule that produces the parent queue."""

    name: str
    create: bool = False
    filter: FilterConfig | None = None
    parent: PlacementRuleConfig | None = None
    value: str = ""
    source: str = field(default="", compare=False, repr=False)

    def chain(self) -> tuple[PlacementRuleConfig, ...]:
        """The rules from the outermost parent down to this one (YuniKorn ``getRuleChain``)."""
        rules: list[PlacementRuleConfig] = []
        rule: PlacementRuleConfig | None = self
        while rule is not None:
            rules.append(rule)
            rule = rule.parent
        return tuple(reversed(rules))


@dataclass(frozen=True, slots=True)
class NodeSortPolicyConfig:
    """How nodes are ordered for allocation. Weights apply to the listed types only."""

    type: str = "fair"
    resource_weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_RESOURCE_WEIGHTS))


@dataclass(frozen=True, slots=True)
class PreemptionConfig:
    """The partition's preemption switches."""

    enabled: bool = True
    quota_preemption_enabled: bool = False


@dataclass(frozen=True, slots=True)
class UserGroupResolverConfig:
    """Where a user's groups come from: ``""`` (the RM), ``os`` or ``ldap``."""

    type: str = ""


@dataclass(frozen=True, slots=True)
class PartitionConfig:
    """A partition: a root queue tree plus the rules that apply to it."""

    name: str
    queues: QueueConfig
    placement_rules: tuple[PlacementRuleConfig, ...] = ()
    limits: tuple[LimitConfig, ...] = ()
    node_sort_policy: NodeSortPolicyConfig = NodeSortPolicyConfig()
    preemption: PreemptionConfig = PreemptionConfig()
    user_group_resolver: UserGroupResolverConfig = UserGroupResolverConfig()
    #: The topology levels (node label keys, outermost first; issue 34, docs/topology.md).
    topology_levels: tuple[str, ...] = ()
    source: str = field(default="", compare=False, repr=False)

    @property
    def root(self) -> QueueConfig:
        """The root queue (an alias of ``queues``, which YuniKorn names after the yaml key)."""
        return self.queues

    @property
    def effective_placement_rules(self) -> tuple[PlacementRuleConfig, ...]:
        """The configured rules, or YuniKorn's fallback of one ``provided`` rule without create."""
        return self.placement_rules or (PlacementRuleConfig(name="provided"),)


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    """A whole ``queues.yaml``: its partitions and the SHA-256 checksum of its text."""

    partitions: tuple[PartitionConfig, ...]
    checksum: str = ""

    def partition(self, name: str) -> PartitionConfig | None:
        """The partition called ``name`` (``""`` and any case of ``default`` mean ``default``)."""
        wanted = normalise_partition_name(name)
        return next((p for p in self.partitions if p.name.lower() == wanted.lower()), None)


def normalise_partition_name(name: str) -> str:
    """``""`` and any case of ``default`` become ``default``; other names are kept."""
    return DEFAULT_PARTITION if name == "" or name.lower() == DEFAULT_PARTITION else name


@dataclass(frozen=True, slots=True)
class ACL:
    """An access control list in YuniKorn's ``"user1,user2 group1,group2"`` form.

    One space separates the users from the groups; a leading space means groups only.
    ``*`` as the whole user list or the whole group list allows everyone. Names that are not
    valid user or group names are ignored, as YuniKorn does. The empty ACL allows nobody.
    """

    users: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()
    allow_all: bool = False

    @classmethod
    def parse(cls, text: str | None) -> ACL:
        """Parses an ACL string; raises :class:`ConfigError` if it has more than one space."""
        if not text:
            return cls()
        # YuniKorn splits on single spaces before any trimming, so a second space (even a
        # trailing one) makes a third field it rejects rather than silently dropping groups.
        fields = text.split(" ")
        if len(fields) > 2:
            raise ConfigError(f"multiple spaces found in ACL {text!r} (use one space between users and groups)")
        if any(ch.isspace() and ch != " " for ch in text):
            raise ConfigError(f"ACL {text!r} contains whitespace other than the single space separator")
        if text.strip() == WILDCARD:
            return cls(allow_all=True)
        user_list = fields[0].split(",")
        if user_list == [WILDCARD]:
            return cls(allow_all=True)
        users = frozenset(u for u in user_list if u and USER_NAME_RE.fullmatch(u))
        if len(fields) == 1:
            return cls(users=users)
        group_list = fields[1].split(",")
        if group_list == [WILDCARD]:
            return cls(allow_all=True)
        groups = frozenset(g for g in group_list if g and GROUP_NAME_RE.fullmatch(g))
        return cls(users=users, groups=groups)

    @classmethod
    def everyone(cls) -> ACL:
        """The ACL ``*``."""
        return cls(allow_all=True)

    def allows(self, user: str, groups: Iterable[str] = ()) -> bool:
        """Whether ``user``, or one of its ``groups``, is in this ACL."""
        if self.allow_all or user in self.users:
            return True
        return any(group in self.groups for group in groups)

    def __str__(self) -> str:
        if self.allow_all:
            return WILDCARD
        users = ",".join(sorted(self.users))
        return f"{users} {','.join(sorted(self.groups))}" if self.groups else users
