"""Role history for gangs (issue 34): a job started again comes back to its nodes, rank by rank.

An ordinary ask with a role goes to its history node first (the cycle's role history step).
A gang's members do not choose nodes: its placeholders do (their role is their task group's, so
they go back to the nodes the group last held), and each member then replaces one of its
group's placeholders. Two things keep ranks where they were:

- **the domain**: a gang asking for a topology level chooses among the domains that can hold it
  the one holding the most of the nodes its history's roles ran on (:func:`remembered_nodes`, read by
  :func:`pyscheduler.scheduler.topology_choice.choose_domain_scope`), before the tightest;
- **the placeholder**: a member with its own role (``pyscheduler.io/role``, on Kubernetes a
  StatefulSet ordinal or an Indexed Job's completion index) replaces first the placeholder on
  the node that role last ran on (:func:`placeholders_in_order`), then any other.

Both read the partition's role histories (plain data under the partition's lock, as the cycle
holds it) and change nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pyscheduler.policies.role_history import ROLE_TAG, history_key_of

if TYPE_CHECKING:
    from pyscheduler.objects.allocation import Allocation
    from pyscheduler.objects.application import Application
    from pyscheduler.objects.partition import Partition

__all__ = ["placeholders_in_order", "remembered_nodes"]


def remembered_nodes(partition: Partition, app: Application) -> frozenset[str]:
    """The nodes any role of ``app``'s history key ran on (none when it has no history yet: a
    new application's key is its id). Every role's, not only its pending asks': a gang asks
    with its placeholders first, and its members' own roles are what it should come back to."""
    history = partition.role_histories.get(history_key_of(app.app_id, app.tags))
    return frozenset(history.nodes) if history is not None else frozenset()


def placeholders_in_order(partition: Partition, app: Application, real: Allocation,
                          placeholders: Sequence[Allocation]) -> Sequence[Allocation]:
    """``placeholders`` with those on the nodes ``real``'s own role last ran on first, most
    recent first (unchanged for a member without a role of its own)."""
    role = real.tags.get(ROLE_TAG, "") if real.tags else ""
    if not role:
        return placeholders
    history = partition.role_histories.get(history_key_of(app.app_id, app.tags, real.tags))
    if history is None:
        return placeholders
    recent = history.recent(role)
    if not recent:
        return placeholders
    rank = {node_id: i for i, node_id in enumerate(recent)}
    last = len(recent)
    return sorted(placeholders, key=lambda p: rank.get(p.node_id, last))
