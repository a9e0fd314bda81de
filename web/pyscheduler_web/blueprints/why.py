"""Why is it pending, where is it in the queue, why was it preempted (issue 35; the JSON is
docs/design/why.md's).

- ``GET /ws/v1/partition/<partition>/application/<application>/why`` (``?ask=<allocationKey>``,
  ``?nodes=false``)
- ``GET /ws/v1/partition/<partition>/pending`` (``?queue=``, ``?limit=``, ``?offset=``)
- ``GET /ws/v1/partition/<partition>/application/<application>/preempted?allocationKey=K``

Handlers only translate: bad parameters are the query functions' 400s, unknown objects their
404s, with YuniKorn's error body.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, request

from pyscheduler.dao import queue_position, why_preempted
from pyscheduler.dao import why as why_dao
from pyscheduler_web.blueprints.common import ctx, get_json

bp = Blueprint("why", __name__)


@get_json(bp, "/ws/v1/partition/<partition>/application/<application>/why")
def why(partition: str, application: str) -> Any:
    return why_dao.why(ctx(), partition, application, request.args.get("ask"), request.args.get("nodes"))


@get_json(bp, "/ws/v1/partition/<partition>/pending")
def pending(partition: str) -> Any:
    return queue_position.pending_applications(
        ctx(), partition, request.args.get("queue", ""), request.args.get("limit"), request.args.get("offset"))


@get_json(bp, "/ws/v1/partition/<partition>/application/<application>/preempted")
def preempted(partition: str, application: str) -> Any:
    return why_preempted.why_preempted(ctx(), partition, application, request.args.get("allocationKey"))
