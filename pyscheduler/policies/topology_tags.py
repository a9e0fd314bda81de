"""What an application asks of the topology it is placed in (issue 34), parsed from its tags
once, when the partition adds it.

- ``pyscheduler.io/topology-required: <node label>``: all its allocations in one domain of that
  level (the nodes sharing that label's value), the domain chosen for the whole application;
- ``pyscheduler.io/topology-preferred: <node label>``: one domain of that level when one has room
  for the whole application, else anywhere.

The label must be one of the partition's topology levels (``topology.levels`` in its
configuration): anything else, an empty value, both tags at once, raises
:class:`TopologyTagError` and the partition rejects the application with its message (a typo
never silently drops a requirement). Without either tag the application gets
:data:`NO_TOPOLOGY_REQUEST`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from pyscheduler.common.errors import SchedulerValueError
from pyscheduler.si.vocabulary import APP_TAG_TOPOLOGY_PREFERRED, APP_TAG_TOPOLOGY_REQUIRED

__all__ = ["NO_TOPOLOGY_REQUEST", "TopologyRequest", "TopologyTagError", "parse_topology_request"]


class TopologyTagError(SchedulerValueError):
    """A topology tag the partition cannot honour (the message says which and why)."""


@dataclass(frozen=True, slots=True)
class TopologyRequest:
    #: The level's node label ("": no request).
    level: str = ""
    #: True: required; False: preferred.
    required: bool = False


NO_TOPOLOGY_REQUEST: Final = TopologyRequest()


def parse_topology_request(tags: Mapping[str, str], levels: Sequence[str]) -> TopologyRequest:
    """The application's request from its tags against the partition's ``levels``; raises
    :class:`TopologyTagError` (see the module doc)."""
    required, preferred = tags.get(APP_TAG_TOPOLOGY_REQUIRED), tags.get(APP_TAG_TOPOLOGY_PREFERRED)
    if required is None and preferred is None:
        return NO_TOPOLOGY_REQUEST
    if required is not None and preferred is not None:
        raise TopologyTagError(f"tags {APP_TAG_TOPOLOGY_REQUIRED} and {APP_TAG_TOPOLOGY_PREFERRED} together: "
                               "give one")
    tag, value = (APP_TAG_TOPOLOGY_REQUIRED, required) if required is not None else (APP_TAG_TOPOLOGY_PREFERRED,
                                                                                     preferred)
    assert value is not None
    if not value:
        raise TopologyTagError(f"tag {tag}: empty, expected one of the partition's topology levels")
    if value not in levels:
        known = ", ".join(levels) if levels else "none: the partition has no topology.levels"
        raise TopologyTagError(f"tag {tag}: {value!r} is not a topology level of the partition (levels: {known})")
    return TopologyRequest(value, required is not None)
