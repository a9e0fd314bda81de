"""Placement rules: which queue a new application goes to (YuniKorn's ``pkg/scheduler/placement``).

The rules
---------
``provided``
    The queue named in the request. A fully-qualified name (``root.`` prefix) is used as given;
    any other name has its dots replaced by ``_dot_`` and goes under the parent rule's queue, or
    under ``root`` when there is no parent rule.
``user``
    The submitting user's name (dots replaced), under the parent rule's queue or ``root``.
``fixed``
    The configured ``value``: fully qualified, or a single name under the parent rule's queue or
    ``root``. A fully-qualified fixed queue cannot have a parent rule.
``tag``
    The value of the application tag named by ``value`` (tag names are case-insensitive), handled
    like ``provided``. An absent or empty tag yields nothing.
``recovery``
    Always appended after the configured rules (illegal in configuration): an application whose
    tag ``application.create.force`` is true goes to ``root.@recovery@``, unchecked.

Every rule may have ``create`` (may the queue be created?), a ``filter`` (allow or deny users and
groups; a single entry containing a regexp character is a regexp) and a ``parent`` rule whose
result becomes the parent queue. Rule names are case-insensitive. Queue names are lower-cased and
every path segment must match :data:`QUEUE_NAME_RE`. With no rules configured, a single
``provided`` rule with ``create: false`` is used.

Evaluation (:meth:`PlacementManager.place`)
-------------------------------------------
Rules run in order. A rule that yields nothing (filtered, missing tag or queue name, or a queue
that does not exist while ``create`` is false) is skipped. A queue that exists must be a leaf,
allow the user to submit and not be draining; a queue that does not exist yet is checked for
submit access on its nearest existing ancestor. The first queue that passes wins. When the last
rule yields nothing, ``root.default`` is tried if it exists. When nothing passes the application
is rejected with exactly :data:`REJECTED_MESSAGE`. A rule *error* (an invalid queue name, a parent
rule that returns a leaf queue) stops the evaluation and rejects the application with that error,
as YuniKorn does; so does a queue to create whose nearest existing ancestor is a leaf (YuniKorn
rejects it a step later, when the partition fails to create the queue).

The engine never changes the queue tree: it returns a :class:`PlacementResult` saying whether the
queue must be created (as a dynamic queue, with every missing level) or raises
:class:`PlacementRejected`.
"""

from __future__ import annotations

import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

from pyscheduler.common.errors import ConfigError, SchedulerError
from pyscheduler.common.goparse import NumError, parse_bool

__all__ = [
    "CREATE_FORCE_TAG",
    "DEFAULT_QUEUE",
    "FilterSpec",
    "FixedRule",
    "PlacementManager",
    "PlacementRejected",
    "PlacementRequest",
    "PlacementResult",
    "PlacementRule",
    "ProvidedRule",
    "QUEUE_NAME_RE",
    "QueueInfo",
    "QueueView",
    "RECOVERY_QUEUE",
    "REJECTED_MESSAGE",
    "RecoveryRule",
    "RuleSpec",
    "TagRule",
    "UserFilter",
    "UserRule",
    "build_rule",
]

ROOT = "root"
DOT = "."
DOT_REPLACE = "_dot_"
#: The queue tried when the last rule yields nothing (only if it exists).
DEFAULT_QUEUE = "root.default"
#: Where forced applications land when no rule placed them.
RECOVERY_QUEUE = "root.@recovery@"
#: The application tag that forces creation (the RM recovers an already running workload).
CREATE_FORCE_TAG = "application.create.force"
#: The rejection message when no rule placed the application.
REJECTED_MESSAGE = "application rejected: no placement rule matched"

#: One queue path segment (``configs.QueueNameRegExp``).
QUEUE_NAME_RE = re.compile(r"[a-zA-Z0-9_:#/@-]{1,64}")
#: A user name in a filter list (``configs.UserRegExp``).
USER_NAME_RE = re.compile(r"[_a-zA-Z][a-zA-Z0-9:_.@-]*[$]?")
#: A group name in a filter list (``configs.GroupRegExp``).
GROUP_NAME_RE = re.compile(r"[_a-zA-Z][a-zA-Z0-9:_.-]*")
#: Characters that make a single filter entry a regexp rather than a name (``configs.SpecialRegExp``).
SPECIAL_RE = re.compile(r"[\^$*+?()\[{}|]")


# -- the read-only view of the queue tree -------------------------------------------------------


class QueueInfo(Protocol):
    """What placement needs to know about one queue. The lead's ``Queue`` implements it."""

    @property
    def path(self) -> str:
        """Fully-qualified, lower-case path (``root.a.b``)."""
        ...

    @property
    def is_leaf(self) -> bool:
        """Only leaf queues hold applications."""
        ...

    @property
    def is_draining(self) -> bool:
        """Removed from the configuration, waiting to empty: accepts no new applications."""
        ...

    def submit_allowed(self, user: str, groups: Sequence[str]) -> bool:
        """The submit ACL check, including what the queue inherits from its ancestors."""
        ...


class QueueView(Protocol):
    """A read-only view of one partition's queue tree (the lead's ``Partition`` implements it)."""

    def get_queue(self, path: str) -> QueueInfo | None:
        """The queue at the fully-qualified, lower-case ``path``, or None if there is none."""
        ...


# -- configuration input ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FilterSpec:
    """A rule filter as configured: ``type`` is ``allow`` (also ``""``) or ``deny``."""

    type: str = "allow"
    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Accept any sequence from the config converter but keep the spec hashable.
        object.__setattr__(self, "users", tuple(self.users))
        object.__setattr__(self, "groups", tuple(self.groups))


@dataclass(frozen=True, slots=True)
class RuleSpec:
    """One configured rule. ``value`` is the queue of ``fixed`` and the tag name of ``tag``."""

    name: str
    create: bool = False
    value: str = ""
    filter: FilterSpec | None = None
    parent: RuleSpec | None = None


@dataclass(frozen=True, slots=True)
class PlacementRequest:
    """What the rules see of the application being placed."""

    app_id: str
    queue_name: str
    user: str
    groups: tuple[str, ...] = ()
    tags: Mapping[str, str] = field(default_factory=dict)

    def tag(self, name: str) -> str:
        """The value of tag ``name`` (names compared case-insensitively), ``""`` if absent."""
        folded = name.casefold()
        for key, value in self.tags.items():
            if key.casefold() == folded:
                return value
        return ""

    @property
    def create_forced(self) -> bool:
        """Whether the RM forces the application in (Go ``strconv.ParseBool`` of the tag)."""
        try:
            return parse_bool(self.tag(CREATE_FORCE_TAG))
        except NumError:
            return False


# -- results ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PlacementResult:
    """Where the application goes. ``create``: the queue does not exist yet and the caller must
    create it as a dynamic (unmanaged) leaf, with every missing level above it as a dynamic
    parent."""

    queue_path: str
    create: bool


class PlacementRejected(SchedulerError):
    """The application cannot be placed; ``reason`` is the message for the RM."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class PlacementError(SchedulerError):
    """A rule failed while running (not "did not match"): rejects the application."""


# -- filters ------------------------------------------------------------------------------------


class UserFilter:
    """Allows or denies a user by name or group (YuniKorn's ``Filter``).

    The user list is checked first, then the groups in the user's order; the first match decides.
    A user that matches nothing gets the opposite of the filter type. Without users and groups the
    filter just returns its type (an empty allow filter lets everyone through).
    """

    __slots__ = ("allow", "_users", "_groups", "_user_exp", "_group_exp")

    def __init__(
        self,
        allow: bool = True,
        users: frozenset[str] = frozenset(),
        groups: frozenset[str] = frozenset(),
        user_exp: re.Pattern[str] | None = None,
        group_exp: re.Pattern[str] | None = None,
    ) -> None:
        self.allow = allow
        self._users = users
        self._groups = groups
        self._user_exp = user_exp
        self._group_exp = group_exp

    @classmethod
    def from_spec(cls, spec: FilterSpec | None) -> UserFilter:
        """Builds the filter; raises ConfigError for a bad type or a bad single entry."""
        if spec is None:
            return cls()
        kind = spec.type.lower()
        if kind not in ("", "allow", "deny"):
            raise ConfigError(f"invalid rule filter type {spec.type}, filter type must be either '', allow or deny")
        users, user_exp = _names_or_regexp(spec.users, USER_NAME_RE, "user")
        groups, group_exp = _names_or_regexp(spec.groups, GROUP_NAME_RE, "group")
        return cls(kind != "deny", users, groups, user_exp, group_exp)

    @property
    def empty(self) -> bool:
        return not (self._users or self._groups or self._user_exp or self._group_exp)

    def allows(self, user: str, groups: Sequence[str]) -> bool:
        if self.empty:
            return self.allow
        if self._matches(user, self._users, self._user_exp):
            return self.allow
        for group in groups:
            if self._matches(group, self._groups, self._group_exp):
                return self.allow
        return not self.allow

    @staticmethod
    def _matches(name: str, names: frozenset[str], exp: re.Pattern[str] | None) -> bool:
        # Go's MatchString is an unanchored search: "^"/"$" in the expression anchor it.
        if exp is not None:
            return exp.search(name) is not None
        return name in names


def _names_or_regexp(
    entries: Sequence[str], name_re: re.Pattern[str], kind: str
) -> tuple[frozenset[str], re.Pattern[str] | None]:
    """One entry: a regexp if it holds a regexp character, else a name. Several entries: a list
    of names, where entries that are not valid names are ignored (like an ACL list)."""
    if len(entries) == 1:
        entry = entries[0]
        if SPECIAL_RE.search(entry):
            try:
                return frozenset(), re.compile(entry)
            except re.error:
                pass
        elif name_re.fullmatch(entry):
            return frozenset(entries), None
        listed = " ".join(entries)
        raise ConfigError(f"invalid rule filter {kind} list is not a proper list or regexp: [{listed}]")
    return frozenset(e for e in entries if name_re.fullmatch(e)), None


# -- the rules ----------------------------------------------------------------------------------


def _replace_dot(name: str) -> str:
    return name.replace(DOT, DOT_REPLACE)


def _is_qualified(path: str) -> bool:
    return path == ROOT or path.startswith(ROOT + DOT)


def _check_name(name: str) -> None:
    if not QUEUE_NAME_RE.fullmatch(name):
        raise PlacementError(
            f"invalid queue name {name}, a name must only have alphanumeric characters, - or _, "
            "and be no longer than 64 characters"
        )


def _check_path(path: str) -> None:
    for part in path.split(DOT):
        _check_name(part)


class PlacementRule(ABC):
    """One rule kind. ``place`` returns a fully-qualified lower-case queue path or None (the rule
    does not match) and raises PlacementError when the rule fails."""

    #: The rule name in configuration.
    kind: ClassVar[str]

    def __init__(self, spec: RuleSpec) -> None:
        self.spec = spec
        self.create = spec.create
        self.filter = UserFilter.from_spec(spec.filter)
        self.parent: PlacementRule | None = build_rule(spec.parent) if spec.parent is not None else None

    def place(self, request: PlacementRequest, view: QueueView) -> str | None:
        target = self._target(request)
        if target is None or not self.filter.allows(request.user, request.groups):
            return None
        name, qualified = target
        if qualified:
            _check_path(name)
            path = name
        else:
            _check_name(name)
            parent = self._parent_path(request, view)
            if parent is None:
                return None
            path = parent + DOT + name
        # Without create the queue must already exist, otherwise the rule does not match.
        if not self.create and view.get_queue(path) is None:
            return None
        return path

    @abstractmethod
    def _target(self, request: PlacementRequest) -> tuple[str, bool] | None:
        """(lower-case name, fully qualified?) or None when the rule has nothing to offer."""

    def _parent_path(self, request: PlacementRequest, view: QueueView) -> str | None:
        """The parent rule's queue (root without a parent rule); None if the parent rule does not
        match. An existing parent that is a leaf fails the rule: nothing can go below a leaf."""
        if self.parent is None:
            return ROOT
        parent = self.parent.place(request, view)
        if parent is None:
            return None
        if not _is_qualified(parent):
            parent = ROOT + DOT + parent
        queue = view.get_queue(parent)
        if queue is not None and queue.is_leaf:
            raise PlacementError(f"parent rule returned a leaf queue: {parent}")
        return parent


class ProvidedRule(PlacementRule):
    """The queue named in the request."""

    kind = "provided"

    def _target(self, request: PlacementRequest) -> tuple[str, bool] | None:
        return _named(request.queue_name)


class UserRule(PlacementRule):
    """A queue named after the submitting user."""

    kind = "user"

    def _target(self, request: PlacementRequest) -> tuple[str, bool] | None:
        # A user name is never a path: "root.bob" becomes the queue "root_dot_bob".
        return _replace_dot(request.user.lower()), False


class FixedRule(PlacementRule):
    """Always the configured queue."""

    kind = "fixed"

    def __init__(self, spec: RuleSpec) -> None:
        super().__init__(spec)
        queue = spec.value.lower()
        if not queue:
            raise ConfigError("a fixed queue rule must have a queue name set")
        self.qualified = _is_qualified(queue)
        if self.qualified and spec.parent is not None:
            raise ConfigError(f"cannot have a fixed queue rule with qualified queue name and a parent rule: {queue}")
        self.queue = queue if self.qualified else _replace_dot(queue)
        # The name never changes: a bad one is a configuration error, not a placement failure.
        try:
            if self.qualified:
                _check_path(self.queue)
            else:
                _check_name(self.queue)
        except PlacementError as err:
            raise ConfigError(f"fixed placement rule: {err}") from None

    def _target(self, request: PlacementRequest) -> tuple[str, bool] | None:
        return self.queue, self.qualified


class TagRule(PlacementRule):
    """The queue named by an application tag (such as ``namespace``)."""

    kind = "tag"

    def __init__(self, spec: RuleSpec) -> None:
        super().__init__(spec)
        self.tag_name = spec.value.lower()
        if not self.tag_name:
            raise ConfigError("a tag queue rule must have a tag name set")

    def _target(self, request: PlacementRequest) -> tuple[str, bool] | None:
        return _named(request.tag(self.tag_name))


class RecoveryRule(PlacementRule):
    """Implicit last rule: forced applications go to the recovery queue (the manager skips the
    queue checks for them)."""

    kind = "recovery"

    def __init__(self) -> None:
        # create: the recovery queue is made on first use.
        super().__init__(RuleSpec(self.kind, create=True))

    def _target(self, request: PlacementRequest) -> tuple[str, bool] | None:
        return (RECOVERY_QUEUE, True) if request.create_forced else None


def _named(value: str) -> tuple[str, bool] | None:
    """A requested queue name or tag value: a path when qualified, else one name (dots replaced)."""
    if not value:
        return None
    name = value.lower()
    if _is_qualified(name):
        return name, True
    return _replace_dot(name), False


_RULE_KINDS: dict[str, type[PlacementRule]] = {
    rule.kind: rule for rule in (ProvidedRule, UserRule, FixedRule, TagRule)
}


def build_rule(spec: RuleSpec) -> PlacementRule:
    """The rule for a configured spec (and its parent chain); raises ConfigError."""
    rule_class = _RULE_KINDS.get(spec.name.lower())
    if rule_class is None:
        raise ConfigError(f"unknown rule name specified {spec.name}, failing placement rule config")
    return rule_class(spec)


# -- the engine ---------------------------------------------------------------------------------


#: The rule set used when the configuration has none.
IMPLICIT_RULES: tuple[RuleSpec, ...] = (RuleSpec("provided", create=False),)


class PlacementManager:
    """Places applications with a rule set that can be swapped on configuration reload.

    Thread-safe: ``place`` works on a snapshot of the rules (the rule objects never change), so a
    reload never blocks or disturbs a placement in progress. The internal lock only guards the
    swap and is never held while calling the view.
    """

    def __init__(self, rules: Sequence[RuleSpec] = ()) -> None:
        self._lock = threading.Lock()
        self._specs, self._rules = self._build(rules)

    @staticmethod
    def _build(rules: Sequence[RuleSpec]) -> tuple[tuple[RuleSpec, ...], tuple[PlacementRule, ...]]:
        specs = tuple(rules) or IMPLICIT_RULES
        return specs, (*(build_rule(spec) for spec in specs), RecoveryRule())

    def update_rules(self, rules: Sequence[RuleSpec]) -> None:
        """Replace the rules. On ConfigError the current rules stay in force."""
        specs, built = self._build(rules)
        with self._lock:
            self._specs, self._rules = specs, built

    @property
    def rules(self) -> tuple[RuleSpec, ...]:
        """The rules in force, without the implicit recovery rule."""
        with self._lock:
            return self._specs

    @property
    def rule_names(self) -> tuple[str, ...]:
        """The rule names in evaluation order, ``recovery`` last."""
        with self._lock:
            return tuple(rule.kind for rule in self._rules)

    def place(
        self,
        app_id: str,
        queue_name: str,
        user: str,
        groups: Sequence[str],
        tags: Mapping[str, str] | None,
        view: QueueView,
    ) -> PlacementResult:
        """The queue for a new application; raises PlacementRejected when there is none."""
        with self._lock:
            rules = self._rules
        request = PlacementRequest(app_id, queue_name, user, tuple(groups), dict(tags or {}))
        for index, rule in enumerate(rules):
            try:
                path = rule.place(request, view)
            except PlacementError as err:
                raise PlacementRejected(str(err)) from None
            if path is None and index == len(rules) - 1 and view.get_queue(DEFAULT_QUEUE) is not None:
                path = DEFAULT_QUEUE
            if path is None:
                continue
            if path == RECOVERY_QUEUE and request.create_forced:
                # The RM already runs this workload: accept it whatever the ACLs say.
                return PlacementResult(path, view.get_queue(path) is None)
            result = self._check(path, request, view)
            if result is not None:
                return result
        raise PlacementRejected(REJECTED_MESSAGE)

    @staticmethod
    def _check(path: str, request: PlacementRequest, view: QueueView) -> PlacementResult | None:
        """The result if ``path`` is acceptable for the request, None to try the next rule."""
        queue = view.get_queue(path)
        if queue is not None:
            if not queue.is_leaf or queue.is_draining:
                return None
            if not queue.submit_allowed(request.user, request.groups):
                return None
            return PlacementResult(path, False)
        # To be created: the nearest existing ancestor decides submit access.
        ancestor = _nearest_existing(path, view)
        if ancestor is None or not ancestor.submit_allowed(request.user, request.groups):
            return None
        if ancestor.is_leaf:
            # YuniKorn finds this later, when the partition fails to create the queue, and
            # rejects the application; doing it here keeps creation failure-free for the caller.
            raise PlacementRejected(
                f"failed to create rule based queue {path} for application {request.app_id}: "
                f"{ancestor.path} is a leaf queue"
            )
        return PlacementResult(path, True)


def _nearest_existing(path: str, view: QueueView) -> QueueInfo | None:
    current = path
    while DOT in current:
        current = current.rsplit(DOT, 1)[0]
        queue = view.get_queue(current)
        if queue is not None:
            return queue
    return None
