"""A :class:`~pyscheduler_k8s.shim.KubeShim` without a cluster or a core, for the shim's unit
tests: the core's requests and the API server's writes are recorded, nothing is listed or
watched (the tests hand the pods to the handlers), and creating a pod whose name exists answers
``AlreadyExists`` as the API server does."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import orjson

from pyscheduler.si import messages as si
from pyscheduler_k8s.kubeapi import KubeApiError
from pyscheduler_k8s.shim import KubeShim

NAMESPACE = "ns"


class FakeProxy:
    """The core: every request kept, in order."""

    def __init__(self) -> None:
        self.requests: list[Any] = []

    def _record(self, request: object) -> None:
        self.requests.append(request)

    update_node = update_application = update_allocation = update_configuration = _record

    def new_applications(self) -> list[si.AddApplicationRequest]:
        return [new for r in self.requests if isinstance(r, si.ApplicationRequest) for new in r.new]

    def allocations(self) -> list[si.Allocation]:
        return [a for r in self.requests if isinstance(r, si.AllocationRequest) for a in r.allocations]


class FakeApi:
    """The API server's writes, kept; ``existing``: the names of pods that exist (a create of
    one of them is refused with 409)."""

    def __init__(self) -> None:
        self.statuses: list[tuple[str, dict[str, Any]]] = []
        self.events: list[dict[str, Any]] = []
        self.created: list[str] = []
        self.existing: set[str] = set()

    def close_watches(self) -> None:
        pass

    def patch_pod_status(self, namespace: str, name: str, body: dict[str, Any]) -> None:
        self.statuses.append((name, body))

    def create_event(self, namespace: str, body: dict[str, Any]) -> None:
        self.events.append(body)

    def delete_pod(self, namespace: str, name: str, *, uid: str = "") -> None:
        pass

    def create_pod(self, namespace: str, body: dict[str, Any]) -> None:
        name = body["metadata"]["name"]
        if name in self.existing:
            raise KubeApiError(409, "AlreadyExists", f'pods "{name}" already exists')
        self.existing.add(name)
        self.created.append(name)

    def conditions(self, name: str) -> list[tuple[str, str]]:
        """The (reason, message) of the PodScheduled conditions written on pod ``name``."""
        return [(c["reason"], c["message"]) for pod, body in self.statuses if pod == name
                for c in body["status"].get("conditions", ())]


def fake_shim(nodes: int = 3, cpu: str = "4") -> tuple[KubeShim, FakeProxy, FakeApi]:
    """A shim with ``nodes`` nodes ``n0``... of ``cpu`` cpu, its writers running."""
    proxy, api = FakeProxy(), FakeApi()
    shim = KubeShim(proxy, api, "")  # type: ignore[arg-type]
    for n in range(nodes):
        shim.cluster.on_node("ADDED", {"metadata": {"name": f"n{n}"}, "spec": {},
                                       "status": {"allocatable": {"cpu": cpu, "pods": "110"}}})
    shim.recorder.start()
    shim.writes.start()
    return shim, proxy, api


def task_groups(members: int, cpu: str = "1", name: str = "workers") -> str:
    return orjson.dumps([{"name": name, "minMember": members, "minResource": {"cpu": cpu}}]).decode()


def member(name: str, groups: str, *, app: str = "app", node: str = "", gated: bool = False,
           annotations: dict[str, str] | None = None, cpu: str = "1") -> dict[str, Any]:
    """A gang member carrying the task groups (YuniKorn's annotations)."""
    spec: dict[str, Any] = {"schedulerName": "pyscheduler", "containers": [
        {"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}]}
    if node:
        spec["nodeName"] = node
    if gated:
        spec["schedulingGates"] = [{"name": "example.com/hold"}]
    return {"metadata": {"name": name, "namespace": NAMESPACE, "uid": f"uid-{name}",
                         "labels": {"applicationId": app, "queue": "root.gangs"},
                         "annotations": {"yunikorn.apache.org/task-groups": groups,
                                         "yunikorn.apache.org/task-group-name": "workers", **(annotations or {})}},
            "spec": spec, "status": {"phase": "Running" if node else "Pending"}}


def ungated(pod: dict[str, Any]) -> dict[str, Any]:
    return {**pod, "spec": {k: v for k, v in pod["spec"].items() if k != "schedulingGates"}}


def wait_until(what: str, check: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


# -- the pod handlers alone (PodEvents on a ShimCache) ---------------------------------------------


class FakeCore:
    """The core as PodEvents calls it: applications added (with their gangs) and asks, kept."""

    def __init__(self) -> None:
        self.added: list[tuple[Any, Any]] = []
        self.asked: list[Any] = []

    @property
    def apps(self) -> list[str]:
        return [view.app_id for view, _ in self.added]

    @property
    def asks(self) -> list[str]:
        return [view.uid for view in self.asked]

    def add_application(self, view: Any, gang: Any) -> None:
        self.added.append((view, gang))

    def ask(self, view: Any) -> None:
        self.asked.append(view)

    def remove_application(self, app_id: str) -> None:
        pass

    def release(self, *args: Any) -> None:
        pass


class FakeRecorder:
    """The pods' conditions: the last one per uid."""

    def __init__(self) -> None:
        self.pending: dict[str, tuple[str, str]] = {}

    def mark_pending(self, uid: str, message: str, reason: str) -> None:
        self.pending[uid] = (message, reason)

    def mark_unschedulable(self, uid: str, message: str) -> None:
        self.pending[uid] = (message, "Unschedulable")

    def forget(self, uid: str) -> None:
        pass


class FakeWrites:
    """The writes submitted, by name."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.create_placeholders = "create_placeholders"
        self.fail_pods = "fail_pods"

    @property
    def submitted(self) -> list[str]:
        return [task for task, _ in self.calls]

    def submit(self, task: str, *args: Any) -> None:
        self.calls.append((task, args))


def group_member(name: str, *, gated: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "pyscheduler", "schedulingGroup": {"podGroupName": "train"},
                            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}
    if gated:
        spec["schedulingGates"] = [{"name": "example.com/hold"}]
    return {"metadata": {"name": name, "namespace": "ml", "uid": f"uid-{name}", "labels": {}, "annotations": {}},
            "spec": spec, "status": {"phase": "Pending"}}
