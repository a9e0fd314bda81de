"""What preemption attempts keep for the next ones (pyscheduler.scheduler.preemption.memo) and
the native twin of the node plan (rust/schedmath/src/plan.rs through pyscheduler._native.PlanQueues):
when the memo starts again, that a kept verdict follows its queue's usage, the fall-back to the
Python twin (node_plan, chosen by the one native switch) at the int64 limits, and the
binding's answers to malformed input. That the
decisions are the same with the memo is the oracle's test (test_preemption_oracle.py)."""

from __future__ import annotations

import pytest
from rm_helpers import World, res
from scheduling_helpers import config

from pyscheduler._native import PlanQueues
from pyscheduler.common import native
from pyscheduler.scheduler.preemption.guaranteed import GuaranteedPreemptor
from pyscheduler.scheduler.preemption.memo import PreemptionMemo
from pyscheduler.scheduler.preemption.preemptor import PreemptionOutcome, PreemptionReason
from pyscheduler.si import messages as si

QUEUES = config("""\
          - name: busy
            resources: {guaranteed: {vcore: 1}}
          - name: quiet
            resources: {guaranteed: {vcore: 8}}
          - name: starved
            properties: {preemption.delay: 1ms}
            resources: {guaranteed: {vcore: 8}}
""")


@pytest.fixture
def world() -> World:
    w = World(QUEUES)
    w.add_node("n1", memory=100, vcore=4000)
    w.add_app("busy-app", "root.busy")
    w.add_app("quiet-app", "root.quiet")
    w.add_app("asker", "root.starved")
    for k in range(3):
        w.allocs(w.alloc_msg(f"busy-{k}", "busy-app", res(vcore=1000), node_id="n1"))
    w.allocs(w.alloc_msg("quiet-0", "quiet-app", res(vcore=1000), node_id="n1"))
    w.ask("ask", "asker", res(vcore=1000),
          preemption_policy=si.PreemptionPolicy(allow_preempt_self=True, allow_preempt_other=True))
    return w


def _attempt(w: World, memo: PreemptionMemo) -> PreemptionOutcome:
    part = w.partition()
    with part.lock:
        preemptor = GuaranteedPreemptor(
            w.queue("root.starved"), part.applications["asker"].asks["ask"], part.applications, part.nodes,
            part.sorted_node_ids(), nodes_tried=True, predicates=None, preemption_predicates=None,
            reserved_by_others=lambda node: False, memo=memo)
        return preemptor.try_preemption()


def test_the_memo_is_kept_until_the_queue_tree_changes(world: World) -> None:
    memo = PreemptionMemo()
    starved = world.queue("root.starved")
    kept = memo.for_ask_leaf(starved)
    assert memo.for_ask_leaf(starved) is kept
    world.allocs(world.alloc_msg("busy-9", "busy-app", res(vcore=500), node_id="n1"))  # usage only
    assert memo.for_ask_leaf(starved) is kept
    world.reload(QUEUES.replace("guaranteed: {vcore: 8}", "guaranteed: {vcore: 6}", 1))
    assert memo.for_ask_leaf(world.queue("root.starved")) is not kept


def test_a_kept_verdict_follows_its_queues_usage(world: World) -> None:
    memo = PreemptionMemo()
    first = _attempt(world, memo).plan
    assert first is not None
    assert {v.allocation_key for v in first.victims} <= {"busy-0", "busy-1", "busy-2"}
    verdicts = memo.for_ask_leaf(world.queue("root.starved")).verdicts
    assert verdicts["root.busy"].over and verdicts["root.busy"].eligible is not None
    # busy shrinks to its guarantee: the kept verdict is not used again, busy's allocations are
    # no victims any more, and nothing else may be preempted (quiet is within its guarantee).
    world.release("busy-app", "busy-1")
    world.release("busy-app", "busy-2")
    again = _attempt(world, memo)
    assert again.plan is None and again.reason is PreemptionReason.GUARANTEES_CHECK_FAILED
    assert again.message == "Preemption queue guarantees check failed"
    assert not verdicts["root.busy"].over


def _outcome_at_the_limits(native_plan: bool) -> object:
    half = (2**63 - 1) // 2
    w = World(QUEUES.replace("guaranteed: {vcore: 8}}\n", "guaranteed: {vcore: 9000000000000000}}\n"))
    try:
        w.add_node("n1", memory=100, vcore=2**63 - 1)
        w.add_app("busy-app", "root.busy")
        w.add_app("asker", "root.starved")
        for k in range(3):  # the third one saturates busy's, root's and the node's usage
            w.allocs(w.alloc_msg(f"busy-{k}", "busy-app", res(vcore=half + k), node_id="n1"))
        w.ask("ask", "asker", res(vcore=half),
              preemption_policy=si.PreemptionPolicy(allow_preempt_self=True, allow_preempt_other=True))
        memo = PreemptionMemo()
        with native.forced(native_plan):
            plan = _attempt(w, memo).plan
        kept = next(iter(memo.for_ask_leaf(w.queue("root.starved")).typed.values()))
        assert (kept.native is not None) is native_plan
        assert plan is not None
        return plan.node_id, [v.allocation_key for v in plan.victims]
    finally:
        w.close()


def test_quantities_at_the_int64_limits_plan_alike() -> None:
    """Allocations of half the int64 maximum on a node of the maximum: the usage of the queues
    and the node saturates there, and both twins plan the same (128-bit integers natively)."""
    native_plan = _outcome_at_the_limits(True)
    assert native_plan == _outcome_at_the_limits(False)
    assert native_plan == ("n1", ["busy-0"])  # all equally old: the first by key covers the ask


def test_the_native_plan_refuses_malformed_input() -> None:
    queues = PlanQueues(1)
    root = queues.add(None, [None], True, False)
    leaf = queues.add(root, [1], False, False)
    with pytest.raises(ValueError, match="parent must be added before it"):
        queues.add(7, [None], True, False)
    with pytest.raises(ValueError, match="one entry per ask type"):
        queues.set_used(leaf, [1, 2])
    with pytest.raises(ValueError, match="one queue, amounts and freed per candidate"):
        queues.plan(leaf, [leaf], [], [], [1], [0])
    with pytest.raises(ValueError, match="unknown"):
        queues.plan(leaf, [9], [[1]], [[1]], [1], [0])
    with pytest.raises(OverflowError):
        queues.set_used(leaf, [2**128])
    with pytest.raises(OverflowError):
        queues.set_used(leaf, [-1 << 200])
    assert len(queues) == 2
    queues.set_used(leaf, [5])
    assert queues.plan(root, [leaf], [[1]], [[1]], [1], [0]) == (0, [0])
