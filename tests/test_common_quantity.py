"""Kubernetes quantities (pyscheduler.common.quantity): the one parser, read the same way from a
Node by the Kubernetes shim (pyscheduler_k8s.nodes) and from a node report by the reporter
manager (pyscheduler.reporter.node_fields), "1.5" CPU included (issue 32: the reporter used to
refuse it)."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from pyscheduler.common import quantity
from pyscheduler.common.quantity import QuantityError, core_resources, parse_quantity, to_int, to_milli
from pyscheduler.common.resources import Resource
from pyscheduler.reporter.content import FieldType, ReportContent, ReportField
from pyscheduler.reporter.manager import NodeUpdate, ReporterManager
from pyscheduler.reporter.merge import Reported, merge
from pyscheduler.reporter.node_fields import CNR, NODE_SCHEMA, node_facts


@pytest.mark.parametrize(("text", "value"), [
    ("1", Decimal(1)), ("100m", Decimal("0.1")), ("1.5", Decimal("1.5")), ("1Ki", Decimal(1024)),
    ("1.5Gi", Decimal(3 << 29)), ("2k", Decimal(2000)), ("3M", Decimal(3_000_000)), ("1e3", Decimal(1000)),
    ("5E-1", Decimal("0.5")), ("129e6", Decimal(129_000_000)), (".5", Decimal("0.5")), ("+7", Decimal(7)),
    ("250u", Decimal("0.00025")), ("1n", Decimal("0.000000001")), ("1Ei", Decimal(1 << 60)),
])
def test_quantities_parse_exactly(text: str, value: Decimal) -> None:
    assert parse_quantity(text) == value


def test_quantities_round_up_as_kubernetes_does() -> None:
    assert to_milli("100m") == 100 and to_milli("1") == 1000 and to_milli("0.0001") == 1 and to_milli("1n") == 1
    assert to_int("1.5") == 2 and to_int("1Mi") == 1 << 20 and to_int("1") == 1 and to_int("0") == 0


@pytest.mark.parametrize("text", ["", "abc", "1.2.3", "5Q", "1e999", "--1", "1 Gi", "Mi"])
def test_bad_quantities_say_so(text: str) -> None:
    with pytest.raises(QuantityError, match="quantity"):
        parse_quantity(text)


def test_quantities_beyond_int64_are_refused_not_saturated() -> None:
    with pytest.raises(QuantityError, match="int64"):
        to_int("16Ei")  # 2^64
    with pytest.raises(QuantityError, match="int64"):
        to_milli("9223372036854775807")


def test_the_shim_s_module_is_the_same_parser() -> None:
    from pyscheduler_k8s import quantity as shim_quantity

    for name in ("QuantityError", "parse_quantity", "to_int", "to_milli", "INT64_MAX"):
        assert getattr(shim_quantity, name) is getattr(quantity, name), name


#: A Node's allocatable as Kubernetes writes it, every form of the grammar in it.
ALLOCATABLE = {"cpu": "1.5", "memory": "1.5Gi", "pods": "110", "example.com/gpu": "2",
               "ephemeral-storage": "100e9", "hugepages-2Mi": "0", "example.com/fraction": "500m"}


def _report_capacity(allocatable: dict[str, Any]) -> Resource | None:
    fields = [ReportField(FieldType.STATUS, "Resources", json.dumps({"allocatable": allocatable}).encode())]
    merged = merge([Reported("plugin", fields)], NODE_SCHEMA)
    assert merged.rejected == [], merged.rejected
    return node_facts(merged).capacity


def test_a_node_and_a_node_report_read_the_same_quantities_the_same() -> None:
    from pyscheduler_k8s.nodes import node_view

    by_shim = node_view({"metadata": {"name": "n1"}, "status": {"allocatable": ALLOCATABLE}}).capacity
    by_reporter = _report_capacity(ALLOCATABLE)
    assert by_reporter is not None
    # The shim leaves zero quantities out of a node's capacity (a zero adds nothing either way).
    assert {k: v for k, v in by_reporter.items() if v} == by_shim == {k: v for k, v in core_resources(ALLOCATABLE).items() if v}
    assert by_shim["vcore"] == 1500 and by_shim["memory"] == 3 << 29 and by_shim["example.com/fraction"] == 1


def test_a_node_report_with_one_and_a_half_cpus_reaches_the_node() -> None:
    """Through the manager: "1.5" CPU is accepted, not rejected as it was."""

    class Sink:
        updates: list[NodeUpdate] = []

        def known_nodes(self) -> dict[str, str]:
            return {"node-1": "rm"}

        def send(self, updates: Any) -> None:
            self.updates.extend(updates)

    class Plugin:
        name = "capacity"

        def report(self) -> Any:
            value = json.dumps({"allocatable": {"cpu": "1.5", "memory": "2Gi"}}).encode()
            return {"node-1": [ReportContent(CNR, (ReportField(FieldType.STATUS, "Resources", value),))]}

    sink = Sink()
    manager = ReporterManager(sink=sink)
    manager.register(Plugin())
    try:
        manager.run_round()
    finally:
        manager.stop()
    assert [s.rejected for s in manager.plugins()] == [[]]
    assert [(u.node_id, u.facts.capacity) for u in sink.updates] == [
        ("node-1", Resource({"vcore": 1500, "memory": 2 << 30}))]


@pytest.mark.parametrize("bad", ["lots", "1.2.3", "16Ei", True, None])
def test_a_quantity_the_parser_refuses_is_refused_by_a_node_report_too(bad: Any) -> None:
    fields = [ReportField(FieldType.STATUS, "Resources", json.dumps({"allocatable": {"memory": bad}}).encode())]
    merged = merge([Reported("plugin", fields)], NODE_SCHEMA)
    assert [r.field for r in merged.rejected] == ["Resources"]
    assert node_facts(merged).capacity is None
