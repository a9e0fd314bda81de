"""The limit (issue 37): a binder that makes no decisions, so its rate is the API server's own
rate of bindings on this machine, the ceiling no scheduler on it can pass.

``python -m benchmarks.kube_limit --kubeconfig K --scheduler-name N --binders B`` lists the
nodes (sorted by name), then lists and watches the pods of every namespace whose
``spec.schedulerName`` is N and ``spec.nodeName`` empty, and binds the i-th pod it sees to node
i mod (number of nodes) through the ``binding`` subresource, B binder threads at once, each with
a connection of its own. It checks nothing (no fit, no constraint, no priority): on kwok nodes a
binding past a node's capacity still succeeds. A binding refused because the pod is bound or
gone already (409, 404) is left; any other failure is retried up to 3 times.

:class:`LimitContender` is the kubernetes family's contender ``limit`` (:mod:`benchmarks.kubernetes`):
this binder in a process (and session) of its own, started and stopped like the schedulers, its
CPU seconds and peak memory measured the same way. Its rate is the ceiling for the ``plain``
workload; for the others it ignores what the pods ask (anti-affinity, spread, preemption, gangs),
so there its rate is the API server's ceiling for that many bindings, not a scheduler's result.

:data:`BINDERS`: chosen by measuring 8, 16, 32 and 64 binders once (docs/benchmarks.md, issue 37).
"""

from __future__ import annotations

import argparse
import itertools
import os
import queue
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))

from kube_cluster import KubeCluster  # noqa: E402

from benchmarks.kube_contenders import Contender  # noqa: E402
from pyscheduler_k8s.kubeapi import ClusterAccess, KubeApi, KubeApiError  # noqa: E402

LIMIT = "limit"
"""The contender's name in the report (and its key in ``--kube-contenders``)."""
LIMIT_SCHEDULER_NAME = "bench-limit"
BINDERS = 32
RETRIES = 3


class Binder:
    """The binder of the module doc, in this process."""

    def __init__(self, kubeconfig: str, scheduler_name: str, binders: int) -> None:
        self.access = ClusterAccess.discover(kubeconfig)
        self.api = KubeApi(self.access)
        self.scheduler_name = scheduler_name
        self.binders = binders
        self.nodes = sorted(str(n["metadata"]["name"]) for n in self.api.list("/api/v1/nodes")[0])
        if not self.nodes:
            raise RuntimeError("no nodes to bind to")
        self._pending: queue.SimpleQueue[tuple[str, str, str]] = queue.SimpleQueue()
        self._seen: set[str] = set()
        self._next = itertools.count()

    def offer(self, pod: Mapping[str, Any]) -> None:
        """A pending pod seen (listed or watched): the next node, unless seen before or deleting."""
        meta = pod.get("metadata") or {}
        uid = str(meta.get("uid", ""))
        if uid in self._seen or meta.get("deletionTimestamp") or (pod.get("spec") or {}).get("nodeName"):
            return
        self._seen.add(uid)
        node = self.nodes[next(self._next) % len(self.nodes)]
        self._pending.put((str(meta.get("namespace", "")), str(meta.get("name", "")), node))

    def _bind(self, api: KubeApi) -> None:
        while True:
            namespace, name, node = self._pending.get()
            for attempt in range(RETRIES):
                try:
                    api.bind(namespace, name, node)
                    break
                except KubeApiError as exc:
                    if exc.status in (404, 409) or attempt == RETRIES - 1:
                        break

    def run(self) -> None:
        """Binds until the process ends (SIGTERM)."""
        for n in range(self.binders):
            # A client each: one pool of keep-alive connections holds up to POOL_SIZE, and a
            # connection made and dropped for every binding beyond it costs a TLS handshake.
            threading.Thread(target=self._bind, args=(KubeApi(self.access),), name=f"limit-binder-{n}",
                             daemon=True).start()
        params = {"fieldSelector": f"spec.schedulerName={self.scheduler_name},spec.nodeName="}
        while True:
            pods, version = self.api.list("/api/v1/pods", params=params)
            for pod in pods:
                self.offer(pod)
            try:
                while True:
                    # KubeApi.watch takes no field selector: the pods of other schedulers are
                    # left here (their events are decoded, no more).
                    for kind, pod in self.api.watch("/api/v1/pods", version, timeout_seconds=3600):
                        version = str((pod.get("metadata") or {}).get("resourceVersion", version))
                        if kind == "ADDED" and (pod.get("spec") or {}).get("schedulerName") == self.scheduler_name:
                            self.offer(pod)
            except KubeApiError:  # WatchExpired among them: list again
                continue


class LimitContender(Contender):
    """The binder of the module doc as a contender: ``python -m benchmarks.kube_limit``."""

    name = LIMIT
    tag = "limi"
    scheduler_name = LIMIT_SCHEDULER_NAME

    def __init__(self, cluster: KubeCluster, workdir: Path, binders: int = BINDERS) -> None:
        super().__init__(cluster, workdir)
        self.binders = binders
        self.client_limits = f"none ({binders} binder threads, no decisions)"

    def command(self) -> tuple[list[str], dict[str, str]]:
        path = os.environ.get("PYTHONPATH", "")
        env = {**os.environ, "PYTHONPATH": str(ROOT) + (os.pathsep + path if path else "")}
        return [sys.executable, "-m", "benchmarks.kube_limit", "--kubeconfig", str(self.cluster.kubeconfig),
                "--scheduler-name", self.scheduler_name, "--binders", str(self.binders)], env


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.kube_limit", description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--scheduler-name", default=LIMIT_SCHEDULER_NAME)
    parser.add_argument("--binders", type=int, default=BINDERS)
    args = parser.parse_args(argv)
    Binder(args.kubeconfig, args.scheduler_name, args.binders).run()


if __name__ == "__main__":
    main()
