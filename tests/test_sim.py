"""The simulator: workload generation from a seed, the workload file format, and the simulated
RM playing small workloads to completion through the scheduler (lockstep and threaded)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from pyscheduler.si import messages as si
from pyscheduler.sim import (
    PRESETS,
    IntRange,
    ProgressBar,
    SimulatedRM,
    WorkloadError,
    WorkloadSpec,
    format_summaries,
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


# -- a late tenant with a guarantee (preemption) --------------------------------------------------

#: Tenant A (root.a) fills 8 cores at time 0 with twelve one-core tasks of 100 s (8 run, 4 wait);
#: tenant B (root.b, guaranteed 2 cores, preemption.delay 3 s) asks for 2 one-core tasks at 10 s.
LATE = {
    "seed": 1,
    "nodes": {"count": 2, "memory": "8Gi", "vcore": 4},
    "queues": ["a"],
    "applications": {"count": 2, "asks": 6, "memory": "1Gi", "vcore": 1, "priority": 0, "run_time": 100},
    "arrival": {"pattern": "burst"},
    "late_tenant": {"count": 1, "queue": "b", "guaranteed": {"vcore": 2}, "start": 10, "asks": 2,
                    "memory": "1Gi", "vcore": 1, "run_time": 20, "preemption_delay": "3s"},
}


def test_the_late_tenant_is_planned_without_touching_the_batch_workload() -> None:
    spec = WorkloadSpec.from_mapping(LATE)
    plan = spec.generate()
    late = [app for app in plan.apps if app.may_preempt]
    assert [(a.app_id, a.queue, a.arrival) for a in late] == [("late-000", "root.b", 10.0)]
    assert [a.key for a in late[0].asks] == ["late-000-ask-0000", "late-000-ask-0001"]
    batch = {key: value for key, value in LATE.items() if key != "late_tenant"}
    assert plan.apps[:-1] == WorkloadSpec.from_mapping(batch).generate().apps
    assert WorkloadSpec.from_mapping(spec.to_mapping()) == spec
    assert spec.late_tenant.preemption_delay == 3.0
    assert (spec.late_tenant.guaranteed_memory, spec.late_tenant.guaranteed_vcore) == (0, 2000)
    config = json.loads(spec.queues_yaml("fair", preemption=False))["partitions"][0]
    assert config["preemption"] == {"enabled": False}
    assert config["queues"][0]["queues"][1] == {
        "name": "b", "resources": {"guaranteed": {"vcore": "2000m"}}, "properties": {"preemption.delay": "3000ms"}}


def test_a_file_over_a_preset_changes_only_its_keys() -> None:
    preset = PRESETS["preemption"]
    assert WorkloadSpec.from_mapping({}, preset) == preset
    assert WorkloadSpec.from_mapping(preset.to_mapping()) == preset
    changed = WorkloadSpec.from_mapping({"seed": 9, "late_tenant": {"preemption_delay": 20}}, preset)
    assert changed == dataclasses.replace(
        preset, seed=9, late_tenant=dataclasses.replace(preset.late_tenant, preemption_delay=20.0))


@pytest.mark.parametrize(("late", "message"), [
    ({"count": -1}, "late_tenant.count"),
    ({"asks": 0}, "late_tenant.asks"),
    ({"vcore": 5}, "an ask does not fit a node"),
    ({"guaranteed": {}}, "late_tenant.guaranteed: needs memory or vcore"),
    ({"guaranteed": {"vcore": 3}}, "more than all the tenant's asks together"),
    ({"guaranteed": {"cpu": 1}}, "unknown key 'cpu'"),
    ({"preemption_delay": 0}, "late_tenant.preemption_delay: must be above zero"),
    ({"preemption_delay": "soon"}, "expected seconds or a duration"),
    ({"queue": "a"}, "late_tenant.queue: 'root.a' must be a leaf queue of its own"),
    ({"surprise": 1}, "unknown key 'surprise'"),
])
def test_invalid_late_tenants_name_the_problem(late: dict[str, object], message: str) -> None:
    with pytest.raises(WorkloadError, match=message):
        WorkloadSpec.from_mapping({**LATE, "late_tenant": {**LATE["late_tenant"], **late}})  # type: ignore[dict-item]


def _sent_releases(rm: SimulatedRM) -> list[si.AllocationRelease]:
    """Spies on what the RM sends the core: every release, in order."""
    sent: list[si.AllocationRelease] = []
    forward = rm.proxy.update_allocation

    def spy(request: si.AllocationRequest) -> None:
        if request.releases is not None:
            sent.extend(request.releases.allocations_to_release)
        forward(request)

    rm.proxy.update_allocation = spy  # type: ignore[method-assign]
    return sent


def test_the_rm_kills_confirms_and_resubmits_each_victim() -> None:
    plan = WorkloadSpec.from_mapping(LATE).generate()
    rm = SimulatedRM(plan, policy="fair", preemption=True)
    sent = _sent_releases(rm)
    record = rm.run(timeout=30)
    assert record.completed and record.problems == []
    # B's two asks preempt one of A's tasks each once their 3 s delay has passed (at 13 s).
    assert record.preempted == 2 and record.rerun_allocations == 2
    confirmed = [r for r in sent if r.termination_type == si.TerminationType.PREEMPTED_BY_SCHEDULER]
    assert len(confirmed) == 2 and all(r.application_id.startswith("app-") for r in confirmed)
    assert record.allocations == plan.total_asks + 2
    assert record.releases_confirmed == plan.total_asks and record.released_by_core == 0
    # Each victim had run from about 0 to 13 s: 1 core and 1 GiB each.
    assert 25.9 < record.lost_vcore_seconds / 1000 <= 26.01
    assert 25.9 < record.lost_memory_seconds / GIB <= 26.01
    assert record.late_tenant_start == 10.0
    assert record.guarantee_reached is not None and 13.0 <= record.guarantee_reached < 13.1
    # The core agrees: the victims were removed (confirmed), every application is gone.
    partition = next(iter(rm.context.partitions.values()))
    assert partition.preemption_victims == 2
    assert partition.applications == {}
    assert all(not node.allocations for node in partition.nodes.values())


def test_without_preemption_the_late_tenant_waits_for_the_first_releases() -> None:
    on, off = run_policies(WorkloadSpec.from_mapping(LATE), ("fair",))
    assert (on.label, off.label) == ("fair, preemption on", "fair, preemption off")
    assert on.late_tenant is not None and off.late_tenant is not None
    assert on.late_tenant.time_to_guarantee is not None and 3.0 <= on.late_tenant.time_to_guarantee < 3.1
    # A's first tasks end at 100 s: B, at 10 s, waits 90 s.
    assert off.late_tenant.time_to_guarantee is not None and 89.9 < off.late_tenant.time_to_guarantee < 90.1
    assert (on.preempted, off.preempted) == (2, 0)
    assert off.work_lost.vcore_seconds == off.work_lost.memory_gib_seconds == 0.0
    assert off.allocations == off.asks and on.allocations == on.asks + on.reruns == on.asks + 2
    assert on.completed and off.completed and on.apps_completed == off.apps_completed == 3


def test_a_longer_preemption_delay_makes_the_tenant_wait_longer() -> None:
    spec = WorkloadSpec.from_mapping({"late_tenant": {"preemption_delay": "20s"}}, PRESETS["preemption"])
    summary = run_simulation(spec, policy="binpacking", preemption=True)
    assert summary.late_tenant is not None and summary.late_tenant.time_to_guarantee is not None
    assert 20.0 <= summary.late_tenant.time_to_guarantee < 20.1
    # 16 victims (one core, 2 GiB each) that had run from about 0 to 80 s.
    assert summary.preempted == 16
    assert 16 * 79.9 < summary.work_lost.vcore_seconds <= 16 * 80.01
    assert summary.work_lost.memory_gib_seconds == pytest.approx(2 * summary.work_lost.vcore_seconds)


def test_a_guarantee_never_reached_within_the_run() -> None:
    # B's two tasks run 1 s each and arrive when A holds the cluster for 100 s: without
    # preemption the first one ends before the second starts, so B never holds 2 cores at once.
    late = {**LATE["late_tenant"], "run_time": 1}  # type: ignore[dict-item]
    nodes = {"count": 1, "memory": "8Gi", "vcore": 4}
    spec = WorkloadSpec.from_mapping({**LATE, "nodes": nodes, "applications": {
        **LATE["applications"], "asks": 3, "run_time": [50, 100]}, "late_tenant": late})  # type: ignore[dict-item]
    off = run_simulation(spec, policy="fair", preemption=False)
    assert off.completed and off.late_tenant is not None
    assert off.late_tenant.time_to_guarantee is None
    assert "never within the run" in format_summaries([off])


def test_threaded_run_preempts_through_the_scheduling_thread() -> None:
    # A's tasks run 300 s; B arrives at 5 s with a 1 s delay. At 200x a simulated second is
    # 5 ms of wall time: A's tasks last 1.5 s of wall time, long enough for a scheduling thread
    # slowed down by a loaded machine to preempt before they end by themselves.
    applications = {**LATE["applications"], "run_time": 300}  # type: ignore[dict-item]
    late = {**LATE["late_tenant"], "start": 5, "preemption_delay": 1}  # type: ignore[dict-item]
    spec = WorkloadSpec.from_mapping({**LATE, "applications": applications, "late_tenant": late})
    rm = SimulatedRM(spec.generate(), policy="fair", mode="threaded", speed=200.0, preemption=True)
    record = rm.run(timeout=60)
    assert record.completed, record.problems
    assert record.preempted >= 1 and record.late_tenant_start is not None and record.guarantee_reached is not None
    # Without preemption B would wait for A's tasks to end, 295 s after it arrived.
    assert record.guarantee_reached - record.late_tenant_start < 150.0
    partition = next(iter(rm.context.partitions.values()))
    assert partition.applications == {}
