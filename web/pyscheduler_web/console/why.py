"""``GET /ui/why?app=<applicationID>``: one application's "why" answer
(``/ws/v1/partition/{p}/application/{app}/why``, :func:`pyscheduler.dao.why.why`;
``docs/design/why.md``) for a person: the summary, the gang and the queue position, then per
pending ask the first thing that stops it with its code and numbers, the nodes grouped by the
reason they refuse it, and the reservation, preemption attempt and awaited target when there is
one. The pending page links here. An unknown application is the API's 404, as a page.
"""

from __future__ import annotations

from flask import Response, request

from pyscheduler.dao import why as why_dao
from pyscheduler_web.console.common import bp, ctx, partition_choices, render_page, selected_partition
from pyscheduler_web.http import HTTPError

__all__: list[str] = []


@bp.get("/ui/why")
def why_page() -> Response:
    choices = partition_choices()
    partition = selected_partition(choices)
    app_id = request.args.get("app", "")
    if not app_id:
        raise HTTPError(400, 'the "app" parameter names the application')
    answer = why_dao.why(ctx(), partition, app_id)
    return render_page("console/why.html", choices=choices, partition=partition, answer=answer)
