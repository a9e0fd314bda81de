"""User and group usage (the partition parameter is ignored, as in YuniKorn: one global
user/group manager). User and group names are URL-unescaped once more, as YuniKorn does.

- ``GET /ws/v1/partition/<partition>/usage/users``
- ``GET /ws/v1/partition/<partition>/usage/user/<user>``
- ``GET /ws/v1/partition/<partition>/usage/groups``
- ``GET /ws/v1/partition/<partition>/usage/group/<group>``
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from pyscheduler_web.blueprints.common import ctx, dao, get_json
from pyscheduler_web.http import query_unescape

bp = Blueprint("usage", __name__)


@get_json(bp, "/ws/v1/partition/<partition>/usage/users")
def users(partition: str) -> Any:
    return dao.users(ctx(), partition)


@get_json(bp, "/ws/v1/partition/<partition>/usage/user/<user>")
def user(partition: str, user: str) -> Any:
    return dao.user(ctx(), partition, query_unescape(user))


@get_json(bp, "/ws/v1/partition/<partition>/usage/groups")
def groups(partition: str) -> Any:
    return dao.groups(ctx(), partition)


@get_json(bp, "/ws/v1/partition/<partition>/usage/group/<group>")
def group(partition: str, group: str) -> Any:
    return dao.group(ctx(), partition, query_unescape(group))
