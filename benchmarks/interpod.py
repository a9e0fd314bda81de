"""The shim's node check with inter-pod constraints (issue 30): ``python -m benchmarks interpod``.

No cluster: the Kubernetes shim's :class:`~pyscheduler_k8s.cluster_index.ClusterIndex` filled
the way its watches fill it, then an incoming pod checked against every node, as the core asks
through the ``predicates`` callback when it walks its nodes for an ask. Issue 30's target: a
node check with affinity terms under 5 us at 5,000 nodes.

**The cluster**: 5,000 nodes in 10 zones (``kubernetes.io/hostname``, node ``n`` in
``topology.kubernetes.io/zone`` ``zone-(n % 10)``) and 10,301 pods on them, namespace
``bench``, as Deployments label theirs (``app``):

- ``web-0`` .. ``web-9``: 600 pods each with required anti-affinity by hostname against their
  own ``app`` (scheduler_perf's ``SchedulingPodAntiAffinity`` pod, one group per Deployment):
  one pod of a Deployment per node; their terms are the existing pods' anti-affinity that every
  incoming pod is checked against (the symmetric rule);
- ``spread-0`` .. ``spread-7``: 500 pods each, 50 per zone, and one more of ``spread-0`` in
  ``zone-0`` (so a spread check fails somewhere);
- ``cache``: 300 pods in zones 0-2 only (the target of the affinity case).

**The incoming pods**, one per case, each tracked first (the shim tracks a pending pod's
constraints when it sees it; the counters a new constraint needs are built then, one pass over
the pods: reported as *track ms*):

- (a) **anti-affinity**: ``app=web-0`` with required anti-affinity by hostname against
  ``app=web-0`` (600 nodes refuse it: its own term, and ``web-0``'s terms by symmetry);
- (b) **affinity**: required affinity by zone to ``app=cache`` (the 1,500 nodes of zones 0-2
  pass);
- (c) **spread**: ``app=spread-0`` with a ``DoNotSchedule`` zone constraint, maxSkew 1 (the
  500 nodes of ``zone-0`` refuse it);
- **none**: no constraints (what every pod without terms pays: the symmetric rule's lookup).

**Timed**, per case: one pass over all nodes is one run; before each run one pod is placed and
removed (untimed), so the run starts, as after every binding in the scheduler, with the
cluster changed and the per-pod spread state to be built again. Reported: microseconds per node
check, the median of the runs (and the fastest and slowest), for

- **index**: ``ClusterIndex.check(uid, constraints, pod, node)``, the inter-pod filters;
- **filters**: ``predicates.check_node(pod, node)`` (selector, affinity, taints, host ports)
  and then the index check, what the shim's callback computes;
- **callback**: ``KubeShim.predicates(PredicatesArgs(...))`` on a shim that has seen the same
  nodes and pods through its watch handlers (its lock, its maps, the shim's node and pod
  records; a recording proxy and no API server).

``--quick``: 500 nodes (10 zones), a tenth of the pods, 3 runs.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final, TypeVar

from benchmarks.machine import Progress, format_table

from pyscheduler.si import messages as si
from pyscheduler_k8s.cluster_index import ClusterIndex, PlacedPod, PodConstraints, pod_constraints
from pyscheduler_k8s.nodes import NodeView, node_view
from pyscheduler_k8s.predicates import check_node, inclusion_passes
from pyscheduler_k8s.shim import KubeShim

NODES: Final = 5_000
QUICK_NODES: Final = 500
ZONES: Final = 10
RUNS: Final = 7
QUICK_RUNS: Final = 3
TARGET_US: Final = 5.0
NAMESPACE: Final = "bench"
HOSTNAME: Final = "kubernetes.io/hostname"
ZONE: Final = "topology.kubernetes.io/zone"
#: Pods per Deployment at 5,000 nodes (scaled with the node count).
WEB, WEB_PODS = 10, 600
SPREAD, SPREAD_PODS = 8, 500
CACHE_PODS, CACHE_ZONES = 300, 3
#: spread-0's pods over the others in the first zone.
SKEW_EXTRA: Final = 1
CASES: Final = ("anti-affinity", "affinity", "spread", "none")
PATHS: Final = ("index", "filters", "callback")


# --- the cluster, as the API server would list it ----------------------------------------------


def zone_of(node: int) -> str:
    return f"zone-{node % ZONES}"


def node_object(n: int) -> dict[str, Any]:
    name = f"node-{n:05d}"
    allocatable = {"cpu": "32", "memory": "128Gi", "pods": "110"}
    return {"metadata": {"name": name, "labels": {HOSTNAME: name, ZONE: zone_of(n)}},
            "spec": {}, "status": {"allocatable": allocatable, "capacity": allocatable}}


def anti_affinity_by_hostname(app: str) -> dict[str, Any]:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": HOSTNAME}]}}


def pod_object(name: str, app: str, *, node: str = "", scheduler: str = "default-scheduler",
               affinity: Mapping[str, Any] | None = None,
               spread: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": scheduler, "containers": [
        {"name": "c", "image": "registry.k8s.io/pause:3.10",
         "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}
    if node:
        spec["nodeName"] = node
    if affinity:
        spec["affinity"] = dict(affinity)
    if spread:
        spec["topologySpreadConstraints"] = list(spread)
    return {"metadata": {"name": name, "namespace": NAMESPACE, "uid": f"uid-{name}",
                         "labels": {"app": app, "applicationId": app, "queue": "root.bench"}},
            "spec": spec, "status": {"phase": "Running" if node else "Pending"}}


def _scaled(count: int, nodes: int) -> int:
    return max(1, count * nodes // NODES)


def placed_pods(nodes: int) -> list[dict[str, Any]]:
    """The pods on the nodes (module doc), bound by another scheduler."""
    by_zone: list[list[int]] = [list(range(z, nodes, ZONES)) for z in range(ZONES)]
    pods: list[dict[str, Any]] = []
    for d in range(WEB):
        app = f"web-{d}"
        count = _scaled(WEB_PODS, nodes)
        # One per node: step 7 is prime to the node counts used (multiples of 10, not of 7).
        start = d * nodes // WEB
        for j in range(count):
            node = (start + 7 * j) % nodes
            pods.append(pod_object(f"{app}-{j}", app, node=f"node-{node:05d}", affinity=anti_affinity_by_hostname(app)))
    for d in range(SPREAD):
        app = f"spread-{d}"
        per_zone = _scaled(SPREAD_PODS, nodes) // ZONES
        for z in range(ZONES):
            count = per_zone + (SKEW_EXTRA if d == 0 and z == 0 else 0)
            members = by_zone[z]
            for j in range(count):
                node = members[(d * 3 + j * 5) % len(members)]
                pods.append(pod_object(f"{app}-z{z}-{j}", app, node=f"node-{node:05d}"))
    cache_zones = [n for z in range(CACHE_ZONES) for n in by_zone[z]]
    for j in range(_scaled(CACHE_PODS, nodes)):
        node = cache_zones[(j * 11) % len(cache_zones)]
        pods.append(pod_object(f"cache-{j}", "cache", node=f"node-{node:05d}"))
    return pods


def incoming_pod(case: str) -> dict[str, Any]:
    """The pod of a case, pending, for pyscheduler."""
    name = f"incoming-{case}"
    if case == "anti-affinity":
        return pod_object(name, "web-0", scheduler="pyscheduler", affinity=anti_affinity_by_hostname("web-0"))
    if case == "affinity":
        return pod_object(name, "frontend", scheduler="pyscheduler", affinity={"podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": ZONE}]}})
    if case == "spread":
        return pod_object(name, "spread-0", scheduler="pyscheduler", spread=[
            {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"app": "spread-0"}}}])
    if case == "none":
        return pod_object(name, "plain", scheduler="pyscheduler")
    raise ValueError(f"unknown case {case!r}")


def placed(pod: Mapping[str, Any]) -> PlacedPod:
    meta = pod["metadata"]
    return PlacedPod(meta["uid"], meta["namespace"], meta["labels"], pod["spec"]["nodeName"],
                     anti_affinity=pod_constraints(pod).anti_affinity)


def build_index(nodes: Sequence[NodeView], pods: Sequence[Mapping[str, Any]]) -> ClusterIndex:
    """The index as the shim keeps it (same node inclusion policies), every pod placed."""
    index = ClusterIndex(node_passes=inclusion_passes)
    index.set_namespace(NAMESPACE, {})
    for view in nodes:
        index.set_node(view)
    for pod in pods:
        index.place(placed(pod))
    return index


class _RecordingProxy:
    """The core as the shim's watch handlers see it: every request kept, nothing scheduled."""

    def __init__(self) -> None:
        self.requests = 0

    def _record(self, _request: object) -> None:
        self.requests += 1

    update_node = update_application = update_allocation = update_configuration = _record


class _NoApi:
    """The shim is never started: nothing reaches an API server."""

    def close_watches(self) -> None:
        pass


def build_shim(nodes: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]]) -> KubeShim:
    """A shim fed through its watch handlers (the node and pod events a start would list)."""
    shim = KubeShim(_RecordingProxy(), _NoApi(), "")  # type: ignore[arg-type]
    for node in nodes:
        shim.cluster.on_node("ADDED", dict(node))  # the watch handler, no watch here
    for pod in pods:
        shim.pods.handle("ADDED", dict(pod))
    return shim


# --- measuring ----------------------------------------------------------------------------------


@dataclass
class Timing:
    """One case, one path: microseconds per node check over the runs."""

    case: str
    path: str
    nodes: int
    refused: int
    """Nodes the check refused (the same in every run)."""
    runs_us: list[float]

    @property
    def median_us(self) -> float:
        return statistics.median(self.runs_us)


@dataclass
class InterpodReport:
    nodes: int
    zones: int
    placed: int
    runs: int
    quick: bool
    timings: list[Timing] = field(default_factory=list)
    track_ms: dict[str, float] = field(default_factory=dict)
    build_s: dict[str, float] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def median(self, case: str, path: str) -> float | None:
        for timing in self.timings:
            if timing.case == case and timing.path == path:
                return timing.median_us
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"nodes": self.nodes, "zones": self.zones, "placed": self.placed, "runs": self.runs,
                "quick": self.quick, "target_us": TARGET_US,
                "timings": [{**asdict(t), "median_us": t.median_us} for t in self.timings],
                "track_ms": self.track_ms, "build_s": self.build_s, "failures": self.failures}

    def format(self) -> str:
        rows = []
        for case in CASES:
            row: list[object] = [case]
            refused = next((t.refused for t in self.timings if t.case == case), None)
            row.append("-" if refused is None else f"{refused:,}/{self.nodes:,}")
            for path in PATHS:
                timing = next((t for t in self.timings if t.case == case and t.path == path), None)
                row.append("-" if timing is None else
                           f"{timing.median_us:.2f} ({min(timing.runs_us):.2f}-{max(timing.runs_us):.2f})")
            track = self.track_ms.get(case)
            row.append("-" if track is None else f"{track:.1f}")
            index = self.median(case, "index")
            row.append("-" if index is None or case == "none" else ("met" if index < TARGET_US else "NOT met"))
            rows.append(row)
        lines = [f"## Inter-pod node check: {self.nodes:,} nodes in {self.zones} zones, {self.placed:,} pods placed",
                 "",
                 format_table(["incoming pod", "nodes refused", "index us/node", "filters us/node",
                               "callback us/node", "track ms", f"index < {TARGET_US:g} us"], rows),
                 "",
                 f"Median (fastest-slowest) of {self.runs} runs, one run a pass over every node after a cluster "
                 "change. index: ClusterIndex.check; filters: predicates.check_node, then the index; callback: "
                 "KubeShim.predicates. Set-up: index " + f"{self.build_s.get('index', 0.0):.1f} s, shim "
                 + f"{self.build_s.get('shim', 0.0):.1f} s."]
        lines += [f"- FAILED: {failure}" for failure in self.failures]
        return "\n".join(lines)


T = TypeVar("T")


def _runs(check: Callable[[T], str | None], views: Sequence[T], runs: int,
          change: Callable[[], None]) -> tuple[list[float], int]:
    """Microseconds per node check for each run, and the nodes refused (every run the same).
    ``views``: what ``check`` takes per node (a NodeView, or the callback's PredicatesArgs)."""
    timings: list[float] = []
    refused = -1
    clock = time.perf_counter
    for _ in range(runs):
        change()
        started = clock()
        count = 0
        for view in views:
            if check(view) is not None:
                count += 1
        elapsed = clock() - started
        timings.append(elapsed / len(views) * 1e6)
        if refused not in (-1, count):
            raise RuntimeError(f"the nodes refused changed between runs: {refused} then {count}")
        refused = count
    return timings, refused


def _changer(index: ClusterIndex, node: str) -> Callable[[], None]:
    """A pod placed and removed: the cluster changed (its generation), nothing else."""
    churn = PlacedPod("churn", NAMESPACE, {"app": "churn"}, node)

    def change() -> None:
        index.place(churn)
        index.remove(churn.uid)

    return change


def run(*, quick: bool = False, progress: Progress | Callable[[str], None] | None = None,
        nodes: int | None = None, runs: int | None = None) -> InterpodReport:
    say = progress or (lambda _: None)
    nodes = nodes or (QUICK_NODES if quick else NODES)
    runs = runs or (QUICK_RUNS if quick else RUNS)
    node_objects = [node_object(n) for n in range(nodes)]
    pods = placed_pods(nodes)
    report = InterpodReport(nodes=nodes, zones=ZONES, placed=len(pods), runs=runs, quick=quick)
    say(f"interpod: {nodes:,} nodes, {len(pods):,} pods placed: building the index")
    started = time.perf_counter()
    views = [node_view(node) for node in node_objects]
    index = build_index(views, pods)
    report.build_s["index"] = time.perf_counter() - started
    say("interpod: the same through the shim's watch handlers")
    started = time.perf_counter()
    try:
        shim: KubeShim | None = build_shim(node_objects, pods)
    except Exception as exc:  # the shim's internals are not an API: the index figures still stand
        shim = None
        report.failures.append(f"shim set-up: {type(exc).__name__}: {exc}")
    report.build_s["shim"] = time.perf_counter() - started
    change = _changer(index, views[0].name)
    names = [view.name for view in views]
    for case in CASES:
        pod = incoming_pod(case)
        uid = pod["metadata"]["uid"]
        constraints: PodConstraints = pod_constraints(pod)
        started = time.perf_counter()
        index.track(uid, constraints)
        report.track_ms[case] = (time.perf_counter() - started) * 1000
        say(f"interpod: {case}: {runs} runs over {nodes:,} nodes")

        def by_index(view: NodeView, uid: str = uid, constraints: PodConstraints = constraints,
                     pod: Mapping[str, Any] = pod) -> str | None:
            return index.check(uid, constraints, pod, view)

        def by_filters(view: NodeView, uid: str = uid, constraints: PodConstraints = constraints,
                       pod: Mapping[str, Any] = pod) -> str | None:
            return check_node(pod, view) or index.check(uid, constraints, pod, view)

        for path, check in (("index", by_index), ("filters", by_filters)):
            timings, refused = _runs(check, views, runs, change)
            report.timings.append(Timing(case, path, nodes, refused, timings))
        index.untrack(uid)
        if shim is None:
            continue
        try:
            shim.pods.handle("ADDED", pod)  # the pending pod arrives: tracked, asked for
            shim_change = _shim_changer(shim, names[0])
            args = [si.PredicatesArgs(allocation_key=uid, node_id=name, allocate=True) for name in names]
            predicates = shim.callback.predicates
            timings, refused = _runs(predicates, args, runs, shim_change)
            report.timings.append(Timing(case, "callback", nodes, refused, timings))
        except Exception as exc:
            report.failures.append(f"{case}: the shim's callback: {type(exc).__name__}: {exc}")
    for case in CASES:
        counts = {t.refused for t in report.timings if t.case == case}
        if len(counts) > 1:
            report.failures.append(f"{case}: the paths refused different node counts: {sorted(counts)}")
    if shim is not None:
        shim.stop()
    return report


def _shim_changer(shim: KubeShim, node: str) -> Callable[[], None]:
    """A foreign pod bound and deleted through the watch handler: the shim's cluster changed."""
    churn = pod_object("churn", "churn", node=node)

    def change() -> None:
        shim.pods.handle("ADDED", churn)
        shim.pods.handle("DELETED", churn)

    return change
