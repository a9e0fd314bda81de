"""Role history: bring an application's role instances back to the nodes they last ran on.

The seed is ``shared/seeds/role-history.md`` (Hoya's design), the facts of what it became in
``shared/spec/rolehistory.md`` (Apache Slider's ``RoleHistory``). Here it is a placement
policy of the core, fed by what the partition sees and consulted by the scheduling cycle:

- :mod:`.settings`: how an ask names its role and an application its history key (tags), and
  the per-role policy, placement timeout and failure threshold (tags, queue properties,
  defaults);
- :mod:`.entry`: the counters of one (node, role) pair;
- :mod:`.history`: one history key's node map, per-role recent lists (ordered sets, newest
  first) and outstanding placements tracked by allocation key;
- :mod:`.registry`: every history of a partition, by key.

Plain data keyed by strings (node ids, role names, allocation keys): it imports nothing of
the scheduler objects, and the partition's lock guards it like the rest of the object graph.
"""

from pyscheduler.policies.role_history.entry import NodeEntry
from pyscheduler.policies.role_history.history import Placement, RoleHistory
from pyscheduler.policies.role_history.registry import RoleHistories
from pyscheduler.policies.role_history.settings import (
    HISTORY_KEY_TAG,
    ROLE_TAG,
    PlacementPolicy,
    RoleSettings,
    history_key_of,
    role_of,
    role_settings,
)

__all__ = [
    "HISTORY_KEY_TAG",
    "ROLE_TAG",
    "NodeEntry",
    "Placement",
    "PlacementPolicy",
    "RoleHistories",
    "RoleHistory",
    "RoleSettings",
    "history_key_of",
    "role_of",
    "role_settings",
]
