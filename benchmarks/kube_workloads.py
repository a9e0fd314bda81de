"""The kubernetes family's workloads (:mod:`benchmarks.kubernetes`): the pods each one creates,
from kube-scheduler's own benchmark, scheduler_perf (``test/integration/scheduler_perf`` in
Kubernetes: its ``config/performance-config.yaml`` and pod templates), and the check of the
bound pods against each workload's constraint.

Every workload runs on the same nodes: kwok nodes of 32 cpu, 128 GiB and 110 pods, labelled with
scheduler_perf's 3 zones (``topology.kubernetes.io/zone`` ``moon-1`` .. ``moon-3``, round robin).

- ``plain`` (scheduler_perf's ``SchedulingBasic``): ``pods`` pods of 100m cpu and 128 MiB, no
  constraints, in applications of 100. Measures the scheduler's and the API server's bare
  binding path: what each pod costs to decide and to bind when any node will do.
- ``anti-affinity`` (``SchedulingPodAntiAffinity``): half as many pods, 100m cpu and 500 MiB,
  each with required pod anti-affinity by ``kubernetes.io/hostname`` against its own group (10
  groups of half the nodes each, ``color: green-N``). Measures the inter-pod filter: every
  placement depends on where the group's earlier pods went.
- ``spread`` (``TopologySpreading``): half as many pods, 100m cpu and 500 MiB, ``color: blue``,
  one ``DoNotSchedule`` constraint by zone, maxSkew 5. Measures the topology spread filter.
- ``preemption`` (``PreemptionBasic``): the cluster is first filled by low-priority pods (4 a
  node, 7200m cpu each: 28.8 of a node's 32 cpu; scheduler_perf's 900m of 4 cpu scaled to these
  nodes; PriorityClass ``bench-low``, value 1), not measured; then a wave of high-priority pods
  (one a node, at most ``pods / 2``: 5,000 at 5,000 nodes as in scheduler_perf; 24 cpu each,
  scheduler_perf's 3000m scaled; ``bench-high``, value 10) that fit only once 3 low pods of
  their node are gone. Measures how fast a scheduler finds victims and binds the preemptors:
  high-priority pods bound/s and the number of low pods preempted. pyscheduler preempts as
  YuniKorn does, for a queue below its guarantee: the wave goes to ``root.bench-high`` (its
  guarantee above the whole cluster, preemption delay 100 ms), the low pods to ``root.bench``.
- ``gangs`` (YuniKorn task groups; scheduler_perf's gang workloads use Kubernetes' own Workload
  API, which neither kube-scheduler's default profile nor the shim's YuniKorn annotations
  share): 10 jobs of 100 pods (100m cpu, 128 MiB), each job one application whose every pod
  carries ``yunikorn.apache.org/task-groups`` (one group ``worker``, minMember 100),
  ``task-group-name: worker`` and ``schedulingPolicyParameters`` with ``gangSchedulingStyle=Hard``
  (the shape tests/test_k8s_gang.py uses). Measures gang scheduling's cost: placeholders created
  and bound, then replaced by the real pods. kube-scheduler has no gangs: it schedules these as
  plain pods (the report says so).

``--quick`` sizes come from :func:`workloads_for`'s arguments (the family's quick nodes and
pods); the gangs' quick size is 5 jobs of 20.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PODS_PER_APP = 100
WORKLOADS = ("plain", "anti-affinity", "spread", "preemption", "gangs")
#: The anti-affinity and spread workloads: half the plain workload's pods (5,000 at 10,000).
CONSTRAINED_SHARE = 2
#: scheduler_perf's zones (``labelNodePrepareStrategy`` of TopologySpreading) and spread pod.
ZONE_LABEL, ZONES = "topology.kubernetes.io/zone", ("moon-1", "moon-2", "moon-3")
HOSTNAME_LABEL = "kubernetes.io/hostname"
SPREAD_MAX_SKEW = 5
#: The preemption workload (module doc): low pods a node, their cpu, the wave's cpu, priorities.
LOW_PER_NODE, LOW_CPU, HIGH_CPU = 4, "7200m", "24"
LOW_CLASS, HIGH_CLASS = ("bench-low", 1), ("bench-high", 10)
#: Every workload's nodes: 32 cpu (``NODE_CPU``), 128 GiB.
NODE_CPU, NODE_MEMORY = "32", "128Gi"
NODE_MILLICPU = 32_000
QUEUE, HIGH_QUEUE = "root.bench", "root.bench-high"
#: The gangs workload: jobs and pods a job, full size and --quick.
GANG_JOBS, GANG_MEMBERS, QUICK_GANG_JOBS, QUICK_GANG_MEMBERS = 10, 100, 5, 20
GANG_TIMEOUT_S = 300


@dataclass(frozen=True)
class Workload:
    """The pods of one workload (module doc): how many, and each one's labels and constraints."""

    name: str
    pods: int
    """The measured pods (preemption: the high-priority wave)."""
    #: anti-affinity: pods per group (a pod repels its own group only); gangs: pods per job.
    group: int = 0
    #: preemption: the low-priority pods filling the cluster first (not measured).
    fill: int = 0

    @property
    def tag(self) -> str:
        """In the pods' names: ``plai``, ``anti``, ``spre``, ``pree``, ``gang``."""
        return self.name[:4]

    @property
    def app_size(self) -> int:
        """Pods per application (``applicationId``): a gang's job is one application."""
        return self.group if self.name == "gangs" else PODS_PER_APP

    @property
    def least_preemptions(self) -> int:
        """preemption: the low pods that must go for the wave to fit (3 a high pod on these nodes)."""
        if not self.fill:
            return 0
        free = NODE_MILLICPU - LOW_PER_NODE * _millicpu(LOW_CPU)
        low = _millicpu(LOW_CPU)
        return self.pods * -(-(_millicpu(HIGH_CPU) - free) // low)

    @property
    def title(self) -> str:
        return {"plain": "no constraints (scheduler_perf SchedulingBasic)",
                "anti-affinity": f"required anti-affinity by hostname, groups of {self.group:,} (scheduler_perf "
                                 "SchedulingPodAntiAffinity)",
                "spread": f"topology spread by zone over {len(ZONES)} zones, maxSkew {SPREAD_MAX_SKEW} "
                          "(scheduler_perf TopologySpreading)",
                "preemption": f"a wave of high-priority pods ({HIGH_CPU} cpu) on a cluster full of {self.fill:,} "
                              f"low-priority ones ({LOW_CPU} cpu, {LOW_PER_NODE} a node) (scheduler_perf "
                              f"PreemptionBasic; at least {self.least_preemptions:,} must be preempted)",
                "gangs": f"{self.pods // max(1, self.group):,} jobs of {self.group:,} pods as YuniKorn task groups, "
                         "gangSchedulingStyle=Hard (kube-scheduler has no gangs: plain pods to it)",
                }[self.name]

    def pod(self, name: str, index: int, app: str, scheduler: str) -> dict[str, Any]:
        """The ``index``-th measured pod."""
        if self.name == "plain":
            return plain_pod(name, app, scheduler)
        if self.name == "preemption":
            return plain_pod(name, app, scheduler, cpu=HIGH_CPU, memory="500Mi", queue=HIGH_QUEUE,
                             priority_class=HIGH_CLASS[0])
        if self.name == "gangs":
            return gang_pod(name, app, scheduler, self.group)
        pod = plain_pod(name, app, scheduler, memory="500Mi")
        spec, labels = pod["spec"], pod["metadata"]["labels"]
        if self.name == "anti-affinity":
            color = labels["color"] = f"green-{index // self.group}"
            spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"color": color}}, "topologyKey": HOSTNAME_LABEL}]}}
        else:
            labels["color"] = "blue"
            spec["topologySpreadConstraints"] = [
                {"maxSkew": SPREAD_MAX_SKEW, "topologyKey": ZONE_LABEL, "whenUnsatisfiable": "DoNotSchedule",
                 "labelSelector": {"matchLabels": {"color": "blue"}}}]
        return pod

    def fill_pod(self, name: str, app: str, scheduler: str) -> dict[str, Any]:
        """A low-priority pod of the preemption workload's fill."""
        return plain_pod(name, app, scheduler, cpu=LOW_CPU, memory="500Mi", priority_class=LOW_CLASS[0])


def _millicpu(quantity: str) -> int:
    return int(quantity[:-1]) if quantity.endswith("m") else int(quantity) * 1000


def plain_pod(name: str, app: str, scheduler: str, *, cpu: str = "100m", memory: str = "128Mi", queue: str = QUEUE,
              priority_class: str = "") -> dict[str, Any]:
    pod: dict[str, Any] = {
        "metadata": {"name": name, "labels": {"applicationId": app, "queue": queue}},
        "spec": {"schedulerName": scheduler, "terminationGracePeriodSeconds": 0, "containers": [
            {"name": "c", "image": "registry.k8s.io/pause:3.7",
             "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}}
    if priority_class:
        pod["spec"]["priorityClassName"] = priority_class
    return pod


def gang_pod(name: str, app: str, scheduler: str, members: int) -> dict[str, Any]:
    """A member of a job written for YuniKorn's gang scheduling (one task group of ``members``)."""
    pod = plain_pod(name, app, scheduler)
    groups = [{"name": "worker", "minMember": members, "minResource": {"cpu": "100m", "memory": "128Mi"}}]
    pod["metadata"]["annotations"] = {
        "yunikorn.apache.org/task-groups": json.dumps(groups), "yunikorn.apache.org/task-group-name": "worker",
        "yunikorn.apache.org/schedulingPolicyParameters":
            f"placeholderTimeoutInSeconds={GANG_TIMEOUT_S} gangSchedulingStyle=Hard"}
    return pod


def priority_classes() -> list[dict[str, Any]]:
    """The preemption workload's PriorityClasses (a pod may not set ``spec.priority`` itself)."""
    return [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
             "value": value, "preemptionPolicy": "PreemptLowerPriority"} for name, value in (LOW_CLASS, HIGH_CLASS)]


def violations(workload: Workload, pods: list[dict[str, Any]], zones: Mapping[str, str]) -> tuple[int, str]:
    """The pods placed against the workload's constraint, counted from the bound pods apart from
    the schedulers' own filter code, and a short account. anti-affinity: the pods beyond the
    first of their group on a node. spread: how far the zones' counts (``zones``: node ->
    zone) end apart beyond maxSkew (every placement keeps max - min within it, so the end does)."""
    placed = [(str(p["spec"]["nodeName"]), (p["metadata"].get("labels") or {}).get("color", ""))
              for p in pods if (p.get("spec") or {}).get("nodeName")]
    if workload.name == "anti-affinity":
        per_node = Counter(placed)
        most = max(per_node.values(), default=0)
        return sum(count - 1 for count in per_node.values()), f"at most {most} of a group on a node"
    if workload.name == "spread":
        per_zone = Counter(zones.get(node, "") for node, _ in placed)
        counts = [per_zone.get(zone, 0) for zone in ZONES]
        skew = max(counts) - min(counts)
        return max(0, skew - SPREAD_MAX_SKEW), "zones " + " / ".join(f"{count:,}" for count in counts)
    return 0, ""


def workloads_for(nodes: int, pods: int, names: list[str] | None = None, *, quick: bool = False) -> list[Workload]:
    """The workloads to run: the plain one with ``pods`` pods, anti-affinity and spread with half
    as many (the anti-affinity groups half the nodes each, so every group fits, with room to
    choose), preemption with a node's worth of high-priority pods (at most half of ``pods``) on
    :data:`LOW_PER_NODE` low ones a node, gangs of :data:`GANG_JOBS` jobs (``quick``: fewer)."""
    constrained = max(1, pods // CONSTRAINED_SHARE)
    jobs, members = (QUICK_GANG_JOBS, QUICK_GANG_MEMBERS) if quick else (GANG_JOBS, GANG_MEMBERS)
    made = {"plain": Workload("plain", pods),
            "anti-affinity": Workload("anti-affinity", constrained, group=max(1, nodes // 2)),
            "spread": Workload("spread", constrained),
            "preemption": Workload("preemption", min(nodes, constrained), fill=LOW_PER_NODE * nodes),
            "gangs": Workload("gangs", jobs * members, group=members)}
    return [made[name] for name in (names or WORKLOADS)]


def node_names(nodes: int) -> list[str]:
    return [f"node-{n:04d}" for n in range(nodes)]


def zone_labels(names: list[str]) -> dict[str, dict[str, str]]:
    """scheduler_perf's zone labels, round robin over the nodes."""
    return {name: {ZONE_LABEL: ZONES[n % len(ZONES)]} for n, name in enumerate(names)}
