"""The simulator: workload generation from a seed, the workload file format, and the simulated
RM playing small workloads to completion through the scheduler (lockstep and threaded)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from pyscheduler.sim import (
    IntRange,
    ProgressBar,
    SimulatedRM,
    WorkloadError,
    WorkloadSpec,
    percentile,
    run_policies,
    run_simulation,
)
from pyscheduler.sim.workload import GIB, MIB

#: Small enough to run in well under a second, loaded enough that some asks wait for releases.
SMALL = {
    "seed": 7,
    "nodes": {"count": 4, "memory": "8Gi", "vcore": 4},
    "queues": {"a": 2, "b": 1},
    "applications": {
        "count": 12,
        "asks": [2, 8],
        "memory": ["256Mi", "2Gi"],
        "vcore": ["250m", "1"],
        "priority": [0, 2],
        "run_time": [1, 5],
    },
    "arrival": {"pattern": "poisson", "rate": 4},
}


def small_spec(**changes: object) -> WorkloadSpec:
    return dataclasses.replace(WorkloadSpec.from_mapping(SMALL), **changes)


# -- workload generation -------------------------------------------------------------------------


def test_same_seed_same_workload() -> None:
    assert small_spec().generate() == small_spec().generate()
    assert WorkloadSpec().generate() == WorkloadSpec().generate()


def test_different_seed_different_workload() -> None:
    a, b = small_spec(seed=1).generate(), small_spec(seed=2).generate()
    assert a.apps != b.apps


def test_generated_values_stay_in_their_ranges() -> None:
    spec = small_spec()
    plan = spec.generate()
    assert len(plan.apps) == 12
    arrivals = [app.arrival for app in plan.apps]
    assert arrivals[0] == 0.0 and arrivals == sorted(arrivals)
    for app in plan.apps:
        assert app.queue in ("root.a", "root.b")
        assert 0 <= app.priority <= 2
        assert 2 <= len(app.asks) <= 8
        for ask in app.asks:
            assert 256 * MIB <= ask.memory <= 2 * GIB
            assert 250 <= ask.vcore <= 1000
            assert 1 <= ask.run_time <= 5
    keys = [ask.key for app in plan.apps for ask in app.asks]
    assert len(keys) == len(set(keys)) == plan.total_asks


def test_arrival_patterns() -> None:
    burst = small_spec(arrival="burst").generate()
    assert {app.arrival for app in burst.apps} == {0.0}
    uniform = small_spec(arrival="uniform", arrival_rate=2.0).generate()
    assert [app.arrival for app in uniform.apps] == [i * 0.5 for i in range(12)]


# -- the file format -------------------------------------------------------------------------------


def test_from_mapping_reads_quantities_like_queues_yaml() -> None:
    spec = WorkloadSpec.from_mapping(SMALL)
    assert (spec.node_count, spec.node_memory, spec.node_vcore) == (4, 8 * GIB, 4000)
    assert spec.queues == ("root.a", "root.b") and spec.queue_weights == (2.0, 1.0)
    assert spec.ask_vcore == IntRange(250, 1000)
    # Missing keys keep the defaults; an empty mapping is the default workload.
    assert WorkloadSpec.from_mapping({}) == WorkloadSpec()
    assert WorkloadSpec.from_mapping({"seed": 3}) == dataclasses.replace(WorkloadSpec(), seed=3)


def test_to_mapping_round_trips() -> None:
    for spec in (WorkloadSpec(), small_spec(), small_spec(arrival="burst", priority=IntRange(5, 5))):
        assert WorkloadSpec.from_mapping(spec.to_mapping()) == spec
        # And through JSON text, as --json writes it.
        assert WorkloadSpec.from_text(json.dumps(spec.to_mapping()), json_only=True) == spec


def test_from_file_yaml_and_json(tmp_path: Path) -> None:
    yaml_file = tmp_path / "w.yaml"
    yaml_file.write_text("seed: 5\nqueues: [x, y]\napplications: {count: 3, asks: 2}\n", encoding="utf-8")
    spec = WorkloadSpec.from_file(yaml_file)
    assert spec.seed == 5 and spec.queues == ("root.x", "root.y") and spec.app_count == 3
    json_file = tmp_path / "w.json"
    json_file.write_text(json.dumps(SMALL), encoding="utf-8")
    assert WorkloadSpec.from_file(json_file) == WorkloadSpec.from_mapping(SMALL)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"nodez": {}}, "unknown key 'nodez'"),
        ({"nodes": {"count": 0}}, "nodes.count: must be positive"),
        ({"nodes": {"count": "many"}}, "nodes.count: expected an integer"),
        ({"nodes": {"memory": "lots"}}, "nodes.memory: invalid quantity"),
        ({"applications": {"asks": [5, 2]}}, "applications.asks: the minimum 5 is larger than the maximum 2"),
        ({"applications": {"memory": ["1Gi", "64Gi"]}}, "applications.memory: the largest ask"),
        ({"applications": {"run_time": [1, 2, 3]}}, "applications.run_time: a range is [minimum, maximum]"),
        ({"arrival": {"pattern": "waves"}}, "arrival.pattern: must be one of burst, uniform, poisson"),
        ({"arrival": {"rate": 0}}, "arrival.rate: must be a positive number"),
        ({"queues": {"a": -1}}, "queues: weights must be positive"),
        ({"queues": ["a", "a.b"]}, "'root.a' is a parent of another listed queue"),
        ({"queues": ["Bad Name"]}, "is not a leaf queue path"),
        ([1, 2], "a workload is a mapping"),
    ],
)
def test_invalid_workloads_name_the_problem(data: object, message: str) -> None:
    with pytest.raises(WorkloadError, match=None) as info:
        WorkloadSpec.from_mapping(data)  # type: ignore[arg-type]
    assert message in str(info.value)


def test_from_file_prefixes_the_file_name(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("nodes: [1, 2\n", encoding="utf-8")
    with pytest.raises(WorkloadError, match="broken.yaml: not valid YAML"):
        WorkloadSpec.from_file(path)


# -- running -----------------------------------------------------------------------------------------


def test_lockstep_run_allocates_and_releases_every_ask() -> None:
    plan = small_spec().generate()
    rm = SimulatedRM(plan, policy="fair", mode="lockstep")
    record = rm.run(timeout=30)
    assert record.completed, record.problems
    assert record.problems == []
    assert record.allocations == plan.total_asks
    assert record.releases_confirmed == plan.total_asks
    assert record.rejected_asks == record.unexpected_allocations == record.released_by_core == 0
    assert record.apps_completed == len(plan.apps)
    assert len(record.latencies) == plan.total_asks and min(record.latencies) >= 0
    # The core agrees: nothing left allocated or pending, every application removed.
    partition = next(iter(rm.context.partitions.values()))
    assert partition.applications == {}
    assert all(not node.allocations for node in partition.nodes.values())


def test_lockstep_is_exactly_repeatable() -> None:
    first = run_simulation(small_spec(), policy="binpacking")
    second = run_simulation(small_spec(), policy="binpacking")
    strip = {"wall_seconds": 0.0, "throughput": 0.0}
    assert dataclasses.replace(first, **strip) == dataclasses.replace(second, **strip)


def test_threaded_run_through_the_scheduling_thread() -> None:
    plan = small_spec().generate()
    rm = SimulatedRM(plan, policy="fair", mode="threaded", speed=50.0)
    record = rm.run(timeout=30)
    assert record.completed, record.problems
    assert record.allocations == record.releases_confirmed == plan.total_asks
    assert record.apps_completed == len(plan.apps)
    assert not rm.scheduler.running


def test_summary_is_consistent() -> None:
    summaries = run_policies(small_spec(), ("fair", "binpacking"))
    assert [s.policy for s in summaries] == ["fair", "binpacking"]
    for s in summaries:
        assert s.completed and s.problems == ()
        assert s.allocations == s.asks == s.releases
        assert s.apps_completed == s.apps == 12
        assert 0 <= s.latency.p50 <= s.latency.p90 <= s.latency.p99 <= s.latency.max
        u = s.utilisation
        assert 0 < u.memory <= u.peak_memory <= 1 and 0 < u.vcore <= u.peak_vcore <= 1
        assert 0 < u.nodes_in_use <= u.peak_nodes_in_use <= s.nodes
        assert 0 < u.packing <= 1
        assert s.sim_seconds > 0 and s.throughput > 0 and s.cycles >= s.allocations
        json.dumps(s.to_dict())


def test_loaded_workload_makes_asks_wait() -> None:
    # Everything at once on a small cluster: later asks must wait for releases.
    summary = run_simulation(small_spec(arrival="burst"), policy="fair")
    assert summary.completed
    assert summary.latency.max >= 1.0  # at least one ask waited for a 1-5 s allocation to end


def test_percentile_interpolates_and_is_monotonic() -> None:
    values = [float(v) for v in range(1, 11)]
    assert percentile(values, 0) == 1.0 and percentile(values, 100) == 10.0
    assert percentile(values, 50) == pytest.approx(5.5)
    assert percentile([], 50) == 0.0
    assert percentile(values, 50) <= percentile(values, 90) <= percentile(values, 99)


def test_progress_bar_on_a_pipe_prints_tenths(tmp_path: Path) -> None:
    out = (tmp_path / "progress.txt").open("w+", encoding="utf-8")
    bar = ProgressBar("fair", stream=out)
    for done in range(0, 101):
        bar(done, 100, float(done))
    bar.close()
    out.seek(0)
    lines = out.read().splitlines()
    assert len(lines) == 11 and lines[-1].startswith("fair [##############################] 100.0 %")


# -- services with roles (role history) ----------------------------------------------------------

SERVICES = {
    **SMALL,
    "nodes": {"count": 40, "memory": "8Gi", "vcore": 4},
    "services": {"count": 2, "roles": {"master": 1, "region": 6}, "memory": "1Gi", "vcore": 1,
                 "start": 0.5, "run_time": 20, "down_time": 5, "restarts": 2},
}


def test_services_are_generated_as_incarnations_with_roles() -> None:
    spec = WorkloadSpec.from_mapping(SERVICES)
    plan = spec.generate()
    services = [app for app in plan.apps if app.history_key]
    assert [a.app_id for a in services] == [f"svc-{s:03d}-{g}" for s in range(2) for g in range(3)]
    first, second = services[0], services[1]
    assert first.after == "" and first.arrival == 0.5 and second.after == "svc-000-0" and second.arrival == 5
    assert [a.role for a in first.asks] == ["master"] + ["region"] * 6 and first.queue == "root.services"
    # The batch part is drawn exactly as without services.
    assert plan.apps[: len(plan.apps) - 6] == WorkloadSpec.from_mapping(SMALL).generate().apps
    assert WorkloadSpec.from_mapping(spec.to_mapping()) == spec
    assert '"name": "services"' in spec.queues_yaml("fair")


@pytest.mark.parametrize(("services", "message"), [
    ({"count": -1}, "services.count"),
    ({"count": 1, "roles": {}}, "services.roles"),
    ({"count": 1, "roles": {"r": 0}}, "services.roles.r"),
    ({"count": 1, "memory": "64Gi"}, "does not fit a node"),
    ({"count": 1, "run_time": 0}, "services.run_time"),
    ({"count": 1, "restarts": -2}, "services.restarts"),
    ({"count": 1, "queue": "a"}, "must be a leaf queue of its own"),
    ({"count": 1, "surprise": 1}, "unknown key 'surprise'"),
])
def test_invalid_services_name_the_problem(services: dict[str, object], message: str) -> None:
    with pytest.raises(WorkloadError, match=message):
        WorkloadSpec.from_mapping({**SMALL, "services": services})


def test_role_history_brings_service_instances_back_and_anywhere_does_not() -> None:
    spec = WorkloadSpec.from_mapping(SERVICES)
    summaries = run_policies(spec, ("fair",))
    assert [s.label for s in summaries] == ["fair", "fair, no role history"]
    on, off = summaries
    assert on.completed and off.completed and on.services is not None and off.services is not None
    assert on.services.instances == off.services.instances == 2 * 2 * 7
    # 40 nodes, a lightly loaded cluster: every instance comes back with role history.
    assert on.services.fraction == 1.0
    assert off.services.fraction < 0.9
    assert 0 < on.services.random_expected < 0.5
