"""The RM proxy: the scheduler's API for resource managers (YuniKorn's ``SchedulerAPI``).

A resource manager (a Kubernetes or YARN shim, the simulator, a test) registers with a
callback and then sends updates. Every update is applied before the call returns, and its
outcome (accepted, rejected with a reason, state changes, allocations) arrives through the
callback. The only errors raised are the SI's: an unknown RM id, and on registration or
configuration update a configuration that does not parse or validate (nothing is changed).
"""

from __future__ import annotations

from pyscheduler.si import messages as si
from pyscheduler.si.callback import ResourceManagerCallback
from pyscheduler.scheduler.context import ClusterContext

__all__ = ["RMProxy"]


class RMProxy:
    def __init__(self, context: ClusterContext | None = None) -> None:
        self.context = context or ClusterContext()

    def register_resource_manager(
        self, request: si.RegisterResourceManagerRequest, callback: ResourceManagerCallback
    ) -> si.RegisterResourceManagerResponse:
        """Registers (or re-registers, dropping its old partitions) an RM. Raises ConfigError."""
        self.context.register_rm(request, callback)
        return si.RegisterResourceManagerResponse()

    def update_allocation(self, request: si.AllocationRequest) -> None:
        """New asks, recovered or bound allocations, and releases."""
        self.context.update_allocation(request)

    def update_application(self, request: si.ApplicationRequest) -> None:
        """Applications to add (placed, then accepted or rejected) and to remove."""
        self.context.update_application(request)

    def update_node(self, request: si.NodeRequest) -> None:
        """Node actions: CREATE, UPDATE, DRAIN_NODE, DRAIN_TO_SCHEDULABLE, DECOMISSION, CREATE_DRAIN."""
        self.context.update_node(request)

    def update_configuration(self, request: si.UpdateConfigurationRequest) -> None:
        """Reloads queues.yaml and the extra settings. Raises ConfigError; the old config stays."""
        self.context.update_configuration(request)

    def stop(self) -> None:
        self.context.stop()
