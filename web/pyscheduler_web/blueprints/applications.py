"""Applications.

- ``GET /ws/v1/partition/<partition>/queue/<queue>/applications``
- ``GET /ws/v1/partition/<partition>/queue/<queue>/application/<application>``
- ``GET /ws/v1/partition/<partition>/queue/<queue>/applications/<state>`` (``active`` and
  ``?status=``)
- ``GET /ws/v1/partition/<partition>/application/<application>``
- ``GET /ws/v1/partition/<partition>/applications/<state>`` (``active``, ``rejected``,
  ``completed``; ``?status=`` with ``active``)
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, request

from pyscheduler_web.blueprints.common import ctx, dao, get_json
from pyscheduler_web.http import query_unescape

bp = Blueprint("applications", __name__)


@get_json(bp, "/ws/v1/partition/<partition>/queue/<queue>/applications")
def queue_applications(partition: str, queue: str) -> Any:
    return dao.queue_applications(ctx(), partition, query_unescape(queue))


@get_json(bp, "/ws/v1/partition/<partition>/queue/<queue>/application/<application>")
def queue_application(partition: str, queue: str, application: str) -> Any:
    return dao.queue_application(ctx(), partition, query_unescape(queue), application)


@get_json(bp, "/ws/v1/partition/<partition>/queue/<queue>/applications/<state>")
def queue_applications_by_state(partition: str, queue: str, state: str) -> Any:
    return dao.queue_applications_by_state(
        ctx(), partition, query_unescape(queue), state, request.args.get("status", "")
    )


@get_json(bp, "/ws/v1/partition/<partition>/application/<application>")
def application(partition: str, application: str) -> Any:
    return dao.application(ctx(), partition, application)


@get_json(bp, "/ws/v1/partition/<partition>/applications/<state>")
def applications_by_state(partition: str, state: str) -> Any:
    return dao.applications_by_state(ctx(), partition, state, request.args.get("status", ""))
