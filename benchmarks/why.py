"""A quick measurement of the why answer (issue 35) on a large state: ``python -m benchmarks.why
[nodes] [apps] [asks per app]`` (default 5,000 nodes, 1,000 applications of 100 asks: 100,000
asks), built through the RM interface with no scheduling (every ask pending; the nodes hold half
the asks' demand, so later asks find no node; the RM's predicates, asked for every node with room,
let every node pass). Prints the median wall time of ``why`` for an application at the start,
middle and end of the partition's order (with and without ``nodes=false``), of the pending list's
first page, and of one application's JSON (its ``queuePosition``). The issue's target for ``why``
is 50 ms; ``python -m benchmarks answers`` (:mod:`benchmarks.answers`) reports it with the median
and p99 over many calls.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

from pyscheduler.common.clock import ManualClock
from pyscheduler.common.resources import Resource
from pyscheduler.dao.applications import application
from pyscheduler.dao.queue_position import pending_applications
from pyscheduler.dao.why import why
from pyscheduler.rmproxy.proxy import RMProxy
from pyscheduler.scheduler.context import ClusterContext
from pyscheduler.si import messages as si
from pyscheduler.testing.recording import RecordingRM

CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
          - name: b
          - name: c
            properties: {application.sort.policy: fair}
"""


class PassingRM(RecordingRM):
    """The recording test RM, with predicates that let every node pass without recording the
    call. A why answer asks them for every node with room (3 kinds of ask on 5,000 nodes: 15,000
    calls); recording them grew the heap by as much per answer, and the collector's full passes
    with it (a p99 of 500 ms over 200 answers, none of it the answer's), which a shim does not."""

    def predicates(self, args: si.PredicatesArgs) -> str | None:
        return None


def build(nodes: int, apps: int, asks_per_app: int) -> tuple[ClusterContext, RMProxy]:
    context = ClusterContext(clock=ManualClock())
    proxy = RMProxy(context)
    proxy.register_resource_manager(si.RegisterResourceManagerRequest(
        rm_id="bench", policy_group="queues", config=CONFIG), PassingRM())
    node_vcore = max(1, apps * asks_per_app * 1000 // (2 * nodes))
    proxy.update_node(si.NodeRequest(rm_id="bench", nodes=tuple(
        si.NodeInfo(node_id=f"node-{i}", action=si.NodeAction.CREATE,
                    schedulable_resource=Resource({"vcore": node_vcore, "memory": 10**12}))
        for i in range(nodes))))
    queues = ("root.a", "root.b", "root.c")
    proxy.update_application(si.ApplicationRequest(rm_id="bench", new=tuple(
        si.AddApplicationRequest(application_id=f"app-{a}", queue_name=queues[a % 3], partition_name="default",
                                 ugi=si.UserGroupInformation(user="bench"))
        for a in range(apps))))
    for a in range(apps):
        proxy.update_allocation(si.AllocationRequest(rm_id="bench", allocations=tuple(
            si.Allocation(allocation_key=f"app-{a}-{k}", application_id=f"app-{a}", partition_name="default",
                          resource_per_alloc=Resource({"vcore": 1000 * (1 + k % 3), "memory": 10}))
            for k in range(asks_per_app))))
    return context, proxy


def timings_ms(call: Callable[[], object], runs: int) -> list[float]:
    """The wall milliseconds of ``runs`` calls of ``call``, in order."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    return times


def median_ms(call: Callable[[], object], runs: int = 7) -> float:
    return statistics.median(timings_ms(call, runs))


def main(argv: list[str]) -> None:
    nodes, apps, per_app = (int(argv[i]) if len(argv) > i else d for i, d in enumerate((5000, 1000, 100)))
    started = time.perf_counter()
    context, proxy = build(nodes, apps, per_app)
    print(f"state: {nodes} nodes, {apps * per_app} asks, built in {time.perf_counter() - started:.1f} s")
    for app_id in ("app-0", f"app-{apps // 2}", f"app-{apps - 1}"):
        full = median_ms(lambda: why(context, "default", app_id))
        cheap = median_ms(lambda: why(context, "default", app_id, nodes="false"))
        print(f"why {app_id}: {full:.1f} ms (nodes=false: {cheap:.1f} ms)")
    print(f"pending, first page of 1000: {median_ms(lambda: pending_applications(context, 'default')):.1f} ms")
    print(f"one application's JSON: {median_ms(lambda: application(context, 'default', 'app-0')):.1f} ms")
    proxy.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
