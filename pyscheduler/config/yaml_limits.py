"""Bounds on the YAML the scheduler reads (queues.yaml, workload files), whoever sends it.

A YAML document is small on the wire and can be huge in memory: aliases let 645 bytes stand
for millions of values (the "billion laughs"), and a few hundred kilobytes of ``[[[[`` nest so
deep that PyYAML's C composer overflows the process's stack (a segmentation fault, not an
exception). Every YAML text the package reads goes through :func:`compose_bounded` (or
:func:`check_nesting` where it is loaded another way), which refuses, with a clear error and
before any expansion:

- nesting deeper than :data:`MAX_NESTING` collections (checked on the parser's event stream,
  which is iterative, before anything recursive runs);
- a document whose values, counted with every alias expanded as a reader walking it would
  see them, exceed :data:`MAX_EXPANDED_VALUES` (yaml.v3, which YuniKorn uses, refuses such
  documents as "excessive aliasing"); a recursive alias (``&a [*a]``) is refused too.

The limits are far above any real configuration: a queues.yaml with 10,000 queues has about
100,000 values and nests about 140 deep only if its queue tree does, which the validator's own
queue depth limit forbids long before.
"""

from __future__ import annotations

from typing import Final

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

from pyscheduler.common.errors import SchedulerValueError

__all__ = [
    "MAX_EXPANDED_VALUES",
    "MAX_NESTING",
    "YamlLimitError",
    "check_nesting",
    "compose_bounded",
    "expanded_size",
]

#: Collections (lists and mappings) open at once, at most.
MAX_NESTING: Final = 200
#: Values (scalars, lists, mappings), aliases expanded, in one document at most.
MAX_EXPANDED_VALUES: Final = 1_000_000

_OPEN: Final = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_CLOSE: Final = (yaml.SequenceEndEvent, yaml.MappingEndEvent)


class YamlLimitError(SchedulerValueError):
    """The document is over one of the bounds; the message says which, for an operator."""


def _loader() -> type[yaml.SafeLoader]:
    # libyaml's parser when PyYAML was built with it: same events and nodes, much faster.
    loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return loader


def check_nesting(text: str, max_nesting: int = MAX_NESTING) -> None:
    """Raises :class:`YamlLimitError` when ``text`` nests more than ``max_nesting`` lists and
    mappings. Stops reading at the first collection over the bound; YAML syntax errors are
    left to the caller's own parse (they raise ``yaml.YAMLError`` here too)."""
    depth = 0
    for event in yaml.parse(text, Loader=_loader()):
        if isinstance(event, _OPEN):
            depth += 1
            if depth > max_nesting:
                mark = event.start_mark
                where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
                raise YamlLimitError(f"{where}the document nests more than {max_nesting} lists and mappings deep")
        elif isinstance(event, _CLOSE):
            depth -= 1


def expanded_size(node: Node, limit: int = MAX_EXPANDED_VALUES) -> int:
    """The number of values under ``node`` (itself included) with every alias expanded.

    Each distinct node is visited once (an alias is the same node object again), so the cost
    is the document's own size, not the expansion's. Raises :class:`YamlLimitError` past
    ``limit`` or on a recursive alias.
    """
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    # Iterative post-order walk: a deep document must not exhaust Python's recursion limit.
    stack: list[tuple[Node, bool]] = [(node, False)]
    while stack:
        current, children_done = stack.pop()
        key = id(current)
        if children_done:
            on_path.discard(key)
            total = 1 + sum(sizes[id(child)] for child in _children(current))
            if total > limit:
                raise YamlLimitError(
                    f"the document expands to more than {limit:,} values through aliases (excessive aliasing)"
                )
            sizes[key] = total
            continue
        if key in sizes:
            continue
        if key in on_path:
            mark = current.start_mark
            raise YamlLimitError(f"line {mark.line + 1}: recursive alias (it refers to a collection that contains it)")
        on_path.add(key)
        stack.append((current, True))
        for child in _children(current):
            child_key = id(child)
            if child_key in on_path:
                mark = child.start_mark
                raise YamlLimitError(f"line {mark.line + 1}: recursive alias (it refers to a collection that contains it)")
            if child_key not in sizes:
                stack.append((child, False))
    return sizes[id(node)]


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def compose_bounded(text: str) -> Node | None:
    """``yaml.compose`` of the single document in ``text`` within the bounds (``None`` for an
    empty document). Raises :class:`YamlLimitError` over a bound, ``yaml.YAMLError`` on
    invalid YAML."""
    check_nesting(text)
    node: Node | None = yaml.compose(text, Loader=_loader())
    if node is not None:
        expanded_size(node)
    return node
