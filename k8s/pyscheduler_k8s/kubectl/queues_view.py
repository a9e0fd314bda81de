"""``queues`` and ``top``: the queue tree with usage bars, the busiest queues and nodes. Pure
functions of the REST answers (``/ws/v1/partition/{p}/queues``, ``.../nodes``) to text.

A queue's limit for a resource is its own max when it has one, else what it may reach under its
ancestors' max and the partition's size: used plus ``headroom`` (the API's figure). The bar is
filled to the used share of that limit; a ``|`` marks the guaranteed amount.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pyscheduler_k8s.kubectl.units import bar, format_quantity, format_resource, resource_names, share, table

__all__ = ["format_queue_tree", "format_top", "queue_limits"]

BAR_WIDTH = 20


def queue_limits(queue: Mapping[str, Any]) -> dict[str, tuple[int, str]]:
    """Per resource: (limit, ``max`` when it is the queue's own max, else ``limit``)."""
    used = queue.get("allocatedResource") or {}
    maximum = queue.get("maxResource") or {}
    headroom = queue.get("headroom") or {}
    limits: dict[str, tuple[int, str]] = {}
    for name in resource_names(maximum, headroom):
        if name in maximum:
            limits[name] = (int(maximum[name]), "max")
        else:
            limits[name] = (int(used.get(name, 0)) + int(headroom[name]), "limit")
    return limits


def _dominant_share(used: Mapping[str, Any], limits: Mapping[str, int]) -> float:
    shares = [s for name, limit in limits.items() if (s := share(int(used.get(name, 0)), limit)) is not None]
    return max(shares, default=0.0)


def _short_name(queue: Mapping[str, Any]) -> str:
    return str(queue.get("queuename", "")).rsplit(".", 1)[-1]


def _headline(queue: Mapping[str, Any]) -> str:
    parts = [_short_name(queue)]
    status = queue.get("status", "Active")
    if status != "Active":
        parts.append(f"({status})")
    running = int(queue.get("runningApps", 0))
    facts = [f"{running} running app{'' if running == 1 else 's'}"]
    if queue.get("maxRunningApps"):
        facts[0] += f" (max {queue['maxRunningApps']})"
    if queue.get("pendingResource"):
        facts.append(f"pending {format_resource(queue['pendingResource'])}")
    if queue.get("preemptingResource"):
        facts.append(f"preempting {format_resource(queue['preemptingResource'])}")
    return " ".join(parts) + "  " + ", ".join(facts)


def _resource_lines(queue: Mapping[str, Any], only: Sequence[str] | None) -> list[str]:
    used = queue.get("allocatedResource") or {}
    guaranteed = queue.get("guaranteedResource") or {}
    limits = queue_limits(queue)
    names = [n for n in resource_names(used, guaranteed, limits) if only is None or n in only]
    width = max((len(n) for n in names), default=0)
    lines = []
    for name in names:
        amount = int(used.get(name, 0))
        limit, kind = limits.get(name, (0, ""))
        mark = guaranteed.get(name)
        text = f"{name.ljust(width)}  {bar(amount, limit or None, BAR_WIDTH, mark)}  {format_quantity(name, amount):>7}"
        if limit:
            fraction = share(amount, limit) or 0.0
            text += f" of {format_quantity(name, limit)} {kind} ({fraction:.0%})"
        if mark is not None:
            text += f", guaranteed {format_quantity(name, mark)}"
        lines.append(text)
    return lines


def _tree(queue: Mapping[str, Any], prefix: str, connector: str, only: Sequence[str] | None) -> Iterator[str]:
    yield prefix + connector + _headline(queue)
    below = prefix + {"├── ": "│   ", "└── ": "    ", "": ""}[connector]
    children: list[Mapping[str, Any]] = list(queue.get("children") or ())
    # The resource lines sit under the headline, beside the line to the next child.
    rail = "│   " if children else "    "
    for line in _resource_lines(queue, only):
        yield below + rail + line
    for index, child in enumerate(children):
        yield from _tree(child, below, "└── " if index == len(children) - 1 else "├── ", only)


def format_queue_tree(root: Mapping[str, Any], resources: Sequence[str] | None = None) -> str:
    """The tree under ``root`` (the queues endpoint's answer): a headline per queue (running
    applications, pending and preempting resources) and a bar per resource; ``resources``:
    only these."""
    return "\n".join(_tree(root, "", "", resources))


def _walk(queue: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    yield queue
    for child in queue.get("children") or ():
        yield from _walk(child)


def _used_of(name: str, used: Mapping[str, Any], total: Mapping[str, Any]) -> str:
    if name not in total:
        return format_quantity(name, int(used.get(name, 0))) if name in used else "-"
    return f"{format_quantity(name, int(used.get(name, 0)))}/{format_quantity(name, int(total[name]))}"


def format_top(root: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]], limit: int = 10) -> str:
    """The ``limit`` leaf queues and nodes with the highest dominant share (the largest of
    used/limit over their resources), busiest first."""
    leaves = [q for q in _walk(root) if q.get("isLeaf")]
    ranked_queues = sorted(((_dominant_share(q.get("allocatedResource") or {},
                                             {n: lim for n, (lim, _) in queue_limits(q).items()}), q) for q in leaves),
                           key=lambda pair: (-pair[0], str(pair[1].get("queuename"))))[:limit]
    queue_rows = []
    for fraction, q in ranked_queues:
        used = q.get("allocatedResource") or {}
        limits = {n: lim for n, (lim, _) in queue_limits(q).items()}
        queue_rows.append([str(q.get("queuename")), f"{fraction:.0%}", _used_of("vcore", used, limits),
                           _used_of("memory", used, limits), format_resource(q.get("pendingResource")),
                           str(q.get("runningApps", 0))])
    ranked_nodes = sorted(((_dominant_share(n.get("allocated") or {}, n.get("capacity") or {}), n) for n in nodes),
                          key=lambda pair: (-pair[0], str(pair[1].get("nodeID"))))[:limit]
    node_rows = []
    for fraction, n in ranked_nodes:
        allocated, capacity = n.get("allocated") or {}, n.get("capacity") or {}
        state = "" if n.get("schedulable", True) else " (unschedulable)"
        node_rows.append([str(n.get("nodeID")) + state, f"{fraction:.0%}", _used_of("vcore", allocated, capacity),
                          _used_of("memory", allocated, capacity), _used_of("pods", allocated, capacity),
                          str(len(n.get("allocations") or ()))])
    sections = [
        "Busiest queues (largest share of a resource's limit):",
        table(["QUEUE", "SHARE", "VCORE", "MEMORY", "PENDING", "APPS"], queue_rows) if queue_rows else "  (no queue)",
        "",
        "Busiest nodes (largest share of a resource's capacity):",
        table(["NODE", "SHARE", "VCORE", "MEMORY", "PODS", "ALLOCATIONS"], node_rows) if node_rows else "  (no node)",
    ]
    return "\n".join(sections)
