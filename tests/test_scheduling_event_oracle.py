"""YuniKorn's authoritative event sequence (events.md, "Authoritative event-sequence oracle",
from yunikorn-core's TestApplicationHistoryTracking), end to end: the RM interface plus the
scheduling cycle, with no shortcut. The allocation of step 4 is made by the scheduler's cycle
(``Scheduler.schedule_once``), not committed directly (test_rm_event_oracle.py keeps that
variant), and the RM learns of it through its callback.

After each step the batch body and a stream opened with count=1000 are read, and both must
hold exactly the expected (type, change type, detail, objectID, referenceID, message) tuples.
"""

from __future__ import annotations

import pytest

from pyscheduler.si.events import EventChangeDetail as D
from pyscheduler.si.events import EventChangeType as C
from pyscheduler.si.events import EventRecordType as T
from pyscheduler.si import messages as si
from pyscheduler.rmproxy.proxy import RMProxy
from pyscheduler.testing.recording import RecordingRM

from pyscheduler.scheduler.health import check_health
from pyscheduler.scheduler.loop import Scheduler

from event_oracle import CONFIG, RM_ID, STEPS, Oracle, drive_first_steps, submit_ask, tuples

@pytest.fixture
def world():
    proxy = RMProxy()
    rm = RecordingRM()
    proxy.register_resource_manager(
        si.RegisterResourceManagerRequest(rm_id=RM_ID, policy_group="default", config=CONFIG), rm
    )
    scheduler = Scheduler(proxy.context)
    yield proxy, rm, scheduler
    scheduler.stop()
    proxy.stop()


def test_application_history_tracking_through_the_scheduling_cycle(world) -> None:
    proxy, rm, scheduler = world
    oracle = Oracle(proxy)
    # Nothing to schedule yet: a cycle without nodes or asks changes nothing and emits nothing.
    assert scheduler.schedule_once() == []

    drive_first_steps(proxy, rm, oracle)

    # 4. an ask, then its allocation on the node.
    ask = submit_ask(proxy)
    # The ask alone: Accepted and the request, no allocation yet.
    assert tuples(oracle.batch()[7:]) == [
        (T.APP, C.SET, D.APP_ACCEPTED, "app-1", "", ""),
        (T.APP, C.ADD, D.APP_REQUEST, "app-1", "alloc-1", ""),
    ]
    assert "alloc-1" not in rm.allocations
    decisions = scheduler.schedule_once()
    assert [(d.ask.allocation_key, d.node.node_id) for d in decisions] == [("alloc-1", "node-1:1234")]
    alloc = rm.wait_for_allocation("alloc-1")
    assert (alloc.node_id, alloc.application_id, alloc.partition_name) == ("node-1:1234", "app-1", "default")
    assert alloc.resource_per_alloc == ask
    # One more cycle has nothing left to do and adds no event.
    assert scheduler.schedule_once() == []
    step4 = STEPS["ask"]
    batch = oracle.batch()
    assert len(batch) == 13
    assert tuples(batch[7:]) == step4
    assert tuples(oracle.stream_lines(6)) == step4
    assert rm.app_state("app-1") == "Running"

    # 5. the RM releases the allocation: usage back, Completing, allocation and node released.
    proxy.update_allocation(si.AllocationRequest(releases=si.AllocationReleasesRequest(allocations_to_release=(
        si.AllocationRelease(partition_name="default", application_id="app-1", allocation_key="alloc-1",
                             termination_type=si.TerminationType.STOPPED_BY_RM),)), rm_id=RM_ID))
    rm.wait_for_app_state("app-1", "Completing")
    step5 = STEPS["release"]
    batch = oracle.batch()
    assert tuples(batch[13:17]) == step5
    assert tuples(oracle.stream_lines(4)) == step5
    assert rm.app_states("app-1") == ["Accepted", "Running", "Completing"]
    result = check_health(proxy.context, scheduler)
    assert result.healthy, result.explain()
