"""Nodes.

- ``GET /ws/v1/partition/<partition>/nodes``
- ``GET /ws/v1/partition/<partition>/node/<node>``
- ``GET /ws/v1/partition/<partition>/rolehistory/<history_key>`` (pyscheduler's own: where an
  application's roles ran, see ``pyscheduler.dao.role_history``)
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from pyscheduler_web.blueprints.common import ctx, dao, get_json

bp = Blueprint("nodes", __name__)


@get_json(bp, "/ws/v1/partition/<partition>/nodes")
def nodes(partition: str) -> Any:
    return dao.nodes(ctx(), partition)


@get_json(bp, "/ws/v1/partition/<partition>/node/<node>")
def node(partition: str, node: str) -> Any:
    return dao.node(ctx(), partition, node)


@get_json(bp, "/ws/v1/partition/<partition>/rolehistory/<path:history_key>")
def role_history(partition: str, history_key: str) -> Any:
    return dao.role_history(ctx(), partition, history_key)
