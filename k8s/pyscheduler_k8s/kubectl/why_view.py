"""``why``, ``position`` and ``preempted``: the answers of docs/design/why.md in a person's terms.
Pure functions of the JSON the contract fixes.

The views switch on the contract's codes and print the server's ``message`` for people; they
never parse a message. ``details`` are printed generically (a resource map as resources, anything
else as it is), so a detail the contract adds later is shown rather than dropped.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pyscheduler_k8s.kubectl.units import format_resource, ordinal, table

__all__ = ["format_pending", "format_position", "format_preempted", "format_why"]

#: What each code means in a few words (the contract's table), printed before the server's message.
CODE_TITLES: dict[str, str] = {
    "NONE": "nothing stops it: the next cycle places it",
    "APPLICATION_STATE": "its application is not schedulable in its state",
    "GANG_RESERVING": "its gang's placeholders are not all placed yet",
    "WAITING_FOR_PLACEHOLDER": "it waits for its placeholder to be released",
    "USER_LIMIT": "its user's limit",
    "GROUP_LIMIT": "its group's limit",
    "QUEUE_MAX": "its queue's max",
    "PARENT_MAX": "a parent queue's max",
    "FAIR_SHARE_ORDER": "applications ahead of it take the room first",
    "REQUIRED_NODE": "its required node refuses it",
    "ROLE_HISTORY_NODE": "it waits for its role history node",
    "MEMBER_CLUSTER": "no member cluster may take it now",
    "TOPOLOGY_DOMAIN": "it waits for a topology domain with room",
    "RESERVED": "it holds a reservation on a node without room yet",
    "NO_NODE_FITS": "no node has room",
    "PREDICATES": "nodes have room but the RM refuses every one",
}

#: Node refusal codes in words (``nodes.refusals``).
REFUSAL_WORDS: dict[str, str] = {
    "UNSCHEDULABLE": "unschedulable",
    "INSUFFICIENT": "not enough {resource}",
    "RESERVED": "reserved for another ask",
    "OUTSIDE_SCOPE": "outside the member cluster or topology domain it may use",
}


def _is_resource(value: Any) -> bool:
    return isinstance(value, Mapping) and bool(value) and all(isinstance(v, int) for v in value.values())


def _value(value: Any) -> str:
    if _is_resource(value):
        return format_resource(value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k} {_value(v)}" for k, v in value.items()) or "-"
    if isinstance(value, list):
        return ", ".join(_value(v) for v in value) or "-"
    return str(value)


def _details(details: Mapping[str, Any] | None) -> str:
    return "; ".join(f"{key}: {_value(value)}" for key, value in (details or {}).items())


def _refusal(row: Mapping[str, Any]) -> str:
    code = str(row.get("code", ""))
    if code == "PREDICATE":
        words = str(row.get("reason", "refused by the RM"))
    else:
        words = REFUSAL_WORDS.get(code, code).format(resource=row.get("resource", "a resource"))
    return f"{row.get('count', 0)} {words}"


def _nodes(nodes: Mapping[str, Any]) -> str:
    head = f"{nodes.get('fit', 0)} of {nodes.get('total', 0)} nodes would take it"
    refusals = [_refusal(row) for row in nodes.get("refusals") or ()]
    return head + ("; refused: " + ", ".join(refusals) if refusals else "")


def _position(position: Mapping[str, Any], queue: str) -> str:
    text = f"{ordinal(int(position.get('inQueue', 0)))} of {position.get('queueLength', '?')} in {queue}"
    ahead = position.get("aheadInQueue")
    if ahead:
        text += f" (those ahead need {format_resource(ahead)})"
    if position.get("inPartition"):
        text += f", {ordinal(int(position['inPartition']))} of {position.get('partitionLength', '?')} in the partition"
    return text


def _gang(gang: Mapping[str, Any]) -> str:
    text = (f"{gang.get('style', '')} gang, {gang.get('state', '')}: {gang.get('placeholdersPlaced', 0)} placeholders "
            f"placed, {gang.get('placeholdersPending', 0)} pending")
    if gang.get("placeholderAsk"):
        text += f" ({format_resource(gang['placeholderAsk'])} in all)"
    return text


def _ask(ask: Mapping[str, Any]) -> Iterator[str]:
    name = str(ask.get("allocationKey", ""))
    traits = []
    if ask.get("taskGroupName"):
        traits.append(f"task group {ask['taskGroupName']}")
    if ask.get("placeholder"):
        traits.append("placeholder")
    if ask.get("priority"):
        traits.append(f"priority {ask['priority']}")
    yield f"Ask {name}" + (f" ({', '.join(traits)})" if traits else "") + f" needs {format_resource(ask.get('resource'))}"
    code = str(ask.get("code", ""))
    title = CODE_TITLES.get(code)
    yield f"  Stopped by {code}" + (f" ({title})" if title and code != "NONE" else "") + f": {ask.get('message', title or '')}"
    if ask.get("details"):
        yield f"    {_details(ask['details'])}"
    if ask.get("nodes"):
        yield f"  Nodes: {_nodes(ask['nodes'])}"
    reservation = ask.get("reservation")
    if reservation:
        since = f" since {reservation['since']}" if reservation.get("since") else ""
        yield f"  Reservation: node {reservation.get('nodeID', '?')}{since}"
    preemption = ask.get("preemption")
    if preemption:
        tried = "attempted" if preemption.get("attempted") else "not attempted"
        yield f"  Preemption: {tried}, {preemption.get('code', '')}: {preemption.get('message', '')}"
    waits = ask.get("waitsFor")
    if waits:
        yield f"  Waits for: {str(waits.get('kind', '')).lower().replace('_', ' ')} {waits.get('target', '')}"


def format_why(answer: Mapping[str, Any], asks: Sequence[str] | None = None, max_asks: int = 10) -> str:
    """The why answer: the application, its summary, its position and gang, then per pending
    ask the first cause with its numbers, the nodes grouped by refusal, reservation, preemption
    and what it waits for. ``asks``: only these allocation keys (a pod's); at most ``max_asks``
    asks are printed, the others counted."""
    queue = str(answer.get("queueName", ""))
    lines = [f"Application {answer.get('applicationID')} in queue {queue} (partition {answer.get('partition')}): "
             f"{answer.get('applicationState')}",
             f"  {answer.get('summary', '')}"]
    if answer.get("position"):
        lines.append(f"Position: {_position(answer['position'], queue)}")
    if answer.get("gang"):
        lines.append(f"Gang: {_gang(answer['gang'])}")
    all_asks: list[Mapping[str, Any]] = list(answer.get("asks") or ())
    chosen = [a for a in all_asks if asks is None or a.get("allocationKey") in asks]
    if not all_asks:
        lines.append("No pending ask.")
    elif not chosen:
        lines.append(f"None of its {len(all_asks)} pending asks is this pod's.")
    for ask in chosen[:max_asks]:
        lines.extend(_ask(ask))
    if len(chosen) > max_asks:
        lines.append(f"... and {len(chosen) - max_asks} more pending asks (-o json for all)")
    return "\n".join(lines)


def format_pending(entries: Sequence[Mapping[str, Any]]) -> str:
    """The pending list (``/ws/v1/partition/{p}/pending``), in the order the next cycle visits
    the applications."""
    if not entries:
        return "No application is pending."
    rows = [[str(e.get("inPartition", "")), str(e.get("inQueue", "")), str(e.get("applicationID", "")),
             str(e.get("queueName", "")), format_resource(e.get("pending")), format_resource(e.get("aheadInQueue"))]
            for e in entries]
    return table(["#", "IN QUEUE", "APPLICATION", "QUEUE", "PENDING", "AHEAD IN QUEUE NEED"], rows)


def format_position(application: Mapping[str, Any]) -> str:
    """One application's position (its JSON's ``queuePosition``, absent without pending asks)."""
    name, queue = application.get("applicationID", ""), application.get("queueName", "")
    position = application.get("queuePosition")
    if not position:
        return f"Application {name} in queue {queue} has no pending ask: it is in no queue's order."
    return (f"Application {name} is {ordinal(int(position.get('inQueue', 0)))} in queue {queue} and "
            f"{ordinal(int(position.get('inPartition', 0)))} in the partition, pending "
            f"{format_resource(application.get('pendingResource'))}.")


_PREEMPTED_KNOWN = ("preemptorApplicationID", "preemptorAllocationKey", "preemptorQueueName", "rule", "applicationID",
                    "allocationKey", "queueName", "released", "time")


def _in_queue(queue: Any) -> str:
    return f" (queue {queue})" if queue else ""


def format_preempted(answer: Mapping[str, Any]) -> str:
    """Who took a preempted allocation's place, under which rule, when, and whether the RM has
    confirmed it gone; fields the answer adds later after it, as they are."""
    victim = (f"{answer.get('allocationKey', '?')} of application {answer.get('applicationID', '?')}"
              f"{_in_queue(answer.get('queueName'))}")
    preemptor = (f"{answer.get('preemptorAllocationKey', '?')} of application "
                 f"{answer.get('preemptorApplicationID', '?')}{_in_queue(answer.get('preemptorQueueName'))}")
    when = f" at {answer['time']}" if answer.get("time") else ""
    lines = [f"Allocation {victim} was preempted{when} for {preemptor} under rule {answer.get('rule', '?')}."]
    if "released" in answer:
        lines.append("  It is gone." if answer["released"] else "  The RM has not confirmed it gone yet.")
    rest = {k: v for k, v in answer.items() if k not in _PREEMPTED_KNOWN}
    if rest:
        lines.append("  " + _details(rest))
    return "\n".join(lines)
