"""Gang scheduling through the RM interface (issue 14; shared/spec/yunikorn/gang.md): the
placeholders of a task group, their replacement by real members (confirmed by the RM as a shim
does), the placeholder timeout, node and application removal with replacements under way, and
what REST shows. The scenarios and numbers are those of the spec's test table."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from rm_helpers import D, T, World, check_invariants, res
from scheduling_helpers import config as queues_yaml

from pyscheduler.dao.applications import application_dao
from pyscheduler.dao.views import app_view
from pyscheduler.objects.application_state import AppState
from pyscheduler.objects.placeholders import CANCEL_INCOMPATIBLE, RELEASE_ALLOCATED_ON_TIMEOUT, REPLACING
from pyscheduler.scheduler.cycle import Decision, SchedulingCycle
from pyscheduler.scheduler.health import check_health
from pyscheduler.si import messages as si

GANG = queues_yaml("""\
          - name: gang
            properties: {application.sort.policy: fifo}
          - name: other
""")
REPLACED = si.TerminationType.PLACEHOLDER_REPLACED
TIMEOUT = si.TerminationType.TIMEOUT
ONE = {"vcore": 1000}
TWO = {"vcore": 2000}


@pytest.fixture
def w() -> Iterator[World]:
    made = World(GANG)
    yield made
    made.close()


def gang_app(w: World, app_id: str = "app-1", total: dict[str, int] | None = None, *, style: str = "",
             timeout_ms: int = 0) -> None:
    w.apps(si.AddApplicationRequest(
        application_id=app_id, queue_name="root.gang", partition_name="default",
        ugi=si.UserGroupInformation(user="alice"), placeholder_ask=res(**(total or TWO)),
        gang_scheduling_style=style, execution_timeout_milli_seconds=timeout_ms))


def placeholder(w: World, key: str, app_id: str = "app-1", size: dict[str, int] | None = None,
                group: str = "tg-1") -> None:
    w.ask(key, app_id, res(**(size or ONE)), placeholder=True, task_group_name=group)


def member(w: World, key: str, app_id: str = "app-1", size: dict[str, int] | None = None,
           group: str = "tg-1") -> None:
    w.ask(key, app_id, res(**(size or ONE)), task_group_name=group)


def refuse_on_node_1(key: str, node_id: str, allocate: bool) -> str | None:
    """The RM's predicates: real-1 does not go on node-1."""
    del allocate
    return "node-1 refuses it" if node_id == "node-1" and key == "real-1" else None


def cycle(w: World) -> list[Decision]:
    return SchedulingCycle(w.context).run()


def confirm(w: World, key: str, app_id: str = "app-1", termination: si.TerminationType = REPLACED) -> None:
    w.release(app_id, key, termination=termination)


def data(w: World, app_id: str = "app-1") -> dict[str, tuple[int, int, int]]:
    """Per task group: (count, timed out, replaced), as the spec's table writes it."""
    return {name: (d.count, d.timed_out, d.replaced) for name, d in w.app(app_id).placeholder_data.items()}


def member_on_node_2(w: World) -> Decision:
    """One placeholder on node-1; the RM refuses real-1 there, so it takes node-2."""
    w.add_node("node-1", memory=1000, vcore=10_000)
    gang_app(w, total=ONE)
    placeholder(w, "ph-1")
    assert len(cycle(w)) == 1
    w.add_node("node-2", memory=1000, vcore=10_000)
    w.rm.set_predicates(refuse_on_node_1)
    member(w, "real-1")
    (decision,) = cycle(w)
    return decision


def two_placeholders(w: World, nodes: tuple[str, ...] = ("node-1",), timeout_ms: int = 0) -> None:
    for node in nodes:
        w.add_node(node, memory=1000, vcore=10_000)
    gang_app(w, timeout_ms=timeout_ms)
    placeholder(w, "ph-1")
    placeholder(w, "ph-2")
    assert len(cycle(w)) == 1 and len(cycle(w)) == 1


def test_placeholders_keep_the_application_accepted_until_the_whole_gang_is_placed(w: World) -> None:
    """application_test::TestStateChangeOnPlaceholderAdd / TestGangAllocChange: Accepted (and
    counted as allocating) after the first placeholder, Running after the second."""
    w.add_node("node-1", memory=1000, vcore=10_000)
    gang_app(w)
    placeholder(w, "ph-1")
    placeholder(w, "ph-2")
    assert len(cycle(w)) == 1
    assert w.app("app-1").state is AppState.ACCEPTED
    assert w.queue("root.gang").allocating_accepted == {"app-1"}
    assert len(cycle(w)) == 1
    assert w.app("app-1").state is AppState.RUNNING
    assert w.queue("root.gang").allocating_accepted == set()
    assert data(w) == {"tg-1": (2, 0, 0)}


def test_a_member_replaces_a_placeholder_once_the_rm_confirms(w: World) -> None:
    """partition_test::TestTryPlaceholderAllocate: two placeholders of 1 vcore; a member of an
    unknown group is no replacement; a member of tg-1 replaces one: nothing counts until the
    RM confirms (the placeholder's release goes out, the member does not); after the
    confirmation one placeholder is left, the application has 1 vcore of real allocation, the
    group reads (2, 0, 1), and the member goes to the RM as new."""
    two_placeholders(w)
    app = w.app("app-1")
    member(w, "other", group="unknown")
    decisions = cycle(w)
    assert [d.replaced for d in decisions] == [None]  # allocated normally: no placeholder of its group
    w.release("app-1", "other")

    member(w, "real-1")
    decisions = cycle(w)
    assert len(decisions) == 1 and decisions[0].replaced is not None and decisions[0].replaced.allocation_key in (
        "ph-1", "ph-2")
    ph_key = decisions[0].replaced.allocation_key
    assert [(r.allocation_key, r.termination_type, r.message) for r in w.rm.released if r.allocation_key == ph_key] == [
        (ph_key, REPLACED, REPLACING + "real-1")]
    assert "real-1" not in w.rm.allocations
    assert app.allocated == res(vcore=2000) and app.allocated_placeholder == res(vcore=2000)
    assert data(w) == {"tg-1": (2, 0, 0)}

    mark = w.mark()
    confirm(w, ph_key)
    assert "real-1" in w.rm.allocations
    assert app.allocated_placeholder == res(vcore=1000)
    assert app.allocated - app.allocated_placeholder == res(vcore=1000)
    assert data(w) == {"tg-1": (2, 0, 1)}
    left = "ph-2" if ph_key == "ph-1" else "ph-1"
    assert sorted(app.allocations) == sorted([left, "real-1"])
    assert app.allocations["real-1"].placeholder_used
    assert [(e[0], e[3], e[4]) for e in w.events(mark) if e[2] == D.ALLOC_REPLACED] == [(T.APP, "app-1", ph_key)]
    # A second confirmation is harmless: nothing changes, nothing is rejected.
    confirm(w, ph_key)
    assert data(w) == {"tg-1": (2, 0, 1)} and not w.rm.rejected_allocations
    assert w.partition().nodes["node-1"].allocated == res(vcore=2000)


def test_a_member_goes_to_another_node_when_the_rm_refuses_the_placeholders_node(w: World) -> None:
    """TestFailReplacePlaceholder: the RM's predicates refuse the member on the placeholders'
    node-1, so it takes node-2: both nodes hold 1 vcore for it until the RM confirms, then
    node-1 is empty (its placeholder gone) and node-2 holds the member."""
    assert member_on_node_2(w).node.node_id == "node-2"
    nodes = w.partition().nodes
    assert nodes["node-1"].allocated == res(vcore=1000) and nodes["node-2"].allocated == res(vcore=1000)
    assert w.queue("root.gang").allocated == res(vcore=1000)
    # The health checks know a member holding room on another node until the RM confirms.
    check_invariants(w.context)
    assert check_health(w.context).healthy
    confirm(w, "ph-1")
    assert nodes["node-1"].allocated.is_zero()
    assert nodes["node-2"].allocated == res(vcore=1000)
    assert w.rm.allocations["real-1"].node_id == "node-2"


def test_a_member_larger_than_the_placeholders_releases_them(w: World) -> None:
    """TestPlaceholderSmallerThanReal: a member of 2 vcores for a placeholder of 1: the
    placeholder is released (TIMEOUT, "cancel placeholder: resource incompatible") with a
    request event saying why, and nothing replaces it; the RM's TIMEOUT confirmation counts it
    timed out and empties the queue and the node."""
    w.reload(GANG, extra_config={"service.event.requestEventsEnabled": "true"})
    w.add_node("node-1", memory=1000, vcore=10_000)
    gang_app(w, total=ONE)
    placeholder(w, "ph-1")
    assert len(cycle(w)) == 1
    member(w, "real-1", size=TWO)
    decisions = cycle(w)
    assert all(d.replaced is None for d in decisions)
    assert [(r.allocation_key, r.termination_type, r.message) for r in w.rm.released] == [
        ("ph-1", TIMEOUT, CANCEL_INCOMPATIBLE)]
    before = len(w.rm.events)
    w.context.event_system.publish_request_events()
    messages = [e.message for e in w.rm.events[before:] if e.type == T.REQUEST and e.object_id == "ph-1"]
    assert messages == ["Task group 'tg-1' in application 'app-1': allocation resources 'map[vcore:2000]' are not "
                        "matching placeholder 'map[vcore:1000]' allocation with ID 'ph-1'"]
    confirm(w, "ph-1", termination=TIMEOUT)
    assert data(w) == {"tg-1": (1, 1, 0)}
    assert w.queue("root.gang").allocated.is_zero() and w.partition().nodes["node-1"].allocated.is_zero()


def test_a_smaller_member_shrinks_the_queue_when_it_takes_the_placeholders_place(w: World) -> None:
    """TestPlaceholderBiggerThanReal: a placeholder of 2 vcores and 2 GB, a member of 1 and 1:
    after the confirmation the queue and the node hold 1 and 1."""
    w.add_node("node-1", memory=1000, vcore=10_000)
    gang_app(w, total={"vcore": 2000, "memory": 2})
    placeholder(w, "ph-1", size={"vcore": 2000, "memory": 2})
    assert len(cycle(w)) == 1
    member(w, "real-1", size={"vcore": 1000, "memory": 1})
    assert len(cycle(w)) == 1
    confirm(w, "ph-1")
    assert w.queue("root.gang").allocated == res(vcore=1000, memory=1)
    assert w.partition().nodes["node-1"].allocated == res(vcore=1000, memory=1)


def test_only_members_of_a_group_with_placeholders_wait_for_one(w: World) -> None:
    """TestPlaceholderMatch: a member of another group is allocated normally; a member of
    tg-1 waits for and takes a placeholder; once the group's placeholders are used up, more
    members of tg-1 are allocated normally."""
    w.add_node("node-1", memory=1000, vcore=10_000)
    gang_app(w, total=ONE)
    placeholder(w, "ph-1")
    assert len(cycle(w)) == 1
    member(w, "other-1", group="tg-2")
    (decision,) = cycle(w)
    assert decision.replaced is None and decision.ask.allocation_key == "other-1"
    member(w, "real-1")
    (decision,) = cycle(w)
    assert decision.replaced is not None and decision.replaced.allocation_key == "ph-1"
    confirm(w, "ph-1")
    member(w, "real-2")
    (decision,) = cycle(w)
    assert decision.replaced is None and decision.ask.allocation_key == "real-2"


@pytest.mark.parametrize("style,second_state,final_state", [
    ("Soft", AppState.RESUMING, AppState.ACCEPTED),
    ("Hard", AppState.FAILING, AppState.FAILED),
    ("unknown", AppState.RESUMING, AppState.ACCEPTED),
])
def test_a_gang_that_does_not_complete_in_time(w: World, style: str, second_state: AppState,
                                               final_state: AppState) -> None:
    """TestTimeoutPlaceholderSoft/Hard: a gang of 3 with one placeholder placed (no room for
    more) times out after 5 ms: Soft (and an unknown style) resumes, Hard fails; the placed
    placeholder and the pending ones are released (TIMEOUT), the pending ones counted timed
    out at once (APP REMOVE REQUEST_TIMEOUT), the placed one once the RM confirms, which moves
    the application on (Accepted, or Failed). A member without a task group is removed too
    and counted nowhere, without a crash."""
    w.add_node("node-1", memory=1000, vcore=3000)
    w.add_app("filler", "root.other")
    w.ask("fill", "filler", res(vcore=2000))
    assert len(cycle(w)) == 1  # 1 vcore left: one placeholder of the gang of 3 fits
    gang_app(w, total={"vcore": 3000}, style=style, timeout_ms=5)
    placeholder(w, "ph-1")
    placeholder(w, "ph-2")
    placeholder(w, "ph-3")
    assert len(cycle(w)) == 1
    w.ask("loose", "app-1", res(vcore=500))  # no room left for it
    assert cycle(w) == []
    app = w.app("app-1")
    assert app.state is AppState.ACCEPTED
    mark = w.mark()
    w.advance(0.01)
    assert app.state is second_state
    assert [s for s, _ in app.state_log][-2:] == [AppState.ACCEPTED, second_state]
    released = {r.allocation_key: r.termination_type for r in w.rm.released}
    assert released == {"ph-1": TIMEOUT, "ph-2": TIMEOUT, "ph-3": TIMEOUT, "loose": TIMEOUT}
    assert data(w) == {"tg-1": (3, 2, 0)}
    timeouts = [e[4] for e in w.events(mark) if e[2] == D.REQUEST_TIMEOUT]
    assert sorted(timeouts) == ["loose", "ph-2", "ph-3"]
    assert not app.asks
    confirm(w, "ph-1", termination=TIMEOUT)
    assert data(w) == {"tg-1": (3, 3, 0)}
    assert app.state is final_state


def test_a_running_gang_releases_only_its_unused_placeholders_on_timeout(w: World) -> None:
    """TestTimeoutPlaceholderAllocReleased: Running with two placeholders, one being replaced:
    the timeout releases only the other one (message of YuniKorn); the replacement goes on."""
    two_placeholders(w, timeout_ms=5)
    member(w, "real-1")
    (decision,) = cycle(w)
    replaced = decision.replaced
    assert replaced is not None
    w.rm.clear()
    w.advance(0.01)
    other = "ph-2" if replaced.allocation_key == "ph-1" else "ph-1"
    assert [(r.allocation_key, r.termination_type, r.message) for r in w.rm.released] == [
        (other, TIMEOUT, RELEASE_ALLOCATED_ON_TIMEOUT)]
    confirm(w, replaced.allocation_key)
    confirm(w, other, termination=TIMEOUT)
    assert data(w) == {"tg-1": (2, 1, 1)}
    assert w.app("app-1").state is AppState.RUNNING


def test_node_removal_counts_placeholders_and_undoes_replacements_in_flight(w: World) -> None:
    """TestRemoveNodeWithPlaceholders / TestRemoveNodeWithReplacement: the node of a
    placeholder goes: it counts timed out; a member that was taking it (on the same node)
    waits again, pending, and nothing was sent to the RM for it."""
    two_placeholders(w)
    member(w, "real-1")
    (decision,) = cycle(w)
    assert decision.replaced is not None
    w.node("node-1", si.NodeAction.DECOMISSION)
    app = w.app("app-1")
    assert data(w) == {"tg-1": (2, 2, 0)}
    assert "real-1" in app.asks and not app.asks["real-1"].allocated
    assert "real-1" not in w.rm.allocations
    assert app.allocated.is_zero() and app.allocated_placeholder.is_zero()


def test_node_removal_completes_a_replacement_whose_member_is_elsewhere(w: World) -> None:
    """TestRemoveNodeWithReplacement, the other side: the member took node-2 (the RM refused
    node-1); node-1 goes before the RM confirms: the replacement completes, the member is
    allocated on node-2 and sent to the RM."""
    member_on_node_2(w)
    w.node("node-1", si.NodeAction.DECOMISSION)
    app = w.app("app-1")
    assert "real-1" in app.allocations and app.allocations["real-1"].node_id == "node-2"
    assert w.rm.allocations["real-1"].node_id == "node-2"
    assert data(w) == {"tg-1": (1, 0, 1)}


def test_application_removal_with_a_replacement_in_flight(w: World) -> None:
    """TestPlaceholderDataWithRemoval / TestRemoveAllPlaceholderAllocs: the application goes
    while a member is taking a placeholder on another node: that node is freed, the
    placeholders count timed out."""
    member_on_node_2(w)
    app = w.app("app-1")
    w.remove_app("app-1")
    nodes = w.partition().nodes
    assert nodes["node-1"].allocated.is_zero() and nodes["node-2"].allocated.is_zero()
    assert (app.placeholder_data["tg-1"].count, app.placeholder_data["tg-1"].timed_out) == (1, 1)


def test_rest_shows_the_gang(w: World) -> None:
    """REST: placeholderData per group with replaced and timed out, the member's
    placeholderUsed and taskGroupName, the queue's allocatingAcceptedApps."""
    two_placeholders(w)
    member(w, "real-1")
    (decision,) = cycle(w)
    assert decision.replaced is not None
    confirm(w, decision.replaced.allocation_key)
    part = w.partition()
    with part.lock:
        dao = application_dao(app_view(part, w.app("app-1")))
    assert dao["placeholderData"] == [{"taskGroupName": "tg-1", "count": 2, "minResource": {"vcore": 1000},
                                       "replaced": 1}]
    real = next(a for a in dao["allocations"] if a["allocationKey"] == "real-1")
    assert real["placeholderUsed"] is True and real["taskGroupName"] == "tg-1"
    assert dao["usedResource"] == {"vcore": 1000}


# -- gangs that cannot both fit, preempted placeholders, recovery ----------------------------------


def confirm_core_releases(w: World, handled: int) -> int:
    """The shim's side: every release the core started (TIMEOUT, PLACEHOLDER_REPLACED,
    PREEMPTED_BY_SCHEDULER) since ``handled`` is confirmed with its type; returns the new mark."""
    released = w.rm.released
    for release in released[handled:]:
        if release.termination_type in (TIMEOUT, REPLACED, si.TerminationType.PREEMPTED_BY_SCHEDULER):
            w.release(release.application_id, release.allocation_key, termination=release.termination_type)
    return len(released)


def run_until_idle(w: World, handled: int, cycles: int = 50) -> int:
    for _ in range(cycles):
        decisions = cycle(w)
        handled = confirm_core_releases(w, handled)
        if not decisions:
            break
    return handled


def placed_placeholders(w: World, app_id: str) -> int:
    app = w.partition().applications.get(app_id)
    return 0 if app is None else sum(1 for a in app.allocations.values() if a.placeholder)


@pytest.mark.parametrize("queues", [("root.gang", "root.gang"), ("root.gang", "root.gang2")])
def test_two_gangs_that_each_need_60_percent_never_both_stay_half_placed(queues: tuple[str, str]) -> None:
    """The deadlock the placeholders prevent: 10 nodes of 1 vcore, two Hard gangs of 6 members
    of 1 vcore with a 5 s placeholder timeout, submitted together with their members. In one
    FIFO queue the first runs whole and the second times out; in two queues (fair between
    them) both may end half placed until the timeout: afterwards neither holds a partial gang."""
    config = queues_yaml("""\
          - name: gang
            properties: {application.sort.policy: fifo}
          - name: gang2
            properties: {application.sort.policy: fifo}
""")
    w = World(config)
    try:
        for i in range(10):
            w.add_node(f"node-{i}", memory=1000, vcore=1000)
        for app_id, queue in zip(("job-1", "job-2"), queues):
            w.apps(si.AddApplicationRequest(
                application_id=app_id, queue_name=queue, partition_name="default",
                ugi=si.UserGroupInformation(user="alice"), placeholder_ask=res(vcore=6000),
                gang_scheduling_style="Hard", execution_timeout_milli_seconds=5000))
        for app_id in ("job-1", "job-2"):
            for i in range(6):
                placeholder(w, f"{app_id}-ph-{i}", app_id)
        for app_id in ("job-1", "job-2"):
            for i in range(6):
                member(w, f"{app_id}-m-{i}", app_id)
        handled = run_until_idle(w, 0)
        half = [a for a in ("job-1", "job-2") if 0 < placed_placeholders(w, a) < 6]
        w.advance(5.1)
        handled = run_until_idle(w, confirm_core_releases(w, handled))
        apps = w.partition().applications
        for app_id in ("job-1", "job-2"):
            app = apps.get(app_id)
            if app is None or app.state in (AppState.FAILED, AppState.FAILING):
                continue
            assert app.allocated_placeholder.is_zero(), (app_id, app.state, "holds placeholders after the timeout")
        states = {a: (apps[a].state if a in apps else "gone") for a in ("job-1", "job-2")}
        if queues[0] == queues[1]:
            assert half == ["job-2"]  # FIFO: the first gang took its 6 nodes
            job1 = apps["job-1"]
            assert job1.state is AppState.RUNNING and sum(1 for a in job1.allocations.values()
                                                           if a.placeholder_used) == 6, states
            assert w.partition().completed_applications or apps["job-2"].state is AppState.FAILED, states
        else:
            assert all(apps[a].allocated_placeholder.is_zero() or apps[a].state is AppState.RUNNING
                       for a in apps), states
    finally:
        w.close()


def test_a_preempted_placeholder_is_never_replaced(w: World) -> None:
    """TestPreemptedPlaceholderSkip / TestPlaceholderDataWithPlaceholderPreemption: node-1 is
    full of a gang's 6 placeholders; a daemon set ask that needs node-1 preempts one (node-2
    leaves room in the cluster, so the ask passes its queue's headroom). A member
    arriving before the RM confirms takes another placeholder, never the preempted one; the
    confirmation (PREEMPTED_BY_SCHEDULER, not echoed) counts it timed out: (6, 1, 1) once the
    member's placeholder is confirmed too."""
    w.add_node("node-1", memory=1000, vcore=6000)
    gang_app(w, total={"vcore": 6000})
    for i in range(6):
        placeholder(w, f"ph-{i}")
    for _ in range(6):
        assert len(cycle(w)) == 1
    w.add_node("node-2", memory=1000, vcore=1000)  # room in the cluster (the root's max), not on node-1
    w.add_app("ds-app", "root.other")
    w.ask("ds-1", "ds-app", res(vcore=1000), allocation_tags={si.TAG_REQUIRED_NODE: "node-1"})
    cycle(w)  # reserves node-1
    cycle(w)  # the reserved daemon set ask preempts
    victims = [r.allocation_key for r in w.rm.released if r.termination_type == si.TerminationType.PREEMPTED_BY_SCHEDULER]
    assert len(victims) == 1 and victims[0].startswith("ph-")
    member(w, "real-1")
    (decision,) = cycle(w)
    assert decision.replaced is not None and decision.replaced.allocation_key != victims[0]
    before = len(w.rm.released)
    confirm(w, victims[0], termination=si.TerminationType.PREEMPTED_BY_SCHEDULER)
    assert len(w.rm.released) == before  # no echo
    confirm(w, decision.replaced.allocation_key)
    assert data(w) == {"tg-1": (6, 1, 1)}
    assert len(w.app("app-1").allocations) == 5


def test_placeholders_the_rm_reports_after_a_restart_count(w: World) -> None:
    """tests::TestPlaceholderRecovery: after a restart the RM reports the placeholders it runs
    (with their node): they count in their group and the gang is whole again; a member then
    replaces one as usual."""
    w.add_node("node-1", memory=1000, vcore=10_000)
    gang_app(w)
    for key in ("ph-1", "ph-2"):
        w.allocs(w.alloc_msg(key, "app-1", res(**ONE), node_id="node-1", placeholder=True, task_group_name="tg-1"))
    app = w.app("app-1")
    assert data(w) == {"tg-1": (2, 0, 0)} and app.allocated_placeholder == res(vcore=2000)
    assert app.state is AppState.RUNNING
    member(w, "real-1")
    (decision,) = cycle(w)
    assert decision.replaced is not None
    confirm(w, decision.replaced.allocation_key)
    assert data(w) == {"tg-1": (2, 0, 1)}


def test_a_member_withdrawn_while_it_takes_a_placeholders_place(w: World) -> None:
    """The RM deletes a member (its pod) before confirming its placeholder's release: the
    member leaves node-2 at once, nothing is rejected; the placeholder goes when the RM confirms
    (counted replaced, as YuniKorn counts a placeholder replaced without a member) and nothing
    is sent to the RM as new."""
    member_on_node_2(w)
    w.release("app-1", "real-1")
    assert not w.rm.rejected_allocations
    nodes = w.partition().nodes
    assert nodes["node-2"].allocated.is_zero()
    check_invariants(w.context)
    confirm(w, "ph-1")
    assert "real-1" not in w.rm.allocations and "real-1" not in w.app("app-1").allocations
    assert nodes["node-1"].allocated.is_zero()
    assert data(w) == {"tg-1": (1, 0, 1)}


def test_a_larger_member_releases_every_placeholder_of_its_group(w: World) -> None:
    """TestPlaceholderSmallerThanReal (multi): two placeholders of 1 vcore, a member of 2: both
    are released (all placeholders of a group have one size), each counted timed out once
    the RM confirms; then the member is allocated normally."""
    two_placeholders(w)
    member(w, "real-1", size=TWO)
    cycle(w)
    released = sorted(r.allocation_key for r in w.rm.released if r.message == CANCEL_INCOMPATIBLE)
    assert released == ["ph-1", "ph-2"]
    for key in released:
        confirm(w, key, termination=TIMEOUT)
    assert data(w) == {"tg-1": (2, 2, 0)}
    (decision,) = cycle(w)
    assert decision.replaced is None and decision.ask.allocation_key == "real-1"


def test_the_timeout_does_not_release_a_preempted_placeholder_again(w: World) -> None:
    """TestTimeoutPlaceholderAllocPreempted: a running gang's two placeholders fill node-1; a
    daemon set ask that needs node-1 preempts one (its release pending); the placeholder
    timeout then releases only the other one."""
    w.add_node("node-1", memory=1000, vcore=2000)
    gang_app(w, timeout_ms=5000)
    placeholder(w, "ph-1")
    placeholder(w, "ph-2")
    assert len(cycle(w)) == 1 and len(cycle(w)) == 1
    w.add_node("node-2", memory=1000, vcore=1000)
    w.add_app("ds-app", "root.other")
    w.ask("ds-1", "ds-app", res(vcore=1000), allocation_tags={si.TAG_REQUIRED_NODE: "node-1"})
    cycle(w)
    cycle(w)
    (victim,) = [r.allocation_key for r in w.rm.released if r.termination_type == si.TerminationType.PREEMPTED_BY_SCHEDULER]
    w.rm.clear()
    w.advance(6.0)
    other = "ph-2" if victim == "ph-1" else "ph-1"
    assert [(r.allocation_key, r.termination_type) for r in w.rm.released] == [(other, TIMEOUT)]
    assert w.app("app-1").state is AppState.RUNNING


def test_resuming_is_announced_with_youniKorns_message(w: World) -> None:
    """APP_RESUMING (211) with message ResourceReservationTimeout when a Soft gang times out."""
    w.add_node("node-1", memory=1000, vcore=10_000)
    gang_app(w, total={"vcore": 3000}, timeout_ms=5)
    placeholder(w, "ph-1")
    assert len(cycle(w)) == 1
    mark = w.mark()
    w.advance(0.01)
    resuming = [e for e in w.events(mark) if e[2] == D.APP_RESUMING]
    assert [(e[3], e[5]) for e in resuming] == [("app-1", "ResourceReservationTimeout")]


def test_a_gang_larger_than_its_queue_max_is_rejected_with_youniKorns_message() -> None:
    """TestAddAppTaskGroup: the placeholder ask must fit the queue's max on the whole path."""
    config = queues_yaml("""\
          - name: gang
            properties: {application.sort.policy: fifo}
            resources: {max: {vcore: 2}}
""")
    w = World(config)
    try:
        w.add_node("node-1", memory=1000, vcore=10_000)
        gang_app(w, total={"vcore": 3000})
        reason = w.rm.rejected_apps["app-1"]
        assert "cannot fit application app-1: task group request" in reason
        assert "larger than max queue allocation" in reason
    finally:
        w.close()


def test_task_groups_are_isolated(w: World) -> None:
    """TestTryPlaceHolderAllocateDifferentTaskGroups: a member of tg-1 never takes tg-2's
    placeholder, and the other way round."""
    w.add_node("node-1", memory=1000, vcore=10_000)
    gang_app(w)
    placeholder(w, "ph-a", group="tg-1")
    placeholder(w, "ph-b", group="tg-2")
    assert len(cycle(w)) == 1 and len(cycle(w)) == 1
    member(w, "real-b", group="tg-2")
    (decision,) = cycle(w)
    assert decision.replaced is not None and decision.replaced.allocation_key == "ph-b"
    member(w, "real-a", group="tg-1")
    (decision,) = cycle(w)
    assert decision.replaced is not None and decision.replaced.allocation_key == "ph-a"
    assert data(w) == {"tg-1": (1, 0, 0), "tg-2": (1, 0, 0)}


def test_a_completing_gang_gives_up_its_placeholders_on_timeout(w: World) -> None:
    """TestTimeoutPlaceholderCompleting: a gang whose members all ended while placeholders are
    left (the RM asked for more placeholders than it used) completes; the timer releases the
    placeholders left, and the application ends once the RM confirms."""
    two_placeholders(w, timeout_ms=5000)
    member(w, "real-1")
    (decision,) = cycle(w)
    assert decision.replaced is not None
    confirm(w, decision.replaced.allocation_key)
    w.release("app-1", "real-1")  # the member ended; one placeholder is left
    app = w.app("app-1")
    w.rm.clear()
    w.advance(6.0)
    left = "ph-2" if decision.replaced.allocation_key == "ph-1" else "ph-1"
    assert [(r.allocation_key, r.termination_type) for r in w.rm.released] == [(left, TIMEOUT)]
    confirm(w, left, termination=TIMEOUT)
    assert app.state in (AppState.COMPLETING, AppState.COMPLETED)
    assert data(w) == {"tg-1": (2, 1, 1)}


def test_rest_lists_an_accepted_gang_as_allocating(w: World) -> None:
    """REST queue allocatingAcceptedApps: an Accepted gang holding placeholders."""
    from pyscheduler.dao.queues import queue_dao, queue_view

    w.add_node("node-1", memory=1000, vcore=10_000)
    gang_app(w)
    placeholder(w, "ph-1")
    assert len(cycle(w)) == 1
    part = w.partition()
    with part.lock:
        dao = queue_dao(queue_view(part, w.queue("root.gang"), subtree=False))
    assert dao["allocatingAcceptedApps"] == ["app-1"]
