"""A gang whose members are gated waits as a whole (issue 34), without a cluster: while a known
member of a gang that has not started is gated by its ``schedulingGates``, its other members
make no application and no placeholders and say why (``SchedulingGated``, how many are gated);
the last gate going (or the last gated member going) starts the gang as usual. A gang already
reserving is not undone by a gated member; an ordinary application's pods never wait for a gated
one; a PodGroup's gang waits the same way."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from k8s_shim_fakes import FakeApi, FakeCore, FakeProxy, FakeRecorder, FakeWrites, fake_shim, group_member, member, \
    task_groups, ungated, wait_until

from pyscheduler_k8s.cache import ShimCache
from pyscheduler_k8s.cache.task_state import TaskState, initial_task_state
from pyscheduler_k8s.pod_events import PodEvents
from pyscheduler_k8s.shim import KubeShim

GROUPS = task_groups(3)


@pytest.fixture
def parts() -> Iterator[tuple[KubeShim, FakeProxy, FakeApi]]:
    shim, proxy, api = fake_shim()
    yield shim, proxy, api
    shim.stop()


def _states(shim: KubeShim, *names: str) -> list[str | None]:
    return [shim.pod_state(f"uid-{name}") for name in names]


def test_the_state_a_pod_held_for_its_gang_is_born_in() -> None:
    flags = {"ours": True, "bound": False, "gated": False, "problem": False, "gang_waits": True}
    assert initial_task_state(**flags, gang_gated=True) is TaskState.GANG_GATED
    assert initial_task_state(**{**flags, "gated": True}, gang_gated=True) is TaskState.GATED
    assert initial_task_state(**{**flags, "problem": True}, gang_gated=True) is TaskState.HELD


def test_a_gang_waits_until_its_last_member_is_ungated(parts: tuple[KubeShim, FakeProxy, FakeApi]) -> None:
    shim, proxy, api = parts
    pods = [member(f"m{n}", GROUPS, gated=True) for n in range(3)]
    for pod in pods:
        shim.pods.handle("ADDED", pod)
    assert _states(shim, "m0", "m1", "m2") == ["gated"] * 3
    shim.pods.handle("MODIFIED", ungated(pods[0]))
    shim.pods.handle("MODIFIED", ungated(pods[1]))
    assert _states(shim, "m0", "m1", "m2") == ["gangGated", "gangGated", "gated"]
    assert proxy.new_applications() == [] and proxy.allocations() == []
    assert shim.applications() == {}
    wait_until("the held pods say why", lambda: ("SchedulingGated", "gang app waits: 1 of 3 members are gated "
                                                 "(it reserves once none is)") in api.conditions("m1")
               and ("SchedulingGated", "gang app waits: 1 of 3 members are gated (it reserves once none is)")
               in api.conditions("m0"))
    assert api.created == []
    # The last gate goes: the gang reserves, every member waits for it.
    shim.pods.handle("MODIFIED", ungated(pods[2]))
    assert _states(shim, "m0", "m1", "m2") == ["waiting"] * 3
    (app,) = proxy.new_applications()
    assert app.application_id == "app" and app.placeholder_ask is not None
    assert proxy.allocations() == []
    wait_until("its placeholders created", lambda: len(api.created) == 3)
    assert shim.applications() == {"app": {"uid-m0", "uid-m1", "uid-m2"}}


def test_the_last_gated_member_deleted_starts_the_gang(parts: tuple[KubeShim, FakeProxy, FakeApi]) -> None:
    shim, proxy, api = parts
    shim.pods.handle("ADDED", member("g", GROUPS, gated=True))
    shim.pods.handle("ADDED", member("m0", GROUPS))
    assert _states(shim, "g", "m0") == ["gated", "gangGated"]
    shim.pods.handle("DELETED", member("g", GROUPS, gated=True))
    assert _states(shim, "g", "m0") == [None, "waiting"]
    assert [a.application_id for a in proxy.new_applications()] == ["app"]
    wait_until("its placeholders created", lambda: len(api.created) == 3)


def test_a_gang_already_reserving_is_not_undone_by_a_gated_member(parts: tuple[KubeShim, FakeProxy, FakeApi]) -> None:
    shim, proxy, api = parts
    shim.pods.handle("ADDED", member("m0", GROUPS))
    wait_until("its placeholders created", lambda: len(api.created) == 3)
    late = member("m1", GROUPS, gated=True)
    shim.pods.handle("ADDED", late)
    shim.pods.handle("ADDED", member("m2", GROUPS))
    assert _states(shim, "m0", "m1", "m2") == ["waiting", "gated", "waiting"]
    shim.pods.handle("MODIFIED", ungated(late))
    assert _states(shim, "m1") == ["waiting"]  # it joins the gang
    assert len(proxy.new_applications()) == 1 and len(api.created) == 3


def test_an_ordinary_applications_pods_never_wait_for_a_gated_one(parts: tuple[KubeShim, FakeProxy, FakeApi]) -> None:
    shim, proxy, _ = parts
    plain = member("gated", "", gated=True)
    plain["metadata"]["annotations"] = {}
    shim.pods.handle("ADDED", plain)
    other = member("free", "")
    other["metadata"]["annotations"] = {}
    shim.pods.handle("ADDED", other)
    assert _states(shim, "gated", "free") == ["gated", "ask"]
    assert [a.allocation_key for a in proxy.allocations()] == ["uid-free"]


def test_a_fresh_list_knows_the_gated_members_before_the_others(parts: tuple[KubeShim, FakeProxy, FakeApi]) -> None:
    """A restart lists the gated member after the others (by name): the gang still waits."""
    shim, proxy, _ = parts
    shim.pods.reconcile([member("a", GROUPS), member("b", GROUPS), member("z", GROUPS, gated=True)])
    assert _states(shim, "a", "b", "z") == ["gangGated", "gangGated", "gated"]
    assert proxy.new_applications() == []


# -- a PodGroup's gang -------------------------------------------------------------------------------


def test_a_podgroups_gang_waits_for_its_gated_members() -> None:
    cache = ShimCache()
    cache.podgroups.set_groups([{"metadata": {"name": "train", "namespace": "ml"},
                                 "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}])
    core, recorder, writes = FakeCore(), FakeRecorder(), FakeWrites()
    events = PodEvents(None, cache.tasks, core, recorder, writes, ("pyscheduler",),  # type: ignore[arg-type]
                       groups=cache.podgroups)
    events.handle("ADDED", group_member("w0", gated=True))
    events.handle("ADDED", group_member("w1", gated=False))
    assert cache.tasks.pod_state("uid-w1") is TaskState.GANG_GATED
    assert recorder.pending["uid-w1"] == ("gang podgroup-ml-train waits: 1 of 2 members are gated "
                                          "(it reserves once none is)", "SchedulingGated")
    assert core.apps == [] and writes.submitted == []
    events.handle("MODIFIED", group_member("w0", gated=False))
    assert core.apps == ["podgroup-ml-train"] and writes.submitted == ["create_placeholders"]
    assert {cache.tasks.pod_state(f"uid-w{n}") for n in range(2)} == {TaskState.WAITING}
