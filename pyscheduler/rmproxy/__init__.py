"""The RM interface: how a resource manager (a shim, the simulator, a test) talks to the core.

- :mod:`~pyscheduler.rmproxy.messages`: the request and response messages, mirroring
  YuniKorn's scheduler interface (SI) in snake_case, immutable, with ``validate()``.
- :mod:`~pyscheduler.rmproxy.callback`: what an RM implements so the core can answer
  (:class:`ResourceManagerCallback`, plus the optional :class:`PredicatesPlugin` and
  :class:`PreemptionPredicatesPlugin`).
- :mod:`~pyscheduler.rmproxy.recording`: :class:`RecordingRM`, an in-process RM that records
  every callback and can wait for outcomes; the way tests drive the core.

The SI tag and attribute constants (``HOST_NAME``, ``TAG_REQUIRED_NODE``, ``FOREIGN``, ...)
live in :mod:`~pyscheduler.rmproxy.messages`; import them from there.
"""

from pyscheduler.rmproxy.callback import (
    PredicatesFunc,
    PredicatesPlugin,
    PreemptionPredicatesPlugin,
    ResourceManagerCallback,
    check_predicates,
    predicates_of,
)
from pyscheduler.rmproxy.messages import (
    AcceptedApplication,
    AcceptedNode,
    AddApplicationRequest,
    Allocation,
    AllocationRelease,
    AllocationReleasesRequest,
    AllocationRequest,
    AllocationResponse,
    ApplicationRequest,
    ApplicationResponse,
    ContainerSchedulingState,
    NodeAction,
    NodeInfo,
    NodeRequest,
    NodeResponse,
    PredicatesArgs,
    PreemptionPolicy,
    PreemptionPredicatesArgs,
    PreemptionPredicatesResponse,
    RegisterResourceManagerRequest,
    RegisterResourceManagerResponse,
    RejectedAllocation,
    RejectedApplication,
    RejectedNode,
    RemoveApplicationRequest,
    TerminationType,
    UpdateConfigurationRequest,
    UpdateContainerSchedulingStateRequest,
    UpdatedApplication,
    UserGroupInformation,
)
from pyscheduler.rmproxy.recording import RecordingRM, WaitTimeout

# One name per line, grouped by module, so adding the proxy (or anything else) is a one-line change.
__all__ = [
    # callback
    "PredicatesFunc",
    "PredicatesPlugin",
    "PreemptionPredicatesPlugin",
    "ResourceManagerCallback",
    "check_predicates",
    "predicates_of",
    # messages
    "AcceptedApplication",
    "AcceptedNode",
    "AddApplicationRequest",
    "Allocation",
    "AllocationRelease",
    "AllocationReleasesRequest",
    "AllocationRequest",
    "AllocationResponse",
    "ApplicationRequest",
    "ApplicationResponse",
    "ContainerSchedulingState",
    "NodeAction",
    "NodeInfo",
    "NodeRequest",
    "NodeResponse",
    "PredicatesArgs",
    "PreemptionPolicy",
    "PreemptionPredicatesArgs",
    "PreemptionPredicatesResponse",
    "RegisterResourceManagerRequest",
    "RegisterResourceManagerResponse",
    "RejectedAllocation",
    "RejectedApplication",
    "RejectedNode",
    "RemoveApplicationRequest",
    "TerminationType",
    "UpdateConfigurationRequest",
    "UpdateContainerSchedulingStateRequest",
    "UpdatedApplication",
    "UserGroupInformation",
    # recording
    "RecordingRM",
    "WaitTimeout",
]
