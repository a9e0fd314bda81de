"""The simulator's ``topology`` section and ``--preset topology`` (issue 34): the file format's
keys and their validation, and a small run played with topology placement and without, its
figures checked for sanity (with the tags every gang is inside one domain of the level it
requires; without them some are not)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pytest

from pyscheduler.cli import main
from pyscheduler.sim.topology_run import format_topology, run_topology, run_topology_pair
from pyscheduler.sim.topology_spec import GangKind, TopologySpec
from pyscheduler.sim.workload import PRESETS, FloatRange, IntRange, WorkloadError, WorkloadSpec

SMALL_TOPOLOGY: dict[str, Any] = {
    "count": 60, "zones": 1, "blocks": 2, "racks": 4, "nodes": 4, "rate": 0.5, "run_time": [10, 40],
    "mix": [{"members": [2, 4], "level": "example.com/rack", "weight": 2},
            {"members": [5, 12], "level": "example.com/block", "weight": 1}],
}


def small_spec() -> WorkloadSpec:
    return WorkloadSpec.from_mapping({"seed": 7, "topology": SMALL_TOPOLOGY}, PRESETS["topology"])


def test_with_topology_every_gang_is_inside_its_domain_and_without_some_are_not() -> None:
    tagged, plain = run_topology_pair(small_spec())
    for s in (tagged, plain):
        assert s.completed and s.problems == [] and s.placed == s.gangs == 60
        assert 0 <= s.wait_p50 <= s.wait_p99 <= s.wait_max
        assert 0 <= s.stranded_mean <= s.free_mean <= 32 and 0 <= s.stranded_share <= 1
        assert s.in_one_rack <= s.in_one_block <= s.gangs
    assert tagged.in_required_domain == tagged.gangs
    assert plain.in_required_domain < plain.gangs
    rack_gangs = sum(1 for g in small_spec().topology.gangs(7) if g.level == 2)
    assert tagged.in_one_rack >= rack_gangs and tagged.in_one_block == tagged.gangs
    assert "inside one rack" in format_topology([tagged, plain])


def test_a_run_is_repeatable() -> None:
    first, second = (run_topology(small_spec(), tagged=True) for _ in range(2))
    assert (first.wait_p99, first.in_one_rack, first.stranded_mean) == (second.wait_p99, second.in_one_rack,
                                                                         second.stranded_mean)


def test_the_preset_round_trips_through_the_file_format() -> None:
    spec = PRESETS["topology"]
    assert spec.topology.count > 0 and spec.topology.node_count == 512
    assert WorkloadSpec.from_mapping(json.loads(json.dumps(spec.to_mapping()))) == spec
    assert {k.level for k in spec.topology.mix} == {1, 2}  # some gangs need a rack, some a block


def test_simulate_preset_topology_prints_both_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workload = tmp_path / "small.json"
    workload.write_text(json.dumps({"topology": SMALL_TOPOLOGY}), encoding="utf-8")
    out = tmp_path / "out.json"
    assert main(["simulate", str(workload), "--preset", "topology", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "topology (binpacking)" in printed and "no topology (binpacking)" in printed
    summaries = json.loads(out.read_text(encoding="utf-8"))["summaries"]
    assert [s["tagged"] for s in summaries] == [True, False] and summaries[0]["in_required_domain"] == 60


@pytest.mark.parametrize("section, problem", [
    ({"levels": "example.com/rack"}, "topology.levels: expected a list"),
    ({"levels": ["a", "b"]}, "three node label keys"),
    ({"levels": ["a", "a", "b"], "mix": [{"members": 2, "level": "b"}]}, "named twice"),
    ({"levels": ["bad key!", "b", "c"], "mix": [{"members": 2, "level": "c"}]}, "is not a node label key"),
    ({"mix": []}, "topology.mix: expected a non-empty list"),
    ({"mix": "rack"}, "topology.mix: expected a non-empty list"),
    ({"mix": [{"members": 2, "level": "example.com/row"}]}, "is not one of the levels"),
    ({"mix": [{"members": 2}]}, "members and level are required"),
    ({"mix": [{"members": 2, "level": "example.com/rack", "colour": 1}]}, "unknown key 'colour'"),
    ({"mix": [{"members": 9, "level": "example.com/rack"}]}, "do not fit one example.com/rack domain"),
    ({"mix": [{"members": [3, 2], "level": "example.com/rack"}]}, "minimum <= maximum"),
    ({"mix": [{"members": True, "level": "example.com/rack"}]}, "expected an integer"),
    ({"mix": [{"members": 2, "level": "example.com/rack", "weight": -1}]}, "weight: must be a positive"),
    ({"mix": [{"members": 2, "level": "example.com/rack", "weight": math.nan}]}, "weight: must be a positive"),
    ({"count": -1}, "topology.count: must be zero or more"),
    ({"count": 10**9}, "at most 100,000 gangs"),
    ({"zones": 0}, "topology.zones: must be at least 1"),
    ({"nodes": 10**6}, "at most 20,000"),
    ({"rate": 0}, "topology.rate: must be a positive"),
    ({"rate": math.inf}, "topology.rate: must be a positive"),
    ({"run_time": [-1, 5]}, "topology.run_time"),
    ({"memory": "64Gi"}, "a member does not fit a node"),
    ({"vcore": "-1"}, "topology"),
    ({"shape": 1}, "unknown key 'shape'"),
    ({"count": "many"}, "topology.count: expected an integer"),
])
def test_hostile_topology_values_are_refused_naming_the_key(section: dict[str, Any], problem: str) -> None:
    with pytest.raises(WorkloadError, match=problem.replace("(", r"\(").replace("*", r"\*")):
        WorkloadSpec.from_mapping({"topology": section}, PRESETS["topology"])


def test_the_section_is_off_by_default_and_then_unchecked() -> None:
    spec = WorkloadSpec()
    assert spec.topology.count == 0
    with pytest.raises(ValueError, match="no topology section"):
        run_topology(spec, tagged=True)
    # A gang mix checked against the cluster's shape only once the section is on.
    off = TopologySpec(count=0, mix=(GangKind(IntRange(1000, 1000), 2, 1.0),))
    assert WorkloadSpec(topology=off).topology == off
    assert dataclasses.replace(off, run_time=FloatRange(1, 2)).problems(1, 1) == []


def test_fragmentation_counts_the_free_nodes_of_partly_used_racks() -> None:
    """Two racks of 4 nodes; a gang of 2 requiring a rack runs from 0 until long after the second
    gang (2 members too) is placed: meanwhile 2 free nodes are stranded in its rack (best fit
    then puts the second gang in the same rack, which ends the stranding) of 6 free."""
    section = {"count": 2, "zones": 1, "blocks": 1, "racks": 2, "nodes": 4, "rate": 0.1, "run_time": 10_000,
               "mix": [{"members": 2, "level": "example.com/rack"}]}
    spec = WorkloadSpec.from_mapping({"topology": section}, PRESETS["topology"])
    s = run_topology(spec, tagged=True)
    assert s.completed and s.in_required_domain == 2
    assert s.stranded_mean == pytest.approx(2.0, rel=1e-3) and s.free_mean == pytest.approx(6.0, rel=1e-3)
