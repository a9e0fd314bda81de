"""Pods bound per second on a real API server: pyscheduler's Kubernetes shim against
kube-scheduler built from the same Kubernetes version (issue 15), same cluster, same run.

The cluster is the Kubernetes tests' control plane (``tests/kube_cluster.py``: etcd,
kube-apiserver, kwok on loopback) with 1,000 kwok nodes (32 cpus, 128 GiB, 110 pods each).
Each contender, alone on the cluster, gets 10,000 pods (100 applications of 100 pods, 100m cpu
and 128 MiB each) in two phases:

- **stream**: the scheduler runs while the benchmark creates the pods (8 client threads, as
  fast as the API server takes them). Bound/s is the pods over the time from the first pod
  created to the last one bound; this includes the creation, so it cannot exceed the
  creation rate (reported beside it).
- **backlog**: the pods are created while the scheduler is stopped, then it starts: bound/s
  over the time from its first binding to its last, the scheduler's own rate.

All times are the benchmark's observations of one pod watch (``ADDED``, then ``spec.nodeName``
set, then ``status.phase`` Running), so the watch's delays are the same for both contenders.
Latencies are per pod: creation to Binding and creation to Running, 50th and 99th percentile
(stream phase; in the backlog phase they measure mostly the wait for the start). CPU seconds
of the contender (from its start, its whole process group) and of kube-apiserver (during the
phase) are reported too: on 2 shared cores a scheduler's CPU is taken from the API server.

Client limits, reported with the figures: kube-scheduler's client QPS and burst (its default is
50/100, which would cap it at 50 bindings/s; scheduler_perf, Kubernetes' own benchmark, sets
5,000/5,000, and so does this one); pyscheduler's shim has no client rate limiter, its binder
pool has 16 threads. Between contenders the pods are deleted (grace period 0) and the namespace
is left empty, so both see the same cluster.

**Workloads** (issue 30 added the last two, from kube-scheduler's own benchmark, scheduler_perf:
``test/integration/scheduler_perf`` in Kubernetes, its ``performance-config.yaml`` files and pod
templates). Every workload runs both phases for each contender, on the same cluster:

- ``plain``: the pods above, no constraints (10,000 pods).
- ``anti-affinity`` (scheduler_perf's ``SchedulingPodAntiAffinity``): 5,000 pods of 100m cpu
  and 500 MiB, each with required pod anti-affinity by ``kubernetes.io/hostname`` against its own
  label (scheduler_perf's pod: ``color: green``, the term selecting ``color: green``). A node
  holds at most one pod of a group, so scheduler_perf keeps its pods fewer than its nodes (one
  group; 1,000 + 2,000 pods on 5,000 nodes). 5,000 pods on 1,000 nodes need groups: 10 groups
  of 500 (``color: green-0`` .. ``green-9``, each term selecting its own group), so each group
  fills half the nodes, about scheduler_perf's density (3,000 of 5,000), and a pod repels only
  its own group.
- ``spread`` (scheduler_perf's ``TopologySpreading``): 5,000 pods of 100m cpu and 500 MiB,
  ``color: blue``, each with a ``DoNotSchedule`` constraint by ``topology.kubernetes.io/zone``,
  maxSkew 5, selecting ``color: blue`` (scheduler_perf's pod). The nodes carry the zone label as
  scheduler_perf labels them: 3 zones, ``moon-1`` .. ``moon-3``, round robin (every workload
  runs on these same nodes).

scheduler_perf first creates pods it does not measure (1,000 anti-affinity pods; 5,000 plain
pods before the spread ones); here each phase starts on an empty cluster.

**Contenders**, in this order in every phase (``contenders`` of :func:`run`, default all
available): ``pyscheduler`` (this checkout), ``pyscheduler (baseline)`` (with ``--baseline DIR``:
the same ``pyscheduler serve --rm pyscheduler_k8s:attach`` command importing DIR's core, REST
layer and shim, :func:`benchmarks.baseline.served_baseline_environment`) and ``kube-scheduler``.
The report gives, per workload and phase, pyscheduler's bound/s over each other contender's.

The binaries come from ``tools/k8s/build.sh`` with ``WITH_KUBE_SCHEDULER=1`` (kube-scheduler
takes about 6 minutes to build, once per machine). ``--quick``: 50 nodes, 500 pods (250 for the
anti-affinity and spread workloads, in groups of 25 there).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import requests

from benchmarks.baseline import served_baseline_environment
from benchmarks.kube_contenders import (
    BASELINE,
    CONTENDERS,
    KUBE_SCHEDULER,
    PYSCHEDULER,
    BaselineContender,
    Contender,
    KubeSchedulerContender,
    PyschedulerContender,
    contenders_to_run,
    cpu_seconds,
)
from benchmarks.machine import format_table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from kube_cluster import KubeCluster, start_cluster  # noqa: E402

from pyscheduler_k8s.kubeapi import ClusterAccess, KubeApi  # noqa: E402

NODES, QUICK_NODES = 1_000, 50
PODS, QUICK_PODS = 10_000, 500
PODS_PER_APP = 100
WORKLOADS = ("plain", "anti-affinity", "spread")
PHASES = ("stream", "backlog")
#: The anti-affinity and spread workloads: half the plain workload's pods (5,000 at 1,000 nodes).
CONSTRAINED_SHARE = 2
#: scheduler_perf's zones (``labelNodePrepareStrategy`` of TopologySpreading) and spread pod.
ZONE_LABEL, ZONES = "topology.kubernetes.io/zone", ("moon-1", "moon-2", "moon-3")
HOSTNAME_LABEL = "kubernetes.io/hostname"
SPREAD_MAX_SKEW = 5
CLIENT_THREADS = 8
PHASE_TIMEOUT = 900.0
RUNNING_TIMEOUT = 600.0

@dataclass
class PhaseResult:
    """One contender, one phase of one workload."""

    scheduler: str
    phase: str
    pods: int
    bound: int
    running: int
    seconds: float
    """The phase's span: first creation (stream) or first binding (backlog) to the last binding."""
    bound_per_second: float
    created_per_second: float
    bind_p50_ms: float | None
    bind_p99_ms: float | None
    running_p50_ms: float | None
    running_p99_ms: float | None
    client_limits: str
    scheduler_cpu_s: float
    """CPU time of the contender, from its start to the end of the phase."""
    apiserver_cpu_s: float
    """CPU time of kube-apiserver during the phase."""
    workload: str = "plain"
    violations: int | None = None
    """Pods placed against their workload's constraint, found by :func:`violations` from the
    pods as listed at the end of the phase (None: not checked)."""
    check: str = ""
    """What :func:`violations` found (the anti-affinity groups' most pods on one node; the
    spread's zone counts)."""


@dataclass(frozen=True)
class Workload:
    """The pods of one workload (module doc): how many, and each one's labels and constraints."""

    name: str
    pods: int
    #: anti-affinity: pods per group (a pod repels its own group only).
    group: int = 0

    @property
    def tag(self) -> str:
        """In the pods' names: ``plai``, ``anti``, ``spre``."""
        return self.name[:4]

    @property
    def title(self) -> str:
        return {"plain": "no constraints",
                "anti-affinity": f"required anti-affinity by hostname, groups of {self.group:,} (scheduler_perf "
                                 "SchedulingPodAntiAffinity)",
                "spread": f"topology spread by zone over {len(ZONES)} zones, maxSkew {SPREAD_MAX_SKEW} "
                          "(scheduler_perf TopologySpreading)"}[self.name]

    def pod(self, name: str, index: int, app: str, scheduler: str) -> dict[str, Any]:
        if self.name == "plain":
            return _pod(name, app, scheduler)
        pod = _pod(name, app, scheduler, memory="500Mi")
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


def workloads_for(nodes: int, pods: int, names: list[str] | None = None) -> list[Workload]:
    """The workloads to run: the plain one with ``pods`` pods, the others with half as many, the
    anti-affinity groups half the nodes each (so every group fits, with room to choose)."""
    constrained = max(1, pods // CONSTRAINED_SHARE)
    made = {"plain": Workload("plain", pods),
            "anti-affinity": Workload("anti-affinity", constrained, group=max(1, nodes // 2)),
            "spread": Workload("spread", constrained)}
    return [made[name] for name in (names or WORKLOADS)]


@dataclass
class KubernetesReport:
    nodes: int
    pods: int
    """The plain workload's pods per contender and phase."""
    workloads: list[Workload] = field(default_factory=list)
    results: list[PhaseResult] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    contenders: list[str] = field(default_factory=lambda: [PYSCHEDULER, KUBE_SCHEDULER])
    """The contenders run (names as in the results), in their order."""

    def rate(self, scheduler: str, phase: str, workload: str = "plain") -> float | None:
        for result in self.results:
            if result.scheduler == scheduler and result.phase == phase and result.workload == workload \
                    and result.bound == result.pods:
                return result.bound_per_second
        return None

    def ratio(self, phase: str, workload: str = "plain", against: str = KUBE_SCHEDULER) -> float | None:
        """pyscheduler's bound/s over ``against``'s (None unless both bound all their pods)."""
        ours, theirs = self.rate(PYSCHEDULER, phase, workload), self.rate(against, phase, workload)
        return ours / theirs if ours and theirs else None

    def _ratios(self, against: str) -> dict[str, dict[str, float | None]]:
        return {w.name: {phase: self.ratio(phase, w.name, against) for phase in PHASES} for w in self.workloads}

    def to_dict(self) -> dict[str, Any]:
        """``ratios``: pyscheduler / kube-scheduler, ``baseline_ratios``: pyscheduler / its
        baseline, each per workload and phase (None: not measured)."""
        return {"nodes": self.nodes, "pods": self.pods, "workloads": [asdict(w) for w in self.workloads],
                "contenders": self.contenders, "results": [asdict(r) for r in self.results],
                "ratios": self._ratios(KUBE_SCHEDULER), "baseline_ratios": self._ratios(BASELINE),
                "failures": self.failures}

    def ratio_line(self, phase: str, workload: str) -> str:
        """pyscheduler's bound/s over each other contender's run, e.g. ``- stream: pyscheduler /
        baseline bound/s = 1.05x; pyscheduler / kube-scheduler bound/s = 0.80x``."""
        parts = []
        for against, label in ((BASELINE, "baseline"), (KUBE_SCHEDULER, KUBE_SCHEDULER)):
            if against in self.contenders:
                ratio = self.ratio(phase, workload, against)
                parts.append(f"pyscheduler / {label} bound/s = " + ("-" if ratio is None else f"{ratio:.2f}x"))
        return f"- {phase}: " + ("; ".join(parts) or "no other contender")

    def format(self) -> str:
        def ms(value: float | None) -> str:
            return "-" if value is None else f"{value:,.0f}"

        lines: list[str] = []
        for workload in self.workloads:
            constrained = workload.name != "plain"
            rows = [[r.scheduler, r.phase, f"{r.bound:,}/{r.pods:,}", f"{r.seconds:.1f}", f"{r.bound_per_second:,.0f}",
                     f"{r.created_per_second:,.0f}", ms(r.bind_p50_ms), ms(r.bind_p99_ms), ms(r.running_p50_ms),
                     ms(r.running_p99_ms), f"{r.scheduler_cpu_s:.1f}", f"{r.apiserver_cpu_s:.1f}", r.client_limits]
                    + ([("-" if r.violations is None else f"{r.violations:,}") + (f" ({r.check})" if r.check else "")]
                       if constrained else [])
                    for r in self.results if r.workload == workload.name]
            if workload.name == "plain":
                lines.append(f"## kubernetes: pods bound per second, {workload.pods:,} pods on {self.nodes:,} "
                             "kwok nodes")
            else:
                lines.append(f"## kubernetes, {workload.name}: pods bound per second, {workload.pods:,} pods on "
                             f"{self.nodes:,} kwok nodes, {workload.title}")
            lines += ["", format_table(["scheduler", "phase", "bound", "s", "bound/s", "created/s", "bind p50 ms",
                                        "bind p99 ms", "running p50 ms", "running p99 ms", "scheduler cpu s",
                                        "apiserver cpu s", "client limits"]
                                       + (["violations"] if constrained else []), rows), ""]
            lines += [self.ratio_line(phase, workload.name) for phase in PHASES]
            lines.append("")
        lines += [f"- FAILED: {failure}" for failure in self.failures]
        return "\n".join(lines).rstrip()


class PodTimes:
    """Watches a namespace's pods and records, per pod whose name starts with ``prefix``, when it
    was first seen, first seen bound and first seen Running (``time.monotonic``). ``path``: pods
    of another collection (e.g. ``/api/v1/pods``, every namespace); a subclass records more by
    overriding :meth:`record` (the multicluster family's hub and member pods)."""

    def __init__(self, api: KubeApi, namespace: str, prefix: str, *, path: str | None = None) -> None:
        self.api = api
        self.prefix = prefix
        self.path = path or f"/api/v1/namespaces/{namespace}/pods"
        self.added: dict[str, float] = {}
        self.bound: dict[str, float] = {}
        self.running: dict[str, float] = {}
        self._stop = threading.Event()
        _, self._version = api.list(self.path)
        self._thread = threading.Thread(target=self._follow, name="bench-pod-watch", daemon=True)
        self._thread.start()

    def _follow(self) -> None:
        version = self._version
        while not self._stop.is_set():
            try:
                for kind, pod in self.api.watch(self.path, version, timeout_seconds=3600, stop=self._stop):
                    now = time.monotonic()
                    version = str((pod.get("metadata") or {}).get("resourceVersion", version))
                    if kind in ("ADDED", "MODIFIED"):
                        self.record(pod, now)
            except Exception:  # noqa: BLE001 - a broken stream: watch again from the last version
                if not self._stop.is_set():
                    time.sleep(0.2)

    def record(self, pod: dict[str, Any], now: float) -> None:
        """A pod added or changed, seen at ``now``."""
        name = str((pod.get("metadata") or {}).get("name") or "")
        if not name.startswith(self.prefix):
            return
        self.added.setdefault(name, now)
        if (pod.get("spec") or {}).get("nodeName"):
            self.bound.setdefault(name, now)
        if (pod.get("status") or {}).get("phase") == "Running":
            self.running.setdefault(name, now)

    def stop(self) -> None:
        self._stop.set()
        self.api.close_watches()
        self._thread.join(5)


def _percentile(values: list[float], fraction: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def _pod(name: str, app: str, scheduler: str, memory: str = "128Mi") -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"applicationId": app, "queue": "root.bench"}},
            "spec": {"schedulerName": scheduler, "terminationGracePeriodSeconds": 0, "containers": [
                {"name": "c", "image": "registry.k8s.io/pause:3.7",
                 "resources": {"requests": {"cpu": "100m", "memory": memory}}}]}}



class Bench:
    """The cluster, its namespace, and the phases run on it."""

    def __init__(self, cluster: KubeCluster, progress: Callable[[str], None],
                 zones: Mapping[str, str] | None = None) -> None:
        """``zones``: node name -> its zone (for the spread workload's check)."""
        self.cluster = cluster
        self.progress = progress
        self.zones = dict(zones or {})
        self.api = KubeApi(ClusterAccess.discover(str(cluster.kubeconfig)))
        self.namespace = "bench"
        cluster.ensure_namespace(self.namespace)

    @property
    def _pods_path(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/pods"

    def _create(self, workload: Workload, scheduler_name: str, prefix: str) -> None:
        names = [f"{prefix}-{n:05d}" for n in range(workload.pods)]

        def post(index: int) -> None:
            name = names[index]
            app = f"{prefix}-app-{index // PODS_PER_APP:03d}"
            self.api.request("POST", self._pods_path, workload.pod(name, index, app, scheduler_name), timeout=60)

        with ThreadPoolExecutor(CLIENT_THREADS) as pool:
            list(pool.map(post, range(workload.pods)))

    def _wait(self, what: str, done: Callable[[], int], target: int, process: subprocess.Popen[bytes] | None,
              timeout: float = PHASE_TIMEOUT) -> bool:
        deadline = time.monotonic() + timeout
        last_report = 0.0
        while True:
            count = done()
            if count >= target:
                return True
            if process is not None and process.poll() is not None:
                raise RuntimeError(f"{what}: the scheduler exited with {process.returncode}")
            now = time.monotonic()
            if now > deadline:
                return False
            if now - last_report > 10:
                self.progress(f"  {what}: {count:,}/{target:,}")
                last_report = now
            time.sleep(0.1)

    def warm_up(self, contender: Contender) -> None:
        """One pod bound: the contender has synced its caches and schedules."""
        name = f"warmup-{contender.tag}"
        self.api.request("POST", self._pods_path, _pod(name, "warmup", contender.scheduler_name))
        deadline = time.monotonic() + 180
        while not (self.api.request("GET", f"{self._pods_path}/{name}").get("spec") or {}).get("nodeName"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{contender.name} bound no pod within 180 s")
            time.sleep(0.1)
        self.api.request("DELETE", f"{self._pods_path}/{name}", {"gracePeriodSeconds": 0})

    @staticmethod
    def prefix(contender: Contender, workload: Workload, phase: str) -> str:
        return f"{contender.tag}-{workload.tag}-{phase[:4]}"

    def run_phase(self, contender: Contender, phase: str, workload: Workload) -> PhaseResult:
        pods = workload.pods
        self.progress(f"kubernetes: {workload.name}, {contender.name}, {phase} phase: {pods:,} pods")
        prefix = self.prefix(contender, workload, phase)
        times = PodTimes(self.api, self.namespace, prefix)
        apiserver = self.cluster.processes["kube-apiserver"]
        apiserver_before = cpu_seconds(apiserver)
        cpu = 0.0
        try:
            if phase == "stream":
                contender.start()
                self.warm_up(contender)
                self._create(workload, contender.scheduler_name, prefix)
            else:
                self._create(workload, contender.scheduler_name, prefix)
                self._wait("created pods seen", lambda: len(times.added), pods, None)
                contender.start()
            process = contender.process
            all_bound = self._wait("bound", lambda: len(times.bound), pods, process)
            # kwok makes the pods Running at its own pace (~100/s here); the next contender starts
            # once it is done, so that it does not pay for this one's pods.
            self._wait("running", lambda: len(times.running), pods, process, timeout=RUNNING_TIMEOUT)
            cpu = cpu_seconds(process)
        finally:
            contender.stop()
            times.stop()
        result = self._result(contender, phase, workload, times, cpu, cpu_seconds(apiserver) - apiserver_before)
        if workload.name != "plain":
            listed = [p for p in self.api.list(self._pods_path)[0]
                      if str((p.get("metadata") or {}).get("name", "")).startswith(prefix)]
            result.violations, result.check = violations(workload, listed, self.zones)
        if not all_bound:
            raise RuntimeError(f"{contender.name} {phase}: {len(times.bound):,} of {pods:,} pods bound "
                               f"within {PHASE_TIMEOUT:g} s")
        self.clean(prefix, pods)
        return result

    def _result(self, contender: Contender, phase: str, workload: Workload, times: PodTimes, cpu: float,
                apiserver_cpu: float) -> PhaseResult:
        added = list(times.added.values())
        bound = list(times.bound.values())
        start = min(added) if phase == "stream" else min(bound)
        end = max(bound)
        binds = [times.bound[n] - times.added[n] for n in times.bound if n in times.added]
        runs = [times.running[n] - times.added[n] for n in times.running if n in times.added]
        seconds = max(end - start, 1e-9)

        def ms(value: float | None) -> float | None:
            return None if value is None else value * 1000

        return PhaseResult(
            scheduler=contender.name, phase=phase, workload=workload.name, pods=workload.pods, bound=len(bound),
            running=len(times.running),
            seconds=seconds, bound_per_second=len(bound) / seconds,
            created_per_second=len(added) / max(max(added) - min(added), 1e-9),
            bind_p50_ms=ms(_percentile(binds, 0.50)), bind_p99_ms=ms(_percentile(binds, 0.99)),
            running_p50_ms=ms(_percentile(runs, 0.50)), running_p99_ms=ms(_percentile(runs, 0.99)),
            client_limits=contender.client_limits, scheduler_cpu_s=cpu, apiserver_cpu_s=apiserver_cpu)

    def clean(self, prefix: str, pods: int) -> None:
        """The phase's pods deleted (grace period 0), one application at a time (a delete of the
        whole collection outlasts the API server's one-minute request timeout), and gone."""
        apps = sorted({f"{prefix}-app-{index // PODS_PER_APP:03d}" for index in range(pods)})

        def delete(app: str) -> None:
            self.api.request("DELETE", self._pods_path, {"gracePeriodSeconds": 0},
                             params={"labelSelector": f"applicationId={app}"}, timeout=120)

        with ThreadPoolExecutor(CLIENT_THREADS) as pool:
            list(pool.map(delete, apps))
        deadline = time.monotonic() + 300
        while self.api.list(self._pods_path)[0]:
            if time.monotonic() > deadline:
                raise RuntimeError("the benchmark's pods were not deleted within 300 s")
            time.sleep(0.5)


def node_names(nodes: int) -> list[str]:
    return [f"node-{n:04d}" for n in range(nodes)]


def zone_labels(names: list[str]) -> dict[str, dict[str, str]]:
    """scheduler_perf's zone labels, round robin over the nodes."""
    return {name: {ZONE_LABEL: ZONES[n % len(ZONES)]} for n, name in enumerate(names)}


@contextmanager
def _cluster(workdir: Path, tools: Path, nodes: int, progress: Callable[[str], None]) -> Iterator[KubeCluster]:
    progress(f"kubernetes: starting etcd, kube-apiserver and kwok; {nodes:,} nodes")
    # The default in-flight limits (400 reads, 200 writes) are kube-apiserver's; left as they are.
    cluster = start_cluster(workdir, tools)
    try:
        names = node_names(nodes)
        cluster.add_nodes(names, timeout=600, labels=zone_labels(names), cpu="32", memory="128Gi")
        yield cluster
    finally:
        cluster.stop()


def built_tools(with_kube_scheduler: bool = True) -> Path:
    """``tools/k8s/build.sh``'s directory of binaries (kube-scheduler among them on request)."""
    done = subprocess.run([str(ROOT / "tools" / "k8s" / "build.sh")], stdout=subprocess.PIPE, text=True, check=True,
                          env={**os.environ, "WITH_KUBE_SCHEDULER": "1" if with_kube_scheduler else "0"})
    return Path(done.stdout.strip().splitlines()[-1])



def run(*, quick: bool = False, progress: Callable[[str], None] | None = None, nodes: int | None = None,
        pods: int | None = None, workloads: list[str] | None = None, baseline: str | Path | None = None,
        contenders: list[str] | None = None) -> KubernetesReport:
    """Every workload (default all, in :data:`WORKLOADS` order), each phase, each contender
    (:func:`contenders_to_run`: pyscheduler, its baseline from the ``baseline`` directory,
    kube-scheduler), on one cluster. A failed phase ends its workload (its pods are deleted) and
    the next workload runs. A baseline that cannot be served raises BaselineError before any
    cluster starts."""
    say = progress or (lambda _: None)
    nodes = nodes or (QUICK_NODES if quick else NODES)
    pods = pods or (QUICK_PODS if quick else PODS)
    keys = contenders_to_run(contenders, baseline)
    baseline_env = served_baseline_environment(baseline) if baseline and "baseline" in keys else None
    report = KubernetesReport(nodes=nodes, pods=pods, workloads=workloads_for(nodes, pods, workloads),
                              contenders=[CONTENDERS[key] for key in keys])
    tools = built_tools(with_kube_scheduler="kube-scheduler" in keys)
    with tempfile.TemporaryDirectory(prefix="bench-k8s-") as tmp, _cluster(Path(tmp) / "cluster", tools, nodes,
                                                                          say) as cluster:
        zones = {name: labels[ZONE_LABEL] for name, labels in zone_labels(node_names(nodes)).items()}
        bench = Bench(cluster, say, zones)
        made: dict[str, Callable[[], Contender]] = {
            "pyscheduler": lambda: PyschedulerContender(cluster, Path(tmp)),
            "baseline": lambda: BaselineContender(cluster, Path(tmp), baseline_env or {}),
            "kube-scheduler": lambda: KubeSchedulerContender(cluster, Path(tmp), tools / "bin" / "kube-scheduler"),
        }
        runners = [made[key]() for key in keys]
        for workload in report.workloads:
            if not _run_workload(bench, runners, workload, report, say):
                break
    return report


def _run_workload(bench: Bench, contenders: list[Contender], workload: Workload, report: KubernetesReport,
                  say: Callable[[str], None]) -> bool:
    """The workload's phases; False when the cluster could not be emptied after a failure."""
    for phase in PHASES:
        for contender in contenders:
            try:
                result = bench.run_phase(contender, phase, workload)
                report.results.append(result)
                if result.violations:
                    report.failures.append(f"{workload.name}: {contender.name} {phase}: {result.violations:,} pods "
                                           f"placed against their constraint ({result.check})")
            except (RuntimeError, requests.RequestException, OSError) as exc:
                report.failures.append(f"{workload.name}: {contender.name} {phase}: {exc}")
                say(f"kubernetes: {workload.name}: {contender.name} {phase} failed: {exc}")
                try:
                    bench.clean(bench.prefix(contender, workload, phase), workload.pods)
                except (RuntimeError, requests.RequestException, OSError) as clean_exc:
                    report.failures.append(f"{workload.name}: its pods not deleted: {clean_exc}")
                    return False
                return True
    return True
