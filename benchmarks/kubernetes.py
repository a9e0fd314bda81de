"""Pods bound per second on a real API server: pyscheduler's Kubernetes shim against
kube-scheduler built from the same Kubernetes version (issue 15) and against the limit, the API
server's own rate of bindings (issue 37), same cluster, same run.

The cluster is the Kubernetes tests' control plane (``tests/kube_cluster.py``: etcd,
kube-apiserver, kwok on loopback) with 5,000 kwok nodes (32 cpu, 128 GiB, 110 pods each), the
size scheduler_perf (Kubernetes' own benchmark) judges schedulers at. Each contender, alone on
the cluster, gets every workload (:mod:`benchmarks.kube_workloads`: ``plain`` 10,000 pods,
``anti-affinity``, ``spread``, ``preemption``, ``gangs``; ``--kube-pods 50000`` for
scheduler_perf's larger SchedulingBasic, in ``make bench`` only) in two phases:

- **stream**: the scheduler runs while the benchmark creates the pods (8 client threads, as
  fast as the API server takes them). Bound/s is the pods over the time from the first pod
  created to the last one bound; this includes the creation, so it cannot exceed the
  creation rate (reported beside it).
- **backlog**: the pods are created while the scheduler is stopped, then it starts: bound/s
  over the time from its first binding to its last, the scheduler's own rate.

The preemption workload first fills the cluster with its low-priority pods through the running
contender (not measured; its CPU is left out of the phase's); in the backlog phase the contender
is then stopped, the wave created, and the contender started again.

All times are the benchmark's observations of one pod watch (``ADDED``, then ``spec.nodeName``
set, then ``status.phase`` Running), so the watch's delays are the same for every contender.
Latencies are per pod: creation to Binding and creation to Running, 50th and 99th percentile
(stream phase; in the backlog phase they measure mostly the wait for the start). Per contender
and phase: its CPU seconds (from its start, its whole process group) and peak memory (the
process group's summed VmHWM, sampled from /proc while it runs: :mod:`benchmarks.kube_memory`),
and kube-apiserver's CPU seconds during the phase: on 2 shared cores a scheduler's CPU is taken
from the API server.

Client limits, reported with the figures: kube-scheduler's client QPS and burst (its default is
50/100, which would cap it at 50 bindings/s; scheduler_perf sets 5,000/5,000, and so does this
one); pyscheduler's shim has no client rate limiter, its binder pool has 16 threads. Between
contenders the pods are deleted (grace period 0) and the namespace is left empty, so all see
the same cluster. scheduler_perf first creates pods it does not measure (1,000 anti-affinity
pods; 5,000 plain pods before the spread ones); here each phase starts on an empty cluster
(but for the preemption workload's fill).

**Contenders**, in this order in every phase (``contenders`` of :func:`run`, default all
available; :mod:`benchmarks.kube_contenders`): ``limit`` (:mod:`benchmarks.kube_limit`: binds
pod i to node i mod N, no decisions), ``pyscheduler`` (this checkout), ``pyscheduler
(baseline)`` (with ``--baseline DIR``: the same command importing DIR's core, REST layer and
shim, :func:`benchmarks.baseline.served_baseline_environment`) and ``kube-scheduler``. The
report (:mod:`benchmarks.kube_report`) gives, per workload and phase, every contender's bound/s
over the limit's and pyscheduler's over each other contender's.

The binaries come from ``tools/k8s/build.sh`` with ``WITH_KUBE_SCHEDULER=1`` (kube-scheduler
takes about 6 minutes to build, once per machine). ``--quick``: 50 nodes, 500 pods (250 for the
anti-affinity and spread workloads, in groups of 25 there; a wave of 50 on 200 low pods; 5 gangs
of 20).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import requests

from benchmarks.baseline import served_baseline_environment
from benchmarks.kube_contenders import (
    CONTENDERS,
    BaselineContender,
    Contender,
    KubeSchedulerContender,
    PyschedulerContender,
    contenders_to_run,
    cpu_seconds,
)
from benchmarks.kube_limit import BINDERS as LIMIT_BINDERS
from benchmarks.kube_limit import LIMIT, LimitContender
from benchmarks.kube_memory import PeakMemory
from benchmarks.kube_report import NOT_DECIDING, PHASES, KubernetesReport, PhaseResult
from benchmarks.kube_workloads import (
    HOSTNAME_LABEL,
    NODE_CPU,
    NODE_MEMORY,
    WORKLOADS,
    ZONE_LABEL,
    ZONES,
    Workload,
    node_names,
    plain_pod,
    priority_classes,
    violations,
    workloads_for,
    zone_labels,
)
from benchmarks.kube_yunikorn import YunikornContender, required_binary

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from kube_cluster import KubeCluster, start_cluster  # noqa: E402

from pyscheduler_k8s.kubeapi import ClusterAccess, KubeApi  # noqa: E402

NODES, QUICK_NODES = 5_000, 50
PODS, QUICK_PODS = 10_000, 500
CLIENT_THREADS = 8
PHASE_TIMEOUT = 900.0
RUNNING_TIMEOUT = 600.0
#: What the multicluster family and the tests import from here (moved to their own modules).
_pod = plain_pod
__all__ = ["HOSTNAME_LABEL", "WORKLOADS", "ZONE_LABEL", "ZONES", "Bench", "KubernetesReport", "PhaseResult",
           "PodTimes", "node_names", "run", "violations", "workloads_for", "zone_labels"]

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

    def ensure_priority_classes(self) -> None:
        """The preemption workload's PriorityClasses (created once; there already is fine)."""
        for body in priority_classes():
            answer = self.cluster.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", body)
            if answer.status_code not in (201, 409):
                raise RuntimeError(f"PriorityClass {body['metadata']['name']}: {answer.status_code} {answer.text}")

    def _create(self, workload: Workload, scheduler_name: str, prefix: str, *, fill: bool = False) -> None:
        """The workload's measured pods (``fill``: the preemption workload's low-priority ones)."""
        count = workload.fill if fill else workload.pods
        names = [f"{prefix}-{n:05d}" for n in range(count)]

        def post(index: int) -> None:
            name = names[index]
            app = app_name(prefix, index, workload)
            body = workload.fill_pod(name, app, scheduler_name) if fill else workload.pod(name, index, app,
                                                                                          scheduler_name)
            self.api.request("POST", self._pods_path, body, timeout=60)

        with ThreadPoolExecutor(CLIENT_THREADS) as pool:
            list(pool.map(post, range(count)))

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
        self.api.request("POST", self._pods_path, plain_pod(name, "warmup", contender.scheduler_name))
        deadline = time.monotonic() + 180
        while not (self.api.request("GET", f"{self._pods_path}/{name}").get("spec") or {}).get("nodeName"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{contender.name} bound no pod within 180 s")
            time.sleep(0.1)
        self.api.request("DELETE", f"{self._pods_path}/{name}", {"gracePeriodSeconds": 0})

    @staticmethod
    def prefix(contender: Contender, workload: Workload, phase: str) -> str:
        return f"{contender.tag}-{workload.tag}-{phase[:4]}"

    @staticmethod
    def fill_prefix(contender: Contender, phase: str) -> str:
        """The preemption workload's low-priority pods (apart from :meth:`prefix`: not measured)."""
        return f"{contender.tag}-fill-{phase[:4]}"

    def _fill(self, contender: Contender, workload: Workload, phase: str) -> None:
        """The preemption workload's low-priority pods, created and bound by the running contender."""
        prefix = self.fill_prefix(contender, phase)
        self.progress(f"kubernetes: {workload.name}, {contender.name}, {phase} phase: filling the cluster with "
                      f"{workload.fill:,} low-priority pods")
        filled = PodTimes(self.api, self.namespace, prefix)
        try:
            self._create(workload, contender.scheduler_name, prefix, fill=True)
            if not self._wait("low-priority pods bound", lambda: len(filled.bound), workload.fill, contender.process):
                raise RuntimeError(f"{contender.name} {phase}: {len(filled.bound):,} of {workload.fill:,} "
                                   f"low-priority pods bound within {PHASE_TIMEOUT:g} s")
        finally:
            filled.stop()

    def run_phase(self, contender: Contender, phase: str, workload: Workload) -> PhaseResult:
        pods = workload.pods
        self.progress(f"kubernetes: {workload.name}, {contender.name}, {phase} phase: {pods:,} pods")
        prefix = self.prefix(contender, workload, phase)
        times = PodTimes(self.api, self.namespace, prefix)
        apiserver = self.cluster.processes["kube-apiserver"]
        apiserver_before = cpu_seconds(apiserver)
        memory = PeakMemory()
        cpu = cpu_before = 0.0
        try:
            if phase == "stream" or workload.fill:
                contender.start()
                memory.follow(contender.process)
                self.warm_up(contender)
                if workload.fill:
                    self._fill(contender, workload, phase)
                    cpu_before = cpu_seconds(contender.process)  # the wave's CPU only
            if phase == "stream":
                self._create(workload, contender.scheduler_name, prefix)
            else:
                if workload.fill:  # backlog: the wave waits for a restarted contender, as the pods do
                    memory.stop()
                    contender.stop()
                    memory, cpu_before = PeakMemory(), 0.0
                self._create(workload, contender.scheduler_name, prefix)
                self._wait("created pods seen", lambda: len(times.added), pods, None)
                contender.start()
                memory.follow(contender.process)
            process = contender.process
            all_bound = self._wait("bound", lambda: len(times.bound), pods, process)
            # kwok makes the pods Running at its own pace (~100/s here); the next contender starts
            # once it is done, so that it does not pay for this one's pods.
            self._wait("running", lambda: len(times.running), pods, process, timeout=RUNNING_TIMEOUT)
            cpu = cpu_seconds(process) - cpu_before
        finally:
            memory.stop()
            contender.stop()
            times.stop()
        result = self._result(contender, phase, workload, times, cpu, cpu_seconds(apiserver) - apiserver_before)
        result.scheduler_peak_mib = memory.peak_mib
        result.note = NOT_DECIDING.get((workload.name, contender.name), "")
        if workload.name in ("anti-affinity", "spread"):
            listed = [p for p in self.api.list(self._pods_path)[0]
                      if str((p.get("metadata") or {}).get("name", "")).startswith(prefix)]
            result.violations, result.check = violations(workload, listed, self.zones)
        if workload.fill:
            result.preemptions = workload.fill - self._live(self.fill_prefix(contender, phase))
        if not all_bound:
            raise RuntimeError(f"{contender.name} {phase}: {len(times.bound):,} of {pods:,} pods bound "
                               f"within {PHASE_TIMEOUT:g} s")
        self.clean(contender, workload, phase)
        return result

    def _live(self, prefix: str) -> int:
        """The pods named ``prefix``... that are there and not being deleted."""
        return sum(1 for p in self.api.list(self._pods_path)[0]
                   if str(p["metadata"].get("name", "")).startswith(prefix) and not p["metadata"].get("deletionTimestamp"))

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

    def clean(self, contender: Contender, workload: Workload, phase: str) -> None:
        """The phase's pods deleted (grace period 0), one application at a time (a delete of the
        whole collection outlasts the API server's one-minute request timeout), and gone (gang
        placeholders too: they carry their job's application)."""
        apps = {app_name(self.prefix(contender, workload, phase), index, workload) for index in range(workload.pods)}
        apps |= {app_name(self.fill_prefix(contender, phase), index, workload) for index in range(workload.fill)}

        def delete(app: str) -> None:
            self.api.request("DELETE", self._pods_path, {"gracePeriodSeconds": 0},
                             params={"labelSelector": f"applicationId={app}"}, timeout=120)

        with ThreadPoolExecutor(CLIENT_THREADS) as pool:
            list(pool.map(delete, sorted(apps)))
        deadline = time.monotonic() + 300
        while self.api.list(self._pods_path)[0]:
            if time.monotonic() > deadline:
                raise RuntimeError("the benchmark's pods were not deleted within 300 s")
            time.sleep(0.5)


def app_name(prefix: str, index: int, workload: Workload) -> str:
    return f"{prefix}-app-{index // workload.app_size:03d}"


@contextmanager
def _cluster(workdir: Path, tools: Path, nodes: int, progress: Callable[[str], None]) -> Iterator[KubeCluster]:
    progress(f"kubernetes: starting etcd, kube-apiserver and kwok; {nodes:,} nodes")
    # The default in-flight limits (400 reads, 200 writes) are kube-apiserver's; left as they are.
    cluster = start_cluster(workdir, tools)
    try:
        names = node_names(nodes)
        cluster.add_nodes(names, timeout=600 + nodes // 10, labels=zone_labels(names), cpu=NODE_CPU, memory=NODE_MEMORY)
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
        contenders: list[str] | None = None, limit_binders: int = LIMIT_BINDERS) -> KubernetesReport:
    """Every workload (default all, in :data:`WORKLOADS` order), each phase, each contender
    (:func:`contenders_to_run`: the limit, pyscheduler, its baseline from the ``baseline``
    directory, kube-scheduler), on one cluster. A failed phase ends its workload (its pods are
    deleted) and the next workload runs. A baseline that cannot be served raises BaselineError
    before any cluster starts."""
    say = progress or (lambda _: None)
    nodes = nodes or (QUICK_NODES if quick else NODES)
    pods = pods or (QUICK_PODS if quick else PODS)
    keys = contenders_to_run(contenders, baseline, say)
    baseline_env = served_baseline_environment(baseline) if baseline and "baseline" in keys else None
    report = KubernetesReport(nodes=nodes, pods=pods, workloads=workloads_for(nodes, pods, workloads, quick=quick),
                              contenders=[CONTENDERS[key] for key in keys])
    tools = built_tools(with_kube_scheduler="kube-scheduler" in keys)
    with tempfile.TemporaryDirectory(prefix="bench-k8s-") as tmp, _cluster(Path(tmp) / "cluster", tools, nodes,
                                                                          say) as cluster:
        zones = {name: labels[ZONE_LABEL] for name, labels in zone_labels(node_names(nodes)).items()}
        bench = Bench(cluster, say, zones)
        bench.ensure_priority_classes()
        made: dict[str, Callable[[], Contender]] = {
            LIMIT: lambda: LimitContender(cluster, Path(tmp), limit_binders),
            "pyscheduler": lambda: PyschedulerContender(cluster, Path(tmp)),
            "baseline": lambda: BaselineContender(cluster, Path(tmp), baseline_env or {}),
            "kube-scheduler": lambda: KubeSchedulerContender(cluster, Path(tmp), tools / "bin" / "kube-scheduler"),
            "yunikorn": lambda: YunikornContender(cluster, Path(tmp), required_binary()),
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
                    bench.clean(contender, workload, phase)
                except (RuntimeError, requests.RequestException, OSError) as clean_exc:
                    report.failures.append(f"{workload.name}: its pods not deleted: {clean_exc}")
                    return False
                return True
    return True
