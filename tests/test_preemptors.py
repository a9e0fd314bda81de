"""The preemption extension point (pyscheduler.scheduler.preemption.preemptor): the cycle offers
an ask it cannot place to its preemptors in their order, stops at the first plan and applies
it (the victims released naming the ask, the node reserved when the plan says so); preemptors
that do not act on the trigger are passed over; the tick lets each act on time. The default
tuple is the three policies, guaranteed share first.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from rm_helpers import World, res
from scheduling_helpers import config

from pyscheduler.objects.partition import Partition
from pyscheduler.scheduler.cycle import SchedulingCycle
from pyscheduler.scheduler.preemption.policies import (
    GuaranteedPreemption,
    QuotaPreemption,
    RequiredNodePreemption,
    default_preemptors,
)
from pyscheduler.scheduler.preemption.preemptor import (
    NOT_APPLICABLE,
    AttemptBudget,
    PreemptionAttempt,
    PreemptionOutcome,
    PreemptionPlan,
    PreemptionReason,
    PreemptionTrigger,
)
from pyscheduler.si import messages as si

CONFIG = config("""\
          - name: a
            resources:
              max: {vcore: 4}
          - name: b
""")


class Scripted:
    """A preemptor that records what it was offered and answers as told."""

    def __init__(self, name: str, log: list[tuple[str, PreemptionTrigger, str]],
                 answer: PreemptionOutcome | None = None) -> None:
        self.name = name
        self.log = log
        self.answer = answer or PreemptionOutcome(None, PreemptionReason.DOES_NOT_HELP)
        self.ticks: list[int] = []

    def try_preempt(self, attempt: PreemptionAttempt) -> PreemptionOutcome:
        self.log.append((self.name, attempt.trigger, attempt.ask.allocation_key))
        return self.answer

    def on_tick(self, partition: Partition, now_ns: int) -> None:
        self.ticks.append(now_ns)


@pytest.fixture
def w() -> Iterator[World]:
    world = World(CONFIG)
    world.add_node("n1", memory=100, vcore=4000)
    world.add_node("n2", memory=100, vcore=4000)
    world.add_app("victims", "root.b")
    world.add_app("asker", "root.a")
    world.allocate("v1", "victims", "n1", res(vcore=1000))
    world.allocate("v2", "victims", "n1", res(vcore=1000))
    yield world
    world.close()


def test_the_ask_is_offered_in_order_until_a_plan(w: World) -> None:
    log: list[tuple[str, PreemptionTrigger, str]] = []
    victim = w.partition().applications["victims"].allocations["v1"]
    plan = PreemptionPlan("n1", (victim,), "freed for: ")
    first, second, third = (Scripted("first", log), Scripted("second", log, PreemptionOutcome.planned(plan)),
                            Scripted("third", log))
    w.ask("big", "asker", res(vcore=5000))  # over its queue's max of 4 cores
    assert SchedulingCycle(w.context, preemptors=(first, second, third)).run() == []
    assert log == [("first", PreemptionTrigger.QUEUE_HEADROOM, "big"), ("second", PreemptionTrigger.QUEUE_HEADROOM, "big")]
    # The cycle applied the plan: the victim released naming the ask, the node reserved.
    (release,) = w.rm.released
    assert (release.allocation_key, release.message) == ("v1", "freed for: big")
    assert (release.preemptor_application_id, release.preemptor_allocation_key) == ("asker", "big")
    assert victim.preempted and w.partition().applications["asker"].asks["big"].triggered_preemption
    assert w.partition().reservations.by_key["big"].node_id == "n1"


def test_every_preemptor_is_offered_the_ask_when_none_plans(w: World) -> None:
    log: list[tuple[str, PreemptionTrigger, str]] = []
    preemptors = (Scripted("first", log), Scripted("second", log, NOT_APPLICABLE), Scripted("third", log))
    w.allocate("fill", "victims", "n2", res(vcore=2000))
    w.ask("wide", "asker", res(vcore=3000))  # fits its queue; each node has 2 cores free
    assert SchedulingCycle(w.context, preemptors=preemptors).run() == []
    assert [name for name, _, _ in log] == ["first", "second", "third"]
    assert {trigger for _, trigger, _ in log} == {PreemptionTrigger.NO_NODE_FITS}
    assert w.rm.released == []


def test_a_plan_that_keeps_the_asks_node_reserves_nothing(w: World) -> None:
    victim = w.partition().applications["victims"].allocations["v2"]
    keep = Scripted("keep", [], PreemptionOutcome.planned(PreemptionPlan("n1", (victim,), "x: ", reserve_node=False)))
    w.ask("big", "asker", res(vcore=5000))
    SchedulingCycle(w.context, preemptors=(keep,)).run()
    assert [r.allocation_key for r in w.rm.released] == ["v2"]
    assert "big" not in w.partition().reservations.by_key


def test_the_tick_reaches_every_preemptor(w: World) -> None:
    log: list[tuple[str, PreemptionTrigger, str]] = []
    preemptors = (Scripted("first", log), Scripted("second", log))
    w.context.preemptors = preemptors
    w.advance(1.0)
    assert all(len(p.ticks) == 1 for p in preemptors)


def test_the_default_preemptors_are_the_three_policies_guaranteed_first(w: World) -> None:
    kinds = [type(p) for p in default_preemptors()]
    assert kinds == [GuaranteedPreemption, RequiredNodePreemption, QuotaPreemption]
    assert [type(p) for p in SchedulingCycle(w.context).preemptors] == kinds


def test_each_policy_passes_over_the_triggers_it_does_not_handle(w: World) -> None:
    w.ask("ds", "asker", res(vcore=1000), allocation_tags={si.TAG_REQUIRED_NODE: "n1"})
    part = w.partition()
    app = part.applications["asker"]
    queue = app.queue
    assert queue is not None

    def attempt(trigger: PreemptionTrigger) -> PreemptionAttempt:
        return PreemptionAttempt(part, queue, app, app.asks["ds"], trigger, None, None, AttemptBudget(10), 2.0,
                                 part.nodes["n1"])

    with part.lock:
        assert GuaranteedPreemption().try_preempt(attempt(PreemptionTrigger.REQUIRED_NODE)) is NOT_APPLICABLE
        assert RequiredNodePreemption().try_preempt(attempt(PreemptionTrigger.QUEUE_HEADROOM)) is NOT_APPLICABLE
        assert RequiredNodePreemption().try_preempt(attempt(PreemptionTrigger.NO_NODE_FITS)) is NOT_APPLICABLE
        for trigger in PreemptionTrigger:
            assert QuotaPreemption().try_preempt(attempt(trigger)) is NOT_APPLICABLE
        # The partition's preemption switch is off: the guaranteed policy does not act either.
        part.preemption_enabled = False
        assert GuaranteedPreemption().try_preempt(attempt(PreemptionTrigger.QUEUE_HEADROOM)) is NOT_APPLICABLE
        # The required-node policy does act on its trigger, switch or not.
        outcome = RequiredNodePreemption().try_preempt(attempt(PreemptionTrigger.REQUIRED_NODE))
    assert outcome.reason is PreemptionReason.PLANNED and outcome.plan is not None
    assert (outcome.plan.node_id, outcome.plan.reserve_node) == ("n1", False)
    assert [v.allocation_key for v in outcome.plan.victims] == ["v1"]  # equals: the first by key
    assert w.rm.released == []  # an attempt only plans: applying it is the cycle's
