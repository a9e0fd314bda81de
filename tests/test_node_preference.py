"""An RM's preference among nodes (pyscheduler/scheduler/node_preference.py), through the RM
interface: an ask tagged ``pyscheduler.io/score-nodes`` goes to the node the RM's
``score_nodes`` prefers among the first nodes that fit and pass its predicates, the core's node
order breaking ties; an untagged ask, an RM without the hook, or a broken hook: the first node."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest
from rm_helpers import BASIC, World, res

from pyscheduler.scheduler.cycle import SchedulingCycle
from pyscheduler.scheduler.node_preference import best_candidate, feasible_nodes_to_find
from pyscheduler.si import messages as si
from pyscheduler.testing.recording import RecordingRM

TAGGED = {si.TAG_SCORE_NODES: "true"}


class ScoringRM(RecordingRM):
    def __init__(self) -> None:
        super().__init__(timeout=2.0)
        self.preferred: dict[str, int] = {}
        self.asked: list[si.ScoreNodesArgs] = []
        self.broken = False

    def score_nodes(self, args: si.ScoreNodesArgs) -> Sequence[int]:
        self.asked.append(args)
        if self.broken:
            raise RuntimeError("the RM's scorer failed")
        return [self.preferred.get(node, 0) for node in args.node_ids]


@pytest.fixture
def world() -> Iterator[tuple[World, ScoringRM]]:
    w = World(register=False)
    rm = ScoringRM()
    w.register(BASIC, rm=rm)
    for i in range(5):
        w.add_node(f"n{i}", memory=1000)
    w.add_app("app-1", "root.a")
    yield w, rm
    w.close()


def _placed(w: World, key: str) -> str:
    SchedulingCycle(w.context).run()
    return w.app("app-1").allocations[key].node_id


def test_how_many_nodes_are_scored_follows_kube_schedulers_default() -> None:
    assert [feasible_nodes_to_find(n) for n in (0, 1, 50, 100, 1000, 5000, 20000)] == \
        [1, 1, 50, 100, 420, 500, 1000]


def test_a_strong_preference_wins_and_the_order_breaks_ties() -> None:
    assert best_candidate(None, 4) == 0
    assert best_candidate([0, 0, 100, 0], 4) == 2
    assert best_candidate([50, 50, 50], 3) == 0          # equal preference: the core's order
    assert best_candidate([10, 60, 0], 3) == 1           # 2x60 + 50 beats 2x10 + 100
    assert best_candidate([40, 60, 0], 3) == 0           # 2x40 + 100 beats 2x60 + 50
    assert best_candidate([1, 2], 3) == 0                # wrong length: no preference
    assert best_candidate([-5, 500], 2) == 1             # clamped to 0..100


def test_a_tagged_ask_goes_where_the_rm_prefers(world: tuple[World, ScoringRM]) -> None:
    w, rm = world
    rm.preferred = {"n3": 100}
    w.ask("plain", "app-1", res(memory=10))
    first = _placed(w, "plain")
    assert rm.asked == []  # untagged: no scoring, the first node in order
    w.ask("tagged", "app-1", res(memory=10), allocation_tags=TAGGED)
    assert _placed(w, "tagged") == "n3"
    (args,) = rm.asked
    assert args.allocation_key == "tagged" and sorted(args.node_ids) == [f"n{i}" for i in range(5)]
    assert first in args.node_ids


def test_only_nodes_that_fit_and_pass_the_predicates_are_scored(world: tuple[World, ScoringRM]) -> None:
    w, rm = world
    rm.set_predicates(lambda key, node, allocate: "no" if node == "n3" else None)
    rm.preferred = {"n3": 100, "n4": 80}
    w.ask("tagged", "app-1", res(memory=10), allocation_tags=TAGGED)
    assert _placed(w, "tagged") == "n4"
    assert "n3" not in rm.asked[0].node_ids


def test_a_broken_scorer_means_no_preference(world: tuple[World, ScoringRM]) -> None:
    w, rm = world
    rm.broken = True
    rm.preferred = {"n3": 100}
    w.ask("tagged", "app-1", res(memory=10), allocation_tags=TAGGED)
    placed = _placed(w, "tagged")
    assert placed == rm.asked[0].node_ids[0]  # the first gathered, as an untagged ask
