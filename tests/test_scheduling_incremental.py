"""The cycle's incremental state (each queue's priority as YuniKorn keeps it: the highest
pending ask priority below it with ``priority.offset`` and fences applied; each leaf's
applications with asks; the cached fifo order) against an O(queues + applications) computation
of the same.

Seeded random workloads (parents and leaves with fifo and fair sorting, quotas, priorities
including negative ones, apps added and removed, asks added, withdrawn and allocated, allocations
released, nodes added and removed, the clock moved) go through the real entry points (RMProxy +
RecordingRM) into two clusters in lockstep: one scheduled by the real cycle, one by
:class:`ReferenceCycle`, the cycle as it was (every queue and application walked and sorted on
every cycle). The allocation sequences (ask, node, from a reservation or not) must be identical,
and after every step the incremental priorities equal :func:`oracle_priorities` and the
invariants (``check_invariants``, which checks the incremental state too) hold.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from rm_helpers import check_invariants
from scheduling_helpers import Cluster, config

from pyscheduler.objects.application import Application
from pyscheduler.objects.partition import Partition
from pyscheduler.objects.queue import MIN_PRIORITY, ObjectState, Queue
from pyscheduler.policies.sorting import FairQueueSorter, app_sorter
from pyscheduler.si import messages as si
from pyscheduler.si.messages import TAG_REQUIRED_NODE
from pyscheduler.scheduler.cycle import Decision, SchedulingCycle

QUEUES = """\
          - name: fifo
          - name: fair
            properties: {application.sort.policy: fair}
            resources: {guaranteed: {memory: 100, vcore: 10}}
          - name: p
            resources: {max: {memory: 300}}
            queues:
              - name: x
                properties: {application.sort.policy: fair}
              - name: y
                resources: {max: {memory: 150, vcore: 20}, guaranteed: {memory: 50}}
              - name: z
                queues:
                  - name: deep
          - name: q
            properties: {application.sort.policy: fair, priority.offset: "2"}
            queues:
              - name: u
                properties: {priority.offset: "-3"}
              - name: v
          - name: fenced
            properties: {priority.policy: fence, priority.offset: "1", application.sort.priority: disabled}
            queues:
              - name: f1
              - name: f2
                properties: {application.sort.policy: fair}
          - name: idle
            parent: true
"""
CONFIG = config(QUEUES)
#: The same queues, with dynamic leaves created where an application asks for them.
DYNAMIC = config(QUEUES, partition_extra="    placementrules:\n      - {name: provided, create: true}\n")
LEAVES = ["root.fifo", "root.fair", "root.p.x", "root.p.y", "root.p.z.deep", "root.q.u", "root.q.v",
          "root.fenced.f1", "root.fenced.f2"]
NODES = [f"node-{i}" for i in range(6)]
NODE_SIZES = [(60, 6), (100, 10), (200, 8)]
ASK_SIZES = [(10, 1), (20, 2), (40, 1), (70, 3), (250, 2)]  # 250 fits no node
PRIORITIES = [-3, -1, 0, 0, 0, 1, 2, 5]
#: Actions by weight.
ACTIONS = (["asks"] * 6 + ["schedule"] * 6 + ["release_allocation"] * 3 + ["withdraw_ask"] * 2
           + ["add_app"] * 2 + ["remove_app", "release_all", "add_node", "remove_node", "advance"])


def oracle_priorities(partition: Partition) -> dict[str, int]:
    """YuniKorn's currentPriority of every queue, walking every queue and application: a leaf's
    is its applications' highest pending ask priority, a parent's the highest of its children's;
    as a queue's parent sees it, its offset is added (clamped to int32) or, for a fenced queue,
    only its offset shows; with nothing pending the minimum int32, whatever the offset."""
    result: dict[str, int] = {}
    for queue in reversed(list(partition.root.walk())):
        if queue.is_leaf:
            best = [p for a in queue.applications.values() if (p := a.max_ask_priority) is not None]
            raw = max(best, default=MIN_PRIORITY)
        else:
            raw = max((result[c.path] for c in queue.children.values()), default=MIN_PRIORITY)
        offset = int(queue.properties.get("priority.offset", "0"))
        if raw == MIN_PRIORITY:
            seen = MIN_PRIORITY
        elif queue.properties.get("priority.policy") == "fence":
            seen = offset
        else:
            seen = max(MIN_PRIORITY, min(2**31 - 1, raw + offset))
        result[queue.path] = seen
    return result


def assert_priorities_match(partition: Partition) -> None:
    """Every queue's incremental pending priority is the oracle's."""
    with partition.lock:
        incremental = {q.path: q.current_priority for q in partition.root.walk()}
        assert incremental == oracle_priorities(partition)


class ReferenceCycle(SchedulingCycle):
    """The cycle before the incremental state: every cycle computes every queue's priority,
    filters every leaf's applications and sorts them afresh (the rest is the real cycle's)."""

    def _walk(self, partition: Partition, queue: Queue) -> Decision | None:
        # The cycle walks from root once per cycle: the priorities are computed afresh each time.
        return self._reference_walk(partition, queue, oracle_priorities(partition))

    def _reference_walk(self, partition: Partition, queue: Queue, priorities: dict[str, int]) -> Decision | None:
        if queue.is_leaf:
            return self._try_leaf(partition, queue)
        children = [
            c for c in queue.children.values()
            if c.state is not ObjectState.STOPPED and c.pending.strictly_greater_than_zero()
        ]
        for child in FairQueueSorter().sort(children, priorities, queue.priority_sorting):
            decision = self._reference_walk(partition, child, priorities)
            if decision is not None:
                return decision
        return None

    @staticmethod
    def _sorted_apps(queue: Queue) -> list[Application]:
        apps = [a for a in queue.applications.values() if a.asks]
        return app_sorter(queue.sort_policy).sort(apps, queue)


class Lockstep:
    """The same RM traffic into two clusters: ``real`` (the cycle) and ``reference``
    (:class:`ReferenceCycle`); every cycle's decisions are compared."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)
        self.real = Cluster(CONFIG)
        self.reference = Cluster(CONFIG)
        self.reference.scheduler.cycle = ReferenceCycle(self.reference.context)
        self.clusters = (self.real, self.reference)
        self.keys = 0
        self.apps = 0
        self.decisions = 0

    def close(self) -> None:
        for cluster in self.clusters:
            cluster.close()

    # -- steps -------------------------------------------------------------------------------------

    def step(self) -> None:
        getattr(self, f"_{self.random.choice(ACTIONS)}")()
        self.check()

    def _add_node(self) -> None:
        node, (memory, vcore) = self.random.choice(NODES), self.random.choice(NODE_SIZES)
        for cluster in self.clusters:
            cluster.add_node(node, memory, vcore)

    def _remove_node(self) -> None:
        node = self.random.choice(NODES)
        for cluster in self.clusters:
            cluster.remove_node(node)

    def _add_app(self) -> None:
        self.apps += 1
        app, leaf, user = f"app-{self.apps:03d}", self.random.choice(LEAVES), self.random.choice(["alice", "bob"])
        for cluster in self.clusters:
            cluster.add_app(app, leaf, user=user)

    def _remove_app(self) -> None:
        self._to_some_app(Cluster.remove_app)

    def _asks(self) -> None:
        app = self._some_app()
        if app is None:
            return
        memory, vcore = self.random.choice(ASK_SIZES)
        priority = self.random.choice(PRIORITIES)
        pinned = self.random.choice(NODES) if self.random.randrange(8) == 0 else None
        keys = []
        for _ in range(self.random.randint(1, 5)):
            self.keys += 1
            keys.append(f"k{self.keys:04d}")
        tags = {TAG_REQUIRED_NODE: pinned} if pinned else {}
        for cluster in self.clusters:
            cluster.send(*(cluster.ask_msg(k, app, memory, vcore, priority=priority, tags=tags) for k in keys))

    def _withdraw_ask(self) -> None:
        pending = sorted((a.app_id, k) for a in self.real.partition.applications.values() for k in a.asks)
        if pending:
            app, key = self.random.choice(pending)
            for cluster in self.clusters:
                cluster.release(app, key)

    def _release_allocation(self) -> None:
        live = sorted((a.application_id, k) for k, a in self.real.rm.allocations.items())
        if live:
            app, key = self.random.choice(live)
            for cluster in self.clusters:
                cluster.release(app, key)

    def _release_all(self) -> None:
        self._to_some_app(Cluster.release)

    def _to_some_app(self, action: Callable[[Cluster, str], None]) -> None:
        app = self._some_app()
        if app is not None:
            for cluster in self.clusters:
                action(cluster, app)

    def _advance(self) -> None:
        seconds = self.random.choice([0.5, 2.5, 31.0])
        for cluster in self.clusters:
            cluster.advance(seconds)
            cluster.tick()

    def _schedule(self) -> None:
        for _ in range(self.random.randint(1, 25)):
            real, reference = (self._outcome(c.once()) for c in self.clusters)
            assert real == reference, f"cycle after {self.decisions} decisions"
            self.decisions += len(real)
            if not real:
                return
            self.check()

    @staticmethod
    def _outcome(decisions: list[Decision]) -> list[tuple[str, str, str, bool]]:
        return [(d.app.app_id, d.ask.allocation_key, d.node.node_id, d.from_reservation) for d in decisions]

    def _some_app(self) -> str | None:
        known = sorted(self.real.partition.applications)
        return self.random.choice(known) if known else None

    # -- checks -------------------------------------------------------------------------------------

    def check(self) -> None:
        assert_priorities_match(self.real.partition)
        check_invariants(self.real.context)
        assert self.real.placements() == self.reference.placements()
        assert self.real.reserved() == self.reference.reserved()


@pytest.mark.parametrize("seed", range(12))
def test_incremental_cycle_decides_as_the_reference(seed: int) -> None:
    lockstep = Lockstep(seed)
    try:
        for _ in range(250):
            lockstep.step()
        # Drain: everything that can be placed is placed the same way.
        for _ in range(40):
            lockstep._schedule()
        assert lockstep.decisions > 0
    finally:
        lockstep.close()


def test_an_empty_leaf_does_not_lift_its_parent_and_offsets_and_fences_apply() -> None:
    """YuniKorn's priorities: a queue with nothing pending has the minimum priority, so a parent
    whose only asks are negative ranks by them; ``priority.offset`` is added as the parent sees
    the queue; a fenced queue shows only its offset."""
    cluster = Cluster(CONFIG)
    try:
        cluster.add_node("node-0", 1000, 100)
        queue = cluster.queue
        assert all(q.current_priority == MIN_PRIORITY for q in cluster.partition.root.walk())
        cluster.add_app("neg", "root.p.x")
        cluster.ask("a1", "neg", priority=-2)
        # root.p has an empty leaf (y) too: it still ranks at -2.
        assert (queue("root.p.x").current_priority, queue("root.p").current_priority) == (-2, -2)
        cluster.add_app("low", "root.fifo")
        cluster.ask("b1", "low", priority=-1)
        assert queue("root").current_priority == -1
        # root.fifo (-1) goes before root.p (-2): with an empty leaf counted as 0, p went first.
        assert cluster.schedule() == 2
        assert [a.allocation_key for a in _new_allocations(cluster)] == ["b1", "a1"]
        # root.q.u has offset -3 and root.q +2: an ask at 4 is seen as 1 by q and 3 by root.
        cluster.add_app("off", "root.q.u")
        cluster.ask("c1", "off", priority=4)
        assert (queue("root.q.u").pending_priority, queue("root.q.u").current_priority) == (4, 1)
        assert (queue("root.q").pending_priority, queue("root.q").current_priority) == (1, 3)
        # A fenced queue shows its offset whatever its asks' priorities: f1 inherits the fence
        # (not the offset: 0), root.fenced shows its own offset, 1.
        cluster.add_app("fen", "root.fenced.f1")
        cluster.ask("d1", "fen", priority=100)
        assert (queue("root.fenced.f1").pending_priority, queue("root.fenced.f1").current_priority) == (100, 0)
        assert (queue("root.fenced").pending_priority, queue("root.fenced").current_priority) == (0, 1)
        assert queue("root").current_priority == 3
        assert_priorities_match(cluster.partition)
        check_invariants(cluster.context)
    finally:
        cluster.close()


def test_priority_sorting_disabled_puts_submission_first() -> None:
    """``application.sort.priority: disabled`` (inherited by root.fenced's leaves): a fifo leaf
    takes the earliest submitted application first, whatever the priorities."""
    cluster = Cluster(CONFIG)
    try:
        cluster.add_node("node-0", 1000, 100)
        cluster.add_app("early", "root.fenced.f1")
        cluster.clock.advance(1)
        cluster.add_app("late", "root.fenced.f1")
        cluster.ask("e1", "early", priority=0)
        cluster.ask("l1", "late", priority=9)
        assert cluster.queue("root.fenced.f1").priority_sorting is False
        assert cluster.schedule() == 2
        assert [a.allocation_key for a in _new_allocations(cluster)] == ["e1", "l1"]
    finally:
        cluster.close()


def test_structure_changes_keep_the_priorities() -> None:
    """Dynamic queues come and go, a configured queue is removed on reload: the parents' view
    of their children's priorities follows."""
    cluster = Cluster(DYNAMIC)
    try:
        cluster.add_node("node-0", 1000, 100)
        cluster.add_app("dyn", "root.q.w")
        cluster.ask("d1", "dyn", priority=-4)
        assert_priorities_match(cluster.partition)
        assert cluster.schedule() == 1
        cluster.release("dyn")
        cluster.remove_app("dyn")
        cluster.tick()
        assert_priorities_match(cluster.partition)
        check_invariants(cluster.context)
    finally:
        cluster.close()


def test_apps_without_asks_are_not_in_the_leaf_set() -> None:
    cluster = Cluster(CONFIG)
    try:
        cluster.add_node("node-0", 1000, 100)
        for app in ("a", "b", "c"):
            cluster.add_app(app, "root.fifo")
        cluster.ask("a1", "a")
        cluster.ask("c1", "c", priority=1)
        leaf = cluster.queue("root.fifo")
        assert sorted(leaf.apps_with_asks) == ["a", "c"]
        assert cluster.schedule() == 2
        assert leaf.apps_with_asks == {}
        assert [si_alloc.allocation_key for si_alloc in _new_allocations(cluster)] == ["c1", "a1"]
    finally:
        cluster.close()


def _new_allocations(cluster: Cluster) -> list[si.Allocation]:
    return [alloc for response in cluster.rm.calls_of("update_allocation") for alloc in response.new]
