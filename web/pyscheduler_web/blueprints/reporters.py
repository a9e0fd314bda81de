"""The node reporter manager (pyscheduler extensions, see ``pyscheduler.reporter.views``).

- ``GET /ws/v1/reporters``
- ``GET /ws/v1/partition/<partition>/node/<node>/reported``
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from pyscheduler.reporter import views
from pyscheduler_web.blueprints.common import ctx, get_json, service

bp = Blueprint("reporters", __name__)


@get_json(bp, "/ws/v1/reporters")
def reporters() -> Any:
    return views.reporters(service().reporters)


@get_json(bp, "/ws/v1/partition/<partition>/node/<node>/reported")
def reported(partition: str, node: str) -> Any:
    return views.reported(ctx(), service().reporters, partition, node)
