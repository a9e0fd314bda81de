"""The strict decoder the DAO tests check every REST query result with, the DAO schemas, and the
populated scheduler they query (imported by the other test_dao_*.py modules).

A schema lists, per DAO type, every key YuniKorn's Go struct may emit and whether it is always
emitted ("ne": no omitempty). The decoder rejects:

- a key the struct does not have, or a missing always-emitted key;
- an omitempty key holding its zero value (0, "", false, {}, []), and any null;
- a wrong JSON type: an int where Go has int64 must be an int (never a float or a bool), a
  float map must hold floats, strings must be strings;
- a map whose keys are not sorted (Go's encoder sorts them);
- anything that does not survive the web layer's serialisation (orjson, or the standard
  library's encoder without NaN where orjson is not installed) and a plain JSON decode unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from pyscheduler.si import messages as si
from pyscheduler.scheduler.loop import Scheduler
from rm_helpers import World, res

try:  # the web layer's serialiser, when installed (it comes with the web distribution)
    import orjson

    _dumps = orjson.dumps
except ImportError:  # pragma: no cover - a core-only environment
    def _dumps(value: Any) -> bytes:
        return json.dumps(value, allow_nan=False).encode()

# -- types --------------------------------------------------------------------------------------

INT = "int"
STR = "str"
BOOL = "bool"
FLOAT = "float"
RES = "res"  # {resource: int64}
STRMAP = "strmap"  # {str: str}
INTMAP = "intmap"  # {str: int}
FLOATMAP = "floatmap"  # {str: float}
STRLIST = "strlist"


@dataclass
class Obj:
    """One DAO type: key -> (type, always emitted)."""

    name: str
    fields: dict[str, tuple[Any, bool]] = field(default_factory=dict)

    def add(self, key: str, kind: Any, ne: bool = False) -> Obj:
        self.fields[key] = (kind, ne)
        return self


@dataclass(frozen=True)
class ListOf:
    item: Any


@dataclass(frozen=True)
class MapOf:
    item: Any


NE = True


def obj(name: str, *specs: tuple[Any, ...]) -> Obj:
    schema = Obj(name)
    for spec in specs:
        schema.add(*spec)
    return schema


class DecodeError(AssertionError):
    pass


def _zero(value: Any) -> bool:
    if value is None or value is False:
        return True
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value == 0
    return isinstance(value, str | dict | list) and not value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63


def _check_map(value: Any, path: str, item_ok: Any, what: str) -> None:
    if not isinstance(value, dict):
        raise DecodeError(f"{path}: expected a map, got {type(value).__name__}")
    keys = list(value)
    if keys != sorted(keys):
        raise DecodeError(f"{path}: map keys not sorted: {keys}")
    for key, item in value.items():
        if not isinstance(key, str):
            raise DecodeError(f"{path}: map key {key!r} is not a string")
        if not item_ok(item):
            raise DecodeError(f"{path}.{key}: expected {what}, got {item!r}")


def check(value: Any, kind: Any, path: str = "$") -> None:
    """Raises DecodeError when ``value`` is not exactly of ``kind``."""
    if value is None:
        raise DecodeError(f"{path}: null")
    if kind == INT:
        if not _is_int(value):
            raise DecodeError(f"{path}: expected an int64, got {value!r}")
    elif kind == STR:
        if not isinstance(value, str):
            raise DecodeError(f"{path}: expected a string, got {value!r}")
    elif kind == BOOL:
        if not isinstance(value, bool):
            raise DecodeError(f"{path}: expected a bool, got {value!r}")
    elif kind == FLOAT:
        if not isinstance(value, float):
            raise DecodeError(f"{path}: expected a float, got {value!r}")
    elif kind in (RES, INTMAP):
        _check_map(value, path, _is_int, "an int64")
    elif kind == STRMAP:
        _check_map(value, path, lambda v: isinstance(v, str), "a string")
    elif kind == FLOATMAP:
        _check_map(value, path, lambda v: isinstance(v, float), "a float")
    elif kind == STRLIST:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise DecodeError(f"{path}: expected a list of strings, got {value!r}")
    elif isinstance(kind, ListOf):
        if not isinstance(value, list):
            raise DecodeError(f"{path}: expected a list, got {type(value).__name__}")
        for i, item in enumerate(value):
            check(item, kind.item, f"{path}[{i}]")
    elif isinstance(kind, MapOf):
        _check_map(value, path, lambda v: True, "anything")
        for key, item in value.items():
            check(item, kind.item, f"{path}.{key}")
    elif isinstance(kind, Obj):
        _check_obj(value, kind, path)
    else:  # pragma: no cover - a schema bug
        raise AssertionError(f"unknown kind {kind!r}")


def _check_obj(value: Any, schema: Obj, path: str) -> None:
    if not isinstance(value, dict):
        raise DecodeError(f"{path}: expected a {schema.name} object, got {type(value).__name__}")
    unknown = set(value) - set(schema.fields)
    if unknown:
        raise DecodeError(f"{path}: {schema.name} has no keys {sorted(unknown)}")
    for key, (kind, ne) in schema.fields.items():
        where = f"{path}.{key}"
        if key not in value:
            if ne:
                raise DecodeError(f"{where}: {schema.name} always has this key")
            continue
        item = value[key]
        if item is None:
            raise DecodeError(f"{where}: null")
        if not ne and _zero(item):
            raise DecodeError(f"{where}: omitempty key holds its zero value {item!r}")
        check(item, kind, where)


def decode(value: Any, kind: Any) -> Any:
    """``value`` serialised as the web layer does (orjson), decoded by a plain JSON decoder,
    unchanged, and of ``kind``; returns the decoded value."""
    wire = _dumps(value)
    decoded = json.loads(wire)
    if decoded != value:
        raise DecodeError("the value changes through JSON")
    check(decoded, kind)
    return decoded


# -- the DAO schemas ------------------------------------------------------------------------------

ALLOCATION_LOG = obj("AllocationAskLogDAOInfo", ("message", STR), ("lastOccurrence", INT), ("count", INT))
ALLOCATION = obj(
    "AllocationDAOInfo",
    ("allocationKey", STR, NE), ("allocationTags", STRMAP), ("requestTime", INT), ("allocationTime", INT),
    ("allocationDelay", INT), ("resource", RES), ("priority", STR), ("nodeId", STR), ("applicationId", STR),
    ("placeholder", BOOL), ("placeholderUsed", BOOL), ("taskGroupName", STR), ("preempted", BOOL),
    ("originator", BOOL),
)
ASK = obj(
    "AllocationAskDAOInfo",
    ("allocationKey", STR, NE), ("allocationTags", STRMAP), ("requestTime", INT), ("resource", RES),
    ("priority", STR), ("requiredNodeId", STR), ("applicationId", STR), ("placeholder", BOOL),
    ("taskGroupName", STR), ("allocationLog", ListOf(ALLOCATION_LOG)), ("triggeredPreemption", BOOL),
    ("originator", BOOL), ("schedulingAttempted", BOOL), ("triggeredScaleUp", BOOL),
)
STATE_LOG = obj("StateDAOInfo", ("time", INT), ("applicationState", STR))
PLACEHOLDER = obj(
    "PlaceholderDAOInfo", ("taskGroupName", STR), ("count", INT), ("minResource", RES), ("replaced", INT),
    ("timedout", INT),
)
RESOURCE_HISTORY = obj(
    "ResourceHistory", ("resourceUsage", MapOf(RES)), ("preemptedResource", MapOf(RES)),
    ("placeholderResource", MapOf(RES)),
)
APPLICATION = obj(
    "ApplicationDAOInfo",
    ("applicationID", STR, NE), ("usedResource", RES), ("maxUsedResource", RES), ("pendingResource", RES),
    # clusterId: pyscheduler's addition (the partition's RM), always sent.
    ("partition", STR, NE), ("clusterId", STR, NE), ("queueName", STR, NE), ("submissionTime", INT),
    ("finishedTime", INT),
    # memberCluster: pyscheduler's addition (issue 33 level 2), only once a hub placed the app.
    ("memberCluster", STR),
    ("requests", ListOf(ASK)), ("allocations", ListOf(ALLOCATION)), ("applicationState", STR), ("user", STR),
    ("groups", STRLIST), ("rejectedMessage", STR), ("stateLog", ListOf(STATE_LOG)),
    ("placeholderData", ListOf(PLACEHOLDER)), ("hasReserved", BOOL), ("reservations", STRLIST),
    ("maxRequestPriority", INT), ("startTime", INT),
    # A Go struct value: encoded even though its tag says omitempty.
    ("resourceHistory", RESOURCE_HISTORY, NE),
    ("backoffDeadline", STR),
    # queuePosition: pyscheduler's addition (issue 35), only with pending asks.
    ("queuePosition", obj("QueuePosition", ("inQueue", INT, NE), ("inPartition", INT, NE))),
)
FOREIGN = obj(
    "ForeignAllocationDAOInfo", ("allocationKey", STR, NE), ("allocationTags", STRMAP), ("allocationTime", INT),
    ("resource", RES), ("priority", STR), ("nodeId", STR), ("preemptable", BOOL),
)
NODE = obj(
    "NodeDAOInfo",
    ("nodeID", STR, NE), ("hostName", STR), ("rackName", STR), ("attributes", STRMAP), ("capacity", RES),
    ("allocated", RES), ("occupied", RES), ("available", RES), ("utilized", RES),
    ("allocations", ListOf(ALLOCATION)), ("foreignAllocations", ListOf(FOREIGN)), ("schedulable", BOOL, NE),
    ("isReserved", BOOL, NE), ("reservations", STRLIST),
)
TEMPLATE = obj(
    "TemplateInfo", ("maxApplications", INT), ("maxResource", RES), ("guaranteedResource", RES), ("properties", STRMAP)
)
QUEUE = obj(
    "PartitionQueueDAOInfo",
    # clusterId: pyscheduler's addition (the partition's RM), always sent.
    ("queuename", STR, NE), ("status", STR), ("partition", STR, NE), ("clusterId", STR, NE), ("pendingResource", RES),
    ("maxResource", RES), ("guaranteedResource", RES), ("allocatedResource", RES), ("preemptingResource", RES),
    ("headroom", RES), ("isLeaf", BOOL, NE), ("isManaged", BOOL, NE), ("properties", STRMAP), ("parent", STR),
    ("template", TEMPLATE),
)
QUEUE.add("children", ListOf(QUEUE))
for _spec in (
    ("childNames", STRLIST), ("absUsedCapacity", RES), ("maxRunningApps", INT), ("runningApps", INT),
    ("currentPriority", INT, NE), ("allocatingAcceptedApps", STRLIST), ("sortingPolicy", STR),
    ("prioritySorting", BOOL, NE), ("preemptionEnabled", BOOL, NE), ("isPreemptionFence", BOOL, NE),
    ("preemptionDelay", STR), ("quotaPreemptionDelay", STR), ("isPriorityFence", BOOL, NE), ("priorityOffset", INT),
):
    QUEUE.add(*_spec)
CAPACITY = obj("PartitionCapacity", ("capacity", RES), ("usedCapacity", RES), ("utilization", RES))
SORTING = obj("NodeSortingPolicy", ("type", STR), ("resourceWeights", FLOATMAP))
PARTITION = obj(
    "PartitionInfo",
    ("clusterId", STR, NE), ("name", STR, NE), ("capacity", CAPACITY, NE), ("nodeSortingPolicy", SORTING, NE),
    ("preemptionEnabled", BOOL, NE), ("quotaPreemptionEnabled", BOOL, NE), ("totalNodes", INT),
    ("applications", INTMAP), ("totalContainers", INT), ("state", STR), ("lastStateTransitionTime", INT),
)
FILTER = obj(
    "FilterDAO", ("type", STR, NE), ("userList", STRLIST), ("groupList", STRLIST), ("userExp", STR), ("groupExp", STR)
)
RULE = obj("RuleDAO", ("name", STR, NE), ("parameters", STRMAP), ("filter", FILTER))
RULE.add("parentRule", RULE)
CLUSTER = obj(
    "ClusterDAOInfo", ("startTime", INT), ("rmBuildInformation", ListOf(STRMAP)), ("partition", STR, NE),
    # clusterId: pyscheduler's addition (the partition's RM), always sent.
    ("clusterName", STR, NE), ("clusterId", STR, NE),
)
HEALTH_CHECK = obj(
    "HealthCheckInfo", ("Name", STR, NE), ("Succeeded", BOOL, NE), ("Description", STR, NE),
    ("DiagnosisMessage", STR, NE),
)
HEALTH = obj("SchedulerHealthDAOInfo", ("Healthy", BOOL, NE), ("HealthChecks", ListOf(HEALTH_CHECK), NE))
BUCKET = obj("NodeUtilDAOInfo", ("bucketName", STR), ("numOfNodes", INT), ("nodeNames", STRLIST))
NODES_UTIL = obj("NodesUtilDAOInfo", ("type", STR), ("utilization", ListOf(BUCKET)))
PARTITION_UTIL = obj(
    "PartitionNodesUtilDAOInfo", ("clusterId", STR, NE), ("partition", STR, NE), ("utilizations", ListOf(NODES_UTIL))
)
APP_HISTORY = obj("ApplicationHistoryDAOInfo", ("timestamp", INT, NE), ("totalApplications", STR, NE))
CONTAINER_HISTORY = obj("ContainerHistoryDAOInfo", ("timestamp", INT, NE), ("totalContainers", STR, NE))
USAGE = obj("ResourceUsageDAOInfo", ("queuePath", STR, NE), ("resourceUsage", RES, NE))
for _spec in (("runningApplications", STRLIST), ("maxResources", RES), ("maxApplications", INT)):
    USAGE.add(*_spec)
USAGE.add("children", ListOf(USAGE))
USER = obj("UserResourceUsageDAOInfo", ("userName", STR, NE), ("groups", STRMAP), ("queues", USAGE, NE))
GROUP = obj("GroupResourceUsageDAOInfo", ("groupName", STR, NE), ("applications", STRLIST), ("queues", USAGE, NE))
VALIDATE = obj("ValidateConfResponse", ("allowed", BOOL, NE), ("reason", STR))

# The configuration (Go's configs structs, PascalCase, no json names).
CONF_RESOURCES = obj("Resources", ("Guaranteed", STRMAP), ("Max", STRMAP))
CONF_LIMIT = obj(
    "Limit", ("Limit", STR, NE), ("Users", STRLIST), ("Groups", STRLIST), ("MaxResources", STRMAP),
    ("MaxApplications", INT),
)
CONF_TEMPLATE = obj("ChildTemplate", ("MaxApplications", INT), ("Properties", STRMAP), ("Resources", CONF_RESOURCES))
CONF_QUEUE = obj(
    "QueueConfig", ("Name", STR, NE), ("Parent", BOOL), ("Resources", CONF_RESOURCES, NE), ("MaxApplications", INT),
    ("Properties", STRMAP), ("AdminACL", STR), ("SubmitACL", STR), ("ChildTemplate", CONF_TEMPLATE, NE),
)
CONF_QUEUE.add("Queues", ListOf(CONF_QUEUE)).add("Limits", ListOf(CONF_LIMIT))
CONF_FILTER = obj("Filter", ("Type", STR, NE), ("Users", STRLIST), ("Groups", STRLIST))
CONF_RULE = obj("PlacementRule", ("Name", STR, NE), ("Create", BOOL), ("Filter", CONF_FILTER, NE))
CONF_RULE.add("Parent", CONF_RULE).add("Value", STR)
CONF_PARTITION = obj(
    "PartitionConfig", ("Name", STR, NE), ("Queues", ListOf(CONF_QUEUE), NE), ("PlacementRules", ListOf(CONF_RULE)),
    ("Limits", ListOf(CONF_LIMIT)),
    ("Preemption", obj("PartitionPreemptionConfig", ("Enabled", BOOL, NE), ("QuotaPreemptionEnabled", BOOL, NE)), NE),
    ("NodeSortPolicy", obj("NodeSortingPolicy", ("Type", STR, NE), ("ResourceWeights", FLOATMAP)), NE),
    ("UserGroupResolver", obj("UserGroupResolver", ("Type", STR, NE)), NE),
)
CONFIG = obj(
    "ConfigDAOInfo", ("Partitions", ListOf(CONF_PARTITION)), ("Checksum", STR), ("Extra", STRMAP),
    ("DeadlockDetectionEnabled", BOOL, NE), ("DeadlockTimeoutSeconds", INT, NE),
)
STATE_DUMP = obj(
    "AggregatedStateInfo",
    ("timestamp", INT, NE), ("partitions", ListOf(PARTITION), NE), ("applications", ListOf(APPLICATION), NE),
    ("appHistory", ListOf(APP_HISTORY), NE),
    ("nodes", ListOf(obj("NodesDAOInfo", ("partitionName", STR, NE), ("clusterId", STR, NE),
                                  ("nodesInfo", ListOf(NODE)))), NE),
    ("clusterInfo", ListOf(CLUSTER), NE), ("containerHistory", ListOf(CONTAINER_HISTORY), NE),
    ("queues", ListOf(QUEUE), NE), ("rmDiagnostics", STRMAP, NE), ("logLevel", STR, NE), ("config", CONFIG, NE),
    ("placementRules", ListOf(obj("RuleDAOInfo", ("partition", STR, NE), ("clusterId", STR, NE),
                                           ("rules", ListOf(RULE)))), NE),
    ("eventStreams", ListOf(STRMAP), NE),
)


# -- the populated scheduler ------------------------------------------------------------------------

RICH = """
partitions:
  - name: default
    nodesortpolicy:
      type: binpacking
      resourceweights: {memory: 2.0, vcore: 1.5}
    placementrules:
      - name: provided
        create: false
      - name: user
        create: true
        filter: {type: allow, users: [alice, bob]}
        parent: {name: fixed, value: users}
      - name: tag
        value: namespace
        create: true
        filter: {type: deny, groups: ["^sys.*$"]}
    queues:
      - name: root
        submitacl: "*"
        limits:
          - limit: root users
            users: [alice]
            maxresources: {memory: 100000, vcore: 100}
            maxapplications: 10
        queues:
          - name: a
            maxapplications: 5
            properties: {priority.offset: "5", preemption.delay: "1m30s"}
            resources:
              max: {memory: 5000, vcore: 50}
              guaranteed: {memory: 1000, vcore: 10}
            limits:
              - limit: dev group
                groups: [dev]
                maxapplications: 4
          - name: b
            properties: {application.sort.policy: fair, priority.policy: fence, preemption.policy: fence}
          - name: users
            parent: true
            childtemplate:
              maxapplications: 3
              properties: {application.sort.policy: fair}
              resources:
                max: {memory: 1000, vcore: 10}
"""


@dataclass
class Rich:
    world: World
    scheduler: Scheduler

    @property
    def ctx(self) -> Any:
        return self.world.context


def build_rich() -> Rich:
    """Two nodes (one with host/rack names and a foreign pod), a running app with an allocation,
    a placeholder and an ask over its queue's quota, a completed app, a running app with a
    required-node reservation, a dynamic-queue app in New and a rejected app."""
    world = World(RICH)
    scheduler = Scheduler(world.context, reservation_delay=0.0)
    world.add_node("n1", memory=4000, vcore=40000, **{"si/hostname": "host1", "si/rackname": "rack1"})
    world.add_node("n2", memory=2000, vcore=20000)
    world.add_app("app-run", "root.a", user="alice", groups=("dev",))
    world.add_app("app-done", "root.a", user="alice", groups=("dev",))
    world.add_app("app-b", "root.b", user="bob")
    world.add_app("app-bob", "", user="bob")
    world.add_app("app-rej", "root.nope", user="carol")
    world.ask("r1", "app-run", res(memory=1000, vcore=1000), priority=3,
              allocation_tags={"kubernetes.io/meta/podName": "p1", "kubernetes.io/meta/namespace": "ns"})
    world.ask("r2", "app-run", res(memory=6000, vcore=1000))
    world.ask("ph1", "app-run", res(memory=100, vcore=100), placeholder=True, task_group_name="tg1")
    world.ask("d1", "app-done", res(memory=100, vcore=100))
    world.ask("b1", "app-b", res(memory=1500, vcore=1000), allocation_tags={si.TAG_REQUIRED_NODE: "n2"})
    world.ask("b2", "app-b", res(memory=1900, vcore=1000), allocation_tags={si.TAG_REQUIRED_NODE: "n2"})
    world.clock.advance(2)
    assert scheduler.run_until_idle() == 4
    world.allocs(si.Allocation(allocation_key="f1", allocation_tags={si.FOREIGN: "default"}, node_id="n1",
                               resource_per_alloc=res(memory=50, vcore=50), partition_name="default"))
    world.release("app-done", "d1")
    world.advance(31)
    scheduler.schedule_once()
    part = world.partition()
    assert sorted(part.applications) == ["app-b", "app-bob", "app-run"]
    assert [a.app_id for a in part.completed_applications.values()] == ["app-done"]
    assert list(part.rejected_applications) == ["app-rej"]
    assert list(part.reservations.by_key) == ["b2"]
    return Rich(world, scheduler)


@pytest.fixture(scope="module")
def rich() -> Iterator[Rich]:
    """The populated scheduler, shared by a module's read-only tests."""
    made = build_rich()
    yield made
    made.scheduler.stop()
    made.world.close()


# -- the decoder's own tests ---------------------------------------------------------------------------


def test_decoder_accepts_a_valid_allocation() -> None:
    decode({"allocationKey": "", "resource": {"memory": 1, "vcore": 2}, "priority": "0"}, ALLOCATION)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"resource": {"memory": 1}}, "always has this key"),
        ({"allocationKey": "k", "nodeID": "n"}, "has no keys"),
        ({"allocationKey": "k", "requestTime": 0}, "zero value"),
        ({"allocationKey": "k", "placeholder": False}, "zero value"),
        ({"allocationKey": "k", "allocationTags": {}}, "zero value"),
        ({"allocationKey": "k", "requestTime": 1.0}, "expected an int64"),
        ({"allocationKey": "k", "requestTime": True}, "expected an int64"),
        ({"allocationKey": "k", "priority": 5}, "expected a string"),
        ({"allocationKey": "k", "resource": {"vcore": 1, "memory": 2}}, "not sorted"),
        ({"allocationKey": "k", "resource": {"memory": 2.5}}, "expected an int64"),
        ({"allocationKey": "k", "nodeId": None}, "null"),
    ],
)
def test_decoder_rejects(value: dict[str, Any], problem: str) -> None:
    with pytest.raises(DecodeError, match=problem):
        decode(value, ALLOCATION)


def test_decoder_allows_zero_in_always_emitted_keys() -> None:
    decode({"nodeID": "n", "schedulable": False, "isReserved": False}, NODE)
    with pytest.raises(DecodeError, match="always has this key"):
        decode({"nodeID": "n", "schedulable": False}, NODE)


def test_decoder_checks_nested_lists_and_floats() -> None:
    decode({"type": "fair", "resourceWeights": {"memory": 1.0}}, SORTING)
    with pytest.raises(DecodeError, match="expected a float"):
        decode({"type": "fair", "resourceWeights": {"memory": 1}}, SORTING)
    with pytest.raises(DecodeError, match=r"\$\[0\]\.allocationLog\[0\]\.count"):
        decode([{"allocationKey": "k", "allocationLog": [{"count": 0}]}], ListOf(ASK))


def test_rich_world_is_consistent(rich: Rich) -> None:
    from rm_helpers import check_invariants

    check_invariants(rich.ctx)
