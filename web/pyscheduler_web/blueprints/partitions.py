"""Partitions.

- ``GET /ws/v1/partitions``
- ``GET /ws/v1/partition/<partition>/placementrules``
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from pyscheduler_web.blueprints.common import ctx, dao, get_json

bp = Blueprint("partitions", __name__)


@get_json(bp, "/ws/v1/partitions")
def partitions() -> Any:
    return dao.partitions(ctx())


@get_json(bp, "/ws/v1/partition/<partition>/placementrules")
def placement_rules(partition: str) -> Any:
    return dao.placement_rules(ctx(), partition)
