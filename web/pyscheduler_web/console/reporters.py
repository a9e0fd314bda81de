"""``GET /ui/reporters``: the node reporter plugins (``docs/reporter.md``) as
``/ws/v1/reporters`` lists them: kind, state, polls, failures, the last poll and error, and the
fields the manager rejected. Not partition-specific (the selector only carries the partition
to the other pages).
"""

from __future__ import annotations

import time

from flask import Response

from pyscheduler.reporter import views
from pyscheduler_web.console.common import bp, partition_choices, render_page, selected_partition, service

__all__: list[str] = []


def _utc(ns: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ns // 1_000_000_000)) if ns else "never"


@bp.get("/ui/reporters")
def reporters_page() -> Response:
    reporters = views.reporters(service().reporters)
    for reporter in reporters:
        reporter["lastPollText"] = _utc(int(reporter.get("lastPoll", 0) or 0))
    choices = partition_choices()
    return render_page("console/reporters.html", choices=choices, partition=selected_partition(choices),
                       reporters=reporters)
