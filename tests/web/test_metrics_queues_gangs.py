"""The queue, gang and REST request collectors over a real core (tests/rm_helpers.World): each
value is read from the state when Prometheus scrapes and follows it as it changes."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from flask import Flask
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector
from rm_helpers import World, res

from pyscheduler.scheduler.cycle import SchedulingCycle
from pyscheduler.si import messages as si
from pyscheduler_web.metrics import Metrics, MetricsInputs
from pyscheduler_web.metrics.gangs import GangMetrics
from pyscheduler_web.metrics.queues import QueueMetrics
from pyscheduler_web.metrics.rest import UNMATCHED, instrument_requests

QUEUES = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
            resources: {guaranteed: {vcore: 2, memory: 200}, max: {vcore: 8}}
          - name: gang
            properties: {application.sort.policy: fifo}
          - name: parent
            parent: true
            queues:
              - name: deep
"""
ONE = {"vcore": 1000}
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@pytest.fixture
def w() -> Iterator[World]:
    made = World(QUEUES)
    yield made
    made.close()


def _samples(collector: Collector) -> Samples:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    text = generate_latest(registry).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def _inputs(w: World) -> MetricsInputs:
    return MetricsInputs(SimpleNamespace(context=w.context), None)  # type: ignore[arg-type]


def _queue(path: str, state: str, resource: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    return ("yunikorn_queue_resource", (("cluster", "rm-1"), ("partition", "default"), ("queue", path),
                                        ("resource", resource), ("state", state)))


def test_queue_resources_follow_asks_and_allocations(w: World) -> None:
    collector = QueueMetrics(_inputs(w))
    w.add_node("node-1", memory=1000, vcore=10_000)
    w.add_app("app-1", "root.a")
    before = _samples(collector)
    assert before[_queue("root.a", "guaranteed", "vcore")] == 2000
    assert before[_queue("root.a", "guaranteed", "memory")] == 200
    assert before[_queue("root.a", "max", "vcore")] == 8000
    assert _queue("root.a", "allocated", "vcore") not in before  # nothing allocated: no series
    assert _queue("root.b", "max", "vcore") not in before
    w.ask("ask-1", "app-1", res(**ONE))
    w.ask("ask-2", "app-1", res(**ONE))
    asked = _samples(collector)
    assert asked[_queue("root.a", "pending", "vcore")] == 2000
    assert asked[_queue("root", "pending", "vcore")] == 2000  # a parent shows its children's
    SchedulingCycle(w.context).run()
    SchedulingCycle(w.context).run()  # one allocation per cycle
    placed = _samples(collector)
    assert placed[_queue("root.a", "allocated", "vcore")] == 2000
    assert placed[_queue("root.a", "pending", "vcore")] == 0 or _queue("root.a", "pending", "vcore") not in placed
    app_labels = (("cluster", "rm-1"), ("partition", "default"), ("queue", "root.a"))
    assert placed[("yunikorn_queue_app", (*app_labels, ("state", "running")))] == 1
    assert placed[("pyscheduler_queue_metrics_omitted", (("cluster", "rm-1"), ("partition", "default")))] == 0


def test_queues_past_the_limit_are_left_out_breadth_first_and_counted(w: World) -> None:
    samples = _samples(QueueMetrics(_inputs(w), max_queues=3))
    queues = {dict(labels)["queue"] for name, labels in samples if name == "yunikorn_queue_resource"}
    # root, then its children in name order: a, gang; parent and parent.deep left out.
    assert queues <= {"root", "root.a", "root.gang"} and "root.a" in queues
    assert samples[("pyscheduler_queue_metrics_omitted", (("cluster", "rm-1"), ("partition", "default")))] == 2


def _gang_app(w: World) -> None:
    w.apps(si.AddApplicationRequest(
        application_id="gang-1", queue_name="root.gang", partition_name="default",
        ugi=si.UserGroupInformation(user="alice"), placeholder_ask=res(vcore=2000)))


def test_gang_counters_and_applications_follow_the_placeholders(w: World) -> None:
    collector = GangMetrics(_inputs(w))
    where = (("cluster", "rm-1"), ("partition", "default"))

    def counter(field: str, samples: Samples) -> float:
        return samples[(f"pyscheduler_gang_placeholders_{field}_total", where)]

    empty = _samples(collector)
    assert [counter(f, empty) for f in ("asked", "allocated", "replaced", "timed_out")] == [0, 0, 0, 0]
    w.add_node("node-1", memory=1000, vcore=10_000)
    _gang_app(w)
    for key in ("ph-1", "ph-2"):
        w.ask(key, "gang-1", res(**ONE), placeholder=True, task_group_name="tg")
    SchedulingCycle(w.context).run()
    reserving = _samples(collector)
    assert counter("asked", reserving) == 2 and counter("allocated", reserving) == 1
    assert reserving[("pyscheduler_gang_applications", (*where, ("state", "accepted")))] == 1
    SchedulingCycle(w.context).run()
    w.ask("real-1", "gang-1", res(**ONE), task_group_name="tg")
    SchedulingCycle(w.context).run()
    replacing = [key for key in ("ph-1", "ph-2") if w.app("gang-1").allocations[key].released]
    w.release("gang-1", replacing[0], termination=si.TerminationType.PLACEHOLDER_REPLACED)
    (left,) = [key for key in ("ph-1", "ph-2") if key not in replacing]
    w.release("gang-1", left, termination=si.TerminationType.TIMEOUT)
    running = _samples(collector)
    assert counter("allocated", running) == 2
    assert counter("replaced", running) == 1 and counter("timed_out", running) == 1
    assert running[("pyscheduler_gang_applications", (*where, ("state", "running")))] == 1
    assert ("pyscheduler_gang_applications", (*where, ("state", "accepted"))) not in running


def test_rest_requests_are_counted_by_route_method_and_code() -> None:
    app = Flask("t")

    @app.get("/ws/v1/thing/<name>")
    def thing(name: str) -> Any:
        return ({"name": name}, 200) if name != "bad" else ({"error": name}, 400)

    metrics = Metrics(SimpleNamespace(), None, sources=())  # type: ignore[arg-type]
    instrument_requests(app, metrics)
    client = app.test_client()
    for name in ("x", "y", "bad"):
        client.get(f"/ws/v1/thing/{name}")
    client.get("/nowhere")
    body, _ = metrics.exposition(None)
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(body.decode()) for s in family.samples}
    route = ("endpoint", "/ws/v1/thing/<name>")
    assert samples[("pyscheduler_web_http_requests_total", (("code", "200"), route, ("method", "GET")))] == 2
    assert samples[("pyscheduler_web_http_requests_total", (("code", "400"), route, ("method", "GET")))] == 1
    assert samples[("pyscheduler_web_http_requests_total", (("code", "404"), ("endpoint", UNMATCHED),
                                                             ("method", "GET")))] == 1
    assert samples[("pyscheduler_web_http_request_duration_seconds_count", (route,))] == 3
    assert samples[("pyscheduler_web_http_request_duration_seconds_bucket", (route, ("le", "+Inf")))] == 3


def test_a_hostile_client_cannot_grow_the_request_series() -> None:
    """1,000 made-up paths and made-up methods leave one unmatched series per code and a single
    ``other`` method: the labels are bounded by the app's routes, never by what a client sends."""
    app = Flask("t")
    metrics = Metrics(SimpleNamespace(), None, sources=())  # type: ignore[arg-type]
    instrument_requests(app, metrics)
    client = app.test_client()
    for n in range(1_000):
        client.open(f"/ws/v1/made-up-{n}", method=("GET", "BREW", f"X{n}")[n % 3])
    body, _ = metrics.exposition(None)
    series = {tuple(sorted(s.labels.items())) for family in text_string_to_metric_families(body.decode())
              if family.name == "pyscheduler_web_http_requests" for s in family.samples if s.name.endswith("_total")}
    assert {dict(labels)["method"] for labels in series} == {"GET", "other"}
    assert {dict(labels)["endpoint"] for labels in series} == {UNMATCHED}
    assert len(series) <= 4, series
