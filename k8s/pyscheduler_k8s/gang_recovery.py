"""A gang found started when the shim (re)starts: what its pods in the first list say about it,
so that the restart resumes it instead of making it an ordinary application (issue 34). Pure: no
I/O, no state.

A gang has **started** when the list holds a placeholder pod of its application, or a bound
member (a pod of it that is not a placeholder) of an application one of whose pods describes a
gang (task groups, or a PodGroup named). For each started gang :func:`recoveries` gives
a :class:`GangRecovery`:

- **founder**: the pod its application is made from (its queue, user, tags and task groups, or
  its PodGroup's gang): the placeholders' owner when it is listed (the pod that made the gang),
  else a bound member that describes the gang (task groups, or a PodGroup named), else a pending
  one, else a placeholder (its copy of the task groups).
- **owner**: the pod the placeholder pods belong to, whose uid is in their deterministic names
  (:func:`.gang.placeholder_pods`): the one their ``ownerReferences`` name, when listed; None
  when it is not (Kubernetes' garbage collector deletes placeholders whose owner is gone, so
  none is made then). Without placeholders, the founder.
- **running** (:meth:`GangRecovery.running`): the gang is recovered RUNNING when a member is
  bound (even one ended: the gang ran) or every placeholder of it is bound (the core would have
  run it): its members ask and replace the placeholders left. Else it is recovered RESERVING:
  its bound placeholders are the core's placeholder allocations again, its pending ones ask,
  its members wait until the core runs the gang.
- **reserving since** (:attr:`GangRecovery.reserving_since`): when its first placeholder pod was
  created (seconds since the epoch; 0 without placeholders). A gang resumed RESERVING tells the
  core as its application's creation time, so its placeholder timeout counts from then, not
  from the restart (the core's ``placeholder_timeout_ns``).
- **placeholders to make** (:meth:`GangRecovery.makes_placeholders`): a RESERVING gang with fewer
  placeholder pods than members (the shim stopped while making them) makes them again with the
  owner's names: those that exist answer ``AlreadyExists``, so there is never a second set.

A placeholder the core replaced just before the shim stopped (deleted, its member not bound
yet) cannot be told from one never made: the gang is then recovered RESERVING and the placeholder made again; the
gang runs once it is placed (one placement later than needed, nothing placed twice). A graceful
stop (SIGTERM, a rolling upgrade) finishes the replacements under way first
(:meth:`.shim.KubeShim.finish_replacements`), so this is a crashed leader's case.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pyscheduler_k8s.gang import TASK_GROUPS_ANNOTATION, GangSpec
from pyscheduler_k8s.pods import PLACEHOLDER_ANNOTATION, timestamp_seconds

__all__ = ["GangRecovery", "gang_members", "recoveries"]


@dataclass(frozen=True)
class GangRecovery:
    """A started gang as the list shows it (see the module doc)."""

    founder: Mapping[str, Any]
    owner: Mapping[str, Any] | None
    placeholders: int
    bound_placeholders: int
    member_bound: bool
    reserving_since: int = 0

    def running(self, gang: GangSpec) -> bool:
        return self.member_bound or self.bound_placeholders >= gang_members(gang)

    def makes_placeholders(self, gang: GangSpec) -> bool:
        return not self.running(gang) and self.owner is not None and self.placeholders < gang_members(gang)


def gang_members(gang: GangSpec) -> int:
    """How many members (and placeholders) the gang has."""
    return sum(group.min_member for group in gang.groups)


def _meta(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return pod.get("metadata") or {}


def _placeholder(pod: Mapping[str, Any]) -> bool:
    return str((_meta(pod).get("annotations") or {}).get(PLACEHOLDER_ANNOTATION, "")).lower() == "true"


def _bound(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName"))


def _describes_gang(pod: Mapping[str, Any]) -> bool:
    """The pod says what its gang is: task groups, or a PodGroup it names."""
    group = (pod.get("spec") or {}).get("schedulingGroup")
    return TASK_GROUPS_ANNOTATION in (_meta(pod).get("annotations") or {}) or isinstance(group, dict) and bool(group)


def _owner_uid(placeholders: list[Mapping[str, Any]]) -> str:
    for pod in placeholders:
        for reference in _meta(pod).get("ownerReferences") or ():
            if isinstance(reference, dict) and reference.get("kind") == "Pod" and reference.get("uid"):
                return str(reference["uid"])
    return ""


def recoveries(pods: Iterable[Mapping[str, Any]], application_of: Callable[[Mapping[str, Any]], str]
               ) -> dict[str, GangRecovery]:
    """The started gangs of a fresh list, by application id. ``application_of``: the application
    of a pod of ours ("" for another scheduler's pod, or one to leave out). Every pod of an
    application counts (a member without task groups of its own too), its founder is one that
    describes the gang."""
    by_app: dict[str, list[Mapping[str, Any]]] = {}
    for pod in pods:
        app_id = application_of(pod)
        if app_id:
            by_app.setdefault(app_id, []).append(pod)
    found: dict[str, GangRecovery] = {}
    for app_id, listed in by_app.items():
        placeholders = [pod for pod in listed if _placeholder(pod)]
        members = [pod for pod in listed if not _placeholder(pod)]
        bound_members = [pod for pod in members if _bound(pod)]
        described = [pod for pod in members if _describes_gang(pod)]
        if not placeholders and not (bound_members and described):
            continue  # no gang, or one not started (made as a new gang)
        owner_uid = _owner_uid(placeholders)
        owner = next((pod for pod in members if str(_meta(pod).get("uid", "")) == owner_uid), None)
        founder = owner or next((pod for pod in described if _bound(pod)), None) or (described or placeholders)[0]
        since = min((timestamp_seconds(_meta(pod).get("creationTimestamp")) for pod in placeholders), default=0)
        found[app_id] = GangRecovery(founder, owner if placeholders else founder, len(placeholders),
                                     sum(1 for pod in placeholders if _bound(pod)), bool(bound_members), since)
    return found
