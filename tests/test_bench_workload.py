"""Tests of the benchmark workload model and harness (benchmarks).

Benchmarks never fail on speed: nothing here asserts a timing. The harness logic is
exercised against a tiny pure-Python stand-in for ``pyscheduler._native.EventStore``
defined in this file (and only here); the last test runs the real thing.
"""

from __future__ import annotations

import collections
import itertools
import json
import os
import re
import subprocess
import sys
import tracemalloc
import types
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks import events_memory, events_throughput, workload
from benchmarks.__main__ import FAMILIES, build_parser, parse_count, selected
from benchmarks.machine import format_table, machine_facts
from benchmarks.workload import (
    EventArgs,
    events_per_app,
    feed_store,
    generate_events,
    node_names,
    parse_mix,
)

ROOT = Path(__file__).resolve().parents[1]
APP_ID = re.compile(r"^spark-app-\d{6}$")
NODE_ID = re.compile(r"^node-\d{4}\.rack-\d{2}\.example$")
QUEUE_PATH = re.compile(r"^root\.tenant-\d+\.[a-z]+$")


def _app_of(event: EventArgs) -> str:
    # Node events name the node; queue events the queue; the app is then the reference.
    type_, _, _, _, object_id, ref, _, _ = event
    return ref if type_ == workload.TYPE_QUEUE else object_id


def _is_uuid4(text: str) -> bool:
    try:
        return uuid.UUID(text).version == 4 and str(uuid.UUID(text)) == text
    except ValueError:
        return False


# --- the workload model --------------------------------------------------------------------


def test_events_per_app_matches_the_seed_table() -> None:
    assert events_per_app(gang=False) == 207
    assert events_per_app(gang=True) == 307
    # The seed's table: 1500 apps of 100 pods -> 310k (normal) / 460k (gang) events.
    assert 1500 * events_per_app(gang=False) == 310_500
    assert 1500 * events_per_app(gang=True) == 460_500


@pytest.mark.parametrize(("mix", "per_app"), [("normal", 207), ("gang", 307)])
def test_generated_apps_have_the_seed_counts(mix: str, per_app: int) -> None:
    events = list(generate_events(n_apps=5, mix=mix))
    assert len(events) == 5 * per_app
    apps = {e[4] for e in events if e[0] == workload.TYPE_APP}
    assert len(apps) == 5
    # Per pod: request + node allocation (+ placeholder replaced, under its own key).
    pod_events = [e for e in events if _is_uuid4(e[5]) and e[2] != workload.APP_ALLOC]
    pod_keys = {e[5] for e in events if e[2] == workload.APP_REQUEST}
    assert len(pod_keys) == 5 * 100
    assert len(pod_events) == 5 * 100 * (per_app - 7) // 100
    per_key = collections.Counter(e[5] for e in pod_events if e[5] in pod_keys)
    assert set(per_key.values()) == {2}
    # The rest of an app's events: added + six state changes.
    assert len(events) - len(pod_events) == 5 * 7


def test_event_tuples_per_normal_app() -> None:
    counts = collections.Counter(e[:3] for e in generate_events(n_apps=1))
    assert counts == {
        (2, 2, 203): 1,  # app added: APP / ADD / APP_NEW
        (4, 2, 405): 1,  # "new": placed in its queue, QUEUE / ADD / QUEUE_APP
        (2, 1, 204): 1,  # APP / SET / APP_ACCEPTED
        (2, 1, 206): 1,  # APP / SET / APP_RUNNING
        (2, 2, 200): 1,  # the allocation change: APP / ADD / APP_ALLOC
        (2, 1, 207): 1,  # APP / SET / APP_COMPLETING
        (2, 1, 208): 1,  # APP / SET / APP_COMPLETED
        (2, 2, 201): 100,  # ask added: APP / ADD / APP_REQUEST
        (3, 2, 303): 100,  # allocation on a node: NODE / ADD / NODE_ALLOC
    }


def test_gang_apps_add_placeholder_replaced() -> None:
    counts = collections.Counter(e[:3] for e in generate_events(n_apps=1, mix="gang"))
    assert counts[(2, 3, 503)] == 100  # APP / REMOVE / ALLOC_REPLACED
    assert sum(counts.values()) == 307


def test_mix_fraction_spreads_gang_apps_exactly() -> None:
    events = list(generate_events(n_apps=10, mix="0.3"))
    assert len(events) == 3 * 307 + 7 * 207
    assert parse_mix("normal") == 0.0 and parse_mix("gang") == 1.0 and parse_mix(0.25) == 0.25
    for bad in ("mostly", "1.5", -0.1):
        with pytest.raises(ValueError):
            parse_mix(bad)


def test_generation_is_deterministic_from_the_seed() -> None:
    first = list(generate_events(3_000, seed=7))
    assert first == list(generate_events(3_000, seed=7))
    assert first != list(generate_events(3_000, seed=8))
    # A prefix is the same whatever the requested total.
    assert list(generate_events(1_000, seed=7)) == first[:1_000]


def test_ids_have_realistic_shapes() -> None:
    events = list(generate_events(n_apps=3, mix="gang"))
    for type_, change, _, ts, object_id, ref, message, _ in events:
        assert isinstance(ts, int) and ts > 1_700_000_000 * 10**9
        if type_ == workload.TYPE_APP:
            assert APP_ID.match(object_id)
            assert ref == "" or _is_uuid4(ref)
        elif type_ == workload.TYPE_NODE:
            assert NODE_ID.match(object_id) and _is_uuid4(ref)
        else:
            assert type_ == workload.TYPE_QUEUE and QUEUE_PATH.match(object_id) and APP_ID.match(ref)
        assert (message != "") == (change == workload.CHANGE_SET)  # text only on state changes
    names = node_names()
    assert len(names) == len(set(names)) == 5_000
    assert names[421] == "node-0421.rack-04.example"


def test_timestamps_increase_and_resources_are_per_app() -> None:
    events = list(generate_events(n_apps=4))
    stamps = [e[3] for e in events]
    assert all(a < b for a, b in itertools.pairwise(stamps))
    sizes: dict[str, set[tuple[int, int]]] = collections.defaultdict(set)
    by_key = {e[5]: e[4] for e in events if e[2] == workload.APP_REQUEST}
    for event in events:
        resource = event[7]
        if resource is not None:
            assert set(resource) == {"memory", "vcore"}
            assert all(isinstance(v, int) and v > 0 for v in resource.values())
            app = event[4] if event[0] == workload.TYPE_APP else by_key[event[5]]
            sizes[app].add((resource["memory"], resource["vcore"]))
    assert len(sizes) == 4 and all(len(s) == 1 for s in sizes.values())


def test_n_events_truncates_mid_app() -> None:
    assert sum(1 for _ in generate_events(1_000)) == 1_000
    assert sum(1 for _ in generate_events(0)) == 0
    assert sum(1 for _ in generate_events(10_000, n_apps=2)) == 414


def test_generation_is_lazy() -> None:
    events = generate_events(9_000_000)
    assert isinstance(events, types.GeneratorType)
    tracemalloc.start()
    try:
        for _ in itertools.islice(events, 100_000):
            pass
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # 100k materialised events would take tens of MB; one app at a time stays small.
    assert peak < 5 * 2**20


def test_workload_enums_match_the_events_package() -> None:
    import pyscheduler.events as events_pkg
    for name, value in [("APP", workload.TYPE_APP), ("NODE", workload.TYPE_NODE), ("QUEUE", workload.TYPE_QUEUE)]:
        assert events_pkg.EventRecordType[name] == value
    for name, value in [("SET", 1), ("ADD", 2), ("REMOVE", 3)]:
        assert events_pkg.EventChangeType[name] == value
    for name in (
        "APP_NEW",
        "APP_REQUEST",
        "APP_ALLOC",
        "APP_ACCEPTED",
        "APP_RUNNING",
        "APP_COMPLETING",
        "APP_COMPLETED",
        "NODE_ALLOC",
        "QUEUE_APP",
        "ALLOC_REPLACED",
    ):
        assert events_pkg.EventChangeDetail[name] == getattr(workload, name)


# --- a pure-Python stand-in for the native store (test-only) --------------------------------


class FakeEventStore:
    """Behaves like ``pyscheduler._native.EventStore`` where the harness can tell.

    ``add`` drops when the bounded queue is full; only ``flush`` moves queued events into
    the ring (a consumer thread that never runs on its own: the worst case for drops).
    """

    def __init__(self, capacity: int = 100_000, queue_capacity: int = 100_000) -> None:
        self.capacity = capacity
        self._queue_capacity = queue_capacity
        self._queue: list[EventArgs] = []
        self._ring: collections.deque[EventArgs] = collections.deque(maxlen=capacity)
        self._next_id = 0
        self._dropped = 0

    def add(
        self,
        type: int,
        change_type: int,
        change_detail: int,
        timestamp_ns: int,
        object_id: str,
        reference_id: str = "",
        message: str = "",
        resource: dict[str, int] | None = None,
    ) -> bool:
        if len(self._queue) >= self._queue_capacity:
            self._dropped += 1
            return False
        self._queue.append((type, change_type, change_detail, timestamp_ns, object_id, reference_id, message, resource))
        return True

    def add_many(self, events: list[EventArgs]) -> int:
        return sum(self.add(*e) for e in events)

    def flush(self, timeout: float | None = None) -> bool:
        self._ring.extend(self._queue)
        self._next_id += len(self._queue)
        self._queue.clear()
        return True

    def __len__(self) -> int:
        return len(self._ring)

    def lowest_id(self) -> int:
        return self._next_id - len(self._ring)

    def highest_id(self) -> int:
        return max(self._next_id - 1, 0)

    def _slice(self, start: int, count: int) -> list[EventArgs]:
        offset = start - self.lowest_id()
        return list(itertools.islice(self._ring, offset, offset + count))

    def ndjson(self, start: int, count: int) -> bytes:
        return events_throughput.py_ndjson([events_throughput.wire_record(e) for e in self._slice(start, count)])

    def batch_body(self, instance_uuid: str, start: int, count: int) -> bytes:
        records = [events_throughput.wire_record(e) for e in self._slice(start, count)]
        return events_throughput.py_batch_body(instance_uuid, self.lowest_id(), self.highest_id(), records)

    def stats(self) -> dict[str, int]:
        stored = len(self._ring)
        return {
            "accepted": self._next_id + len(self._queue),
            "dropped": self._dropped,
            "stored": stored,
            "interned_strings": len({s for e in self._ring for s in (e[4], e[5], e[6])}),
        }


class FakeEventSystem:
    """Stand-in for ``pyscheduler.events.EventSystem`` over the fake store."""

    def __init__(self) -> None:
        self.store = FakeEventStore()
        self.started = False

    def start(self) -> None:
        self.started = True

    def add(
        self,
        type: Any,
        change_type: Any,
        change_detail: Any,
        object_id: str,
        reference_id: str = "",
        message: str = "",
        resource: dict[str, int] | None = None,
    ) -> bool:
        return self.started and self.store.add(
            type, change_type, change_detail, 1, object_id, reference_id, message, resource
        )

    def flush(self) -> bool:
        return self.store.flush()

    def stop(self) -> None:
        self.started = False


def test_feed_store_never_overflows_the_queue() -> None:
    store = FakeEventStore(capacity=5_000, queue_capacity=1_000)
    seen: list[int] = []
    accepted, rejected = feed_store(
        store, generate_events(5_000), queue_capacity=1_000, chunk_size=300, on_chunk=seen.append
    )
    assert (accepted, rejected) == (5_000, 0)
    assert len(store) == 5_000 and store.stats()["dropped"] == 0
    assert seen[-1] == 5_000 and seen == sorted(seen)


def test_fake_store_drops_when_not_flushed() -> None:
    # Guards the stand-in itself: without the harness's flushes the queue overflows.
    store = FakeEventStore(capacity=100, queue_capacity=10)
    assert store.add_many(list(generate_events(25))) == 10


def test_memory_measurement_in_process_with_a_fake_store() -> None:
    params = events_memory.MemoryParams(layout="rust", events=3_000, queue_capacity=1_000)
    row = events_memory.measure_in_process(params, store_factory=FakeEventStore)
    assert row.stored == 3_000 and row.rejected == 0
    assert row.interned_strings is not None and row.interned_strings > 0
    assert row.rss_after_bytes > 0 and row.peak_rss_bytes >= row.rss_after_bytes
    for layout in ("py-dicts", "py-tuples", "control"):
        other = events_memory.measure_in_process(events_memory.MemoryParams(layout=layout, events=2_000))
        assert other.stored == (0 if layout == "control" else 2_000)


def test_memory_report_plans_ratios_and_says_what_was_not_measured() -> None:
    def fake_measure(params: events_memory.MemoryParams) -> events_memory.MemoryRow:
        per_event = {"rust": 30.0, "py-dicts": 600.0, "py-tuples": 400.0, "control": 1.0}[params.layout]
        if params.mix == "gang":
            per_event = 33.0
        increase = int(per_event * params.events)
        return events_memory.MemoryRow(
            params.layout,
            params.events,
            params.events,
            100,
            100,
            100 + increase,
            200 + increase,
            increase,
            per_event,
            0.1,
            mix=str(params.mix),
        )

    report = events_memory.run(
        sizes=[1_000_000, 3_000_000, 9_000_000], python_max=3_000_000, measure=fake_measure, progress=lambda _: None
    )
    skipped = {(m.layout, m.events) for m in report.not_measured}
    assert skipped == {("py-dicts", 9_000_000), ("py-tuples", 9_000_000)}
    by_n = {r.events: r for r in report.ratios}
    assert by_n[1_000_000].py_dicts_over_rust == pytest.approx(20.0)
    assert by_n[1_000_000].go_best_over_rust is None  # the seed has no 1M figure: nothing extrapolated
    assert by_n[9_000_000].py_dicts_over_rust is None
    assert by_n[9_000_000].go_best_over_rust == pytest.approx(593 * 2**20 / 9e6 / 30.0)
    assert report.target_met is True
    # The seed's rows: gang jobs measured once more (at 9M), 3 events per pod.
    assert [r.mix for r in report.rows if r.layout == "rust"] == ["normal"] * 3 + ["gang"]
    gang = [r for r in report.seed_rows if r.job_type == "gang"]
    assert [(r.pods_per_day, r.events_per_day) for r in gang] == [(150_000, 460_500), (300_000, 921_000)]
    assert all(r.bytes_per_event == 33.0 for r in gang)
    text = report.format()
    assert "Not measured" in text and "277" in text and "149" in text and "69" in text
    json.dumps(report.to_dict())


def test_throughput_harness_with_fake_stores() -> None:
    report = events_throughput.run(
        events=3_000,
        ring_capacity=2_000,
        repeats=1,
        batch_repeats=2,
        progress=lambda _: None,
        store_factory=FakeEventStore,
        event_system_factory=FakeEventSystem,
    )
    assert report.failures == [] and report.warnings == []
    operations = " ".join(r.operation for r in report.rows)
    for expected in ("EventStore.add", "add_many", "EventSystem.add", "ndjson", "batch_body"):
        assert expected in operations
    for row in report.rows:
        assert row.events_per_second > 0 and row.ns_per_event > 0
        assert row.python_ns_per_event is not None and row.python_ns_per_event > 0
        assert row.rejected == 0
    assert report.batch_body_ms is not None and report.batch_body_ms > 0
    json.dumps(report.to_dict())
    assert "speed-up" in report.format()


def test_serialisation_checks_catch_a_wrong_encoder() -> None:
    class WrongStore(FakeEventStore):
        def ndjson(self, start: int, count: int) -> bytes:
            return super().ndjson(start, count).replace(b'"type":', b'"Type":', 1)

    result = events_throughput.bench_serialisation(WrongStore, list(generate_events(500)), 1, 1)
    assert any("first record" in w for w in result.warnings)


def test_wire_record_follows_yunikorn_omitempty() -> None:
    record = events_throughput.wire_record((2, 0, 203, 5, "app-1", "", "", None))
    assert record == {"type": 2, "objectID": "app-1", "timestampNano": 5, "eventChangeDetail": 203, "resource": {}}
    with_res = events_throughput.wire_record((3, 2, 303, 5, "n", "k", "", {"vcore": 0, "memory": 10}))
    assert with_res["resource"] == {"resources": {"memory": {"value": 10}, "vcore": {}}}


# --- the command line ---------------------------------------------------------------------------


def test_cli_registry_and_parsing() -> None:
    assert {"events-memory", "events-throughput"} <= set(FAMILIES)
    args = build_parser().parse_args(["events-memory", "--quick", "--sizes", "1M,20k", "--python-max", "3M"])
    assert args.family == "events-memory" and args.quick and args.sizes == [1_000_000, 20_000]
    assert args.python_max == 3_000_000
    assert build_parser().parse_args([]).family == "all"
    assert parse_count("9M") == 9_000_000 and parse_count("1_000") == 1_000 and parse_count("2.5k") == 2_500
    skipping = build_parser().parse_args(["all", "--skip", "kubernetes, gang"])
    assert [f.name for f in selected("all", skipping.skip)] == [n for n in FAMILIES if n not in ("kubernetes", "gang")]
    assert build_parser().parse_args([]).skip == [] and len(selected("all")) == len(FAMILIES)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["all", "--skip", "kubernetes,nonsense"])


def test_machine_facts_and_tables() -> None:
    facts = machine_facts()
    assert facts.cpu_count and facts.python and facts.date
    assert len(facts.header_lines()) >= 5
    json.dumps(facts.to_dict())
    table = format_table(["a", "b"], [["x", 1], ["yy", 22]]).splitlines()
    assert table[0] == "| a  |  b |" and table[1].endswith(":|") and len(table) == 4


def _positive_numbers(row: dict[str, Any], keys: Iterator[str]) -> bool:
    return all(isinstance(row[k], (int, float)) and row[k] > 0 for k in keys)


def test_quick_run_against_the_native_module(tmp_path: Path) -> None:
    """Runs the real benchmark end to end: needs the built pyscheduler._native. Not the
    kubernetes family: it builds kube-scheduler (about 6 minutes once), which would take the
    first make test on a fresh machine past its 30 minutes."""
    out = tmp_path / "bench.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "all", "--quick", "--skip", "kubernetes", "--json", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    document = json.loads(out.read_text())
    assert set(document) >= {"machine", "results", "quick"} and document["quick"] is True
    memory = document["results"]["events-memory"]
    throughput = document["results"]["events-throughput"]
    rust_rows = [r for r in memory["rows"] if r["layout"] == "rust"]
    assert rust_rows and {r["layout"] for r in memory["rows"]} >= {"rust", "py-dicts", "py-tuples"}
    for row in rust_rows:
        assert row["stored"] == row["events"]
        assert _positive_numbers(row, iter(["increase_bytes", "bytes_per_event", "interned_strings"]))
    assert memory["ratios"] and memory["go_reference"]
    assert throughput["rows"] and throughput["failures"] == []
    for row in throughput["rows"]:
        assert _positive_numbers(row, iter(["events_per_second", "ns_per_event", "python_ns_per_event"]))
    assert throughput["batch_body_ms"] > 0
    assert "Event store memory" in done.stdout and "Event throughput" in done.stdout
    assert "kubernetes" not in document["results"] and "gang" in document["results"]
