"""What an application asks of the member cluster it is placed in (issue 33 level 2), parsed
from its tags once, when the partition adds it.

Tags (names in :mod:`pyscheduler.si.vocabulary`):

- ``pyscheduler.io/clusters: "east,west"``: required, only these clusters (one name pins);
- ``pyscheduler.io/cluster-selector: "region=eu,tier=gold"``: required, only the clusters whose
  labels hold every pair;
- ``pyscheduler.io/preferred-clusters: "west,east"``: preferred, in this order;
- ``pyscheduler.io/preferred-cluster-selector: "region=eu"``: preferred, the clusters matching.

Grammar (strict, so that a typo never silently widens a requirement): a comma-separated list
of items, no empty item, no whitespace anywhere; a cluster name holds no ``=``; a selector item
is exactly ``key=value`` with a non-empty key (the value may be empty, as a Kubernetes label's)
and a key appears once. A tag present with a value that breaks these rules (an empty value
included) raises :class:`ClusterTagError` naming the tag and the fault: the partition rejects
the application with that message. Without any of the tags the application gets
:data:`NO_CLUSTER_REQUEST` (shared: nothing is allocated per application).

Cluster labels (the node attribute ``pyscheduler.io/cluster-labels``, sent by the RM) are read
leniently by :func:`parse_cluster_labels`: a malformed pair is skipped, never an error (a node
is not refused over its cluster's labels).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from pyscheduler.common.errors import SchedulerValueError
from pyscheduler.si.vocabulary import (
    APP_TAG_CLUSTER_SELECTOR,
    APP_TAG_CLUSTERS,
    APP_TAG_PREFERRED_CLUSTER_SELECTOR,
    APP_TAG_PREFERRED_CLUSTERS,
)

__all__ = ["ClusterRequest", "ClusterTagError", "NO_CLUSTER_REQUEST", "parse_cluster_labels", "parse_cluster_request"]

Selector = tuple[tuple[str, str], ...]


class ClusterTagError(SchedulerValueError):
    """A member-cluster tag whose value breaks the grammar (the message says which and why)."""


@dataclass(frozen=True, slots=True)
class ClusterRequest:
    """An application's member-cluster requirements and preferences (see the module doc)."""

    #: Required cluster names (None: any cluster).
    clusters: frozenset[str] | None = None
    #: Required label pairs (empty: any labels).
    selector: Selector = ()
    #: Preferred cluster names, most preferred first.
    preferred: tuple[str, ...] = ()
    #: Preferred label pairs (empty: no preference by labels).
    preferred_selector: Selector = ()

    def allows(self, name: str, labels: Mapping[str, str]) -> bool:
        """Whether a cluster passes the required tags."""
        if self.clusters is not None and name not in self.clusters:
            return False
        return _matches(self.selector, labels)

    def preference(self, name: str, labels: Mapping[str, str]) -> tuple[int, int]:
        """Sort key, smaller first: the position among the preferred clusters (past the end
        when not named), then 0 when the preferred selector is set and matches, else 1."""
        preferred = self.preferred
        position = preferred.index(name) if name in preferred else len(preferred)
        by_labels = 0 if self.preferred_selector and _matches(self.preferred_selector, labels) else 1
        return position, by_labels


#: The request of an application without any member-cluster tag.
NO_CLUSTER_REQUEST: Final = ClusterRequest()

_TAGS: Final = (APP_TAG_CLUSTERS, APP_TAG_CLUSTER_SELECTOR, APP_TAG_PREFERRED_CLUSTERS,
                APP_TAG_PREFERRED_CLUSTER_SELECTOR)


def parse_cluster_request(tags: Mapping[str, str]) -> ClusterRequest:
    """The application's request from its tags; raises :class:`ClusterTagError` for a
    malformed value (see the module doc)."""
    if not any(tag in tags for tag in _TAGS):
        return NO_CLUSTER_REQUEST
    required = tags.get(APP_TAG_CLUSTERS)
    preferred = tags.get(APP_TAG_PREFERRED_CLUSTERS)
    return ClusterRequest(
        clusters=frozenset(_names(APP_TAG_CLUSTERS, required)) if required is not None else None,
        selector=_selector(APP_TAG_CLUSTER_SELECTOR, tags.get(APP_TAG_CLUSTER_SELECTOR)),
        preferred=tuple(dict.fromkeys(_names(APP_TAG_PREFERRED_CLUSTERS, preferred))) if preferred is not None else (),
        preferred_selector=_selector(APP_TAG_PREFERRED_CLUSTER_SELECTOR, tags.get(APP_TAG_PREFERRED_CLUSTER_SELECTOR)),
    )


def parse_cluster_labels(text: str) -> dict[str, str]:
    """A cluster's labels from its node attribute ("k=v,k=v"); malformed pairs are skipped."""
    labels: dict[str, str] = {}
    for item in text.split(","):
        key, sep, value = item.strip().partition("=")
        if sep and key and "=" not in value:
            labels[key] = value
    return labels


def _items(tag: str, value: str) -> list[str]:
    if not value:
        raise ClusterTagError(f"tag {tag}: empty value")
    if any(ch.isspace() for ch in value):
        raise ClusterTagError(f"tag {tag}: whitespace in {value!r}")
    items = value.split(",")
    if "" in items:
        raise ClusterTagError(f"tag {tag}: empty item in {value!r}")
    return items


def _names(tag: str, value: str) -> list[str]:
    names = _items(tag, value)
    for name in names:
        if "=" in name:
            raise ClusterTagError(f"tag {tag}: {name!r} is not a cluster name")
    return names


def _selector(tag: str, value: str | None) -> Selector:
    if value is None:
        return ()
    pairs: dict[str, str] = {}
    for item in _items(tag, value):
        key, sep, label = item.partition("=")
        if not sep or not key or "=" in label:
            raise ClusterTagError(f"tag {tag}: {item!r} is not key=value")
        if key in pairs:
            raise ClusterTagError(f"tag {tag}: key {key!r} appears twice")
        pairs[key] = label
    return tuple(sorted(pairs.items()))


def _matches(selector: Selector, labels: Mapping[str, str]) -> bool:
    return all(key in labels and labels[key] == value for key, value in selector)
