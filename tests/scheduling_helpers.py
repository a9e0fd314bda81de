"""Helpers for the scheduling-cycle tests (test_scheduling_*.py, test_health.py): a cluster
driven only through the RM interface (RMProxy + RecordingRM) and the scheduler
(``Scheduler.schedule_once`` / ``run_until_idle``), on a ManualClock.

A plain module imported by the tests; the ``clusters`` fixture below is re-exported by each test
module that imports it (``from scheduling_helpers import clusters  # noqa: F401``).

The only direct reads of the core are for assertions (queue usage, reservations, health);
nothing in here places, reserves or completes anything behind the scheduler's back.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from pyscheduler.common.clock import ManualClock
from pyscheduler.common.resources import Resource
from pyscheduler.si.events import EventChangeDetail as D
from pyscheduler.si.events import EventChangeType as C
from pyscheduler.si.events import EventRecordType as T
from pyscheduler.objects.application import Application, AppTimeouts
from pyscheduler.objects.partition import Partition
from pyscheduler.si import messages as si
from pyscheduler.rmproxy.proxy import RMProxy
from pyscheduler.testing.recording import PredicateFunc, RecordingRM
from pyscheduler.scheduler.context import ClusterContext
from pyscheduler.scheduler.cycle import Decision
from pyscheduler.scheduler.health import HealthResult, check_health
from pyscheduler.scheduler.loop import Scheduler

__all__ = ["C", "D", "T", "Cluster", "clusters", "res", "TWO_LEAVES", "config"]

RM_ID = "rm-sched"


def res(**quantities: int) -> Resource:
    return Resource(quantities)


def config(queues: str, *, policy: str = "fair", partition_extra: str = "") -> str:
    """A one-partition queues.yaml: ``queues`` is the YAML of root's children, indented for
    the position under ``root.queues`` (8 spaces)."""
    return f"""
partitions:
  - name: default
    nodesortpolicy: {{type: {policy}}}
{partition_extra}    queues:
      - name: root
        submitacl: "*"
        queues:
{queues}"""


#: Root with two leaves a and b.
TWO_LEAVES = config("""\
          - name: a
          - name: b
""")


class Cluster:
    """A ClusterContext on a ManualClock, its RMProxy, one registered RecordingRM and a
    Scheduler (not started: tests step it)."""

    def __init__(
        self,
        config_text: str = TWO_LEAVES,
        *,
        reservation_delay: float = 2.0,
        predicates: PredicateFunc | None = None,
        timeouts: AppTimeouts | None = None,
        clock: Any = None,
        rm_timeout: float = 5.0,
    ) -> None:
        self.clock = clock if clock is not None else ManualClock()
        self.context = ClusterContext(clock=self.clock, timeouts=timeouts)
        self.proxy = RMProxy(self.context)
        self.rm = RecordingRM(predicates, timeout=rm_timeout)
        self.scheduler = Scheduler(self.context, reservation_delay=reservation_delay)
        self.proxy.register_resource_manager(
            si.RegisterResourceManagerRequest(rm_id=RM_ID, policy_group="queues", config=config_text), self.rm
        )

    # -- nodes ------------------------------------------------------------------------------------

    def node_msg(self, node_id: str, memory: int = 100, vcore: int = 10,
                 action: si.NodeAction = si.NodeAction.CREATE) -> si.NodeInfo:
        resource = res(memory=memory, vcore=vcore) if action in (si.NodeAction.CREATE, si.NodeAction.CREATE_DRAIN) else None
        return si.NodeInfo(node_id=node_id, action=action, schedulable_resource=resource)

    def update_nodes(self, *infos: si.NodeInfo) -> None:
        self.proxy.update_node(si.NodeRequest(nodes=infos, rm_id=RM_ID))

    def add_node(self, node_id: str, memory: int = 100, vcore: int = 10) -> None:
        self.update_nodes(self.node_msg(node_id, memory, vcore))

    def add_nodes(self, count: int, memory: int = 100, vcore: int = 10, prefix: str = "node-") -> list[str]:
        ids = [f"{prefix}{i:02d}" for i in range(count)]
        self.update_nodes(*(self.node_msg(i, memory, vcore) for i in ids))
        return ids

    def node_action(self, node_id: str, action: si.NodeAction) -> None:
        self.update_nodes(si.NodeInfo(node_id=node_id, action=action))

    def remove_node(self, node_id: str) -> None:
        self.node_action(node_id, si.NodeAction.DECOMISSION)

    # -- applications --------------------------------------------------------------------------------

    def add_app(self, app_id: str, queue: str = "root.a", user: str = "alice", groups: tuple[str, ...] = ()) -> None:
        self.proxy.update_application(si.ApplicationRequest(new=(si.AddApplicationRequest(
            application_id=app_id, queue_name=queue, partition_name="default",
            ugi=si.UserGroupInformation(user=user, groups=groups)),), rm_id=RM_ID))

    def remove_app(self, app_id: str) -> None:
        self.proxy.update_application(si.ApplicationRequest(
            remove=(si.RemoveApplicationRequest(application_id=app_id, partition_name="default"),), rm_id=RM_ID))

    # -- asks and releases ------------------------------------------------------------------------------

    @staticmethod
    def ask_msg(key: str, app_id: str, memory: int = 10, vcore: int = 1, *, priority: int = 0,
                tags: Mapping[str, str] | None = None) -> si.Allocation:
        return si.Allocation(allocation_key=key, application_id=app_id, partition_name="default",
                             resource_per_alloc=res(memory=memory, vcore=vcore), priority=priority,
                             allocation_tags=dict(tags or {}))

    def send(self, *allocations: si.Allocation, releases: tuple[si.AllocationRelease, ...] = ()) -> None:
        self.proxy.update_allocation(si.AllocationRequest(
            allocations=allocations,
            releases=si.AllocationReleasesRequest(allocations_to_release=releases) if releases else None,
            rm_id=RM_ID))

    def ask(self, key: str, app_id: str, memory: int = 10, vcore: int = 1, **kwargs: Any) -> None:
        self.send(self.ask_msg(key, app_id, memory, vcore, **kwargs))

    def asks(self, app_id: str, count: int, memory: int = 10, vcore: int = 1, prefix: str | None = None) -> list[str]:
        prefix = f"{app_id}-ask-" if prefix is None else prefix
        keys = [f"{prefix}{i:03d}" for i in range(count)]
        self.send(*(self.ask_msg(k, app_id, memory, vcore) for k in keys))
        return keys

    @staticmethod
    def release_msg(app_id: str, key: str = "") -> si.AllocationRelease:
        return si.AllocationRelease(partition_name="default", application_id=app_id, allocation_key=key,
                                    termination_type=si.TerminationType.STOPPED_BY_RM, message="done")

    def release(self, app_id: str, key: str = "") -> None:
        self.send(releases=(self.release_msg(app_id, key),))

    # -- scheduling ----------------------------------------------------------------------------------

    def once(self) -> list[Decision]:
        return self.scheduler.schedule_once()

    def schedule(self) -> int:
        """Cycles until one places nothing; returns the allocations made."""
        return self.scheduler.run_until_idle()

    def advance(self, seconds: float) -> None:
        """Moves the clock (timers fire at the next cycle, or at :meth:`tick`)."""
        self.clock.advance(seconds)

    def tick(self) -> None:
        self.context.tick()

    # -- what the RM saw ------------------------------------------------------------------------------

    def placements(self) -> dict[str, str]:
        """Live allocation key -> node, as the RM was told."""
        return {k: a.node_id for k, a in self.rm.allocations.items()}

    def per_node(self) -> Counter[str]:
        return Counter(self.placements().values())

    def per_app(self) -> Counter[str]:
        return Counter(a.application_id for a in self.rm.allocations.values())

    # -- the core, read for assertions ------------------------------------------------------------------

    @property
    def partition(self) -> Partition:
        part = self.context.partition(RM_ID, "default")
        assert part is not None
        return part

    def app(self, app_id: str) -> Application:
        return self.partition.applications[app_id]

    def queue(self, path: str) -> Any:
        return self.partition.get_queue(path)

    def reserved(self) -> dict[str, str]:
        """Reserved ask key -> node."""
        return {k: r.node_id for k, r in self.partition.reservations.by_key.items()}

    def mark(self) -> int:
        system = self.context.event_system
        assert system.flush(5.0)
        return system.next_id()

    def events(self, since: int = 0) -> list[tuple[Any, ...]]:
        """(type, change, detail, objectID, referenceID, message) of every event from ``since``."""
        system = self.context.event_system
        assert system.flush(5.0)
        return [(typ, change, detail, obj, ref, msg)
                for _id, typ, change, detail, _ts, obj, ref, msg, _res in system.records(since, 1_000_000)]

    def health(self) -> HealthResult:
        return check_health(self.context, self.scheduler)

    def assert_healthy(self, note: str = "") -> HealthResult:
        result = self.health()
        assert result.healthy, f"{note}: {result.explain()}" if note else result.explain()
        return result

    def close(self) -> None:
        self.scheduler.stop()
        self.proxy.stop()


@pytest.fixture
def clusters() -> Iterator[Callable[..., Cluster]]:
    """``make(config_text=TWO_LEAVES, **kwargs)`` -> a Cluster, closed at teardown."""
    made: list[Cluster] = []

    def make(*args: Any, **kwargs: Any) -> Cluster:
        cluster = Cluster(*args, **kwargs)
        made.append(cluster)
        return cluster

    yield make
    for cluster in made:
        cluster.close()
