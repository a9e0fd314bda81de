"""YuniKorn's object-level preemption tests that the other preemption test files did not port
yet (issue 13; the tables of ``shared/spec/yunikorn/preemption.md`` §1.6). Each test names the
YuniKorn test it ports; numbers and expected outcomes are YuniKorn's.

**Already covered elsewhere** (not repeated here): ``partition_test::TestPreemption``, the
preconditions through the cycle, the 15 s re-check and YUNIKORN-1951 (tests/test_preemption.py);
``TestTryPreemption_SendEvent`` (the victim's REQUEST event, tests/test_preemption.py);
``TestPreemptionForRequiredNode*`` and ``TestRequiredNodePreemption(Failed)``
(tests/test_preemption_required_node.py); ``TestUpdateAllocationWithQuotaPreemption``,
``TestTriggerQuotaPreemption`` and the quota order decided in issue 13
(tests/test_preemption_quota.py).

**How YuniKorn's harness maps here.** YuniKorn's object tests build queues, nodes and
allocations by hand and call ``Preemptor.TryPreemption`` with ``nodesTried=false``; here the
cluster is built through the RM interface (:class:`World`: a queues.yaml, nodes, allocations
the RM reports as running with their ``creationTime`` tag, asks) and the same decision is asked
of :class:`GuaranteedPreemptor` (``nodes_tried=False``). YuniKorn's resource type ``first``
(and ``pods``, ``vcores``, ``mem``, ...) is kept as is. YuniKorn's mock RM plugin
(``mock.NewPreemptionPredicatePlugin``) is :class:`MockRM`: its ``prefilter`` (feasible nodes)
and ``filter`` failures refuse nodes through the RM's ``predicates`` and
``preemption_predicates``. Where YuniKorn's scenario needs the real entry point (the ask's
delay, its reservation) the scheduling cycle runs it.

**Versions.** The reference is yunikorn-core at be3bb487 (the spec). The YuniKorn sources read
for the numbers are later (they include YUNIKORN-3449, which makes the final check count the
chosen node's free room, and drop the per-victim check of the ask's queue); where a later
version changed an expected outcome the spec's outcome is kept and the docstring says so.

Every ported scenario reaches YuniKorn's outcome. The multi-type ones rest on three rules
pyscheduler shares with YuniKorn: a remaining guarantee takes its parent's quantity for the
types its own guarantee does not name (``snapshot.component_min_permissive``); the ask's and the
victims' queues are judged in the ask's types only (``ask_queue_under_guaranteed``,
``victim_queue_over_guaranteed``); the victims cover the ask in the types they hold
(``snapshot.covers``).

**Not ported.** ``TestTryPreemption_VictimReleased_InsufficientResource`` and the "released"
rows of the victim filters: a decision runs under the partition's lock and an allocation the RM
released is gone, so no victim can be released in the middle of one. Tests of the later
YuniKorn only (not in the spec's tables): ``TestTryPreemption_NodeAvailableDeficit``
(YUNIKORN-3449), ``..._ResidualShortfall``, ``..._PredicateVictimsNotTruncated``,
``..._PrematureVictimLoopTermination``, ``..._DecoupleAskQueueQuotaFromVictimSize*``,
``TestPreemptor_hasPreemptionShortfall``, ``TestTrimExtraVictims_Pipeline``,
``Test_PreemptForAppOnReservedNode``, ``Test_PreemptReleasesReservationsOnSuccess``,
``TestTryAllocateDoesNotWaitForPreemptionRMReply``,
``TestSortAllocationsBasedOnAsk_PreemptionOrdering``/``_TieBreaking``. Elsewhere:
queue_test's quota arming tests (``TestQueue_setPreemptionTime``,
``TestOverrideAndResetPreemptionTime``: a further lowering keeps the start, a changed delay
shifts it, a queue back within its max is disarmed) and the parent's firing
(``TestQuotaChangeTryPreemptionForParentQueue``) run through the RM interface in
tests/test_preemption_quota.py. ``TestQuotaChangeFilterVictims`` counts filter outcomes
pyscheduler does not keep; its filter rules are in ``test_quota_change_try_preemption``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import pytest
from rm_helpers import World, res
from scheduling_helpers import config

from pyscheduler.common.resources import Resource
from pyscheduler.objects.allocation import Allocation
from pyscheduler.objects.queue import Queue
from pyscheduler.scheduler.cycle import SchedulingCycle
from pyscheduler.scheduler.preemption.guaranteed import (
    PREEMPTION_DOES_NOT_HELP,
    PREEMPTION_GUARANTEES_CHECK_FAILED,
    PREEMPTION_PRECONDITIONS_FAILED,
    PREEMPTION_SHORTFALL,
    GuaranteedPreemptor,
    check_preconditions,
)
from pyscheduler.scheduler.preemption.preemptor import PreemptionOutcome
from pyscheduler.scheduler.preemption.ordering import sort_for_quota, sort_for_required_node
from pyscheduler.scheduler.preemption.quota import _leaf_victims, _split, preemptable_amount
from pyscheduler.scheduler.preemption.required_node import required_node_victims
from pyscheduler.scheduler.preemption.snapshot import (
    Quantities,
    QueueSnapshot,
    ask_queue_under_guaranteed,
    victim_queue_over_guaranteed,
)
from pyscheduler.scheduler.preemption.victims import Victims
from pyscheduler.si import messages as si
from pyscheduler.testing.recording import RecordingRM

#: The ManualClock's start, in seconds: allocations are created "age" seconds before it.
T0 = 1_700_000_000
NS = 1_000_000_000
HOUR = 3600
MINUTE = 60

Outcome = tuple[str, list[str]] | str


# -- the test kit ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Expected:
    """One scenario of YuniKorn's mock plugin (``mock.NewPreemption``): for this ask on this
    node, with this start index, the RM answers success and this index."""

    ask: str
    node: str
    keys: tuple[str, ...]
    start: int
    index: int
    success: bool = True


@dataclass
class MockRM:
    """YuniKorn's ``mock.PreemptionPredicatePlugin`` as the RM's two callbacks.

    ``fail_prefilter`` refuses every node, ``feasible`` (when set) refuses the nodes not in it
    (YuniKorn's pre-filter and its feasible nodes), ``fail_filter`` refuses every check (its
    filter). A ``preemption_predicates`` call matches a scenario on the ask, the node and the
    start index; the victims offered must equal the scenario's up to the index it returns (the
    ones that would be released: the tail of a node's candidate list, which YuniKorn's versions
    build differently, is not compared). No scenario: refused, as YuniKorn's mock does.
    ``error`` is YuniKorn's ``GetPredicateError``."""

    expected: Sequence[Expected] = ()
    feasible: frozenset[str] | None = None
    fail_prefilter: bool = False
    fail_filter: bool = False
    error: str | None = None
    offered: list[tuple[str, tuple[str, ...], int]] = field(default_factory=list)

    def _refused(self, node_id: str) -> str | None:
        if self.fail_prefilter:
            return "fake preemption predicate prefilter plugin failed"
        if self.feasible is not None and node_id not in self.feasible:
            return f"node {node_id} not feasible"
        if self.fail_filter:
            return "fake predicate filter plugin failed"
        return None

    def predicates(self, args: si.PredicatesArgs) -> str | None:
        reason = self._refused(args.node_id)
        if reason is not None and self.error is None:
            self.error = reason
        return reason

    def preemption_predicates(self, args: si.PreemptionPredicatesArgs) -> si.PreemptionPredicatesResponse:
        self.offered.append((args.node_id, args.preempt_allocation_keys, args.start_index))
        refused = si.PreemptionPredicatesResponse(success=False, index=-1)
        reason = self._refused(args.node_id)
        if reason is not None:
            self.error = reason
            return refused
        for scenario in self.expected:
            if scenario.ask != args.allocation_key or scenario.node != args.node_id:
                continue
            if scenario.start != args.start_index:
                self.error = f"unexpected start index {args.start_index}, expected {scenario.start}"
                return refused
            wanted = scenario.keys[:scenario.index + 1]
            if tuple(args.preempt_allocation_keys[:scenario.index + 1]) != wanted:
                self.error = f"unexpected victims {args.preempt_allocation_keys}, expected {scenario.keys}"
                return refused
            self.error = None
            return si.PreemptionPredicatesResponse(success=scenario.success, index=scenario.index)
        self.error = f"no match found, allocationKey={args.allocation_key}, nodeID={args.node_id}"
        return refused


class PluginRM(RecordingRM):
    """A recording RM with YuniKorn's mock plugin behind its predicates (for the cycle)."""

    def __init__(self, plugin: MockRM) -> None:
        super().__init__(timeout=2.0)
        self.plugin = plugin

    def preemption_predicates(self, args: si.PreemptionPredicatesArgs) -> si.PreemptionPredicatesResponse:
        return self.plugin.preemption_predicates(args)


def cluster(queues: str, nodes: Mapping[str, Mapping[str, int]], *, partition_extra: str = "",
            rm: RecordingRM | None = None) -> World:
    """A registered world with ``queues`` (root's children) and the nodes with their resources."""
    text = config(queues, partition_extra=partition_extra)
    if rm is None:
        w = World(text)
    else:
        w = World(text, register=False)
        w.rm = rm
        w.register(text, rm=rm)
    for node_id, resource in nodes.items():
        w.node(node_id, resource=dict(resource))
    return w


def running(w: World, key: str, app: str, resource: Mapping[str, int], node: str, *, age: int = 0,
            priority: int = 0, self_ok: bool = True, originator: bool = False, required: bool = False) -> None:
    """An allocation the RM reports as running on ``node``, created ``age`` seconds before now."""
    tags = {"creationTime": str(T0 - age)}
    if required:
        tags[si.TAG_REQUIRED_NODE] = node
    w.allocs(w.alloc_msg(key, app, dict(resource), node_id=node, priority=priority, originator=originator,
                         allocation_tags=tags,
                         preemption_policy=si.PreemptionPolicy(allow_preempt_self=self_ok, allow_preempt_other=True)))
    assert key in w.partition().applications[app].allocations, f"{key} was not accepted"


def pending(w: World, key: str, app: str, resource: Mapping[str, int], *, priority: int = 0) -> Allocation:
    """An ask that may preempt others."""
    w.ask(key, app, dict(resource), priority=priority,
          preemption_policy=si.PreemptionPolicy(allow_preempt_self=True, allow_preempt_other=True))
    return w.partition().applications[app].asks[key]


def decide(w: World, leaf: str, app: str, key: str, rm: MockRM | None = None, *,
           reserved: frozenset[str] = frozenset()) -> Outcome:
    """YuniKorn's ``NewPreemptor(..., nodesTried=false).TryPreemption()``: (node, victim keys)
    or the reason there is none ("" when no node works); ``reserved`` are nodes another ask
    holds a reservation on."""
    part = w.partition()
    ask = part.applications[app].asks[key]
    preemptor = GuaranteedPreemptor(
        w.queue(leaf), ask, part.applications, part.nodes, part.sorted_node_ids(), nodes_tried=False,
        predicates=rm.predicates if rm is not None else None,
        preemption_predicates=rm.preemption_predicates if rm is not None else None,
        reserved_by_others=lambda node: node.node_id in reserved)
    return outcome(preemptor.try_preemption())


def outcome(result: PreemptionOutcome) -> Outcome:
    """The plan's (node, victim keys), or the allocation log message of why there is none."""
    if result.plan is None:
        return result.message
    return result.plan.node_id, [v.allocation_key for v in result.plan.victims]


@pytest.fixture
def worlds() -> Iterator[list[World]]:
    """Worlds made by a test, closed after it."""
    made: list[World] = []
    yield made
    for w in made:
        w.close()


# -- preconditions --------------------------------------------------------------------------------


def test_check_preconditions_each_condition() -> None:
    """TestCheckPreconditions: each precondition toggled on an ask created a minute ago with a
    30 s delay; passing stamps the check time, so a second check right after fails (15 s)."""
    now = T0 * NS
    delay = 30 * NS
    ask = Allocation("alloc1", "app-1", res(first=5), create_time_ns=now - MINUTE * NS, allow_preempt_other=True)

    def passes() -> bool:
        return check_preconditions(ask, delay, now)

    def allow_again() -> None:
        ask.preempt_check_time_ns = now - MINUTE * NS

    assert passes()
    allow_again()
    ask.allow_preempt_other = False
    assert not passes(), "an ask that may not preempt others"
    ask.allow_preempt_other = True
    assert passes()
    allow_again()
    ask.triggered_preemption = True
    assert not passes(), "an ask that already triggered preemption"
    ask.triggered_preemption = False
    assert passes()
    allow_again()
    ask.required_node = "node1"
    assert not passes(), "an ask with a required node"
    ask.required_node = ""
    assert passes()
    allow_again()
    ask.create_time_ns = now
    assert not passes(), "a newly created ask"
    ask.create_time_ns = now - MINUTE * NS
    assert passes()
    allow_again()
    ask.preempt_check_time_ns = now
    assert not passes(), "an ask checked just now"
    allow_again()
    assert passes()
    assert not passes(), "succeeded on a successive run"


def test_check_preconditions_failure_is_logged_by_the_allocation_attempt(worlds: list[World]) -> None:
    """TestCheckPreconditions (the tryAllocate part): an ask whose preconditions fail (checked
    moments ago) logs "Preemption preconditions failed" then "Preemption does not help".
    node1 first:5; root.child max first:5 is full (a running allocation), so the ask fails the
    queue's headroom and the cycle tries preemption."""
    w = cluster("""\
          - name: child
            properties: {preemption.delay: 1ms}
            resources:
              max: {first: 5}
""", {"node1": {"first": 5}})
    worlds.append(w)
    w.add_app("app-0", "root.child")
    w.add_app("app-1", "root.child")
    running(w, "busy", "app-0", {"first": 5}, "node1", age=HOUR)
    ask = pending(w, "alloc1", "app-1", {"first": 5})
    w.advance(1.0)
    ask.preempt_check_time_ns = w.clock.now_ns()  # checked just now: the 15 s have not passed
    SchedulingCycle(w.context).run()
    assert list(ask.alloc_log)[:2] == [PREEMPTION_PRECONDITIONS_FAILED, PREEMPTION_DOES_NOT_HELP]
    assert w.rm.released == []


# -- the queue guarantees check -------------------------------------------------------------------


def test_check_preemption_queue_guarantees(worlds: list[World]) -> None:
    """TestCheckPreemptionQueueGuarantees: node1 first:20; parent max 20 guaranteed 10, child1
    and child2 max 10 guaranteed 5; app-1 in child1 holds alloc1 and alloc2 (first:5 each). An
    ask of 5 in child2 passes the check; an ask of 25 fails it, and the attempt says so
    ("Preemption queue guarantees check failed")."""
    w = cluster("""\
          - name: parent
            resources: {max: {first: 20}, guaranteed: {first: 10}}
            queues:
              - name: child1
                resources: {max: {first: 10}, guaranteed: {first: 5}}
              - name: child2
                resources: {max: {first: 10}, guaranteed: {first: 5}}
""", {"node1": {"first": 20}})
    worlds.append(w)
    w.add_app("app-1", "root.parent.child1")
    w.add_app("app-2", "root.parent.child2")
    running(w, "alloc1", "app-1", {"first": 5}, "node1", age=HOUR)
    running(w, "alloc2", "app-1", {"first": 5}, "node1")
    pending(w, "alloc3", "app-2", {"first": 5})
    pending(w, "alloc4", "app-2", {"first": 25})
    part = w.partition()

    def queue_check(key: str) -> bool:
        preemptor = GuaranteedPreemptor(
            w.queue("root.parent.child2"), part.applications["app-2"].asks[key], part.applications, part.nodes,
            part.sorted_node_ids(), nodes_tried=False, predicates=None, preemption_predicates=None,
            reserved_by_others=lambda node: False)
        return preemptor._queue_check()

    assert queue_check("alloc3"), "queue guarantees fail"
    assert not queue_check("alloc4"), "queue guarantees did not fail"
    assert decide(w, "root.parent.child2", "app-2", "alloc4") == PREEMPTION_GUARANTEES_CHECK_FAILED


@pytest.mark.parametrize("parent_g,child_g,expected", [
    pytest.param({}, {}, False, id="NoGuaranteed"),
    pytest.param({"first": 10}, {}, True, id="ParentGuaranteed"),
    pytest.param({}, {"first": 5}, True, id="ChildGuaranteed"),
    pytest.param({"first": 10}, {"first": 5}, True, id="BothGuaranteed"),
])
def test_check_preemption_queue_guarantees_with_no_guaranteed_resources(
        worlds: list[World], parent_g: dict[str, int], child_g: dict[str, int], expected: bool) -> None:
    """TestCheckPreemptionQueueGuaranteesWithNoGuaranteedResources: node1 and node2 first:20;
    parent (guarantee varies) with child1 guaranteed 5 holding alloc1 (node1) and alloc2
    (node2), 5 each, and child2 (guarantee varies) asking 5. No guarantee anywhere on child2's
    path: the check fails and says so; a guarantee on child2 or its parent: preemption."""
    def resources(guaranteed: dict[str, int]) -> str:
        return f"resources: {{guaranteed: {{first: {guaranteed['first']}}}}}" if guaranteed else "resources: {}"

    w = cluster(f"""\
          - name: parent
            {resources(parent_g)}
            queues:
              - name: child1
                resources: {{guaranteed: {{first: 5}}}}
              - name: child2
                {resources(child_g)}
""", {"node1": {"first": 20}, "node2": {"first": 20}})
    worlds.append(w)
    w.add_app("app-1", "root.parent.child1")
    w.add_app("app-2", "root.parent.child2")
    running(w, "alloc1", "app-1", {"first": 5}, "node1", age=HOUR)
    running(w, "alloc2", "app-1", {"first": 5}, "node2")
    pending(w, "alloc3", "app-2", {"first": 5})
    result = decide(w, "root.parent.child2", "app-2", "alloc3")
    if expected:
        assert isinstance(result, tuple) and len(result[1]) == 1, result
    else:
        assert result == PREEMPTION_GUARANTEES_CHECK_FAILED


# -- the two truth tables -------------------------------------------------------------------------


def _row(ask: dict[str, int], queue: dict[str, int], expected: bool, name: str) -> object:
    return pytest.param(ask, queue, expected, id=name)


@pytest.mark.parametrize("ask,remaining,expected", [
    _row({"first": 1}, {"first": 10}, True, "matching res types with +ve value"),
    _row({"first": 1}, {"first": 0}, True, "matching res types with zero value"),
    _row({"first": 1}, {"first": -10}, False, "matching res types with -ve value"),
    _row({"first": 1, "second": 1}, {"first": 10, "second": -10}, False, "matching, one -ve and one +ve"),
    _row({"first": 1}, {"first": 10, "second": -10}, True, "matching +ve and non matching -ve"),
    _row({"first": 1}, {"first": -10, "second": 10}, False, "matching -ve and non matching +ve"),
    _row({"first": 1, "third": 1}, {"first": 10}, True, "matching +ve and non matching types"),
    _row({"first": 1, "third": 1}, {"first": -10}, False, "matching -ve and non matching types"),
])
def test_is_ask_queue_under_guaranteed(ask: dict[str, int], remaining: dict[str, int], expected: bool) -> None:
    """TestIsAskQueueUnderGuaranteed: is the ask's queue (its remaining guarantee) under its
    guarantee for this ask? pyscheduler's rule is the one its queue check applies."""
    assert ask_queue_under_guaranteed(ask, remaining) is expected


@pytest.mark.parametrize("ask,remaining,expected", [
    _row({"first": 1}, {"first": 10}, False, "matching res types with +ve value"),
    _row({"first": 1}, {"first": 0}, False, "matching res types with zero value"),
    _row({"first": 1}, {"first": -10}, True, "matching res types with -ve value"),
    _row({"first": 1, "second": 1}, {"first": 10, "second": -10}, True, "matching, one -ve and one +ve"),
    _row({"first": 1}, {"first": 10, "second": -10}, False, "matching +ve and non matching -ve"),
    _row({"first": 1}, {"first": -10, "second": 10}, True, "matching -ve and non matching +ve"),
    _row({"first": 1, "third": 1}, {"first": 10}, False, "matching +ve and non matching types"),
    _row({"first": 1, "third": 1}, {"first": -10}, True, "matching -ve and non matching types"),
])
def test_is_victim_queue_over_guaranteed(ask: dict[str, int], remaining: dict[str, int], expected: bool) -> None:
    """TestIsVictimQueueOverGuaranteed: is the victim's queue (its remaining guarantee) over its
    guarantee for this ask? pyscheduler's rule is the one its per-node plan applies."""
    assert victim_queue_over_guaranteed(ask, remaining) is expected


# -- TryPreemption: siblings with guarantees ------------------------------------------------------

SIBLINGS = """\
          - name: parent
            resources: {{max: {{first: 20}}, guaranteed: {{first: {parent}}}}}
            queues:
              - name: child1
                resources: {{max: {{first: 10}}, guaranteed: {{first: 5}}}}
              - name: child2
                resources: {{max: {{first: 10}}, guaranteed: {{first: {child2}}}}}
"""
FIVE_AND_A_POD = {"first": 5, "pods": 1}


@pytest.mark.parametrize("rm,found", [
    pytest.param(MockRM([Expected("alloc3", "node1", ("alloc1",), 0, 0)], fail_prefilter=True), False,
                 id="prefilter fails"),
    pytest.param(MockRM([Expected("alloc3", "node1", ("alloc1",), 0, 0)], feasible=frozenset({"node2"})), False,
                 id="prefilter passes but none of the nodes is feasible"),
    pytest.param(MockRM([Expected("alloc3", "node1", ("alloc1",), 0, 0)], feasible=frozenset({"node1"}),
                        fail_filter=True), False, id="prefilter passes with the feasible node, filter fails"),
    pytest.param(MockRM([Expected("alloc3", "node1", ("alloc1",), 0, 0)], feasible=frozenset({"node1"})), True,
                 id="prefilter and filter pass with the feasible node"),
    pytest.param(MockRM([Expected("alloc3", "node1", ("alloc1",), 0, 0)]), True,
                 id="prefilter and filter pass with no feasible nodes given"),
])
def test_try_preemption(worlds: list[World], rm: MockRM, found: bool) -> None:
    """TestTryPreemption: node1 {first:10, pods:5}; parent max 20 guaranteed 10; child1 and child2
    max 10 guaranteed 5. child1 holds alloc1 and alloc2 ({first:5, pods:1}) on node1; child2
    asks the same. Exactly one victim, alloc1 (a second would take child1 below its
    guarantee), when the RM accepts node1; nothing when it refuses it.

    YuniKorn's harness puts alloc2 on the node and in the queue's usage but not in the
    application, so it is never a victim there; here alloc2 runs with a required node, which
    keeps it out of the victims the same way."""
    w = cluster(SIBLINGS.format(parent=10, child2=5), {"node1": {"first": 10, "pods": 5}})
    worlds.append(w)
    w.add_app("app-1", "root.parent.child1")
    w.add_app("app-2", "root.parent.child2")
    running(w, "alloc1", "app-1", FIVE_AND_A_POD, "node1", age=HOUR)
    running(w, "alloc2", "app-1", FIVE_AND_A_POD, "node1", required=True)
    pending(w, "alloc3", "app-2", FIVE_AND_A_POD)
    result = decide(w, "root.parent.child2", "app-2", "alloc3", rm)
    if found:
        assert result == ("node1", ["alloc1"])
        assert rm.error is None
    else:
        assert not isinstance(result, tuple)


def test_try_preemption_on_node(worlds: list[World]) -> None:
    """TestTryPreemptionOnNode: node1 and node2 {first:5, pods:1}, full: child1 (guaranteed 5)
    holds alloc1 on node1 and alloc2 on node2; child2 (guaranteed 5) asks {first:5, pods:1}.
    The RM accepts node2 with alloc2: one victim, node2."""
    w = cluster(SIBLINGS.format(parent=10, child2=5), {"node1": FIVE_AND_A_POD, "node2": FIVE_AND_A_POD})
    worlds.append(w)
    w.add_app("app-1", "root.parent.child1")
    w.add_app("app-2", "root.parent.child2")
    running(w, "alloc1", "app-1", FIVE_AND_A_POD, "node1", age=HOUR)
    running(w, "alloc2", "app-1", FIVE_AND_A_POD, "node2")
    pending(w, "alloc3", "app-2", FIVE_AND_A_POD)
    rm = MockRM([Expected("alloc3", "node2", ("alloc2",), 0, 0)])
    assert decide(w, "root.parent.child2", "app-2", "alloc3", rm) == ("node2", ["alloc2"])
    assert rm.error is None


def test_try_preemption_node_with_capacity_lesser_than_ask(worlds: list[World]) -> None:
    """TestTryPreemption_NodeWithCapacityLesserThanAsk: as TestTryPreemptionOnNode, but child2
    is guaranteed 6 and asks {first:6, pods:1}, more than either node holds: no node is
    considered, no victim, nothing logged (the attempt gives no reason). The parent is
    guaranteed 11, not 10: the configuration check (pyscheduler's, as YuniKorn's) refuses
    children guaranteed more than their parent, which YuniKorn's hand-built queues skip."""
    w = cluster(SIBLINGS.format(parent=11, child2=6), {"node1": FIVE_AND_A_POD, "node2": FIVE_AND_A_POD})
    worlds.append(w)
    w.add_app("app-1", "root.parent.child1")
    w.add_app("app-2", "root.parent.child2")
    running(w, "alloc1", "app-1", FIVE_AND_A_POD, "node1", age=HOUR)
    running(w, "alloc2", "app-1", FIVE_AND_A_POD, "node2")
    pending(w, "alloc3", "app-2", {"first": 6, "pods": 1})
    assert decide(w, "root.parent.child2", "app-2", "alloc3") == ""


def test_try_preemption_on_node_with_og_parent_and_ug_preemptor(worlds: list[World]) -> None:
    """TestTryPreemptionOnNodeWithOGParentAndUGPreemptor: node1 and node2 {first:3, pods:1}.
    parent max 20 guaranteed 2 uses 6 (over); child1 (no guarantee) holds alloc1..alloc6
    (first:1, alloc<i> created i minutes ago, even ones on node1, odd ones on node2); child2
    (guaranteed 1) asks first:1. The RM accepts node2 with alloc1 first: alloc1 on node2."""
    w = cluster("""\
          - name: parent
            resources: {max: {first: 20}, guaranteed: {first: 2}}
            queues:
              - name: child1
              - name: child2
                resources: {max: {first: 10}, guaranteed: {first: 1}}
""", {"node1": {"first": 3, "pods": 1}, "node2": {"first": 3, "pods": 1}})
    worlds.append(w)
    w.add_app("app-1", "root.parent.child1")
    w.add_app("app-2", "root.parent.child2")
    for i in range(1, 7):
        running(w, f"alloc{i}", "app-1", {"first": 1}, "node1" if i % 2 == 0 else "node2", age=i * MINUTE)
    pending(w, "alloc7", "app-2", {"first": 1})
    rm = MockRM([Expected("alloc7", "node2", ("alloc1", "alloc3", "alloc5"), 0, 0)])
    assert decide(w, "root.parent.child2", "app-2", "alloc7", rm) == ("node2", ["alloc1"])
    assert rm.error is None


@pytest.mark.parametrize("rm,found", [
    pytest.param(MockRM(fail_prefilter=True), False, id="prefilter fails"),
    pytest.param(MockRM(feasible=frozenset({"node3"})), False,
                 id="prefilter passes but none of the nodes is feasible"),
    pytest.param(MockRM(feasible=frozenset({"node1"}), fail_filter=True), False,
                 id="prefilter passes with the feasible node, filter fails"),
    pytest.param(MockRM(feasible=frozenset({"node1"})), True, id="prefilter and filter pass with the feasible node"),
    pytest.param(MockRM(), True, id="prefilter and filter pass with no feasible nodes given"),
])
def test_try_preemption_on_queue(worlds: list[World], rm: MockRM, found: bool) -> None:
    """TestTryPreemptionOnQueue: node1 and node2 {first:10, pods:2} have room; parent max 10 is
    full (child1, guaranteed 5, holds alloc1 on node1 and alloc2 on node2, {first:5, pods:1});
    child2 (guaranteed 5) asks {first:5, pods:1}. When the RM accepts a node: that node (one of
    the two) and exactly one of alloc1 and alloc2; nothing when it refuses."""
    w = cluster("""\
          - name: parent
            resources: {max: {first: 10}}
            queues:
              - name: child1
                resources: {guaranteed: {first: 5}}
              - name: child2
                resources: {guaranteed: {first: 5}}
""", {"node1": {"first": 10, "pods": 2}, "node2": {"first": 10, "pods": 2}})
    worlds.append(w)
    w.add_app("app-1", "root.parent.child1")
    w.add_app("app-2", "root.parent.child2")
    running(w, "alloc1", "app-1", FIVE_AND_A_POD, "node1", age=HOUR)
    running(w, "alloc2", "app-1", FIVE_AND_A_POD, "node2")
    pending(w, "alloc3", "app-2", FIVE_AND_A_POD)
    result = decide(w, "root.parent.child2", "app-2", "alloc3", rm)
    if found:
        assert isinstance(result, tuple), result
        node, victims = result
        assert node in ("node1", "node2")
        assert len(victims) == 1 and victims[0] in ("alloc1", "alloc2")
    else:
        assert not isinstance(result, tuple)


def unguaranteed_sibling(worlds: list[World], parent_max: int, nodes: Mapping[str, Mapping[str, int]]) -> World:
    """The setup of YuniKorn's "InsufficientResource" tests: root.parent (max first:
    ``parent_max``) with child1 (no guarantee, app-1) and child2 (guaranteed first:5, app-2)."""
    w = cluster(f"""\
          - name: parent
            resources: {{max: {{first: {parent_max}}}}}
            queues:
              - name: child1
              - name: child2
                resources: {{guaranteed: {{first: 5}}}}
""", nodes)
    worlds.append(w)
    w.add_app("app-1", "root.parent.child1")
    w.add_app("app-2", "root.parent.child2")
    return w


def test_try_preemption_victims_available_insufficient_resource(worlds: list[World]) -> None:
    """TestTryPreemption_VictimsAvailable_InsufficientResource: node1 and node2 {first:10,
    pods:2} have room; parent max 8; child1 (no guarantee) holds alloc1 and alloc2 ({first:2,
    pods:1}, 4 in all); child2 (guaranteed 5) asks {first:5, pods:1}. The victims (4) cannot
    cover the ask (5): "Preemption helped but short of resources", nothing preempted."""
    w = unguaranteed_sibling(worlds, 8, {"node1": {"first": 10, "pods": 2}, "node2": {"first": 10, "pods": 2}})
    running(w, "alloc1", "app-1", {"first": 2, "pods": 1}, "node1", age=HOUR)
    running(w, "alloc2", "app-1", {"first": 2, "pods": 1}, "node2")
    pending(w, "alloc3", "app-2", FIVE_AND_A_POD)
    assert decide(w, "root.parent.child2", "app-2", "alloc3") == PREEMPTION_SHORTFALL


def test_try_preemption_victims_on_different_nodes_insufficient_resource(worlds: list[World]) -> None:
    """TestTryPreemption_VictimsOnDifferentNodes_InsufficientResource: node1 and node2
    {first:5, pods:1}; parent max 6; child1 (no guarantee) holds alloc1 on node1 and alloc2 on
    node2 ({first:2, pods:1}); child2 (guaranteed 5) asks first:5. The RM accepts node1 with
    alloc1 and node2 with alloc2, but one node's victim (2) does not cover the ask (5):
    "Preemption helped but short of resources", nothing preempted."""
    w = unguaranteed_sibling(worlds, 6, {"node1": FIVE_AND_A_POD, "node2": FIVE_AND_A_POD})
    running(w, "alloc1", "app-1", {"first": 2, "pods": 1}, "node1", age=HOUR)
    running(w, "alloc2", "app-1", {"first": 2, "pods": 1}, "node2")
    pending(w, "alloc3", "app-2", {"first": 5})
    rm = MockRM([Expected("alloc3", "node1", ("alloc1",), 0, 0), Expected("alloc3", "node2", ("alloc2",), 0, 0)])
    assert decide(w, "root.parent.child2", "app-2", "alloc3", rm) == PREEMPTION_SHORTFALL


def test_try_preemption_victims_available_on_different_nodes(worlds: list[World]) -> None:
    """TestTryPreemption_VictimsAvailableOnDifferentNodes: node1 {first:5, pods:1} runs alloc1
    {first:4, pods:1}, node2 {first:4, pods:1} (too small for the ask) runs alloc2 {first:2,
    pods:1}, both in child1 (no guarantee) under parent max 6; child2 (guaranteed 5) asks
    first:5. At the reference (spec §1.6) the final check sums the victims only: alloc1 (4)
    does not cover 5, "Preemption helped but short of resources". (YUNIKORN-3449, later, counts
    the chosen node's free room only when every victim collected, the additional ones included,
    is on that node; here the additional victim alloc2 is on node2, so the outcome stays.)"""
    w = unguaranteed_sibling(worlds, 6, {"node1": FIVE_AND_A_POD, "node2": {"first": 4, "pods": 1}})
    running(w, "alloc1", "app-1", {"first": 4, "pods": 1}, "node1", age=MINUTE)
    running(w, "alloc2", "app-1", {"first": 2, "pods": 1}, "node2")
    pending(w, "alloc3", "app-2", {"first": 5})
    rm = MockRM([Expected("alloc3", "node1", ("alloc1",), 0, 0), Expected("alloc3", "node2", ("alloc2",), 0, 0)])
    assert decide(w, "root.parent.child2", "app-2", "alloc3", rm) == PREEMPTION_SHORTFALL


THREE_CHILDREN = """\
          - name: parent
            resources: {max: {first: 18}}
            queues:
              - name: child1
              - name: child2
                resources: {guaranteed: {first: 15}}
              - name: child3
"""


def test_try_preemption_on_queue_victims_on_different_nodes(worlds: list[World]) -> None:
    """TestTryPreemption_OnQueue_VictimsOnDifferentNodes: node1 and node2 first:30 have room;
    parent max 18 holds 15: child1 alloc1 (node1, an hour old) and alloc2 (node2), child3
    alloc4 (node2), first:5 each. child2 (guaranteed 15) asks 10 and the RM accepts node2
    only: alloc2 and alloc4 (both on node2) are preempted, not all three."""
    w = cluster(THREE_CHILDREN, {"node1": {"first": 30}, "node2": {"first": 30}})
    worlds.append(w)
    w.add_app("app-1", "root.parent.child1")
    w.add_app("app-2", "root.parent.child2")
    w.add_app("app-3", "root.parent.child3")
    running(w, "alloc1", "app-1", {"first": 5}, "node1", age=HOUR)
    running(w, "alloc2", "app-1", {"first": 5}, "node2")
    running(w, "alloc4", "app-3", {"first": 5}, "node2")
    pending(w, "alloc3", "app-2", {"first": 10})
    rm = MockRM(feasible=frozenset({"node2"}))
    assert decide(w, "root.parent.child2", "app-2", "alloc3", rm) == ("node2", ["alloc2", "alloc4"])


def test_try_preemption_on_queue_victims_available_lower_priority(worlds: list[World]) -> None:
    """TestTryPreemption_OnQueue_VictimsAvailable_LowerPriority: as the previous test, but
    child1's alloc1 (2 minutes old) and alloc2 (1 minute old) run on node1, and child3's alloc4
    has priority 1000: node1, alloc1 and alloc2 preempted, alloc4 untouched."""
    w = cluster(THREE_CHILDREN, {"node1": {"first": 30}, "node2": {"first": 30}})
    worlds.append(w)
    w.add_app("app-1", "root.parent.child1")
    w.add_app("app-2", "root.parent.child2")
    w.add_app("app-3", "root.parent.child3")
    running(w, "alloc1", "app-1", {"first": 5}, "node1", age=2 * MINUTE)
    running(w, "alloc2", "app-1", {"first": 5}, "node1", age=MINUTE)
    running(w, "alloc4", "app-3", {"first": 5}, "node2", priority=1000)
    pending(w, "alloc3", "app-2", {"first": 10})
    result = decide(w, "root.parent.child2", "app-2", "alloc3", MockRM())
    assert isinstance(result, tuple) and result[0] == "node1" and sorted(result[1]) == ["alloc1", "alloc2"], result


# -- TryPreemption: resource types and guarantees at several levels -------------------------------


def _yaml_resources(maximum: Mapping[str, int] | None = None, guaranteed: Mapping[str, int] | None = None) -> str:
    parts = []
    for name, value in (("max", maximum), ("guaranteed", guaranteed)):
        if value:
            parts.append(f"{name}: {{" + ", ".join(f"{k}: {v}" for k, v in value.items()) + "}")
    return "resources: {" + ", ".join(parts) + "}"


def two_parents(*, parent_max: Mapping[str, int] | None = None, parent1_g: Mapping[str, int] | None = None,
                parent2_g: Mapping[str, int] | None = None, child1_g: Mapping[str, int] | None = None,
                child2_g: Mapping[str, int] | None = None, child2_under: str = "parent2") -> str:
    """root.parent with parent1 (child1, the ask's leaf) and parent2 (child2, the victims'
    leaf, and child3, empty); ``child2_under: parent1`` puts child2 next to child1 instead."""
    child2 = f"""\
                  - name: child2
                    {_yaml_resources(guaranteed=child2_g)}
"""
    return f"""\
          - name: parent
            {_yaml_resources(maximum=parent_max)}
            queues:
              - name: parent1
                {_yaml_resources(guaranteed=parent1_g)}
                queues:
                  - name: child1
                    {_yaml_resources(guaranteed=child1_g)}
{child2 if child2_under == "parent1" else ""}              - name: parent2
                {_yaml_resources(guaranteed=parent2_g)}
                queues:
{child2 if child2_under == "parent2" else ""}                  - name: child3
"""


def victims_in_child2(w: World, small: Mapping[str, int], vcore_one: Mapping[str, int], *, on_node: bool) -> None:
    """YuniKorn's createVictimApplications plus the victims of the AskResTypes tests: in
    root.parent.parent2.child2, app-1 holds alloc5..alloc7 (``small``, the oldest) and alloc1,
    app-2 alloc2 and app-3 alloc3 (``vcore_one`` each, alloc2 and alloc3 the newest; in the
    OnNode variants alloc3 is a moment newer than alloc2, as time.Now() makes it there)."""
    for app in ("app-1", "app-2", "app-3"):
        w.add_app(app, "root.parent.parent2.child2")
    old, older = (MINUTE, 2 * MINUTE) if on_node else (HOUR, 2 * HOUR)
    for i in range(5, 8):
        running(w, f"alloc{i}", "app-1", small, "node1", age=older)
    running(w, "alloc1", "app-1", vcore_one, "node1", age=old)
    running(w, "alloc2", "app-2", vcore_one, "node1", age=1 if on_node else 0)
    running(w, "alloc3", "app-3", vcore_one, "node1")


def test_try_preemption_ask_res_types_different_guaranteed_set_on_preemptor_side(worlds: list[World]) -> None:
    """TestTryPreemption_AskResTypesDifferent_GuaranteedSetOnPreemptorSide: node1 {vcores:3,
    mem:400} has room; parent max vcores:2 is full; parent1 (guaranteed vcores:1) holds child1,
    which asks vcores:1; child2 (no guarantee anywhere) holds alloc1 (an hour old) and alloc2
    ({vcores:1, mem:200} each). alloc2, the newest, is preempted."""
    w = cluster(two_parents(parent_max={"vcores": 2}, parent1_g={"vcores": 1}), {"node1": {"vcores": 3, "mem": 400}})
    worlds.append(w)
    w.add_app("app-1", "root.parent.parent2.child2")
    w.add_app("app-2", "root.parent.parent1.child1")
    running(w, "alloc1", "app-1", {"vcores": 1, "mem": 200}, "node1", age=HOUR)
    running(w, "alloc2", "app-1", {"vcores": 1, "mem": 200}, "node1")
    pending(w, "alloc3", "app-2", {"vcores": 1})
    assert decide(w, "root.parent.parent1.child1", "app-2", "alloc3", MockRM()) == ("node1", ["alloc2"])


def test_try_preemption_on_node_ask_res_types_different_guaranteed_set_on_preemptor_side(worlds: list[World]) -> None:
    """TestTryPreemption_OnNode_AskResTypesDifferent_GuaranteedSetOnPreemptorSide: as the
    previous test on a full node1 {vcores:2, mem:400}; alloc1 is a minute old. The RM accepts
    node1 with [alloc2, alloc1] from index 0: alloc2 is preempted."""
    w = cluster(two_parents(parent_max={"vcores": 2}, parent1_g={"vcores": 1}), {"node1": {"vcores": 2, "mem": 400}})
    worlds.append(w)
    w.add_app("app-1", "root.parent.parent2.child2")
    w.add_app("app-2", "root.parent.parent1.child1")
    running(w, "alloc1", "app-1", {"vcores": 1, "mem": 200}, "node1", age=MINUTE)
    running(w, "alloc2", "app-1", {"vcores": 1, "mem": 200}, "node1")
    pending(w, "alloc3", "app-2", {"vcores": 1})
    rm = MockRM([Expected("alloc3", "node1", ("alloc2", "alloc1"), 0, 0)])
    assert decide(w, "root.parent.parent1.child1", "app-2", "alloc3", rm) == ("node1", ["alloc2"])
    assert rm.error is None


def test_try_preemption_ask_res_types_different_guaranteed_set_on_victim_and_preemptor_sides(worlds: list[World]) -> None:
    """TestTryPreemption_AskResTypesDifferent_GuaranteedSetOnVictimAndPreemptorSides: node1
    {vcores:5, mem:700} has room; parent max vcores:3 is full; child1 (guaranteed vcores:2)
    asks vcores:2; child2 (guaranteed vcores:1) runs alloc5..7 (mem:100) and alloc1, alloc2,
    alloc3 ({vcores:1, mem:100}). alloc2 and alloc3 are preempted; alloc1 stays (child2's
    guarantee), the mem-only allocations too (no type in common with the ask)."""
    w = cluster(two_parents(parent_max={"vcores": 3}, child1_g={"vcores": 2}, child2_g={"vcores": 1}),
                {"node1": {"vcores": 5, "mem": 700}})
    worlds.append(w)
    victims_in_child2(w, {"mem": 100}, {"vcores": 1, "mem": 100}, on_node=False)
    w.add_app("app-4", "root.parent.parent1.child1")
    pending(w, "alloc4", "app-4", {"vcores": 2})
    result = decide(w, "root.parent.parent1.child1", "app-4", "alloc4", MockRM())
    assert isinstance(result, tuple) and result[0] == "node1" and sorted(result[1]) == ["alloc2", "alloc3"], result


def test_try_preemption_on_node_ask_res_types_different_guaranteed_set_on_victim_and_preemptor_sides(
        worlds: list[World]) -> None:
    """TestTryPreemption_OnNode_AskResTypesDifferent_GuaranteedSetOnVictimAndPreemptorSides: as
    the previous test on a full node1 {vcores:3, mem:600} and no parent max; the RM accepts
    node1 with [alloc3, alloc2] from index 1: alloc2 and alloc3 are preempted, alloc1 stays."""
    w = cluster(two_parents(child1_g={"vcores": 2}, child2_g={"vcores": 1}), {"node1": {"vcores": 3, "mem": 600}})
    worlds.append(w)
    victims_in_child2(w, {"mem": 100}, {"vcores": 1, "mem": 100}, on_node=True)
    w.add_app("app-4", "root.parent.parent1.child1")
    pending(w, "alloc4", "app-4", {"vcores": 2})
    rm = MockRM([Expected("alloc4", "node1", ("alloc3", "alloc2"), 1, 1)])
    assert decide(w, "root.parent.parent1.child1", "app-4", "alloc4", rm) == ("node1", ["alloc3", "alloc2"])
    assert rm.error is None


@pytest.mark.parametrize("ask_cores,alloc1_preempted", [
    pytest.param(2, False, id="preempt 2 victims - alloc1 protected"),
    pytest.param(3, True, id="preempt 3 victims with pods dimension"),
])
def test_try_preemption_ask_res_types_same_guaranteed_set_on_preemptor_side(
        worlds: list[World], ask_cores: int, alloc1_preempted: bool) -> None:
    """TestTryPreemption_AskResTypesSame_GuaranteedSetOnPreemptorSide: node1 {vcores:6, gpu:300,
    mem:200, pods:10} has room; parent max {vcores:3, gpu:300, mem:200, pods:10} is full in
    vcores; child1 (guaranteed vcores:3) asks {vcores:2 or 3, mem:200, pods:1}; child2 (no
    guarantee) runs alloc5..7 (gpu:100) and alloc1..3 ({vcores:1, pods:1}). Asking 2: alloc2
    and alloc3; asking 3: alloc1 too. The gpu allocations stay."""
    w = cluster(two_parents(parent_max={"vcores": 3, "gpu": 300, "mem": 200, "pods": 10}, child1_g={"vcores": 3}),
                {"node1": {"vcores": 6, "gpu": 300, "mem": 200, "pods": 10}})
    worlds.append(w)
    victims_in_child2(w, {"gpu": 100}, {"vcores": 1, "pods": 1}, on_node=False)
    w.add_app("app-4", "root.parent.parent1.child1")
    pending(w, "alloc4", "app-4", {"vcores": ask_cores, "mem": 200, "pods": 1})
    result = decide(w, "root.parent.parent1.child1", "app-4", "alloc4", MockRM())
    expected = ["alloc1", "alloc2", "alloc3"] if alloc1_preempted else ["alloc2", "alloc3"]
    assert isinstance(result, tuple) and result[0] == "node1" and sorted(result[1]) == expected, result


def test_try_preemption_on_node_ask_res_types_same_guaranteed_set_on_preemptor_side(worlds: list[World]) -> None:
    """TestTryPreemption_OnNode_AskResTypesSame_GuaranteedSetOnPreemptorSide: full node1
    {vcores:3, gpu:300, mem:200}; no parent max; child1 (guaranteed vcores:2) asks {vcores:2,
    mem:200}; child2 (no guarantee) runs alloc5..7 (gpu:100) and alloc1..3 (vcores:1). The RM
    accepts node1 with [alloc3, alloc2, alloc1] from index 1: alloc3 and alloc2, not alloc1
    (child1 would go over its guarantee)."""
    w = cluster(two_parents(child1_g={"vcores": 2}), {"node1": {"vcores": 3, "gpu": 300, "mem": 200}})
    worlds.append(w)
    victims_in_child2(w, {"gpu": 100}, {"vcores": 1}, on_node=True)
    w.add_app("app-4", "root.parent.parent1.child1")
    pending(w, "alloc4", "app-4", {"vcores": 2, "mem": 200})
    rm = MockRM([Expected("alloc4", "node1", ("alloc3", "alloc2", "alloc1"), 1, 1)])
    assert decide(w, "root.parent.parent1.child1", "app-4", "alloc4", rm) == ("node1", ["alloc3", "alloc2"])
    assert rm.error is None


def test_try_preemption_ask_res_types_same_guaranteed_set_on_victim_and_preemptor_sides(worlds: list[World]) -> None:
    """TestTryPreemption_AskResTypesSame_GuaranteedSetOnVictimAndPreemptorSides: node1
    {vcores:5, gpu:700, mem:200} has room; parent max {vcores:3, gpu:700, mem:200} is full in
    vcores; child1 (guaranteed vcores:2) asks {vcores:2, mem:200}; child2 (guaranteed vcores:1)
    runs alloc5..7 (gpu:100) and alloc1..3 (vcores:1). alloc2 and alloc3 are preempted; alloc1
    stays (child2's guarantee)."""
    w = cluster(two_parents(parent_max={"vcores": 3, "gpu": 700, "mem": 200}, child1_g={"vcores": 2},
                            child2_g={"vcores": 1}), {"node1": {"vcores": 5, "gpu": 700, "mem": 200}})
    worlds.append(w)
    victims_in_child2(w, {"gpu": 100}, {"vcores": 1}, on_node=False)
    w.add_app("app-4", "root.parent.parent1.child1")
    pending(w, "alloc4", "app-4", {"vcores": 2, "mem": 200})
    result = decide(w, "root.parent.parent1.child1", "app-4", "alloc4", MockRM())
    assert isinstance(result, tuple) and result[0] == "node1" and sorted(result[1]) == ["alloc2", "alloc3"], result


def test_try_preemption_on_node_ask_res_types_same_guaranteed_set_on_victim_and_preemptor_sides(
        worlds: list[World]) -> None:
    """TestTryPreemption_OnNode_AskResTypesSame_GuaranteedSetOnVictimAndPreemptorSides: as the
    previous test on a full node1 {vcores:3, gpu:700, mem:200} and no parent max; the RM accepts
    node1 with [alloc3, alloc2] from index 1: alloc3 and alloc2 preempted, alloc1 stays."""
    w = cluster(two_parents(child1_g={"vcores": 2}, child2_g={"vcores": 1}),
                {"node1": {"vcores": 3, "gpu": 700, "mem": 200}})
    worlds.append(w)
    victims_in_child2(w, {"gpu": 100}, {"vcores": 1}, on_node=True)
    w.add_app("app-4", "root.parent.parent1.child1")
    pending(w, "alloc4", "app-4", {"vcores": 2, "mem": 200})
    rm = MockRM([Expected("alloc4", "node1", ("alloc3", "alloc2"), 1, 1)])
    assert decide(w, "root.parent.parent1.child1", "app-4", "alloc4", rm) == ("node1", ["alloc3", "alloc2"])
    assert rm.error is None


@pytest.mark.parametrize("child1_g,child2_g,expected", [
    pytest.param(None, {"vcores": 1}, ("node1", ["alloc2"]),
                 id="UGParent_With_UGPreemptorChild_GNotSetOnVictimChild_As_Siblings"),
    pytest.param(None, None, None, id="UGParent_With_GNotSetOnBothChilds"),
    pytest.param({"vcores": 1}, {"vcores": 1}, ("node1", ["alloc2"]),
                 id="UGParent_With_UGPreemptorChild_OGVictimChild_As_Siblings"),
])
def test_try_preemption_on_node_ug_parent(worlds: list[World], child1_g: dict[str, int] | None,
                                          child2_g: dict[str, int] | None, expected: Outcome | None) -> None:
    """TestTryPreemption_OnNode_UGParent_With_*: full node1 vcores:2; parent max 20; parent1
    (guaranteed vcores:10, under it) holds child1, which runs alloc1 (2 minutes old) and alloc2
    (1 minute old), vcores:1 each, and child2, which asks vcores:1. The RM accepts node1 with
    [alloc2, alloc1] from index 0. A guarantee on child2: alloc2 is preempted (whether child1
    has a guarantee, then exceeded, or not); no guarantee on either child: nothing, so the
    siblings do not preempt each other in a loop."""
    w = cluster(f"""\
          - name: parent
            resources: {{max: {{vcores: 20}}}}
            queues:
              - name: parent1
                resources: {{guaranteed: {{vcores: 10}}}}
                queues:
                  - name: child1
                    {_yaml_resources(guaranteed=child1_g)}
                  - name: child2
                    {_yaml_resources(guaranteed=child2_g)}
              - name: parent2
                queues:
                  - name: child3
""", {"node1": {"vcores": 2}})
    worlds.append(w)
    w.add_app("app-1", "root.parent.parent1.child1")
    w.add_app("app-2", "root.parent.parent1.child1")
    w.add_app("app-3", "root.parent.parent1.child2")
    running(w, "alloc1", "app-1", {"vcores": 1}, "node1", age=2 * MINUTE)
    running(w, "alloc2", "app-2", {"vcores": 1}, "node1", age=MINUTE)
    pending(w, "alloc3", "app-3", {"vcores": 1})
    rm = MockRM([Expected("alloc3", "node1", ("alloc2", "alloc1") if child1_g is None else ("alloc2",), 0, 0)])
    result = decide(w, "root.parent.parent1.child2", "app-3", "alloc3", rm)
    if expected is None:
        assert not isinstance(result, tuple), result
    else:
        assert result == expected


def test_try_preemption_victim_queue_with_og_and_ug_res_types(worlds: list[World]) -> None:
    """TestTryPreemption_VictimQueue_With_OG_And_UG_ResTypes: node1 and node2 {first:10,
    second:2}, full in first; parent max {first:20, second:4}; child1 (guaranteed {first:10,
    second:2}) runs alloc1 (node1) and alloc2 (node2), first:10 each; child2 (guaranteed
    first:10) asks first:5. One of alloc1 and alloc2 is preempted, though child1 does not use
    its guarantee of second."""
    w = cluster("""\
          - name: parent
            resources: {max: {first: 20, second: 4}}
            queues:
              - name: child1
                resources: {guaranteed: {first: 10, second: 2}}
              - name: child2
                resources: {guaranteed: {first: 10}}
""", {"node1": {"first": 10, "second": 2}, "node2": {"first": 10, "second": 2}})
    worlds.append(w)
    w.add_app("app-1", "root.parent.child1")
    w.add_app("app-2", "root.parent.child2")
    running(w, "alloc1", "app-1", {"first": 10}, "node1", age=HOUR)
    running(w, "alloc2", "app-1", {"first": 10}, "node2")
    pending(w, "alloc3", "app-2", {"first": 5})
    result = decide(w, "root.parent.child2", "app-2", "alloc3")
    assert isinstance(result, tuple) and len(result[1]) == 1 and result[1][0] in ("alloc1", "alloc2"), result


_UNDER_DIFF_PARENT = [
    # The guarantee on parent1 only: child1's remaining guarantee is parent1's bounded by
    # child1's empty one (a missing type counts 0), {first:-10, second:0}, over in every type.
    pytest.param({"first": 10, "second": 2}, {"first": 10}, None, None,
                 id="victim queue under parent different from ask queue with some OG res types"),
    pytest.param(None, None, {"first": 10, "second": 2}, {"first": 10},
                 id="victim queue with some OG res types under parent different from ask queue"),
]


@pytest.mark.parametrize("victim_parent_g,ask_parent_g,victim_child_g,ask_child_g", _UNDER_DIFF_PARENT)
def test_try_preemption_victim_queue_under_diff_parent_with_og_and_ug_res_types(
        worlds: list[World], victim_parent_g: dict[str, int] | None, ask_parent_g: dict[str, int] | None,
        victim_child_g: dict[str, int] | None, ask_child_g: dict[str, int] | None) -> None:
    """TestTryPreemption_VictimQueue_Under_Diff_Parent_With_OG_And_UG_ResTypes: as the previous
    test one level down: parent1/child1 run the victims, parent2/child2 ask, with the
    guarantees on the parents or on the children. One of alloc1 and alloc2 is preempted."""
    w = cluster(f"""\
          - name: parent
            resources: {{max: {{first: 20, second: 4}}}}
            queues:
              - name: parent1
                {_yaml_resources(guaranteed=victim_parent_g)}
                queues:
                  - name: child1
                    {_yaml_resources(guaranteed=victim_child_g)}
              - name: parent2
                {_yaml_resources(guaranteed=ask_parent_g)}
                queues:
                  - name: child2
                    {_yaml_resources(guaranteed=ask_child_g)}
""", {"node1": {"first": 10, "second": 2}, "node2": {"first": 10, "second": 2}})
    worlds.append(w)
    w.add_app("app-1", "root.parent.parent1.child1")
    w.add_app("app-2", "root.parent.parent2.child2")
    running(w, "alloc1", "app-1", {"first": 10}, "node1", age=HOUR)
    running(w, "alloc2", "app-1", {"first": 10}, "node2")
    pending(w, "alloc3", "app-2", {"first": 5})
    result = decide(w, "root.parent.parent2.child2", "app-2", "alloc3")
    assert isinstance(result, tuple) and len(result[1]) == 1 and result[1][0] in ("alloc1", "alloc2"), result


def ask_queue_over_in_other_type(w: World, victim_leaf: str, ask_leaf: str) -> Outcome:
    """YuniKorn's AskQueue_*_OG_And_UG_ResTypes scenario (see the tests)."""
    w.add_app("app-1", victim_leaf)
    w.add_app("app-2", ask_leaf)
    w.add_app("app-3", ask_leaf)
    running(w, "alloc1", "app-1", {"first": 10}, "node1", age=HOUR)
    running(w, "alloc2", "app-1", {"first": 5}, "node2")
    running(w, "alloc3", "app-2", {"first": 5, "second": 3}, "node2")
    pending(w, "alloc4", "app-3", {"first": 5, "third": 10})
    return decide(w, ask_leaf, "app-3", "alloc4")


def test_try_preemption_ask_queue_with_og_and_ug_res_types(worlds: list[World]) -> None:
    """TestTryPreemption_AskQueue_With_OG_And_UG_ResTypes: node1 and node2 {first:10, second:3,
    third:10}; parent max {first:20, second:6}; child1 (guaranteed first:10) runs alloc1
    (first:10, node1) and alloc2 (first:5, node2); child2 (guaranteed {first:10, second:2})
    runs alloc3 ({first:5, second:3}, node2: over its guarantee in second) and asks {first:5,
    third:10}. One of alloc1 and alloc2 is preempted."""
    w = cluster("""\
          - name: parent
            resources: {max: {first: 20, second: 6}}
            queues:
              - name: child1
                resources: {guaranteed: {first: 10}}
              - name: child2
                resources: {guaranteed: {first: 10, second: 2}}
""", {"node1": {"first": 10, "second": 3, "third": 10}, "node2": {"first": 10, "second": 3, "third": 10}})
    worlds.append(w)
    result = ask_queue_over_in_other_type(w, "root.parent.child1", "root.parent.child2")
    assert isinstance(result, tuple) and len(result[1]) == 1 and result[1][0] in ("alloc1", "alloc2"), result


@pytest.mark.parametrize("victim_parent_g,ask_parent_g,victim_child_g,ask_child_g", [
    pytest.param({"first": 10}, {"first": 10, "second": 2}, None, None,
                 id="ask queue under parent different from victim queue with some OG res types"),
    pytest.param(None, None, {"first": 10}, {"first": 10, "second": 2},
                 id="ask queue with some OG res types under parent different from victim queue"),
])
def test_try_preemption_ask_queue_under_diff_parent_with_og_and_ug_res_types(
        worlds: list[World], victim_parent_g: dict[str, int] | None, ask_parent_g: dict[str, int] | None,
        victim_child_g: dict[str, int] | None, ask_child_g: dict[str, int] | None) -> None:
    """TestTryPreemption_AskQueue_Under_DiffParent_With_OG_And_UG_ResTypes: as the previous test
    one level down (parent1/child1 the victims, parent2/child2 the ask), the guarantees on the
    parents or on the children. One of alloc1 and alloc2 is preempted."""
    w = cluster(f"""\
          - name: parent
            resources: {{max: {{first: 20, second: 6}}}}
            queues:
              - name: parent1
                {_yaml_resources(guaranteed=victim_parent_g)}
                queues:
                  - name: child1
                    {_yaml_resources(guaranteed=victim_child_g)}
              - name: parent2
                {_yaml_resources(guaranteed=ask_parent_g)}
                queues:
                  - name: child2
                    {_yaml_resources(guaranteed=ask_child_g)}
""", {"node1": {"first": 10, "second": 3, "third": 10}, "node2": {"first": 10, "second": 3, "third": 10}})
    worlds.append(w)
    result = ask_queue_over_in_other_type(w, "root.parent.parent1.child1", "root.parent.parent2.child2")
    assert isinstance(result, tuple) and len(result[1]) == 1 and result[1][0] in ("alloc1", "alloc2"), result


# -- tryAllocate: the delay, the node, other asks' reservations -----------------------------------


def preempt_node_setup(w: World) -> None:
    """YuniKorn's createPreemptNodeTestSetup as running allocations: node1 and node2 first:20;
    root.unlimited (no limits) runs alloc0-0 (node1) and alloc0-1 (node2), first:11 each;
    root.parent (max 20, guaranteed 10) has child1 (guaranteed 5), running alloc1 (node1) and
    alloc2 (node2), first:5 each, and child2 (guaranteed 5), whose ask alloc3 (first:5) holds
    node1 reserved."""
    w.add_app("app-0", "root.unlimited")
    w.add_app("app-1", "root.parent.child1")
    w.add_app("app-2", "root.parent.child2")
    w.add_app("app-3", "root.parent.child2")
    running(w, "alloc0-0", "app-0", {"first": 11}, "node1", age=4)
    running(w, "alloc0-1", "app-0", {"first": 11}, "node2", age=3)
    running(w, "alloc1", "app-1", {"first": 5}, "node1", age=2)
    running(w, "alloc2", "app-1", {"first": 5}, "node2", age=1)
    pending(w, "alloc3", "app-2", {"first": 5})


PREEMPT_NODE = """\
          - name: parent
            resources: {max: {first: 20}, guaranteed: {first: 10}}
            queues:
              - name: child1
                resources: {guaranteed: {first: 5}}
              - name: child2
                resources: {guaranteed: {first: 5}}
          - name: unlimited
"""

@pytest.mark.parametrize("priority,reserved,expected", [
    pytest.param(-1, frozenset({"node1"}), None, id="WithHighPriority, ask below the reserved ask"),
    pytest.param(1, frozenset({"node1", "node2"}), None,
                 id="NotPossibleToCancel, reserved asks triggered preemption or need their node"),
])
def test_try_allocate_preempt_node_with_reservations(worlds: list[World], priority: int, reserved: frozenset[str],
                                                     expected: Outcome | None) -> None:
    """TestTryAllocatePreemptNodeWithReservations, ...WithHighPriority and
    ...NotPossibleToCancel, the rows where no reservation gives way: the setup of
    TestTryAllocatePreemptNode (alloc3 holds node1 reserved) and another ask of child2, alloc4
    (first:5). Below the reserved ask: nothing. With node2 reserved too by a daemon set ask and
    alloc3 having triggered preemption: nothing. The rows where a reservation gives way (YuniKorn
    sets the wait timeout to -60 s in its test) need the scheduling cycle's rule, and are run
    through it in tests/test_preemption.py::test_another_ask_s_reservation_gives_way_only_by_yunikorn_s_rule."""
    w = cluster(PREEMPT_NODE, {"node1": {"first": 20}, "node2": {"first": 20}})
    worlds.append(w)
    preempt_node_setup(w)
    pending(w, "alloc4", "app-3", {"first": 5}, priority=priority)
    result = decide(w, "root.parent.child2", "app-3", "alloc4", reserved=reserved)
    if expected is None:
        assert not isinstance(result, tuple), result
    else:
        assert result == expected


def test_try_allocate_preempt_queue(worlds: list[World]) -> None:
    """TestTryAllocatePreemptQueue: node1 first:20; parent max 20 guaranteed 10; child1 and
    child2 guaranteed 5. child1 runs alloc1 then alloc2 (first:5); child2's ask alloc3 (first:5,
    may preempt) fails the headroom YuniKorn's test gives it (0). First attempt: the 30 s delay
    has not passed, nothing. Once it has: alloc2 (the newest) is preempted and node1 reserved.
    (The headroom is the test's, not the queues': the preconditions and the decision run as
    tryAllocate runs them.)"""
    w = cluster("""\
          - name: parent
            resources: {max: {first: 20}, guaranteed: {first: 10}}
            queues:
              - name: child1
                resources: {guaranteed: {first: 5}}
              - name: child2
                resources: {guaranteed: {first: 5}}
""", {"node1": {"first": 20}})
    worlds.append(w)
    w.add_app("app-1", "root.parent.child1")
    w.add_app("app-2", "root.parent.child2")
    running(w, "alloc1", "app-1", {"first": 5}, "node1", age=2)
    running(w, "alloc2", "app-1", {"first": 5}, "node1", age=1)
    ask = pending(w, "alloc3", "app-2", {"first": 5})
    delay = 30 * NS
    assert not check_preconditions(ask, delay, w.clock.now_ns()), "not enough time has passed"
    w.advance(30.0)
    assert check_preconditions(ask, delay, w.clock.now_ns())
    assert decide(w, "root.parent.child2", "app-2", "alloc3") == ("node1", ["alloc2"])


def test_try_allocate_preempt_node(worlds: list[World]) -> None:
    """TestTryAllocatePreemptNode, through the scheduling cycle: node1 and node2 first:20;
    root.unlimited takes 11 on each node, child1 (guaranteed 5) 5 on each (alloc1 on node1,
    alloc2 on node2): 4 left per node. child2's ask alloc3 (first:5) fits no node: it reserves
    node1; once its 30 s preemption delay has passed it preempts alloc1 there, and is placed
    on node1 after the RM confirms."""
    w = cluster(PREEMPT_NODE, {"node1": {"first": 20}, "node2": {"first": 20}})
    worlds.append(w)
    for app, queue in (("app-0", "root.unlimited"), ("app-1", "root.parent.child1"), ("app-2", "root.parent.child2")):
        w.add_app(app, queue)
    cycle = SchedulingCycle(w.context)
    for key, app, size in (("alloc0-0", "app-0", 11), ("alloc0-1", "app-0", 11), ("alloc1", "app-1", 5),
                           ("alloc2", "app-1", 5)):
        w.ask(key, app, {"first": size})
        assert [d.ask.allocation_key for d in cycle.run()] == [key]
        w.advance(1.0)
    part = w.partition()
    placed = {key: alloc.node_id for app in part.applications.values() for key, alloc in app.allocations.items()}
    assert placed == {"alloc0-0": "node1", "alloc0-1": "node2", "alloc1": "node1", "alloc2": "node2"}
    pending(w, "alloc3", "app-2", {"first": 5})
    assert cycle.run() == []
    w.advance(2.5)
    cycle.run()
    assert part.reservations.by_key["alloc3"].node_id == "node1", "reserved after the reservation delay"
    assert w.rm.released == []
    w.advance(28.0)
    cycle.run()
    assert [r.allocation_key for r in w.rm.released] == ["alloc1"]
    assert not part.applications["app-1"].allocations["alloc2"].preempted
    w.release("app-1", "alloc1", termination=si.TerminationType.PREEMPTED_BY_SCHEDULER)
    assert [(d.ask.allocation_key, d.node.node_id) for d in cycle.run()] == [("alloc3", "node1")]


# -- eligible victims -----------------------------------------------------------------------------


def eligible_config(*, parent1: str = "", parent2: str = "", leaf1: str = "", leaf2: str = "",
                    parent2_guaranteed: int = 100) -> str:
    """YuniKorn's TestFindEligiblePreemptionVictims queues: parent1 and parent2 (max memory 200,
    guaranteed 100) with leaf1 and leaf2; ``parentN``/``leafN`` are their properties."""
    return f"""\
          - name: parent1
            properties: {{{parent1}}}
            resources: {{max: {{memory: 200}}, guaranteed: {{memory: 100}}}}
            queues:
              - name: leaf1
                properties: {{{leaf1}}}
          - name: parent2
            properties: {{{parent2}}}
            resources: {{max: {{memory: 200}}, guaranteed: {{memory: {parent2_guaranteed}}}}}
            queues:
              - name: leaf2
                properties: {{{leaf2}}}
"""


FENCE = "preemption.policy: fence"


@pytest.mark.parametrize("queues,change,fence,expected", [
    pytest.param(eligible_config(), "no allocations", "root", [], id="no victims when no allocations exist"),
    pytest.param(eligible_config(), "", "root", ["ask2", "ask3"], id="two lower-priority allocations in leaf2"),
    pytest.param(eligible_config(leaf2="preemption.policy: disabled"), "", "root", [],
                 id="preemption disabled on the victim queue"),
    pytest.param(eligible_config(parent1=FENCE), "", "root.parent1", [], id="fence on parent1 limits the scope"),
    pytest.param(eligible_config(leaf1=FENCE), "", "root.parent1.leaf1", [], id="fence on leaf1 limits the scope"),
    pytest.param(eligible_config(parent2=FENCE), "", "root", ["ask2", "ask3"], id="fence on parent2 does not"),
    pytest.param(eligible_config(leaf2=FENCE), "", "root", ["ask2", "ask3"], id="fence on leaf2 does not"),
    pytest.param(eligible_config(), "parent1 full", "root.parent1", [], id="parent1 at its max fences it"),
    pytest.param(eligible_config(), "alloc2 required node", "root", ["ask3"], id="a required node"),
    pytest.param(eligible_config(), "alloc2 preempted", "root", ["ask3"], id="already preempted"),
    pytest.param(eligible_config(parent2="priority.offset: 1001"), "", "root", [], id="priority offset 1001 on parent2"),
    pytest.param(eligible_config(parent2="priority.policy: fence, priority.offset: 1"), "", "root", [],
                 id="priority fence on parent2 with a positive offset"),
    pytest.param(eligible_config(parent2="priority.policy: fence, priority.offset: -1"), "", "root",
                 ["ask2", "ask3"], id="priority fence on parent2 with a negative offset"),
    pytest.param(eligible_config(parent1="priority.policy: fence, priority.offset: -1000"), "", "root",
                 ["ask2", "ask3"], id="priority fence on parent1 with a small negative offset"),
    pytest.param(eligible_config(parent1="priority.policy: fence, priority.offset: -1001"), "", "root", [],
                 id="priority fence on parent1 with a larger negative offset"),
    pytest.param(eligible_config(parent2_guaranteed=200), "", "root", [], id="parent2 guaranteed its usage"),
])
def test_find_eligible_preemption_victims(worlds: list[World], queues: str, change: str, fence: str,
                                          expected: list[str]) -> None:
    """queue_test::TestFindEligiblePreemptionVictims: an ask of memory:100 (priority 0) in leaf1;
    leaf2 (under parent2, guaranteed 100, using 200) runs ask2 and ask3 (memory:100, priority
    -1000). Disabled, fenced, fenced by max, required node, preempted, priority offsets and
    priority fences, and a guarantee covering the usage, each as YuniKorn has it. (YuniKorn's
    "released placeholder" case has no counterpart: an allocation the RM released is gone.)"""
    w = cluster(queues, {"node1": {"memory": 1000}})
    worlds.append(w)
    w.add_app("app-1", "root.parent1.leaf1")
    w.add_app("app-2", "root.parent2.leaf2")
    if change != "no allocations":
        running(w, "ask2", "app-2", {"memory": 100}, "node1", priority=-1000, required=change == "alloc2 required node")
        running(w, "ask3", "app-2", {"memory": 100}, "node1", priority=-1000)
    if change == "parent1 full":
        w.add_app("app-0", "root.parent1.leaf1")
        running(w, "full", "app-0", {"memory": 200}, "node1")
    if change == "alloc2 preempted":
        w.partition().applications["app-2"].allocations["ask2"].preempted = True
    ask = pending(w, "ask1", "app-1", {"memory": 100})
    part = w.partition()
    victims = Victims(w.queue("root.parent1.leaf1"), ask, part.applications)
    assert victims.fence.path == fence
    assert sorted(alloc.allocation_key for _, alloc in victims.every()) == expected


# -- required-node preemption: order, filter, victims ----------------------------------------------

#: YuniKorn's prepareAllocationAsks: key -> (first, priority, opted in, originator, age in s).
#: ask2, ask4, ask7 and ask9 share the oldest creation time; the others were made after it,
#: in key order.
NODE_ALLOCATIONS: dict[str, tuple[int, int, bool, bool, int]] = {
    "ask1": (10, 10, True, False, 9),
    "ask2": (8, 10, True, False, 10),
    "ask3": (10, 15, True, False, 8),
    "ask4": (5, 10, True, False, 10),
    "ask5": (5, 5, True, False, 7),
    "ask6": (10, 10, False, False, 6),
    "ask7": (8, 10, False, False, 10),
    "ask8": (10, 15, False, False, 5),
    "ask9": (5, 10, False, True, 10),
    "ask10": (5, 5, True, True, 4),
}


def node_with_allocations(worlds: list[World]) -> World:
    w = cluster("""\
          - name: default
""", {"node": {"first": 100}})
    worlds.append(w)
    w.add_app("app1", "root.default")
    for key, (first, priority, self_ok, originator, age) in NODE_ALLOCATIONS.items():
        running(w, key, "app1", {"first": first}, "node", age=age, priority=priority, self_ok=self_ok,
                originator=originator)
    return w


def test_sort_allocations(worlds: list[World]) -> None:
    """preemption_utilities_test::TestSortAllocations: regular allocations first (lower
    priority, then newer, then smaller), then those opted out, then originators:
    5, 1, 4, 2, 3, 6, 7, 8, 10, 9."""
    w = node_with_allocations(worlds)
    allocations = w.partition().applications["app1"].allocations
    ordered = sort_for_required_node([allocations[key] for key in NODE_ALLOCATIONS])
    assert [a.allocation_key for a in ordered] == [f"ask{i}" for i in (5, 1, 4, 2, 3, 6, 7, 8, 10, 9)]


def daemon_set_ask(w: World, key: str, resource: Mapping[str, int], priority: int = 20) -> Allocation:
    w.ask(key, "app1", dict(resource), priority=priority, allocation_tags={si.TAG_REQUIRED_NODE: "node"},
          preemption_policy=si.PreemptionPolicy(allow_preempt_self=True, allow_preempt_other=True))
    return w.partition().applications["app1"].asks[key]


@pytest.mark.parametrize("resource,expected", [
    pytest.param({"first": 25}, ["ask5", "ask1", "ask4", "ask2"], id="victims matching the ask"),
    pytest.param({"first": 5}, ["ask5"], id="victims matching a smaller ask"),
    pytest.param({"first": 5, "second": 5}, [], id="a type no victim holds"),
])
def test_get_victims(worlds: list[World], resource: dict[str, int], expected: list[str]) -> None:
    """required_node_preemptor_test::TestGetVictims: a daemon set ask (priority 20) on the node
    of TestSortAllocations: first:25 takes ask5, ask1, ask4, ask2; first:5 only ask5; an ask
    also needing second (which nobody holds) none. (The "released in the meantime" case has no
    counterpart: an allocation the RM released is gone.)"""
    w = node_with_allocations(worlds)
    ask = daemon_set_ask(w, "ds", resource)
    victims = required_node_victims(ask, w.partition().nodes["node"], None)
    assert [v.allocation_key for v in victims] == expected


@pytest.mark.parametrize("case,expected", [
    pytest.param("no type in common", [], id="no allocation shares a type with the ask"),
    pytest.param("higher priority", [], id="every allocation has a higher priority"),
    pytest.param("", ["ask5"], id="lower priority and a type in common"),
    pytest.param("ask5 preempted", ["ask1"], id="an allocation already preempted"),
    pytest.param("ask9 required node", ["ask5"], id="an allocation with a required node"),
])
def test_filter_allocations(worlds: list[World], case: str, expected: list[str]) -> None:
    """required_node_preemptor_test::TestFilterAllocations, by the victims chosen (pyscheduler
    keeps no filter counts): a daemon set ask of first:5 at priority 20 (second:5 when nothing
    shares its type, priority 1 when everything is above it). An allocation already preempted
    (ask5, which would be the first victim) or with a required node is not a candidate.
    (YuniKorn's released placeholder has no counterpart here.)"""
    w = node_with_allocations(worlds)
    allocations = w.partition().applications["app1"].allocations
    if case == "ask5 preempted":
        allocations["ask5"].preempted = True
    if case == "ask9 required node":
        allocations["ask9"].required_node = "node-3"
    resource = {"second": 5} if case == "no type in common" else {"first": 5}
    ask = daemon_set_ask(w, "ds", resource, priority=1 if case == "higher priority" else 20)
    victims = required_node_victims(ask, w.partition().nodes["node"], None)
    assert [v.allocation_key for v in victims] == expected


# -- quota preemption: victim order, amount, split, greedy choice ----------------------------------


_TOTAL = {"first": 100, "second": 100, "third": 100, "fourth": 100}
_ASK_EXTRA = {"first": 10, "extra_a": 10, "extra_b": 10}
_ASK_TWO = {"first": 1, "second": 1}
_R1 = ("ask1", {"first": 13})
_R2 = ("ask2", {"first": 12, "second": 10})
_R3 = ("ask3", {"first": 11, "second": 10, "third": 10})
_R4 = ("ask4", {"first": 10, "second": 10, "third": 10, "fourth": 10})
_R5 = ("ask4", {"first": 13, "extra_c": 10, "extra_d": 10})
_R6 = ("ask3", {"first": 12, "extra_e": 10, "extra_f": 10})
_R7 = ("ask2", {"first": 11, "extra_g": 10, "extra_h": 10})
_R8 = ("ask1", {"first": 10, "extra_i": 10, "extra_j": 10})
_R9 = ("ask4", {"first": -13, "extra_c": 10, "extra_d": 10})
_R10 = ("ask2", {"first": 5, "second": 10})
_R11 = ("ask1", {"first": 10, "second": 5})
_R12 = ("ask1", {"first": 5})
_R13 = ("ask2", {"first": 10, "second": 10})


def _sort_row(victims: list[tuple[str, dict[str, int]]], ask: dict[str, int], expected: list[str], name: str,
              ) -> object:
    return pytest.param(victims, ask, expected, id=name)


@pytest.mark.parametrize("victims,ask,expected", [
    _sort_row([_R1], _ASK_EXTRA, ["ask1"], "100% matching victims"),
    _sort_row([_R2, _R1], _ASK_EXTRA, ["ask1", "ask2"], "50% matching victims"),
    _sort_row([_R3, _R2, _R1], _ASK_EXTRA, ["ask1", "ask2", "ask3"], "33% matching victims"),
    _sort_row([_R4, _R3, _R2, _R1], _ASK_EXTRA, ["ask1", "ask2", "ask3", "ask4"], "25% matching victims"),
    _sort_row([_R5, _R6, _R7, _R8], _ASK_EXTRA, ["ask1", "ask2", "ask3", "ask4"],
              "ordering on the matching type, other types do not matter"),
    _sort_row([_R6, _R7, _R8, _R9], _ASK_EXTRA, ["ask4", "ask1", "ask2", "ask3"], "a negative quantity"),
    _sort_row([_R10, _R11], _ASK_TWO, ["ask1", "ask2"], "one type bigger, the other smaller, and vice versa"),
    _sort_row([_R13, _R12], _ASK_TWO, ["ask1", "ask2"], "one victim smaller in the only type it has"),
])
def test_sort_allocations_based_on_ask(victims: list[tuple[str, dict[str, int]]], ask: dict[str, int],
                                       expected: list[str]) -> None:
    """preemption_utilities_test::TestSortAllocationsBasedOnAsk: victims of the same kind,
    priority and age, ordered against a total {first..fourth: 100} and an ask (the preemptable
    resource)."""
    allocations = [Allocation(key, "app1", Resource(resource), priority=10, create_time_ns=T0 * NS)
                   for key, resource in victims]
    ordered = sort_for_quota(allocations, Resource(_TOTAL), Resource(ask))
    assert [a.allocation_key for a in ordered] == expected


def _quota_world(worlds: list[World], *, parent_g: Mapping[str, int] | None, leaf_max: Mapping[str, int] | None,
                 leaf_g: Mapping[str, int] | None = None) -> World:
    w = cluster(f"""\
          - name: parent
            {_yaml_resources(guaranteed=parent_g)}
            queues:
              - name: leaf
                {_yaml_resources(maximum=leaf_max, guaranteed=leaf_g)}
""", {"node": {"memory": 10_000, "cpu": 1000, "gpu": 1000, "first": 1000, "second": 1000}})
    worlds.append(w)
    w.add_app("app1", "root.parent.leaf")
    return w


_M1000 = {"memory": 1000}
_USED_MIXED = {"memory": 1500, "cpu": 10, "gpu": 9}


@pytest.mark.parametrize("parent_g,leaf_max,used,expected", [
    pytest.param(None, None, None, {}, id="nil max and nil used"),
    pytest.param(None, None, _M1000, {}, id="nil max"),
    pytest.param(None, _M1000, None, {}, id="nil used"),
    pytest.param(None, _M1000, {"memory": 500}, {}, id="used below max"),
    pytest.param(None, _M1000, {"memory": 1500}, {"memory": 500}, id="used above max"),
    pytest.param(None, {"memory": 1000, "cpu": 10, "gpu": 10}, _USED_MIXED, {"memory": 500},
                 id="above, at and below max in different types, and extra types"),
    pytest.param(None, _M1000, {"cpu": 150}, {}, id="used type without a max"),
    pytest.param({"memory": 1200}, _M1000, {"memory": 1500}, {"memory": 300},
                 id="parent guaranteed, lower than the leaf's preemptable"),
    pytest.param({"memory": 1200}, _M1000, _USED_MIXED, {"memory": 300},
                 id="parent guaranteed, lower than the leaf's preemptable, extra types"),
    pytest.param({"memory": 900}, _M1000, {"memory": 1500}, {"memory": 500},
                 id="parent guaranteed, higher than the leaf's preemptable"),
    pytest.param({"memory": 900}, _M1000, _USED_MIXED, {"memory": 500},
                 id="parent guaranteed, higher than the leaf's preemptable, extra types"),
])
def test_quota_change_get_preemptable_resource(worlds: list[World], parent_g: dict[str, int] | None,
                                               leaf_max: dict[str, int] | None, used: dict[str, int] | None,
                                               expected: dict[str, int]) -> None:
    """quota_preemptor_test::TestQuotaChangeGetPreemptableResource: what a leaf over its max
    releases: usage above the max, only the types over it, bounded by the parent's usage above
    its guarantee."""
    w = _quota_world(worlds, parent_g=parent_g, leaf_max=leaf_max)
    if used is not None:
        running(w, "used", "app1", used, "node")
    assert dict(preemptable_amount(w.queue("root.parent.leaf")).items()) == expected


Victim = tuple[str, dict[str, int], int]


@pytest.mark.parametrize("max_,guaranteed,amount,victims,expected", [
    pytest.param({"first": 10}, None, {"first": 10}, [], [], id="no victims available"),
    pytest.param({"first": 10}, None, {"first": 8}, [("ask1", {"first": 10}, 5), ("ask2", {"first": 8}, 4)],
                 ["ask2"], id="suitable victims available"),
    pytest.param({"first": 10}, None, {"first": 1}, [("ask6", {"first": 11}, 3)], [],
                 id="victims available but none is suitable"),
    pytest.param({"first": 10}, None, {"first": 10}, [("ask21", {"first": 9}, 4), ("ask3", {"first": 11}, 3)],
                 ["ask21"], id="skip over sized victims"),
    pytest.param({"first": 10}, None, {"first": 10},
                 [("ask4", {"first": 5}, 3), ("ask41", {"first": 6}, 2), ("ask42", {"first": 9}, 1)], ["ask4"],
                 id="guaranteed not set"),
    pytest.param({"first": 10}, {"first": 5}, {"first": 10},
                 [("ask4", {"first": 5}, 3), ("ask41", {"first": 6}, 2), ("ask42", {"first": 9}, 1)], ["ask4"],
                 id="guaranteed set but lower than max"),
    pytest.param({"first": 10}, {"first": 10}, {"first": 8},
                 [("ask5", {"first": 5}, 4), ("ask51", {"first": 6}, 3), ("ask52", {"first": 3}, 2),
                  ("ask53", {"first": 4}, 1)], ["ask52", "ask53"], id="best effort - guaranteed set and equals max"),
])
def test_quota_change_try_preemption(worlds: list[World], max_: dict[str, int], guaranteed: dict[str, int] | None,
                                     amount: dict[str, int], victims: list[Victim], expected: list[str]) -> None:
    """quota_preemptor_test::TestQuotaChangeTryPreemption: a leaf whose max went from 20 to 10
    releases, greedily, the victims (priority 10, created minutes ago) that fit in what is
    left of the preemptable resource, smaller share first."""
    w = _quota_world(worlds, parent_g=None, leaf_max=max_, leaf_g=guaranteed)
    for key, resource, minutes in victims:
        running(w, key, "app1", resource, "node", age=minutes * MINUTE, priority=10)
    chosen = _leaf_victims(w.queue("root.parent.leaf"), Resource(amount))
    assert sorted(a.allocation_key for a in chosen) == expected


_SUITABLE: list[Victim] = [("ask1", {"first": 10, "second": 10}, 5), ("ask2", {"first": 9, "second": 9}, 4)]
_OVERSIZED: list[Victim] = [("ask21", {"first": 9, "second": 10}, 4), ("ask3", {"first": 11, "second": 10}, 3)]
_OVERFLOW: list[Victim] = [("ask4", {"first": 5, "second": 10}, 3), ("ask41", {"first": 6, "second": 10}, 2),
                           ("ask42", {"first": 9, "second": 10}, 1)]


@pytest.mark.parametrize("max_,guaranteed,victims,expected", [
    pytest.param({"first": 10}, None, _OVERSIZED, ["ask21"], id="oversized victims with extra resource types"),
    pytest.param({"first": 10}, None, _SUITABLE, ["ask2"], id="suitable victims with types beyond the max"),
    pytest.param({"first": 10}, {"first": 5}, _SUITABLE, ["ask2"], id="suitable victims with types beyond the guarantee"),
    pytest.param({"first": 10, "third": 10}, None, _SUITABLE, ["ask2"], id="a new type added to the max"),
    pytest.param({"second": 10}, None, _SUITABLE, ["ask2"], id="a type removed from the max"),
    pytest.param({"first": 10}, {"first": 5, "fourth": 5}, _OVERFLOW, ["ask4"],
                 id="overflow victims, types beyond the guarantee and vice versa"),
])
def test_quota_change_try_preemption_with_different_res_types(
        worlds: list[World], max_: dict[str, int], guaranteed: dict[str, int] | None, victims: list[Victim],
        expected: list[str]) -> None:
    """quota_preemptor_test::TestQuotaChangeTryPreemptionWithDifferentResTypes: the leaf's new
    max (and guarantee) against victims of two types; the amount is computed from the usage."""
    w = _quota_world(worlds, parent_g=None, leaf_max=max_, leaf_g=guaranteed)
    for key, resource, minutes in victims:
        running(w, key, "app1", resource, "node", age=minutes * MINUTE, priority=10)
    leaf = w.queue("root.parent.leaf")
    chosen = _leaf_victims(leaf, preemptable_amount(leaf))
    assert sorted(a.allocation_key for a in chosen) == expected


@pytest.mark.parametrize("guaranteed,used_extra,amount,expected", [
    pytest.param({"first": 10}, False, {"first": 100}, (22, 11, 41, 24), id="normal distribution"),
    pytest.param({"first": 10}, False, {"first": 200}, (44, 22, 83, 49), id="twice the preemptable resources"),
    pytest.param({"first": 10}, False, {"first": 50}, (10, 5, 20, 12), id="half the preemptable resources"),
    pytest.param({"first": 10, "third": 10}, True, {"first": 100, "fourth": 100}, (22, 11, 41, 24),
                 id="different types: normal distribution"),
    pytest.param({"first": 10, "third": 10}, True, {"first": 200, "fourth": 100}, (44, 22, 83, 49),
                 id="different types: twice the preemptable resources"),
    pytest.param({"first": 10, "third": 10}, True, {"first": 50, "fourth": 100}, (10, 5, 20, 12),
                 id="different types: half the preemptable resources"),
])
def test_quota_change_get_child_queues_preemptable_resource(
        worlds: list[World], guaranteed: dict[str, int], used_extra: bool, amount: dict[str, int],
        expected: tuple[int, int, int, int]) -> None:
    """quota_preemptor_test::TestQuotaChangeGetChildQueuesPreemptableResource(WithDifferentResTypes):
    a parent's preemptable resource split among its children over their guarantees in
    proportion to the excess, rounded down, to the leaves: leaf1 (guaranteed, as are leaf11,
    leaf111, leaf12) uses 50 (leaf111 30, leaf12 20), leaf2 (no guarantee) 80 (leaf211 50,
    leaf22 30), leaf3 nothing, leaf4 exactly its guarantee (10): leaf3 and leaf4 get nothing.
    With different types the guaranteed side also uses second, and the amount has fourth,
    which nobody gets. YuniKorn builds these queues by hand; the configuration check refuses
    children guaranteed more than their parent, so the guarantees are set on the queues."""
    from dataclasses import replace

    w = cluster("""\
          - name: parent
            queues:
              - name: leaf1
                queues:
                  - name: leaf11
                    queues:
                      - name: leaf111
                  - name: leaf12
              - name: leaf2
                queues:
                  - name: leaf21
                    queues:
                      - name: leaf211
                  - name: leaf22
              - name: leaf3
              - name: leaf4
""", {"node": {"first": 1000, "second": 1000}})
    worlds.append(w)
    with w.partition().lock:
        for path in ("leaf1", "leaf1.leaf11", "leaf1.leaf11.leaf111", "leaf1.leaf12", "leaf4"):
            queue = w.queue("root.parent." + path)
            queue.apply_settings(replace(queue.settings, guaranteed=Resource(guaranteed)))
    for i, (path, first) in enumerate((("leaf1.leaf11.leaf111", 30), ("leaf1.leaf12", 20),
                                       ("leaf2.leaf21.leaf211", 50), ("leaf2.leaf22", 30), ("leaf4", 10))):
        w.add_app(f"app{i}", "root.parent." + path)
        second = {"second": first} if used_extra and not path.startswith("leaf2") else {}
        running(w, f"alloc{i}", f"app{i}", {"first": first, **second}, "node")
    out: dict[str, tuple[Queue, Resource]] = {}
    _split(w.queue("root.parent"), Resource(amount), out)
    shares = {path.removeprefix("root.parent."): dict(share.items()) for path, (_, share) in out.items()}
    assert shares == {
        "leaf1.leaf11.leaf111": {"first": expected[0]},
        "leaf1.leaf12": {"first": expected[1]},
        "leaf2.leaf21.leaf211": {"first": expected[2]},
        "leaf2.leaf22": {"first": expected[3]},
    }


# -- queue snapshot arithmetic --------------------------------------------------------------------

_S = {"first": 5}
_C = {"second": 5}
Four = tuple[Quantities | None, Quantities | None, Quantities | None, Quantities | None]
_TREE = {"root": None, "root.parent": "root", "root.parent1": "root", "root.parent.child1": "root.parent",
         "root.parent.child2": "root.parent", "root.parent1.child3": "root.parent1"}
_FOUR = ("root", "root.parent", "root.parent.child1", "root.parent.child2")


def _sum(*parts: Mapping[str, int]) -> Quantities:
    out: Quantities = {}
    for part in parts:
        for k, v in part.items():
            out[k] = out.get(k, 0) + v
    return out


def _times(part: Mapping[str, int], n: int) -> Quantities:
    return {k: v * n for k, v in part.items()}


def snapshots(guaranteed: Four, allocated: Four, ask_leaf: str | None = None) -> list[QueueSnapshot]:
    """YuniKorn's createQPSCache: snapshots of root, parent, child1 and child2 (and the ask's
    leaf, with the ask queue known on its path below root), made as its preemptor makes them."""
    values = {path: (g, a) for path, g, a in zip(_FOUR, guaranteed, allocated)}
    made: dict[str, QueueSnapshot] = {}

    def make(path: str) -> QueueSnapshot:
        if path in made:
            return made[path]
        parent_path = _TREE[path]
        parent = make(parent_path) if parent_path is not None else None
        g, a = values.get(path, (None, None))
        snapshot = QueueSnapshot(path, parent, path.count(".") == 2, dict(a or {}), {}, None,
                                 None if g is None else dict(g), made.get(ask_leaf) if ask_leaf else None)
        made[path] = snapshot
        return snapshot

    if ask_leaf is not None:
        ask = make(ask_leaf)
        path: str | None = ask_leaf
        while path is not None and _TREE[path] is not None:
            made[path].ask_queue = ask
            path = _TREE[path]
    return [make(path) for path in _FOUR]


def _empty(value: Quantities | None) -> bool:
    return not value


def _zero(value: Quantities | None) -> bool:
    return not value or all(v == 0 for v in value.values())


def _equals(value: Quantities | None, expected: Quantities) -> bool:
    return {k: v for k, v in (value or {}).items() if v} == {k: v for k, v in expected.items() if v}


_NONE4: Four = (None, None, None, None)


def test_get_preemptable_resource_no_guaranteed_no_usage() -> None:
    """preemption_queue_test::TestGetPreemptableResourceNoGuaranteedNoUsage: nothing to preempt."""
    assert all(_empty(s.preemptable()) for s in snapshots(_NONE4, _NONE4))


def test_get_preemptable_resource_with_no_allocated_resource() -> None:
    """TestGetPreemptableResourceWithNoAllocatedResource: guarantees but no usage: nothing."""
    assert all(_empty(s.preemptable()) for s in snapshots((_times(_S, 2), _S, _S, _S), _NONE4))


def test_get_preemptable_resource_with_guaranteed_and_usage() -> None:
    """TestGetPreemptableResourceWithGuaranteedAndUsage: parent guaranteed 5 uses 10 (child2):
    root 10, parent 5, child1 nothing, child2 5 (bounded by the parent)."""
    root, parent, child1, child2 = (s.preemptable() for s in snapshots(
        (None, _S, None, None), (_times(_S, 2), _times(_S, 2), None, _times(_S, 2))))
    assert _equals(root, _times(_S, 2)) and _equals(parent, _S) and _zero(child1) and _equals(child2, _S)


def test_get_preemptable_resource_with_guaranteed_and_usage_with_no_allocated_resource() -> None:
    """TestGetPreemptableResourceWithGuaranteedAndUsageWithNoAllocatedResource: nothing."""
    assert all(_empty(s.preemptable()) for s in snapshots((_times(_S, 2), _S, _C, _S), _NONE4))


def test_get_preemptable_resource_with_allocation_double_than_guaranteed() -> None:
    """TestGetPreemptableResourceWithAllocationDoubleThanGuaranteed: child2 (guaranteed second)
    uses first:10: root nothing (at its guarantee), parent 5, child1 nothing, child2 5."""
    root, parent, child1, child2 = (s.preemptable() for s in snapshots(
        (_times(_S, 2), _S, None, {"second": 3}), (_times(_S, 2), _times(_S, 2), None, _times(_S, 2))))
    assert _zero(root) and _equals(parent, _S) and _zero(child1) and _equals(child2, _S)


@pytest.mark.parametrize("child1_used,expected", [
    pytest.param(1, (_C, _C, {}, {}), id="WithMixedResourceTypes"),
    pytest.param(2, (_times(_C, 2), _times(_C, 2), _C, {}), id="WithMixedResourceTypesAllocationDoubleThanGuaranteed"),
])
def test_get_preemptable_resource_with_mixed_resource_types(child1_used: int, expected: Four) -> None:
    """TestGetPreemptableResourceWithMixedResourceTypes(AllocationDoubleThanGuaranteed): child1
    guaranteed second:5 uses second (once or twice), child2 guaranteed first:5 uses it: the
    type used beyond (or without) a guarantee is preemptable up the tree."""
    used = _times(_C, child1_used)
    got = [s.preemptable() for s in snapshots(
        (_times(_S, 2), _S, _C, _S), (_sum(_times(_S, 2), used), _sum(_S, used), used, _S))]
    for value, want in zip(got, expected):
        assert _equals(value, want or {}), (got, expected)


_G1: Four = (_times(_S, 2), _S, _C, _S)
_G2: Four = (_times(_S, 2), _sum(_S, _C), _C, _S)
_A1: Four = _NONE4
_A2: Four = (_times(_S, 2), _times(_S, 2), None, _S)
_A3: Four = (_sum(_times(_S, 2), _C), _sum(_S, _C), _C, _S)
_A4: Four = (_sum(_times(_S, 2), _times(_C, 2)), _sum(_S, _times(_C, 2)), _times(_C, 2), _S)
_A5: Four = (_sum(_times(_S, 2), _times(_C, 2)), _sum(_S, _times(_C, 2)), _times(_C, 2), {"first": 2})
_F0 = {"first": 0}
_F0_SM5 = {"first": 0, "second": -5}

def _remaining_row(guaranteed: Four, allocated: Four, ask_leaf: str, expected: Four, name: str,
                   ) -> object:
    return pytest.param(guaranteed, allocated, ask_leaf, expected, id=name)


_RES1_G: Four = (_times(_S, 2), None, _C, None)
_RES1_REMAINING: Four = (_times(_S, 2), _times(_S, 2), _sum(_times(_S, 2), _C), _times(_S, 2))
_CHILD3 = "root.parent1.child3"
_CHILD2 = "root.parent.child2"


@pytest.mark.parametrize("guaranteed,allocated,ask_leaf,expected", [
    _remaining_row(_RES1_G, _A1, _CHILD3, _RES1_REMAINING, "ask queue child3: guarantees at some levels, no usage"),
    _remaining_row(_G1, _A1, _CHILD3, (_times(_S, 2), _S, _sum(_S, _C), _S),
                   "ask queue child3: every guarantee, no usage"),
    _remaining_row(_G1, _A2, _CHILD3, (_F0, {"first": -5}, {"first": -5, "second": 5}, {"first": -5}),
                   "ask queue child3: parent, root and child2 use their guarantees"),
    _remaining_row(_G1, _A3, _CHILD3, (_F0, _F0, {"first": 0, "second": 0}, _F0),
                   "ask queue child3: guarantees used exactly"),
    _remaining_row(_G1, _A4, _CHILD3, (_F0, _F0, {"first": 0, "second": -5}, _F0),
                   "ask queue child3: child1 uses twice its guarantee"),
    _remaining_row(_G2, _A5, _CHILD3, (_F0, _F0_SM5, _F0_SM5, _F0_SM5),
                   "ask queue child3: parent over in second, child2 under"),
    _remaining_row(_RES1_G, _A1, _CHILD2, _RES1_REMAINING, "ask queue child2: guarantees at some levels, no usage"),
    _remaining_row(_G1, _A1, _CHILD2, (_times(_S, 2), None, _C, _S), "ask queue child2: every guarantee, no usage"),
    _remaining_row(_G1, _A2, _CHILD2, (_F0, None, _C, _F0), "ask queue child2: its guarantee used"),
    _remaining_row(_G1, _A3, _CHILD2, (_F0, None, {"second": 0}, _F0), "ask queue child2: guarantees used exactly"),
    _remaining_row(_G1, _A4, _CHILD2, (_F0, None, {"second": -5}, _F0),
                   "ask queue child2: child1 uses twice its guarantee"),
    _remaining_row(_G2, _A5, _CHILD2, (_F0, None, {"second": -5}, {"first": 3}),
                   "ask queue child2: parent over in second, child2 under"),
])
def test_get_remaining_guaranteed_resource(guaranteed: Four, allocated: Four, ask_leaf: str, expected: Four) -> None:
    """preemption_queue_test::TestGetRemainingGuaranteedResource: root, parent (child1, child2)
    and parent1 (child3); the remaining guarantee of root, parent, child1 and child2 with the ask
    in child3 (a path apart: an under-guaranteed child2 under an over-guaranteed parent does not
    take precedence) or in child2 (its own remaining takes precedence, its parent passes
    nothing down)."""
    got = tuple(s.remaining_guaranteed() for s in snapshots(guaranteed, allocated, ask_leaf))
    assert got == expected
