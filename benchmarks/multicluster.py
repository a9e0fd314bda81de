"""Pods placed per second through a hub over member clusters (issue 33, level 2) against one
cluster of as many nodes scheduled by the single-cluster shim, in the same run.

- **single cluster**: one control plane (``tests/kube_cluster.py``: etcd, kube-apiserver, kwok)
  with ``members x nodes`` kwok nodes, ``pyscheduler serve --rm pyscheduler_k8s:attach`` on it
  (:class:`benchmarks.kube_contenders.PyschedulerContender`). A pod is placed when it is seen with
  ``spec.nodeName``.
- **hub**: a hub (etcd, kube-apiserver, kube-controller-manager; no nodes) and members ``east``,
  ``west``, ``south`` (etcd, kube-apiserver, kwok; ``nodes`` kwok nodes each), started by
  ``tests/kube_hub.py``, with the same command reading a clusters file
  (``PYSCHEDULER_K8S_CLUSTERS_FILE``). The pods are submitted to the hub; the hub shim places each
  application in one member and creates there a copy of each pod, already bound, labelled
  ``pyscheduler.io/hub-pod-uid``. A hub pod is placed when it is seen on the hub marked with its
  member (label ``pyscheduler.io/cluster``: its copy, created first, is bound by then), as a user
  of the hub sees it; only the hub is watched, as only the single cluster is on the other side
  (the members' copies are listed after each phase, for the checks below).

The sides run one after another, each alone on the machine (the other's control planes are
stopped), so neither pays for the other's API servers; on 2 cores the hub side still runs four
API servers, four etcds, three kwoks and a controller manager where the single cluster runs one
API server, one etcd and one kwok.

Each side gets ``pods`` plain pods (100m cpu, 128 MiB; applications of :data:`PODS_PER_APP`
pods, label ``applicationId``, queue ``root.bench``) in two phases, as the kubernetes family
runs them (:mod:`benchmarks.kubernetes`): **stream** (the scheduler runs while 8 client threads
create the pods; placed/s over first creation to last placement, capped by the creation rate,
reported beside it) and **backlog** (the pods created while the scheduler is stopped, then it
starts: placed/s over its first placement to its last). Latencies are per pod, creation to
placement, 50th and 99th percentile (in the backlog phase they measure mostly the wait for
the start). All times are this process's observations of the API servers' watches. CPU
seconds are per phase (from before the pods are created to after they are all Running, warm-up
and start included): the scheduler's process group, every kube-apiserver of the side, and a line
per control-plane program and role (the hub's, the members' summed), to see where 2 cores went.

The hub side also checks what it places: applications whose pods went to more than one member
(``split apps``) and hub pods copied into more than one member (``copied twice``) are failures.
The report gives the hub's placed/s over the single cluster's per phase (the issue's target:
at least 0.8x). ``--quick``: 3 members of 20 nodes (single cluster: 60), 200 pods.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import requests

from benchmarks.kube_contenders import Contender, PyschedulerContender, cpu_seconds
from benchmarks.kubernetes import (
    CLIENT_THREADS,
    PHASE_TIMEOUT,
    PHASES,
    RUNNING_TIMEOUT,
    PodTimes,
    _percentile,
    _pod,
    built_tools,
    node_names,
)
from benchmarks.machine import format_table

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))

from kube_cluster import KubeCluster, start_cluster  # noqa: E402
from kube_hub import (  # noqa: E402
    CLUSTER_LABEL,
    HUB_POD_UID_LABEL,
    HubAndMembers,
    start_hub_and_members,
    write_clusters_file,
)

from pyscheduler_k8s.kubeapi import ClusterAccess, KubeApi, KubeApiError  # noqa: E402

#: What a phase or a side may fail with: the side is reported failed, the run goes on.
FAILURES = (RuntimeError, TimeoutError, KubeApiError, requests.RequestException, OSError)

MEMBERS = ("east", "west", "south")
NODES_PER_MEMBER, QUICK_NODES_PER_MEMBER = 500, 20
PODS, QUICK_PODS = 5_000, 200
PODS_PER_APP = 10
NAMESPACE = "bench"
SINGLE, HUB = "single cluster", "hub"
TARGET_RATIO = 0.8
WARM_UP_TIMEOUT = 180.0
NODE_CPU, NODE_MEMORY = "32", "128Gi"


@dataclass
class SideResult:
    """One side, one phase."""

    side: str
    phase: str
    pods: int
    placed: int
    running: int
    seconds: float
    """First creation (stream) or first placement (backlog) to the last placement."""
    placed_per_second: float
    created_per_second: float
    place_p50_ms: float | None
    place_p99_ms: float | None
    running_p50_ms: float | None
    running_p99_ms: float | None
    scheduler_cpu_s: float
    apiservers_cpu_s: float
    """CPU time of every kube-apiserver of the side during the phase."""
    cpu_by_process: dict[str, float] = field(default_factory=dict)
    """CPU seconds during the phase per control-plane program (etcd, kube-apiserver, kwok,
    kube-controller-manager), summed over the side's clusters: where the side's CPU went."""
    label_p50_ms: float | None = None
    """Hub: creation to the hub pod's cluster label seen."""
    label_p99_ms: float | None = None
    labelled: int = 0
    per_member: dict[str, int] = field(default_factory=dict)
    split_apps: int = 0
    copied_twice: int = 0


    def cpu_ms_per_pod(self, role: str | None) -> float:
        """CPU per pod of the phase: every program and the scheduler (``role`` None), the hub's
        own programs and the scheduler (``"hub"``: what one machine runs when the members are
        elsewhere, as in a real deployment), or the members' programs (``"members"``)."""
        used = sum(cpu for program, cpu in self.cpu_by_process.items()
                   if role is None or program.startswith(f"{role} "))
        if role != "members":
            used += self.scheduler_cpu_s
        return used * 1000 / self.pods


@dataclass
class MulticlusterReport:
    members: list[str]
    nodes_per_member: int
    pods: int
    pods_per_app: int = PODS_PER_APP
    results: list[SideResult] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def rate(self, side: str, phase: str) -> float | None:
        for result in self.results:
            if result.side == side and result.phase == phase and result.placed == result.pods:
                return result.placed_per_second
        return None

    def ratio(self, phase: str) -> float | None:
        """The hub's placed/s over the single cluster's (None unless both placed all their pods)."""
        hub, single = self.rate(HUB, phase), self.rate(SINGLE, phase)
        return hub / single if hub and single else None

    def to_dict(self) -> dict[str, Any]:
        return {"members": self.members, "nodes_per_member": self.nodes_per_member, "pods": self.pods,
                "pods_per_app": self.pods_per_app, "results": [asdict(r) for r in self.results],
                "ratios": {phase: self.ratio(phase) for phase in PHASES}, "target_ratio": TARGET_RATIO,
                "failures": self.failures}

    def format(self) -> str:
        def ms(value: float | None) -> str:
            return "-" if value is None else f"{value:,.0f}"

        nodes = self.nodes_per_member * len(self.members)
        rows = [[r.side, r.phase, f"{r.placed:,}/{r.pods:,}", f"{r.seconds:.1f}", f"{r.placed_per_second:,.0f}",
                 f"{r.created_per_second:,.0f}", ms(r.place_p50_ms), ms(r.place_p99_ms), ms(r.label_p50_ms),
                 ms(r.label_p99_ms), ms(r.running_p50_ms), ms(r.running_p99_ms), f"{r.scheduler_cpu_s:.1f}",
                 f"{r.apiservers_cpu_s:.1f}",
                 " / ".join(f"{m} {r.per_member.get(m, 0):,}" for m in self.members) if r.side == HUB else "-",
                 f"{r.split_apps} / {r.copied_twice}" if r.side == HUB else "-"]
                for r in self.results]
        lines = [f"## multicluster: a hub over {len(self.members)} members of {self.nodes_per_member:,} kwok nodes "
                 f"vs one cluster of {nodes:,}, {self.pods:,} pods (applications of {self.pods_per_app})", "",
                 format_table(["side", "phase", "placed", "s", "placed/s", "created/s", "place p50 ms", "place p99 ms",
                               "hub label p50 ms", "hub label p99 ms", "running p50 ms", "running p99 ms",
                               "scheduler cpu s", "apiservers cpu s", "pods per member", "split apps / copied twice"],
                              rows), ""]
        lines += [f"- {r.side} {r.phase}: cpu s by program: "
                  + ", ".join(f"{program} {used:.1f}" for program, used in sorted(r.cpu_by_process.items()))
                  + f", scheduler {r.scheduler_cpu_s:.1f}" for r in self.results if r.cpu_by_process]
        lines += [f"- {r.side} {r.phase}: cpu ms per pod: {r.cpu_ms_per_pod(None):.1f} in all"
                  + (f", of which the hub's own (its API server, etcd, controller manager and the scheduler) "
                     f"{r.cpu_ms_per_pod('hub'):.1f}, the members' {r.cpu_ms_per_pod('members'):.1f}"
                     if r.side == HUB else "") for r in self.results if r.cpu_by_process and r.pods]
        for phase in PHASES:
            ratio = self.ratio(phase)
            lines.append(f"- {phase}: hub / single cluster placed/s = "
                         + ("-" if ratio is None else f"{ratio:.2f}x") + f" (target >= {TARGET_RATIO}x)")
        lines += ["", *(f"- FAILED: {failure}" for failure in self.failures)]
        return "\n".join(lines).rstrip()


class HubContender(PyschedulerContender):
    """``pyscheduler serve --rm pyscheduler_k8s:attach`` reading the hub's clusters file."""

    name = HUB
    tag = "hubs"

    def __init__(self, hub: KubeCluster, workdir: Path, clusters_file: Path) -> None:
        super().__init__(hub, workdir)
        self.clusters_file = clusters_file

    def command(self) -> tuple[list[str], dict[str, str]]:
        args, env = super().command()
        env.pop("PYSCHEDULER_K8S_KUBECONFIG", None)  # the clusters file names every cluster
        return args, {**env, "PYSCHEDULER_K8S_CLUSTERS_FILE": str(self.clusters_file)}


class HubPodTimes(PodTimes):
    """The hub's pods: :class:`PodTimes` (added; Running as the hub mirrors it), plus when each
    was first seen with its cluster label, its uid and its application."""

    def __init__(self, api: KubeApi, namespace: str, prefix: str) -> None:
        self.labelled: dict[str, float] = {}
        self.uids: dict[str, str] = {}
        self.apps: dict[str, str] = {}
        super().__init__(api, namespace, prefix)

    def record(self, pod: dict[str, Any], now: float) -> None:
        super().record(pod, now)
        meta = pod.get("metadata") or {}
        name = str(meta.get("name") or "")
        if not name.startswith(self.prefix):
            return
        self.uids.setdefault(name, str(meta.get("uid") or ""))
        labels = meta.get("labels") or {}
        self.apps.setdefault(name, str(labels.get("applicationId") or ""))
        if labels.get(CLUSTER_LABEL):
            self.labelled.setdefault(name, now)


class Side:
    """One side's clusters and how its pods' placement is seen; :meth:`run_phase` runs a phase."""

    name: str

    def __init__(self, submit_to: KubeCluster, contender: Contender, progress: Callable[[str], None]) -> None:
        self.submit_to = submit_to
        self.contender = contender
        self.progress = progress
        self.api = KubeApi(ClusterAccess.discover(str(submit_to.kubeconfig)))
        self.pods_path = f"/api/v1/namespaces/{NAMESPACE}/pods"

    def clusters(self) -> list[tuple[str, KubeCluster]]:
        """The side's control planes, each with its role (``hub``, ``members``; none for a single cluster)."""
        return [("", self.submit_to)]

    def apiservers(self) -> list[subprocess.Popen[bytes]]:
        return [cluster.processes["kube-apiserver"] for _, cluster in self.clusters()]

    def cpu_by_process(self) -> dict[str, float]:
        """CPU seconds so far per control-plane program, prefixed by its cluster's role (the
        members' summed)."""
        used: dict[str, float] = defaultdict(float)
        for role, cluster in self.clusters():
            for program, process in cluster.processes.items():
                used[f"{role} {program}".strip()] += cpu_seconds(process)
        return dict(used)

    def watch(self, prefix: str) -> None:
        self.times = PodTimes(self.api, NAMESPACE, prefix)

    def stop_watching(self) -> None:
        self.times.stop()

    def added(self) -> dict[str, float]:
        return self.times.added

    def placed(self) -> dict[str, float]:
        """Hub pod (or pod) name -> when first seen placed."""
        return self.times.bound

    def running(self) -> dict[str, float]:
        return self.times.running

    def is_placed(self, pod: dict[str, Any]) -> bool:
        return bool((pod.get("spec") or {}).get("nodeName"))

    def check(self, result: SideResult) -> None:
        """The side's own figures and checks added to ``result``."""

    def _wait(self, what: str, done: Callable[[], int], target: int, timeout: float, *,
              scheduler_runs: bool = True) -> bool:
        """Until ``done()`` reaches ``target`` (True) or ``timeout`` (False); RuntimeError when
        the scheduler exits meanwhile (``scheduler_runs``: it should be running)."""
        process = self.contender.process if scheduler_runs else None
        deadline = time.monotonic() + timeout
        last_report = 0.0
        while True:
            count = done()
            if count >= target:
                return True
            if process is not None and process.poll() is not None:
                raise RuntimeError(f"{what}: the scheduler exited with {process.returncode} "
                                   f"(its log: {self.contender.workdir / (self.contender.tag + '.log')})")
            now = time.monotonic()
            if now > deadline:
                return False
            if now - last_report > 10:
                self.progress(f"  {self.name} {what}: {count:,}/{target:,}")
                last_report = now
            time.sleep(0.1)

    def warm_up(self) -> None:
        """One pod placed: the scheduler has synced its caches (every member's, for the hub)."""
        name = f"warmup-{self.contender.tag}"
        self.api.request("POST", self.pods_path, _pod(name, "warmup", self.contender.scheduler_name))
        if not self._wait("warm-up pod placed", lambda: int(self.is_placed(
                self.api.request("GET", f"{self.pods_path}/{name}"))), 1, WARM_UP_TIMEOUT):
            raise RuntimeError(f"{self.name}: no pod placed within {WARM_UP_TIMEOUT:g} s")
        self.api.request("DELETE", f"{self.pods_path}/{name}", {"gracePeriodSeconds": 0})

    def create(self, prefix: str, pods: int) -> None:
        def post(index: int) -> None:
            body = _pod(f"{prefix}-{index:05d}", app_name(prefix, index), self.contender.scheduler_name)
            self.api.request("POST", self.pods_path, body, timeout=60)

        with ThreadPoolExecutor(CLIENT_THREADS) as pool:
            list(pool.map(post, range(pods)))

    def run_phase(self, phase: str, pods: int) -> SideResult:
        self.progress(f"multicluster: {self.name}, {phase} phase: {pods:,} pods")
        prefix = f"{self.contender.tag}-{phase[:4]}"
        self.watch(prefix)
        before = sum(cpu_seconds(p) for p in self.apiservers())
        programs_before = self.cpu_by_process()
        cpu = 0.0
        try:
            if phase == "stream":
                self.contender.start()
                self.warm_up()
                self.create(prefix, pods)
            else:
                self.create(prefix, pods)
                self._wait("created pods seen", lambda: len(self.added()), pods, PHASE_TIMEOUT, scheduler_runs=False)
                self.contender.start()
            all_placed = self._wait("placed", lambda: len(self.placed()), pods, PHASE_TIMEOUT)
            # The next phase should not pay for this one's pods becoming Running.
            self._wait("running", lambda: len(self.running()), pods, RUNNING_TIMEOUT)
            cpu = cpu_seconds(self.contender.process)
        finally:
            self.contender.stop()
            self.stop_watching()
        result = self._result(phase, pods, cpu, sum(cpu_seconds(p) for p in self.apiservers()) - before)
        result.cpu_by_process = {program: round(used - programs_before.get(program, 0.0), 2)
                                 for program, used in self.cpu_by_process().items()}
        if not all_placed:
            raise RuntimeError(f"{self.name} {phase}: {result.placed:,} of {pods:,} pods placed within "
                               f"{PHASE_TIMEOUT:g} s")
        self.clean(prefix, pods)
        return result

    def _result(self, phase: str, pods: int, cpu: float, apiservers_cpu: float) -> SideResult:
        added, placed, running = self.added(), self.placed(), self.running()
        if not added or not placed:
            raise RuntimeError(f"{self.name} {phase}: {len(added):,} pods seen created, {len(placed):,} placed")
        start = min(added.values()) if phase == "stream" else min(placed.values())
        seconds = max(max(placed.values()) - start, 1e-9)
        result = SideResult(
            side=self.name, phase=phase, pods=pods, placed=len(placed), running=len(running), seconds=seconds,
            placed_per_second=len(placed) / seconds,
            created_per_second=len(added) / max(max(added.values()) - min(added.values()), 1e-9),
            place_p50_ms=_ms(_percentile(_since(added, placed), 0.50)),
            place_p99_ms=_ms(_percentile(_since(added, placed), 0.99)),
            running_p50_ms=_ms(_percentile(_since(added, running), 0.50)),
            running_p99_ms=_ms(_percentile(_since(added, running), 0.99)),
            scheduler_cpu_s=cpu, apiservers_cpu_s=apiservers_cpu)
        self.check(result)
        return result

    def clean(self, prefix: str, pods: int) -> None:
        """The phase's pods deleted (grace period 0), one application at a time, and gone."""
        apps = sorted({app_name(prefix, index) for index in range(pods)})

        def delete(app: str) -> None:
            self.api.request("DELETE", self.pods_path, {"gracePeriodSeconds": 0},
                             params={"labelSelector": f"applicationId={app}"}, timeout=120)

        with ThreadPoolExecutor(CLIENT_THREADS) as pool:
            list(pool.map(delete, apps))
        deadline = time.monotonic() + 300
        while self.api.list(self.pods_path)[0]:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name}: the benchmark's pods were not deleted within 300 s")
            time.sleep(0.5)


class SingleSide(Side):
    name = SINGLE


class HubSide(Side):
    """Pods submitted to the hub; placed when the hub pod is seen marked with its member."""

    name = HUB

    def __init__(self, clusters: HubAndMembers, contender: Contender, progress: Callable[[str], None]) -> None:
        super().__init__(clusters.hub, contender, progress)
        self.hub_and_members = clusters
        self.member_apis = {name: KubeApi(ClusterAccess.discover(str(member.kubeconfig)))
                            for name, member in clusters.members.items()}

    def clusters(self) -> list[tuple[str, KubeCluster]]:
        return [("hub", self.hub_and_members.hub), *(("members", m) for m in self.hub_and_members.members.values())]

    def watch(self, prefix: str) -> None:
        # The hub only, as its user sees it (the single side watches its one cluster too): the
        # members' copies are listed after the phase, not watched during it.
        self.hub_times = HubPodTimes(self.api, NAMESPACE, prefix)

    def stop_watching(self) -> None:
        self.hub_times.stop()

    def added(self) -> dict[str, float]:
        return self.hub_times.added

    def placed(self) -> dict[str, float]:
        """A hub pod is placed when it is seen marked with its member (its copy, created first,
        is bound there already)."""
        return self.hub_times.labelled

    def running(self) -> dict[str, float]:
        return self.hub_times.running

    def is_placed(self, pod: dict[str, Any]) -> bool:
        return bool(((pod.get("metadata") or {}).get("labels") or {}).get(CLUSTER_LABEL))

    def check(self, result: SideResult) -> None:
        """Every member's copies listed: pods per member, applications split, pods copied twice."""
        hub = self.hub_times
        labels = _since(hub.added, hub.labelled)
        result.label_p50_ms, result.label_p99_ms = _ms(_percentile(labels, 0.50)), _ms(_percentile(labels, 0.99))
        result.labelled = len(hub.labelled)
        members_of: dict[str, set[str]] = defaultdict(set)  # hub pod uid -> the members holding a copy
        for member, api in self.member_apis.items():
            copies, _ = api.list(self.pods_path, params={"labelSelector": HUB_POD_UID_LABEL})
            for copy in copies:
                members_of[str(copy["metadata"]["labels"][HUB_POD_UID_LABEL])].add(member)
        apps: dict[str, set[str]] = defaultdict(set)
        count: Counter[str] = Counter()
        for name, uid in hub.uids.items():
            for member in members_of.get(uid, ()):
                apps[hub.apps.get(name, "")].add(member)
                count[member] += 1
        result.per_member = {member: count.get(member, 0) for member in self.member_apis}
        result.split_apps = sum(1 for held in apps.values() if len(held) > 1)
        result.copied_twice = sum(1 for held in members_of.values() if len(held) > 1)

    def clean(self, prefix: str, pods: int) -> None:
        """The hub's pods, then whatever copies the members still hold (the hub shim deletes
        them with their hub pod; the benchmark does not wait for it to)."""
        super().clean(prefix, pods)
        for name, api in self.member_apis.items():
            api.request("DELETE", self.pods_path, {"gracePeriodSeconds": 0}, timeout=120)
            deadline = time.monotonic() + 300
            while api.list(self.pods_path)[0]:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{name}: the benchmark's copies were not deleted within 300 s")
                time.sleep(0.5)


def app_name(prefix: str, index: int) -> str:
    return f"{prefix}-app-{index // PODS_PER_APP:04d}"


def _since(start: Mapping[str, float], end: Mapping[str, float]) -> list[float]:
    return [end[name] - start[name] for name in end if name in start]


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000


@contextmanager
def _single_cluster(workdir: Path, tools: Path, nodes: int, say: Callable[[str], None]) -> Iterator[KubeCluster]:
    say(f"multicluster: starting the single cluster with {nodes:,} kwok nodes")
    cluster = start_cluster(workdir, tools)
    try:
        cluster.add_nodes(node_names(nodes), timeout=600, cpu=NODE_CPU, memory=NODE_MEMORY)
        cluster.ensure_namespace(NAMESPACE)
        yield cluster
    finally:
        cluster.stop()


@contextmanager
def _hub_and_members(workdir: Path, tools: Path, members: tuple[str, ...], nodes: int,
                     say: Callable[[str], None]) -> Iterator[HubAndMembers]:
    say(f"multicluster: starting the hub and {len(members)} members with {nodes:,} kwok nodes each")
    started = time.monotonic()
    clusters = start_hub_and_members(workdir, members, tools=tools)
    try:
        say(f"multicluster: {len(members) + 1} control planes ready in {time.monotonic() - started:.1f} s")
        clusters.add_member_nodes(nodes, cpu=NODE_CPU, memory=NODE_MEMORY)
        for cluster in clusters.all():
            cluster.ensure_namespace(NAMESPACE)
        yield clusters
    finally:
        clusters.stop()


def _run_phases(side: Side, pods: int, report: MulticlusterReport, say: Callable[[str], None]) -> None:
    """Both phases; a failed phase ends the side (its pods deleted)."""
    for phase in PHASES:
        try:
            result = side.run_phase(phase, pods)
            report.results.append(result)
            if result.split_apps or result.copied_twice:
                report.failures.append(f"{side.name} {phase}: {result.split_apps} applications split across "
                                       f"members, {result.copied_twice} pods copied into two members")
        except FAILURES as exc:
            report.failures.append(f"{side.name} {phase}: {exc}")
            say(f"multicluster: {side.name} {phase} failed: {exc}")
            try:
                side.clean(f"{side.contender.tag}-{phase[:4]}", pods)
            except FAILURES as clean_exc:
                report.failures.append(f"{side.name}: its pods not deleted: {clean_exc}")
            return


def run(*, quick: bool = False, progress: Callable[[str], None] | None = None, nodes: int | None = None,
        pods: int | None = None, sides: tuple[str, ...] = (SINGLE, HUB)) -> MulticlusterReport:
    """The single cluster's phases, then the hub's (``sides``: which of them), each side's
    control planes stopped before the next starts. ``nodes``: per member (the single cluster
    has as many as all members together)."""
    say = progress or (lambda _: None)
    nodes = nodes or (QUICK_NODES_PER_MEMBER if quick else NODES_PER_MEMBER)
    pods = pods or (QUICK_PODS if quick else PODS)
    report = MulticlusterReport(members=list(MEMBERS), nodes_per_member=nodes, pods=pods)
    tools = built_tools(with_kube_scheduler=False)
    with tempfile.TemporaryDirectory(prefix="bench-multicluster-") as tmp:
        work = Path(tmp)
        if SINGLE in sides:
            try:
                with _single_cluster(work / "single", tools, nodes * len(MEMBERS), say) as cluster:
                    _run_phases(SingleSide(cluster, PyschedulerContender(cluster, work), say), pods, report, say)
            except FAILURES as exc:
                report.failures.append(f"{SINGLE}: {exc}")
        if HUB in sides:
            try:
                with _hub_and_members(work / "hub", tools, MEMBERS, nodes, say) as clusters:
                    clusters_file = write_clusters_file(work / "clusters.yaml", clusters)
                    contender = HubContender(clusters.hub, work, clusters_file)
                    _run_phases(HubSide(clusters, contender, say), pods, report, say)
            except FAILURES as exc:
                report.failures.append(f"{HUB}: {exc}")
    return report
