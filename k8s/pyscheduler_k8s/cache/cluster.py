"""The cluster's objects other than pods, as the shim's predicates and the core see them: nodes
(and what their reporters' CustomNodeResources add), namespaces' labels, PriorityClasses'
``allow-preemption`` annotation, and the storage objects of the volume filters.

Each watch event or list is applied here under the cache's lock and answered with what the core
must hear (node infos), never sent from here: the caller sends them without the lock.

- **Nodes** (:mod:`..nodes`): the first sight of a node creates it in the core (drained when it
  is cordoned); a capacity or attribute change updates it; a cordon drains it; a deletion
  decommissions it.
- **Reported layer** (:mod:`..cnr`): a node's CustomNodeResource gives the core its reported
  attributes, occupied resources and capacity; its labels join the node's for the predicates (a
  label the Node itself has wins). Deleted: the reported layer is emptied.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any, Final

from pyscheduler.common.resources import Resource
from pyscheduler.si import messages as si
from pyscheduler_k8s.cluster_index import ClusterIndex
from pyscheduler_k8s.cnr import ReportedNode, reported_node
from pyscheduler_k8s.nodes import NodeView, node_view
from pyscheduler_k8s.pods import allow_preemption_of
from pyscheduler_k8s.volumes import VolumeState

__all__ = ["ClusterCache", "DELETED", "name_of", "si_resource"]

log = logging.getLogger(__name__)

#: The watch event type of a deletion (every other type adds or updates).
DELETED: Final = "DELETED"


def name_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def si_resource(quantities: Mapping[str, int]) -> Resource:
    return Resource(dict(quantities))


def _as_checked(view: NodeView, reported: ReportedNode | None) -> NodeView:
    """The node as the predicates check it: a label its reporters give counts unless the Node
    itself has that label (the Node's own labels win)."""
    if reported is None or not reported.labels:
        return view
    return replace(view, labels={**reported.labels, **view.labels})


def _capacity(view: NodeView | None, reported: ReportedNode | None) -> Resource:
    """What pods may use on the node: the capacity its reporters give, else its allocatable."""
    if reported is not None and reported.facts.capacity is not None:
        return reported.facts.capacity
    return si_resource(view.capacity if view is not None else {})


def _reported_update(name: str, capacity: Resource, reported: ReportedNode | None) -> si.NodeInfo:
    facts = reported.facts if reported is not None else None
    return si.NodeInfo(node_id=name, action=si.NodeAction.UPDATE, schedulable_resource=capacity,
                       reported_attributes=dict(facts.attributes) if facts is not None else {},
                       reported_occupied=facts.occupied if facts is not None and facts.occupied else Resource())


class ClusterCache:
    """Nodes, reported layers, namespaces, PriorityClasses and storage objects (see the module
    doc). ``lock`` is the cache's one lock, shared with the pods' records; ``index`` and
    ``volumes`` are guarded by it."""

    def __init__(self, lock: threading.Lock, index: ClusterIndex, volumes: VolumeState) -> None:
        self._lock = lock
        self._index = index
        self._volumes = volumes
        self._nodes: dict[str, NodeView] = {}
        #: Node name -> what its CustomNodeResource says (the node reporter agents'), and the
        #: node as the predicates see it (its labels with the reported ones under them).
        self._reported: dict[str, ReportedNode] = {}
        self._checked: dict[str, NodeView] = {}
        #: PriorityClass name -> its ``allow-preemption`` annotation (None: it has none).
        self._priority_classes: dict[str, bool | None] = {}

    # -- nodes -------------------------------------------------------------------------------------

    def node_names(self) -> list[str]:
        with self._lock:
            return list(self._nodes)

    def checked_node(self, name: str) -> NodeView | None:
        """The node as the predicates check it (the caller holds the lock)."""
        return self._checked.get(name)

    def node_event(self, kind: str, node: Mapping[str, Any]) -> list[si.NodeInfo]:
        """Applies a node's watch event; the node infos the core must hear, in order."""
        view = node_view(node)
        if not view.name:
            return []
        with self._lock:
            known = self._nodes.get(view.name)
            reported = self._reported.get(view.name)
            if kind == DELETED:
                self._nodes.pop(view.name, None)
                self._checked.pop(view.name, None)
                self._index.remove_node(view.name)
            else:
                self._nodes[view.name] = view
                checked = self._checked[view.name] = _as_checked(view, reported)
                self._index.set_node(checked)
        capacity = _capacity(view, reported)
        infos: list[si.NodeInfo] = []
        if kind == DELETED:
            if known is not None:
                infos.append(si.NodeInfo(node_id=view.name, action=si.NodeAction.DECOMISSION))
        elif known is None:
            action = si.NodeAction.CREATE if view.schedulable else si.NodeAction.CREATE_DRAIN
            infos.append(si.NodeInfo(node_id=view.name, action=action, attributes=view.attributes,
                                     schedulable_resource=capacity))
            if reported is not None:
                infos.append(_reported_update(view.name, capacity, reported))
        else:
            if known.capacity != view.capacity or known.attributes != view.attributes:
                infos.append(si.NodeInfo(node_id=view.name, action=si.NodeAction.UPDATE, attributes=view.attributes,
                                         schedulable_resource=capacity))
            if known.schedulable != view.schedulable:
                infos.append(si.NodeInfo(node_id=view.name, action=si.NodeAction.DRAIN_TO_SCHEDULABLE
                                         if view.schedulable else si.NodeAction.DRAIN_NODE))
        return infos

    # -- the reported layer (CustomNodeResources) -----------------------------------------------

    def reported_names(self) -> list[str]:
        with self._lock:
            return list(self._reported)

    def reported_event(self, kind: str, cnr: Mapping[str, Any]) -> si.NodeInfo | None:
        """Applies a CustomNodeResource's watch event; the node update the core must hear, or
        None (no such node yet: its creation sends it; or nothing changed)."""
        reported = reported_node(cnr) if kind != DELETED else None
        name = reported.name if reported is not None else name_of(cnr)
        if not name:
            return None
        if reported is not None and reported.rejected:
            log.warning("CustomNodeResource %s: left out: %s", name, "; ".join(reported.rejected))
        with self._lock:
            previous = self._reported.get(name)
            if reported is None:
                self._reported.pop(name, None)
            else:
                self._reported[name] = reported
            view = self._nodes.get(name)
            if view is not None:
                checked = self._checked[name] = _as_checked(view, reported)
                self._index.set_node(checked)
        unchanged = (previous.facts, previous.labels) if previous is not None else None
        if view is None or unchanged == ((reported.facts, reported.labels) if reported is not None else None):
            return None
        return _reported_update(name, _capacity(view, reported), reported)

    # -- PriorityClasses ---------------------------------------------------------------------------

    def set_priority_classes(self, items: Iterable[Mapping[str, Any]]) -> None:
        classes = {name_of(c): allow_preemption_of((c.get("metadata") or {}).get("annotations")) for c in items}
        with self._lock:
            self._priority_classes = classes

    def priority_class_event(self, kind: str, priority_class: Mapping[str, Any]) -> None:
        meta = priority_class.get("metadata") or {}
        with self._lock:
            if kind == DELETED:
                self._priority_classes.pop(name_of(priority_class), None)
            else:
                self._priority_classes[name_of(priority_class)] = allow_preemption_of(meta.get("annotations"))

    def allow_preemption(self, priority_class: str) -> bool | None:
        """The class's ``allow-preemption`` annotation (None: none, or no such class)."""
        with self._lock:
            return self._priority_classes.get(priority_class)

    # -- namespaces (their labels, for namespaceSelector) ----------------------------------------

    def set_namespaces(self, items: Iterable[Mapping[str, Any]]) -> None:
        """The listed namespaces replace the known ones."""
        listed = list(items)
        present = {name_of(n) for n in listed}
        with self._lock:
            for name in [name for name in self._index.namespaces if name not in present]:
                self._index.set_namespace(name, None)
        for item in listed:
            self.namespace_event("ADDED", item)

    def namespace_event(self, kind: str, namespace: Mapping[str, Any]) -> None:
        labels = (namespace.get("metadata") or {}).get("labels") or {}
        with self._lock:
            self._index.set_namespace(name_of(namespace), None if kind == DELETED else
                                      {str(k): str(v) for k, v in labels.items()})

    # -- storage (issue 30: VolumeBinding, VolumeRestrictions, VolumeZone, NodeVolumeLimits) -----

    def set_storage(self, kind: str, items: list[dict[str, Any]] | None) -> None:
        """A list of one kind of :data:`~..volumes.STORAGE_PATHS`; None: not followed (the shim
        may not list it: without claims, volumes and classes the volume filters are off)."""
        with self._lock:
            if items is None:
                self._volumes.unfollow(kind)
            else:
                self._volumes.replace(kind, items)

    def storage_event(self, kind: str, event: str, obj: dict[str, Any]) -> None:
        with self._lock:
            self._volumes.update(kind, event, obj)
