"""The scheduler interface (SI): the messages between a resource manager and the core.

A leaf layer: it imports only :mod:`pyscheduler.common`, so the core, the RM proxy, an RM and
the test kit can all depend on it without depending on each other (YuniKorn's
``scheduler-interface`` module).

- :mod:`~pyscheduler.si.messages`: the request and response messages, mirroring YuniKorn's SI
  in snake_case, immutable, with ``validate()``; the enums (``TerminationType``,
  ``ApplicationState``, ``SchedulingReason``, ...). Built with :mod:`~pyscheduler.si.construction`.
- :mod:`~pyscheduler.si.vocabulary`: the tag and attribute names (``HOST_NAME``,
  ``TAG_REQUIRED_NODE``, ``FOREIGN``, ``ROLE_TAG``, ...), re-exported by ``messages``.
- :mod:`~pyscheduler.si.api`: what the core offers an RM (:class:`SchedulerAPI`, YuniKorn's
  ``api.SchedulerAPI``); an RM holds the core as this type.
- :mod:`~pyscheduler.si.callback`: what an RM implements so the core can answer
  (:class:`ResourceManagerCallback`, plus the optional :class:`PredicatesPlugin` and
  :class:`PreemptionPredicatesPlugin`).
- :mod:`~pyscheduler.si.events`: ``si.EventRecord`` and its enums, with YuniKorn's wire values.
"""

from pyscheduler.si.callback import (
    PredicatesFunc,
    PredicatesPlugin,
    PreemptionPredicatesPlugin,
    ResourceManagerCallback,
    check_predicates,
    predicates_of,
)
from pyscheduler.si.messages import (
    AcceptedApplication,
    AcceptedNode,
    AddApplicationRequest,
    Allocation,
    AllocationRelease,
    AllocationReleasesRequest,
    AllocationRequest,
    AllocationResponse,
    ApplicationRequest,
    ApplicationState,
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
    ScoreNodesArgs,
    RegisterResourceManagerResponse,
    RejectedAllocation,
    RejectedApplication,
    RejectedNode,
    RemoveApplicationRequest,
    SchedulingReason,
    TerminationType,
    UpdateConfigurationRequest,
    UpdateContainerSchedulingStateRequest,
    UpdatedApplication,
    UserGroupInformation,
)

# One name per line, grouped by module.
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
    "ScoreNodesArgs",
    "RegisterResourceManagerRequest",
    "RegisterResourceManagerResponse",
    "RejectedAllocation",
    "RejectedApplication",
    "RejectedNode",
    "RemoveApplicationRequest",
    "SchedulingReason",
    "TerminationType",
    "ApplicationState",
    "UpdateConfigurationRequest",
    "UpdateContainerSchedulingStateRequest",
    "UpdatedApplication",
    "UserGroupInformation",
]
