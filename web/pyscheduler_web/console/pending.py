"""``GET /ui/pending``: the partition's pending applications in the order the next scheduling
cycle visits them, each with its place in its leaf queue and its "why" summary
(``docs/design/why.md``).

The order and the places are ``/ws/v1/partition/{p}/pending``'s
(:func:`pyscheduler.dao.queue_position.pending_applications`); the summary is the ``summary`` of
``/application/{app}/why?nodes=false`` (:func:`pyscheduler.dao.why.why`), asked for the
applications of the page shown only. A page holds :data:`PAGE` applications; ``?offset=``
pages on. An application that finished between the two reads shows no summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from flask import Response, request

from pyscheduler.dao import queue_position
from pyscheduler.dao import why as why_dao
from pyscheduler.dao.errors import DAOError
from pyscheduler_web.console.common import bp, ctx, partition_choices, render_page, selected_partition

__all__ = ["PAGE", "PendingRow"]

#: Applications per page (each costs one "why" read of the partition).
PAGE: Final = 50


@dataclass(frozen=True)
class PendingRow:
    position: int
    in_queue: int
    application_id: str
    queue: str
    pending: dict[str, int]
    ahead: dict[str, int]
    state: str
    summary: str


def _row(entry: dict[str, Any], partition: str) -> PendingRow:
    try:
        answer = why_dao.why(ctx(), partition, entry["applicationID"], nodes="false")
    except DAOError:
        answer = {}
    return PendingRow(
        position=entry["inPartition"], in_queue=entry["inQueue"], application_id=entry["applicationID"],
        queue=entry["queueName"], pending=entry.get("pending", {}), ahead=entry.get("aheadInQueue", {}),
        state=answer.get("applicationState", ""), summary=answer.get("summary", ""),
    )


@bp.get("/ui/pending")
def pending_page() -> Response:
    choices = partition_choices()
    partition = selected_partition(choices)
    offset_text = request.args.get("offset", "0")
    rows: list[PendingRow] = []
    more = False
    if partition:
        # One more than a page tells whether there is a next page.
        listed = queue_position.pending_applications(ctx(), partition, limit=str(PAGE + 1), offset=offset_text)
        more = len(listed) > PAGE
        rows = [_row(entry, partition) for entry in listed[:PAGE]]
    offset = int(offset_text) if offset_text.isdigit() else 0
    return render_page("console/pending.html", choices=choices, partition=partition, rows=rows,
                       offset=offset, page=PAGE, more=more)
