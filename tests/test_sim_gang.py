"""Gang jobs in the simulator (issue 14): the RM plays a shim (placeholders first, members once
the job runs, each released placeholder deleted and confirmed), through the real core; the
report's gang rows. Lockstep runs: exact figures."""

from __future__ import annotations

import dataclasses
import json

import pytest

from pyscheduler.sim.rm import SimulatedRM
from pyscheduler.sim.runner import format_summaries, run_simulation
from pyscheduler.sim.workload import PRESETS, WorkloadError, WorkloadSpec

#: 2 nodes of 4 cores; no batch pressure to speak of (one small application); gang jobs of 6
#: one-core members, 30 s each, one every 5 s.
GANGS = {
    "seed": 1,
    "nodes": {"count": 2, "memory": "8Gi", "vcore": 4},
    "queues": ["batch"],
    "applications": {"count": 1, "asks": 1, "memory": "1Gi", "vcore": 1, "priority": 0, "run_time": 10},
    "arrival": {"pattern": "burst"},
    "gangs": {"count": 3, "queue": "gangs", "members": 6, "memory": "1Gi", "vcore": 1, "run_time": 30,
              "start": 0, "interval": 5, "timeout": "20s", "style": "Soft"},
}


def test_gang_jobs_are_planned_without_touching_the_batch_workload() -> None:
    spec = WorkloadSpec.from_mapping(GANGS)
    plan = spec.generate()
    gangs = [app for app in plan.apps if app.task_group]
    assert [(a.app_id, a.queue, a.arrival, len(a.asks), a.gang_style) for a in gangs] == [
        ("gang-000", "root.gangs", 0.0, 6, "Soft"), ("gang-001", "root.gangs", 5.0, 6, "Soft"),
        ("gang-002", "root.gangs", 10.0, 6, "Soft")]
    batch = {key: value for key, value in GANGS.items() if key != "gangs"}
    assert plan.apps[:-3] == WorkloadSpec.from_mapping(batch).generate().apps
    assert WorkloadSpec.from_mapping(spec.to_mapping()) == spec
    config = json.loads(spec.queues_yaml("fair"))["partitions"][0]
    assert {"name": "gangs", "properties": {"application.sort.policy": "fifo"}} in config["queues"][0]["queues"]


def test_soft_jobs_that_wait_too_long_resume_as_ordinary_jobs() -> None:
    """8 cores: gang-000 (6 cores) starts whole at once beside the batch task. gang-001 arrives
    at 5 s and places 2 placeholders (1 free core, then the batch task's at 10 s); its timer,
    started at 5 s, fires at 25 s: it resumes, its members are submitted as ordinary asks and
    run together once gang-000 ends (30 s): 25 s after it arrived. gang-002 (10 s) resumes the
    same way and runs together at 60 s."""
    record = SimulatedRM(WorkloadSpec.from_mapping(GANGS).generate()).run(timeout=60)
    assert record.completed and record.problems == [] and record.unexpected_allocations == 0
    assert (record.gang_jobs, record.gang_started_whole, record.gang_resumed, record.gang_failed) == (3, 1, 2, 0)
    assert [round(t, 2) for t in record.gang_all_running] == [0.0, 25.0, 50.0]
    assert record.allocations == 1 + 3 * 6  # placeholders are not counted as allocations
    assert record.placeholders_allocated == 10
    # gang-000's 6 placeholders were replaced at once; the resumed jobs' held cores until their
    # timeouts (the figure is exact in lockstep: it pins the run).
    assert 69.9 < record.placeholder_vcore_seconds / 1000 < 70.1


def test_a_hard_job_that_cannot_start_in_time_fails_and_its_members_never_run() -> None:
    """The same with Hard jobs: gang-001 fails at 25 s and its members are never submitted;
    gang-002, whose placeholders get room when gang-001's go and gang-000 ends, starts whole at
    30 s, 20 s after it arrived; the run ends."""
    spec = WorkloadSpec.from_mapping({**GANGS, "gangs": {**GANGS["gangs"], "style": "Hard"}})  # type: ignore[dict-item]
    record = SimulatedRM(spec.generate()).run(timeout=60)
    assert record.completed and record.problems == []
    assert (record.gang_started_whole, record.gang_resumed, record.gang_failed) == (2, 0, 1)
    assert [round(t, 2) for t in record.gang_all_running] == [0.0, 20.0]
    assert record.allocations == 1 + 6 * 2  # the failed job's members never ran


def test_the_report_has_the_gang_rows() -> None:
    summary = run_simulation(WorkloadSpec.from_mapping(GANGS), policy="fair")
    assert summary.gangs is not None and summary.gangs.jobs == 3
    text = format_summaries([summary])
    assert "gang jobs" in text and "placeholders held" in text and "submission to all members running" in text


def test_the_gang_preset_runs() -> None:
    summary = run_simulation(PRESETS["gang"], policy="fair")
    assert summary.completed and summary.gangs is not None
    assert summary.gangs.jobs == 8 and summary.gangs.started_whole >= 1
    assert summary.gangs.started_whole + summary.gangs.resumed + summary.gangs.failed == 8


@pytest.mark.parametrize(("gangs", "message"), [
    ({"count": -1}, "gangs.count"),
    ({"members": 0}, "gangs.members"),
    ({"vcore": 5}, "a member does not fit a node"),
    ({"members": 9}, "a job is larger than the cluster"),
    ({"style": "Firm"}, "gangs.style: must be Soft or Hard"),
    ({"timeout": 0}, "gangs.timeout"),
    ({"queue": "batch"}, "gangs.queue: 'root.batch' must be a leaf queue of its own"),
    ({"surprise": 1}, "unknown key 'surprise'"),
])
def test_invalid_gangs_name_the_problem(gangs: dict[str, object], message: str) -> None:
    with pytest.raises(WorkloadError, match=message):
        WorkloadSpec.from_mapping({**GANGS, "gangs": {**GANGS["gangs"], **gangs}})  # type: ignore[dict-item]


def test_a_file_over_the_gang_preset_changes_only_its_keys() -> None:
    preset = PRESETS["gang"]
    assert WorkloadSpec.from_mapping(preset.to_mapping()) == preset
    changed = WorkloadSpec.from_mapping({"gangs": {"style": "Hard"}}, preset)
    assert changed == dataclasses.replace(preset, gangs=dataclasses.replace(preset.gangs, style="Hard"))
