"""Query functions behind YuniKorn's REST API (``/ws/v1/...``).

Each function copies the plain values it needs under the partition's lock (the lock model of
:mod:`pyscheduler.objects.locking`), builds its answer after releasing it, changes nothing and
returns plain
JSON-ready data (dict, list, str, int, bool, float) shaped exactly like YuniKorn's DAO structs:
the same keys, ``omitempty`` applied (zero values left out), maps with sorted keys, int64 values
as ints. A bad request raises :class:`DAOError` (``status``, ``message``): :class:`NotFound` or
:class:`BadRequest` with YuniKorn's exact message. The web layer only translates HTTP to these
calls and serialises what they return.

Partition parameters (see :func:`pyscheduler.dao._common.find_partition`) take the qualified
name ``[clusterId]name`` (the RM id, as ``/partitions`` lists it as ``clusterId``, then the
partition's name), which always names one partition, or the plain name (``default``) when exactly
one RM has a partition of that name; a plain name several RMs have is a 400 naming the qualified
names. Several RMs (clusters) may each have a ``default``: every object that names its partition
(applications, queues, ``/clusters``, node utilisations, the state dump's groups, role
histories) also carries ``clusterId``, a key pyscheduler adds to YuniKorn's (never renaming one).
"""

from pyscheduler.dao.applications import (
    application,
    applications_by_state,
    queue_application,
    queue_applications,
    queue_applications_by_state,
)
from pyscheduler.dao.errors import BadRequest, DAOError, NotFound
from pyscheduler.dao.nodes import node, nodes
from pyscheduler.dao.partitions import partitions, placement_rules
from pyscheduler.dao.queues import queue, queues
from pyscheduler.dao.role_history import role_history
from pyscheduler.dao.scheduler_info import (
    clusters,
    config,
    healthcheck,
    history_apps,
    history_containers,
    node_utilizations,
    validate_conf,
)
from pyscheduler.dao.statedump import fullstatedump
from pyscheduler.dao.usage import group, groups, user, users

__all__ = [
    "BadRequest",
    "DAOError",
    "NotFound",
    "application",
    "applications_by_state",
    "clusters",
    "config",
    "fullstatedump",
    "group",
    "groups",
    "healthcheck",
    "history_apps",
    "history_containers",
    "node",
    "node_utilizations",
    "nodes",
    "partitions",
    "placement_rules",
    "queue",
    "queue_application",
    "queue_applications",
    "queue_applications_by_state",
    "queues",
    "role_history",
    "user",
    "users",
    "validate_conf",
]
