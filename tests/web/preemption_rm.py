"""An RM embedded in a served scheduler (``--rm preemption_rm:attach``) for preemption over
HTTP: RM ``preempt`` with queues ``root.busy`` and ``root.starved`` (guaranteed 4 cores,
``preemption.delay`` 1ms) and one node of 8 cores. Test-only routes:

- ``POST /test/preempt/fill?count=N``: N allocations of 4 cores in ``root.busy`` (app ``busy``);
  answers once placed.
- ``POST /test/preempt/ask``: one ask of 4 cores in ``root.starved`` (app ``starved``) that may
  preempt; answers with the keys the scheduler released for it, once released.
- ``POST /test/preempt/confirm?key=K``: the RM confirms the release of K (PREEMPTED_BY_SCHEDULER);
  answers with the node the starved ask then got.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify, request

from pyscheduler.common.resources import Resource
from pyscheduler.service import SchedulerService
from pyscheduler.si import messages as si
from pyscheduler.testing import RecordingRM

from served_routes import WithTestRoutes

RM_ID = "preempt"
CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: busy
          - name: starved
            properties: {preemption.delay: 1ms}
            resources:
              guaranteed: {vcore: 4}
"""
FOUR_CORES = Resource({"vcore": 4000})


def attach(service: SchedulerService) -> WithTestRoutes:
    rm = RecordingRM(timeout=10.0)
    proxy = service.proxy
    proxy.register_resource_manager(si.RegisterResourceManagerRequest(rm_id=RM_ID, policy_group="queues", config=CONFIG), rm)
    proxy.update_node(si.NodeRequest(rm_id=RM_ID, nodes=(si.NodeInfo(
        node_id="node-1", action=si.NodeAction.CREATE, schedulable_resource=Resource({"vcore": 8000})),)))
    bp = Blueprint("preemption_rm_test_routes", __name__)

    def add_app(app_id: str, queue: str) -> None:
        proxy.update_application(si.ApplicationRequest(rm_id=RM_ID, new=(si.AddApplicationRequest(
            application_id=app_id, queue_name=queue, partition_name="default",
            ugi=si.UserGroupInformation(user="tester")),)))

    @bp.post("/test/preempt/fill")
    def fill() -> Any:
        add_app("busy", "root.busy")
        keys = [f"busy-{i}" for i in range(int(request.args["count"]))]
        proxy.update_allocation(si.AllocationRequest(rm_id=RM_ID, allocations=tuple(
            si.Allocation(allocation_key=k, application_id="busy", partition_name="default",
                          resource_per_alloc=FOUR_CORES) for k in keys)))
        return jsonify({k: rm.wait_for_allocation(k).node_id for k in keys})

    @bp.post("/test/preempt/ask")
    def ask() -> Any:
        add_app("starved", "root.starved")
        proxy.update_allocation(si.AllocationRequest(rm_id=RM_ID, allocations=(si.Allocation(
            allocation_key="starved-0", application_id="starved", partition_name="default",
            resource_per_alloc=FOUR_CORES,
            preemption_policy=si.PreemptionPolicy(allow_preempt_self=True, allow_preempt_other=True)),)))
        released = rm.wait_for(lambda r: [x.allocation_key for x in r.released] or None, "a preemption release")
        return jsonify(released)

    @bp.post("/test/preempt/confirm")
    def confirm() -> Any:
        proxy.update_allocation(si.AllocationRequest(rm_id=RM_ID, releases=si.AllocationReleasesRequest(
            allocations_to_release=(si.AllocationRelease(
                partition_name="default", application_id="busy", allocation_key=request.args["key"],
                termination_type=si.TerminationType.PREEMPTED_BY_SCHEDULER),))))
        return jsonify(rm.wait_for_allocation("starved-0").node_id)

    return WithTestRoutes(rm, bp)
