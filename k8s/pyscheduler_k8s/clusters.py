"""Several Kubernetes clusters scheduled by one served scheduler (issue 33, level 1).

``PYSCHEDULER_K8S_CLUSTERS`` names them: ``NAME=KUBECONFIG`` pairs, comma-separated
(``east=/etc/k/east,west=/etc/k/west``; ``pyscheduler serve --cluster NAME=KUBECONFIG``, repeated,
sets it). A name is a DNS label (lower-case letters, digits and ``-``, at most 63, starting and
ending with a letter or digit), each name once, each kubeconfig a file that exists:
:func:`parse_clusters` raises ValueError otherwise, saying which entry is wrong.

Each cluster is its own RM: its name is its ``rm_id`` (so the core's partitions are
``[east]default``, ``[west]default``), it reads its own ConfigMap and holds its own Lease, and it
runs on its own threads. :class:`SeveralClusters` is what ``attach`` returns for them: one
member per cluster (a :class:`~pyscheduler_k8s.replica.Replica`, or a
:class:`~pyscheduler_k8s.sole.SoleShim` without leader election), all started in the background,
so a cluster whose API server is unreachable never holds up the serve or the other clusters: its
member keeps trying on its own threads and starts the shim (listing the cluster again) when it
answers. Its routes: ``GET /ws/v1/k8s/leadership`` (every cluster's status, by name) and
``GET /ws/v1/k8s/<name>/leadership`` (one cluster's).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from pyscheduler.service.rm import Route
from pyscheduler_k8s.api_metrics import ApiMeasured

__all__ = ["CLUSTERS_ENV", "ClusterMember", "NamedCluster", "SeveralClusters", "format_clusters", "parse_cluster",
           "parse_clusters"]

CLUSTERS_ENV: Final = "PYSCHEDULER_K8S_CLUSTERS"
_DNS_LABEL: Final = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


@dataclass(frozen=True)
class NamedCluster:
    #: The cluster's name: its RM's ``rm_id``.
    name: str
    #: The kubeconfig that reaches it.
    kubeconfig: str


def parse_cluster(entry: str) -> NamedCluster:
    """One ``NAME=KUBECONFIG``; ValueError when the name is not a DNS label or the file is missing."""
    name, sep, path = entry.strip().partition("=")
    name, path = name.strip(), path.strip()
    if not sep or not path:
        raise ValueError(f"{entry!r}: expected NAME=KUBECONFIG")
    if not _DNS_LABEL.fullmatch(name):
        raise ValueError(f"{entry!r}: the name {name!r} is not a DNS label (lower-case letters, digits and '-', "
                         "at most 63, starting and ending with a letter or digit)")
    path = os.path.expanduser(path)
    if not os.path.isfile(path):
        raise ValueError(f"{entry!r}: no kubeconfig file {path}")
    return NamedCluster(name, path)


def parse_clusters(entries: Sequence[str]) -> tuple[NamedCluster, ...]:
    """Every entry (:func:`parse_cluster`), each name once (ValueError otherwise)."""
    clusters = tuple(parse_cluster(entry) for entry in entries if entry.strip())
    seen: set[str] = set()
    for cluster in clusters:
        if cluster.name in seen:
            raise ValueError(f"cluster {cluster.name!r} is named twice")
        seen.add(cluster.name)
    return clusters


def clusters_from_environment() -> tuple[NamedCluster, ...]:
    """The clusters ``PYSCHEDULER_K8S_CLUSTERS`` names (empty: not set, one cluster as before)."""
    return parse_clusters(os.environ.get(CLUSTERS_ENV, "").split(","))


def format_clusters(clusters: Sequence[NamedCluster]) -> str:
    """The value of ``PYSCHEDULER_K8S_CLUSTERS`` naming ``clusters`` (paths with ``,`` refused)."""
    for cluster in clusters:
        if "," in cluster.kubeconfig:
            raise ValueError(f"cluster {cluster.name!r}: the kubeconfig path {cluster.kubeconfig!r} has a ','")
    return ",".join(f"{c.name}={c.kubeconfig}" for c in clusters)


class ClusterMember(Protocol):
    """One cluster's replica, as :class:`SeveralClusters` drives it."""

    def start_in_background(self) -> None: ...

    def stop(self) -> None: ...

    def status(self) -> Mapping[str, object]: ...


class SeveralClusters(ApiMeasured):
    """The clusters attached to one service (see the module doc); stopped together."""

    def __init__(self, members: Mapping[str, ClusterMember]) -> None:
        self.members = dict(members)

    def start(self) -> None:
        """Starts every member on its own threads; returns at once (nothing here waits for a cluster)."""
        for member in self.members.values():
            member.start_in_background()

    def stop(self) -> None:
        for member in reversed(list(self.members.values())):
            member.stop()

    def status(self) -> Mapping[str, object]:
        return {"clusters": {name: dict(member.status()) for name, member in self.members.items()}}

    def routes(self) -> Sequence[Route]:
        own = [Route(f"/ws/v1/k8s/{name}/leadership", f"k8s_leadership_{name}", member.status)
               for name, member in self.members.items()]
        return (Route("/ws/v1/k8s/leadership", "k8s_leadership", self.status), *own)
