"""Why was it preempted (issue 35) through the RM interface: a victim names its preemptor and rule
from the moment it is chosen (live) and, once the RM confirmed its end, from the event ring (the
APP REMOVE ALLOC_PREEMPT event carries the note: pyscheduler.scheduler.preemption.note); the
preemptor's why answer shows the attempt; unknown and malformed requests. The scenario is
test_preemption.py's: leaf1 holds the parent's max, leaf2's ask below its guarantee preempts."""

from __future__ import annotations

import pytest
from rm_helpers import D, T, World, res
from test_preemption import w  # noqa: F401  (its world, two leaves under a parent: the fixture, shared)

from pyscheduler.dao import BadRequest, NotFound
from pyscheduler.dao.why import why
from pyscheduler.dao.why_preempted import why_preempted
from pyscheduler.scheduler.cycle import SchedulingCycle
from pyscheduler.scheduler.preemption.note import PreemptionNote, format_note, parse_note
from pyscheduler.si import messages as si


def test_a_victim_names_its_preemptor_live_then_from_the_event_history(w: World) -> None:
    w.ask("alloc-3", "app-2", res(vcore=5000), priority=1,
          preemption_policy=si.PreemptionPolicy(allow_preempt_self=True, allow_preempt_other=True))
    w.advance(1.0)
    SchedulingCycle(w.context).run()
    live = why_preempted(w.context, "default", "app-1", "alloc-2")
    assert live == {"applicationID": "app-1", "allocationKey": "alloc-2", "queueName": "root.parent.leaf1",
                    "preemptorApplicationID": "app-2", "preemptorAllocationKey": "alloc-3",
                    "preemptorQueueName": "root.parent.leaf2", "rule": "GUARANTEED", "released": False,
                    "time": None}
    # The preemptor's why: it planned, and waits for its victim to go (its reservation).
    [one] = why(w.context, "default", "app-2")["asks"]
    assert one["preemption"]["code"] == "PLANNED" and one["reservation"] is not None
    with pytest.raises(NotFound):
        why_preempted(w.context, "default", "app-1", "alloc-1")  # never preempted
    # The RM confirms: the allocation is gone, the event ring remembers who took its place.
    mark = w.mark()
    w.release("app-1", "alloc-2", termination=si.TerminationType.PREEMPTED_BY_SCHEDULER)
    [event] = [e for e in w.events(mark) if e[0] == T.APP and e[2] == D.ALLOC_PREEMPT]
    assert event[3:5] == ("app-1", "alloc-2")
    assert parse_note(event[5]) == PreemptionNote("app-2", "alloc-3", "root.parent.leaf2", "GUARANTEED",
                                                  "root.parent.leaf1")
    gone = why_preempted(w.context, "default", "app-1", "alloc-2")
    assert gone["released"] is True and gone["time"] is not None
    assert {k: gone[k] for k in ("preemptorApplicationID", "preemptorAllocationKey", "rule")} == {
        "preemptorApplicationID": "app-2", "preemptorAllocationKey": "alloc-3", "rule": "GUARANTEED"}


def test_bad_requests(w: World) -> None:
    with pytest.raises(BadRequest):
        why_preempted(w.context, "default", "app-1", None)
    with pytest.raises(BadRequest):
        why_preempted(w.context, "default", "app-1", "a b")
    with pytest.raises(NotFound):
        why_preempted(w.context, "nope", "app-1", "alloc-2")


def test_the_note_parses_back_whatever_the_names_hold() -> None:
    note = PreemptionNote('app "x") of', 'key" in queue "', "root.q", "REQUIRED_NODE", "root.v")
    assert parse_note(format_note(note)) == note
    assert parse_note("") is None and parse_note("Preempted by something else") is None


def test_an_ask_whose_preemption_did_not_help_says_so(w: World) -> None:
    """Taking a victim from leaf1 would bring it below its own guarantee: no plan."""
    w.ask("alloc-3", "app-2", res(vcore=5000), priority=0,
          preemption_policy=si.PreemptionPolicy(allow_preempt_self=True, allow_preempt_other=True))
    w.advance(1.0)
    SchedulingCycle(w.context).run()
    [one] = why(w.context, "default", "app-2")["asks"]
    assert one["code"] == "PARENT_MAX" and one["details"]["queue"] == "root.parent"
    assert one["preemption"] is not None and one["preemption"]["attempted"] is True
    # One attempt logs "guarantees check failed" then "does not help": the specific one is given.
    assert one["preemption"]["code"] == "GUARANTEES_CHECK_FAILED"
    assert not w.rm.released
