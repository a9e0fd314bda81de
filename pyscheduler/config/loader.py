"""Loading ``queues.yaml``: strict YAML decoding into :mod:`pyscheduler.config.queues` objects.

YuniKorn decodes the file with yaml.v3 in strict mode into Go structs whose yaml keys are the
field names lower-cased. This loader reproduces that contract on PyYAML's node tree (not on
``safe_load``'s Python objects) so that it can:

- reject unknown keys and duplicate keys, naming the place (``partitions[0].queues[1].foo``)
  and the line;
- keep a scalar's source text where Go decodes it into a string (``vcore: 10`` is the
  quantity ``"10"``, a queue called ``1e3`` keeps its name), while booleans and numbers must
  really be booleans and numbers (a quoted ``"10"`` is not an integer);
- collect every structural error of the file instead of stopping at the first.

Then it normalises as YuniKorn does (lower-cased queue names, the ``default`` partition name,
the ``root`` queue inserted when missing, partition limits copied to root) and computes the
checksum. :func:`parse_and_validate` also runs :func:`pyscheduler.config.validator.validate`.

This is the only module of the package that needs PyYAML; ``pyscheduler.config`` imports it
on first use of one of its names, so the rest of the package works without PyYAML.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Collection
from dataclasses import replace
from typing import Final

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from pyscheduler.common.resources import Resource, ResourceError, parse_quantity
from pyscheduler.config.queues import (
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
from pyscheduler.config.validator import ConfigValidationError, validate
from pyscheduler.config.yaml_limits import YamlLimitError, compose_bounded

__all__ = ["DEFAULT_CONFIG", "checksum", "default_config", "load_config", "parse_and_validate"]

#: The configuration used when none is given: one partition ``default`` whose ``root``
#: (open to everyone) has a single leaf ``default``, and the ``provided`` placement rule
#: (an app naming a queue that does not exist falls back to ``root.default``). This
#: deliberately differs from YuniKorn's own default (a ``tag`` rule creating one queue per
#: namespace).
DEFAULT_CONFIG: Final = """\
partitions:
  - name: default
    placementrules:
      - name: provided
        create: false
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: default
"""

# Keys of each object: YuniKorn's Go field names lower-cased.
_SCHEDULER_KEYS: Final = ("partitions", "checksum")
_PARTITION_KEYS: Final = (
    "name",
    "queues",
    "placementrules",
    "limits",
    "nodesortpolicy",
    "preemption",
    "usergroupresolver",
    "topology",
)
_TOPOLOGY_KEYS: Final = ("levels",)
#: At most this many topology levels (zone, block, rack, host and a few more).
MAX_TOPOLOGY_LEVELS: Final = 8
_LABEL_KEY: Final = re.compile(r"([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
_QUEUE_KEYS: Final = (
    "name",
    "parent",
    "resources",
    "maxapplications",
    "properties",
    "adminacl",
    "submitacl",
    "childtemplate",
    "queues",
    "limits",
)
_CHILD_TEMPLATE_KEYS: Final = ("maxapplications", "properties", "resources")
_RESOURCES_KEYS: Final = ("guaranteed", "max")
_RULE_KEYS: Final = ("name", "create", "filter", "parent", "value")
_FILTER_KEYS: Final = ("type", "users", "groups")
_LIMIT_KEYS: Final = ("limit", "users", "groups", "maxresources", "maxapplications")
_NODE_SORT_KEYS: Final = ("type", "resourceweights")
_PREEMPTION_KEYS: Final = ("enabled", "quotapreemptionenabled")
_RESOLVER_KEYS: Final = ("type",)

_TAG: Final = "tag:yaml.org,2002:"
_NULL_TAG: Final = _TAG + "null"
_BOOL_TAG: Final = _TAG + "bool"
_INT_TAG: Final = _TAG + "int"
_FLOAT_TAG: Final = _TAG + "float"
_MERGE_TAG: Final = _TAG + "merge"
_UINT64_MAX: Final = (1 << 64) - 1
_DECIMAL: Final = re.compile(r"[0-9]+")
# A top-level ``checksum:`` line (with its line break): the text the checksum covers
# excludes it, so writing the checksum back into the file does not change it.
_CHECKSUM_LINE: Final = re.compile(r"^checksum:[^\n]*(?:\n|\Z)", re.MULTILINE)


def checksum(text: str) -> str:
    """SHA-256 (upper-case hex) of ``text`` (UTF-8) without its top-level ``checksum:`` lines."""
    return hashlib.sha256(_CHECKSUM_LINE.sub("", text).encode("utf-8")).hexdigest().upper()


def default_config() -> SchedulerConfig:
    """The parsed and validated :data:`DEFAULT_CONFIG`."""
    return parse_and_validate(DEFAULT_CONFIG)


def load_config(text: str) -> SchedulerConfig:
    """Parses ``queues.yaml`` text strictly, without the validation rules.

    An empty text (or one holding only comments, or an empty document) means
    :data:`DEFAULT_CONFIG`. The returned config's ``checksum`` is :func:`checksum` of the text
    actually used; a ``checksum:`` key in the file is accepted and ignored, as YuniKorn
    recomputes it too. Raises
    :class:`~pyscheduler.config.validator.ConfigValidationError` listing every syntax,
    structure, type and quantity error, each naming its place in the file.
    """
    node = _compose(text)
    if node is None or _is_null(node):
        # No document, or an empty one ("---"): nothing is configured.
        text = DEFAULT_CONFIG
        node = _compose(text)
        assert node is not None  # DEFAULT_CONFIG is a document
    reader = _Reader()
    try:
        partitions = reader.scheduler(node)
    except RecursionError:
        # Only a recursive alias (``&a [*a]``) or absurd nesting gets here.
        raise ConfigValidationError(["the document is nested too deeply or contains a recursive alias"]) from None
    if reader.errors:
        raise ConfigValidationError(reader.errors)
    return SchedulerConfig(partitions=partitions, checksum=checksum(text))


def parse_and_validate(text: str) -> SchedulerConfig:
    """:func:`load_config` followed by every validation rule; raises with all errors found."""
    config = load_config(text)
    errors = validate(config)
    if errors:
        raise ConfigValidationError(errors)
    return config


def _compose(text: str) -> Node | None:
    """The YAML node tree of the single document in ``text`` (``None`` when it is empty)."""
    try:
        return compose_bounded(text)
    except YamlLimitError as exc:
        raise ConfigValidationError([str(exc)]) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "document"
        problem = " ".join(p for p in (exc.context, exc.problem) if p)
        raise ConfigValidationError([f"{where}: invalid YAML: {problem}"]) from None
    except yaml.YAMLError as exc:
        raise ConfigValidationError([f"invalid YAML: {exc}"]) from None


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _is_null(node: Node) -> bool:
    return isinstance(node, ScalarNode) and node.tag == _NULL_TAG


def _kind(node: Node) -> str:
    """How an error names what it found instead of what it expected."""
    if isinstance(node, MappingNode):
        return "a mapping"
    if isinstance(node, SequenceNode):
        return "a list"
    if _is_null(node):
        return "nothing (null)"
    return repr(node.value)


def _unknown_key_message(key: str, allowed: Collection[str]) -> str:
    hint = ""
    close = [k for k in allowed if k == key.lower().replace("_", "").replace("-", "")]
    close = close or difflib.get_close_matches(key.lower(), allowed, n=1)
    if close:
        hint = f"; did you mean {close[0]!r}?"
    return f"unknown key {key!r} (allowed: {', '.join(allowed)}){hint}"


_Entries = dict[str, tuple[Node, Node]]


class _Reader:
    """Turns the node tree into config objects, collecting errors rather than raising."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def fail(self, path: str, node: Node | None, message: str) -> None:
        where = path or "(top level)"
        if node is not None:
            where += f" (line {node.start_mark.line + 1})"
        self.errors.append(f"{where}: {message}")

    # -- generic readers -------------------------------------------------------------------

    def mapping(self, node: Node, path: str, allowed: Collection[str] | None) -> _Entries | None:
        """Key -> (key node, value node); ``{}`` for null, ``None`` (reported) if not a mapping.

        ``allowed`` None accepts any key (free maps such as properties or resources). Merge
        keys (``<<: *anchor``) are expanded; keys written out override merged ones.
        """
        if _is_null(node):
            return {}
        if not isinstance(node, MappingNode):
            self.fail(path, node, f"expected a mapping, got {_kind(node)}")
            return None
        entries: _Entries = {}
        merges: list[Node] = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                merges.append(value_node)
                continue
            key = self._key(key_node, path)
            if key is None:
                continue
            if key in entries:
                first = entries[key][0].start_mark.line + 1
                self.fail(_join(path, key), key_node, f"duplicate key {key!r} (first set on line {first})")
                continue
            if allowed is not None and key not in allowed:
                self.fail(_join(path, key), key_node, _unknown_key_message(key, allowed))
                continue
            entries[key] = (key_node, value_node)
        for merge in merges:
            sources = merge.value if isinstance(merge, SequenceNode) else [merge]
            for source in sources:
                merged = self.mapping(source, path, allowed) or {}
                for key, entry in merged.items():
                    entries.setdefault(key, entry)
        return entries

    def _key(self, node: Node, path: str) -> str | None:
        if not isinstance(node, ScalarNode):
            self.fail(path, node, f"mapping keys must be plain names, got {_kind(node)}")
            return None
        return "" if _is_null(node) else str(node.value)

    def sequence(self, node: Node, path: str) -> list[tuple[Node, str]]:
        """The items of a list with their paths; null is the empty list."""
        if _is_null(node):
            return []
        if not isinstance(node, SequenceNode):
            self.fail(path, node, f"expected a list, got {_kind(node)}")
            return []
        return [(item, f"{path}[{i}]") for i, item in enumerate(node.value)]

    def string(self, node: Node, path: str) -> str | None:
        """A scalar's source text (Go decodes any scalar into a string); null is ``""``."""
        if not isinstance(node, ScalarNode):
            self.fail(path, node, f"expected a string, got {_kind(node)}")
            return None
        return "" if _is_null(node) else str(node.value)

    def boolean(self, node: Node, path: str, default: bool) -> bool:
        """``true``/``false`` (YAML 1.1 spellings such as ``yes`` too); null is ``default``."""
        if _is_null(node):
            return default
        if isinstance(node, ScalarNode) and node.tag == _BOOL_TAG:
            return str(node.value).lower() in ("true", "yes", "on")
        self.fail(path, node, f"expected true or false, got {_kind(node)}")
        return default

    def uint(self, node: Node, path: str) -> int:
        """A non-negative decimal integer (Go ``uint64``); null is 0."""
        if _is_null(node):
            return 0
        if isinstance(node, ScalarNode) and node.tag == _INT_TAG and _DECIMAL.fullmatch(str(node.value)):
            value = int(str(node.value), 10)
            if value <= _UINT64_MAX:
                return value
            self.fail(path, node, f"{node.value} is too large (at most {_UINT64_MAX})")
            return 0
        self.fail(path, node, f"expected a non-negative whole number, got {_kind(node)}")
        return 0

    def number(self, node: Node, path: str) -> float | None:
        """A YAML int or float scalar as a float; ``None`` (reported) otherwise."""
        if isinstance(node, ScalarNode) and node.tag in (_INT_TAG, _FLOAT_TAG):
            # PyYAML's own constructors read every YAML spelling (1_000, .inf, 0x1F...).
            constructor = SafeConstructor()
            construct = constructor.construct_yaml_int if node.tag == _INT_TAG else constructor.construct_yaml_float
            return float(construct(node))
        self.fail(path, node, f"expected a number, got {_kind(node)}")
        return None

    def strings(self, node: Node, path: str) -> tuple[str, ...]:
        """A list of strings; null is the empty list."""
        values = (self.string(item, item_path) for item, item_path in self.sequence(node, path))
        return tuple(v for v in values if v is not None)

    def string_map(self, node: Node, path: str) -> dict[str, str]:
        """A free map of strings (``properties``); null is empty."""
        result: dict[str, str] = {}
        for key, (_, value_node) in (self.mapping(node, path, None) or {}).items():
            value = self.string(value_node, _join(path, key))
            if value is not None:
                result[key] = value
        return result

    def resource(self, node: Node, path: str) -> Resource | None:
        """A map of quantities; null is ``None`` (not set) while ``{}`` is an empty resource."""
        entries = self.mapping(node, path, None)
        if entries is None or _is_null(node):
            return None
        quantities: dict[str, int] = {}
        for name, (key_node, value_node) in entries.items():
            item_path = _join(path, name)
            if not name:
                self.fail(item_path, key_node, "resource names must not be empty")
                continue
            text = self.string(value_node, item_path)
            if text is None:
                continue
            try:
                quantities[name] = parse_quantity(name, text, item_path)
            except ResourceError as exc:
                # parse_quantity already names the path; keep its reason, add the line.
                self.fail(item_path, value_node, str(exc).removeprefix(f"{item_path}: "))
        return Resource(quantities)

    # -- the schema ------------------------------------------------------------------------

    def scheduler(self, node: Node) -> tuple[PartitionConfig, ...]:
        entries = self.mapping(node, "", _SCHEDULER_KEYS)
        if entries is None:
            return ()
        if "checksum" in entries:
            # Accepted for YuniKorn compatibility (the REST API echoes it back in the file);
            # the checksum is always recomputed from the text.
            self.string(entries["checksum"][1], "checksum")
        if "partitions" not in entries:
            self.fail("partitions", None, "missing: at least one partition is required")
            return ()
        return tuple(self.partition(item, path) for item, path in self.sequence(entries["partitions"][1], "partitions"))

    def partition(self, node: Node, path: str) -> PartitionConfig:
        entries = self.mapping(node, path, _PARTITION_KEYS) or {}
        name = self._optional_string(entries, "name", path) or ""
        rules = tuple(self.rule(item, p) for item, p in self._items(entries, "placementrules", path))
        limits = tuple(self.limit(item, p) for item, p in self._items(entries, "limits", path))
        root = self.root_queue(entries, path)
        if limits:
            root = self._with_partition_limits(root, limits, path)
        return PartitionConfig(
            name=normalise_partition_name(name),
            queues=root,
            placement_rules=rules,
            limits=limits,
            node_sort_policy=self.node_sort_policy(entries, path),
            preemption=self.preemption(entries, path),
            user_group_resolver=self.user_group_resolver(entries, path),
            topology_levels=self.topology_levels(entries, path),
            source=path,
        )

    def root_queue(self, entries: _Entries, path: str) -> QueueConfig:
        """The partition's single ``root``, wrapping the top-level queues when needed."""
        queues_path = _join(path, "queues")
        value = entries.get("queues", (None, None))[1]
        if value is None or _is_null(value):
            # YuniKorn: "queue config is not set". An explicit empty list is fine (root only).
            self.fail(queues_path, value, "missing: a partition needs a queue list (at least the root queue)")
            return QueueConfig(name=ROOT_QUEUE, parent=True, source=queues_path)
        top = tuple(self.queue(item, p) for item, p in self.sequence(value, queues_path))
        if len(top) == 1 and top[0].name == ROOT_QUEUE:
            # The root queue is always a parent, whatever the file says.
            return replace(top[0], parent=True)
        # No root, or several top-level queues: insert root above them, as YuniKorn does.
        return QueueConfig(name=ROOT_QUEUE, parent=True, queues=top, source=queues_path)

    def _with_partition_limits(self, root: QueueConfig, limits: tuple[LimitConfig, ...], path: str) -> QueueConfig:
        """Partition limits are the root queue's limits; both may be set only if they agree."""
        if root.limits and root.limits != limits:
            self.fail(
                _join(path, "limits"),
                None,
                f"the partition limits differ from the root queue limits ({root.source}.limits); "
                "partition limits are copied to the root queue, so set them in one place",
            )
            return root
        return replace(root, limits=limits)

    def queue(self, node: Node, path: str) -> QueueConfig:
        entries = self.mapping(node, path, _QUEUE_KEYS) or {}
        children = tuple(self.queue(item, p) for item, p in self._items(entries, "queues", path))
        template = None
        if "childtemplate" in entries:
            template = self.child_template(entries["childtemplate"][1], _join(path, "childtemplate"))
        return QueueConfig(
            # Queue names are case-insensitive: YuniKorn lower-cases them everywhere.
            name=(self._optional_string(entries, "name", path) or "").lower(),
            parent=self._optional_bool(entries, "parent", path, default=False),
            resources=self.resources(entries, path),
            max_applications=self._optional_uint(entries, "maxapplications", path),
            properties=self._optional_string_map(entries, "properties", path),
            submit_acl=self._optional_string(entries, "submitacl", path),
            admin_acl=self._optional_string(entries, "adminacl", path),
            child_template=template,
            limits=tuple(self.limit(item, p) for item, p in self._items(entries, "limits", path)),
            queues=children,
            source=path,
        )

    def child_template(self, node: Node, path: str) -> ChildTemplateConfig:
        entries = self.mapping(node, path, _CHILD_TEMPLATE_KEYS) or {}
        return ChildTemplateConfig(
            max_applications=self._optional_uint(entries, "maxapplications", path),
            properties=self._optional_string_map(entries, "properties", path),
            resources=self.resources(entries, path),
            source=path,
        )

    def resources(self, owner: _Entries, owner_path: str) -> ResourcesConfig:
        """The ``resources`` entry of a queue or child template."""
        if "resources" not in owner:
            return ResourcesConfig()
        path = _join(owner_path, "resources")
        entries = self.mapping(owner["resources"][1], path, _RESOURCES_KEYS) or {}
        maximum = self.resource(entries["max"][1], _join(path, "max")) if "max" in entries else None
        guaranteed = (
            self.resource(entries["guaranteed"][1], _join(path, "guaranteed")) if "guaranteed" in entries else None
        )
        return ResourcesConfig(max=maximum, guaranteed=guaranteed)

    def limit(self, node: Node, path: str) -> LimitConfig:
        entries = self.mapping(node, path, _LIMIT_KEYS) or {}
        max_resources = None
        if "maxresources" in entries:
            max_resources = self.resource(entries["maxresources"][1], _join(path, "maxresources"))
        return LimitConfig(
            limit=self._optional_string(entries, "limit", path) or "",
            users=self._optional_strings(entries, "users", path),
            groups=self._optional_strings(entries, "groups", path),
            max_resources=max_resources,
            max_applications=self._optional_uint(entries, "maxapplications", path),
            source=path,
        )

    def rule(self, node: Node, path: str) -> PlacementRuleConfig:
        entries = self.mapping(node, path, _RULE_KEYS) or {}
        name = (self._optional_string(entries, "name", path) or "").lower()
        value = self._optional_string(entries, "value", path) or ""
        if name == "fixed":
            # The fixed rule's value is a queue path, and queue names are lower-case.
            value = value.lower()
        parent = None
        if "parent" in entries and not _is_null(entries["parent"][1]):
            parent = self.rule(entries["parent"][1], _join(path, "parent"))
        rule_filter = None
        if "filter" in entries:
            rule_filter = self.filter(entries["filter"][1], _join(path, "filter"))
        return PlacementRuleConfig(
            name=name,
            create=self._optional_bool(entries, "create", path, default=False),
            filter=rule_filter,
            parent=parent,
            value=value,
            source=path,
        )

    def filter(self, node: Node, path: str) -> FilterConfig:
        entries = self.mapping(node, path, _FILTER_KEYS) or {}
        # An empty filter type means allow (YuniKorn); the validator rejects anything else.
        filter_type = (self._optional_string(entries, "type", path) or "allow").lower()
        return FilterConfig(
            type=filter_type,
            users=self._optional_strings(entries, "users", path),
            groups=self._optional_strings(entries, "groups", path),
            source=path,
        )

    def node_sort_policy(self, owner: _Entries, owner_path: str) -> NodeSortPolicyConfig:
        if "nodesortpolicy" not in owner:
            return NodeSortPolicyConfig()
        path = _join(owner_path, "nodesortpolicy")
        entries = self.mapping(owner["nodesortpolicy"][1], path, _NODE_SORT_KEYS) or {}
        policy_type = (self._optional_string(entries, "type", path) or "fair").lower()
        weights: dict[str, float] = {}
        if "resourceweights" in entries:
            weights_path = _join(path, "resourceweights")
            for name, (_, value_node) in (
                self.mapping(entries["resourceweights"][1], weights_path, None) or {}
            ).items():
                weight = self.number(value_node, _join(weights_path, name))
                if weight is not None:
                    weights[name] = weight
        if not weights:
            return NodeSortPolicyConfig(type=policy_type)
        return NodeSortPolicyConfig(type=policy_type, resource_weights=weights)

    def preemption(self, owner: _Entries, owner_path: str) -> PreemptionConfig:
        if "preemption" not in owner:
            return PreemptionConfig()
        path = _join(owner_path, "preemption")
        entries = self.mapping(owner["preemption"][1], path, _PREEMPTION_KEYS) or {}
        defaults = PreemptionConfig()
        return PreemptionConfig(
            enabled=self._optional_bool(entries, "enabled", path, default=defaults.enabled),
            quota_preemption_enabled=self._optional_bool(
                entries, "quotapreemptionenabled", path, default=defaults.quota_preemption_enabled
            ),
        )

    def topology_levels(self, owner: _Entries, owner_path: str) -> tuple[str, ...]:
        """``topology: {levels: [label, ...]}``: node label keys, outermost first, each once."""
        if "topology" not in owner:
            return ()
        path = _join(owner_path, "topology")
        entries = self.mapping(owner["topology"][1], path, _TOPOLOGY_KEYS) or {}
        levels = self._optional_strings(entries, "levels", path)
        where = _join(path, "levels")
        if len(levels) > MAX_TOPOLOGY_LEVELS:
            self.fail(where, entries["levels"][1], f"at most {MAX_TOPOLOGY_LEVELS} levels, got {len(levels)}")
            return ()
        for level in levels:
            if not _LABEL_KEY.fullmatch(level):
                self.fail(where, entries["levels"][1], f"{level!r} is not a node label key")
                return ()
            if levels.count(level) > 1:
                self.fail(where, entries["levels"][1], f"level {level!r} is named twice")
                return ()
        return levels

    def user_group_resolver(self, owner: _Entries, owner_path: str) -> UserGroupResolverConfig:
        if "usergroupresolver" not in owner:
            return UserGroupResolverConfig()
        path = _join(owner_path, "usergroupresolver")
        entries = self.mapping(owner["usergroupresolver"][1], path, _RESOLVER_KEYS) or {}
        return UserGroupResolverConfig(type=(self._optional_string(entries, "type", path) or "").lower())

    # -- optional fields of an already-read mapping ------------------------------------------

    def _items(self, entries: _Entries, key: str, path: str) -> list[tuple[Node, str]]:
        return self.sequence(entries[key][1], _join(path, key)) if key in entries else []

    def _optional_string(self, entries: _Entries, key: str, path: str) -> str | None:
        return self.string(entries[key][1], _join(path, key)) if key in entries else None

    def _optional_strings(self, entries: _Entries, key: str, path: str) -> tuple[str, ...]:
        return self.strings(entries[key][1], _join(path, key)) if key in entries else ()

    def _optional_string_map(self, entries: _Entries, key: str, path: str) -> dict[str, str]:
        return self.string_map(entries[key][1], _join(path, key)) if key in entries else {}

    def _optional_bool(self, entries: _Entries, key: str, path: str, *, default: bool) -> bool:
        return self.boolean(entries[key][1], _join(path, key), default) if key in entries else default

    def _optional_uint(self, entries: _Entries, key: str, path: str) -> int:
        return self.uint(entries[key][1], _join(path, key)) if key in entries else 0
