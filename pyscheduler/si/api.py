"""What the core offers a resource manager: YuniKorn's ``api.SchedulerAPI``, as a Protocol.

An RM holds the core as this type (the Kubernetes shim, a YARN shim, a test), never as the
class that implements it (:class:`pyscheduler.rmproxy.proxy.RMProxy`), so an RM depends on the
SI alone. The contract of each call is the proxy's (docs/scheduler.md): updates are applied
before the call returns and outcomes arrive through the RM's callback; registration and
configuration raise ``ConfigError`` for a configuration that does not parse or validate, and
every call raises ``UnknownRMError`` for an ``rm_id`` that never registered.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pyscheduler.si.callback import ResourceManagerCallback
from pyscheduler.si.messages import (
    AllocationRequest,
    ApplicationRequest,
    NodeRequest,
    RegisterResourceManagerRequest,
    RegisterResourceManagerResponse,
    UpdateConfigurationRequest,
)

__all__ = ["SchedulerAPI"]


@runtime_checkable
class SchedulerAPI(Protocol):
    """The core's side of the RM interface."""

    def register_resource_manager(self, request: RegisterResourceManagerRequest,
                                  callback: ResourceManagerCallback) -> RegisterResourceManagerResponse: ...

    def update_allocation(self, request: AllocationRequest) -> None: ...

    def update_application(self, request: ApplicationRequest) -> None: ...

    def update_node(self, request: NodeRequest) -> None: ...

    def update_configuration(self, request: UpdateConfigurationRequest) -> None: ...
