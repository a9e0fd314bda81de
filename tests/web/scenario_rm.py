"""The RM the web tests embed in the served process (``pyscheduler serve --rm scenario_rm:attach``).

The REST tests talk HTTP to a real gunicorn, and the scheduler lives in its worker, so the
test scenario has to be there too. This module is that scenario, attached the way any RM is
embedded (``--rm``); the conftest puts this folder on the server's ``PYTHONPATH``.

It registers RM ``test`` with the served configuration, creates two nodes and a fixed set of
applications (one running, one pending, one completed and removed), waits until the
scheduler has placed what fits, and adds a few test-only routes under ``/test/`` (never part
of the service), which the served app mounts (``served_routes.WithTestRoutes``):

- ``POST /test/events?n=N``: add N QUEUE events straight to the event system and wait until
  they are stored; answers ``{"next_id": ...}``.
- ``POST /test/settings``: a JSON object of extra config (``event.*`` keys) applied through
  the RM interface's configuration update, as a shim's ConfigMap change would be.
- ``GET /test/sized?n=N``: a JSON answer of exactly N bytes (the gzip threshold).
- ``GET /test/state``: counters the tests wait on (open streams, subscribers).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from flask import Blueprint, jsonify, request

from pyscheduler.common.resources import Resource
from pyscheduler.si.events import EventRecord
from pyscheduler.service import SchedulerService
from pyscheduler.si import messages as si

from served_routes import WithTestRoutes

RM_ID = "test"
GIB = 1 << 30


class ScenarioRM:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.allocated: list[str] = []
        self.released: list[str] = []

    def update_allocation(self, response: si.AllocationResponse) -> None:
        with self.lock:
            self.allocated += [a.allocation_key for a in response.new]
            self.released += [r.allocation_key for r in response.released]

    def update_application(self, response: si.ApplicationResponse) -> None:
        pass

    def update_node(self, response: si.NodeResponse) -> None:
        pass

    def send_event(self, events: Sequence[EventRecord]) -> None:
        pass

    def update_container_scheduling_state(self, request: si.UpdateContainerSchedulingStateRequest) -> None:
        pass

    def wait_allocated(self, count: int, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.allocated) >= count:
                    return
            time.sleep(0.01)
        raise RuntimeError(f"scenario: only {self.allocated} allocated")


def attach(service: SchedulerService) -> WithTestRoutes:
    rm = ScenarioRM()
    proxy = service.proxy
    proxy.register_resource_manager(
        si.RegisterResourceManagerRequest(
            rm_id=RM_ID,
            version="test",
            policy_group="queues",
            build_info={"buildDate": "2026-01-01", "buildVersion": "test", "isPluginVersion": "false"},
            config=service.config_text,
        ),
        rm,
    )
    node_capacity = Resource({"memory": 8 * GIB, "vcore": 4000})
    proxy.update_node(
        si.NodeRequest(
            rm_id=RM_ID,
            nodes=tuple(
                si.NodeInfo(
                    node_id=f"node-{i}",
                    action=si.NodeAction.CREATE,
                    attributes={si.HOST_NAME: f"host-{i}", si.RACK_NAME: "rack-1"},
                    schedulable_resource=node_capacity,
                )
                for i in (1, 2)
            ),
        )
    )

    def add_app(app_id: str, queue: str, user: str) -> None:
        proxy.update_application(
            si.ApplicationRequest(
                rm_id=RM_ID,
                new=(
                    si.AddApplicationRequest(
                        application_id=app_id,
                        queue_name=queue,
                        partition_name="default",
                        ugi=si.UserGroupInformation(user=user, groups=(user, "testers")),
                    ),
                ),
            )
        )

    def ask(app_id: str, key: str, memory: int, vcore: int) -> si.Allocation:
        return si.Allocation(
            allocation_key=key,
            application_id=app_id,
            partition_name="default",
            resource_per_alloc=Resource({"memory": memory, "vcore": vcore}),
            allocation_tags={"kubernetes.io/meta/namespace": "test", "kubernetes.io/meta/podName": key},
        )

    add_app("app-running", "root.a", "alice")
    add_app("app-pending", "root.b", "bob")
    add_app("app-done", "root.a", "alice")
    proxy.update_allocation(
        si.AllocationRequest(
            rm_id=RM_ID,
            allocations=(
                ask("app-running", "run-1", 2 * GIB, 1000),
                ask("app-running", "run-2", 1 * GIB, 500),
                ask("app-done", "done-1", 1 * GIB, 500),
                # Larger than any node: stays pending forever.
                ask("app-pending", "big-1", 64 * GIB, 1000),
            ),
        )
    )
    rm.wait_allocated(3)
    proxy.update_allocation(
        si.AllocationRequest(
            rm_id=RM_ID,
            releases=si.AllocationReleasesRequest(
                (
                    si.AllocationRelease(
                        partition_name="default",
                        application_id="app-done",
                        termination_type=si.TerminationType.STOPPED_BY_RM,
                        allocation_key="done-1",
                    ),
                )
            ),
        )
    )
    proxy.update_application(
        si.ApplicationRequest(
            rm_id=RM_ID, remove=(si.RemoveApplicationRequest(application_id="app-done", partition_name="default"),)
        )
    )
    service.event_system.flush(5.0)
    return WithTestRoutes(rm, _test_routes(service))


def _test_routes(service: SchedulerService) -> Blueprint:
    bp = Blueprint("scenario_test_routes", __name__)
    events = service.event_system

    @bp.post("/test/events")
    def add_events() -> Any:
        n = int(request.args.get("n", "1"))
        for i in range(n):
            # QUEUE / SET / QUEUE_MAX on root: a plain, valid tracking event.
            events.add(4, 1, 403, "root", "", f"test event {i}", {"memory": i})
        events.flush(10.0)
        return jsonify(next_id=events.next_id())

    @bp.post("/test/settings")
    def settings() -> Any:
        extra = request.get_json(force=True)
        service.proxy.update_configuration(
            si.UpdateConfigurationRequest(
                rm_id=RM_ID, policy_group="queues", config=service.config_text, extra_config=extra
            )
        )
        s = events.settings
        return jsonify(
            tracking=s.tracking_enabled,
            max_streams=s.max_streams,
            max_streams_per_host=s.max_streams_per_host,
            rest_response_size=s.rest_response_size,
            ring_buffer_capacity=s.ring_buffer_capacity,
        )

    @bp.get("/test/sized")
    def sized() -> Any:
        """A JSON answer of exactly ``n`` bytes, newline included (for the gzip threshold)."""
        from pyscheduler_web.http import json_response

        n = int(request.args["n"])
        return json_response({"pad": "x" * (n - len('{"pad":""}') - 1)})

    @bp.get("/test/state")
    def state() -> Any:
        from flask import current_app

        web = current_app.extensions["pyscheduler"]
        stats = events.stats()
        return jsonify(
            streams=len(web.streams),
            stream_budget=web.streams.thread_budget,
            subscribers=stats.subscribers,
            attached_streams=stats.attached_streams,
            slow_closed=stats.slow_closed,
            next_id=events.next_id(),
            id_range=list(events.id_range()),
        )

    return bp
