"""An in-process reporter plugin for the node reporter agent's tests (tests/test_k8s_reporters.py),
loaded the way a user's is: ``pyscheduler reporter-agent --plugin k8s_reporter_plugin:Inventory``
with this directory on ``PYTHONPATH``; the class is the factory, called with the node's name.

On node ``kwok-N`` it reports, about Katalyst's ``CustomNodeResource``: the label
``pool=pool-N`` and ``tier=inventory`` (the gRPC plugin of the tests reports ``tier`` too and,
registered later, wins), ``reclaimed cpu 2``, the property ``disk=ssd``, the topology policy
``None`` (the gRPC plugin's replaces it). And what an agent must leave out while writing the
rest: a label key Kubernetes refuses, a value that is not JSON, a field the schema does not
have, and content about another node.
"""

from __future__ import annotations

import json

from pyscheduler.reporter.content import FieldType, ReportContent, ReportField
from pyscheduler.reporter.node_fields import CNR
from pyscheduler.reporter.plugin import NodeReport

#: The label key the API server would refuse (a space and a '!').
BAD_LABEL = "bad key!"


def pool_of(node: str) -> str:
    return f"pool-{node.rsplit('-', 1)[-1]}"


def _field(part: FieldType, name: str, value: object) -> ReportField:
    return ReportField(part, name, json.dumps(value).encode())


class Inventory:
    name = "inventory"

    def __init__(self, node: str) -> None:
        self.node = node

    def report(self) -> NodeReport:
        fields = (
            _field(FieldType.METADATA, "Labels", {"pool": pool_of(self.node), "tier": "inventory", BAD_LABEL: "x"}),
            _field(FieldType.STATUS, "ReclaimedResourceCapacity", {"cpu": "2"}),
            _field(FieldType.SPEC, "NodeResourceProperties", [{"propertyName": "disk", "propertyValues": ["ssd"]}]),
            _field(FieldType.STATUS, "TopologyPolicy", "None"),
            ReportField(FieldType.STATUS, "Occupied", b"{not json"),
            _field(FieldType.SPEC, "NoSuchField", 1),
        )
        elsewhere = (_field(FieldType.METADATA, "Labels", {"pool": "elsewhere"}),)
        return {self.node: [ReportContent(CNR, fields)], "another-node": [ReportContent(CNR, elsewhere)]}
