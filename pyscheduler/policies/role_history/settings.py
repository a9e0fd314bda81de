"""Which role an ask plays, which history an application uses, and each role's policy.

Names (application and ask tags, pyscheduler extensions):

- ``pyscheduler.io/role`` on an ask names its role; an ask without it plays the role named by
  its task group (``task_group_name``), if any. An ask with neither has no role history.
- ``pyscheduler.io/role-history-key`` on an application names its history; on an ask it names
  that ask's (an application holding several workloads, as the Kubernetes shim's one application
  per namespace does); without either the history key is the application id. A resubmitted application with the same key inherits the
  history (its roles come back to the nodes they ran on).

Per-role settings come from, first to last: the application tag for that role
(``pyscheduler.io/role-history.<setting>.<role>``), the application tag for every role
(``pyscheduler.io/role-history.<setting>``), the queue property (``role-history.<setting>``),
the default. The settings:

- ``policy``: ``default`` (history first, the normal node order after the placement timeout),
  ``strict`` (history nodes only, never falls back, ignores failures and node state: an ask
  whose history nodes are gone waits), ``anywhere`` (no history).
- ``placement-timeout``: a Go duration (``30s``, ``2m``) or seconds; default 30 s (Slider's).
- ``failure-threshold``: an integer; a node is skipped for a role once its recent failures
  are **more** than this (default 3); ``-1`` means unlimited (never skipped).
- ``failure-window``: how often recent failures are forgotten (default ``6h``).

A setting that does not parse is ignored (the next source applies), never an error: a bad tag
must not make an application unschedulable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Final

from pyscheduler.common.goduration import parse_seconds
from pyscheduler.si.vocabulary import HISTORY_KEY_TAG, ROLE_TAG

__all__ = [
    "DEFAULT_FAILURE_THRESHOLD",
    "DEFAULT_FAILURE_WINDOW",
    "DEFAULT_PLACEMENT_TIMEOUT",
    "HISTORY_KEY_TAG",
    "ROLE_TAG",
    "TAG_PREFIX",
    "PlacementPolicy",
    "RoleSettings",
    "history_key_of",
    "role_of",
    "role_settings",
]

TAG_PREFIX: Final = "pyscheduler.io/role-history."
PROPERTY_PREFIX: Final = "role-history."
DEFAULT_PLACEMENT_TIMEOUT: Final = 30.0
DEFAULT_FAILURE_THRESHOLD: Final = 3
DEFAULT_FAILURE_WINDOW: Final = 6 * 3600.0


class PlacementPolicy(Enum):
    DEFAULT = "default"
    STRICT = "strict"
    ANYWHERE = "anywhere"


@dataclass(frozen=True, slots=True)
class RoleSettings:
    policy: PlacementPolicy = PlacementPolicy.DEFAULT
    placement_timeout: float = DEFAULT_PLACEMENT_TIMEOUT
    failure_threshold: int = DEFAULT_FAILURE_THRESHOLD
    failure_window: float = DEFAULT_FAILURE_WINDOW

    def over_threshold(self, failed_recently: int) -> bool:
        """More recent failures than the threshold; never with an unlimited (-1) threshold
        (Slider treated any negative threshold as always exceeded)."""
        return self.failure_threshold >= 0 and failed_recently > self.failure_threshold


DEFAULT_SETTINGS: Final = RoleSettings()


def role_of(tags: Mapping[str, str], task_group_name: str = "") -> str:
    """The ask's role ("" for none)."""
    return tags.get(ROLE_TAG, "") or task_group_name


def history_key_of(app_id: str, tags: Mapping[str, str], ask_tags: Mapping[str, str] | None = None) -> str:
    """The ask's tag, else the application's, else the application id."""
    return (ask_tags.get(HISTORY_KEY_TAG, "") if ask_tags else "") or tags.get(HISTORY_KEY_TAG, "") or app_id


def role_settings(role: str, app_tags: Mapping[str, str], queue_properties: Mapping[str, str]) -> RoleSettings:
    """The role's settings from the application's tags, the queue's properties and defaults."""
    if not any(k.startswith(TAG_PREFIX) for k in app_tags) and not any(
        k.startswith(PROPERTY_PREFIX) for k in queue_properties
    ):
        return DEFAULT_SETTINGS

    def lookup(name: str) -> list[str]:
        found = [app_tags.get(f"{TAG_PREFIX}{name}.{role}"), app_tags.get(f"{TAG_PREFIX}{name}"),
                 queue_properties.get(f"{PROPERTY_PREFIX}{name}")]
        return [v.strip() for v in found if v is not None and v.strip()]

    policy = next((p for p in (_policy(v) for v in lookup("policy")) if p is not None), PlacementPolicy.DEFAULT)
    timeout = next((t for t in (_seconds(v) for v in lookup("placement-timeout")) if t is not None),
                   DEFAULT_PLACEMENT_TIMEOUT)
    threshold = next((t for t in (_threshold(v) for v in lookup("failure-threshold")) if t is not None),
                     DEFAULT_FAILURE_THRESHOLD)
    window = next((t for t in (_seconds(v) for v in lookup("failure-window")) if t is not None and t > 0),
                  DEFAULT_FAILURE_WINDOW)
    return RoleSettings(policy, timeout, threshold, window)


def _policy(text: str) -> PlacementPolicy | None:
    try:
        return PlacementPolicy(text.lower())
    except ValueError:
        return None


def _seconds(text: str) -> float | None:
    try:
        return parse_seconds(text)
    except ValueError:
        return None


def _threshold(text: str) -> int | None:
    try:
        value = int(text)
    except ValueError:
        return None
    return value if value >= -1 else None
