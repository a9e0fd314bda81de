"""An RM with role services, embedded in a served scheduler (``--rm role_rm:attach``) for the
role history tests over HTTP.

It registers RM ``roles`` with the served configuration and 6 nodes (``node-0`` .. ``node-5``),
then adds test-only routes (``served_routes.WithTestRoutes``):

- ``POST /test/roles/start?app=A&key=K&role=R&count=N``: application A (history key K) with N
  asks of role R; answers once the RM has heard of all N allocations, with their nodes.
- ``POST /test/roles/stop?app=A``: removes application A (its instances stop).
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify, request

from pyscheduler.common.resources import Resource
from pyscheduler.service import SchedulerService
from pyscheduler.si import messages as si
from pyscheduler.testing import RecordingRM

from served_routes import WithTestRoutes

RM_ID = "roles"
NODES = [f"node-{i}" for i in range(6)]


def attach(service: SchedulerService) -> WithTestRoutes:
    rm = RecordingRM(timeout=10.0)
    proxy = service.proxy
    proxy.register_resource_manager(
        si.RegisterResourceManagerRequest(rm_id=RM_ID, policy_group="queues", config=service.config_text), rm
    )
    proxy.update_node(si.NodeRequest(rm_id=RM_ID, nodes=tuple(
        si.NodeInfo(node_id=n, action=si.NodeAction.CREATE,
                    schedulable_resource=Resource({"memory": 1 << 34, "vcore": 16_000}))
        for n in NODES
    )))
    bp = Blueprint("role_rm_test_routes", __name__)

    @bp.post("/test/roles/start")
    def start() -> Any:
        app_id, key = request.args["app"], request.args["key"]
        role, count = request.args["role"], int(request.args["count"])
        proxy.update_application(si.ApplicationRequest(rm_id=RM_ID, new=(si.AddApplicationRequest(
            application_id=app_id, queue_name="root.default", partition_name="default",
            ugi=si.UserGroupInformation(user="tester"),
            tags={"pyscheduler.io/role-history-key": key},
        ),)))
        keys = [f"{app_id}-{role}-{i}" for i in range(count)]
        proxy.update_allocation(si.AllocationRequest(rm_id=RM_ID, allocations=tuple(
            si.Allocation(allocation_key=k, application_id=app_id, partition_name="default",
                          resource_per_alloc=Resource({"memory": 1 << 30, "vcore": 1000}),
                          allocation_tags={"pyscheduler.io/role": role})
            for k in keys
        )))
        return jsonify({k: rm.wait_for_allocation(k).node_id for k in keys})

    @bp.post("/test/roles/stop")
    def stop() -> Any:
        proxy.update_application(si.ApplicationRequest(rm_id=RM_ID, remove=(
            si.RemoveApplicationRequest(application_id=request.args["app"], partition_name="default"),)))
        return jsonify({})

    return WithTestRoutes(rm, bp)
