"""Who preempted an allocation, and under which rule: the note a victim carries from the moment
it is chosen (``Allocation.preemption_note``) to the APP REMOVE ALLOC_PREEMPT event that records
its end, where it is the event's message (YuniKorn leaves that message empty; the event ring has
no other field for it). The "why preempted" answer (:mod:`pyscheduler.dao.why_preempted`) reads
it back from the ring with :func:`parse_note`.

The message reads as a sentence, with every name JSON-quoted so that it parses back exactly
whatever the names hold::

    Preempted by ask "pod-7" of application "job-2" in queue "root.prod" (rule GUARANTEED); victim queue "root.batch"

Quota enforcement has no preemptor ask (its application and key are empty). Rules:
``GUARANTEED`` (an ask below its queue's guarantee, or a topology domain's gang),
``REQUIRED_NODE`` (a daemon set ask on its node), ``QUOTA`` (a queue's lowered max).
"""

from __future__ import annotations

import json
import re
from typing import Final, NamedTuple

__all__ = ["GUARANTEED", "QUOTA", "REQUIRED_NODE", "PreemptionNote", "format_note", "parse_note"]

GUARANTEED: Final = "GUARANTEED"
REQUIRED_NODE: Final = "REQUIRED_NODE"
QUOTA: Final = "QUOTA"

_QUOTED = r'"(?:[^"\\]|\\.)*"'
_NOTE = re.compile(
    rf"Preempted by ask ({_QUOTED}) of application ({_QUOTED}) in queue ({_QUOTED}) "
    rf"\(rule ([A-Z_]+)\); victim queue ({_QUOTED})"
)


class PreemptionNote(NamedTuple):
    preemptor_application_id: str
    preemptor_allocation_key: str
    preemptor_queue: str
    rule: str
    victim_queue: str


def format_note(note: PreemptionNote) -> str:
    q = json.dumps
    return (f"Preempted by ask {q(note.preemptor_allocation_key)} of application "
            f"{q(note.preemptor_application_id)} in queue {q(note.preemptor_queue)} "
            f"(rule {note.rule}); victim queue {q(note.victim_queue)}")


def parse_note(message: str) -> PreemptionNote | None:
    """The note in an event message, None when the message is not one (an older event, or a
    message cut at the event system's length limit)."""
    match = _NOTE.fullmatch(message)
    if match is None:
        return None
    key, app, queue, rule, victim_queue = match.groups()
    try:
        return PreemptionNote(json.loads(app), json.loads(key), json.loads(queue), rule, json.loads(victim_queue))
    except ValueError:
        return None
