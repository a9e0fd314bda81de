"""``GET /ui/``: the partition (capacity, nodes, applications) and its queue tree.

Each queue is one row per resource it mentions (in its max, guaranteed, allocated or pending
resources): used, guaranteed, max and pending, and a bar of the used share of the max (of the
partition's capacity for a queue without a max) with a mark at the guaranteed share. Values
are the ``/ws/v1/partition/{p}/queues`` answer's, unchanged (``data-value`` holds the API's
integer; the cell shows it in a person's units).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flask import Response, request

from pyscheduler_web.console.common import (
    bp,
    ctx,
    dao,
    partition_choices,
    percent,
    render_page,
    selected_partition,
)
from pyscheduler_web.http import go_redirect

__all__ = ["QueueLine", "queue_lines"]


@dataclass(frozen=True)
class QueueLine:
    """One resource of one queue, as the page draws it."""

    queue: str
    depth: int
    is_leaf: bool
    first: bool
    resource: str
    used: int
    guaranteed: int | None
    maximum: int | None
    pending: int
    #: The used share of the bar's whole, in percent (0..100).
    used_pct: int
    #: The guaranteed mark's place on the bar, in percent (None: no guarantee).
    guaranteed_pct: int | None
    over_guaranteed: bool


def queue_lines(root: dict[str, Any], capacity: dict[str, int]) -> list[QueueLine]:
    """The queue tree, depth first in the API's order (children by name), as drawable lines."""
    lines: list[QueueLine] = []

    def walk(queue: dict[str, Any], depth: int) -> None:
        maximum: dict[str, int] = queue.get("maxResource", {})
        guaranteed: dict[str, int] = queue.get("guaranteedResource", {})
        used: dict[str, int] = queue.get("allocatedResource", {})
        pending: dict[str, int] = queue.get("pendingResource", {})
        names = sorted({*maximum, *guaranteed, *used, *pending}) or ["vcore"]
        for i, name in enumerate(names):
            whole = maximum.get(name, capacity.get(name, 0))
            amount = used.get(name, 0)
            g = guaranteed.get(name)
            lines.append(QueueLine(
                queue=queue["queuename"], depth=depth, is_leaf=bool(queue.get("isLeaf")), first=i == 0,
                resource=name, used=amount, guaranteed=g, maximum=maximum.get(name), pending=pending.get(name, 0),
                used_pct=percent(amount, whole), guaranteed_pct=None if g is None else percent(g, whole),
                over_guaranteed=g is not None and amount > g,
            ))
        for child in queue.get("children", []):
            walk(child, depth + 1)

    walk(root, 0)
    return lines


@bp.get("/ui")
def console_root() -> Response:
    """``/ui`` -> ``/ui/`` (301, query kept), as httprouter's trailing-slash redirect answers."""
    return go_redirect("/ui/", 301, request.query_string.decode("latin-1"))


@bp.get("/ui/")
def queues_page() -> Response:
    choices = partition_choices()
    partition = selected_partition(choices)
    if not partition:
        return render_page("console/queues.html", choices=choices, partition="", info=None, lines=[])
    root = dao.queues(ctx(), partition)
    info = next(
        (p for p in dao.partitions(ctx())
         if f"[{p.get('clusterId', '')}]{p['name']}" == partition or p["name"] == partition),
        None,
    )
    capacity: dict[str, int] = (info or {}).get("capacity", {}).get("capacity", {})
    return render_page("console/queues.html", choices=choices, partition=partition, info=info,
                       lines=queue_lines(root, capacity))
