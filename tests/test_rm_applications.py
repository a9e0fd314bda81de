"""Applications through the RM interface: add (accept / reject with a reason), remove, every
state transition the RM can drive, and the timers (completing 30 s, terminated 3 days), with a
ManualClock and ``context.tick()`` instead of sleeping."""

from __future__ import annotations

import pytest
from rm_helpers import BASIC, LIMITED, C, D, T, World, check_invariants, res, world  # noqa: F401

from pyscheduler.objects.application import Application, AppTimeouts
from pyscheduler.objects.application_state import AppState
from pyscheduler.si import messages as si

S = AppState
THREE_DAYS = 3 * 24 * 3600


def _running(world: World, app_id: str = "app-1", key: str = "k1") -> None:
    world.add_node("n1")
    world.add_app(app_id)
    world.allocate(key, app_id, "n1")


# -- add ----------------------------------------------------------------------------------------


def test_add_application_is_accepted_into_its_queue(world: World) -> None:
    mark = world.mark()
    world.add_app("app-1", "root.a", user="alice", groups=("dev",))
    assert world.rm.accepted_apps == ["app-1"]
    app = world.app("app-1")
    assert app.state is S.NEW
    assert app.queue is world.queue("root.a")
    assert app.user == "alice" and app.groups == ("dev",)
    assert app.submission_time_ns == world.clock.now_ns()
    assert app.state_log == [(S.NEW, world.clock.now_ns())]
    assert world.queue("root.a").applications == {"app-1": app}
    assert world.events(mark) == [
        (T.APP, C.ADD, D.APP_NEW, "app-1", "", ""),
        (T.QUEUE, C.ADD, D.QUEUE_APP, "root.a", "app-1", ""),
    ]
    # Being accepted is not a state change: nothing "updated" is sent for New.
    assert world.rm.app_updates == []


def test_rejected_application_gets_a_reason_and_no_state_update(world: World) -> None:
    mark = world.mark()
    world.add_app("app-x", "root.nothere")
    reason = world.rm.rejected_apps["app-x"]
    assert reason == "application rejected: no placement rule matched"
    part = world.partition()
    assert "app-x" not in part.applications
    assert part.rejected_applications["app-x"].state is S.REJECTED
    assert part.rejected_applications["app-x"].rejected_message == reason
    assert world.events(mark) == [
        (T.APP, C.ADD, D.APP_NEW, "app-x", "", ""),
        (T.APP, C.SET, D.APP_REJECT, "app-x", "", reason),
    ]
    # Entering Rejected is not reported as an update (the rejection is the answer).
    assert world.rm.app_updates == []


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (si.AddApplicationRequest(application_id="", queue_name="root.a",
                                  ugi=si.UserGroupInformation(user="u")), "application ID is empty"),
        (si.AddApplicationRequest(application_id="nouser", queue_name="root.a"), "no user"),
        (si.AddApplicationRequest(application_id="ph", queue_name="root.a", ugi=si.UserGroupInformation(user="u"),
                                  placeholder_ask=res(memory=-1)), "negative"),
        (si.AddApplicationRequest(application_id="part", queue_name="root.a", partition_name="nope",
                                  ugi=si.UserGroupInformation(user="u")), "unknown partition"),
    ],
)
def test_malformed_applications_are_rejected(world: World, message: si.AddApplicationRequest, expected: str) -> None:
    mark = world.mark()
    world.apps(message)
    assert expected in world.rm.rejected_apps[message.application_id]
    assert world.rm.accepted_apps == []
    assert world.partition().applications == {}
    assert world.events(mark) == []


def test_duplicate_application_is_rejected_and_the_first_stays(world: World) -> None:
    world.add_app("app-1", "root.a")
    world.add_app("app-1", "root.b")
    assert "already exist" in world.rm.rejected_apps["app-1"]
    assert world.app("app-1").queue is world.queue("root.a")
    assert world.app("app-1").state is S.NEW
    assert list(world.queue("root.b").applications) == []


def test_good_and_bad_applications_in_one_request(world: World) -> None:
    world.apps(
        World.app_msg("ok-1"),
        World.app_msg("bad", queue="root.missing"),
        World.app_msg("ok-2", queue="root.b"),
        remove=(si.RemoveApplicationRequest(application_id="ghost", partition_name="default"),),
    )
    responses = world.rm.calls_of("update_application")
    assert len(responses) == 1
    assert [a.application_id for a in responses[0].accepted] == ["ok-1", "ok-2"]
    assert {r.application_id for r in responses[0].rejected} == {"bad", "ghost"}
    assert "unknown application ghost" in world.rm.rejected_apps["ghost"]
    assert set(world.partition().applications) == {"ok-1", "ok-2"}


# -- the state machine, driven by asks and allocations --------------------------------------------


def test_new_accepted_running_completing(world: World) -> None:
    world.add_node("n1")
    world.add_app("app-1")
    app = world.app("app-1")
    queue = world.queue("root.a")

    world.clock.advance(1)
    world.ask("k1", "app-1")
    assert app.state is S.ACCEPTED
    t_accepted = world.clock.now_ns()
    assert queue.running_apps == 0

    world.clock.advance(1)
    world.commit("app-1", "k1", "n1")
    assert app.state is S.RUNNING
    t_running = world.clock.now_ns()
    assert queue.running_apps == 1 and world.partition().root.running_apps == 1

    world.clock.advance(1)
    world.release("app-1", "k1")
    assert app.state is S.COMPLETING
    t_completing = world.clock.now_ns()
    # Only Running counts (YuniKorn: enter/leave Running), so leaving it gives the slot back.
    assert queue.running_apps == 0 and world.partition().root.running_apps == 0

    updates = [(u.application_id, u.state, u.state_transition_timestamp) for u in world.rm.app_updates]
    assert updates == [
        ("app-1", "Accepted", t_accepted),
        ("app-1", "Running", t_running),
        ("app-1", "Completing", t_completing),
    ]
    assert [s for s, _ in app.state_log] == [S.NEW, S.ACCEPTED, S.RUNNING, S.COMPLETING]
    assert [t for _, t in app.state_log][1:] == [t_accepted, t_running, t_completing]
    check_invariants(world.context)


def test_accepted_app_completes_when_its_only_ask_is_removed(world: World) -> None:
    world.add_app("app-1")
    world.ask("k1", "app-1")
    mark = world.mark()
    world.release("app-1", "k1")
    assert world.app("app-1").state is S.COMPLETING
    assert world.rm.app_states("app-1") == ["Accepted", "Completing"]
    events = world.events(mark)
    assert (T.APP, C.REMOVE, D.REQUEST_CANCEL, "app-1", "k1", "") in events
    assert events[-1] == (T.APP, C.SET, D.APP_COMPLETING, "app-1", "", "")
    # Removing an ask is not a release of an allocation: the RM gets none back.
    assert world.rm.released == []
    assert world.queue("root.a").pending.is_zero()


def test_new_ask_while_completing_runs_again_and_cancels_the_timer(world: World) -> None:
    _running(world)
    world.release("app-1", "k1")
    app = world.app("app-1")
    assert app.state is S.COMPLETING
    world.advance(10)
    world.ask("k2", "app-1")
    assert app.state is S.RUNNING
    assert world.rm.app_states("app-1")[-2:] == ["Completing", "Running"]
    # The completing timer is gone: long past 30 s the app still runs.
    world.advance(60)
    assert app.state is S.RUNNING
    assert "app-1" in world.partition().applications


def test_second_allocation_does_not_change_state(world: World) -> None:
    _running(world)
    world.allocate("k2", "app-1", "n1")
    assert world.rm.app_states("app-1") == ["Accepted", "Running"]
    world.release("app-1", "k1")
    assert world.app("app-1").state is S.RUNNING
    world.release("app-1", "k2")
    assert world.app("app-1").state is S.COMPLETING


# -- timers ---------------------------------------------------------------------------------------


def test_completing_timer_completes_after_30s_then_expires_after_3_days(world: World) -> None:
    _running(world)
    world.release("app-1", "k1")
    app = world.app("app-1")
    part = world.partition()
    queue = world.queue("root.a")

    world.advance(29.9)
    assert app.state is S.COMPLETING
    assert "app-1" in part.applications
    mark = world.mark()
    world.advance(0.1)
    assert app.state is S.COMPLETED
    t_completed = world.clock.now_ns()
    assert world.rm.app_updates[-1].state == "Completed"
    assert world.rm.app_updates[-1].state_transition_timestamp == t_completed
    # Moved aside under "<appID>-<unix seconds>", out of its queue; no longer running.
    assert "app-1" not in part.applications
    key = f"app-1-{t_completed // 1_000_000_000}"
    assert part.completed_applications == {key: app}
    assert queue.applications == {}
    assert queue.running_apps == 0 and part.root.running_apps == 0
    assert world.events(mark) == [
        (T.APP, C.SET, D.APP_COMPLETED, "app-1", "", ""),
        (T.QUEUE, C.REMOVE, D.QUEUE_APP, "root.a", "app-1", ""),
    ]
    # Ticking again does nothing until the terminated timeout.
    world.advance(THREE_DAYS - 1)
    assert app.state is S.COMPLETED and key in part.completed_applications
    mark = world.mark()
    world.advance(1)
    assert app.state is S.EXPIRED
    assert part.completed_applications == {}
    assert world.rm.app_updates[-1].state == "Expired"
    assert world.events(mark) == [(T.APP, C.SET, D.APP_EXPIRED, "app-1", "", "")]
    assert [s for s, _ in app.state_log] == [
        S.NEW, S.ACCEPTED, S.RUNNING, S.COMPLETING, S.COMPLETED, S.EXPIRED
    ]


def test_timers_need_a_tick(world: World) -> None:
    _running(world)
    world.release("app-1", "k1")
    world.clock.advance(3600)
    assert world.app("app-1").state is S.COMPLETING
    world.context.tick()
    assert world.partition().completed_applications


def test_rejected_app_expires_after_3_days(world: World) -> None:
    world.add_app("app-x", "root.nothere")
    part = world.partition()
    app = part.rejected_applications["app-x"]
    world.advance(THREE_DAYS - 1)
    assert app.state is S.REJECTED
    world.advance(1)
    assert app.state is S.EXPIRED
    assert part.rejected_applications == {}


def test_timeouts_are_configurable() -> None:
    w = World(BASIC, timeouts=AppTimeouts(completing=5, terminated=60))
    try:
        _running(w)
        w.release("app-1", "k1")
        app = w.app("app-1")
        w.advance(4.9)
        assert app.state is S.COMPLETING
        w.advance(0.1)
        assert app.state is S.COMPLETED
        w.advance(59.9)
        assert app.state is S.COMPLETED
        w.advance(0.1)
        assert app.state is S.EXPIRED
        assert w.rm.app_states("app-1") == ["Accepted", "Running", "Completing", "Completed", "Expired"]
    finally:
        w.close()


def test_an_application_can_reuse_its_id_after_completing(world: World) -> None:
    _running(world)
    world.release("app-1", "k1")
    world.advance(30)
    world.add_app("app-1")
    assert world.rm.rejected_apps == {}
    assert world.app("app-1").state is S.NEW


# -- submission time ------------------------------------------------------------------------------


def test_submission_time_is_the_earliest_of_creation_and_asks(world: World) -> None:
    world.add_app("app-1")
    app = world.app("app-1")
    created = app.submission_time_ns
    # An ask created (per its creationTime tag) before the app moves the submission time back.
    earlier_s = created // 1_000_000_000 - 100
    world.ask("k1", "app-1", allocation_tags={si.CREATION_TIME: str(earlier_s)})
    assert app.asks["k1"].create_time_ns == earlier_s * 1_000_000_000
    assert app.submission_time_ns == earlier_s * 1_000_000_000
    # A later ask does not.
    world.clock.advance(500)
    world.ask("k2", "app-1")
    assert app.submission_time_ns == earlier_s * 1_000_000_000


def test_recovered_allocation_can_set_submission_time(world: World) -> None:
    world.add_node("n1")
    world.add_app("app-1")
    app = world.app("app-1")
    earlier_s = app.submission_time_ns // 1_000_000_000 - 3600
    world.ask("k1", "app-1", node_id="n1", allocation_tags={si.CREATION_TIME: str(earlier_s)})
    assert app.submission_time_ns == earlier_s * 1_000_000_000


# -- remove ---------------------------------------------------------------------------------------


def test_remove_releases_everything_with_stopped_by_rm(world: World) -> None:
    world.add_node("n1")
    world.add_node("n2")
    world.add_app("app-1", user="alice")
    world.allocate("k1", "app-1", "n1", res(memory=10, vcore=1))
    world.allocate("k2", "app-1", "n2", res(memory=20, vcore=1))
    world.ask("k3", "app-1", res(memory=5, vcore=1))
    part = world.partition()
    queue = world.queue("root.a")
    assert queue.running_apps == 1
    mark = world.mark()
    world.remove_app("app-1")

    assert "app-1" not in part.applications
    released = sorted(world.rm.released, key=lambda r: r.allocation_key)
    assert [(r.allocation_key, r.application_id, r.termination_type, r.partition_name) for r in released] == [
        ("k1", "app-1", si.TerminationType.STOPPED_BY_RM, "default"),
        ("k2", "app-1", si.TerminationType.STOPPED_BY_RM, "default"),
    ]
    assert world.rm.allocations == {}
    assert part.nodes["n1"].allocations == {} and part.nodes["n2"].allocations == {}
    assert part.nodes["n1"].allocated.is_zero()
    for q in (queue, part.root):
        assert q.allocated.is_zero() and q.pending.is_zero()
        # A removed application no longer counts as running anywhere.
        assert q.running_apps == 0, q.path
    assert queue.applications == {}
    assert part.ugm.user_usage("alice").is_zero()
    assert part.ugm.tracked_users() == []

    events = world.events(mark)
    assert (T.APP, C.REMOVE, D.ALLOC_CANCEL, "app-1", "k1", "") in events
    assert (T.APP, C.REMOVE, D.ALLOC_CANCEL, "app-1", "k2", "") in events
    assert (T.APP, C.REMOVE, D.REQUEST_CANCEL, "app-1", "k3", "") in events
    assert (T.QUEUE, C.REMOVE, D.QUEUE_APP, "root.a", "app-1", "") in events
    assert events[-1] == (T.APP, C.REMOVE, D.DETAILS_NONE, "app-1", "", "")
    check_invariants(world.context)


def test_removed_app_frees_its_queue_slot(world: World) -> None:
    """maxapplications counts running apps: a removed running app must give its slot back."""
    w = World(LIMITED)
    try:
        w.add_node("n1")
        for app_id in ("app-1", "app-2"):
            w.add_app(app_id)
            w.allocate(f"{app_id}-k", app_id, "n1", res(memory=1, vcore=1))
        queue = w.queue("root.a")
        assert queue.running_apps == 2 and not queue.can_run_app()
        w.remove_app("app-1")
        assert queue.running_apps == 1 and queue.can_run_app()
    finally:
        w.close()


def test_remove_then_ticks_do_not_resurrect(world: World) -> None:
    _running(world)
    world.remove_app("app-1")
    world.rm.clear()
    world.advance(THREE_DAYS * 2)
    assert world.rm.app_updates == []
    assert world.partition().applications == {}


def test_partition_removal_fails_applications(world: World) -> None:
    """Re-registration drops the RM's partitions: their applications fail ("PartitionRemoved")."""
    _running(world)
    world.add_app("app-2")
    old_rm = world.rm
    from pyscheduler.testing.recording import RecordingRM

    new_rm = RecordingRM()
    world.register(BASIC, rm=new_rm)
    failing = [u for u in old_rm.app_updates if u.state == "Failing"]
    assert {u.application_id for u in failing} == {"app-1", "app-2"}
    assert all(u.message == "PartitionRemoved" for u in failing)
    # The old node's allocation was released to the RM that owned it.
    assert [r.allocation_key for r in old_rm.released] == ["k1"]
    assert new_rm.calls == []
    assert world.partition().applications == {} and world.partition().nodes == {}


def test_a_tick_looks_only_at_applications_whose_timer_is_due(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 17: terminated applications are kept three days, so a busy cluster holds a great many;
    # the one-second tick must not walk them all. 200 running applications, 50 completed ones,
    # 3 completing: a tick 30 s later ticks exactly the 3 completing ones, in the order they were
    # added (the live table's order), and the rest never.
    world.add_node("n1", memory=10_000, vcore=1_000)
    for i in range(253):
        world.add_app(f"app-{i:03d}")
        world.allocate(f"k{i}", f"app-{i:03d}", "n1")
    for i in range(200, 250):
        world.release(f"app-{i:03d}", f"k{i}")
    world.advance(30)  # these 50 complete
    for i in (252, 250, 251):  # released out of order: the tick still goes by the table
        world.release(f"app-{i:03d}", f"k{i}")
    ticked: list[str] = []
    original = Application.tick

    def counted(self: Application) -> AppState | None:
        ticked.append(self.app_id)
        return original(self)

    monkeypatch.setattr(Application, "tick", counted)
    world.advance(29)
    assert ticked == []
    world.advance(1)
    assert ticked == ["app-250", "app-251", "app-252"]
    assert [world.partition().completed_applications[k].app_id for k in list(world.partition().completed_applications)[-3:]] == [
        "app-250", "app-251", "app-252"]
    ticked.clear()
    world.advance(THREE_DAYS)  # every completed application expires: each ticked once
    assert sorted(ticked) == [f"app-{i:03d}" for i in range(200, 253)]
    assert world.partition().completed_applications == {}
    check_invariants(world.context)
