"""RM-interface messages: SI enum numbers, constants, immutability, coercion and validate()."""

from __future__ import annotations

import dataclasses

import pytest

from pyscheduler.common.resources import Resource, ResourceError
from pyscheduler.si import messages as m
from pyscheduler.si.messages import (
    AcceptedApplication,
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
    RegisterResourceManagerRequest,
    RegisterResourceManagerResponse,
    RejectedAllocation,
    RemoveApplicationRequest,
    TerminationType,
    UpdateConfigurationRequest,
    UpdateContainerSchedulingStateRequest,
    UserGroupInformation,
)

# -- enums: the SI wire numbers, written out literally so a renumbering cannot slip through --------


def test_termination_type_numbers() -> None:
    assert {t.name: t.value for t in TerminationType} == {
        "UNKNOWN_TERMINATION_TYPE": 0,
        "STOPPED_BY_RM": 1,
        "TIMEOUT": 2,
        "PREEMPTED_BY_SCHEDULER": 3,
        "PLACEHOLDER_REPLACED": 4,
    }


def test_node_action_numbers() -> None:
    assert {a.name: a.value for a in NodeAction} == {
        "UNKNOWN_ACTION_FROM_RM": 0,
        "CREATE": 1,
        "UPDATE": 2,
        "DRAIN_NODE": 3,
        "DECOMISSION": 4,
        "DRAIN_TO_SCHEDULABLE": 5,
        "CREATE_DRAIN": 6,
    }


def test_container_scheduling_state_numbers() -> None:
    assert {s.name: s.value for s in ContainerSchedulingState} == {
        "UNKNOWN_SCHEDULING_STATE": 0,
        "SKIPPED": 1,
        "SCHEDULED": 2,
        "RESERVED": 3,
        "FAILED": 4,
    }


def test_enum_fields_are_coerced_from_ints_and_reject_unknown_numbers() -> None:
    release = AllocationRelease(allocation_key="a", termination_type=3)  # type: ignore[arg-type]
    assert release.termination_type is TerminationType.PREEMPTED_BY_SCHEDULER
    assert NodeInfo(node_id="n", action=6).action is NodeAction.CREATE_DRAIN  # type: ignore[arg-type]
    state = UpdateContainerSchedulingStateRequest(state=4)  # type: ignore[arg-type]
    assert state.state is ContainerSchedulingState.FAILED
    with pytest.raises(ValueError):
        AllocationRelease(termination_type=5)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        NodeInfo(action=7)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        UpdateContainerSchedulingStateRequest(state=-1)  # type: ignore[arg-type]


# -- constants --------------------------------------------------------------------------------------


def test_si_constants() -> None:
    assert (m.HOST_NAME, m.RACK_NAME, m.NODE_PARTITION, m.INSTANCE_TYPE) == (
        "si/hostname",
        "si/rackname",
        "si/node-partition",
        "si/instance-type",
    )
    assert (m.ARCH, m.OS, m.FAILURE_DOMAIN_ZONE, m.FAILURE_DOMAIN_REGION, m.LOCAL_IMAGES) == (
        "si/arch",
        "si/os",
        "si/zone",
        "si/region",
        "si/local-images",
    )
    assert m.TAG_REQUIRED_NODE == "yunikorn.apache.org/requiredNode"
    assert m.CREATION_TIME == "creationTime"
    assert (m.FOREIGN, m.ALLOC_TYPE_DEFAULT, m.ALLOC_TYPE_STATIC) == ("foreign", "default", "static")
    assert m.APP_TAG_CREATE_FORCE == "application.create.force"
    assert m.APP_TAG_NAMESPACE_RESOURCE_QUOTA == "namespace.resourcequota"
    assert m.APP_TAG_NAMESPACE_RESOURCE_GUARANTEED == "namespace.resourceguaranteed"
    assert m.DOMAIN_K8S + m.GROUP_META + m.KEY_NAMESPACE == "kubernetes.io/meta/namespace"


def test_tag_helpers() -> None:
    assert m.required_node({m.TAG_REQUIRED_NODE: "node-1"}) == "node-1"
    assert m.required_node({m.KEY_REQUIRED_NODE: "node-1"}) == ""  # the bare key is not the tag
    assert m.foreign_type({m.FOREIGN: "static"}) == "static"
    assert m.foreign_type({}) == ""
    assert m.is_app_creation_forced({m.APP_TAG_CREATE_FORCE: "true"})
    for value in ("false", "True", "1", ""):
        assert not m.is_app_creation_forced({m.APP_TAG_CREATE_FORCE: value})
    assert not m.is_app_creation_forced({})


# -- immutability and coercion ----------------------------------------------------------------------


def test_messages_are_frozen_and_slotted() -> None:
    alloc = Allocation(allocation_key="k", application_id="app", resource_per_alloc={"memory": 1})
    with pytest.raises(dataclasses.FrozenInstanceError):
        alloc.allocation_key = "other"  # type: ignore[misc]
    assert not hasattr(alloc, "__dict__")
    for name in m.__all__:
        obj = getattr(m, name)
        if isinstance(obj, type) and dataclasses.is_dataclass(obj):
            params = obj.__dataclass_params__  # type: ignore[attr-defined]
            assert params.frozen, name
            assert "__slots__" in obj.__dict__, name


def test_every_field_has_a_proto3_zero_default() -> None:
    for name in m.__all__:
        obj = getattr(m, name)
        if isinstance(obj, type) and dataclasses.is_dataclass(obj):
            obj()  # constructs with no arguments


def test_repeated_fields_become_tuples() -> None:
    a = Allocation(allocation_key="a")
    req = AllocationRequest(allocations=[a], rm_id="rm")  # type: ignore[arg-type]
    assert req.allocations == (a,)
    assert isinstance(req.allocations, tuple)
    resp = AllocationResponse(
        new=[a], released=[AllocationRelease()], rejected_allocations=[RejectedAllocation()]  # type: ignore[arg-type]
    )
    assert all(isinstance(v, tuple) for v in (resp.new, resp.released, resp.rejected_allocations))
    ugi = UserGroupInformation("u", ["g1", "g2"])  # type: ignore[arg-type]
    assert ugi.groups == ("g1", "g2")
    args = PreemptionPredicatesArgs(preempt_allocation_keys=["x"])  # type: ignore[arg-type]
    assert args.preempt_allocation_keys == ("x",)
    assert AllocationRequest().allocations == ()
    assert ApplicationResponse().accepted == ()


def test_map_fields_are_read_only_copies() -> None:
    tags = {"k": "v"}
    alloc = Allocation(allocation_key="a", allocation_tags=tags)
    tags["k"] = "changed"
    tags["new"] = "x"
    assert dict(alloc.allocation_tags) == {"k": "v"}
    with pytest.raises(TypeError):
        alloc.allocation_tags["k"] = "w"  # type: ignore[index]
    node = NodeInfo(node_id="n", attributes={m.HOST_NAME: "h"})
    with pytest.raises(TypeError):
        node.attributes["x"] = "y"  # type: ignore[index]
    reg = RegisterResourceManagerRequest(rm_id="rm", build_info={"a": "b"}, extra_config={"c": "d"})
    assert dict(reg.build_info) == {"a": "b"} and dict(reg.extra_config) == {"c": "d"}
    with pytest.raises(TypeError):
        reg.extra_config["c"] = "e"  # type: ignore[index]


def test_the_cores_allocation_message_is_the_constructors() -> None:
    """Allocation.placed (the core's fast path, one message per allocation) sets every field as
    the keyword constructor does: tags a read-only copy, the other fields at their defaults."""
    tags = {"pyscheduler.io/role": "worker"}
    resource = Resource({"memory": 5, "vcore": 1})
    fast = Allocation.placed("key-1", tags, resource, -3, "node-1", "app-1", "default", "group-a", True)
    slow = Allocation(allocation_key="key-1", allocation_tags=tags, resource_per_alloc=resource, priority=-3,
                      node_id="node-1", application_id="app-1", partition_name="default",
                      task_group_name="group-a", placeholder=True)
    assert fast == slow and hash(fast) == hash(slow)
    assert all(getattr(fast, f.name) == getattr(slow, f.name) for f in dataclasses.fields(Allocation))
    tags["pyscheduler.io/role"] = "changed"
    assert dict(fast.allocation_tags) == {"pyscheduler.io/role": "worker"}
    with pytest.raises(TypeError):
        fast.allocation_tags["k"] = "w"  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.node_id = "other"  # type: ignore[misc]
    assert Allocation.placed("k", {}, resource, 0, "n", "a", "p", "", False).allocation_tags == {}
    response = AllocationResponse.of_new((fast,))
    assert response == AllocationResponse(new=[slow]) and response.released == () == response.rejected_allocations


def test_messages_compare_by_value_and_hash() -> None:
    a1 = Allocation(allocation_key="a", allocation_tags={"t": "1"}, resource_per_alloc={"memory": 5})
    a2 = Allocation(allocation_key="a", allocation_tags={"t": "1"}, resource_per_alloc=Resource({"memory": 5}))
    assert a1 == a2
    assert hash(a1) == hash(a2)
    assert a1 != Allocation(allocation_key="a", allocation_tags={"t": "2"}, resource_per_alloc={"memory": 5})
    assert len({AcceptedApplication("x"), AcceptedApplication("x")}) == 1


def test_resources_are_converted_and_checked() -> None:
    alloc = Allocation(allocation_key="a", resource_per_alloc={"memory": 10, "vcore": 500})
    assert isinstance(alloc.resource_per_alloc, Resource)
    assert alloc.resource_per_alloc == {"memory": 10, "vcore": 500}
    assert Allocation().resource_per_alloc == Resource()
    node = NodeInfo(node_id="n", schedulable_resource={"memory": 1})
    assert isinstance(node.schedulable_resource, Resource)
    assert NodeInfo(node_id="n").schedulable_resource is None
    app = AddApplicationRequest(application_id="x", placeholder_ask={"memory": 3})
    assert isinstance(app.placeholder_ask, Resource)
    assert AddApplicationRequest().placeholder_ask is None
    with pytest.raises(ResourceError):
        Allocation(resource_per_alloc={"memory": 1 << 63})
    with pytest.raises(ResourceError):
        NodeInfo(schedulable_resource={"memory": -(1 << 63) - 1})
    with pytest.raises(ResourceError):
        AddApplicationRequest(placeholder_ask={"memory": 1.5})  # type: ignore[dict-item]
    with pytest.raises(ResourceError):
        Allocation(resource_per_alloc={"": 1})
    # The int64 bounds themselves are fine.
    assert Allocation(resource_per_alloc={"a": (1 << 63) - 1, "b": -(1 << 63)}).resource_per_alloc["b"] == -(1 << 63)


# -- validate() -------------------------------------------------------------------------------------


def _ask(**overrides: object) -> Allocation:
    fields: dict[str, object] = {
        "allocation_key": "ask-1",
        "application_id": "app-1",
        "resource_per_alloc": {"memory": 100, "vcore": 100},
    }
    fields.update(overrides)
    return Allocation(**fields)  # type: ignore[arg-type]


def test_allocation_validate_accepts_well_formed_asks_and_allocations() -> None:
    assert _ask().validate() is None
    assert _ask(node_id="node-1").validate() is None  # recovered / bound allocation
    assert _ask(priority=-(1 << 31)).validate() is None  # negative priorities are valid (int32)
    assert _ask(priority=(1 << 31) - 1).validate() is None
    assert _ask(placeholder=True, task_group_name="tg").validate() is None
    assert _ask(task_group_name="tg").validate() is None  # a task group without placeholder is fine
    assert _ask(resource_per_alloc={"memory": 1, "gpu": 0}).validate() is None
    assert _ask(preemption_policy=PreemptionPolicy(allow_preempt_self=True)).validate() is None


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({"allocation_key": ""}, "allocation key is empty"),
        ({"priority": 1 << 31}, "priority 2147483648 is outside the int32 range"),
        ({"priority": -(1 << 31) - 1}, "priority -2147483649 is outside the int32 range"),
        ({"placeholder": True}, "placeholder allocation without a task group name"),
        ({"application_id": ""}, "allocation without an application ID"),
        ({"resource_per_alloc": {}}, "resource has no positive quantity"),
        ({"resource_per_alloc": {"memory": 0}}, "resource has no positive quantity"),
        ({"resource_per_alloc": {"memory": 5, "vcore": -1}}, "resource has negative quantities (vcore=-1)"),
    ],
)
def test_allocation_validate_reasons(overrides: dict[str, object], reason: str) -> None:
    assert _ask(**overrides).validate() == reason


def test_foreign_allocation_validate() -> None:
    foreign = Allocation(
        allocation_key="pod-1",
        node_id="node-1",
        allocation_tags={m.FOREIGN: m.ALLOC_TYPE_STATIC},
        resource_per_alloc={"memory": 10},
    )
    assert foreign.is_foreign
    assert not _ask().is_foreign
    assert foreign.validate() is None  # no application needed
    assert dataclasses.replace(foreign, resource_per_alloc={}).validate() is None  # may request nothing
    assert dataclasses.replace(foreign, node_id="").validate() == "foreign allocation without a node ID"
    assert (
        dataclasses.replace(foreign, allocation_tags={m.FOREIGN: "other"}).validate()
        == "unknown foreign allocation type 'other' (expected 'default' or 'static')"
    )
    assert (
        dataclasses.replace(foreign, resource_per_alloc={"memory": -1}).validate()
        == "resource has negative quantities (memory=-1)"
    )


def test_release_validate() -> None:
    assert AllocationRelease(application_id="app", allocation_key="k").validate() is None
    assert AllocationRelease(application_id="app").validate() is None  # all of the app's allocations
    assert AllocationRelease(allocation_key="k").validate() is None  # a foreign allocation
    assert AllocationRelease().validate() == "release names neither an application ID nor an allocation key"


def test_envelopes_validate_the_rm_id_only() -> None:
    bad_item = Allocation()
    assert AllocationRequest(allocations=(bad_item,), rm_id="rm").validate() is None
    assert AllocationRequest(releases=AllocationReleasesRequest((AllocationRelease(),))).validate() == "rm ID is empty"
    assert ApplicationRequest(rm_id="rm").validate() is None
    assert ApplicationRequest().validate() == "rm ID is empty"
    assert NodeRequest(nodes=(NodeInfo(),), rm_id="rm").validate() is None
    assert NodeRequest().validate() == "rm ID is empty"
    assert RegisterResourceManagerRequest(rm_id="rm", policy_group="queues").validate() is None
    assert RegisterResourceManagerRequest(policy_group="queues").validate() == "rm ID is empty"
    assert UpdateConfigurationRequest(rm_id="rm").validate() is None
    assert UpdateConfigurationRequest().validate() == "rm ID is empty"


def test_add_application_validate() -> None:
    ugi = UserGroupInformation("alice", ("dev",))
    assert AddApplicationRequest(application_id="app", ugi=ugi).validate() is None
    assert AddApplicationRequest(application_id="app", ugi=UserGroupInformation("bob")).validate() is None
    assert AddApplicationRequest(ugi=ugi).validate() == "application ID is empty"
    assert AddApplicationRequest(application_id="app").validate() == "application has no user (ugi.user is empty)"
    assert (
        AddApplicationRequest(application_id="app", ugi=UserGroupInformation("", ("g",))).validate()
        == "application has no user (ugi.user is empty)"
    )
    assert (
        AddApplicationRequest(application_id="app", ugi=ugi, placeholder_ask={"memory": -5}).validate()
        == "placeholder ask has negative quantities (memory=-5)"
    )
    assert RemoveApplicationRequest(application_id="app").validate() is None
    assert RemoveApplicationRequest().validate() == "application ID is empty"


def test_node_validate() -> None:
    assert NodeInfo(node_id="n", action=NodeAction.CREATE, schedulable_resource={"memory": 10}).validate() is None
    assert NodeInfo(node_id="n", action=NodeAction.UPDATE).validate() is None  # capacity unchanged
    assert NodeInfo(action=NodeAction.CREATE).validate() == "node ID is empty"
    assert NodeInfo(node_id="n").validate() == "node action is not set (UNKNOWN_ACTION_FROM_RM)"
    assert (
        NodeInfo(node_id="n", action=NodeAction.CREATE, schedulable_resource={"memory": -1, "cpu": -2}).validate()
        == "schedulable resource has negative quantities (cpu=-2, memory=-1)"
    )


def test_callback_messages_carry_their_fields() -> None:
    resp = NodeResponse(accepted=(m.AcceptedNode("n1"),), rejected=(m.RejectedNode("n2", "duplicate"),))
    assert resp.accepted[0].node_id == "n1" and resp.rejected[0].reason == "duplicate"
    args = PredicatesArgs("ask", "node", True)
    assert (args.allocation_key, args.node_id, args.allocate) == ("ask", "node", True)
    assert RegisterResourceManagerResponse() == RegisterResourceManagerResponse()
    upd = m.UpdatedApplication("app", "Running", 123, "msg")
    assert (upd.application_id, upd.state, upd.state_transition_timestamp, upd.message) == ("app", "Running", 123, "msg")
