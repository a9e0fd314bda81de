"""What an application asks of the topology it is placed in (issue 34), parsed from its tags
once, when the partition adds it.

- ``pyscheduler.io/topology-required: <node label>``: all its allocations in one domain of that
  level (the nodes sharing that label's value), the domain chosen for the whole application;
- ``pyscheduler.io/topology-preferred: <node label>``: one domain of that level when one has room
  for the whole application, else anywhere;
- ``pyscheduler.io/topology-slice-required: <node label>`` with
  ``pyscheduler.io/topology-slice-size: <N>``: its members in groups of N (in the order they
  were asked for; the last group may be smaller), each group in one domain of that level (a
  level inside the required or preferred one, when one is given).

The label must be one of the partition's topology levels (``topology.levels`` in its
configuration): anything else, an empty value, required and preferred at once, a slice level
without a size (or the reverse), a size that is not a whole number from 1 to 100,000, or a slice
level not inside the required or preferred one, raises
:class:`TopologyTagError` and the partition rejects the application with its message (a typo
never silently drops a requirement). Without either tag the application gets
:data:`NO_TOPOLOGY_REQUEST`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from pyscheduler.common.errors import SchedulerValueError
from pyscheduler.si.vocabulary import (
    APP_TAG_TOPOLOGY_PREFERRED,
    APP_TAG_TOPOLOGY_REQUIRED,
    APP_TAG_TOPOLOGY_SLICE_REQUIRED,
    APP_TAG_TOPOLOGY_SLICE_SIZE,
)

__all__ = ["NO_TOPOLOGY_REQUEST", "TopologyRequest", "TopologyTagError", "parse_topology_request"]


class TopologyTagError(SchedulerValueError):
    """A topology tag the partition cannot honour (the message says which and why)."""


@dataclass(frozen=True, slots=True)
class TopologyRequest:
    #: The level's node label ("": no request).
    level: str = ""
    #: True: required; False: preferred.
    required: bool = False
    #: The slices' level's node label ("": no slices) and their size.
    slice_level: str = ""
    slice_size: int = 0


NO_TOPOLOGY_REQUEST: Final = TopologyRequest()


MAX_SLICE_SIZE: Final = 100_000


def parse_topology_request(tags: Mapping[str, str], levels: Sequence[str]) -> TopologyRequest:
    """The application's request from its tags against the partition's ``levels``; raises
    :class:`TopologyTagError` (see the module doc)."""
    required, preferred = tags.get(APP_TAG_TOPOLOGY_REQUIRED), tags.get(APP_TAG_TOPOLOGY_PREFERRED)
    slice_level, slice_size = tags.get(APP_TAG_TOPOLOGY_SLICE_REQUIRED), tags.get(APP_TAG_TOPOLOGY_SLICE_SIZE)
    if required is None and preferred is None and slice_level is None and slice_size is None:
        return NO_TOPOLOGY_REQUEST
    if required is not None and preferred is not None:
        raise TopologyTagError(f"tags {APP_TAG_TOPOLOGY_REQUIRED} and {APP_TAG_TOPOLOGY_PREFERRED} together: "
                               "give one")
    level = ""
    if required is not None or preferred is not None:
        tag = APP_TAG_TOPOLOGY_REQUIRED if required is not None else APP_TAG_TOPOLOGY_PREFERRED
        level = _level(tag, required if required is not None else preferred, levels)
    slices = ("", 0)
    if slice_level is not None or slice_size is not None:
        if slice_level is None or slice_size is None:
            raise TopologyTagError(f"tags {APP_TAG_TOPOLOGY_SLICE_REQUIRED} and {APP_TAG_TOPOLOGY_SLICE_SIZE} "
                                   "go together")
        inner = _level(APP_TAG_TOPOLOGY_SLICE_REQUIRED, slice_level, levels)
        if level and levels.index(inner) < levels.index(level):
            raise TopologyTagError(f"tag {APP_TAG_TOPOLOGY_SLICE_REQUIRED}: {inner!r} is outside {level!r}: "
                                   "a slice's level is inside the application's")
        if not slice_size.isdigit() or not 1 <= int(slice_size) <= MAX_SLICE_SIZE:
            raise TopologyTagError(f"tag {APP_TAG_TOPOLOGY_SLICE_SIZE}: {slice_size!r} is not a whole number "
                                   f"from 1 to {MAX_SLICE_SIZE}")
        slices = (inner, int(slice_size))
    return TopologyRequest(level, required is not None, *slices)


def _level(tag: str, value: str | None, levels: Sequence[str]) -> str:
    if not value:
        raise TopologyTagError(f"tag {tag}: empty, expected one of the partition's topology levels")
    if value not in levels:
        known = ", ".join(levels) if levels else "none: the partition has no topology.levels"
        raise TopologyTagError(f"tag {tag}: {value!r} is not a topology level of the partition (levels: {known})")
    return value
