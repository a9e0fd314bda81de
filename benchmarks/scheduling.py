"""Scheduling throughput: benchmarks.md section 3 (YuniKorn's ``BenchmarkScheduling`` shape).

The workload is YuniKorn's own: two leaf queues ``root.a`` and ``root.b``, one application in
each, 10,000 asks in total (alternating between the two applications), each ask memory 10 and
vcore 1, on 500, 1,000, 2,000 and 5,000 nodes of capacity ``(10000 / nodes + 1)`` asks each,
so everything fits. Event tracking is on, as in production (the default settings).

What is timed: from the moment every ask has been submitted (the core has them all pending)
until the RM callback has received every allocation. Two figures per case:

- **threaded** (the headline): the real scheduling loop (:meth:`Scheduler.start`), started
  after the submission; the clock stops when the RM callback, counting the allocations it
  receives, sets a ``threading.Event`` at the last one (bounded by a timeout). This is what
  production does, loop wake-ups included.
- **lockstep**: the same run driven one cycle at a time with :meth:`Scheduler.schedule_once`
  from the benchmark's thread (no loop, no thread hand-off): the cost of the cycles alone.

Each case runs with the Rust node index (``native``) and with the pure-Python node ordering
(``ClusterContext(native_node_ordering=False)``), for both ``fair`` and ``binpacking``.

Isolation: every case (policy x nodes x ordering) runs in a **fresh subprocess**, so no case
inherits another's heap, GC generations or allocator state (a 5,000-node run leaves a lot of
both). Inside it, the threaded run comes first, in a fresh ClusterContext; the lockstep run
follows in a second fresh ClusterContext, after a full collection. ``--repeats N`` runs each
case in N subprocesses and reports the median (3 by default, 1 with ``--quick``). The setup
(nodes, applications, 10,000 asks) and a flush of the events it produced are not timed.

Reference (benchmarks.md): YuniKorn's Go core reports about 5,400 allocations/s on 6 CPUs,
nearly flat from 500 to 5,000 nodes; before its B-tree node index it reported 360/s at 500
nodes and 178/s at 1,000. Target here: at least 10,000 allocations/s at 5,000 nodes with
events on (threaded, native node index).

A second shape, **many queues** (``--shapes many-queues``), shows what the YuniKorn shape hides:
the cost of a cycle in a cluster with many queues and applications. 10 parent queues of 10
leaves each (``root.p0.l0`` ... ``root.p9.l9``), 1,000 applications spread round-robin over the
100 leaves, 10,000 asks (memory 10, vcore 1) spread round-robin over the applications (10
each), on 1,000 nodes of 11 asks' capacity, fair node policy, events on; timed the same way
(--quick: 1,000 asks over 100 applications on 200 nodes, same queues). It is reported in its
own table.

The worker is this module: ``python -m benchmarks.scheduling --worker ...`` prints one
JSON object (see :func:`measure_case`).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Final

from benchmarks.baseline import baseline_environment
from benchmarks.machine import Progress, fmt_ratio, format_table

DEFAULT_NODES: Final = (500, 1_000, 2_000, 5_000)
DEFAULT_ASKS: Final = 10_000
QUICK_NODES: Final = (50, 200)
QUICK_ASKS: Final = 1_000
POLICIES: Final = ("fair", "binpacking")
ORDERINGS: Final = ("native", "python")
DEFAULT_REPEATS: Final = 3
QUICK_REPEATS: Final = 1
YUNIKORN_SHAPE: Final = "yunikorn"
MANY_QUEUES_SHAPE: Final = "many-queues"
SHAPES: Final = (YUNIKORN_SHAPE, MANY_QUEUES_SHAPE)
#: The many-queues shape where every ask plays a role and every role has a history (each of an
#: application's roles ran on other nodes before): role history on (``benchmarks.role_history``).
ROLES_SHAPE: Final = "many-queues-roles"
#: The many-queues shape with preemption armed but never needed (every leaf guaranteed a share,
#: every ask allowed to preempt, room for every ask): preemption enabled, and the same with the
#: partition's preemption.enabled false (``benchmarks.preemption``).
PREEMPTION_ON_SHAPE: Final = "many-queues-preemption"
PREEMPTION_OFF_SHAPE: Final = "many-queues-preemption-off"
#: The many-queues shape where every application is a gang: one placeholder per ask (task group
#: ``tg``, the application's placeholder ask their total), the asks its members; the RM
#: confirms each placeholder's release at once, as a shim does. A run counts the placeholders'
#: allocations plus the members' (the replacements): twice the asks (``benchmarks.gang``).
GANG_SHAPE: Final = "many-queues-gang"
#: The scale shape (issue 17, ``benchmarks.scale``): the many-queues shape at cluster size,
#: 1,000 leaves under 20 parents, 10,000 applications of 10 asks, 50,000 nodes.
SCALE_SHAPE: Final = "scale"
WORKER_SHAPES: Final = (*SHAPES, ROLES_SHAPE, PREEMPTION_ON_SHAPE, PREEMPTION_OFF_SHAPE, GANG_SHAPE, SCALE_SHAPE)
#: Roles per application in the roles shape (ASKS_PER_APP / ROLES_PER_APP instances each).
ROLES_PER_APP: Final = 5


@dataclass(frozen=True)
class QueueTree:
    """Leaf queues ``root.p<i>.l<j>``: ``parents`` parents of ``leaves_per_parent`` leaves."""

    parents: int
    leaves_per_parent: int

    @property
    def leaves(self) -> int:
        return self.parents * self.leaves_per_parent


#: The many-queues shape: its queues, asks per application, asks and nodes (--quick: fewer).
MANY_TREE: Final = QueueTree(parents=10, leaves_per_parent=10)
SCALE_TREE: Final = QueueTree(parents=20, leaves_per_parent=50)
ASKS_PER_APP: Final = 10
MANY_ASKS: Final = 10_000
MANY_NODES: Final = 1_000
QUICK_MANY_ASKS: Final = 1_000
QUICK_MANY_NODES: Final = 200
MANY_POLICY: Final = "fair"

#: YuniKorn Go, BenchmarkScheduling, 6 CPUs (benchmarks.md): nearly flat over node counts.
REFERENCE_GO: Final = 5_400.0
#: YuniKorn Go before its B-tree node index (a full node sort per allocation).
REFERENCE_PRE_BTREE: Final = {500: 360.0, 1_000: 178.0}
TARGET_RATE: Final = 10_000.0
TARGET_NODES: Final = 5_000

RM_ID: Final = "bench"
CONFIG: Final = """
partitions:
  - name: default
    nodesortpolicy: {type: %s}
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
          - name: b
"""



def many_queues_config(policy: str, preemption: bool | None = None, tree: QueueTree = MANY_TREE) -> str:
    """The many-queues shape's configuration: ``root.p<i>.l<j>`` leaves under parent queues
    (``tree``). ``preemption`` (not None): every leaf guaranteed 1 vcore and 10 memory, with the
    partition's preemption switched on or off."""
    lines = ["partitions:", "  - name: default", f"    nodesortpolicy: {{type: {policy}}}"]
    if preemption is not None:
        lines.append(f"    preemption: {{enabled: {str(preemption).lower()}}}")
    lines += ["    queues:", "      - name: root", '        submitacl: "*"', "        queues:"]
    for parent in range(tree.parents):
        lines += [f"          - name: p{parent}", "            queues:"]
        for leaf in range(tree.leaves_per_parent):
            lines.append(f"              - name: l{leaf}")
            if preemption is not None:
                lines.append("                resources: {guaranteed: {vcore: 1, memory: 10}}")
    return "\n".join(lines) + "\n"


def many_queues_leaf(app_index: int, tree: QueueTree = MANY_TREE) -> str:
    """The leaf of the ``app_index``-th application: round-robin over every leaf."""
    leaf = app_index % tree.leaves
    return f"root.p{leaf // tree.leaves_per_parent}.l{leaf % tree.leaves_per_parent}"


if TYPE_CHECKING:
    from pyscheduler.rmproxy.proxy import RMProxy


# --- the worker: one case in this process ---------------------------------------------------


class CountingRM:
    """The benchmark's RM: counts allocations and sets :attr:`done` at the target count.

    New allocations are only ever reported by the scheduling cycle, which runs on one thread
    at a time (the loop's, or the caller's in lockstep), so the counter needs no lock. No
    ``predicates``: an RM without it lets every node pass, as YuniKorn's benchmark RM does.
    """

    def __init__(self, target: int) -> None:
        self.target = target
        self.allocated = 0
        self.rejected = 0
        self.done = threading.Event()

    def update_allocation(self, response: Any) -> None:
        """Counts new allocations (and rejections, which would mean a broken setup)."""
        if response.new:
            self.allocated += len(response.new)
            if self.allocated >= self.target:
                self.done.set()
        if response.rejected_allocations:
            self.rejected += len(response.rejected_allocations)

    def update_application(self, response: Any) -> None:
        """Accepted applications: nothing to do."""

    def update_node(self, response: Any) -> None:
        """Accepted nodes: nothing to do."""

    def send_event(self, events: Any) -> None:
        """Request events: not surfaced anywhere."""

    def update_container_scheduling_state(self, request: Any) -> None:
        """Scheduling-state hints: not used."""


class GangRM(CountingRM):
    """The gang shape's RM: counts placeholders' and members' allocations, and confirms every
    PLACEHOLDER_REPLACED release at once (the placeholder's pod is gone), from the callback as
    an embedded RM may."""

    def __init__(self, target: int) -> None:
        super().__init__(target)
        self.proxy: Any = None

    def update_allocation(self, response: Any) -> None:
        from pyscheduler.si import messages as si

        super().update_allocation(response)
        replaced = tuple(r for r in response.released if r.termination_type == si.TerminationType.PLACEHOLDER_REPLACED)
        if replaced:
            self.proxy.update_allocation(si.AllocationRequest(
                releases=si.AllocationReleasesRequest(allocations_to_release=replaced), rm_id=RM_ID))


@dataclass
class Setup:
    """A core with every node, both applications and every ask submitted."""

    context: Any
    proxy: Any
    rm: CountingRM
    scheduler: Any


def submit_workload(proxy: RMProxy, rm_id: str, nodes: int, asks: int) -> None:
    """YuniKorn's BenchmarkScheduling shape: ``nodes`` nodes of ``asks // nodes + 1`` asks'
    capacity, apps ``app-a`` in root.a and ``app-b`` in root.b, and ``asks`` asks of memory 10,
    vcore 1 split between them. Shared with the REST benchmark's served run."""
    _submit_nodes(proxy, rm_id, nodes, asks)
    _submit_apps(proxy, rm_id, [("app-a", "root.a"), ("app-b", "root.b")])
    _submit_asks(proxy, rm_id, asks, lambda k: "app-a" if k % 2 == 0 else "app-b")


def submit_many_queues(proxy: RMProxy, rm_id: str, nodes: int, asks: int, roles: bool = False,
                       may_preempt: bool = False, gang: bool = False, tree: QueueTree = MANY_TREE,
                       milestone: Callable[[str], None] | None = None) -> None:
    """The many-queues shape: nodes as in :func:`submit_workload`, ``asks // ASKS_PER_APP``
    applications round-robin over the leaves, the asks round-robin over the applications.
    ``roles``: the ``j``-th ask of an application plays role ``r<j % ROLES_PER_APP>``, and
    each role of each application has a history on as many nodes as it has instances (restored
    before the asks arrive, as a restarted scheduler loads it), spread over the cluster.
    ``may_preempt``: every ask may preempt others (``allowPreemptOther``). ``gang``: every
    application a gang (see :data:`GANG_SHAPE`). ``tree``: the leaves (the scale shape's are more).
    ``milestone``: called with "nodes", "applications" and "asks" as each part is in (the scale
    benchmark reads the resident memory there)."""
    step = milestone or (lambda _: None)
    apps = max(1, asks // ASKS_PER_APP)
    _submit_nodes(proxy, rm_id, nodes, asks)
    step("nodes")
    if gang:
        _submit_gangs(proxy, rm_id, apps, asks)
        return
    _submit_apps(proxy, rm_id, [(f"app-{i:04d}", many_queues_leaf(i, tree)) for i in range(apps)])
    step("applications")
    role_of: Callable[[int], str] | None = None
    if roles:
        _restore_histories(proxy, apps, nodes, asks)
        role_of = lambda k: f"r{(k // apps) % ROLES_PER_APP}"  # noqa: E731
    _submit_asks(proxy, rm_id, asks, lambda k: f"app-{k % apps:04d}", role_of, may_preempt)
    step("asks")


def _submit_gangs(proxy: RMProxy, rm_id: str, apps: int, asks: int) -> None:
    """Gang applications (placeholder ask: their asks' total), one placeholder per ask, then
    the asks as members of task group ``tg``."""
    from pyscheduler.common.resources import Resource
    from pyscheduler.si import messages as si

    ask = Resource({"memory": 10, "vcore": 1})
    per_app = [len(range(i, asks, apps)) for i in range(apps)]
    ugi = si.UserGroupInformation(user="bench")
    proxy.update_application(si.ApplicationRequest(new=tuple(
        si.AddApplicationRequest(application_id=f"app-{i:04d}", queue_name=many_queues_leaf(i), partition_name="default",
                                 ugi=ugi, placeholder_ask=Resource({"memory": 10 * n, "vcore": n}))
        for i, n in enumerate(per_app)), rm_id=rm_id))

    def asks_of(prefix: str, placeholder: bool) -> tuple[Any, ...]:
        return tuple(si.Allocation(allocation_key=f"{prefix}-{k:05d}", application_id=f"app-{k % apps:04d}",
                                   partition_name="default", resource_per_alloc=ask, placeholder=placeholder,
                                   task_group_name="tg") for k in range(asks))

    proxy.update_allocation(si.AllocationRequest(allocations=asks_of("ph", True), rm_id=rm_id))
    proxy.update_allocation(si.AllocationRequest(allocations=asks_of("ask", False), rm_id=rm_id))


def _restore_histories(proxy: RMProxy, apps: int, nodes: int, asks: int) -> None:
    from pyscheduler.policies.role_history.file_format import SavedEntry

    entries = []
    for k in range(asks):
        # The j-th ask of application i ran on node (i + 101 j) % nodes: an application's
        # instances on distinct nodes, every node holding the history of as many asks as it
        # has room for.
        i, j = k % apps, k // apps
        node = f"node-{(i + 101 * j) % nodes:05d}"
        entries.append(SavedEntry(f"app-{i:04d}", node, f"r{j % ROLES_PER_APP}", False, 1_700_000_000_000 + k))
    partition = next(iter(proxy.context.partitions.values()))
    with partition.lock:
        partition.role_histories.restore(entries)


def _submit_nodes(proxy: RMProxy, rm_id: str, nodes: int, asks: int) -> None:
    """``nodes`` nodes of ``asks // nodes + 1`` asks' capacity: everything fits."""
    from pyscheduler.common.resources import Resource
    from pyscheduler.si import messages as si

    per_node = asks // nodes + 1
    capacity = Resource({"memory": 10 * per_node, "vcore": per_node})
    proxy.update_node(
        si.NodeRequest(
            nodes=tuple(
                si.NodeInfo(node_id=f"node-{i:05d}", action=si.NodeAction.CREATE, schedulable_resource=capacity)
                for i in range(nodes)
            ),
            rm_id=rm_id,
        )
    )


def _submit_apps(proxy: RMProxy, rm_id: str, apps: Sequence[tuple[str, str]]) -> None:
    """Applications as (application id, queue path), all of user ``bench``."""
    from pyscheduler.si import messages as si

    ugi = si.UserGroupInformation(user="bench")
    proxy.update_application(
        si.ApplicationRequest(
            new=tuple(
                si.AddApplicationRequest(application_id=app_id, queue_name=queue, partition_name="default", ugi=ugi)
                for app_id, queue in apps
            ),
            rm_id=rm_id,
        )
    )


def _submit_asks(proxy: RMProxy, rm_id: str, asks: int, app_of: Callable[[int], str],
                 role_of: Callable[[int], str] | None = None, may_preempt: bool = False) -> None:
    """``asks`` asks of memory 10, vcore 1; ask ``k`` goes to application ``app_of(k)`` (with
    the role ``role_of(k)``, if given)."""
    from pyscheduler.common.resources import Resource
    from pyscheduler.si import messages as si

    ask = Resource({"memory": 10, "vcore": 1})
    policy = si.PreemptionPolicy(allow_preempt_self=True, allow_preempt_other=True) if may_preempt else None
    proxy.update_allocation(
        si.AllocationRequest(
            allocations=tuple(
                si.Allocation(
                    allocation_key=f"ask-{k:05d}",
                    application_id=app_of(k),
                    partition_name="default",
                    resource_per_alloc=ask,
                    allocation_tags={"pyscheduler.io/role": role_of(k)} if role_of is not None else {},
                    preemption_policy=policy,
                )
                for k in range(asks)
            ),
            rm_id=rm_id,
        )
    )


def build(policy: str, nodes: int, asks: int, native: bool, shape: str = YUNIKORN_SHAPE,
          milestone: Callable[[str], None] | None = None) -> Setup:
    """A fresh ClusterContext in the benchmark's ``shape``, with every ask pending (not timed),
    and its (not started) Scheduler. ``milestone``: see :func:`submit_many_queues` (many-queues
    shapes), also called with "core" once the empty core is made."""
    from pyscheduler.si import messages as si
    from pyscheduler.rmproxy.proxy import RMProxy
    from pyscheduler.scheduler.context import ClusterContext
    from pyscheduler.scheduler.loop import Scheduler

    context = ClusterContext(native_node_ordering=native)
    # Made before anything is submitted, as in production: the submissions then leave the
    # loop's wake-up flag set, so start() runs its first cycle at once instead of after the
    # 100 ms idle wait (a Scheduler made after the asks would not know work is pending).
    scheduler = Scheduler(context)
    proxy = RMProxy(context)
    gang = shape == GANG_SHAPE
    rm = GangRM(2 * asks) if gang else CountingRM(asks)
    if isinstance(rm, GangRM):
        rm.proxy = proxy
    preemption = {PREEMPTION_ON_SHAPE: True, PREEMPTION_OFF_SHAPE: False}.get(shape)
    many_queues = shape in (MANY_QUEUES_SHAPE, ROLES_SHAPE, GANG_SHAPE, SCALE_SHAPE) or preemption is not None
    tree = SCALE_TREE if shape == SCALE_SHAPE else MANY_TREE
    config = many_queues_config(policy, preemption, tree) if many_queues else CONFIG % policy
    proxy.register_resource_manager(
        si.RegisterResourceManagerRequest(rm_id=RM_ID, policy_group="default", config=config), rm
    )
    if milestone is not None:
        milestone("core")
    if many_queues:
        submit_many_queues(proxy, RM_ID, nodes, asks, roles=shape == ROLES_SHAPE, may_preempt=preemption is not None,
                           gang=gang, tree=tree, milestone=milestone)
    else:
        submit_workload(proxy, RM_ID, nodes, asks)
    return Setup(context, proxy, rm, scheduler)


def allocate_in_lockstep(setup: Setup, allocations: int) -> int:
    """One ``schedule_once`` at a time until ``allocations`` allocations (bounded: one allocation
    per cycle, so twice as many cycles at most); the allocations made."""
    schedule_once = setup.scheduler.schedule_once
    for _ in range(2 * allocations + 1):
        if setup.rm.allocated >= allocations or not schedule_once():
            break
    return int(setup.rm.allocated)


def _events_created(context: Any) -> tuple[int, int]:
    """(events created, events dropped) so far, after the pipeline has caught up."""
    context.event_system.flush(30.0)
    stats = context.event_system.stats()
    return stats.created, stats.dropped


def measure_threaded(policy: str, nodes: int, asks: int, native: bool, timeout: float,
                     shape: str = YUNIKORN_SHAPE, milestone: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The headline: the real scheduling loop, started after submission, until the RM has
    every allocation (or ``timeout`` seconds). ``milestone``: see :func:`build`, and called with
    "scheduled" after the run, the core still holding every allocation."""
    setup = build(policy, nodes, asks, native, shape, milestone)
    scheduler = setup.scheduler
    created_before, dropped_before = _events_created(setup.context)
    gc.collect()
    started = time.perf_counter()
    scheduler.start()
    finished = setup.rm.done.wait(timeout)
    seconds = time.perf_counter() - started
    scheduler.stop()
    created_after, dropped_after = _events_created(setup.context)
    if milestone is not None:
        milestone("scheduled")
    setup.proxy.stop()
    return _result(setup.rm, setup.rm.target, seconds, scheduler.cycles, finished, timeout,
                   created_after - created_before, dropped_after - dropped_before)


def measure_lockstep(policy: str, nodes: int, asks: int, native: bool, timeout: float,
                     shape: str = YUNIKORN_SHAPE) -> dict[str, Any]:
    """The same run, one ``schedule_once`` at a time on this thread."""
    setup = build(policy, nodes, asks, native, shape)
    scheduler = setup.scheduler
    created_before, dropped_before = _events_created(setup.context)
    gc.collect()
    deadline = time.monotonic() + timeout
    schedule_once = scheduler.schedule_once
    rm = setup.rm
    started = time.perf_counter()
    while rm.allocated < rm.target:
        if not schedule_once() or time.monotonic() > deadline:
            break
    seconds = time.perf_counter() - started
    created_after, dropped_after = _events_created(setup.context)
    setup.proxy.stop()
    return _result(rm, rm.target, seconds, scheduler.cycles, rm.allocated >= rm.target, timeout,
                   created_after - created_before, dropped_after - dropped_before)


def _result(rm: CountingRM, asks: int, seconds: float, cycles: int, finished: bool, timeout: float,
            events: int, dropped: int) -> dict[str, Any]:
    error = None
    if not finished:
        error = f"{rm.allocated} of {asks} allocations after {seconds:.1f} s (timeout {timeout:g} s)"
    elif rm.rejected:
        error = f"{rm.rejected} asks rejected"
    return {
        "allocations": rm.allocated,
        "seconds": seconds,
        "rate": rm.allocated / seconds if seconds > 0 else 0.0,
        "cycles": cycles,
        "events": events,
        "events_dropped": dropped,
        "error": error,
    }


def measure_case(policy: str, nodes: int, asks: int, native: bool, timeout: float,
                 shape: str = YUNIKORN_SHAPE) -> dict[str, Any]:
    """Both figures of one case, each in its own fresh ClusterContext (threaded first, so the
    headline runs in the cleanest process)."""
    threaded = measure_threaded(policy, nodes, asks, native, timeout, shape)
    gc.collect()
    lockstep = measure_lockstep(policy, nodes, asks, native, timeout, shape)
    return {"threaded": threaded, "lockstep": lockstep}


def case_timeout(asks: int) -> float:
    """Seconds a timed run may take: generous (a loaded machine), but bounded."""
    return max(60.0, asks / 50)


# --- the parent: cases in subprocesses --------------------------------------------------------


@dataclass
class CaseResult:
    """One case (shape x policy x nodes x ordering): medians over the repeats, and every sample."""

    policy: str
    nodes: int
    asks: int
    ordering: str
    shape: str = YUNIKORN_SHAPE
    threaded_rate: float | None = None
    threaded_seconds: float | None = None
    lockstep_rate: float | None = None
    lockstep_seconds: float | None = None
    #: Events created during a timed run (the median run's), and dropped: proof events were on.
    events: int | None = None
    events_dropped: int | None = None
    samples: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    #: The --baseline directory whose core ran this case (None: this checkout's core).
    baseline: str | None = None


@dataclass
class SchedulingReport:
    """Everything the scheduling benchmark found."""

    asks: int
    nodes: list[int]
    policies: list[str]
    repeats: int
    isolation: str
    shapes: list[str] = field(default_factory=lambda: list(SHAPES))
    cases: list[CaseResult] = field(default_factory=list)
    reference_go: float = REFERENCE_GO
    reference_pre_btree: dict[int, float] = field(default_factory=lambda: dict(REFERENCE_PRE_BTREE))
    target: str = f">= {TARGET_RATE:,.0f} allocations/s at {TARGET_NODES:,} nodes, events on (threaded, native)"
    target_met: dict[str, bool] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    #: --baseline: the many-queues case on the baseline's core and on this one, alternating.
    baseline_pair: list[CaseResult] = field(default_factory=list)

    def case(self, policy: str, nodes: int, ordering: str, shape: str = YUNIKORN_SHAPE) -> CaseResult | None:
        """The measured case, if any."""
        for case in self.cases:
            if (case.shape, case.policy, case.nodes, case.ordering) == (shape, policy, nodes, ordering) \
                    and case.baseline is None:
                return case
        return None

    def shape_cases(self, shape: str) -> list[CaseResult]:
        """The measured cases of one shape, in measurement order."""
        return [case for case in self.cases if case.shape == shape]

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable results."""
        data = asdict(self)
        data["reference_pre_btree"] = {str(k): v for k, v in self.reference_pre_btree.items()}
        return data

    def format(self) -> str:
        """The report as markdown."""
        return format_report(self)


def run_worker(policy: str, nodes: int, asks: int, ordering: str, timeout: float,
               shape: str = YUNIKORN_SHAPE, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Runs one case in a fresh Python process and returns its :func:`measure_case` result
    (``env``: a baseline's, see ``benchmarks.baseline``)."""
    command = [
        sys.executable, "-m", "benchmarks.scheduling", "--worker",
        "--policy", policy, "--nodes", str(nodes), "--asks", str(asks), "--ordering", ordering,
        "--timeout", str(timeout), "--shape", shape,
    ]
    # Setup, two timed runs and their flushes: bounded well above what they should take.
    return run_json_worker(command, 4 * timeout + 120, env)


def run_json_worker(command: Sequence[str], timeout: float, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Runs a worker process (bounded by ``timeout`` seconds; ``env``: its environment, e.g. a
    baseline's, see ``benchmarks.baseline``) and returns the JSON object of its last output line;
    RuntimeError with the end of its stderr when it fails."""
    done = subprocess.run(list(command), capture_output=True, text=True, timeout=timeout, check=False,
                          env=None if env is None else dict(env))
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = " | ".join(done.stderr.strip().splitlines()[-3:])
        raise RuntimeError(f"worker exited with {done.returncode}: {tail or 'no output'}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def alternating_rates(shapes: Sequence[str], *, quick: bool, repeats: int, family: str,
                      rates: dict[str, list[float]], failures: list[str], progress: Callable[[str], None],
                      swap: bool = False, lockstep: dict[str, list[float]] | None = None) -> None:
    """Threaded allocations/s of many-queues shape variants (fair, native), each run in a fresh
    subprocess, ``repeats`` times in turn (``swap``: the order reversed every other repeat, so
    neither variant always runs first); each run's rate goes to ``rates[shape]``, a failed run
    to ``failures``; the same run's lockstep rate (one thread, no waits: much less noise) to
    ``lockstep[shape]`` when given."""
    nodes = QUICK_MANY_NODES if quick else MANY_NODES
    asks = QUICK_MANY_ASKS if quick else MANY_ASKS
    for repeat in range(repeats):
        order = list(reversed(shapes)) if swap and repeat % 2 else list(shapes)
        for shape in order:
            progress(f"{family}: scheduling, {shape}, run {repeat + 1} of {repeats}")
            try:
                sample = run_worker("fair", nodes, asks, "native", case_timeout(asks), shape)
            except Exception as exc:
                failures.append(f"scheduling {shape}: {type(exc).__name__}: {exc}")
                continue
            threaded = sample["threaded"]
            if threaded["error"]:
                failures.append(f"scheduling {shape}: {threaded['error']}")
                continue
            rates.setdefault(shape, []).append(threaded["rate"])
            if lockstep is not None and not sample["lockstep"]["error"]:
                lockstep.setdefault(shape, []).append(sample["lockstep"]["rate"])


def median_rate(rates: dict[str, list[float]], shape: str) -> float | None:
    """The median of a shape's runs, None without any."""
    runs = rates.get(shape) or []
    return statistics.median(runs) if runs else None


def rate_ratio(rates: dict[str, list[float]], numerator: str, denominator: str) -> float | None:
    """Ratio of two shapes' median rates (same run), None when either is missing."""
    top, bottom = median_rate(rates, numerator), median_rate(rates, denominator)
    return top / bottom if top and bottom else None


def _median_sample(samples: Sequence[dict[str, Any]], mode: str) -> dict[str, Any] | None:
    ok = sorted((s[mode] for s in samples if not s[mode]["error"]), key=lambda r: r["rate"])
    return ok[len(ok) // 2] if ok else None


def measure(
    policy: str, nodes: int, asks: int, ordering: str, repeats: int, isolate: bool = True,
    shape: str = YUNIKORN_SHAPE,
) -> CaseResult:
    """One case, ``repeats`` times (each in a fresh subprocess unless ``isolate`` is False)."""
    case = CaseResult(policy=policy, nodes=nodes, asks=asks, ordering=ordering, shape=shape)
    timeout = case_timeout(asks)
    for _ in range(repeats):
        if isolate:
            sample = run_worker(policy, nodes, asks, ordering, timeout, shape)
        else:
            sample = measure_case(policy, nodes, asks, ordering == "native", timeout, shape)
        case.samples.append(sample)
    _summarise(case)
    return case


def measure_against_baseline(policy: str, nodes: int, asks: int, repeats: int, shape: str,
                             baseline: str) -> tuple[CaseResult, CaseResult]:
    """One case (native ordering) on the baseline's core and on this one, alternating fresh
    subprocesses ``repeats`` times (the baseline first each time): (baseline, this)."""
    env = baseline_environment(baseline)
    then = CaseResult(policy=policy, nodes=nodes, asks=asks, ordering="native", shape=shape, baseline=baseline)
    now = CaseResult(policy=policy, nodes=nodes, asks=asks, ordering="native", shape=shape)
    timeout = case_timeout(asks)
    for _ in range(repeats):
        for case, side_env in ((then, env), (now, None)):
            try:
                case.samples.append(run_worker(policy, nodes, asks, "native", timeout, shape, side_env))
            except Exception as exc:  # reported with the case, the other side still runs
                case.error = f"{type(exc).__name__}: {exc}"
    for case in (then, now):
        _summarise(case)
    return then, now


def _summarise(case: CaseResult) -> None:
    """The case's medians and errors from its samples."""
    threaded = _median_sample(case.samples, "threaded")
    lockstep = _median_sample(case.samples, "lockstep")
    if threaded is not None:
        case.threaded_rate, case.threaded_seconds = threaded["rate"], threaded["seconds"]
        case.events, case.events_dropped = threaded["events"], threaded["events_dropped"]
    if lockstep is not None:
        case.lockstep_rate, case.lockstep_seconds = lockstep["rate"], lockstep["seconds"]
    errors = sorted({r["error"] for s in case.samples for r in s.values() if r["error"]})
    if errors:
        case.error = "; ".join([*([case.error] if case.error else []), *errors])


def run(
    *,
    nodes: Sequence[int] = DEFAULT_NODES,
    asks: int = DEFAULT_ASKS,
    policies: Sequence[str] = POLICIES,
    orderings: Sequence[str] = ORDERINGS,
    repeats: int = DEFAULT_REPEATS,
    isolate: bool = True,
    shapes: Sequence[str] = SHAPES,
    many_nodes: int = MANY_NODES,
    many_asks: int = MANY_ASKS,
    baseline: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> SchedulingReport:
    """Runs every case of the selected shapes and returns the report: the YuniKorn shape for
    every policy x node count x ordering, the many-queues shape (fair, ``many_nodes`` nodes,
    ``many_asks`` asks) for every ordering."""
    if progress is None:
        progress = Progress()
    report = SchedulingReport(
        asks=asks,
        nodes=list(nodes),
        policies=list(policies),
        repeats=repeats,
        isolation="one fresh subprocess per case and repeat" if isolate else "in process (fresh ClusterContext per run)",
        shapes=list(shapes),
    )
    if YUNIKORN_SHAPE in shapes:
        for policy in policies:
            for count in nodes:
                for ordering in orderings:
                    _measure_into(report, YUNIKORN_SHAPE, policy, count, asks, ordering, isolate, progress)
    if MANY_QUEUES_SHAPE in shapes:
        for ordering in orderings:
            _measure_into(report, MANY_QUEUES_SHAPE, MANY_POLICY, many_nodes, many_asks, ordering, isolate, progress)
        if baseline is not None:
            progress(f"scheduling ({MANY_QUEUES_SHAPE}): this core against the baseline {baseline}, x{repeats}")
            pair = measure_against_baseline(MANY_POLICY, many_nodes, many_asks, repeats, MANY_QUEUES_SHAPE, baseline)
            for case in pair:
                if case.error:
                    report.failures.append(f"{MANY_QUEUES_SHAPE}/{'baseline' if case.baseline else 'this'}: {case.error}")
            report.baseline_pair = list(pair)
    for policy in policies:
        case = report.case(policy, TARGET_NODES, "native")
        if case is not None and case.threaded_rate is not None:
            report.target_met[policy] = case.threaded_rate >= TARGET_RATE
    return report


def _measure_into(report: SchedulingReport, shape: str, policy: str, nodes: int, asks: int, ordering: str,
                  isolate: bool, progress: Callable[[str], None]) -> None:
    """Measures one case and adds it (or its failure) to the report."""
    repeats = report.repeats
    progress(f"scheduling ({shape}): {policy}, {nodes:,} nodes, {asks:,} asks, {ordering} ordering, x{repeats}")
    try:
        case = measure(policy, nodes, asks, ordering, repeats, isolate, shape)
    except Exception as exc:  # one broken case must not hide the others
        case = CaseResult(policy=policy, nodes=nodes, asks=asks, ordering=ordering, shape=shape,
                          error=f"{type(exc).__name__}: {exc}")
    if case.error:
        prefix = "" if shape == YUNIKORN_SHAPE else f"{shape}/"
        report.failures.append(f"{prefix}{policy}/{nodes} nodes/{ordering}: {case.error}")
    report.cases.append(case)


# --- formatting ---------------------------------------------------------------------------------


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _ratio(a: float | None, b: float | None) -> str:
    return fmt_ratio(a / b if a is not None and b else None)


def format_report(report: SchedulingReport) -> str:
    """Markdown: a table per measured shape."""
    parts = []
    if YUNIKORN_SHAPE in report.shapes:
        parts.append(_format_yunikorn(report))
    if MANY_QUEUES_SHAPE in report.shapes:
        parts.append(_format_many_queues(report))
    if report.failures:
        parts.append("\n".join(["FAILURES:", *(f"- {failure}" for failure in report.failures)]))
    return "\n\n".join(parts)


def _events(case: CaseResult | None) -> str:
    return "-" if case is None or case.events is None else f"{case.events:,} ({case.events_dropped:,} dropped)"


def _format_yunikorn(report: SchedulingReport) -> str:
    """One row per policy and node count, native and pure-Python side by side."""
    rows = []
    for policy in report.policies:
        for nodes in report.nodes:
            native = report.case(policy, nodes, "native")
            python = report.case(policy, nodes, "python")
            n_thr = native.threaded_rate if native else None
            p_thr = python.threaded_rate if python else None
            pre = report.reference_pre_btree.get(nodes)
            rows.append([
                policy,
                f"{nodes:,}",
                _rate(n_thr),
                _rate(native.lockstep_rate if native else None),
                _rate(p_thr),
                _rate(python.lockstep_rate if python else None),
                _ratio(n_thr, p_thr),
                _ratio(native.lockstep_rate if native else None, python.lockstep_rate if python else None),
                _ratio(n_thr, report.reference_go),
                f"{_ratio(n_thr, pre)} (Go {pre:,.0f}/s)" if pre else "-",
                _events(native),
            ])
    parts = [
        "## Scheduling throughput (benchmarks.md section 3, YuniKorn's BenchmarkScheduling shape)",
        "",
        f"{report.asks:,} asks (memory 10, vcore 1) over two apps in root.a and root.b; nodes sized "
        f"(asks / nodes + 1) asks; events on. Allocations per second from 'every ask submitted' to 'the RM "
        f"callback has every allocation'. threaded: the real scheduling loop, started after submission "
        f"(headline); lockstep: schedule_once in a loop. {report.isolation}; median of {report.repeats}. "
        "The machine may be shared: compare ratios from the same run.",
        "",
        format_table(
            [
                "policy", "nodes", "native threaded /s", "native lockstep /s", "python threaded /s",
                "python lockstep /s", "native/python threaded", "native/python lockstep", "vs Go 5,400/s",
                "vs Go pre-B-tree", "events in the timed run",
            ],
            rows,
            align="lrrrrrrrrrr",
        ),
        "",
        f"Reference: YuniKorn Go ~{report.reference_go:,.0f} allocations/s on 6 CPUs, flat 500-5,000 nodes; "
        "before its B-tree node index 360/s at 500 nodes and 178/s at 1,000.",
    ]
    if report.target_met:
        verdicts = []
        for policy, met in report.target_met.items():
            case = report.case(policy, TARGET_NODES, "native")
            rate = case.threaded_rate if case else None
            verdicts.append(f"{policy} {_rate(rate)}/s {'met' if met else 'NOT met'}")
        parts.append(f"Target {report.target}: " + "; ".join(verdicts) + ".")
    else:
        parts.append(f"Target {report.target}: not measured in this run ({TARGET_NODES:,} nodes not among the sizes).")
    return "\n".join(parts)


def _format_many_queues(report: SchedulingReport) -> str:
    """One row per node ordering of the many-queues shape."""
    rows = [
        [
            case.ordering,
            case.policy,
            f"{case.nodes:,}",
            f"{case.asks:,}",
            f"{max(1, case.asks // ASKS_PER_APP):,}",
            _rate(case.threaded_rate),
            _rate(case.lockstep_rate),
            _events(case),
        ]
        for case in report.shape_cases(MANY_QUEUES_SHAPE)
    ]
    baseline_lines: list[str] = []
    if report.baseline_pair:
        then, now = report.baseline_pair
        baseline_lines = [
            "",
            f"Against the baseline {then.baseline} (same workload code, that core; native ordering, alternating fresh "
            f"subprocesses, median of {report.repeats}): threaded {_rate(then.threaded_rate)} -> {_rate(now.threaded_rate)}"
            f"/s ({_ratio(now.threaded_rate, then.threaded_rate)}), lockstep {_rate(then.lockstep_rate)} -> "
            f"{_rate(now.lockstep_rate)}/s ({_ratio(now.lockstep_rate, then.lockstep_rate)}).",
        ]
    leaves = MANY_TREE.leaves
    return "\n".join([
        "## Scheduling throughput, many queues and applications",
        "",
        f"{MANY_TREE.parents} parent queues x {MANY_TREE.leaves_per_parent} leaves ({leaves} leaf queues); applications "
        f"({ASKS_PER_APP} asks each) round-robin over the leaves; asks (memory 10, vcore 1) round-robin over the "
        f"applications; nodes sized (asks / nodes + 1) asks; events on. Timed as above; {report.isolation}; "
        f"median of {report.repeats}.",
        "",
        format_table(
            ["ordering", "policy", "nodes", "asks", "apps", "threaded /s", "lockstep /s", "events in the timed run"],
            rows,
            align="llrrrrrr",
        ),
        *baseline_lines,
    ])


# --- the worker's command line -------------------------------------------------------------------


def worker_main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchmarks.scheduling --worker ...``: one case, one JSON line out."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scheduling")
    parser.add_argument("--worker", action="store_true", required=True, help="run one case and print JSON")
    parser.add_argument("--policy", choices=POLICIES, required=True)
    parser.add_argument("--nodes", type=int, required=True)
    parser.add_argument("--asks", type=int, default=DEFAULT_ASKS)
    parser.add_argument("--ordering", choices=ORDERINGS, default="native")
    parser.add_argument("--timeout", type=float, default=None)
    parser.add_argument("--shape", choices=WORKER_SHAPES, default=YUNIKORN_SHAPE)
    args = parser.parse_args(argv)
    timeout = args.timeout if args.timeout is not None else case_timeout(args.asks)
    result = measure_case(args.policy, args.nodes, args.asks, args.ordering == "native", timeout, args.shape)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(worker_main())
