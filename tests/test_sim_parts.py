"""The simulator's parts on their own: the event heap's order, the utilisation integrals, the SI
messages built from plans, the RM's gang-job bookkeeping; and the split modules' names still
importable from the modules they came from (``sim.workload``, ``sim.rm``)."""

from __future__ import annotations

import pytest

from pyscheduler.common.resources import MEMORY, VCORE
from pyscheduler.policies.role_history.settings import HISTORY_KEY_TAG, ROLE_TAG, TAG_PREFIX
from pyscheduler.si import messages as si
from pyscheduler.sim import gang_jobs, record, rm, rm_messages, timeline, workload, workload_format
from pyscheduler.sim import workload_sections, workload_types
from pyscheduler.sim.gang_jobs import GangJobs
from pyscheduler.sim.record import SimulationRecord
from pyscheduler.sim.timeline import CONFIRM, MEMBERS, PREEMPTED, RELEASE, SUBMIT, WAKE, WAKE_MARGIN, EventHeap
from pyscheduler.sim.usage import ClusterUsage
from pyscheduler.sim.workload_types import AppPlan, AskPlan, IntRange, WorkloadError


def _record() -> SimulationRecord:
    return SimulationRecord(policy="fair", mode="lockstep", native_node_ordering=True, total_asks=0, total_apps=0)


# -- the event heap --------------------------------------------------------------------------------


def test_events_come_by_time_then_kind_then_insertion() -> None:
    events = EventHeap()
    assert not events
    plan = AppPlan("app", "root.a", 0.0, 0, ())
    events.push(2.0, SUBMIT, plan)
    events.push(1.0, SUBMIT, ("late", "x"))
    events.push(1.0, WAKE, None)
    events.push(1.0, RELEASE, ("a", "first"))
    events.push(1.0, RELEASE, ("a", "second"))
    events.push(1.0, PREEMPTED, ("a", "victim"))
    assert events and events.next_time() == 1.0
    due = events.take_due(1.0)
    assert [(kind, payload) for _, kind, _, payload in due] == [
        (RELEASE, ("a", "first")), (RELEASE, ("a", "second")), (PREEMPTED, ("a", "victim")),
        (SUBMIT, ("late", "x")), (WAKE, None),
    ]
    assert events.next_time() == 2.0
    assert events.take_due(1.999) == []
    assert [payload for *_, payload in events.take_due(5.0)] == [plan]
    assert not events


def test_only_wakes_left_is_no_work() -> None:
    events = EventHeap()
    assert not events.has_work()
    events.push(3.0, WAKE, None)
    assert not events.has_work()
    events.push(9.0, CONFIRM, ("job", "ph", 4))
    assert events.has_work()


# -- utilisation -------------------------------------------------------------------------------------


def test_usage_integrates_every_change_and_keeps_the_peaks() -> None:
    rec = _record()
    usage = ClusterUsage(rec)
    usage.change(1.0, "n1", 100, 10)  # nothing was used before 1 s
    usage.change(3.0, "n1", 50, 5)  # 2 s of 100/10 on one node
    usage.change(4.0, "n2", 10, 1)  # 1 s of 150/15 on one node
    usage.change(6.0, "n1", -100, -10)  # 2 s of 160/16 on two nodes
    usage.change(6.0, "n1", -50, -5)  # n1's second allocation ends too: it is empty again
    usage.released(6.0)
    usage.integrate_to(7.0)  # 1 s of 10/1 on one node
    assert rec.memory_seconds == 2 * 100 + 150 + 2 * 160 + 10
    assert rec.vcore_seconds == 2 * 10 + 15 + 2 * 16 + 1
    assert rec.node_seconds == 2 + 1 + 2 * 2 + 1
    assert (rec.peak_memory, rec.peak_vcore, rec.peak_nodes_in_use) == (160, 16, 2)
    assert (usage.last_change, usage.last_release) == (7.0, 6.0)
    usage.integrate_to(5.0)  # never backwards
    assert usage.last_change == 7.0 and rec.node_seconds == 8


# -- the SI messages -----------------------------------------------------------------------------------


def test_messages_carry_the_plan() -> None:
    service = AppPlan("svc-000-0", "root.services", 0.0, 2, (AskPlan("k", 100, 250, 1.0, "master"),),
                      history_key="svc-000")
    tags = rm_messages.new_application_message(service, role_history=True).tags
    assert dict(tags) == {HISTORY_KEY_TAG: "svc-000"}
    anywhere = rm_messages.new_application_message(service, role_history=False).tags
    assert anywhere[f"{TAG_PREFIX}policy"] == "anywhere"
    ask = rm_messages.ask_message(service, service.asks[0], "k")
    assert (ask.allocation_key, ask.priority, dict(ask.allocation_tags)) == ("k", 2, {ROLE_TAG: "master"})
    assert ask.resource_per_alloc.get(MEMORY) == 100 and ask.resource_per_alloc.get(VCORE) == 250
    assert ask.preemption_policy is None and not ask.placeholder

    gang = AppPlan("gang-000", "root.gangs", 0.0, 0, (AskPlan("m0", 10, 1, 1.0), AskPlan("m1", 20, 2, 1.0)),
                   task_group="workers", gang_timeout=1.5, gang_style="Hard", may_preempt=True)
    new = rm_messages.new_application_message(gang, role_history=True)
    assert new.placeholder_ask is not None and new.placeholder_ask.get(MEMORY) == 30
    assert (new.gang_scheduling_style, new.execution_timeout_milli_seconds, dict(new.tags)) == ("Hard", 1500, {})
    placeholder = rm_messages.ask_message(gang, gang.asks[0], "m0-placeholder", placeholder=True)
    assert placeholder.placeholder and placeholder.task_group_name == "workers"
    assert placeholder.preemption_policy == rm_messages.MAY_PREEMPT

    release = rm_messages.release_message("a", "k", si.TerminationType.STOPPED_BY_RM, "done")
    assert (release.application_id, release.allocation_key, release.message) == ("a", "k", "done")
    nodes = rm_messages.node_messages(2, 1 << 30, 4000)
    assert [n.node_id for n in nodes] == ["node-00000", "node-00001"]
    assert all(n.action == si.NodeAction.CREATE for n in nodes)


# -- gang jobs ---------------------------------------------------------------------------------------


def test_gang_jobs_follow_placeholders_and_states() -> None:
    job = AppPlan("gang-000", "root.gangs", 0.0, 0, (AskPlan("m0", 10, 1, 1.0), AskPlan("m1", 20, 2, 1.0)),
                  task_group="workers", gang_timeout=5.0, gang_style="Soft")
    batch = AppPlan("app-00000", "root.a", 0.0, 0, (AskPlan("b0", 1, 1, 1.0),))
    rec, events = _record(), EventHeap()
    usage = ClusterUsage(rec)
    gangs = GangJobs([job, batch], rec, events, usage)
    assert set(gangs.plans) == {"gang-000"} and rec.gang_jobs == 1

    asks = gangs.arrived(1.0, job)
    assert [a.allocation_key for a in asks] == ["m0-placeholder", "m1-placeholder"]
    assert gangs.is_placeholder("m0-placeholder") and not gangs.is_placeholder("m0")

    gangs.placed(2.0, "m0-placeholder", "n1")  # the first one: the core's timer may fire later
    gangs.placed(2.5, "m1-placeholder", "n1")
    gangs.placed(2.5, "m1-placeholder", "n1")  # twice: not expected
    assert rec.placeholders_allocated == 2 and rec.unexpected_allocations == 1
    assert [(when, kind) for when, kind, _, _ in events.take_due(100.0)] == [(2.0 + 5.0 + WAKE_MARGIN, WAKE)]

    assert gangs.state_changed(3.0, "gang-000", "Running") == 0
    assert gangs.state_changed(3.1, "gang-000", "Running") == 0  # the members go once
    assert rec.gang_started_whole == 1
    assert [(kind, payload) for _, kind, _, payload in events.take_due(100.0)] == [(MEMBERS, ("gang-000", ""))]

    gangs.released(4.0, "m0-placeholder", 4)
    gangs.released(4.0, "never-placed", 4)  # gone from the core already: nothing to confirm
    assert rec.placeholder_memory_seconds == 10 * 2.0 and usage.last_release == 4.0
    assert [payload for *_, payload in events.take_due(100.0)] == [("gang-000", "m0-placeholder", 4)]

    gangs.member_started(4.5, "gang-000")
    gangs.member_started(5.0, "app-00000")  # not a gang job
    gangs.member_started(5.5, "gang-000")
    assert rec.gang_all_running == [5.5 - 1.0]


def test_a_failed_gang_job_ends_its_asks_once() -> None:
    job = AppPlan("gang-000", "root.gangs", 0.0, 0, (AskPlan("m0", 10, 1, 1.0), AskPlan("m1", 20, 2, 1.0)),
                  task_group="workers", gang_timeout=5.0, gang_style="Hard")
    rec, events = _record(), EventHeap()
    gangs = GangJobs([job], rec, events, ClusterUsage(rec))
    assert gangs.state_changed(1.0, "gang-000", "Resuming") == 0 and rec.gang_resumed == 1
    assert gangs.state_changed(2.0, "gang-000", "Failed") == 2
    assert gangs.state_changed(2.0, "gang-000", "Failed") == 0
    assert gangs.failed == {"gang-000"} and rec.gang_failed == 1 and not events


# -- the file format's readers ----------------------------------------------------------------------------


def test_readers_name_the_key() -> None:
    assert workload_format.read_int_range([1, 3], "applications.asks", workload_format.read_int) == IntRange(1, 3)
    assert workload_format.vcore_range_json(IntRange(500, 2000)) == ["500m", "2"]
    assert workload_format.read_seconds("1m30s", "gangs.timeout") == 90.0
    assert workload_format.read_queues(["A", "root.b"]) == (("root.a", "root.b"), (1.0, 1.0))
    with pytest.raises(WorkloadError, match=r"^nodes\.count: expected an integer, got True$"):
        workload_format.read_int(True, "nodes.count")
    with pytest.raises(WorkloadError, match=r"^nodes: unknown key 'size'"):
        workload_format.read_section({"nodes": {"size": 1}}, "nodes", ("count",))


# -- the names stay where callers import them ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("original", "home", "names"),
    [
        (workload, workload_types, ["ARRIVAL_PATTERNS", "AppPlan", "AskPlan", "FloatRange", "GIB", "IntRange", "MIB",
                                    "WorkloadError"]),
        (workload, workload_sections, ["GangSpec", "LateTenantSpec", "ServiceSpec"]),
        (rm, record, ["MODES", "ProgressFunc", "SimMode", "SimulationRecord"]),
        (rm, timeline, ["START_NS", "ScaledClock"]),
        (rm, rm_messages, ["RM_ID", "USER"]),
    ],
)
def test_moved_names_are_importable_from_the_original_module(original: object, home: object,
                                                              names: list[str]) -> None:
    for name in names:
        assert getattr(original, name) is getattr(home, name), name
        assert name in getattr(original, "__all__"), name


def test_the_gang_module_is_the_rms_only_gang_bookkeeping() -> None:
    # The RM reaches gang state through GangJobs only (no second copy of its tables).
    assert not [name for name in vars(rm.SimulatedRM) if "placeholder" in name or "gang" in name]
    assert gang_jobs.GangJobs.__module__ == "pyscheduler.sim.gang_jobs"
