"""A placeholder's binding that races the core's replacement of it (no cluster, no core: the
shim's fakes). Under load the core may replace a placeholder (its gang runs: every placeholder
is allocated) before the shim's binder has bound it; the shim deletes the placeholder for the
replacement, and the binding, still in flight, fails: 409, the pod is being deleted. That
failure must not reach the core as a release of its own (STOPPED_BY_RM): the core would undo
the replacement and count the placeholder timed out, leaving its member no placeholder to take,
so the member would be placed as a plain ask wherever there was room (seen as two members of a
gang on one node, the second after the first completed). The pod's deletion confirms the
core's release as PLACEHOLDER_REPLACED, once."""

from __future__ import annotations

import threading
from typing import Any

from k8s_shim_fakes import FakeApi, FakeProxy, member, task_groups, wait_until

from pyscheduler.si import messages as si
from pyscheduler_k8s.gang import gang_of, placeholder_pods
from pyscheduler_k8s.kubeapi import KubeApiError
from pyscheduler_k8s.shim import KubeShim


class _BindingInFlight(FakeApi):
    """Bindings wait until ``go`` is set, then fail as the API server fails a binding of a pod
    being deleted."""

    def __init__(self) -> None:
        super().__init__()
        self.go = threading.Event()
        self.attempts: list[tuple[str, str]] = []

    def bind(self, namespace: str, name: str, node: str) -> None:
        self.attempts.append((name, node))
        self.go.wait(10)
        raise KubeApiError(409, "Conflict", f'pod {name} is being deleted, cannot be assigned to a host')


def _releases(proxy: FakeProxy, uid: str) -> list[si.AllocationRelease]:
    return [r for request in proxy.requests if isinstance(request, si.AllocationRequest) and request.releases
            for r in request.releases.allocations_to_release if r.allocation_key == uid]


def test_a_placeholder_replaced_while_its_binding_fails_is_released_once_as_replaced() -> None:
    proxy, api = FakeProxy(), _BindingInFlight()
    shim = KubeShim(proxy, api, "")  # type: ignore[arg-type]
    shim.cluster.on_node("ADDED", {"metadata": {"name": "n0"}, "spec": {},
                                   "status": {"allocatable": {"cpu": "4", "pods": "110"}}})
    shim.recorder.start()
    shim.writes.start()
    shim.binder.start()
    try:
        groups = task_groups(1)
        first = member("m0", groups)
        gang = gang_of(first)
        assert gang is not None
        shim.pods.handle("ADDED", first)
        (placeholder,) = placeholder_pods(gang, "app", "root.gangs", first)
        placeholder["metadata"]["uid"] = "uid-ph"
        placeholder["metadata"]["namespace"] = "ns"
        shim.pods.handle("ADDED", placeholder)
        assert shim.pod_state("uid-ph") == "ask"
        # The core places the placeholder: its binding starts and waits (the API server is slow).
        shim.callback.update_allocation(si.AllocationResponse(new=(
            si.Allocation(application_id="app", allocation_key="uid-ph", node_id="n0"),)))
        wait_until("the binding in flight", lambda: len(api.attempts) == 1)
        # The core replaces it meanwhile: the shim deletes it, and the binding then fails.
        shim.callback.update_allocation(si.AllocationResponse(released=(si.AllocationRelease(
            application_id="app", allocation_key="uid-ph",
            termination_type=si.TerminationType.PLACEHOLDER_REPLACED),)))
        api.go.set()
        wait_until("the binding failed", lambda: shim.counts.bind_failures == 1)
        assert _releases(proxy, "uid-ph") == []  # the core's release, not the shim's
        assert shim.pod_state("uid-ph") == "allocated"
        deleted: dict[str, Any] = {**placeholder, "metadata": {**placeholder["metadata"],
                                                               "deletionTimestamp": "2026-01-01T00:00:00Z"}}
        shim.pods.handle("DELETED", deleted)
        (release,) = _releases(proxy, "uid-ph")
        assert release.termination_type is si.TerminationType.PLACEHOLDER_REPLACED
    finally:
        api.go.set()
        shim.stop()
