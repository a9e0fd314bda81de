"""The demo resource manager: keeps a small simulated cluster busy, forever.

``pyscheduler serve --demo`` (and ``make serve``) attaches it so that a newcomer opening the
REST API sees queues, nodes, applications in every state and a live event stream at once. It
is an RM like any other: it registers through :class:`~pyscheduler.rmproxy.proxy.RMProxy`
with the served configuration, creates its nodes and then, on its own thread, every tick:

- submits a new application (a leaf queue of the configuration, one of a few users) with a
  few asks, at seeded random intervals, while fewer than ``max_apps`` are live;
- releases each allocation once its seeded run time is over (``STOPPED_BY_RM``);
- removes each application whose asks have all run, as a shim does when a job is gone.

Everything random comes from one ``random.Random(seed)``, so the sequence of applications and
asks is the same on every run (timings follow the real clock and the scheduling thread).
Unlike :class:`pyscheduler.sim.SimulatedRM`, which plays a finite workload on a simulated
clock against a core of its own, this one runs in real time against the served core.

:func:`attach_demo` attaches it to a :class:`~pyscheduler.service.SchedulerService` as any RM
attaches (``service.attach``), with two example node reporter plugins (topology labels and a
reclaim advice) so that ``/ws/v1/reporters`` has something to show.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from pyscheduler.common.background import BackgroundThread
from pyscheduler.common.resources import MEMORY, VCORE, Resource
from pyscheduler.config.loader import parse_and_validate
from pyscheduler.config.queues import QueueConfig
from pyscheduler.reporter.examples import ReclaimAdvisor, TopologyLabeller
from pyscheduler.service import SchedulerService
from pyscheduler.si.events import EventRecord
from pyscheduler.si import messages as si
from pyscheduler.rmproxy.proxy import RMProxy

__all__ = ["DemoRM", "DemoSettings", "attach_demo", "leaf_queues"]

log = logging.getLogger(__name__)

#: The tags a Kubernetes shim puts on its asks, so the demo's look like a cluster's.
_NAMESPACE_TAG = si.DOMAIN_K8S + si.GROUP_META + si.KEY_NAMESPACE
_POD_NAME_TAG = si.DOMAIN_K8S + si.GROUP_META + si.KEY_POD_NAME

MIB = 1 << 20
GIB = 1 << 30


@dataclass(frozen=True)
class DemoSettings:
    """The demo cluster and its load (defaults: 4 nodes of 16 GiB / 8 cores, about 60 % busy
    with short bursts of pending asks)."""

    seed: int = 1
    nodes: int = 4
    node_memory: int = 16 * GIB
    node_vcore: int = 8000
    #: Mean seconds between application arrivals (exponential gaps).
    arrival_interval: float = 1.5
    max_apps: int = 25
    asks_per_app: tuple[int, int] = (1, 5)
    ask_memory: tuple[int, int] = (256 * MIB, 3 * GIB)
    ask_vcore: tuple[int, int] = (250, 2000)
    run_time: tuple[float, float] = (4.0, 30.0)
    users: tuple[str, ...] = ("alice", "bob", "carol")
    tick: float = 0.2


def demo_build_info() -> dict[str, str]:
    """The demo RM's build information, shaped as YuniKorn's shim reports its own (the web UI's
    info panel shows buildDate and buildVersion): this service's version and start time."""
    import pyscheduler

    started = time.strftime("%Y-%m-%dT%H:%M:%S%z", time.gmtime())
    return {
        "buildDate": started,
        "buildVersion": pyscheduler.__version__,
        "isPluginVersion": "false",
        "rmName": "pyscheduler-demo",
    }


def leaf_queues(config_text: str, partition: str = "default") -> list[str]:
    """The leaf queue paths of ``partition`` (or of the first partition) in a queues.yaml."""
    config = parse_and_validate(config_text)
    chosen = next((p for p in config.partitions if p.name == partition), config.partitions[0])
    leaves: list[str] = []

    def walk(queue: QueueConfig, path: str) -> None:
        if not queue.queues and not queue.parent:
            leaves.append(path)
        for child in queue.queues:
            walk(child, f"{path}.{child.name}")

    walk(chosen.queues, chosen.queues.name)
    return leaves or ["root.default"]


def attach_demo(service: SchedulerService, seed: int = 1) -> DemoRM:
    """The demo RM started against ``service`` with its configuration, and the example
    reporter plugins registered with the service's reporter manager."""
    demo = DemoRM(service.proxy, service.config_text, DemoSettings(seed=seed))
    demo.start()
    service.reporters.register(TopologyLabeller(service.context))
    service.reporters.register(ReclaimAdvisor(service.context))
    return demo


class DemoRM:
    """A real-time RM playing an endless seeded workload (see the module doc)."""

    RM_ID = "demo"

    def __init__(self, proxy: RMProxy, config_text: str, settings: DemoSettings | None = None) -> None:
        self.proxy = proxy
        self.config_text = config_text
        self.settings = settings or DemoSettings()
        self.partition = parse_and_validate(config_text).partitions[0].name
        self.queues = leaf_queues(config_text, self.partition)
        self._rng = random.Random(self.settings.seed)
        self._lock = threading.Lock()
        # Steps every tick, the first after one tick; a failing step is logged, the next still runs.
        self._thread = BackgroundThread(
            "pyscheduler-demo-rm", self._tick, interval=self.settings.tick, first_delay=self.settings.tick
        )
        self._app_seq = 0
        self._asks: dict[str, tuple[str, float]] = {}  # ask key -> (app id, run time)
        self._ends: dict[str, float] = {}  # running allocation key -> monotonic end time
        self._left: dict[str, int] = {}  # live app -> asks not yet finished
        self._done_apps: list[str] = []
        self._next_arrival = 0.0
        self.submitted = 0
        self.allocated = 0

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        s = self.settings
        self.proxy.register_resource_manager(
            si.RegisterResourceManagerRequest(
                rm_id=self.RM_ID,
                version="demo",
                policy_group="queues",
                build_info=demo_build_info(),
                config=self.config_text,
            ),
            self,
        )
        capacity = Resource({MEMORY: s.node_memory, VCORE: s.node_vcore, "pods": 110})
        nodes = tuple(
            si.NodeInfo(
                node_id=f"demo-node-{i}",
                action=si.NodeAction.CREATE,
                attributes={si.HOST_NAME: f"demo-node-{i}", si.RACK_NAME: f"rack-{i % 2}", si.INSTANCE_TYPE: "demo"},
                schedulable_resource=capacity,
            )
            for i in range(s.nodes)
        )
        self.proxy.update_node(si.NodeRequest(nodes=nodes, rm_id=self.RM_ID))
        self._next_arrival = time.monotonic()
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._thread.stop(timeout)

    # -- the RM callback ----------------------------------------------------------------------

    def update_allocation(self, response: si.AllocationResponse) -> None:
        now = time.monotonic()
        with self._lock:
            for alloc in response.new:
                planned = self._asks.get(alloc.allocation_key)
                if planned is not None and alloc.allocation_key not in self._ends:
                    self._ends[alloc.allocation_key] = now + planned[1]
                    self.allocated += 1
            for release in response.released:
                # Our own release confirmed, or the core ended the allocation: either way done.
                self._ends.pop(release.allocation_key, None)
                self._finish(release.allocation_key)
            for rejected in response.rejected_allocations:
                self._finish(rejected.allocation_key)

    def update_application(self, response: si.ApplicationResponse) -> None:
        with self._lock:
            for rejected in response.rejected:
                if self._left.pop(rejected.application_id, None) is not None:
                    for key in [k for k, (app, _) in self._asks.items() if app == rejected.application_id]:
                        del self._asks[key]

    def update_node(self, response: si.NodeResponse) -> None:
        for rejected in response.rejected:
            log.warning("demo node %s rejected: %s", rejected.node_id, rejected.reason)

    def send_event(self, events: Sequence[EventRecord]) -> None:
        """Request events would go to pods; the demo has none."""

    def update_container_scheduling_state(self, request: si.UpdateContainerSchedulingStateRequest) -> None:
        """Autoscaling hints; the demo cluster does not scale."""

    def _finish(self, key: str) -> None:
        """Caller holds the lock: one ask is over (released or rejected)."""
        planned = self._asks.pop(key, None)
        if planned is None:
            return
        app_id = planned[0]
        left = self._left.get(app_id)
        if left is None:
            return
        if left <= 1:
            del self._left[app_id]
            self._done_apps.append(app_id)
        else:
            self._left[app_id] = left - 1

    # -- the loop -------------------------------------------------------------------------------

    def _tick(self) -> None:
        self._step(time.monotonic())

    def _step(self, now: float) -> None:
        with self._lock:
            due = [key for key, end in self._ends.items() if end <= now]
            for key in due:
                del self._ends[key]
            done, self._done_apps = self._done_apps, []
            submit = now >= self._next_arrival and len(self._left) < self.settings.max_apps
            if submit:
                self._next_arrival = now + self._rng.expovariate(1.0 / self.settings.arrival_interval)
            releases = [(self._asks[key][0], key) for key in due if key in self._asks]
        if releases:
            self.proxy.update_allocation(
                si.AllocationRequest(
                    releases=si.AllocationReleasesRequest(
                        tuple(
                            si.AllocationRelease(
                                partition_name=self.partition,
                                application_id=app_id,
                                termination_type=si.TerminationType.STOPPED_BY_RM,
                                message="demo task finished",
                                allocation_key=key,
                            )
                            for app_id, key in releases
                        )
                    ),
                    rm_id=self.RM_ID,
                )
            )
        if done:
            self.proxy.update_application(
                si.ApplicationRequest(
                    remove=tuple(si.RemoveApplicationRequest(application_id=a, partition_name=self.partition) for a in done),
                    rm_id=self.RM_ID,
                )
            )
        if submit:
            self._submit()

    def _submit(self) -> None:
        s = self.settings
        rng = self._rng
        with self._lock:
            self._app_seq += 1
            app_id = f"demo-app-{self._app_seq:06d}"
            queue = rng.choice(self.queues)
            user = rng.choice(s.users)
            asks = []
            for j in range(rng.randint(*s.asks_per_app)):
                key = f"{app_id}-task-{j}"
                asks.append(
                    si.Allocation(
                        allocation_key=key,
                        allocation_tags={_NAMESPACE_TAG: "demo", _POD_NAME_TAG: key},
                        resource_per_alloc=Resource(
                            {MEMORY: rng.randint(*s.ask_memory), VCORE: rng.randint(*s.ask_vcore), "pods": 1}
                        ),
                        priority=0,
                        application_id=app_id,
                        partition_name=self.partition,
                    )
                )
                self._asks[key] = (app_id, rng.uniform(*s.run_time))
            self._left[app_id] = len(asks)
            self.submitted += 1
        self.proxy.update_application(
            si.ApplicationRequest(
                new=(
                    si.AddApplicationRequest(
                        application_id=app_id,
                        queue_name=queue,
                        partition_name=self.partition,
                        ugi=si.UserGroupInformation(user=user, groups=(user, "demo")),
                        tags={"namespace": "demo"},
                    ),
                ),
                rm_id=self.RM_ID,
            )
        )
        self.proxy.update_allocation(si.AllocationRequest(allocations=tuple(asks), rm_id=self.RM_ID))
