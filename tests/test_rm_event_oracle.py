"""YuniKorn's authoritative event sequence (events.md, "Authoritative event-sequence oracle",
from yunikorn-core's TestApplicationHistoryTracking), driven through the RM interface.

After each step the batch body and a stream opened with count=1000 are read, and both must
hold exactly the expected (type, change type, detail, objectID, referenceID, message) tuples.
The allocation step commits the allocation directly until the scheduling cycle exists.
"""

from __future__ import annotations

import pytest

from pyscheduler.si import messages as si
from pyscheduler.rmproxy.proxy import RMProxy
from pyscheduler.testing.recording import RecordingRM

from event_oracle import CONFIG, RM_ID, STEPS, Oracle, drive_first_steps, submit_ask, tuples

@pytest.fixture
def world():
    proxy = RMProxy()
    rm = RecordingRM()
    proxy.register_resource_manager(
        si.RegisterResourceManagerRequest(rm_id=RM_ID, policy_group="default", config=CONFIG), rm
    )
    yield proxy, rm
    proxy.stop()


def test_application_history_tracking(world) -> None:
    proxy, rm = world
    oracle = Oracle(proxy)

    drive_first_steps(proxy, rm, oracle)

    # 4. an ask, then its allocation on the node.
    submit_ask(proxy)
    partition = proxy.context.partition(RM_ID, "default")
    app = partition.applications["app-1"]
    proxy.context.commit_allocation(partition, app, app.asks["alloc-1"], partition.nodes["node-1:1234"])
    rm.wait_for_allocation("alloc-1")
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
