"""A shim restarted while a gang reserves resumes the reservation (issue 34), without a cluster:
the first list shows the gang started (its placeholder pods, some bound) and the shim makes its
application again with its task groups (from the placeholders' owner: its queue, user and
scheduling parameters), recovers the bound placeholders as the core's placeholder allocations,
lets the pending ones ask, keeps the members waiting until the core runs the gang, and makes
only the placeholders that are missing, under their old names. A gang that ran before the
restart is recovered running (its members ask). What the list tells is read by
pyscheduler_k8s.gang_recovery."""

from __future__ import annotations

import calendar
from collections.abc import Iterator
from typing import Any

import pytest
from k8s_shim_fakes import FakeApi, FakeCore, FakeProxy, FakeRecorder, FakeWrites, fake_shim, group_member, member, \
    task_groups, wait_until

from pyscheduler.si import messages as si
from pyscheduler.si.vocabulary import APP_CREATION_TIME_TAG
from pyscheduler_k8s.cache import ShimCache
from pyscheduler_k8s.cache.task_state import CoreAppState, TaskState
from pyscheduler_k8s.gang import gang_of, placeholder_pods
from pyscheduler_k8s.gang_recovery import recoveries
from pyscheduler_k8s.pod_events import PodEvents
from pyscheduler_k8s.podgroup import gang_spec, member_view, podgroup_of
from pyscheduler_k8s.pods import pod_view
from pyscheduler_k8s.shim import KubeShim

GROUPS = task_groups(4, cpu="3")
USER = '{"user": "alice", "groups": ["ml"]}'
POLICY = "placeholderTimeoutInSeconds=600 gangSchedulingStyle=Hard"


@pytest.fixture
def parts() -> Iterator[tuple[KubeShim, FakeProxy, FakeApi]]:
    shim, proxy, api = fake_shim(nodes=3)
    yield shim, proxy, api
    shim.stop()


def _members(*, bound: dict[int, str] | None = None) -> list[dict[str, Any]]:
    annotations = {"yunikorn.apache.org/user.info": USER, "yunikorn.apache.org/schedulingPolicyParameters": POLICY}
    return [member(f"m{n}", GROUPS, cpu="3", annotations=annotations, node=(bound or {}).get(n, "")) for n in range(4)]


def _placeholders(owner: dict[str, Any], *, bound: int, made: int = 4) -> list[dict[str, Any]]:
    """The first ``made`` placeholders the shim made before it stopped, the first ``bound`` of
    them on nodes n0, n1..."""
    gang = gang_of(owner)
    assert gang is not None
    pods = placeholder_pods(gang, "app", "root.gangs", owner)[:made]
    for n, pod in enumerate(pods):
        pod["metadata"]["uid"] = f"uid-ph-{n}"
        pod["metadata"]["creationTimestamp"] = f"2026-11-28T01:0{n}:00Z"  # made one a minute
        pod["status"] = {"phase": "Running" if n < bound else "Pending"}
        if n < bound:
            pod["spec"]["nodeName"] = f"n{n}"
    return pods


def _run(shim: KubeShim) -> None:
    """The core says the gang runs."""
    updated = si.UpdatedApplication(application_id="app", state=CoreAppState.RUNNING.value)
    shim.callback.update_application(si.ApplicationResponse(updated=(updated,)))


def test_a_reserving_gang_is_resumed(parts: tuple[KubeShim, FakeProxy, FakeApi]) -> None:
    shim, proxy, api = parts
    members = _members()
    placeholders = _placeholders(members[0], bound=3)
    api.existing.update(p["metadata"]["name"] for p in placeholders)
    # Listed by name, members first: the application is still made from the owner's pod.
    shim.pods.reconcile(members + placeholders)
    (app,) = proxy.new_applications()
    assert app.application_id == "app" and app.queue_name == "root.gangs"
    assert app.ugi is not None and app.ugi.user == "alice" and app.gang_scheduling_style == "Hard"
    assert app.execution_timeout_milli_seconds == 600_000
    assert app.placeholder_ask is not None and app.placeholder_ask["vcore"] == 12_000
    # Its placeholder timeout counts from its first placeholder (01:00:00), not from the restart.
    assert app.tags[APP_CREATION_TIME_TAG] == str(calendar.timegm((2026, 11, 28, 1, 0, 0)))
    recovered = {a.allocation_key: a for a in proxy.allocations()}
    assert set(recovered) == {f"uid-ph-{n}" for n in range(4)}  # the members ask nothing yet
    for n in range(4):
        allocation = recovered[f"uid-ph-{n}"]
        assert allocation.placeholder and allocation.task_group_name == "workers"
        assert allocation.node_id == (f"n{n}" if n < 3 else "")
    # The placeholders bound first: the core counts their room before any ask.
    assert [a.allocation_key for a in proxy.allocations()][:3] == [f"uid-ph-{n}" for n in range(3)]
    assert {shim.pod_state(f"uid-m{n}") for n in range(4)} == {"waiting"}
    assert shim.pod_state("uid-ph-3") == "ask"
    # Every placeholder exists: none is made.
    assert api.created == []
    _run(shim)
    wait_until("the members ask", lambda: {f"uid-m{n}" for n in range(4)} <= {a.allocation_key for a in proxy.allocations()})
    assert {shim.pod_state(f"uid-m{n}") for n in range(4)} == {"ask"}


def test_the_missing_placeholders_are_made_under_their_old_names(parts: tuple[KubeShim, FakeProxy, FakeApi]) -> None:
    shim, proxy, api = parts
    members = _members()
    placeholders = _placeholders(members[0], bound=1, made=2)  # stopped while making them
    api.existing.update(p["metadata"]["name"] for p in placeholders)
    shim.pods.reconcile(placeholders + members)
    gang = gang_of(members[0])
    assert gang is not None
    names = [p["metadata"]["name"] for p in placeholder_pods(gang, "app", "root.gangs", members[0])]
    wait_until("the two missing made", lambda: len(api.created) == 2)
    assert api.created == names[2:]  # the two that existed answered AlreadyExists
    assert len(proxy.new_applications()) == 1
    assert {shim.pod_state(f"uid-m{n}") for n in range(4)} == {"waiting"}


def test_a_gang_that_ran_is_recovered_running(parts: tuple[KubeShim, FakeProxy, FakeApi]) -> None:
    shim, proxy, api = parts
    members = _members(bound={0: "n0"})  # one member replaced its placeholder
    placeholders = _placeholders(members[0], bound=3)[1:]  # the others' placeholders are placed
    shim.pods.reconcile(members + placeholders)
    assert len(proxy.new_applications()) == 1
    asks = {a.allocation_key: a for a in proxy.allocations()}
    assert asks["uid-m0"].node_id == "n0" and not asks["uid-m0"].placeholder
    assert {f"uid-m{n}" for n in range(1, 4)} <= set(asks)  # the others ask (and replace placeholders)
    assert {shim.pod_state(f"uid-m{n}") for n in range(1, 4)} == {"ask"}
    assert api.created == []


def test_a_gang_whose_placeholders_are_all_placed_is_recovered_running(
        parts: tuple[KubeShim, FakeProxy, FakeApi]) -> None:
    shim, proxy, api = parts
    members = _members()
    shim.pods.reconcile(members + _placeholders(members[0], bound=4))
    assert {shim.pod_state(f"uid-m{n}") for n in range(4)} == {"ask"}
    assert api.created == []
    (app,) = proxy.new_applications()
    assert APP_CREATION_TIME_TAG not in app.tags  # running: no placeholder timeout to keep


def test_what_the_list_tells_of_each_gang() -> None:
    members = _members()
    placeholders = _placeholders(members[0], bound=2, made=3)
    found = recoveries(members + placeholders + [member("x0", GROUPS, app="fresh")],
                       lambda pod: pod["metadata"]["labels"]["applicationId"])
    assert set(found) == {"app"}  # "fresh" has not started: a new gang
    gang = gang_of(members[0])
    assert gang is not None
    recovery = found["app"]
    assert recovery.founder is members[0] and recovery.owner is members[0]
    assert (recovery.placeholders, recovery.bound_placeholders, recovery.member_bound) == (3, 2, False)
    assert not recovery.running(gang) and recovery.makes_placeholders(gang)
    # Its owner gone: no placeholder made (the garbage collector takes them), a member founds it.
    orphaned = recoveries(members[1:] + placeholders, lambda pod: pod["metadata"]["labels"]["applicationId"])["app"]
    assert orphaned.owner is None and orphaned.founder is members[1] and not orphaned.makes_placeholders(gang)
    # A bound member without task groups of its own still says the gang ran; an application
    # with no pod describing a gang is none.
    plain = member("m9", GROUPS, node="n0")
    plain["metadata"]["annotations"] = {}
    ran = recoveries(members + placeholders + [plain], lambda pod: pod["metadata"]["labels"]["applicationId"])["app"]
    assert ran.member_bound and ran.running(gang) and not ran.makes_placeholders(gang)
    assert recoveries([plain], lambda pod: pod["metadata"]["labels"]["applicationId"]) == {}


def test_a_podgroups_reserving_gang_is_resumed() -> None:
    group = {"metadata": {"name": "train", "namespace": "ml"}, "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}
    cache = ShimCache()
    cache.podgroups.set_groups([group])
    core, recorder, writes = FakeCore(), FakeRecorder(), FakeWrites()
    events = PodEvents(None, cache.tasks, core, recorder, writes, ("pyscheduler",),  # type: ignore[arg-type]
                       groups=cache.podgroups)
    members = [group_member(f"w{n}", gated=False) for n in range(2)]
    spec = podgroup_of(group)
    placeholders = placeholder_pods(gang_spec(spec, members[0], member_view(pod_view(members[0]), "train", spec)),
                                    "podgroup-ml-train", "", members[0])
    for n, pod in enumerate(placeholders):
        pod["metadata"]["uid"] = f"uid-ph-{n}"
        pod["status"] = {"phase": "Pending"}
    placeholders[0]["spec"]["nodeName"] = "n0"
    events.reconcile(members + placeholders)
    assert core.apps == ["podgroup-ml-train"]
    assert writes.submitted == []  # both placeholders exist
    assert core.asks == ["uid-ph-0", "uid-ph-1"]  # the bound one recovered first, the other asks
    assert {cache.tasks.pod_state(f"uid-w{n}") for n in range(2)} == {TaskState.WAITING}
