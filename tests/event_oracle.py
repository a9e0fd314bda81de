"""YuniKorn's authoritative event sequence (events.md, "Authoritative event-sequence oracle",
from yunikorn-core's TestApplicationHistoryTracking): the configuration, the expected
(type, change type, detail, objectID, referenceID, message) tuples of each step, and readers
of the batch body and a stream. Shared by the oracle tests driven through the RM interface,
through the scheduling cycle, and over HTTP (tests/web/oracle_rm.py in the served process).
"""

from __future__ import annotations

import json
from typing import Any

from pyscheduler.si.events import EventChangeDetail as D
from pyscheduler.si.events import EventChangeType as C
from pyscheduler.si.events import EventRecordType as T
from pyscheduler.common.resources import Resource
from pyscheduler.si import messages as si

RM_ID = "rm:123"
CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: singleleaf
"""

STEPS: dict[str, list[tuple[int, int, int, str, str, str]]] = {
    "register": [
        (T.QUEUE, C.ADD, D.DETAILS_NONE, "root", "", ""),
        (T.QUEUE, C.ADD, D.DETAILS_NONE, "root.singleleaf", "", ""),
    ],
    "node": [
        (T.NODE, C.SET, D.NODE_SCHEDULABLE, "node-1:1234", "", "schedulable: true"),
        (T.QUEUE, C.SET, D.QUEUE_MAX, "root", "", ""),
        (T.NODE, C.ADD, D.DETAILS_NONE, "node-1:1234", "", "Node added to the scheduler"),
    ],
    "app": [
        (T.APP, C.ADD, D.APP_NEW, "app-1", "", ""),
        (T.QUEUE, C.ADD, D.QUEUE_APP, "root.singleleaf", "app-1", ""),
    ],
    "ask": [
        (T.APP, C.SET, D.APP_ACCEPTED, "app-1", "", ""),
        (T.APP, C.ADD, D.APP_REQUEST, "app-1", "alloc-1", ""),
        (T.NODE, C.ADD, D.NODE_ALLOC, "node-1:1234", "alloc-1", ""),
        (T.APP, C.SET, D.APP_RUNNING, "app-1", "", ""),
        (T.USERGROUP, C.ADD, D.UG_USER_RESOURCE, "testuser", "root.singleleaf", ""),
        (T.APP, C.ADD, D.APP_ALLOC, "app-1", "alloc-1", ""),
    ],
    "release": [
        (T.USERGROUP, C.REMOVE, D.UG_USER_RESOURCE, "testuser", "root.singleleaf", ""),
        (T.APP, C.SET, D.APP_COMPLETING, "app-1", "", ""),
        (T.APP, C.REMOVE, D.ALLOC_CANCEL, "app-1", "alloc-1", ""),
        (T.NODE, C.REMOVE, D.NODE_ALLOC, "node-1:1234", "alloc-1", ""),
    ],
}


def tuples(records: list[dict]) -> list[tuple]:
    """(type, change type, detail, objectID, referenceID, message) of wire records."""
    return [
        (
            r.get("type", 0),
            r.get("eventChangeType", 0),
            r.get("eventChangeDetail", 0),
            r.get("objectID", ""),
            r.get("referenceID", ""),
            r.get("message", ""),
        )
        for r in records
    ]


class Oracle:
    def __init__(self, proxy: Any) -> None:
        self.events = proxy.context.event_system
        self.stream = self.events.subscribe(count=1000)

    def batch(self) -> list[dict]:
        assert self.events.flush(5.0)
        body = json.loads(self.events.batch_body(0, 10_000))
        assert body["InstanceUUID"] == self.events.instance_uuid
        return body["EventRecords"] or []

    def stream_lines(self, n: int) -> list[dict]:
        out: list[dict] = []
        buffered = b""
        for _ in range(50):
            chunk = self.stream.next(max_events=n - len(out), timeout=0.2)
            assert chunk is not None, self.stream.closed_reason
            buffered += chunk
            out = [json.loads(line) for line in buffered.splitlines()]
            if len(out) >= n:
                break
        assert len(out) == n, f"stream delivered {len(out)} of {n}"
        assert all("InstanceUUID" not in line for line in out)
        return out


def drive_first_steps(proxy: Any, rm: Any, oracle: Oracle) -> None:
    """Steps 1 to 3 (register, a node, an application) through the RM interface, each checked
    in the batch body and in the stream; the two RM-driven oracle tests share them."""
    # 1. register: the two configured queues.
    step1 = STEPS["register"]
    batch = oracle.batch()
    assert tuples(batch) == step1
    assert tuples(oracle.stream_lines(2)) == step1

    # 2. a node: schedulable, root's max follows the capacity, node added.
    capacity = Resource({"memory": 100_000_000, "vcore": 20_000})
    proxy.update_node(si.NodeRequest(nodes=(si.NodeInfo(node_id="node-1:1234", action=si.NodeAction.CREATE,
                                                        schedulable_resource=capacity),), rm_id=RM_ID))
    rm.wait_for_accepted_node("node-1:1234")
    step2 = STEPS["node"]
    batch = oracle.batch()
    assert len(batch) == 5
    assert tuples(batch[2:]) == step2
    assert batch[3]["resource"] == {"resources": {"memory": {"value": 100_000_000}, "vcore": {"value": 20_000}}}
    assert tuples(oracle.stream_lines(3)) == step2

    # 3. an application in root.singleleaf.
    proxy.update_application(si.ApplicationRequest(new=(si.AddApplicationRequest(
        application_id="app-1", queue_name="root.singleleaf", partition_name="default",
        ugi=si.UserGroupInformation(user="testuser", groups=("testgroup",))),), rm_id=RM_ID))
    rm.wait_for_accepted_app("app-1")
    step3 = STEPS["app"]
    batch = oracle.batch()
    assert len(batch) == 7
    assert tuples(batch[5:]) == step3
    assert tuples(oracle.stream_lines(2)) == step3


def submit_ask(proxy: Any) -> Resource:
    """Step 4's ask: alloc-1 of app-1, memory 10,000,000 and vcore 1,000 (returned)."""
    ask = Resource({"memory": 10_000_000, "vcore": 1000})
    proxy.update_allocation(si.AllocationRequest(allocations=(si.Allocation(
        allocation_key="alloc-1", application_id="app-1", partition_name="default", resource_per_alloc=ask),),
        rm_id=RM_ID))
    return ask
