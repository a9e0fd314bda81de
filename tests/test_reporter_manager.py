"""The reporter manager with in-process plugins, driving a real core through the RM interface:
rounds, registration order, last good reports, a hanging plugin, the grace period, one update
per changed node and none for an unchanged one (shared/spec/reporter.md's behaviours 10, 13,
14, 15 and the issue's liveness rules)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import pytest
from rm_helpers import World

from pyscheduler.common.resources import Resource
from pyscheduler.reporter.content import FieldType, GroupVersionKind, ReportContent, ReportField
from pyscheduler.reporter.manager import ManagerSettings, ReporterError, ReporterManager
from pyscheduler.reporter.node_fields import CNR, NODE
from pyscheduler.reporter.plugin import NodeReport
from pyscheduler.si import messages as si

NODES = ("n1", "n2")
GVK_OTHER = GroupVersionKind("example.com", "v1", "Other")


def labels(**values: str) -> ReportContent:
    return ReportContent(NODE, (ReportField(FieldType.METADATA, "Labels", json.dumps(values).encode()),))


class Plugin:
    """Reports what it is told; counts its calls; can be made to fail or hang."""

    def __init__(self, name: str, report: NodeReport | None = None) -> None:
        self.name = name
        self.content: NodeReport = report or {}
        self.calls = 0
        self.fail = False
        self.hang = threading.Event()
        self.hanging = False

    def report(self) -> NodeReport:
        self.calls += 1
        if self.hanging:
            self.hang.wait(30)
        if self.fail:
            raise RuntimeError("plugin broke")
        return self.content


@pytest.fixture
def w() -> Iterator[World]:
    world = World()
    for node_id in NODES:
        world.add_node(node_id, memory=1000, vcore=100, rack="rm-rack")
    yield world
    world.close()


def manager(world: World, **settings: object) -> ReporterManager:
    return ReporterManager(world.proxy, world.rm_id, ManagerSettings(**settings), clock=world.clock)  # type: ignore[arg-type]


def attributes(world: World, node_id: str) -> dict[str, str]:
    return dict(world.partition().nodes[node_id].attributes)


def test_plugins_merge_in_registration_order_into_one_update_per_node(w: World) -> None:
    m = manager(w)
    m.register(Plugin("zones", {"n1": [labels(zone="z1", rack="p-rack")], "n2": [labels(zone="z2")]}))
    m.register(Plugin("override", {"n1": [labels(zone="z9")]}))
    result = m.run_round()
    assert result.updated == ("n1", "n2") and result.polled == 2 and result.failed == 0
    # The RM's own attribute wins a shared key; the later plugin wins over the earlier.
    assert attributes(w, "n1") == {"rack": "rm-rack", "zone": "z9"}
    assert attributes(w, "n2") == {"rack": "rm-rack", "zone": "z2"}
    assert m.run_round().updated == (), "nothing changed: no update"


def test_a_failing_plugin_keeps_contributing_its_last_good_report(w: World) -> None:
    m = manager(w)
    plugin = Plugin("p", {"n1": [labels(gpu="a100")]})
    m.register(plugin)
    m.run_round()
    plugin.fail = True
    result = m.run_round()
    assert result.failed == 1 and attributes(w, "n1")["gpu"] == "a100"
    [state] = m.plugins()
    assert state.failures == 1 and "plugin broke" in state.last_error and state.polls == 2


def test_a_hanging_plugin_delays_no_other(w: World) -> None:
    m = manager(w, timeout=0.3)
    slow = Plugin("slow", {"n1": [labels(slow="1")]})
    fast = Plugin("fast", {"n2": [labels(fast="1")]})
    m.register(slow)
    m.register(fast)
    m.run_round()
    slow.hanging = True
    fast.content = {"n2": [labels(fast="2")]}
    began = time.monotonic()
    result = m.run_round()
    assert time.monotonic() - began < 5 and result.failed == 1
    assert attributes(w, "n2")["fast"] == "2" and attributes(w, "n1")["slow"] == "1"
    # While it still hangs it is not called again; the others go on.
    fast.content = {"n2": [labels(fast="3")]}
    calls = slow.calls
    m.run_round()
    assert slow.calls == calls and attributes(w, "n2")["fast"] == "3"
    slow.hang.set()


def test_a_deregistered_plugin_s_content_stays_for_the_grace_period(w: World) -> None:
    m = manager(w, grace=60.0)
    m.register(Plugin("gone", {"n1": [labels(gone="yes")]}))
    m.run_round()
    m.deregister("gone")
    w.clock.advance(59.0)
    m.run_round()
    assert attributes(w, "n1")["gone"] == "yes"
    w.clock.advance(1.0)
    assert m.run_round().updated == ("n1",)
    assert "gone" not in attributes(w, "n1") and m.plugins() == []


def test_a_field_no_longer_reported_leaves_the_node(w: World) -> None:
    m = manager(w)
    plugin = Plugin("p", {"n1": [labels(a="1", b="2")]})
    m.register(plugin)
    m.run_round()
    plugin.content = {"n1": [labels(a="1")]}
    m.run_round()
    assert attributes(w, "n1") == {"rack": "rm-rack", "a": "1"}
    plugin.content = {}
    m.run_round()
    assert attributes(w, "n1") == {"rack": "rm-rack"}


def test_capacity_and_occupied_reach_the_node(w: World) -> None:
    m = manager(w)
    status = (ReportField(FieldType.STATUS, "Resources", b'{"allocatable": {"cpu": "2", "memory": "2000"}}'),
              ReportField(FieldType.STATUS, "Occupied", b'{"memory": "500"}'))
    plugin = Plugin("agent", {"n1": [ReportContent(CNR, status)]})
    m.register(plugin)
    m.run_round()
    node = w.partition().nodes["n1"]
    assert node.total == Resource({"vcore": 2000, "memory": 2000})
    assert node.available == Resource({"vcore": 2000, "memory": 1500})
    plugin.content = {"n1": [ReportContent(CNR, status[:1])]}
    m.run_round()
    assert node.available == Resource({"vcore": 2000, "memory": 2000}), "occupied no longer reported"
    plugin.content = {}
    m.run_round()
    assert node.total == node.available == Resource({"vcore": 100, "memory": 1000}), "the RM's capacity again"


def _capacity(cpu: str, memory: str) -> ReportContent:
    value = json.dumps({"allocatable": {"cpu": cpu, "memory": memory}}).encode()
    return ReportContent(CNR, (ReportField(FieldType.STATUS, "Resources", value),))


def test_the_rm_s_capacity_comes_back_when_no_plugin_reports_one(w: World) -> None:
    """Issue 32's bug: a reported capacity stayed on the node after every plugin was gone."""
    m = manager(w, grace=10.0)
    rm_capacity = w.partition().nodes["n1"].total
    plugin = Plugin("agent", {"n1": [_capacity("2", "2000")]})
    m.register(plugin)
    m.run_round()
    assert w.partition().nodes["n1"].total == Resource({"vcore": 2000, "memory": 2000})
    # No longer reported by the plugin: the RM's capacity again.
    plugin.content = {"n1": [labels(still="here")]}
    m.run_round()
    assert w.partition().nodes["n1"].total == rm_capacity
    # Reported again, then the plugin goes and its grace period ends: the RM's capacity again.
    plugin.content = {"n1": [_capacity("3", "3000")]}
    m.run_round()
    assert w.partition().nodes["n1"].total == Resource({"vcore": 3000, "memory": 3000})
    m.deregister("agent")
    w.clock.advance(10.0)
    assert m.run_round().updated == ("n1",)
    assert w.partition().nodes["n1"].total == rm_capacity and m.plugins() == []


def test_a_capacity_the_rm_changed_meanwhile_is_the_one_that_comes_back(w: World) -> None:
    m = manager(w)
    plugin = Plugin("agent", {"n1": [_capacity("2", "2000")]})
    m.register(plugin)
    m.run_round()
    # The RM's own update while a reported capacity is in force (it replaces it, as any RM
    # update of the capacity does); then the report changes and later leaves.
    w.nodes(si.NodeInfo(node_id="n1", action=si.NodeAction.UPDATE, schedulable_resource=Resource({"memory": 4000,
                                                                                                   "vcore": 400})))
    plugin.content = {"n1": [_capacity("5", "5000")]}
    m.run_round()
    assert w.partition().nodes["n1"].total == Resource({"vcore": 5000, "memory": 5000})
    plugin.content = {}
    m.run_round()
    assert w.partition().nodes["n1"].total == Resource({"vcore": 400, "memory": 4000})


def test_bad_content_is_rejected_per_field_and_recorded(w: World) -> None:
    m = manager(w)
    other_kind = ReportContent(GVK_OTHER, (ReportField(FieldType.STATUS, "Whatever", b"1"),))
    bad = Plugin("bad", {"n1": [other_kind, labels(ok="yes"),
                                ReportContent(NODE, (ReportField(FieldType.METADATA, "Labels", b"{oops"),))],
                         "ghost": [labels(x="1")]})
    m.register(bad)
    m.run_round()
    assert attributes(w, "n1")["ok"] == "yes"
    reasons = sorted(r.reason.split(":")[0] for r in m.plugins()[0].rejected)
    assert reasons == ["no reporter for example.com/v1, Kind=Other", "not JSON", "unknown node 'ghost'"]


def test_garbage_from_a_plugin_never_blocks_the_others(w: World) -> None:
    m = manager(w)
    garbage = Plugin("garbage")
    garbage.content = ["not", "a", "mapping"]  # type: ignore[assignment]
    m.register(garbage)
    m.register(Plugin("good", {"n1": [labels(good="1")]}))
    result = m.run_round()
    assert result.failed == 1 and attributes(w, "n1")["good"] == "1"


def test_registration_rules(w: World) -> None:
    m = manager(w, enabled=("*", "-off"))
    m.register(Plugin("p"))
    with pytest.raises(ReporterError, match="already registered"):
        m.register(Plugin("p"))
    with pytest.raises(ReporterError, match="needs a name"):
        m.register(Plugin(""))
    off = Plugin("off", {"n1": [labels(off="1")]})
    m.register(off)
    m.run_round()
    assert off.calls == 0 and "off" not in attributes(w, "n1")
    # A stopped plugin registering again keeps its place and its report.
    m.deregister("p")
    m.register(Plugin("p"))
    assert [s.name for s in m.plugins()] == ["p", "off"]


def test_a_watching_plugin_s_push_applies_at_once(w: World) -> None:
    m = manager(w)
    m.register(Plugin("watcher", {"n1": [labels(v="1")]}))
    m.run_round()
    assert m.push("watcher", {"n1": [labels(v="2")]}) == ("n1",)
    assert attributes(w, "n1")["v"] == "2"
    assert m.push("unknown", {"n1": [labels(v="3")]}) == ()
    assert m.push("watcher", "garbage") == () and m.plugins()[0].failures == 1  # type: ignore[arg-type]


def test_a_started_manager_runs_rounds_until_stopped(w: World) -> None:
    m = manager(w, period=0.02)
    plugin = Plugin("p", {"n1": [labels(live="1")]})
    m.register(plugin)
    m.start()
    try:
        deadline = time.monotonic() + 10
        while "live" not in attributes(w, "n1") and time.monotonic() < deadline:
            time.sleep(0.01)
        assert attributes(w, "n1")["live"] == "1"
        while m.rounds < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert m.rounds >= 3
    finally:
        m.stop()
    rounds = m.rounds
    time.sleep(0.1)
    assert m.rounds == rounds, "no round after stop"


# -- the checkpoint ------------------------------------------------------------------------------------


def test_a_restart_restores_every_plugin_s_last_report(w: World, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "reporter" / "checkpoint.json")
    first = manager(w, checkpoint=path)
    first.register(Plugin("zones", {"n1": [labels(zone="z1")]}))
    first.register(Plugin("binary", {"n2": [ReportContent(NODE, (ReportField(FieldType.METADATA, "Labels", b"\xff\x00"),))]}))
    first.run_round()
    # A new manager (a restarted scheduler) on the same checkpoint: both plugins, stopped,
    # their reports merged again for the grace period.
    second = manager(w, checkpoint=path, grace=30.0)
    states = second.plugins()
    assert [(s.name, s.state) for s in states] == [("zones", "stopped"), ("binary", "stopped")]
    assert states[0].report == {"n1": [labels(zone="z1")]}
    assert states[1].report["n2"][0].fields[0].value == b"\xff\x00"  # type: ignore[index]
    second.register(Plugin("zones", {"n1": [labels(zone="z2")]}))
    second.run_round()
    assert attributes(w, "n1")["zone"] == "z2"


def test_a_corrupt_checkpoint_is_a_warning_and_an_empty_start(w: World, tmp_path, caplog) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "checkpoint.json"
    first = manager(w, checkpoint=str(path))
    first.register(Plugin("zones", {"n1": [labels(zone="z1")]}))
    first.run_round()
    document = json.loads(path.read_text())
    document["data"]["plugins"][0]["name"] = "tampered"
    path.write_text(json.dumps(document))
    assert manager(w, checkpoint=str(path)).plugins() == []
    assert "checksum mismatch" in caplog.text
    path.write_text("{not json")
    assert manager(w, checkpoint=str(path)).plugins() == []
    assert "unreadable" in caplog.text


def test_the_checkpoint_is_written_only_when_a_report_changed(w: World, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "checkpoint.json"
    m = manager(w, checkpoint=str(path))
    plugin = Plugin("p", {"n1": [labels(a="1")]})
    m.register(plugin)
    m.run_round()
    written = path.stat().st_mtime_ns
    time.sleep(0.01)
    m.run_round()
    assert path.stat().st_mtime_ns == written
    plugin.content = {"n1": [labels(a="1")]}  # new objects, equal values: nothing to write
    m.run_round()
    assert path.stat().st_mtime_ns == written
    plugin.content["n1"][0] = labels(a="2")  # type: ignore[index]  # changed in place
    m.run_round()
    assert path.stat().st_mtime_ns != written


def test_an_in_process_watching_plugin_is_followed_from_registration(w: World) -> None:
    release = threading.Event()

    class Watcher(Plugin):
        def watch(self) -> Iterator[NodeReport]:
            yield {"n1": [labels(watched="1")]}
            release.wait(10)
            yield {"n1": [labels(watched="2")]}

    m = manager(w)
    m.register(Watcher("watcher"))
    deadline = time.monotonic() + 10
    while attributes(w, "n1").get("watched") != "1" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert attributes(w, "n1")["watched"] == "1", "applied without a round"
    release.set()
    while attributes(w, "n1").get("watched") != "2" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert attributes(w, "n1")["watched"] == "2"


def test_a_plugin_that_changes_its_own_objects_in_place_is_still_seen(w: World) -> None:
    m = manager(w)
    plugin = Plugin("mutator", {"n1": [labels(v="1")], "n2": (labels(v="1"),)})  # a list and a tuple
    m.register(plugin)
    m.run_round()
    plugin.content["n1"][0] = labels(v="2")  # type: ignore[index]
    assert m.run_round().updated == ("n1",)
    assert attributes(w, "n1")["v"] == "2" and attributes(w, "n2")["v"] == "1"
    assert m.run_round().updated == ()


def test_a_converter_moves_content_to_the_kind_the_schema_reads(w: World) -> None:
    # Katalyst's behaviour 3: a converter registered for GVK1 that returns GVK2 moves the fields.
    m = manager(w)
    legacy = ReportContent(GVK_OTHER, (ReportField(FieldType.METADATA, "Labels", b'{"legacy": "yes"}'),))
    m.register(Plugin("old", {"n1": [legacy], "n2": [legacy]}))
    m.run_round()
    assert "legacy" not in attributes(w, "n1")
    assert [r.reason for r in m.plugins()[0].rejected] == ["no reporter for example.com/v1, Kind=Other"] * 2

    def convert(content: ReportContent) -> ReportContent:
        return ReportContent(CNR, content.fields)

    m.add_converter(GVK_OTHER, convert)
    assert m.run_round().updated == ("n1", "n2"), "every node merged again with the converter"
    assert attributes(w, "n1")["legacy"] == "yes" and m.plugins()[0].rejected == []


def test_a_failing_converter_rejects_only_its_content(w: World) -> None:
    m = manager(w)
    legacy = ReportContent(GVK_OTHER, (ReportField(FieldType.METADATA, "Labels", b'{"legacy": "yes"}'),))
    m.register(Plugin("old", {"n1": [legacy, labels(fine="1")]}))

    def broken(content: ReportContent) -> ReportContent:
        raise ValueError("cannot read this version")

    m.add_converter(GVK_OTHER, broken)
    m.run_round()
    assert attributes(w, "n1")["fine"] == "1" and "legacy" not in attributes(w, "n1")
    assert [r.reason for r in m.plugins()[0].rejected] == [
        "converter for example.com/v1, Kind=Other failed: ValueError: cannot read this version"]
    m.add_converter(GVK_OTHER, lambda content: "nonsense")  # type: ignore[arg-type,return-value]
    m.run_round()
    assert [r.reason for r in m.plugins()[0].rejected] == ["converter for example.com/v1, Kind=Other returned str"]
