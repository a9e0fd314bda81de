"""The metrics registry (``pyscheduler_web.metrics``): one collector per subsystem, registered
from one list, over a stand-in service whose every counter is known, so each metric's name,
labels and value can be checked without a served scheduler (the HTTP side is in
test_router.py and the subsystems' HTTP tests)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families

from pyscheduler.common.histogram import LatencyHistogram
from pyscheduler_web.metrics import SOURCES, Metrics, MetricsInputs
from pyscheduler_web.metrics.source import ScrapeCollector

EVENT_STATS = dict(
    created=101, stored=80, not_stored=3, queued=7, dropped=2, published=11, ring_capacity=1000, ring_len=80,
    memory_bytes=4096, interned_strings=12, request_stored=5, request_dropped=1, publish_failed=4, subscribers=3,
    attached_streams=2, slow_closed=6, delivered=900, stream_write_timeouts=8,
)


class _Streams:
    refused = 9

    def __len__(self) -> int:
        return 2

    def limit(self) -> int:
        return 64


def _app(state: str) -> SimpleNamespace:
    return SimpleNamespace(state=SimpleNamespace(value=state), placeholder_data={})


def _partition(attempts: int, latency_ms: list[float], rm_id: str = "rm-1", name: str = "default") -> SimpleNamespace:
    histogram = LatencyHistogram()
    for ms in latency_ms:
        histogram.observe(ms)
    return SimpleNamespace(
        name=f"[{rm_id}]{name}", rm_id=rm_id, lock=threading.Lock(), nodes={"n1": None, "n2": None},
        applications={"a": _app("Running"), "b": _app("Running")}, completed_applications={"c": _app("Completed")},
        rejected_applications={}, total={"memory": 100 * attempts, "vcore": 10},
        root=SimpleNamespace(path="root", name="root", children={}, applications={"a": _app("Running")},
                             guaranteed=None, max_resource={"memory": 1000}, allocated={"memory": attempts},
                             pending={}, preempting={}),
        gang_counts=SimpleNamespace(asked=4, allocated=3, replaced=2, timed_out=1),
        role_histories=SimpleNamespace(history_placements=attempts, other_placements=2, escalations=1),
        preemption_attempts=attempts, preemptions=attempts - 1, preemption_victims=2 * attempts,
        preemption_latency=histogram,
    )


def _service() -> Any:
    event_system = SimpleNamespace(stats=lambda: SimpleNamespace(**EVENT_STATS), id_range=lambda: (20, 99))
    # Two RMs (clusters) with a ``default`` each: their partition series must not collide.
    partitions = {"[rm-1]default": _partition(3, [0.02, 4.0]), "[rm-2]default": _partition(5, [300.0], "rm-2")}
    plugins = [SimpleNamespace(name="topology", polls=10, failures=1, rejected={"a", "b"})]
    return SimpleNamespace(
        context=SimpleNamespace(event_system=event_system, partitions=partitions),
        scheduler=SimpleNamespace(cycles=70, allocations=40, errors=0, cycle=SimpleNamespace(run=lambda: 42)),
        reporters=SimpleNamespace(plugins=lambda: plugins, rounds=4, last_round_seconds=0.25),
        role_history_saver=SimpleNamespace(saves=6, save_errors=1),
        started_ns=1_700_000_000_000_000_000,
    )


def _samples(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    body, _ = metrics.exposition(None)
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(body.decode())
        for s in family.samples
    }


def test_every_subsystem_contributes_its_metrics_with_their_values() -> None:
    service = _service()
    samples = _samples(Metrics(service, _Streams()))  # type: ignore[arg-type]
    expected = {
        "yunikorn_event_total_created": 101, "yunikorn_event_total_channeled": 90,
        "yunikorn_event_total_not_channeled": 2, "yunikorn_event_total_processed": 83,
        "yunikorn_event_total_stored": 80, "yunikorn_event_total_not_stored": 3, "yunikorn_event_total_collected": 11,
        "pyscheduler_event_queued": 7, "pyscheduler_event_lowest_id": 20, "pyscheduler_event_highest_id": 99,
        "pyscheduler_event_request_dropped_total": 1, "pyscheduler_event_streams_attached": 2,
        "pyscheduler_event_subscribers_closed_slow_total": 6, "pyscheduler_event_delivered_total": 900,
        "pyscheduler_web_event_streams": 2, "pyscheduler_web_event_streams_limit": 64,
        "pyscheduler_web_event_streams_refused_total": 9, "pyscheduler_web_event_streams_write_timeouts_total": 8,
        "pyscheduler_role_history_placements_history_node_total": 8, "pyscheduler_role_history_placements_elsewhere_total": 4,
        "pyscheduler_role_history_escalations_total": 2, "pyscheduler_role_history_saves_total": 6,
        "pyscheduler_role_history_save_errors_total": 1,
        "pyscheduler_reporter_rounds_total": 4, "pyscheduler_reporter_round_seconds": 0.25,
        "pyscheduler_preemption_attempts_total": 8, "pyscheduler_preemption_preemptions_total": 6,
        "pyscheduler_preemption_victims_total": 16, "pyscheduler_preemption_try_latency_milliseconds_count": 3,
        "pyscheduler_scheduler_cycles_total": 70, "pyscheduler_scheduler_allocations_total": 40,
        "pyscheduler_scheduler_cycle_errors_total": 0, "pyscheduler_scheduler_partitions": 2,
        "pyscheduler_scheduler_start_time_seconds": 1.7e9,
        "yunikorn_scheduler_scheduling_latency_milliseconds_count": 0,
    }
    for name, value in expected.items():
        assert samples[(name, ())] == pytest.approx(value), name
    plugin = (("plugin", "topology"),)
    assert samples[("pyscheduler_reporter_polls_total", plugin)] == 10
    assert samples[("pyscheduler_reporter_poll_failures_total", plugin)] == 1
    assert samples[("pyscheduler_reporter_rejected_fields", plugin)] == 2
    assert samples[("pyscheduler_preemption_try_latency_milliseconds_sum", ())] == pytest.approx(304.02)
    assert samples[("pyscheduler_preemption_try_latency_milliseconds_bucket", (("le", "+Inf"),))] == 3
    for cluster, attempts in (("rm-1", 3), ("rm-2", 5)):
        labels = (("cluster", cluster), ("partition", "default"))
        assert samples[("pyscheduler_partition_nodes", labels)] == 2
        assert samples[("pyscheduler_partition_applications", (*labels, ("state", "Running")))] == 2
        assert samples[("pyscheduler_partition_applications", (*labels, ("state", "Completed")))] == 1
        assert samples[("pyscheduler_partition_capacity", (*labels, ("resource", "memory")))] == 100 * attempts
        assert samples[("pyscheduler_partition_allocated", (*labels, ("resource", "memory")))] == attempts
        queue = (*labels, ("queue", "root"))
        assert samples[("yunikorn_queue_resource", (*queue, ("resource", "memory"), ("state", "allocated")))] == attempts
        assert samples[("yunikorn_queue_resource", (*queue, ("resource", "memory"), ("state", "max")))] == 1000
        assert samples[("yunikorn_queue_app", (*queue, ("state", "running")))] == 1
        assert samples[("pyscheduler_gang_placeholders_replaced_total", labels)] == 2


def test_the_cycle_latency_histogram_observes_the_wrapped_cycle() -> None:
    service = _service()
    metrics = Metrics(service, _Streams())  # type: ignore[arg-type]
    assert service.scheduler.cycle.run() == 42  # the wrapped run still returns what it returned
    assert service.scheduler.cycle.run() == 42
    assert _samples(metrics)[("yunikorn_scheduler_scheduling_latency_milliseconds_count", ())] == 2


def test_a_subsystem_adds_its_metrics_by_registering_a_source_not_by_editing_collect() -> None:
    class QueueDepth(ScrapeCollector):
        def __init__(self, inputs: MetricsInputs) -> None:
            self._partitions = inputs.service.context.partitions

        def collect(self) -> Iterator[Metric]:
            yield GaugeMetricFamily("pyscheduler_test_partitions_seen", "Partitions seen.", value=len(self._partitions))

    service = _service()
    with_extra = Metrics(service, _Streams(), sources=(*SOURCES, QueueDepth))  # type: ignore[arg-type]
    assert _samples(with_extra)[("pyscheduler_test_partitions_seen", ())] == 2
    later = Metrics(service, _Streams())  # type: ignore[arg-type]
    assert ("pyscheduler_test_partitions_seen", ()) not in _samples(later)
    later.register(QueueDepth)
    assert _samples(later)[("pyscheduler_test_partitions_seen", ())] == 2


def test_sources_are_exposed_in_their_listed_order() -> None:
    body, _ = Metrics(_service(), _Streams()).exposition(None)  # type: ignore[arg-type]
    names = [f.name for f in text_string_to_metric_families(body.decode())]
    # The runtime collectors first, as YuniKorn collects its runtime metrics first.
    firsts = ["python_info", "yunikorn_event_total_created", "pyscheduler_web_event_streams",
              "pyscheduler_role_history_placements_history_node", "pyscheduler_reporter_polls",
              "pyscheduler_preemption_attempts", "pyscheduler_scheduler_cycles",
              "yunikorn_scheduler_scheduling_latency_milliseconds"]
    positions = [names.index(n) for n in firsts]
    assert positions == sorted(positions)
