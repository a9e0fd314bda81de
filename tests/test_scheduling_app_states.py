"""Application states driven by the scheduling cycle and its timers, through the RM interface:
Accepted on the first ask, Running on the first allocation the cycle makes, Completing when
nothing is pending or allocated, Completed after the 30 s completing timeout (ManualClock:
the scheduler fires due timers at its next cycle, or ``context.tick()`` does)."""

from __future__ import annotations

from scheduling_helpers import C, D, T, clusters  # noqa: F401

from pyscheduler.objects.application_state import AppState


def _state_events(events, app_id):
    return [e[2] for e in events if e[0] == T.APP and e[1] == C.SET and e[3] == app_id]


def test_accepted_running_completing_completed_with_the_completing_timeout(clusters) -> None:
    c = clusters()
    c.add_nodes(1)
    mark = c.mark()
    c.add_app("app-1")
    assert c.rm.app_states("app-1") == []  # New is not reported
    c.asks("app-1", 2)
    assert c.rm.app_states("app-1") == ["Accepted"]
    assert c.once()  # the cycle's first allocation runs the app
    assert c.rm.app_states("app-1") == ["Accepted", "Running"]
    c.schedule()
    assert c.rm.app_states("app-1") == ["Accepted", "Running"]
    for key in list(c.placements()):
        c.release("app-1", key)
    assert c.rm.app_states("app-1") == ["Accepted", "Running", "Completing"]
    # 29 s later still Completing.
    c.advance(29)
    c.once()
    assert c.app("app-1").state is AppState.COMPLETING
    # At 30 s the next cycle fires the timer.
    c.advance(1)
    c.once()
    assert c.rm.app_states("app-1") == ["Accepted", "Running", "Completing", "Completed"]
    assert "app-1" not in c.partition.applications
    assert any(key.startswith("app-1-") for key in c.partition.completed_applications)
    assert _state_events(c.events(mark), "app-1") == [
        D.APP_ACCEPTED, D.APP_RUNNING, D.APP_COMPLETING, D.APP_COMPLETED]
    assert c.queue("root.a").running_apps == 0
    c.assert_healthy()


def test_the_completing_timeout_fires_on_context_tick_too(clusters) -> None:
    c = clusters()
    c.add_nodes(1)
    c.add_app("app-1")
    c.ask("k", "app-1")
    c.schedule()
    c.release("app-1", "k")
    c.advance(30)
    c.tick()
    assert c.rm.app_state("app-1") == "Completed"
    c.assert_healthy()


def test_an_ask_while_completing_runs_the_app_again(clusters) -> None:
    c = clusters()
    c.add_nodes(1)
    c.add_app("app-1")
    c.ask("k1", "app-1")
    c.schedule()
    c.release("app-1", "k1")
    c.advance(20)
    c.ask("k2", "app-1")
    assert c.rm.app_states("app-1") == ["Accepted", "Running", "Completing", "Running"]
    # The old completing timer is gone: 30 s after the first release the app still runs.
    c.advance(15)
    assert c.schedule() == 1
    assert c.app("app-1").state is AppState.RUNNING
    assert c.placements() == {"k2": "node-00"}
    c.assert_healthy()


def test_an_app_whose_asks_are_all_withdrawn_completes_from_accepted(clusters) -> None:
    c = clusters()
    c.add_node("node-00", memory=5, vcore=1)  # too small: the ask waits
    c.add_app("app-1")
    c.ask("k", "app-1")
    assert c.schedule() == 0
    assert c.app("app-1").state is AppState.ACCEPTED
    c.release("app-1", "k")  # the RM withdraws the ask
    assert c.rm.app_states("app-1") == ["Accepted", "Completing"]
    c.advance(30)
    c.once()
    assert c.rm.app_states("app-1") == ["Accepted", "Completing", "Completed"]
    c.assert_healthy()
