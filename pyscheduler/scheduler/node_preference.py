"""An RM's preference among the nodes an ask may go on, combined with the core's node order.

An ask tagged :data:`~pyscheduler.si.messages.TAG_SCORE_NODES` (the Kubernetes shim tags pods
with preferred terms) is not placed on the first node that fits. The cycle gathers, in its
node order (the partition's fair or binpacking policy), up to
:func:`feasible_nodes_to_find` nodes that fit and pass the RM's predicates, asks the RM to
score them (``score_nodes``: 0 to 100 each), and takes the best of::

    2 x the RM's score  +  the node's place in the core's order (100 for the first, 0 for the last)

as kube-scheduler sums its score plugins: the preferred-term plugins (InterPodAffinity,
NodeAffinity, PodTopologySpread) weigh 2, the resource plugin (NodeResourcesFit) 1. A strong
preference therefore wins over the node policy, and among equally preferred nodes the policy
decides (ties: the earlier node in the core's order). How many nodes are gathered follows
kube-scheduler's ``percentageOfNodesToScore`` default: every node up to 100, then
``50 - nodes/125`` percent of them, at least 5 % and at least 100.

An RM whose ``score_nodes`` raises or answers with the wrong number of scores expresses no
preference: the first node gathered is taken, as without the tag.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

__all__ = ["PREFERENCE_WEIGHT", "best_candidate", "feasible_nodes_to_find"]

#: How much the RM's score weighs against the core's order (kube-scheduler's weight 2 against 1).
PREFERENCE_WEIGHT: Final = 2
_MIN_FEASIBLE: Final = 100
_MIN_PERCENT: Final = 5


def feasible_nodes_to_find(nodes: int) -> int:
    """How many fitting nodes to gather for scoring among ``nodes`` (kube-scheduler's adaptive
    ``percentageOfNodesToScore``)."""
    if nodes < _MIN_FEASIBLE:
        return max(nodes, 1)
    percent = max(50 - nodes // 125, _MIN_PERCENT)
    return max(nodes * percent // 100, _MIN_FEASIBLE)


def best_candidate(scores: Sequence[int] | None, count: int) -> int:
    """The index of the candidate to take among ``count`` gathered in the core's order, given
    the RM's ``scores`` (None, or the wrong length: no preference, the first)."""
    if scores is None or len(scores) != count or count <= 1:
        return 0
    best, best_value = 0, -1
    last = count - 1
    for i, score in enumerate(scores):
        clamped = min(max(int(score), 0), 100)
        value = PREFERENCE_WEIGHT * clamped + (100 * (last - i)) // last
        if value > best_value:
            best, best_value = i, value
    return best
