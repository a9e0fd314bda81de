"""Queues. A queue parameter is a full path (``root.a.b``) that is URL-unescaped once more
(Go's ``url.QueryUnescape``, as YuniKorn does) before the query function checks its names.

- ``GET /ws/v1/partition/<partition>/queues``
- ``GET /ws/v1/partition/<partition>/queue/<queue>`` (``?subtree`` adds the children)
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, request

from pyscheduler_web.blueprints.common import ctx, dao, get_json
from pyscheduler_web.http import query_unescape

bp = Blueprint("queues", __name__)


@get_json(bp, "/ws/v1/partition/<partition>/queues")
def queues(partition: str) -> Any:
    return dao.queues(ctx(), partition)


@get_json(bp, "/ws/v1/partition/<partition>/queue/<queue>")
def queue(partition: str, queue: str) -> Any:
    return dao.queue(ctx(), partition, query_unescape(queue), "subtree" in request.args)
