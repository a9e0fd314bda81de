"""Several control planes on loopback for the multi-cluster tests and benchmark (issue 33, level
2): a **hub** (etcd, kube-apiserver and kube-controller-manager, so its Jobs make pods; no kwok
and no nodes by default: the hub's pods run in a member) and **members** (etcd, kube-apiserver
and kwok, each with its own fake nodes), each a :class:`kube_cluster.KubeCluster` in a work
directory of its own.

:func:`start_hub_and_members` starts them in parallel threads (on 2 cores: the three together
in 5.2 s against 9.3 s one after another, measured with ``python tests/kube_hub.py``);
:func:`write_clusters_file` writes the file ``pyscheduler serve --rm pyscheduler_k8s:attach
--clusters-file FILE`` (env ``PYSCHEDULER_K8S_CLUSTERS_FILE``) reads:

.. code-block:: yaml

    hub: {name: hub, kubeconfig: /path/hub/kubeconfig}
    members:
      - {name: east, kubeconfig: /path/east/kubeconfig, labels: {region: eu}}
      - {name: west, kubeconfig: /path/west/kubeconfig}
    lostAfter: 300
    onLost: requeue

If one control plane fails to start, those started are stopped and the error raised. Every
wait is bounded (the kit's own timeouts).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import yaml
from kube_cluster import KubeCluster, start_cluster, tools_dir

HUB = "hub"
DEFAULT_MEMBERS = ("east", "west")
#: Labels of the hub pod the hub shim sets: the member it runs in; and its annotation: the node there.
CLUSTER_LABEL, NODE_ANNOTATION = "pyscheduler.io/cluster", "pyscheduler.io/node"
#: The label on a member's copy of a hub pod: the hub pod's uid.
HUB_POD_UID_LABEL = "pyscheduler.io/hub-pod-uid"


@dataclass
class HubAndMembers:
    """The running control planes: the hub and the members by name (in the order asked)."""

    hub: KubeCluster
    members: dict[str, KubeCluster]

    def all(self) -> list[KubeCluster]:
        return [self.hub, *self.members.values()]

    def stop(self) -> None:
        """Every control plane stopped, in parallel (each takes up to its own timeout)."""
        _stop_all(self.all())

    def add_member_nodes(self, count: int, *, timeout: float = 600.0,
                         labels: Mapping[str, Mapping[str, str]] | None = None, **allocatable: str) -> dict[str, list[str]]:
        """``count`` kwok nodes in each member, named ``<member>-<n>`` (``n`` zero-padded to the
        count's width), made in parallel; returns each member's node names. ``labels``: extra
        labels per member name, on each of its nodes."""
        width = len(str(max(count - 1, 0)))
        names = {member: [f"{member}-{n:0{width}d}" for n in range(count)] for member in self.members}

        def add(member: str) -> None:
            extra = (labels or {}).get(member)
            per_node = {name: extra for name in names[member]} if extra else None
            self.members[member].add_nodes(names[member], timeout=timeout, labels=per_node, **allocatable)

        _in_parallel([partial(add, member) for member in self.members])
        return names


def start_hub_and_members(workdir: Path, members: Sequence[str] = DEFAULT_MEMBERS, *, tools: Path | None = None,
                          hub_kwok: bool = False, hub_controller_manager: bool = True) -> HubAndMembers:
    """The hub (in ``workdir/hub``) and each member (``workdir/<name>``), started in parallel
    and ready; the caller stops them (:meth:`HubAndMembers.stop`). ``hub_kwok``: kwok on the hub
    too (it has no nodes unless the test adds some)."""
    if HUB in members or len(set(members)) != len(members) or not members:
        raise ValueError(f"members must be distinct, at least one, and not {HUB!r}: {list(members)}")
    tools = tools if tools is not None else tools_dir()  # once, not once per thread
    started: dict[str, KubeCluster] = {}
    lock = threading.Lock()

    def start(name: str) -> None:
        is_hub = name == HUB
        cluster = start_cluster(workdir / name, tools, kwok=hub_kwok if is_hub else True,
                                controller_manager=hub_controller_manager and is_hub)
        with lock:
            started[name] = cluster

    try:
        _in_parallel([partial(start, name) for name in (HUB, *members)])
    except BaseException:
        _stop_all(list(started.values()))
        raise
    return HubAndMembers(started[HUB], {name: started[name] for name in members})


@contextmanager
def hub_and_members(workdir: Path, members: Sequence[str] = DEFAULT_MEMBERS, *,
                    tools: Path | None = None) -> Iterator[HubAndMembers]:
    """:func:`start_hub_and_members` for a block (a test's fixture), stopped after it."""
    clusters = start_hub_and_members(workdir, members, tools=tools)
    try:
        yield clusters
    finally:
        clusters.stop()


def clusters_document(clusters: HubAndMembers, *, labels: Mapping[str, Mapping[str, str]] | None = None,
                      lost_after: float = 300, on_lost: str = "requeue") -> dict[str, object]:
    """The clusters file's content (module doc): ``labels`` per member name (a member without
    any has no ``labels`` key)."""
    if on_lost not in ("requeue", "fail"):
        raise ValueError(f"onLost is requeue or fail, not {on_lost!r}")
    members: list[dict[str, object]] = []
    for name, cluster in clusters.members.items():
        entry: dict[str, object] = {"name": name, "kubeconfig": str(cluster.kubeconfig)}
        if labels and labels.get(name):
            entry["labels"] = dict(labels[name])
        members.append(entry)
    return {"hub": {"name": HUB, "kubeconfig": str(clusters.hub.kubeconfig)}, "members": members,
            "lostAfter": lost_after, "onLost": on_lost}


def write_clusters_file(path: Path, clusters: HubAndMembers, *, labels: Mapping[str, Mapping[str, str]] | None = None,
                        lost_after: float = 300, on_lost: str = "requeue") -> Path:
    """Writes :func:`clusters_document` as YAML to ``path``; returns ``path``."""
    path.write_text(yaml.safe_dump(clusters_document(clusters, labels=labels, lost_after=lost_after,
                                                     on_lost=on_lost), sort_keys=False))
    return path


def _in_parallel(calls: list[Callable[[], None]]) -> None:
    """Runs the calls in threads, waits for all, raises the first failure (after all ended)."""
    with ThreadPoolExecutor(max(1, len(calls))) as pool:
        futures = [pool.submit(call) for call in calls]
    errors = [future.exception() for future in futures]
    first = next((error for error in errors if error is not None), None)
    if first is not None:
        raise first


def _stop_all(clusters: list[KubeCluster]) -> None:
    with ThreadPoolExecutor(max(1, len(clusters))) as pool:
        list(pool.map(lambda cluster: cluster.stop(), clusters))


def _timings(workdir: Path) -> None:
    """Starts the three control planes one after another, then in parallel, and says how long each took."""
    for parallel in (False, True):
        started = time.monotonic()
        if parallel:
            clusters = start_hub_and_members(workdir / "parallel")
            made = clusters.all()
        else:
            made = [start_cluster(workdir / "serial" / HUB, kwok=False, controller_manager=True),
                    *(start_cluster(workdir / "serial" / name) for name in DEFAULT_MEMBERS)]
        print(f"{'parallel' if parallel else 'one after another'}: {time.monotonic() - started:.1f} s")
        _stop_all(made)


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kube-hub-") as tmp:
        _timings(Path(tmp))
    sys.exit(0)
