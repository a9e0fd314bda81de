"""``GET /ui/roles``: the partition's role histories (``docs/role-history.md``): the keys,
and for ``?key=`` (the first key when absent) the nodes each role ran on with their counts,
the nodes a new instance of each role would be sent to, and the pending asks aimed at a
history node. The values are ``/ws/v1/partition/{p}/rolehistory/{key}``'s; ``lastUsed`` is
shown as a UTC time (0: never stopped there).
"""

from __future__ import annotations

import time

from flask import Response, request

from pyscheduler.dao.role_history import role_history_keys
from pyscheduler_web.console.common import bp, ctx, dao, partition_choices, render_page, selected_partition

__all__: list[str] = []


def _utc(ns: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ns // 1_000_000_000)) if ns else ""


@bp.get("/ui/roles")
def roles_page() -> Response:
    choices = partition_choices()
    partition = selected_partition(choices)
    keys = role_history_keys(ctx(), partition) if partition else []
    key = request.args.get("key", "") or (keys[0] if keys else "")
    history = dao.role_history(ctx(), partition, key) if key else None
    rows = []
    if history is not None:
        for node_id, entry in history["nodes"].items():
            for role, counts in entry["roles"].items():
                rows.append({"node": node_id, "offline": entry["offline"], "role": role, **counts,
                             "lastUsedText": _utc(counts["lastUsed"])})
    return render_page("console/roles.html", choices=choices, partition=partition, keys=keys, key=key,
                       history=history, rows=rows)
