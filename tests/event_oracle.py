"""YuniKorn's authoritative event sequence (events.md, "Authoritative event-sequence oracle",
from yunikorn-core's TestApplicationHistoryTracking): the configuration, the expected
(type, change type, detail, objectID, referenceID, message) tuples of each step, and readers
of the batch body and a stream. Shared by the oracle tests driven through the RM interface,
through the scheduling cycle, and over HTTP (tests/web/oracle_rm.py in the served process).
"""

from __future__ import annotations

import json
from typing import Any

from pyscheduler.events.types import EventChangeDetail as D
from pyscheduler.events.types import EventChangeType as C
from pyscheduler.events.types import EventRecordType as T

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
