"""The pods' watch events turned into the cache's records and the core's asks (YuniKorn's pod
event handlers): a pod of another scheduler bound to a node occupies it (a *foreign*
allocation); a pod of ours already bound is an existing allocation (a restart recovers it, never
binds it again); a pending pod of ours is an ask of its application (:mod:`.pods`; the first pod
of an application adds it, a gang's first pod creates its placeholders: :mod:`.gang`).

A pod with gates gets kube-scheduler's ``SchedulingGated`` condition and no ask until its last
gate goes; a pod naming a Kubernetes PodGroup (``spec.schedulingGroup``, :mod:`.podgroup`) is a
member of the group's application (a gang of ``minCount`` for a gang group, its placeholders
sized by the member that creates it; the task-groups annotations are not read then), and waits
like a gated pod (``SchedulingGated``, the message naming the group) while the group does not
exist, until :meth:`PodEvents.rehandle` hands it back; a pod whose problem is on it (a selector
Kubernetes would refuse, a task-groups annotation that does not parse...) is held with the
problem as its ``Unschedulable`` reason; a pod of an application the core refused is failed with
the core's reason.

A gang whose members are gated waits as a whole (:mod:`.cache.tasks`): its pods not gated show
``SchedulingGated`` with the message ``gang <app> waits: N of M members are gated`` (kept current
while it waits), and are added again once the last gate goes.

A pod that succeeds, fails or is deleted releases its allocation (or withdraws its ask; a
release the core asked for is confirmed with the core's termination type); the last pod of an
application removes the application. A fresh list (at start, or after a watch expired)
reconciles: what disappeared meanwhile is released, what appeared is added, bound pods first
(recovered as allocations, never bound again), then gated ones (so a gang's gated members are
known before its others), then the rest. A gang the list shows started (a restart while it
reserves or runs, :mod:`.gang_recovery`) is resumed: its application is made with its task
groups from its first pod handled, even a bound placeholder (recovered as the core's placeholder
allocation), with the founder's queue, user and tags; it reserves again (its members wait, its
missing placeholders are made under their old names) or runs, and nothing is placed twice.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from pyscheduler.si import messages as si
from pyscheduler.si.vocabulary import APP_CREATION_TIME_TAG
from pyscheduler_k8s.cache.cluster import DELETED
from pyscheduler_k8s.cache.podgroups import PodGroupCache
from pyscheduler_k8s.cache.task_state import RELEASE_ON_END_STATES, GangState, TaskState
from pyscheduler_k8s.cache.tasks import AddedPod, TaskCache
from pyscheduler_k8s.cluster_index import PodConstraints, pod_constraints
from pyscheduler_k8s.core_client import CoreClient
from pyscheduler_k8s.event_recorder import GATED_MESSAGE, SCHEDULING_GATED, EventRecorder
from pyscheduler_k8s.gang import GangError, GangSpec, gang_of
from pyscheduler_k8s.gang_recovery import GangRecovery, recoveries
from pyscheduler_k8s.kubeapi import KubeApi
from pyscheduler_k8s.pod_writes import APPLICATION_REJECTED, PodWrites
from pyscheduler_k8s.podgroup import PodGroupSpec, application_id, gang_spec, group_name_of, member_view
from pyscheduler_k8s.pods import PodView, app_id_of, is_terminal, pod_view
from pyscheduler_k8s.predicates import host_ports
from pyscheduler_k8s.selectors import SelectorError

__all__ = ["PODS_PATH", "PodEvents"]

PODS_PATH = "/api/v1/pods"

#: How a cluster's pod is shown to the handlers (a hub's member pods, :mod:`.hub.marks`); None:
#: not a pod for the handlers at all.
PodTransform = Callable[[dict[str, Any]], dict[str, Any] | None]


def _gated(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("spec") or {}).get("schedulingGates"))


@dataclass(frozen=True)
class _Resumed:
    """A started gang resumed by the pod being handled: the view its application is made from
    (its founder's), its gang and PodGroup, and what the list showed of it."""

    view: PodView
    gang: GangSpec
    group: PodGroupSpec | None
    found: GangRecovery


def _constraints_of(pod: Mapping[str, Any]) -> tuple[PodConstraints | None, str]:
    """The pod's inter-pod constraints, or why they cannot be read (a selector Kubernetes
    would refuse)."""
    try:
        return pod_constraints(pod), ""
    except SelectorError as exc:
        return None, str(exc)


class PodEvents:
    def __init__(self, api: KubeApi, tasks: TaskCache, core: CoreClient, recorder: EventRecorder, writes: PodWrites,
                 scheduler_names: tuple[str, ...], *, transform: PodTransform | None = None,
                 belongs: Callable[[Mapping[str, Any]], bool] | None = None,
                 groups: PodGroupCache | None = None) -> None:
        """``api``: the cluster whose pods these are; ``transform`` (a hub's): how each is shown
        to the handlers; ``belongs``: which known records a fresh list of ``api`` covers;
        ``groups``: the PodGroups (None: not read at all)."""
        self._api = api
        self._transform = transform
        self._belongs = belongs
        self._tasks = tasks
        self._core = core
        self._recorder = recorder
        self._writes = writes
        self._scheduler_names = scheduler_names
        self._groups = groups
        #: One pod handled at a time: the pods' watch and the PodGroups' (handing back the pods
        #: that waited for a group) must not both add one pod.
        self._handling = threading.Lock()
        #: While a fresh list is reconciled: its started gangs by application (:mod:`.gang_recovery`).
        self._started_gangs: dict[str, GangRecovery] = {}

    def relist(self) -> str:
        """Lists every pod and reconciles (see the module doc); the list's version."""
        items, version = self._api.list(PODS_PATH)
        self.reconcile(items)
        return version

    def reconcile(self, items: list[dict[str, Any]]) -> None:
        """A fresh list of the cluster's pods applied (see the module doc)."""
        present = {str((p.get("metadata") or {}).get("uid", "")) for p in items}
        for raw in self._tasks.missing(present, self._belongs):
            self._handle_shown(DELETED, raw)
        # Bound pods first (their room is counted before any ask), then gated ones (a gang's
        # gated members known before its others), then the rest; a started gang is resumed.
        shown = items if self._transform is None else [p for p in map(self._transform, items) if p is not None]
        with self._handling:
            self._started_gangs = recoveries(shown, self._application_of)
        try:
            for item in sorted(shown, key=lambda pod: (not (pod.get("spec") or {}).get("nodeName"), not _gated(pod))):
                self._handle_shown("ADDED", item)
        finally:
            with self._handling:
                self._started_gangs = {}

    def _application_of(self, pod: Mapping[str, Any]) -> str:
        """The application of a pod of ours, as :meth:`_as_member` makes it; "" for another
        scheduler's pod, or one that ended unplaced. Read from the pod's fields, not its whole
        view (a restart lists every pod of the cluster)."""
        spec = pod.get("spec") or {}
        if spec.get("schedulerName", "") not in self._scheduler_names or is_terminal(pod) and not spec.get("nodeName"):
            return ""
        name = group_name_of(pod) if self._groups is not None and self._groups.followed else ""
        return application_id(str((pod.get("metadata") or {}).get("namespace", "")), name) if name else app_id_of(pod)

    def handle(self, kind: str, pod: dict[str, Any]) -> None:
        """One watch event of the cluster's pod."""
        shown = pod if self._transform is None else self._transform(pod)
        if shown is not None:
            self._handle_shown(kind, shown)

    def rehandle(self, uid: str) -> None:
        """A known pod handled again as last seen (its PodGroup appeared)."""
        raw = self._tasks.raw(uid)
        if raw is not None:
            self._handle_shown("MODIFIED", dict(raw))

    def _as_member(self, view: PodView, pod: Mapping[str, Any], ours: bool) -> tuple[PodView, PodGroupSpec | None, str]:
        """The pod as its PodGroup's member (unchanged when it names none, or PodGroups are not
        followed), its group, and why it waits for the group ("": it does not)."""
        name = group_name_of(pod) if ours and self._groups is not None and self._groups.followed else ""
        if not name or self._groups is None:
            return view, None, ""
        group = self._groups.lookup_or_wait(view.uid, view.namespace, name) if not view.node_name \
            else self._groups.lookup(view.namespace, name)
        view = member_view(view, name, group)
        if group is None and not view.node_name:
            return view, None, f"waiting for PodGroup {view.namespace}/{name} to appear"
        return view, group, ""

    def _handle_shown(self, kind: str, pod: dict[str, Any]) -> None:
        with self._handling:
            self._handle_locked(kind, pod)
            # A gang whose last gated member went: its held pods are new pods again.
            while released := self._tasks.take_released():
                for raw in released:
                    self._handle_locked("ADDED", dict(raw))

    def _handle_locked(self, kind: str, pod: dict[str, Any]) -> None:
        view = pod_view(pod)
        if not view.uid:
            return
        if kind == DELETED or is_terminal(pod):
            self._gone(view)
            return
        ours = view.scheduler_name in self._scheduler_names
        view, group, waits_for = self._as_member(view, pod, ours)
        gated = ours and not view.node_name and (_gated(pod) or bool(waits_for))
        bound_elsewhere = self._tasks.update_pod(view, pod, gated)
        if bound_elsewhere is not None:
            if waits_for and not _gated(pod):  # its gates went, its group is still missing
                self._recorder.mark_pending(view.uid, waits_for, SCHEDULING_GATED)
            if bound_elsewhere:  # a pending pod of ours bound by someone else: its ask goes, its allocation stays
                self._core.release(view.app_id, view.uid, si.TerminationType.STOPPED_BY_RM, "bound by another binder")
                self._core.ask(view)
            return
        constraints, problem = _constraints_of(pod)
        if problem and ours and not view.problem and not view.node_name:
            view = replace(view, problem=f"pod {view.key}: {problem}")
        gang: GangSpec | None = None
        recovered: GangState | None = None
        resumed = self._resumed(view) if ours and not view.problem and not gated else None
        if resumed is not None:
            gang = resumed.gang
            recovered = GangState.RUNNING if resumed.found.running(gang) else GangState.RESERVING
        elif ours and not view.problem and not view.node_name and not gated:
            try:
                gang = gang_of(pod) if group is None else gang_spec(group, pod, view) if group.gang else None
            except GangError as exc:
                view = replace(view, problem=f"pod {view.key}: {exc}")
        added = self._tasks.add_pod(view, pod, ours=ours, gated=gated, constraints=constraints,
                                    ports=frozenset(host_ports(pod)), gang=gang, gang_gate=gated and _gated(pod),
                                    recovered=recovered)
        if added is not None:
            self._added(added, pod, group, waits_for, resumed)
            if added.state in (TaskState.GATED, TaskState.GANG_GATED):
                self._show_gang_gated(view.app_id)

    def _resumed(self, view: PodView) -> _Resumed | None:
        """The started gang the pod's application is made from, when a fresh list showed it
        started and it is not known yet (None: not a recovery, or its founder has no gang)."""
        found = self._started_gangs.get(view.app_id)
        if found is None or self._tasks.has_application(view.app_id):
            return None
        founder = found.founder
        founder_view = pod_view(founder)
        name = group_name_of(founder) if self._groups is not None and self._groups.followed else ""
        group = self._groups.lookup(founder_view.namespace, name) if name and self._groups is not None else None
        if name:
            founder_view = member_view(founder_view, name, group)
        try:
            gang = gang_of(founder) if group is None else \
                gang_spec(group, founder, founder_view) if group.gang else None
        except GangError:
            gang = None
        if gang is None:
            del self._started_gangs[view.app_id]  # an ordinary application (its pods say why)
            return None
        return _Resumed(founder_view, gang, group, found)

    def _show_gang_gated(self, app_id: str) -> None:
        """The pods of ``app_id`` held for its gated members say how many are gated."""
        held = self._tasks.gang_gated(app_id)
        if held is not None:
            for uid in held.uids:
                self._recorder.mark_pending(uid, held.message, SCHEDULING_GATED)

    def _added(self, added: AddedPod, pod: dict[str, Any], group: PodGroupSpec | None, waits_for: str,
               resumed: _Resumed | None) -> None:
        """What a pod first seen needs, by the state it was born in (``group``: its PodGroup;
        ``waits_for``: why it waits for one; ``resumed``: the started gang it resumes)."""
        view, state = added.view, added.state
        if state is TaskState.FOREIGN:
            self._core.foreign(view)
            return
        if state is TaskState.GATED:
            gates = _gated(pod) or not waits_for
            self._recorder.mark_pending(view.uid, GATED_MESSAGE if gates else waits_for, SCHEDULING_GATED)
            return
        if state is TaskState.GANG_GATED:
            return  # its condition: _show_gang_gated
        if state is TaskState.HELD:
            if added.refused is not None:
                self._writes.submit(self._writes.fail_pods, [view.uid], APPLICATION_REJECTED, added.refused)
            else:
                self._recorder.mark_unschedulable(view.uid, view.problem)
            return
        if added.new_app and resumed is not None and added.gang is not None:
            self._resume(resumed, added.gang)
        elif added.new_app:
            if added.gang is not None and group is not None and self._groups is not None:
                self._groups.gang_added(view.app_id, group)  # before the core may answer
            self._core.add_application(view, added.gang)
            if added.gang is not None and not view.placeholder:
                self._writes.submit(self._writes.create_placeholders, view.app_id, added.gang, pod)
        if state is TaskState.WAITING:
            if added.gang_failed:
                self._writes.submit(self._writes.fail_pods, [view.uid])
            return
        self._core.ask(view)

    def _resume(self, resumed: _Resumed, gang: GangSpec) -> None:
        """A started gang's application made again (see the module doc)."""
        view, found = resumed.view, resumed.found
        del self._started_gangs[view.app_id]
        if resumed.group is not None and self._groups is not None:
            self._groups.gang_added(view.app_id, resumed.group)
        if found.reserving_since and not found.running(gang):  # its placeholder timeout runs on
            view = replace(view, app_tags=(*view.app_tags, (APP_CREATION_TIME_TAG, str(found.reserving_since))))
        self._core.add_application(view, gang)
        if found.owner is not None and found.makes_placeholders(gang):
            self._writes.submit(self._writes.create_placeholders, view.app_id, gang, found.owner)

    def _gone(self, view: PodView) -> None:
        """The pod ended or was deleted (see the module doc)."""
        gone = self._tasks.remove_pod(view.uid)
        self._recorder.forget(view.uid)
        if self._groups is not None:
            self._groups.forget(view.uid)
        if gone is None:
            return
        task = gone.task
        if task.state in (TaskState.GATED, TaskState.GANG_GATED):
            self._show_gang_gated(task.view.app_id)
        if task.state in RELEASE_ON_END_STATES:
            self._core.release("" if task.state is TaskState.FOREIGN else task.view.app_id, view.uid,
                               task.ending or si.TerminationType.STOPPED_BY_RM,
                               "pod deleted" if task.ending else "pod ended")
        if gone.app_left:
            if self._groups is not None:
                self._groups.application_left(task.view.app_id)
            self._core.remove_application(task.view.app_id)
