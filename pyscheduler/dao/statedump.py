"""The full state dump (``/debug/fullstatedump``): everything the other endpoints show, in one
object. One dump runs at a time, as upstream serialises them.

Keys (YuniKorn's AggregatedStateInfo): ``timestamp, partitions, applications, appHistory, nodes,
clusterInfo, containerHistory, queues, rmDiagnostics, logLevel, config, placementRules,
eventStreams``. The UHS reads partitions, queues, applications, nodes and the two histories.

Several RMs (clusters) may each have a partition of the same name: every entry that names a
partition also has its ``clusterId`` (partitions, queues and applications carry it themselves;
pyscheduler adds it to the ``nodes`` and ``placementRules`` groups and to ``clusterInfo``).
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

from pyscheduler.dao._common import sorted_partitions
from pyscheduler.dao.applications import all_application_daos
from pyscheduler.dao.nodes import partition_node_daos
from pyscheduler.dao.partitions import partition_info, partition_rule_daos
from pyscheduler.dao.queues import queue_dao, queue_view
from pyscheduler.dao.scheduler_info import clusters, config_dao, history_apps, history_containers
from pyscheduler.scheduler.context import external_name

if TYPE_CHECKING:
    from pyscheduler.scheduler.context import ClusterContext
    from pyscheduler.scheduler.history import History
    from pyscheduler.scheduler.loop import Scheduler

__all__ = ["fullstatedump"]

_DUMP_LOCK = threading.Lock()
#: Python logging levels as zap names them.
_ZAP_LEVELS = {logging.DEBUG: "debug", logging.INFO: "info", logging.WARNING: "warn", logging.ERROR: "error",
               logging.CRITICAL: "fatal"}


def _log_level() -> str:
    level = logging.getLogger("pyscheduler").getEffectiveLevel()
    for threshold in sorted(_ZAP_LEVELS, reverse=True):
        if level >= threshold:
            return _ZAP_LEVELS[threshold]
    return "debug"


def fullstatedump(
    ctx: ClusterContext, scheduler: Scheduler | None = None, history: History | None = None
) -> dict[str, Any]:
    """The aggregated state. Without a history both history lists are empty."""
    with _DUMP_LOCK:
        partitions = sorted_partitions(ctx)
        views = []
        for partition in partitions:
            with partition.lock:
                views.append(queue_view(partition, partition.root, subtree=True))
        queues = [queue_dao(view) for view in views]
        return {
            "timestamp": ctx.clock.now_ns(),
            "partitions": [partition_info(p) for p in partitions],
            "applications": [app for p in partitions for app in all_application_daos(p, ctx.read_pacer)],
            "appHistory": history_apps(history) if history is not None else [],
            "nodes": [
                {"partitionName": external_name(p.name), "clusterId": p.rm_id,
                 "nodesInfo": partition_node_daos(p, ctx.read_pacer)}
                for p in partitions
            ],
            "clusterInfo": clusters(ctx),
            "containerHistory": history_containers(history) if history is not None else [],
            "queues": queues,
            # The RM diagnostics plugin does not exist here: YuniKorn's answer without one.
            "rmDiagnostics": {"empty": "Resource Manager did not register callback"},
            "logLevel": _log_level(),
            "config": config_dao(ctx),
            "placementRules": [
                {"partition": external_name(p.name), "clusterId": p.rm_id, "rules": partition_rule_daos(p)}
                for p in partitions
            ],
            "eventStreams": [],
        }
