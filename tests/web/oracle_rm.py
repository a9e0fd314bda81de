"""The RM of the event-sequence oracle over HTTP (``pyscheduler serve --rm oracle_rm:attach``).

YuniKorn's TestApplicationHistoryTracking (events.md, "Authoritative event-sequence oracle")
drives a scheduler step by step and reads the batch endpoint and a stream after each step.
This module is that RM inside the served process: it registers RM ``rm:123`` with the served
configuration (partition default, root with submitacl "*" and leaf singleleaf), and adds
test-only routes that perform each step through the RM interface and return once its
outcome is in (the running scheduling loop makes the allocation):

- ``POST /test/oracle/node``: node ``node-1:1234`` (memory 100000000, vcore 20000)
- ``POST /test/oracle/app``: app ``app-1`` in ``root.singleleaf`` for user ``testuser``
- ``POST /test/oracle/ask``: ask ``alloc-1`` (memory 10000000, vcore 1000), waits for its allocation
- ``POST /test/oracle/release``: the RM releases it (STOPPED_BY_RM), waits for Completing

The configuration and the expected tuples of each step (``STEPS``) are shared with the other
oracle tests, in tests/event_oracle.py.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from flask import Blueprint, jsonify

from pyscheduler.common.resources import Resource
from pyscheduler.si.events import EventRecord
from pyscheduler.service import SchedulerService
from pyscheduler.si import messages as si

from event_oracle import CONFIG, RM_ID, STEPS  # noqa: F401 - re-exported for the test
from served_routes import WithTestRoutes


class OracleRM:
    """Records what the test waits for: allocations and application states."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.allocated: set[str] = set()
        self.states: dict[str, str] = {}

    def update_allocation(self, response: si.AllocationResponse) -> None:
        with self.changed:
            self.allocated.update(a.allocation_key for a in response.new)
            self.changed.notify_all()

    def update_application(self, response: si.ApplicationResponse) -> None:
        with self.changed:
            for update in response.updated:
                self.states[update.application_id] = update.state
            self.changed.notify_all()

    def update_node(self, response: si.NodeResponse) -> None:
        pass

    def send_event(self, events: Sequence[EventRecord]) -> None:
        pass

    def update_container_scheduling_state(self, request: si.UpdateContainerSchedulingStateRequest) -> None:
        pass

    def wait(self, predicate: Any, timeout: float = 10.0) -> bool:
        with self.changed:
            return self.changed.wait_for(predicate, timeout)


def attach(service: SchedulerService) -> WithTestRoutes:
    rm = OracleRM()
    proxy = service.proxy
    events = proxy.context.event_system
    proxy.register_resource_manager(
        si.RegisterResourceManagerRequest(rm_id=RM_ID, policy_group="queues", config=service.config_text), rm
    )
    bp = Blueprint("oracle_test_routes", __name__)

    def done(ok: bool = True) -> Any:
        events.flush(10.0)
        return jsonify(ok=ok, next_id=events.next_id())

    @bp.post("/test/oracle/node")
    def node() -> Any:
        capacity = Resource({"memory": 100_000_000, "vcore": 20_000})
        proxy.update_node(si.NodeRequest(rm_id=RM_ID, nodes=(si.NodeInfo(
            node_id="node-1:1234", action=si.NodeAction.CREATE, schedulable_resource=capacity),)))
        return done()

    @bp.post("/test/oracle/app")
    def app() -> Any:
        proxy.update_application(si.ApplicationRequest(rm_id=RM_ID, new=(si.AddApplicationRequest(
            application_id="app-1", queue_name="root.singleleaf", partition_name="default",
            ugi=si.UserGroupInformation(user="testuser", groups=("testgroup",))),)))
        return done()

    @bp.post("/test/oracle/ask")
    def ask() -> Any:
        resource = Resource({"memory": 10_000_000, "vcore": 1000})
        proxy.update_allocation(si.AllocationRequest(rm_id=RM_ID, allocations=(si.Allocation(
            allocation_key="alloc-1", application_id="app-1", partition_name="default",
            resource_per_alloc=resource),)))
        return done(rm.wait(lambda: "alloc-1" in rm.allocated))

    @bp.post("/test/oracle/release")
    def release() -> Any:
        proxy.update_allocation(si.AllocationRequest(rm_id=RM_ID, releases=si.AllocationReleasesRequest(
            allocations_to_release=(si.AllocationRelease(
                partition_name="default", application_id="app-1", allocation_key="alloc-1",
                termination_type=si.TerminationType.STOPPED_BY_RM),))))
        return done(rm.wait(lambda: rm.states.get("app-1") == "Completing"))

    return WithTestRoutes(rm, bp)
