"""Fixed cluster states for the web console's browser tests (test_console_browser.py):
``pyscheduler serve --config <CONSOLE_QUEUES> --rm console_rm:attach_east --rm console_rm:attach_west``
(two clusters: the console's partitions are ``[console-east]default`` and ``[console-west]default``),
or ``--rm console_rm:attach_many`` (:data:`MANY_NODES` nodes, for the heat map's size).

Everything that decides a page's content is placed by the RM itself (allocations reported with
their node, as a shim reports running pods), and what stays pending stays pending because a
queue is at its max, so two runs draw the same pages:

- east: :data:`EAST_NODES` nodes of 4 cores / 8 GiB. ``prod-web`` (root.prod) runs one
  allocation of ``300 * (i + 1)`` millicores on each of the first 12 nodes; ``batch-etl``
  (root.batch, max 6 cores) runs 2 cores on each of east-12..14, so ``batch-1``, ``batch-2``,
  ``batch-3`` (submitted in that order) wait for root.batch's max; ``bob-1`` (root.dev.bob, max 2
  cores) runs 2 cores on east-15 and waits with one more ask; ``hbase-1`` (root.dev.alice, role
  history key ``hbase``) runs role ``region`` on east-16..18.
- west: 2 nodes, a third whose id is markup (:data:`HOSTILE_NODE`), and ``west-app`` running on
  west-00.
"""

from __future__ import annotations

from pyscheduler.common.resources import Resource
from pyscheduler.service import SchedulerService
from pyscheduler.si import messages as si
from pyscheduler.testing import RecordingRM

CONSOLE_QUEUES = """\
partitions:
  - name: default
    placementrules:
      - name: provided
        create: false
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: prod
            resources:
              guaranteed: {vcore: 8, memory: 16G}
              max: {vcore: 24, memory: 48G}
          - name: batch
            resources:
              guaranteed: {vcore: 2}
              max: {vcore: 6, memory: 24G}
          - name: dev
            queues:
              - name: alice
              - name: bob
                resources:
                  max: {vcore: 2}
"""

GIB = 1 << 30
EAST_NODES = 24
MANY_NODES = 5000
ROLE_KEY = "hbase"
#: A node id that is markup: the console must show it as text.
HOSTILE_NODE = '<img src=x onerror="document.title=1">'
#: The pending applications of east, in the order they were submitted.
PENDING_BATCH = ("batch-1", "batch-2", "batch-3")


class ConsoleRM:
    """One cluster's RM: registers, reports its nodes and running allocations, submits asks."""

    def __init__(self, service: SchedulerService, name: str) -> None:
        self.rm_id = f"console-{name}"
        self.name = name
        self.callback = RecordingRM(timeout=10.0)
        self.proxy = service.proxy
        self.proxy.register_resource_manager(si.RegisterResourceManagerRequest(
            rm_id=self.rm_id, policy_group="queues", config=service.config_text), self.callback)

    def nodes(self, count: int, vcore: int = 4000, memory: int = 8 * GIB, extra: tuple[str, ...] = ()) -> list[str]:
        ids = [f"{self.name}-{i:02d}" if count < 100 else f"{self.name}-{i:04d}" for i in range(count)]
        ids += extra
        self.proxy.update_node(si.NodeRequest(rm_id=self.rm_id, nodes=tuple(
            si.NodeInfo(node_id=n, action=si.NodeAction.CREATE,
                        schedulable_resource=Resource({"memory": memory, "vcore": vcore}))
            for n in ids)))
        return ids

    def application(self, app_id: str, queue: str, user: str, tags: dict[str, str] | None = None) -> None:
        self.proxy.update_application(si.ApplicationRequest(rm_id=self.rm_id, new=(si.AddApplicationRequest(
            application_id=app_id, queue_name=queue, partition_name="default",
            ugi=si.UserGroupInformation(user=user), tags=tags or {}),)))

    def running(self, app_id: str, placed: list[tuple[str, int, int]], tags: dict[str, str] | None = None) -> None:
        """Allocations already running: (node, vcore millicores, memory bytes) each."""
        self.proxy.update_allocation(si.AllocationRequest(rm_id=self.rm_id, allocations=tuple(
            si.Allocation(allocation_key=f"{app_id}-run-{i}", application_id=app_id, partition_name="default",
                          node_id=node, resource_per_alloc=Resource({"vcore": vcore, "memory": memory}),
                          allocation_tags=tags or {})
            for i, (node, vcore, memory) in enumerate(placed))))

    def asks(self, app_id: str, sizes: list[tuple[int, int]]) -> None:
        self.proxy.update_allocation(si.AllocationRequest(rm_id=self.rm_id, allocations=tuple(
            si.Allocation(allocation_key=f"{app_id}-ask-{i}", application_id=app_id, partition_name="default",
                          resource_per_alloc=Resource({"vcore": vcore, "memory": memory}))
            for i, (vcore, memory) in enumerate(sizes))))

    def stop(self) -> None:
        """Nothing to stop: the RM has no thread of its own."""


def attach_east(service: SchedulerService) -> ConsoleRM:
    rm = ConsoleRM(service, "east")
    nodes = rm.nodes(EAST_NODES)
    rm.application("prod-web", "root.prod", "alice")
    rm.running("prod-web", [(nodes[i], 300 * (i + 1), GIB // 2 * (i % 4 + 1)) for i in range(12)])
    rm.application("batch-etl", "root.batch", "carol")
    rm.running("batch-etl", [(nodes[i], 2000, 2 * GIB) for i in (12, 13, 14)])
    rm.application("bob-1", "root.dev.bob", "bob")
    rm.running("bob-1", [(nodes[15], 2000, GIB)])
    rm.asks("bob-1", [(500, GIB)])
    rm.application("hbase-1", "root.dev.alice", "alice", {"pyscheduler.io/role-history-key": ROLE_KEY})
    rm.running("hbase-1", [(nodes[i], 1000, 2 * GIB) for i in (16, 17, 18)], {"pyscheduler.io/role": "region"})
    for app_id, sizes in zip(PENDING_BATCH, ([(1000, GIB), (1000, GIB)], [(2000, 4 * GIB)], [(500, GIB)])):
        rm.application(app_id, "root.batch", "carol")
        rm.asks(app_id, sizes)
    return rm


def attach_west(service: SchedulerService) -> ConsoleRM:
    rm = ConsoleRM(service, "west")
    nodes = rm.nodes(2, vcore=8000, memory=16 * GIB, extra=(HOSTILE_NODE,))
    rm.application("west-app", "root.prod", "dave")
    rm.running("west-app", [(nodes[0], 6000, 4 * GIB)])
    return rm


def attach_many(service: SchedulerService) -> ConsoleRM:
    """:data:`MANY_NODES` nodes, every 7th one running an allocation of a size that cycles through the buckets."""
    rm = ConsoleRM(service, "many")
    nodes = rm.nodes(MANY_NODES)
    rm.application("fill", "root.prod", "alice")
    rm.running("fill", [(nodes[i], 400 * (i // 7 % 10 + 1), GIB) for i in range(0, MANY_NODES, 7)])
    return rm
