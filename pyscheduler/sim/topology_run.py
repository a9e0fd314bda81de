"""Plays a workload's ``topology`` section (issue 34) against a fresh core, with topology
placement and without, and summarises what each did to the gangs.

:func:`run_topology` plays the section's gangs once, in lockstep (a
:class:`~pyscheduler.common.clock.ManualClock`, one :meth:`schedule_once` at a time, the clock
jumping to the next event when a cycle places nothing: exactly repeatable). The RM:

- registers one partition whose ``topology.levels`` are the section's three labels (in both
  variants: the same nodes, the same index) with a FIFO leaf ``root.gangs`` and the policy asked;
- creates the nodes with their zone, block and rack labels;
- submits each gang at its arrival: an application with its placeholder ask (the members' sum,
  a placeholder timeout of a day: it never fires) and, when ``tagged``, the tag
  ``pyscheduler.io/topology-required: <its level's label>``; then one placeholder ask per member
  (task group ``workers``), all at once;
- once every placeholder of a gang is placed, the gang runs: the placeholders stand for its
  members (the core replaces a placeholder in place, on its node: the domain is the same), and
  after the gang's run time the RM releases them and removes the application.

Recorded per gang: submission to its last placeholder placed (the waiting time), and the racks,
blocks and domains of its required level its placeholders landed in. Fragmentation: the free
nodes (no placeholder) stranded in partly used racks (some node used, some free), integrated over
simulated time up to the last gang placed: its time-weighted mean, and its share of the free nodes.

With ``until_placed`` the run ends once every gang is placed (nothing is released): what the
``topology`` benchmark family times (:func:`placement_rate`).
"""

from __future__ import annotations

import heapq
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from pyscheduler.common import native as native_switch
from pyscheduler.common.clock import ManualClock
from pyscheduler.common.resources import MEMORY, VCORE, Resource
from pyscheduler.common.text_table import format_table
from pyscheduler.service import CoreOptions, SchedulerService
from pyscheduler.si import messages as si
from pyscheduler.si.events import EventRecord
from pyscheduler.si.vocabulary import APP_TAG_TOPOLOGY_REQUIRED
from pyscheduler.sim.rm_messages import RM_ID, USER, release_message
from pyscheduler.sim.runner import percentile
from pyscheduler.sim.timeline import START_NS
from pyscheduler.sim.topology_spec import TopologyGang, TopologySpec
from pyscheduler.sim.workload import WorkloadSpec

__all__ = ["TopologySummary", "describe_topology", "format_topology", "run_topology", "run_topology_pair"]

QUEUE: Final = "root.gangs"
#: A placeholder timeout that never fires within a run (a day, in milliseconds).
_NEVER_MS: Final = 86_400_000
_RELEASE, _SUBMIT = 0, 1


@dataclass
class TopologySummary:
    """One run: ``tagged`` (topology placement) or not, and its gang figures (seconds simulated
    unless named wall)."""

    tagged: bool
    policy: str
    gangs: int
    placed: int = 0
    in_one_rack: int = 0
    in_one_block: int = 0
    #: Gangs whose placeholders all landed in one domain of the level each required.
    in_required_domain: int = 0
    wait_p50: float = 0.0
    wait_p99: float = 0.0
    wait_max: float = 0.0
    #: Time-weighted mean of the free nodes stranded in partly used racks, and of all free nodes.
    stranded_mean: float = 0.0
    free_mean: float = 0.0
    sim_seconds: float = 0.0
    #: Wall seconds from the first submission to the last gang placed, and the whole run.
    placement_wall_seconds: float = 0.0
    wall_seconds: float = 0.0
    cycles: int = 0
    completed: bool = False
    problems: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{'topology' if self.tagged else 'no topology'} ({self.policy})"

    @property
    def stranded_share(self) -> float:
        """Of the free nodes, the share stranded in partly used racks (time-weighted)."""
        return self.stranded_mean / self.free_mean if self.free_mean else 0.0

    @property
    def gangs_per_second(self) -> float:
        """Gangs placed per wall second of placement."""
        return self.placed / self.placement_wall_seconds if self.placement_wall_seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(label=self.label, stranded_share=self.stranded_share, gangs_per_second=self.gangs_per_second)
        return data


class _TopologyRM:
    """The RM callback and the run's bookkeeping (one thread: lockstep)."""

    def __init__(self, spec: WorkloadSpec, *, tagged: bool, policy: str, until_placed: bool) -> None:
        self.topology = topo = spec.topology
        self.spec = spec
        self.tagged = tagged
        self.until_placed = until_placed
        self.gangs = {g.app_id: g for g in topo.gangs(spec.seed)}
        self.summary = TopologySummary(tagged=tagged, policy=policy, gangs=len(self.gangs))
        self.clock = ManualClock(START_NS)
        self.service = SchedulerService(CoreOptions(
            clock=self.clock, native_node_ordering=native_switch.enabled(), scheduling_loop=False,
            background=False, history=False))
        self.events: list[tuple[float, int, int, str]] = []
        self._seq = 0
        self.submitted_at: dict[str, float] = {}
        self.nodes_of: dict[str, list[str]] = {}  # gang -> nodes of its placed placeholders
        self.releasing: set[str] = set()
        self.waits: list[float] = []
        self.done = 0  # gangs released (or placed, until_placed)
        # Node -> its (zone, block, rack); per rack, nodes used; node -> placeholders on it.
        self.domains: dict[str, tuple[str, str, str]] = {}
        self.rack_used: dict[str, int] = {}
        self.node_load: dict[str, int] = {}
        self.stranded = 0
        self.free = topo.node_count
        self._area_at = 0.0
        self._stranded_area = 0.0
        self._free_area = 0.0
        self._placement_started = 0.0

    # -- the RM callback ------------------------------------------------------------------------

    def update_allocation(self, response: si.AllocationResponse) -> None:
        now = self.clock.monotonic()
        for alloc in response.new:
            app_id = alloc.application_id
            nodes = self.nodes_of.setdefault(app_id, [])
            nodes.append(alloc.node_id)
            self._load(now, alloc.node_id, 1)
            gang = self.gangs[app_id]
            if len(nodes) == gang.members:
                self._gang_placed(now, gang, nodes)
        for release in response.released:
            if release.allocation_key in self.releasing:
                self.releasing.discard(release.allocation_key)
            else:
                self.summary.problems.append(f"the core released {release.allocation_key}: {release.message}")
        for rejected in response.rejected_allocations:
            self.summary.problems.append(f"ask {rejected.allocation_key} rejected: {rejected.reason}")

    def update_application(self, response: si.ApplicationResponse) -> None:
        for rejected in response.rejected:
            self.summary.problems.append(f"application {rejected.application_id} rejected: {rejected.reason}")

    def update_node(self, response: si.NodeResponse) -> None:
        for rejected in response.rejected:
            self.summary.problems.append(f"node {rejected.node_id} rejected: {rejected.reason}")

    def send_event(self, events: Sequence[EventRecord]) -> None:
        """The simulation has no pods to show events on."""

    def update_container_scheduling_state(self, request: si.UpdateContainerSchedulingStateRequest) -> None:
        """Autoscaler hints; the simulated cluster does not scale."""

    # -- bookkeeping ------------------------------------------------------------------------------

    def _push(self, at: float, kind: int, app_id: str) -> None:
        self._seq += 1
        heapq.heappush(self.events, (at, kind, self._seq, app_id))

    def _gang_placed(self, now: float, gang: TopologyGang, nodes: list[str]) -> None:
        s = self.summary
        s.placed += 1
        self.waits.append(now - self.submitted_at[gang.app_id])
        racks = {self.domains[n][2] for n in nodes}
        blocks = {self.domains[n][1] for n in nodes}
        s.in_one_rack += len(racks) == 1
        s.in_one_block += len(blocks) == 1
        s.in_required_domain += len({self.domains[n][gang.level] for n in nodes}) == 1
        if s.placed == s.gangs:
            self._integrate(now)  # fragmentation: up to the last gang placed
            s.placement_wall_seconds = time.perf_counter() - self._placement_started
        if self.until_placed:
            self.done += 1
        else:
            self._push(now + gang.run_time, _RELEASE, gang.app_id)

    def _integrate(self, now: float) -> None:
        elapsed = now - self._area_at
        if elapsed > 0:
            self._stranded_area += self.stranded * elapsed
            self._free_area += self.free * elapsed
            self._area_at = now

    def _load(self, now: float, node_id: str, change: int) -> None:
        """One placeholder more (1) or less (-1) on ``node_id``: the free and stranded counts."""
        if self.summary.placed < self.summary.gangs:
            self._integrate(now)
        before = self.node_load.get(node_id, 0)
        after = self.node_load[node_id] = before + change
        if (before == 0) == (after == 0):
            return
        rack = self.domains[node_id][2]
        size = self.topology.nodes
        used_before = self.rack_used.get(rack, 0)
        used = self.rack_used[rack] = used_before + (1 if after else -1)
        self.free += -1 if after else 1
        self.stranded += _stranded(used, size) - _stranded(used_before, size)

    # -- driving the core -----------------------------------------------------------------------

    def setup(self) -> None:
        topo = self.topology
        self.service.proxy.register_resource_manager(
            si.RegisterResourceManagerRequest(rm_id=RM_ID, version="sim", policy_group="sim",
                                              config=self._queues_yaml()), self)
        capacity = Resource({MEMORY: self.spec.node_memory, VCORE: self.spec.node_vcore})
        nodes: list[si.NodeInfo] = []
        for z in range(topo.zones):
            for b in range(topo.blocks):
                for r in range(topo.racks):
                    labels = (f"z{z}", f"z{z}-b{b}", f"z{z}-b{b}-r{r}")
                    for n in range(topo.nodes):
                        node_id = f"{labels[2]}-n{n}"
                        self.domains[node_id] = labels
                        attributes = {si.HOST_NAME: node_id, **dict(zip(topo.levels, labels, strict=True))}
                        nodes.append(si.NodeInfo(node_id=node_id, action=si.NodeAction.CREATE, attributes=attributes,
                                                 schedulable_resource=capacity))
        self.service.proxy.update_node(si.NodeRequest(nodes=tuple(nodes), rm_id=RM_ID))
        for gang in self.gangs.values():
            self._push(gang.arrival, _SUBMIT, gang.app_id)

    def _queues_yaml(self) -> str:
        # JSON is YAML.
        return json.dumps({"partitions": [{
            "name": "default", "nodesortpolicy": {"type": self.summary.policy}, "preemption": {"enabled": False},
            "topology": {"levels": list(self.topology.levels)},
            "queues": [{"name": "root", "submitacl": "*", "queues": [
                {"name": QUEUE.split(".")[1], "properties": {"application.sort.policy": "fifo"}}]}],
        }]})

    def apply(self, now: float) -> None:
        """Sends what fell due: releases and removals, then arrivals."""
        if not self.events or self.events[0][0] > now:
            return
        releases: list[si.AllocationRelease] = []
        removals: list[si.RemoveApplicationRequest] = []
        new: list[si.AddApplicationRequest] = []
        asks: list[si.Allocation] = []
        memory, vcore = self.topology.member_size(self.spec.node_memory, self.spec.node_vcore)
        member = Resource({MEMORY: memory, VCORE: vcore})
        while self.events and self.events[0][0] <= now:
            _, kind, _, app_id = heapq.heappop(self.events)
            gang = self.gangs[app_id]
            if kind == _RELEASE:
                for i, node_id in enumerate(self.nodes_of[app_id]):
                    self._load(now, node_id, -1)
                    key = f"{app_id}-ph{i}"
                    self.releasing.add(key)
                    releases.append(release_message(app_id, key, si.TerminationType.STOPPED_BY_RM, "gang done"))
                removals.append(si.RemoveApplicationRequest(application_id=app_id, partition_name="default"))
                self.done += 1
                continue
            self.submitted_at[app_id] = now
            level = self.topology.levels[gang.level]
            new.append(si.AddApplicationRequest(
                application_id=app_id, queue_name=QUEUE, partition_name="default",
                ugi=si.UserGroupInformation(user=USER),
                tags={APP_TAG_TOPOLOGY_REQUIRED: level} if self.tagged else {},
                placeholder_ask=Resource({MEMORY: memory * gang.members, VCORE: vcore * gang.members}),
                gang_scheduling_style="Soft", execution_timeout_milli_seconds=_NEVER_MS))
            asks += [si.Allocation(allocation_key=f"{app_id}-ph{i}", resource_per_alloc=member, application_id=app_id,
                                   partition_name="default", placeholder=True, task_group_name="workers")
                     for i in range(gang.members)]
        proxy = self.service.proxy
        if releases:
            proxy.update_allocation(si.AllocationRequest(releases=si.AllocationReleasesRequest(tuple(releases)),
                                                         rm_id=RM_ID))
        if removals:
            proxy.update_application(si.ApplicationRequest(remove=tuple(removals), rm_id=RM_ID))
        if new:
            proxy.update_application(si.ApplicationRequest(new=tuple(new), rm_id=RM_ID))
        if asks:
            proxy.update_allocation(si.AllocationRequest(allocations=tuple(asks), rm_id=RM_ID))

    def run(self, timeout: float) -> TopologySummary:
        started = time.perf_counter()
        deadline = time.monotonic() + timeout
        s = self.summary
        scheduler = self.service.scheduler
        try:
            self.setup()
            self.service.start()  # no thread: the cycles run here
            self._placement_started = time.perf_counter()
            self._loop(deadline, scheduler.schedule_once)
        finally:
            self.service.stop()
            s.wall_seconds = time.perf_counter() - started
            s.cycles = scheduler.cycles
        s.sim_seconds = self.clock.monotonic()
        ordered = sorted(self.waits)
        s.wait_p50, s.wait_p99 = percentile(ordered, 50), percentile(ordered, 99)
        s.wait_max = ordered[-1] if ordered else 0.0
        span = self._area_at
        s.stranded_mean = self._stranded_area / span if span > 0 else 0.0
        s.free_mean = self._free_area / span if span > 0 else float(self.free)
        s.completed = self.done == s.gangs and not s.problems
        return s

    def _loop(self, deadline: float, schedule_once: Callable[[], Sequence[object]]) -> None:
        clock = self.clock
        cycle_time = self.spec.cycle_time
        iterations = 0
        while True:
            self.apply(clock.monotonic())
            if self.done == self.summary.gangs:
                return
            iterations += 1
            if iterations % 256 == 0 and time.monotonic() > deadline:
                self.summary.problems.append("timed out (wall clock) before every gang finished")
                return
            if cycle_time:
                clock.advance(cycle_time)
            if schedule_once():
                continue
            if not self.events:
                self.summary.problems.append(f"stuck: {self.summary.gangs - self.summary.placed} gangs can never "
                                             "be placed (the scheduler is idle and nothing runs)")
                return
            wait = self.events[0][0] - (clock.monotonic())
            if wait > 0:
                clock.advance(wait)


def _stranded(used: int, size: int) -> int:
    """Free nodes of a rack of ``size`` with ``used`` nodes in use that are stranded (the rack
    is partly used)."""
    return size - used if 0 < used < size else 0


def run_topology(spec: WorkloadSpec, *, tagged: bool, policy: str = "binpacking", until_placed: bool = False,
                 timeout: float = 600.0) -> TopologySummary:
    """Plays ``spec.topology`` once (see the module doc); raises ValueError without a topology section."""
    if not spec.topology.count:
        raise ValueError("the workload has no topology section (topology.count is 0)")
    return _TopologyRM(spec, tagged=tagged, policy=policy, until_placed=until_placed).run(timeout)


def run_topology_pair(spec: WorkloadSpec, *, policy: str = "binpacking",
                      timeout: float = 600.0) -> list[TopologySummary]:
    """The same gangs with topology placement, then without (the tags left off)."""
    return [run_topology(spec, tagged=tagged, policy=policy, timeout=timeout) for tagged in (True, False)]


def describe_topology(spec: WorkloadSpec) -> str:
    """One paragraph: the cluster and the gang mix."""
    t = spec.topology
    mix = "; ".join(f"{k.members.low}-{k.members.high} members in one {t.levels[k.level]} (weight {k.weight:g})"
                    for k in t.mix)
    return (f"Topology workload (seed {spec.seed}): {t.zones} zones x {t.blocks} blocks x {t.racks} racks x "
            f"{t.nodes} nodes = {t.node_count} nodes, levels {', '.join(t.levels)}; {t.count} gangs arriving "
            f"{t.rate:g}/s (Poisson), running {t.run_time.low:g}-{t.run_time.high:g} s; mix: {mix}.")


def format_topology(summaries: Sequence[TopologySummary]) -> str:
    """The runs side by side."""
    def share(count: int, s: TopologySummary) -> str:
        return f"{count} of {s.gangs} ({count / s.gangs:.0%})" if s.gangs else "-"

    rows: list[list[str]] = [
        ["gangs placed whole", *(share(s.placed, s) for s in summaries)],
        ["inside one domain of the level required", *(share(s.in_required_domain, s) for s in summaries)],
        ["inside one rack", *(share(s.in_one_rack, s) for s in summaries)],
        ["inside one block", *(share(s.in_one_block, s) for s in summaries)],
        ["wait: submitted to all placeholders placed (p50 / p99)",
         *(f"{s.wait_p50:.2f} s / {s.wait_p99:.2f} s" for s in summaries)],
        ["free nodes stranded in partly used racks (time-weighted mean; share of free)",
         *(f"{s.stranded_mean:.1f} ({s.stranded_share:.0%})" for s in summaries)],
        ["simulated seconds / wall seconds", *(f"{s.sim_seconds:,.0f} / {s.wall_seconds:.1f}" for s in summaries)],
    ]
    table = format_table(["", *(s.label for s in summaries)], rows, align="l" + "r" * len(summaries))
    problems = [f"{s.label}: {p}" for s in summaries for p in s.problems[:10]]
    return table + ("\n\nPROBLEMS:\n" + "\n".join(f"- {p}" for p in problems) if problems else "")
