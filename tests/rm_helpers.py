"""Shared helpers for the RM-interface tests (test_rm_*.py): a world (ClusterContext with a
ManualClock + RMProxy + RecordingRM), message builders, event readers, invariant checks and the
queues.yaml texts the tests use.

A plain module, imported by the tests (``from rm_helpers import ...``), not a conftest: the
``world`` fixture below is re-exported by each test module that imports it.

Everything goes through :class:`RMProxy`; the only direct call into the core is
``context.commit_allocation`` (the scheduling cycle's commit, which does not exist yet) and
``context.tick()`` (the background loop's timer tick).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from pyscheduler.common.clock import ManualClock
from pyscheduler.common.resources import Resource
from pyscheduler.si.events import EventChangeDetail as D
from pyscheduler.si.events import EventChangeType as C
from pyscheduler.si.events import EventRecordType as T
from pyscheduler.objects.application import Application, AppTimeouts
from pyscheduler.objects.partition import Partition
from pyscheduler.policies.role_history.store import HistoryStore
from pyscheduler.si import messages as si
from pyscheduler.rmproxy.proxy import RMProxy
from pyscheduler.testing.recording import RecordingRM
from pyscheduler.scheduler.context import ClusterContext

__all__ = ["C", "D", "T", "World", "world", "res", "check_invariants", "invariant_problems"]

RM_ID = "rm-1"

#: One partition, root open to everyone, leaves a and b, a parent with a child template.
BASIC = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
          - name: b
          - name: parent
            parent: true
"""

#: Quotas and limits: leaf "limited" has a max, maxapplications 2; user limits at root and on a.
LIMITED = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
            maxapplications: 2
            resources:
              max: {memory: 100, vcore: 10}
              guaranteed: {memory: 50, vcore: 5}
          - name: b
"""

#: Two partitions for one RM.
TWO_PARTITIONS = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
  - name: gpu
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
"""


def res(**quantities: int) -> Resource:
    """``res(memory=10, vcore=1)``: a Resource from keywords."""
    return Resource(quantities)


class World:
    """A ClusterContext on a ManualClock, its RMProxy and one registered RecordingRM."""

    def __init__(
        self,
        config: str = BASIC,
        *,
        rm_id: str = RM_ID,
        extra_config: Mapping[str, str] | None = None,
        timeouts: AppTimeouts | None = None,
        register: bool = True,
        role_history_store: HistoryStore | None = None,
        clock: ManualClock | None = None,
    ) -> None:
        self.clock = clock or ManualClock()
        self.context = ClusterContext(clock=self.clock, timeouts=timeouts, role_history_store=role_history_store)
        self.proxy = RMProxy(self.context)
        self.rm = RecordingRM(timeout=2.0)
        self.rm_id = rm_id
        if register:
            self.register(config, extra_config=extra_config)

    # -- registration and configuration ---------------------------------------------------------

    def register(self, config: str, *, extra_config: Mapping[str, str] | None = None,
                 rm: RecordingRM | None = None) -> None:
        self.proxy.register_resource_manager(
            si.RegisterResourceManagerRequest(
                rm_id=self.rm_id, policy_group="queues", config=config, extra_config=extra_config or {}
            ),
            rm or self.rm,
        )

    def reload(self, config: str, *, extra_config: Mapping[str, str] | None = None) -> None:
        self.proxy.update_configuration(
            si.UpdateConfigurationRequest(
                rm_id=self.rm_id, policy_group="queues", config=config, extra_config=extra_config or {}
            )
        )

    # -- nodes ----------------------------------------------------------------------------------

    def node(self, node_id: str, action: si.NodeAction = si.NodeAction.CREATE,
             resource: Mapping[str, int] | None = None, **attributes: str) -> None:
        self.nodes(si.NodeInfo(node_id=node_id, action=action, schedulable_resource=resource, attributes=attributes))

    def nodes(self, *infos: si.NodeInfo) -> None:
        self.proxy.update_node(si.NodeRequest(nodes=infos, rm_id=self.rm_id))

    def add_node(self, node_id: str, memory: int = 1000, vcore: int = 100, **attributes: str) -> None:
        self.node(node_id, si.NodeAction.CREATE, res(memory=memory, vcore=vcore), **attributes)

    # -- applications ---------------------------------------------------------------------------

    @staticmethod
    def app_msg(app_id: str, queue: str = "root.a", user: str = "alice", groups: tuple[str, ...] = (),
                tags: Mapping[str, str] | None = None, partition: str = "default",
                placeholder_ask: Mapping[str, int] | None = None) -> si.AddApplicationRequest:
        return si.AddApplicationRequest(
            application_id=app_id,
            queue_name=queue,
            partition_name=partition,
            ugi=si.UserGroupInformation(user=user, groups=groups),
            tags=tags or {},
            placeholder_ask=placeholder_ask,
        )

    def add_app(self, app_id: str, queue: str = "root.a", **kwargs: Any) -> None:
        self.apps(self.app_msg(app_id, queue, **kwargs))

    def apps(self, *new: si.AddApplicationRequest, remove: tuple[si.RemoveApplicationRequest, ...] = ()) -> None:
        self.proxy.update_application(si.ApplicationRequest(new=new, remove=remove, rm_id=self.rm_id))

    def remove_app(self, app_id: str, partition: str = "default") -> None:
        self.apps(remove=(si.RemoveApplicationRequest(application_id=app_id, partition_name=partition),))

    # -- asks, allocations, releases --------------------------------------------------------------

    @staticmethod
    def alloc_msg(key: str, app_id: str, resource: Mapping[str, int] | None = None, node_id: str = "",
                  partition: str = "default", **kwargs: Any) -> si.Allocation:
        return si.Allocation(
            allocation_key=key,
            application_id=app_id,
            resource_per_alloc=res(memory=10, vcore=1) if resource is None else resource,
            node_id=node_id,
            partition_name=partition,
            **kwargs,
        )

    def ask(self, key: str, app_id: str, resource: Mapping[str, int] | None = None, **kwargs: Any) -> None:
        self.allocs(self.alloc_msg(key, app_id, resource, **kwargs))

    def allocs(self, *allocations: si.Allocation, releases: tuple[si.AllocationRelease, ...] = ()) -> None:
        self.proxy.update_allocation(si.AllocationRequest(
            allocations=allocations,
            releases=si.AllocationReleasesRequest(allocations_to_release=releases) if releases else None,
            rm_id=self.rm_id,
        ))

    @staticmethod
    def release_msg(app_id: str, key: str = "", partition: str = "default",
                    termination: si.TerminationType = si.TerminationType.STOPPED_BY_RM) -> si.AllocationRelease:
        return si.AllocationRelease(partition_name=partition, application_id=app_id, allocation_key=key,
                                    termination_type=termination, message="test release")

    def release(self, app_id: str, key: str = "", **kwargs: Any) -> None:
        self.allocs(releases=(self.release_msg(app_id, key, **kwargs),))

    def commit(self, app_id: str, key: str, node_id: str, partition: str = "default") -> None:
        """The scheduling cycle's commit of a pending ask on a node."""
        part = self.partition(partition)
        app = part.applications[app_id]
        self.context.commit_allocation(part, app, app.asks[key], part.nodes[node_id])

    def allocate(self, key: str, app_id: str, node_id: str, resource: Mapping[str, int] | None = None,
                 partition: str = "default") -> None:
        """An ask, then its commit on ``node_id``."""
        self.ask(key, app_id, resource, partition=partition)
        self.commit(app_id, key, node_id, partition)

    # -- time -----------------------------------------------------------------------------------

    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)
        self.context.tick()

    # -- reading --------------------------------------------------------------------------------

    def partition(self, name: str = "default") -> Partition:
        part = self.context.partition(self.rm_id, name)
        assert part is not None, f"no partition {name!r}"
        return part

    def app(self, app_id: str, partition: str = "default") -> Application:
        return self.partition(partition).applications[app_id]

    def queue(self, path: str, partition: str = "default") -> Any:
        return self.partition(partition).get_queue(path)

    def mark(self) -> int:
        """The id the next event will get: pass it to :meth:`events` to read what follows."""
        assert self.context.event_system.flush(5.0)
        return self.context.event_system.next_id()

    def records(self, since: int = 0) -> list[tuple[Any, ...]]:
        """(type, change, detail, objectID, referenceID, message, resource) of every event from ``since``."""
        system = self.context.event_system
        assert system.flush(5.0)
        out = []
        for _id, typ, change, detail, _ts, obj, ref, msg, resource in system.records(since, 1_000_000):
            out.append((typ, change, detail, obj, ref, msg, resource))
        return out

    def events(self, since: int = 0) -> list[tuple[Any, ...]]:
        """(type, change, detail, objectID, referenceID, message) of every event from ``since``."""
        return [r[:6] for r in self.records(since)]

    def close(self) -> None:
        self.proxy.stop()


@pytest.fixture
def world() -> Iterator[World]:
    """A registered world with the BASIC configuration."""
    made = World()
    yield made
    made.close()


# -- invariants -------------------------------------------------------------------------------------


def invariant_problems(partition: Partition) -> list[str]:
    """Everything wrong with one partition's bookkeeping (empty when consistent). The caller holds
    ``partition.lock`` so that the snapshot is not torn by a writer.

    - no negative resource anywhere (queues, applications, nodes, user usage);
    - a leaf queue's allocated (pending) equals the sum over its applications, a parent's the sum
      over its children;
    - an application's allocated and pending equal the sums of its allocations and asks;
    - a node's allocated equals the sum of its allocations, and each node allocation is the
      application's (or a gang member taking the place of its application's placeholder on
      another node, until the RM confirms);
    - root's max equals the total node capacity;
    - the cycle's incremental state: each queue's applications with asks, priority counts and
      pending priority agree with its applications and children (``Queue.priority_problems``).
    """
    problems: list[str] = []
    total = Resource()
    for node in list(partition.nodes.values()):
        total = total + node.total
        for name, value in (("allocated", node.allocated), ("occupied", node.occupied), ("total", node.total)):
            if value.has_negative():
                problems.append(f"node {node.node_id} {name} negative: {value}")
        if not node.is_consistent():
            problems.append(f"node {node.node_id} allocated {node.allocated} != sum of its allocations")
        for key, alloc in list(node.allocations.items()):
            app = partition.applications.get(alloc.application_id)
            placeholder = alloc.replacing
            if (app is not None and placeholder is not None and key not in app.allocations
                    and app.allocations.get(placeholder.allocation_key) is placeholder
                    and placeholder.replaced_by is alloc and placeholder.node_id != node.node_id):
                continue  # a gang member holding room here until its placeholder elsewhere goes
            if app is None or app.allocations.get(key) is not alloc:
                problems.append(f"node {node.node_id} holds {key} that its application does not")
    for app in list(partition.applications.values()):
        if not app.is_consistent():
            problems.append(f"application {app.app_id} pending/allocated != sums of asks/allocations")
        if app.allocated.has_negative() or app.pending.has_negative():
            problems.append(f"application {app.app_id} negative: {app.allocated} / {app.pending}")
        for key, alloc in list(app.allocations.items()):
            node = partition.nodes.get(alloc.node_id)
            if node is None or node.allocations.get(key) is not alloc:
                problems.append(f"application {app.app_id} allocation {key} is not on node {alloc.node_id}")
        if app.queue is None or app.queue.applications.get(app.app_id) is not app:
            problems.append(f"application {app.app_id} is not in its queue")
    for queue in list(partition.queues()):
        if queue.allocated.has_negative() or queue.pending.has_negative():
            problems.append(f"queue {queue.path} negative: allocated {queue.allocated} pending {queue.pending}")
        if queue.running_apps < 0:
            problems.append(f"queue {queue.path} running apps negative: {queue.running_apps}")
        if queue.is_leaf:
            apps = list(queue.applications.values())
            allocated = sum((a.allocated for a in apps), Resource())
            pending = sum((a.pending for a in apps), Resource())
        else:
            children = list(queue.children.values())
            allocated = sum((c.allocated for c in children), Resource())
            pending = sum((c.pending for c in children), Resource())
        if allocated != queue.allocated:
            problems.append(f"queue {queue.path} allocated {queue.allocated} != sum below {allocated}")
        if pending != queue.pending:
            problems.append(f"queue {queue.path} pending {queue.pending} != sum below {pending}")
        problems.extend(queue.priority_problems())
    if partition.nodes and partition.root.max_resource != total:
        problems.append(f"root max {partition.root.max_resource} != node total {total}")
    problems.extend(partition.ugm.check_consistency())
    problems.extend(partition.member_clusters.problems(partition.nodes))
    problems.extend(partition.topology.problems(partition.nodes))
    return problems


def check_invariants(context: ClusterContext) -> None:
    for partition in list(context.partitions.values()):
        with partition.lock:
            problems = invariant_problems(partition)
        assert not problems, f"{partition.name}: {problems}"
