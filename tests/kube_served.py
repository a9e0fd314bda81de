"""A scheduler with the Kubernetes shim attached, for the tests against a real API server
(tests/kube_cluster.py starts one)."""

from __future__ import annotations

from pathlib import Path

from kube_cluster import KubeCluster

from pyscheduler.rmproxy.proxy import RMProxy
from pyscheduler.scheduler.context import ClusterContext
from pyscheduler.scheduler.loop import Scheduler
from pyscheduler_k8s.kubeapi import ClusterAccess, KubeApi
from pyscheduler_k8s.shim import KubeShim, ShimOptions

QUEUES = """\
partitions:
  - name: default
    placementrules:
      - name: provided
        create: true
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: default
          - name: batch
"""
PARTITION = "[pyscheduler-k8s]default"


class Served:
    """A scheduler with the shim attached, as ``pyscheduler serve --rm pyscheduler_k8s:attach``
    runs them: ``kubeconfig`` (default the cluster's admin one) says who the shim is;
    ``start_shim`` False leaves starting it to the caller (a replica starts its own); ``queues`` the
    configuration without a ConfigMap (default :data:`QUEUES`)."""

    def __init__(self, kube: KubeCluster, options: ShimOptions | None = None, *, kubeconfig: Path | None = None,
                 start_shim: bool = True, queues: str = "") -> None:
        self.context = ClusterContext()
        self.scheduler = Scheduler(self.context, idle_interval=0.02)
        self.proxy = RMProxy(self.context)
        self.api = KubeApi(ClusterAccess.from_kubeconfig(str(kubeconfig or kube.kubeconfig)))
        self.shim = KubeShim(self.proxy, self.api, queues or QUEUES, options)
        self.context.event_system.start()  # request events reach the shim through it
        if start_shim:
            self.shim.start()
        self.scheduler.start()

    def stop(self) -> None:
        self.shim.stop()
        self.scheduler.stop()
        self.proxy.stop()
        self.context.event_system.stop()

    def app_allocations(self, app_id: str) -> int:
        partition = self.context.partitions[PARTITION]
        with partition.lock:
            app = partition.applications.get(app_id)
            return 0 if app is None else len(app.allocations)
