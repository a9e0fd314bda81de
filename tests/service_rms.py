"""Small RMs for the core entry point's tests (tests/test_service_entry_point.py), attached in
process or named on the command line (``pyscheduler serve --rm service_rms:attach_east
--rm service_rms:attach_west``; tests/ is on the served process's path).

Each is one cluster: it registers its own RM id with the service's configuration, creates
one node, submits one application with one ask through ``service.proxy``, and declares a
``GET /ws/v1/<cluster>/status`` route (route name ``status`` in both: the web layer keeps
their endpoint names apart) answering what it was allocated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyscheduler.common.resources import Resource
from pyscheduler.service import Route, SchedulerService
from pyscheduler.si import messages as si
from pyscheduler.testing import RecordingRM


class ClusterRM:
    """One cluster's RM: the recording callback, a route, and its stop (which it records)."""

    def __init__(self, name: str, stopped: list[str] | None = None) -> None:
        self.name = name
        self.rm_id = f"cluster-{name}"
        self.callback = RecordingRM(timeout=10.0)
        self.stopped = stopped if stopped is not None else []

    def register(self, service: SchedulerService) -> None:
        proxy = service.proxy
        proxy.register_resource_manager(si.RegisterResourceManagerRequest(
            rm_id=self.rm_id, policy_group="queues", config=service.config_text), self.callback)
        proxy.update_node(si.NodeRequest(rm_id=self.rm_id, nodes=(si.NodeInfo(
            node_id=f"{self.name}-node", action=si.NodeAction.CREATE,
            schedulable_resource=Resource({"memory": 1 << 30, "vcore": 4000})),)))
        proxy.update_application(si.ApplicationRequest(rm_id=self.rm_id, new=(si.AddApplicationRequest(
            application_id=f"{self.name}-app", queue_name="root.default", partition_name="default",
            ugi=si.UserGroupInformation(user="tester")),)))
        proxy.update_allocation(si.AllocationRequest(rm_id=self.rm_id, allocations=(si.Allocation(
            allocation_key=f"{self.name}-ask", application_id=f"{self.name}-app", partition_name="default",
            resource_per_alloc=Resource({"memory": 1 << 20, "vcore": 100})),)))

    def status(self) -> Mapping[str, object]:
        allocations = self.callback.allocations
        return {"rm_id": self.rm_id, "allocated": {key: a.node_id for key, a in sorted(allocations.items())}}

    def routes(self) -> Sequence[Route]:
        return (Route(f"/ws/v1/{self.name}/status", "status", self.status),)

    def stop(self) -> None:
        self.stopped.append(self.name)


def attach_east(service: SchedulerService) -> ClusterRM:
    rm = ClusterRM("east")
    rm.register(service)
    return rm


def attach_west(service: SchedulerService) -> ClusterRM:
    rm = ClusterRM("west")
    rm.register(service)
    return rm
