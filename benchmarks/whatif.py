"""A quick measurement of what-if (issue 35, docs/whatif.md) on a large state: ``python -m
benchmarks.whatif [nodes] [running] [pending]`` (default 5,000 nodes, 100,000 running
allocations, no pending ask), built through the RM interface. Prints the median wall time of a
what-if for an application of 10 asks that fits (placed now: 11 cycles) and of one too large
(waits), with the time the live partition's lock was held for the copy. With ``pending`` asks
(none of which fits: the nodes are full for them) every cycle walks them all, as a live cycle
does. The issue's target for what-if is 2 s; ``python -m benchmarks answers`` (:mod:`benchmarks.answers`)
reports it.
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any

from pyscheduler.common.clock import ManualClock
from pyscheduler.common.resources import Resource
from pyscheduler.rmproxy.proxy import RMProxy
from pyscheduler.scheduler.context import ClusterContext
from pyscheduler.si import messages as si
from pyscheduler.sim.whatif import WhatIfLimits, what_if
from pyscheduler.testing.recording import RecordingRM

QUEUES = 20
APPS = 2_000
CONFIG = "partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: \"*\"\n        queues:\n" + \
    "".join(f"          - name: q{i}\n" for i in range(QUEUES))


def build(nodes: int, running: int, pending: int) -> ClusterContext:
    context = ClusterContext(clock=ManualClock())
    proxy = RMProxy(context)
    proxy.register_resource_manager(si.RegisterResourceManagerRequest(
        rm_id="bench", policy_group="queues", config=CONFIG), RecordingRM())
    # Each node holds running / nodes allocations of 3,000 and has 64,000: room for small asks.
    proxy.update_node(si.NodeRequest(rm_id="bench", nodes=tuple(
        si.NodeInfo(node_id=f"n{i}", action=si.NodeAction.CREATE,
                    schedulable_resource=Resource({"memory": 64_000, "vcore": 64_000}))
        for i in range(nodes))))
    proxy.update_application(si.ApplicationRequest(rm_id="bench", new=tuple(
        si.AddApplicationRequest(application_id=f"app-{a}", queue_name=f"root.q{a % QUEUES}", partition_name="default",
                                 ugi=si.UserGroupInformation(user="bench"))
        for a in range(APPS))))

    def send(allocations: list[si.Allocation]) -> None:
        for start in range(0, len(allocations), 5_000):
            proxy.update_allocation(si.AllocationRequest(rm_id="bench", allocations=tuple(allocations[start:start + 5_000])))

    send([si.Allocation(allocation_key=f"r{i}", application_id=f"app-{i % APPS}", partition_name="default",
                        node_id=f"n{i % nodes}", resource_per_alloc=Resource({"memory": 3_000, "vcore": 3_000}))
          for i in range(running)])
    send([si.Allocation(allocation_key=f"p{i}", application_id=f"app-{i % APPS}", partition_name="default",
                        resource_per_alloc=Resource({"memory": 63_000, "vcore": 1_000}))
          for i in range(pending)])
    return context


#: The application asked about: 10 asks of ``memory`` (1,000 fits on every node of the default
#: state; 70,000 on none).
FITS_MEMORY = 1_000
TOO_LARGE_MEMORY = 70_000


def timings(context: ClusterContext, memory: int, runs: int) -> tuple[list[float], dict[str, Any]]:
    """The wall seconds of ``runs`` what-ifs for an application of 10 asks of ``memory`` (with a
    budget no run reaches, so the full answer is timed), and the last answer."""
    body = {"application": {"queueName": "root.q3", "user": "x"},
            "asks": [{"resource": {"memory": memory, "vcore": 100}, "count": 10}]}
    times = []
    answer: dict[str, Any] = {}
    for _ in range(runs):
        started = time.perf_counter()
        answer = what_if(context, "default", body, WhatIfLimits(budget_seconds=600, max_budget_seconds=600))
        times.append(time.perf_counter() - started)
    return times, answer


def measure(context: ClusterContext, memory: int, runs: int = 3) -> tuple[float, dict[str, Any]]:
    times, answer = timings(context, memory, runs)
    return statistics.median(times), answer


def main(argv: list[str]) -> None:
    nodes, running, pending = (int(a) for a in (argv + ["5000", "100000", "0"][len(argv):])[:3])
    started = time.perf_counter()
    context = build(nodes, running, pending)
    print(f"state: {nodes:,} nodes, {running:,} running allocations, {pending:,} pending asks "
          f"(built in {time.perf_counter() - started:.1f} s)")
    for label, memory in (("fits (placed now)", FITS_MEMORY), ("too large (waits)", TOO_LARGE_MEMORY)):
        median, answer = measure(context, memory)
        print(f"what-if, {label}: median {median:.2f} s; placedNow={answer['placedNow']} cycles={answer['cycles']} "
              f"lock {answer['lockSeconds'] * 1000:.0f} ms")


if __name__ == "__main__":
    main(sys.argv[1:])
