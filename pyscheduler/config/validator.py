"""Validation of a parsed ``queues.yaml`` (YuniKorn ``configs.Validate``), without a scheduler.

:func:`validate` returns every problem it finds, each one naming its place in the file
(the ``source`` of the object at fault, e.g. ``partitions[0].queues[0].queues[1].resources.max``)
and what is wrong; it never stops at the first. :func:`check` raises
:class:`ConfigValidationError` with all of them.

Rules (YuniKorn's, with the deviations noted in the functions):

- partitions: at least one; names unique (case-insensitive);
- queues: root has no ``resources``; child names match :data:`QUEUE_NAME_RE` and are unique
  per level; ACLs parse (at most one space); a guaranteed fits the queue's own max; a child's
  max fits the parent's effective max; the children's guaranteed sum fits the parent's
  guaranteed and effective max; a parent's ``maxapplications`` is at least each child's, and
  a child may not be unlimited (0) when its parent sets one; a child template's guaranteed
  fits its max;
- limits: at least one user or group; valid names; a user or group at most once per queue;
  the wildcard last; not a wildcard group alone; not empty (max resources and/or max
  applications), resources not all zero; within the queue's ``maxapplications`` and max;
  within the limits an ancestor queue sets for the same user or group;
- placement rules: known names (``recovery`` is implicit and illegal); ``fixed`` and ``tag``
  need a value; a fully qualified ``fixed`` path has no parent rule; filter type and
  single-entry regexps; the longest static queue path of each rule chain must not end at a
  parent, must exist unless ``create`` is set, and cannot be created below a leaf;
- node sort policy: known type, weights finite and not negative; user-group resolver type known.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Final

from pyscheduler.common.errors import ConfigError
from pyscheduler.common.resources import Resource, ResourceError, component_min_undef
from pyscheduler.config.queues import (
    ACL,
    FILTER_TYPES,
    GROUP_NAME_RE,
    NODE_SORT_POLICIES,
    PLACEMENT_RULE_NAMES,
    QUEUE_NAME_RE,
    ROOT_QUEUE,
    USER_GROUP_RESOLVERS,
    USER_NAME_RE,
    WILDCARD,
    FilterConfig,
    LimitConfig,
    PartitionConfig,
    PlacementRuleConfig,
    QueueConfig,
    SchedulerConfig,
)

__all__ = ["MAX_QUEUE_DEPTH", "MAX_REPORTED_ERRORS", "ConfigValidationError", "check", "validate"]

#: Levels of a queue tree at most (root is level 1). Far above real trees, and low enough
#: that every REST endpoint can render the deepest tree (JSON nests two levels per queue).
MAX_QUEUE_DEPTH: Final = 64
#: Errors listed at most in one ConfigValidationError; the rest are counted in a last line.
MAX_REPORTED_ERRORS: Final = 100

# Characters that make a single filter entry a regexp rather than a name (YuniKorn SpecialRegExp).
_REGEXP_SPECIALS: Final = re.compile(r"[\^$*+?()\[{}|]")


class ConfigValidationError(ConfigError):
    """A configuration was rejected; ``errors`` lists every problem, one line each."""

    errors: list[str]

    def __init__(self, errors: Sequence[str]) -> None:
        listed = list(errors) or ["invalid configuration"]
        if len(listed) > MAX_REPORTED_ERRORS:
            # A hostile or generated file can hold millions of mistakes: report a readable few.
            more = len(listed) - MAX_REPORTED_ERRORS
            listed = [*listed[:MAX_REPORTED_ERRORS], f"... and {more:,} more errors"]
        super().__init__("\n".join(listed))
        self.errors = listed

    def __reduce__(self) -> tuple[object, ...]:
        # ConfigError pickles as its own type; keep the subclass and the list.
        return (ConfigValidationError, (self.errors,))


def validate(config: SchedulerConfig) -> list[str]:
    """Every rule violation of ``config``, each naming its place in the file; ``[]`` if valid."""
    validator = _Validator()
    validator.scheduler(config)
    return validator.errors


def check(config: SchedulerConfig) -> SchedulerConfig:
    """Returns ``config`` if it is valid; raises :class:`ConfigValidationError` otherwise."""
    errors = validate(config)
    if errors:
        raise ConfigValidationError(errors)
    return config


def _at(source: str, key: str) -> str:
    """The path of ``key`` inside the object found at ``source``."""
    return f"{source}.{key}" if source else key


def _fmt(resource: Resource | None) -> str:
    if resource is None:
        return "{} (unlimited)"
    return "{" + ", ".join(f"{k}: {v}" for k, v in sorted(resource.items())) + "}"


def _qualified(queue_path: str) -> bool:
    """A fixed rule's value that starts at the root queue."""
    return queue_path == ROOT_QUEUE or queue_path.startswith(ROOT_QUEUE + ".")


@dataclass(frozen=True, slots=True)
class _Inherited:
    """The effective limit of one user or group at a queue, and the queue that set it."""

    resources: Resource | None
    applications: int
    queue: str


class _PathCheck(Enum):
    """Outcome of following a rule chain's static queue path through the configured queues."""

    OK = "ok"
    NON_EXISTING = "non-existing queue without create"
    NOT_LEAF = "ends at a parent queue"
    NOT_PARENT = "static part of a dynamic path is a leaf"
    BELOW_LEAF = "would create below a leaf"


class _Validator:
    """Runs every rule, appending ``"<path>: <problem>"`` lines to ``errors``."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def add(self, path: str, message: str) -> None:
        self.errors.append(f"{path or '(top level)'}: {message}")

    # -- partitions ------------------------------------------------------------------------

    def scheduler(self, config: SchedulerConfig) -> None:
        if not config.partitions:
            self.add("partitions", "at least one partition is required")
        seen: dict[str, str] = {}
        for partition in config.partitions:
            key = partition.name.lower()
            if key in seen:
                self.add(
                    _at(partition.source, "name"), f"duplicate partition name {partition.name!r} (also {seen[key]})"
                )
            else:
                seen[key] = partition.source or partition.name
            self.partition(partition)

    def partition(self, partition: PartitionConfig) -> None:
        root = partition.queues
        if root.resources.is_set:
            self.add(
                _at(root.source, "resources"),
                "the root queue may not have resources: its max is always the sum of the node capacities",
            )
        self.queue_tree(root, ROOT_QUEUE, is_root=True)
        self.queue_resources(root, ROOT_QUEUE, parent_max=None)
        self.limit_hierarchy(root, ROOT_QUEUE, {}, {})
        for rule in partition.placement_rules:
            self.rule(rule)
            self.rule_static_path(rule, root)
        self.node_sort_policy(partition)
        resolver = partition.user_group_resolver.type
        if resolver not in USER_GROUP_RESOLVERS:
            known = ", ".join(repr(t) for t in sorted(USER_GROUP_RESOLVERS))
            self.add(
                _at(partition.source, "usergroupresolver.type"),
                f"unknown user group resolver {resolver!r} (known: {known})",
            )

    # -- queue structure -------------------------------------------------------------------

    def queue_tree(self, queue: QueueConfig, path: str, *, is_root: bool = False, depth: int = 1) -> None:
        """Names, ACLs, limits, max applications and child template of a subtree."""
        if depth > MAX_QUEUE_DEPTH:
            self.add(
                _at(queue.source, "queues"),
                f"queue {path}: the queue tree is more than {MAX_QUEUE_DEPTH} levels deep (root is level 1)",
            )
            return
        for acl, key in ((queue.submit_acl, "submitacl"), (queue.admin_acl, "adminacl")):
            if acl is not None:
                try:
                    ACL.parse(acl)
                except ConfigError as exc:
                    self.add(_at(queue.source, key), f"queue {path}: {exc}")
        self.queue_limits(queue, path, is_root=is_root)
        if queue.child_template is not None:
            template = queue.child_template
            maximum, guaranteed = template.resources.max, template.resources.guaranteed
            if guaranteed is not None and maximum is not None and not guaranteed.fits_in_max_undef(maximum):
                self.add(
                    _at(template.source, "resources.guaranteed"),
                    f"queue {path}: child template guaranteed {_fmt(guaranteed)} is larger than its max "
                    f"{_fmt(maximum)}",
                )
        seen: dict[str, str] = {}
        for child in queue.queues:
            self.child_name(child, path, seen)
            self.child_max_applications(queue, child, path)
        for child in queue.queues:
            self.queue_tree(child, f"{path}.{child.name}", depth=depth + 1)

    def child_name(self, child: QueueConfig, parent_path: str, seen: dict[str, str]) -> None:
        if not QUEUE_NAME_RE.fullmatch(child.name):
            self.add(
                _at(child.source, "name"),
                f"invalid queue name {child.name!r} under {parent_path}: a name has 1 to 64 characters "
                "among letters, digits and _ : # / @ -",
            )
        # Names are already lower-cased, so this is YuniKorn's case-insensitive uniqueness.
        if child.name in seen:
            self.add(
                _at(child.source, "name"),
                f"duplicate queue name {child.name!r} under {parent_path} (also {seen[child.name]})",
            )
        else:
            seen[child.name] = child.source

    def child_max_applications(self, parent: QueueConfig, child: QueueConfig, parent_path: str) -> None:
        limit = parent.max_applications
        if limit == 0:
            return
        where = _at(child.source, "maxapplications")
        child_path = f"{parent_path}.{child.name}"
        if child.max_applications == 0:
            self.add(
                where,
                f"queue {child_path} has no maxapplications (unlimited) but its parent {parent_path} "
                f"allows {limit}; set a value between 1 and {limit}",
            )
        elif child.max_applications > limit:
            self.add(
                where,
                f"queue {child_path} maxapplications {child.max_applications} is larger than "
                f"its parent {parent_path} maxapplications {limit}",
            )

    # -- queue resources -------------------------------------------------------------------

    def queue_resources(self, queue: QueueConfig, path: str, parent_max: Resource | None) -> Resource:
        """Checks a subtree's max and guaranteed; returns what it guarantees to its parent.

        ``parent_max`` is the parent's effective max (its own max, min-ed with the ancestors',
        a type missing from a max being unlimited). A queue without guaranteed passes its
        children's sum up, as YuniKorn's ``checkQueueResource`` does.
        """
        guaranteed, maximum = queue.resources.guaranteed, queue.resources.max
        resources_path = _at(queue.source, "resources")
        if guaranteed is not None and maximum is not None and not guaranteed.fits_in_max_undef(maximum):
            self.add(
                f"{resources_path}.guaranteed",
                f"queue {path}: guaranteed {_fmt(guaranteed)} is larger than its max {_fmt(maximum)}",
            )
        if maximum is not None and not maximum.fits_in_max_undef(parent_max):
            self.add(
                f"{resources_path}.max",
                f"queue {path}: max {_fmt(maximum)} is larger than the max of its parent {_fmt(parent_max)}",
            )
        effective_max = component_min_undef(maximum, parent_max)
        children_sum = Resource()
        for child in queue.queues:
            child_guaranteed = self.queue_resources(child, f"{path}.{child.name}", effective_max)
            try:
                children_sum = children_sum + child_guaranteed
            except ResourceError as exc:
                self.add(resources_path, f"queue {path}: sum of the children's guaranteed resources: {exc}")
        if guaranteed is not None and not children_sum.fits_in_max_undef(guaranteed):
            self.add(
                f"{resources_path}.guaranteed",
                f"queue {path}: guaranteed {_fmt(guaranteed)} is smaller than the sum of its children's "
                f"guaranteed {_fmt(children_sum)}",
            )
        if effective_max is not None and not children_sum.fits_in_max_undef(effective_max):
            where = f"{resources_path}.max" if maximum is not None else queue.source
            self.add(
                where,
                f"queue {path}: max {_fmt(effective_max)} (own or inherited) is smaller than the sum of its "
                f"children's guaranteed {_fmt(children_sum)}",
            )
        if guaranteed is None or guaranteed.is_zero():
            return children_sum
        return guaranteed

    # -- limits ----------------------------------------------------------------------------

    def queue_limits(self, queue: QueueConfig, path: str, *, is_root: bool) -> None:
        """The rules on one queue's own ``limits`` list (YuniKorn ``checkLimits``)."""
        users: set[str] = set()
        groups: set[str] = set()
        wildcard_group_at = ""
        for limit in queue.limits:
            if not limit.users and not limit.groups:
                self.add(limit.source, f"queue {path}: a limit needs at least one user or group")
            self.limit_names(limit, "users", limit.users, users, USER_NAME_RE, path)
            self.limit_names(limit, "groups", limit.groups, groups, GROUP_NAME_RE, path)
            if WILDCARD in limit.groups and not wildcard_group_at:
                wildcard_group_at = limit.source
            self.limit_values(limit, queue, path, is_root=is_root)
        if groups == {WILDCARD}:
            # A lone wildcard group limit would just be a second queue limit.
            self.add(
                _at(wildcard_group_at, "groups"),
                f"queue {path}: a wildcard group limit needs at least one limit for a named group on the same queue",
            )

    def limit_names(
        self,
        limit: LimitConfig,
        key: str,
        names: tuple[str, ...],
        seen: set[str],
        pattern: re.Pattern[str],
        path: str,
    ) -> None:
        kind = key[:-1]
        for i, name in enumerate(names):
            where = f"{_at(limit.source, key)}[{i}]"
            if name != WILDCARD and not pattern.fullmatch(name):
                self.add(where, f"queue {path}: invalid {kind} name {name!r}")
            if name in seen:
                self.add(where, f"queue {path}: {kind} {name!r} already has a limit on this queue")
            elif WILDCARD in seen and name != WILDCARD:
                self.add(
                    where,
                    f"queue {path}: {kind} {name!r} comes after the wildcard {kind} limit; the wildcard must be last",
                )
            seen.add(name)

    def limit_values(self, limit: LimitConfig, queue: QueueConfig, path: str, *, is_root: bool) -> None:
        resources = limit.max_resources
        has_resources = resources is not None and len(resources) > 0
        if resources is not None and has_resources and resources.is_zero():
            self.add(_at(limit.source, "maxresources"), f"queue {path}: every quantity of the limit is zero")
        if limit.max_applications == 0 and not has_resources:
            self.add(limit.source, f"queue {path}: the limit is empty: set maxresources and/or maxapplications")
        if queue.max_applications and limit.max_applications > queue.max_applications:
            self.add(
                _at(limit.source, "maxapplications"),
                f"queue {path}: limit maxapplications {limit.max_applications} is larger than the queue "
                f"maxapplications {queue.max_applications}",
            )
        # Root has no max (it is the cluster size), so YuniKorn skips it there.
        if not is_root and resources is not None and not resources.fits_in_max_undef(queue.resources.max):
            self.add(
                _at(limit.source, "maxresources"),
                f"queue {path}: limit {_fmt(resources)} is larger than the queue max {_fmt(queue.resources.max)}",
            )

    def limit_hierarchy(
        self,
        queue: QueueConfig,
        path: str,
        users: dict[str, _Inherited],
        groups: dict[str, _Inherited],
    ) -> None:
        """A limit may not exceed the limit an ancestor sets for the same user or group.

        Every ancestor limit is carried down to all descendants. YuniKorn carries resource
        limits down the same way, but carries application limits only through queues that
        have no limits of their own; this port uses the resource behaviour for both.
        """
        own_users, own_groups = dict(users), dict(groups)
        for limit in queue.limits:
            for kind, names, inherited_map, own_map in (
                ("user", limit.users, users, own_users),
                ("group", limit.groups, groups, own_groups),
            ):
                for name in names:
                    own_map[name] = self.limit_against(limit, kind, name, inherited_map.get(name), path)
        for child in queue.queues:
            self.limit_hierarchy(child, f"{path}.{child.name}", own_users, own_groups)

    def limit_against(
        self, limit: LimitConfig, kind: str, name: str, inherited: _Inherited | None, path: str
    ) -> _Inherited:
        """Checks one user's or group's limit against the inherited one; returns the effective one."""
        resources, applications = limit.max_resources, limit.max_applications
        if inherited is None:
            return _Inherited(resources, applications, path)
        if resources is not None and not resources.fits_in_max_undef(inherited.resources):
            self.add(
                _at(limit.source, "maxresources"),
                f"queue {path}: {kind} {name!r} limit {_fmt(resources)} is larger than the limit "
                f"{_fmt(inherited.resources)} set on {inherited.queue}",
            )
        if inherited.applications and (applications == 0 or applications > inherited.applications):
            shown = "unlimited (0)" if applications == 0 else str(applications)
            self.add(
                _at(limit.source, "maxapplications"),
                f"queue {path}: {kind} {name!r} maxapplications {shown} is larger than the limit "
                f"{inherited.applications} set on {inherited.queue}",
            )
        effective_apps = (
            min(a for a in (applications, inherited.applications) if a) if applications or inherited.applications else 0
        )
        return _Inherited(component_min_undef(resources, inherited.resources), effective_apps, path)

    # -- placement rules -------------------------------------------------------------------

    def rule(self, rule: PlacementRuleConfig) -> None:
        """Name, value and filter of a rule and of its parent rules."""
        known = ", ".join(sorted(PLACEMENT_RULE_NAMES))
        name_path = _at(rule.source, "name")
        if not rule.name:
            self.add(name_path, f"a placement rule needs a name ({known})")
        elif rule.name == "recovery":
            self.add(name_path, "the recovery rule is always added implicitly and may not be configured")
        elif rule.name not in PLACEMENT_RULE_NAMES:
            self.add(name_path, f"unknown placement rule {rule.name!r} (known: {known})")
        value_path = _at(rule.source, "value")
        if rule.name == "fixed":
            self.fixed_value(rule, value_path)
        elif rule.name == "tag" and not rule.value:
            self.add(value_path, "the tag rule needs the name of the tag to use in value (for example namespace)")
        if rule.filter is not None:
            self.rule_filter(rule.filter)
        if rule.parent is not None:
            self.rule(rule.parent)

    def fixed_value(self, rule: PlacementRuleConfig, value_path: str) -> None:
        if not rule.value:
            self.add(value_path, "the fixed rule needs a queue name or path in value")
            return
        for segment in rule.value.split("."):
            if not QUEUE_NAME_RE.fullmatch(segment):
                self.add(value_path, f"invalid queue name {segment!r} in the fixed queue path {rule.value!r}")
        if rule.parent is not None and _qualified(rule.value):
            self.add(value_path, f"the fully qualified queue path {rule.value!r} cannot be combined with a parent rule")

    def rule_filter(self, rule_filter: FilterConfig) -> None:
        if rule_filter.type not in FILTER_TYPES:
            self.add(_at(rule_filter.source, "type"), f"invalid filter type {rule_filter.type!r}: use allow or deny")
        for key, names, pattern in (
            ("users", rule_filter.users, USER_NAME_RE),
            ("groups", rule_filter.groups, GROUP_NAME_RE),
        ):
            # A one-entry list is a name or a regexp; longer lists are names, and YuniKorn
            # ignores the entries that are not valid names.
            if len(names) == 1 and not pattern.fullmatch(names[0]) and not _is_regexp(names[0]):
                self.add(
                    f"{_at(rule_filter.source, key)}[0]",
                    f"{names[0]!r} is neither a valid name nor a regular expression",
                )

    def rule_static_path(self, rule: PlacementRuleConfig, root: QueueConfig) -> None:
        """The longest static queue path of a rule chain must fit the configured queues.

        As YuniKorn's ``getLongestStaticPath``: ``fixed`` rules from the outermost parent down
        build the path until the first dynamic rule; chains that start with a dynamic rule
        are not checked. Unlike YuniKorn, a queue with children counts as a parent even
        without ``parent: true``.
        """
        chain = rule.chain()
        static, dynamic = "", False
        for link in chain:
            if link.name != "fixed":
                dynamic = True
                break
            if not link.value:
                return  # reported by rule()
            if _qualified(link.value):
                if static:
                    return  # a qualified path with a parent rule: reported by rule()
                static = link.value
            else:
                static = f"{static or ROOT_QUEUE}.{link.value}"
        if not static:
            return
        chain_text = " -> ".join(link.name or "?" for link in chain)
        result, last = _follow(static.split("."), rule.create, dynamic, root)
        where = rule.source
        if result is _PathCheck.NOT_LEAF:
            self.add(
                where,
                f"rule chain {chain_text} places applications in {static}, a parent queue; "
                "only leaf queues hold applications",
            )
        elif result is _PathCheck.NOT_PARENT:
            self.add(where, f"rule chain {chain_text} places applications below {static}, which is a leaf queue")
        elif result is _PathCheck.NON_EXISTING:
            self.add(
                where, f"rule chain {chain_text} needs the queue {static}, which is not configured, and create is false"
            )
        elif result is _PathCheck.BELOW_LEAF:
            self.add(where, f"rule chain {chain_text} would create {static} below {last}, which is a leaf queue")

    # -- node sorting ----------------------------------------------------------------------

    def node_sort_policy(self, partition: PartitionConfig) -> None:
        policy = partition.node_sort_policy
        path = _at(partition.source, "nodesortpolicy")
        if policy.type not in NODE_SORT_POLICIES:
            known = ", ".join(sorted(NODE_SORT_POLICIES))
            self.add(f"{path}.type", f"unknown node sort policy {policy.type!r} (known: {known})")
        for name, weight in policy.resource_weights.items():
            where = f"{path}.resourceweights.{name}"
            if math.isnan(weight) or math.isinf(weight):
                self.add(where, f"resource weight {weight} is not a finite number")
            elif weight < 0:
                self.add(where, f"negative resource weight {weight} for {name!r} is not allowed")


def _is_regexp(text: str) -> bool:
    """A filter entry that compiles and has regexp characters (so is not a plain name)."""
    try:
        re.compile(text)
    except re.error:
        return False
    return _REGEXP_SPECIALS.search(text) is not None


def _follow(parts: list[str], create: bool, dynamic: bool, root: QueueConfig) -> tuple[_PathCheck, str]:
    """Walks a static queue path through the configured tree (YuniKorn ``checkQueueHierarchyForPlacement``).

    Returns the outcome and, for :attr:`_PathCheck.BELOW_LEAF`, the leaf's path.
    """
    level: tuple[QueueConfig, ...] = (root,)
    parent: QueueConfig | None = None
    walked: list[str] = []
    for i, name in enumerate(parts):
        if not level and parent is not None:
            # The configured tree ends above the path: it would be created below ``parent``.
            if parent.is_leaf:
                return _PathCheck.BELOW_LEAF, ".".join(walked)
            return (_PathCheck.OK if create else _PathCheck.NON_EXISTING), ""
        queue = next((q for q in level if q.name == name), None)
        if queue is None:
            return (_PathCheck.OK if create else _PathCheck.NON_EXISTING), ""
        walked.append(name)
        if i == len(parts) - 1:
            if dynamic:
                # fixed -> user: the static part is the parent of the dynamic queue.
                return (_PathCheck.NOT_PARENT if queue.is_leaf else _PathCheck.OK), ""
            return (_PathCheck.OK if queue.is_leaf else _PathCheck.NOT_LEAF), ""
        parent, level = queue, queue.queues
    return _PathCheck.OK, ""
