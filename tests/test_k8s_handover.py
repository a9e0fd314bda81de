"""What a rolling upgrade of the replicas relies on, without a cluster (the whole upgrade against a
real API server: test_k8s_rolling_upgrade.py): the Lease's times from the served process's
environment, a leader that stops stepping down (its shim stopped, its bindings in hand finished)
before it releases the Lease, the placeholder replacements under way finished first (so the next
leader never finds a gang halfway through one), and the replica named in the events it writes
(which replica bound a pod)."""

from __future__ import annotations

import copy
import threading
import time
from typing import Any

import pytest
from k8s_shim_fakes import fake_shim, member, task_groups, wait_until

from pyscheduler.si import messages as si
from pyscheduler_k8s.gang import gang_of, placeholder_pods
from pyscheduler_k8s.kubeapi import KubeApiError
from pyscheduler_k8s.leader import LeaderElector, LeaseSettings
from pyscheduler_k8s.shim import KubeShim, ShimOptions

SETTINGS = LeaseSettings(namespace="ns", lease_duration=3.0, renew_deadline=2.0, retry_period=0.05)


class LeaseApi:
    """The API server's Lease alone: get, create, and updates checked against the resource
    version (409 Conflict on a stale one), as the real one does."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self._version = 0
        self._lock = threading.Lock()

    def holder(self) -> str:
        with self._lock:
            return "" if self.lease is None else str(self.lease["spec"].get("holderIdentity") or "")

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        with self._lock:
            if method == "GET":
                if self.lease is None:
                    raise KubeApiError(404, "NotFound", "no lease")
                return copy.deepcopy(self.lease)
            assert body is not None
            if method == "POST":
                if self.lease is not None:
                    raise KubeApiError(409, "AlreadyExists", "lease exists")
            elif self.lease is None or body["metadata"].get("resourceVersion") != str(self._version):
                raise KubeApiError(409, "Conflict", "stale resource version")
            self._version += 1
            self.lease = copy.deepcopy(body)
            self.lease["metadata"]["resourceVersion"] = str(self._version)
            return copy.deepcopy(self.lease)


def test_lease_times_come_from_the_environment() -> None:
    assert LeaseSettings.from_environment("ns", {}) == LeaseSettings(namespace="ns")  # kube-scheduler's
    settings = LeaseSettings.from_environment("ns", {
        "PYSCHEDULER_K8S_LEASE_DURATION": "6", "PYSCHEDULER_K8S_RENEW_DEADLINE": " 4.5 ",
        "PYSCHEDULER_K8S_RETRY_PERIOD": "0.5"})
    assert (settings.lease_duration, settings.renew_deadline, settings.retry_period) == (6.0, 4.5, 0.5)
    assert LeaseSettings.from_environment("ns", {"PYSCHEDULER_K8S_RETRY_PERIOD": ""}).retry_period == 2.0
    with pytest.raises(ValueError, match="PYSCHEDULER_K8S_RETRY_PERIOD must be a number of seconds, not 'fast'"):
        LeaseSettings.from_environment("ns", {"PYSCHEDULER_K8S_RETRY_PERIOD": "fast"})
    # client-go's rule: a renew deadline past the lease would let two replicas lead at once.
    with pytest.raises(ValueError, match=r"lease duration \(15 s\) > renew deadline \(20 s\)"):
        LeaseSettings.from_environment("ns", {"PYSCHEDULER_K8S_RENEW_DEADLINE": "20"})
    with pytest.raises(ValueError, match="retry period"):
        LeaseSettings(retry_period=0)


def test_a_leader_that_stops_steps_down_before_it_releases_the_lease() -> None:
    """The shim stops (its binders finish what they hold) while this replica still holds the
    Lease: the next leader, which takes the Lease at its next retry, lists a cluster where no
    binding of the old leader is still under way."""
    api = LeaseApi()
    seen_when_stopping: list[str] = []
    started = threading.Event()
    elector = LeaderElector(api, "replica-a", SETTINGS, started.set,  # type: ignore[arg-type]
                            lambda: seen_when_stopping.append(api.holder()))
    elector.start()
    assert started.wait(5)
    elector.stop()
    assert seen_when_stopping == ["replica-a"]  # stepped down while still the holder
    assert api.holder() == ""  # then released
    # A standby takes the released Lease at its next retry, long before the lease duration.
    taken = threading.Event()
    standby = LeaderElector(api, "replica-b", SETTINGS, taken.set, lambda: None)  # type: ignore[arg-type]
    begun = time.monotonic()
    standby.start()
    try:
        assert taken.wait(5)
        assert time.monotonic() - begun < SETTINGS.lease_duration / 2
        assert api.holder() == "replica-b"
    finally:
        standby.stop()


def test_a_leader_stopped_while_its_shim_starts_waits_for_the_start() -> None:
    """A SIGTERM while the shim still lists the cluster: the start is waited for (it sees the
    step down and stops its shim itself) before the Lease goes."""
    api = LeaseApi()
    order: list[str] = []
    listing = threading.Event()

    def slow_start() -> None:
        listing.set()
        time.sleep(0.3)
        order.append(f"start ended, holder {api.holder()}")

    elector = LeaderElector(api, "replica-a", SETTINGS, slow_start,  # type: ignore[arg-type]
                            lambda: order.append("stepped down"))
    elector.start()
    assert listing.wait(5)
    elector.stop()
    assert order == ["stepped down", "start ended, holder replica-a"]
    assert api.holder() == ""


def test_events_name_the_replica_that_wrote_them() -> None:
    shim, _, api = fake_shim()
    try:
        shim.recorder.event("ns", "p", "uid-p", "Normal", "Scheduled", "Successfully assigned ns/p to n0")
        wait_until("the event written", lambda: len(api.events) == 1)
        assert "reportingInstance" not in api.events[0]  # no instance named: none written
    finally:
        shim.stop()
    shim, _, api = fake_shim()
    named = type(shim)(shim.proxy, shim.api, "", ShimOptions(instance="host_1234"))
    named.recorder.start()
    try:
        named.recorder.event("ns", "p", "uid-p", "Normal", "Scheduled", "Successfully assigned ns/p to n0")
        wait_until("the event written", lambda: len(api.events) == 1)
        event = api.events[0]
        assert (event["reportingComponent"], event["reportingInstance"]) == ("pyscheduler", "host_1234")
    finally:
        named.stop()
        shim.stop()


def _replaced_by_core(shim: KubeShim, placeholder_uid: str) -> None:
    """The core's release of a placeholder it replaced, as the callback gets it."""
    release = si.AllocationRelease(application_id="app", allocation_key=placeholder_uid,
                                   termination_type=si.TerminationType.PLACEHOLDER_REPLACED)
    shim.callback.update_allocation(si.AllocationResponse(released=(release,)))


def test_a_graceful_stop_waits_for_the_replacements_under_way() -> None:
    """The core replaced a placeholder (deleted; its member not bound yet): the stopping shim
    waits until the watch shows the member bound, and no longer than its bound; it starts no
    replacement meanwhile."""
    shim, _, api = fake_shim()
    try:
        groups = task_groups(2)
        members = [member(f"m{n}", groups) for n in range(2)]
        owner = gang_of(members[0])
        assert owner is not None
        placeholders = placeholder_pods(owner, "app", "root.gangs", members[0])
        for n, pod in enumerate(placeholders):  # made and placed before the restart: allocations
            pod["metadata"]["uid"] = f"uid-ph-{n}"
            pod["spec"]["nodeName"] = f"n{n}"
            pod["status"] = {"phase": "Running"}
        api.existing.update(p["metadata"]["name"] for p in placeholders)
        shim.pods.reconcile(members + placeholders)
        assert shim.pod_state("uid-ph-0") == "allocated"
        assert shim.cache.tasks.replacements_in_flight() == 0
        _replaced_by_core(shim, "uid-ph-0")
        assert shim.cache.tasks.replacements_in_flight() == 1
        begun = time.monotonic()
        assert not shim.finish_replacements(timeout=0.2)  # its member is not bound: waited for, then given up
        assert 0.2 <= time.monotonic() - begun < 2.0
        # On the way out no replacement starts: the next placeholder the core replaces stays.
        _replaced_by_core(shim, "uid-ph-1")
        assert shim.cache.tasks.replacements_in_flight() == 1
        task = shim.cache.tasks.task("uid-ph-1")
        assert task is not None and task.ending is None and shim.pod_state("uid-ph-1") == "allocated"
        bound = {**members[0], "spec": {**members[0]["spec"], "nodeName": "n0"}, "status": {"phase": "Running"}}
        shim.pods.handle("MODIFIED", bound)  # the watch: the member is bound
        assert shim.cache.tasks.replacements_in_flight() == 0
        assert shim.finish_replacements(timeout=5.0)
    finally:
        shim.stop()
