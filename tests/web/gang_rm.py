"""An RM embedded in a served scheduler (``--rm gang_rm:attach``) for gang scheduling over
HTTP: RM ``gang`` with a FIFO queue ``root.gang`` and two nodes of 4 cores. Test-only routes:

- ``POST /test/gang/submit?size=N&members=M``: the gang application ``job`` (N members of 1 core,
  task group ``workers``, Hard) with its N placeholder asks and M real members; answers once
  the application runs (every placeholder placed), with its state as the RM heard it.
- ``POST /test/gang/confirm``: the RM confirms every PLACEHOLDER_REPLACED release it got (its
  placeholder pods are gone), as a shim does, and answers with the members it then got, by node.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify, request

from pyscheduler.common.resources import Resource
from pyscheduler.service import SchedulerService
from pyscheduler.si import messages as si
from pyscheduler.testing import RecordingRM

from served_routes import WithTestRoutes

RM_ID = "gang"
CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: gang
            properties: {application.sort.policy: fifo}
"""
ONE_CORE = Resource({"vcore": 1000})


def attach(service: SchedulerService) -> WithTestRoutes:
    rm = RecordingRM(timeout=10.0)
    proxy = service.proxy
    proxy.register_resource_manager(si.RegisterResourceManagerRequest(rm_id=RM_ID, policy_group="queues", config=CONFIG), rm)
    proxy.update_node(si.NodeRequest(rm_id=RM_ID, nodes=tuple(si.NodeInfo(
        node_id=f"node-{i}", action=si.NodeAction.CREATE, schedulable_resource=Resource({"vcore": 4000}))
        for i in (1, 2))))
    bp = Blueprint("gang_rm_test_routes", __name__)

    def ask(key: str, placeholder: bool) -> si.Allocation:
        return si.Allocation(allocation_key=key, application_id="job", partition_name="default",
                             resource_per_alloc=ONE_CORE, placeholder=placeholder, task_group_name="workers")

    @bp.post("/test/gang/submit")
    def submit() -> Any:
        size, members = int(request.args["size"]), int(request.args["members"])
        proxy.update_application(si.ApplicationRequest(rm_id=RM_ID, new=(si.AddApplicationRequest(
            application_id="job", queue_name="root.gang", partition_name="default",
            ugi=si.UserGroupInformation(user="tester"), placeholder_ask=Resource({"vcore": 1000 * size}),
            gang_scheduling_style="Hard"),)))
        placeholders = [f"ph-{i}" for i in range(size)]
        proxy.update_allocation(si.AllocationRequest(rm_id=RM_ID, allocations=tuple(
            [ask(k, True) for k in placeholders] + [ask(f"member-{i}", False) for i in range(members)])))
        rm.wait_for_app_state("job", "Running")  # every placeholder placed (members may follow at once)
        return jsonify(rm.app_state("job"))

    @bp.post("/test/gang/confirm")
    def confirm() -> Any:
        replaced = rm.wait_for(lambda r: [x for x in r.released
                                          if x.termination_type == si.TerminationType.PLACEHOLDER_REPLACED] or None,
                               "placeholder releases")
        proxy.update_allocation(si.AllocationRequest(rm_id=RM_ID, releases=si.AllocationReleasesRequest(
            allocations_to_release=tuple(si.AllocationRelease(
                partition_name="default", application_id="job", allocation_key=r.allocation_key,
                termination_type=si.TerminationType.PLACEHOLDER_REPLACED) for r in replaced))))
        members = [r.message.rsplit(": ", 1)[1] for r in replaced]
        return jsonify({key: rm.wait_for_allocation(key).node_id for key in members})

    return WithTestRoutes(rm, bp)
