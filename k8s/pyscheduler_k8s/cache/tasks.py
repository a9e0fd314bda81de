"""The pods the shim knows, their applications and gangs: the records whose state
(:mod:`.task_state`) only changes here, through :meth:`TaskCache._transition`.

Every method takes the cache's lock for a short, I/O-free step and answers with what the caller
must do next (tell the core, write to the API server) after the lock is released: the core may
call back on the calling thread, and an API round trip must never stall the other threads.

- **A pod first seen** (:meth:`TaskCache.add_pod`): its record is born in the state
  :func:`.initial_task_state` gives. Its application is added to the core with its first pod
  (a gang application with its task groups: :mod:`..gang`); a member of a gang not running yet
  waits; a pod of an application the core refused is held with the core's reason. A shim
  restarting recovers a gang half-way (:mod:`..gang_recovery`): its application is made with
  its task groups from its first pod seen, even a bound one, in the state the caller found
  (reserving: its members wait; running: they ask).
- **A gang waits as a whole while members of it are gated.** A pod whose ``spec.schedulingGates``
  are not empty is GATED (no ask, no application). A gang's pod that would make its application
  (the application is not known yet: the gang has not started reserving) while another known
  pod of the same application is gated by its gates is GANG_GATED: no application, no
  placeholders, no ask, so the gang's room is not held for members that cannot run. When the
  last gated pod of that application loses its gates (or goes), the GANG_GATED pods are
  forgotten and handed back (:meth:`TaskCache.take_released`) to be added again as new pods:
  the gang then reserves as usual. A gang already reserving or running is never undone: a gated
  pod of it stays GATED, and joins it when its gates go (its placeholder waits for it meanwhile;
  the core releases placeholders left unused at the gang's timeout). A member waiting for its
  PodGroup to appear is not counted as gated (its whole group waits for the same object).
- **A pod seen again** (:meth:`TaskCache.update_pod`): its labels and deletion mark are counted
  again (its application, task group and application tags stay those it was first seen
  with); a pending pod bound by another binder is an allocation there; a gated pod whose last
  gate went is forgotten (it is then added as a new pod).
- **A pod gone** (:meth:`TaskCache.remove_pod`): forgotten; the last member of an application
  removes it.
- **The core's answers**: an allocation, a release, a gang's state, a refused application.

The inter-pod index and the volume state are updated with the records (the predicates read
them under the same lock).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from pyscheduler.si import messages as si
from pyscheduler_k8s.cache.task_state import APPLICATION_MEMBER_STATES, CoreAppState, GangEvent, GangState, \
    InvalidTaskTransition, TaskEvent, TaskState, gang_accepts, initial_task_state, next_gang_state, next_task_state, \
    task_accepts
from pyscheduler_k8s.cluster_index import ClusterIndex, PlacedPod, PodConstraints
from pyscheduler_k8s.gang import GangSpec
from pyscheduler_k8s.nodes import NodeView
from pyscheduler_k8s.pods import PodView
from pyscheduler_k8s.predicates import HostPort
from pyscheduler_k8s.volumes import VolumeState

__all__ = ["AddedPod", "ENDED_BY_CORE", "Gang", "GangChange", "GangGated", "GoneRecord", "Task", "TaskCache"]

log = logging.getLogger(__name__)

#: The core's releases the shim acts on by deleting the pod, and confirms once it is gone.
ENDED_BY_CORE: Final = frozenset({si.TerminationType.PREEMPTED_BY_SCHEDULER,
                                  si.TerminationType.PLACEHOLDER_REPLACED, si.TerminationType.TIMEOUT})


@dataclass
class Task:
    """One pod the shim knows (YuniKorn's task)."""

    view: PodView
    raw: Mapping[str, Any]
    state: TaskState
    node: str = ""
    ports: frozenset[HostPort] = frozenset()
    #: Its required inter-pod affinity and spread constraints (:mod:`..cluster_index`).
    constraints: PodConstraints | None = None
    #: The last reason written to the pod (so it is written once).
    reason: str = ""
    #: Bindings of it that failed (the next ask waits longer each time).
    failures: int = 0
    #: The core ended its allocation (preempted it, replaced the placeholder, or a gang's
    #: timeout): the pod is being deleted, and its end confirms the release with this type.
    ending: si.TerminationType | None = None

    def placed(self) -> PlacedPod:
        """The pod as the cluster index counts it on its node."""
        labels = (self.raw.get("metadata") or {}).get("labels") or {}
        return PlacedPod(self.view.uid, self.view.namespace, labels, self.node, self.view.deleting,
                         self.constraints.anti_affinity if self.constraints is not None else ())


@dataclass
class Gang:
    """A gang application (its first pod had task groups); ``resuming``: the core said Resuming
    (a Soft timeout), so its next Accepted runs it."""

    spec: GangSpec
    state: GangState = GangState.RESERVING
    resuming: bool = False


@dataclass(frozen=True)
class AddedPod:
    """A pod first seen, and what the caller does about it (by its ``state``)."""

    view: PodView
    state: TaskState
    #: Its application is new: add it to the core (with ``gang``'s task groups).
    new_app: bool = False
    gang: GangSpec | None = None
    #: Its application was refused by the core: the pod is failed with this reason.
    refused: str | None = None
    #: A waiting member of a gang that failed already: the pod is failed too.
    gang_failed: bool = False


@dataclass(frozen=True)
class GoneRecord:
    """A pod forgotten: its record as it was, and whether its application left with it."""

    task: Task
    app_left: bool


@dataclass(frozen=True)
class GangGated:
    """A gang held while members of it are gated: its held pods and what their condition says."""

    uids: tuple[str, ...]
    message: str


@dataclass(frozen=True)
class GangChange:
    """A gang that runs (its waiting members ask) or failed (they are failed)."""

    runs: bool
    members: tuple[PodView, ...]


class TaskCache:
    """The pods' records, applications, refused applications and gangs (see the module doc)."""

    def __init__(self, lock: threading.Lock, index: ClusterIndex, volumes: VolumeState) -> None:
        self._lock = lock
        self._index = index
        self._volumes = volumes
        self._pods: dict[str, Task] = {}
        #: The pods asking for host ports (a pod's spec does not change): the predicates compare
        #: a pod's ports with these only, not with every pod (that scan was most of the shim's
        #: time with 10,000 pods).
        self._port_pods: set[str] = set()
        #: Application id -> the uids of its pods known to the core.
        self._apps: dict[str, set[str]] = {}
        #: Applications the core refused: their reason, and their pods (held, the reason on
        #: them); forgotten with their last pod, so a pod arriving meanwhile is held at once.
        self._rejected_apps: dict[str, tuple[str, set[str]]] = {}
        self._gangs: dict[str, Gang] = {}
        #: Application id -> its GATED pods gated by their own gates (the module doc), and its
        #: GANG_GATED pods; the records handed back to be added again once none is gated.
        self._gated: dict[str, set[str]] = {}
        self._gang_gated: dict[str, set[str]] = {}
        self._released: list[Mapping[str, Any]] = []
        #: Application id -> its placeholders the core replaced whose member the watch has not
        #: seen bound yet (:meth:`replacements_in_flight`).
        self._replacing: dict[str, int] = {}
        #: Set on the way out (:meth:`hold_replacements`): no new replacement is started.
        self._replacements_held = False

    def _transition(self, task: Task, event: TaskEvent) -> bool:
        """The only place a record's state changes (the caller holds the lock). An event its
        state does not accept is logged and leaves it as it is."""
        try:
            task.state = next_task_state(task.view.uid, task.state, event)
        except InvalidTaskTransition as exc:
            log.warning("pod %s: %s (left as it is)", task.view.key, exc)
            return False
        return True

    # -- the watch's pods --------------------------------------------------------------------------

    def update_pod(self, view: PodView, pod: Mapping[str, Any], gated: bool) -> bool | None:
        """A pod seen again: None when it is not known (add it), else whether it was pending and
        is now bound by another binder (its ask is withdrawn and its allocation recorded)."""
        with self._lock:
            known = self._pods.get(view.uid)
            if known is not None and known.state is TaskState.GATED and not gated:
                del self._pods[view.uid]  # its last gate went: from here on a new pod of ours
                self._port_pods.discard(view.uid)  # (the predicates must not meet it half added)
                self._ungated(known.view.app_id, view.uid)
                return None
            if known is None:
                return None
            if known.state is TaskState.GANG_GATED and view.node_name:
                self._forget_gang_gated(known)  # bound by another binder: recovered as a new pod
                return None
            if view.node_name and not known.view.node_name and not view.placeholder:
                self._replaced(known.view.app_id)
            # Its application, task group and application tags are what they were when it was
            # first seen (a label edited later must not move it to another application).
            known.raw = pod
            known.view = replace(view, app_id=known.view.app_id, task_group=known.view.task_group,
                                 app_tags=known.view.app_tags)
            bound_elsewhere = known.state is TaskState.ASK and bool(view.node_name)
            if bound_elsewhere and self._transition(known, TaskEvent.BOUND_ELSEWHERE):
                known.node = view.node_name
            if known.node and known.state in (TaskState.ALLOCATED, TaskState.FOREIGN):
                self._index.place(known.placed())  # its labels or deletion may have changed
                self._volumes.place(view.uid, pod, known.node)
            return bound_elsewhere

    def add_pod(self, view: PodView, pod: Mapping[str, Any], *, ours: bool, gated: bool,
                constraints: PodConstraints | None, ports: frozenset[HostPort],
                gang: GangSpec | None, gang_gate: bool = False, recovered: GangState | None = None
                ) -> AddedPod | None:
        """A pod first seen (see the module doc); None for another scheduler's pending pod
        (nothing to do until it is bound). ``gang_gate``: a gated pod gated by its own gates
        (it holds its gang); ``recovered``: ``gang`` is that of a gang a restart found started,
        in this state (its application is made with it, even from a bound pod)."""
        with self._lock:
            if not ours and not view.node_name:
                return None
            refused = self._rejected_apps.get(view.app_id) if ours and not view.problem and not gated else None
            if refused is not None:
                view = replace(view, problem=refused[0])
                refused[1].add(view.uid)
            gang_state = self._gangs[view.app_id].state if view.app_id in self._gangs else None
            new_gang = gang is not None and view.app_id not in self._apps
            member_waits = not view.placeholder and (gang_state is not None and gang_state is not GangState.RUNNING
                                                     or new_gang and recovered is not GangState.RUNNING)
            # The first pod of a gang not started, while other pods of it are gated: held.
            held = new_gang and recovered is None and not view.placeholder and bool(self._gated.get(view.app_id))
            state = initial_task_state(ours=ours, bound=bool(view.node_name), gated=gated,
                                       problem=bool(view.problem), gang_waits=member_waits, gang_gated=held)
            task = Task(view, pod, state, node=view.node_name, ports=ports, constraints=constraints)
            self._pods[view.uid] = task
            if ports:
                self._port_pods.add(view.uid)
            if task.node:
                self._index.place(task.placed())
                self._volumes.place(view.uid, pod, task.node)
            elif ours and constraints is not None and state is not TaskState.HELD:
                self._index.track(view.uid, constraints)
            if state is TaskState.GATED and gang_gate:
                self._gated.setdefault(view.app_id, set()).add(view.uid)
            elif state is TaskState.GANG_GATED:
                self._gang_gated.setdefault(view.app_id, set()).add(view.uid)
            member = ours and state in APPLICATION_MEMBER_STATES
            new_app = member and view.app_id not in self._apps
            if member:
                self._apps.setdefault(view.app_id, set()).add(view.uid)
            if new_app and gang is not None:
                self._gangs[view.app_id] = Gang(gang, recovered or GangState.RESERVING)
            return AddedPod(view, state, new_app=new_app, gang=gang if new_app else None,
                            refused=refused[0] if refused is not None else None,
                            gang_failed=state is TaskState.WAITING and gang_state is GangState.FAILED)

    def _ungated(self, app_id: str, uid: str) -> None:
        """A pod of ``app_id`` is gated no more (its gates went, or it went): the last one hands
        back the application's GANG_GATED pods (the caller holds the lock)."""
        gated = self._gated.get(app_id)
        if gated is None or uid not in gated:
            return
        gated.discard(uid)
        if gated:
            return
        del self._gated[app_id]
        for held in self._gang_gated.pop(app_id, ()):
            task = self._pods.pop(held, None)
            if task is not None:
                self._port_pods.discard(held)
                self._index.untrack(held)
                self._released.append(task.raw)

    def _forget_gang_gated(self, task: Task) -> None:
        """A GANG_GATED record leaves (the caller holds the lock)."""
        uid, app_id = task.view.uid, task.view.app_id
        self._pods.pop(uid, None)
        self._port_pods.discard(uid)
        held = self._gang_gated.get(app_id)
        if held is not None:
            held.discard(uid)
            if not held:
                del self._gang_gated[app_id]

    def take_released(self) -> list[Mapping[str, Any]]:
        """The GANG_GATED pods handed back since the last call (see the module doc), forgotten
        already: each is to be added again as a new pod."""
        with self._lock:
            released, self._released = self._released, []
            return released

    def gang_gated(self, app_id: str) -> GangGated | None:
        """The pods of ``app_id`` held while members of its gang are gated, and the message
        they show (None: none is held)."""
        with self._lock:
            held = self._gang_gated.get(app_id)
            if not held:
                return None
            gated = len(self._gated.get(app_id, ()))
            return GangGated(tuple(sorted(held)), f"gang {app_id} waits: {gated} of {gated + len(held)} members "
                                                  f"are gated (it reserves once none is)")

    def remove_pod(self, uid: str) -> GoneRecord | None:
        """The pod ended or was deleted: its record is forgotten (None: it was not known)."""
        with self._lock:
            task = self._pods.pop(uid, None)
            self._port_pods.discard(uid)
            self._index.remove(uid)
            self._volumes.remove(uid)
            self._index.untrack(uid)
            if task is None:
                return None
            app_id = task.view.app_id
            if task.state is TaskState.GATED:
                self._ungated(app_id, uid)
            elif task.state is TaskState.GANG_GATED:
                self._forget_gang_gated(task)
            refused = self._rejected_apps.get(app_id)
            if refused is not None:
                refused[1].discard(uid)
                if not refused[1]:
                    del self._rejected_apps[app_id]
            app_left = False
            if task.state in APPLICATION_MEMBER_STATES:
                members = self._apps.get(app_id)
                if members is not None:
                    members.discard(uid)
                    if not members:
                        del self._apps[app_id]
                        self._gangs.pop(app_id, None)
                        self._replacing.pop(app_id, None)
                        app_left = True
            return GoneRecord(task, app_left)

    def missing(self, present: set[str], belongs: Callable[[Mapping[str, Any]], bool] | None = None
                ) -> list[dict[str, Any]]:
        """The pods known but not in a fresh list (deleted while no watch ran); ``belongs``:
        only the records the list covers (a hub's records come from several clusters' lists)."""
        with self._lock:
            return [dict(task.raw) for uid, task in self._pods.items()
                    if uid not in present and (belongs is None or belongs(task.raw))]

    # -- the core's answers ------------------------------------------------------------------------

    def allocated(self, uid: str, node: str, checked_node: Callable[[str], NodeView | None]) -> bool:
        """The core placed the pod's ask on ``node``: True to bind it (False: it is not
        asking any more, e.g. deleted meanwhile). ``checked_node`` (called under the lock) gives
        the node as the volume filters see it."""
        with self._lock:
            task = self._pods.get(uid)
            if task is None or not task_accepts(task.state, TaskEvent.ALLOCATE):
                return False
            self._transition(task, TaskEvent.ALLOCATE)
            task.node = node
            # Counted at once: the core's next cycle checks the next pod against it.
            self._index.place(task.placed())
            # Its unbound WaitForFirstConsumer claims' volumes chosen and assumed (Reserve).
            self._volumes.place(uid, task.raw, node, reserve=checked_node(node))
            return True

    def hold_replacements(self) -> None:
        """On the way out: a placeholder the core replaces from now on is left as it is (not
        deleted), so that no replacement starts that the stopping shim could not finish."""
        with self._lock:
            self._replacements_held = True

    def replacements_in_flight(self) -> int:
        """Placeholders the core replaced whose member is not bound yet (as the watch shows the
        members): a leader stopping gracefully waits for none to be left, so that the next one
        does not find a placeholder deleted and its member pending, which it cannot tell from a
        placeholder never made (:mod:`..gang_recovery`)."""
        with self._lock:
            return sum(self._replacing.values())

    def _replaced(self, app_id: str) -> None:
        """A member of ``app_id`` is now bound: one replacement of its gang done (lock held)."""
        left = self._replacing.get(app_id, 0) - 1
        if left > 0:
            self._replacing[app_id] = left
        else:
            self._replacing.pop(app_id, None)

    def is_held(self, uid: str) -> bool:
        with self._lock:
            task = self._pods.get(uid)
            return task is not None and task.state is TaskState.HELD

    def released_by_core(self, released: si.AllocationRelease) -> tuple[PodView, bool] | None:
        """The core ended an allocation or dropped an ask: the pod and whether to delete it.
        Preempted, a placeholder replaced, or a gang's timeout: deleted, and its end confirms
        the release. A gang's pending placeholder at the timeout goes too (nothing to confirm);
        a member's pending ask dropped waits for what its gang does next. Anything else (its
        node was removed): released, its end sends nothing more."""
        kind = released.termination_type
        with self._lock:
            task = self._pods.get(released.allocation_key)
            if task is None:
                return None
            delete = False
            if task.state is TaskState.ALLOCATED and kind in ENDED_BY_CORE:
                if kind is si.TerminationType.PLACEHOLDER_REPLACED:
                    if self._replacements_held:
                        return None  # stopping: the placeholder stays, the next leader replaces it
                    app_id = task.view.app_id
                    self._replacing[app_id] = self._replacing.get(app_id, 0) + 1
                task.ending, delete = kind, True
            elif task.state is TaskState.ASK and kind is si.TerminationType.TIMEOUT:
                delete = task.view.placeholder
                self._transition(task, TaskEvent.PLACEHOLDER_ASK_DROPPED if delete else TaskEvent.MEMBER_ASK_DROPPED)
            elif task.state is TaskState.ALLOCATED:
                self._transition(task, TaskEvent.ALLOCATION_RELEASED)
                task.node = ""
                self._index.remove(task.view.uid)
                self._volumes.remove(task.view.uid)
            return task.view, delete

    def gang_event(self, app_id: str, core_state: CoreAppState) -> GangChange | None:
        """The core changed an application's state. For a gang: Resuming (a Soft timeout) is
        noted, so its next Accepted runs it; Running runs it (its waiting members ask); Failed
        (a Hard timeout) fails them. None: not a gang, or nothing to do."""
        with self._lock:
            gang = self._gangs.get(app_id)
            if gang is None:
                return None
            if core_state is CoreAppState.RESUMING:
                gang.resuming = True
                return None
            runs = core_state is CoreAppState.RUNNING or (core_state is CoreAppState.ACCEPTED and gang.resuming)
            event = GangEvent.RUN if runs else GangEvent.FAIL if core_state is CoreAppState.FAILED else None
            if event is None or not gang_accepts(gang.state, event):
                return None
            gang.state = next_gang_state(app_id, gang.state, event)
            waiting = [task for uid in self._apps.get(app_id, ())
                       if (task := self._pods.get(uid)) is not None and task.state is TaskState.WAITING]
            if runs:
                for task in waiting:
                    self._transition(task, TaskEvent.GANG_RUNS)
            return GangChange(runs, tuple(task.view for task in waiting))

    def has_application(self, app_id: str) -> bool:
        """The application is known to the core (a pod of it is a member)."""
        with self._lock:
            return app_id in self._apps

    def gang_exists(self, app_id: str) -> bool:
        with self._lock:
            return app_id in self._gangs

    def application_rejected(self, app_id: str, reason: str) -> list[str]:
        """The core refused the application: its pods are held with the reason (and the pods
        of it arriving later too, until its last pod is gone); their uids."""
        with self._lock:
            uids = list(self._apps.pop(app_id, ()))
            self._gangs.pop(app_id, None)
            self._rejected_apps.setdefault(app_id, (reason, set()))[1].update(uids)
            for uid in uids:
                task = self._pods.get(uid)
                if task is not None:
                    self._transition(task, TaskEvent.APPLICATION_REJECTED)
                    self._index.untrack(uid)
            return uids

    # -- binding -----------------------------------------------------------------------------------

    def binding_failed(self, uid: str, *, retry: bool) -> tuple[PodView, int] | None:
        """Its binding failed: the allocation's room is given back (what was assumed for its
        claims too) and it asks again; with ``retry``, the failures so far (its backoff).
        None: nothing to give back. So for a pod the core ended meanwhile (``ending``: a
        placeholder it replaced, a victim it preempted; the binding raced the pod's deletion):
        its allocation is the core's to end, and the pod's end confirms it with the core's
        type. Giving it back as failed would release it otherwise: a replaced placeholder
        counted timed out, its replacement undone, its member left with no placeholder (then
        placed as a plain ask, wherever there is room)."""
        with self._lock:
            task = self._pods.get(uid)
            if task is None or task.ending is not None:
                return None
            self._transition(task, TaskEvent.BIND_FAILED)
            task.node = ""
            self._index.remove(uid)
            self._volumes.remove(uid)
            if retry:
                task.failures += 1
            return task.view, task.failures

    def requeue(self, uid: str) -> PodView | None:
        """A hub pod placed in a member cluster that was lost asks again (its room there is
        forgotten); None when it is not placed (gone, or asking already)."""
        with self._lock:
            task = self._pods.get(uid)
            if task is None or not task_accepts(task.state, TaskEvent.REQUEUE):
                return None
            self._transition(task, TaskEvent.REQUEUE)
            task.node = ""
            self._index.remove(uid)
            self._volumes.remove(uid)
            return task.view

    def placed_on(self, node_prefix: str) -> list[str]:
        """The pods of ours allocated on a node whose name starts with ``node_prefix`` (a hub's
        member: ``[east]``), or released there by the core and not asking again yet."""
        with self._lock:
            return [uid for uid, task in self._pods.items()
                    if task.state in (TaskState.ALLOCATED, TaskState.RELEASED)
                    and (task.node.startswith(node_prefix) or task.view.node_name.startswith(node_prefix))]

    def raw(self, uid: str) -> Mapping[str, Any] | None:
        """The pod as last seen (read-only), or None."""
        with self._lock:
            task = self._pods.get(uid)
            return None if task is None else task.raw

    def asking(self, uid: str) -> PodView | None:
        """The pod if it still asks (after a failed binding's backoff)."""
        with self._lock:
            task = self._pods.get(uid)
            return task.view if task is not None and task.state is TaskState.ASK else None

    # -- reading -------------------------------------------------------------------------------------

    def target(self, uid: str) -> tuple[str, str] | None:
        """The (namespace, name) of a pod the shim knows, or None."""
        with self._lock:
            task = self._pods.get(uid)
            return None if task is None else (task.view.namespace, task.view.name)

    def pending_target(self, uid: str) -> tuple[str, str] | None:
        """The (namespace, name) of a pod that still waits (not placed), or None."""
        with self._lock:
            task = self._pods.get(uid)
            if task is None or task.state is TaskState.ALLOCATED:
                return None
            return task.view.namespace, task.view.name

    def note_reason(self, uid: str, message: str) -> bool:
        """Records ``message`` as the pod's pending reason: True when it is new for a pod that
        still waits (so it is written once)."""
        with self._lock:
            task = self._pods.get(uid)
            if task is None or task.reason == message or task.state is TaskState.ALLOCATED:
                return False
            task.reason = message
            return True

    def scores_nodes(self, uid: str) -> bool:
        """The pod has preferred terms (the core asks ``score_nodes`` for its candidates)."""
        with self._lock:
            task = self._pods.get(uid)
            return task is not None and task.constraints is not None and not task.constraints.preferences.empty

    def pod_key(self, uid: str) -> str | None:
        with self._lock:
            task = self._pods.get(uid)
            return None if task is None else task.view.key

    def pod_state(self, uid: str) -> TaskState | None:
        with self._lock:
            task = self._pods.get(uid)
            return None if task is None else task.state

    def applications(self) -> dict[str, set[str]]:
        with self._lock:
            return {app: set(uids) for app, uids in self._apps.items()}

    # -- for the predicates (the caller holds the lock) ---------------------------------------------

    def task(self, uid: str) -> Task | None:
        return self._pods.get(uid)

    def port_holders(self, node: str, other_than: str) -> list[Task]:
        """The pods on ``node`` holding host ports, but ``other_than``."""
        return [task for task in map(self._pods.__getitem__, self._port_pods)
                if task.node == node and task.view.uid != other_than]
