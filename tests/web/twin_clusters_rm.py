"""Two clusters for the REST tests of several RMs on one service (test_rest_several_clusters.py):
``pyscheduler serve --rm twin_clusters_rm:attach_east --rm twin_clusters_rm:attach_west``.

Each is a :class:`service_rms.ClusterRM` (its own RM id ``cluster-east`` / ``cluster-west``, a
``default`` partition from the served configuration, a node ``<name>-node`` and an application
``<name>-app`` whose ask is placed there, and ``GET /ws/v1/<name>/status``) plus a node both
clusters call ``twin-node``, with a different capacity in each: a node id alone does not tell
the clusters apart, the partition's qualified name does.
"""

from __future__ import annotations

from pyscheduler.common.resources import Resource
from pyscheduler.service import SchedulerService
from pyscheduler.si import messages as si
from service_rms import ClusterRM

#: The twin node's memory in each cluster.
TWIN_MEMORY = {"east": 2 << 30, "west": 3 << 30}


def _attach(name: str, service: SchedulerService) -> ClusterRM:
    rm = ClusterRM(name)
    rm.register(service)
    service.proxy.update_node(si.NodeRequest(rm_id=rm.rm_id, nodes=(si.NodeInfo(
        node_id="twin-node", action=si.NodeAction.CREATE,
        schedulable_resource=Resource({"memory": TWIN_MEMORY[name], "vcore": 1000})),)))
    return rm


def attach_east(service: SchedulerService) -> ClusterRM:
    return _attach("east", service)


def attach_west(service: SchedulerService) -> ClusterRM:
    return _attach("west", service)
