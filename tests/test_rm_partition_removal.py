"""Partition removal (re-registration, or a reload without the partition): the RM hears its
applications fail and its nodes' allocations released, in a fixed order, and hears it with the
context's lock released, so an RM whose callback calls back into the proxy from another thread,
and waits for it, does not deadlock. Every wait and thread is bounded in time."""

from __future__ import annotations

import threading
from collections.abc import Callable

from rm_helpers import BASIC, TWO_PARTITIONS, World

from pyscheduler.si import messages as si
from pyscheduler.testing.recording import RecordingRM

#: How long the RM's callback waits for the thread it started before it gives up.
JOIN_S = 5.0

def _populated(rm: RecordingRM | None = None) -> World:
    """Two partitions with nodes, running applications, allocations and one pending ask."""
    w = World(TWO_PARTITIONS, register=False)
    if rm is not None:
        w.rm = rm
    w.register(TWO_PARTITIONS)
    w.add_node("n1")
    w.add_node("n2")
    w.add_node("g1", **{si.NODE_PARTITION: "gpu"})
    w.add_app("app-1")
    w.add_app("app-2")
    w.add_app("gpu-1", partition="gpu")
    w.allocate("k1", "app-1", "n1")
    w.allocate("k2", "app-2", "n2")
    w.allocate("k3", "app-1", "n2")
    w.allocate("g1", "gpu-1", "g1", partition="gpu")
    w.ask("pending", "app-2")
    w.rm.clear()
    return w


def _summary(rm: RecordingRM) -> list[tuple[str, tuple[tuple[str, ...], ...]]]:
    """Every callback as (method, its items), the items as the tuples the RM acts on."""
    out: list[tuple[str, tuple[tuple[str, ...], ...]]] = []
    for method, message in rm.calls:
        if isinstance(message, si.ApplicationResponse):
            items = tuple((u.application_id, u.state, u.message) for u in message.updated)
            assert not message.accepted and not message.rejected
        elif isinstance(message, si.AllocationResponse):
            items = tuple(
                (r.partition_name, r.application_id, r.allocation_key, r.termination_type.name, r.message)
                for r in message.released
            )
            assert not message.new and not message.rejected_allocations
        else:
            items = ((repr(message),),)
        out.append((method, items))
    return out


#: What the RM hears when both partitions go: per partition (in creation order) its applications
#: failing, then the allocations of its nodes released (nodes in creation order, keys sorted).
BOTH_REMOVED = [
    ("update_application", (("app-1", "Failing", "PartitionRemoved"), ("app-2", "Failing", "PartitionRemoved"))),
    ("update_allocation", (
        ("default", "app-1", "k1", "STOPPED_BY_RM", "node removed"),
        ("default", "app-2", "k2", "STOPPED_BY_RM", "node removed"),
        ("default", "app-1", "k3", "STOPPED_BY_RM", "node removed"),
    )),
    ("update_application", (("gpu-1", "Failing", "PartitionRemoved"),)),
    ("update_allocation", (("gpu", "gpu-1", "g1", "STOPPED_BY_RM", "node removed"),)),
]


def test_reregistration_tells_the_old_rm_exactly_what_it_told_before() -> None:
    w = _populated()
    try:
        old_rm, new_rm = w.rm, RecordingRM()
        w.register(BASIC, rm=new_rm)
        assert _summary(old_rm) == BOTH_REMOVED
        # Sent after the new registration took over, yet none of it reached the new RM.
        assert new_rm.calls == []
        w.add_node("n9")
        assert new_rm.accepted_nodes == ["n9"] and old_rm.accepted_nodes == []
    finally:
        w.close()


def test_a_reload_without_a_partition_tells_the_rm_only_about_that_partition() -> None:
    w = _populated()
    try:
        # BASIC has the default partition only (with more queues, which the RM does not hear of).
        w.reload(BASIC)
        assert _summary(w.rm) == BOTH_REMOVED[2:]
        assert set(w.partition().applications) == {"app-1", "app-2"}
        assert set(w.partition().nodes) == {"n1", "n2"}
        assert set(w.partition().applications["app-1"].allocations) == {"k1", "k3"}
    finally:
        w.close()


class _CallsBackFromAnotherThreadRM(RecordingRM):
    """On the first release it hears, runs ``call_back`` on a worker thread and waits for it
    (bounded): an RM handing work to its own thread and waiting for the answer."""

    def __init__(self) -> None:
        super().__init__()
        self.call_back: Callable[[], None] | None = None
        self.worker_finished: bool | None = None
        self.worker_errors: list[BaseException] = []

    def update_allocation(self, response: si.AllocationResponse) -> None:
        super().update_allocation(response)
        if not response.released or self.call_back is None or self.worker_finished is not None:
            return
        call_back = self.call_back

        def work() -> None:
            try:
                call_back()
            except BaseException as err:  # noqa: BLE001 - reported by the test
                self.worker_errors.append(err)

        worker = threading.Thread(target=work, name="rm-worker", daemon=True)
        worker.start()
        worker.join(JOIN_S)
        self.worker_finished = not worker.is_alive()

    def assert_worker_finished(self) -> None:
        assert self.worker_finished is True, "the RM's worker blocked on the context during partition removal"
        assert self.worker_errors == []


def _populated_with_an_rm_updating_n1_from_a_worker() -> tuple[World, _CallsBackFromAnotherThreadRM]:
    rm = _CallsBackFromAnotherThreadRM()
    w = _populated(rm)
    # UPDATE looks the node up across the RM's partitions, under the context's lock.
    update = si.NodeInfo(node_id="n1", action=si.NodeAction.UPDATE, schedulable_resource={"memory": 500})
    rm.call_back = lambda: w.proxy.update_node(si.NodeRequest(rm_id=w.rm_id, nodes=(update,)))
    return w, rm


def test_an_rm_calling_back_from_another_thread_on_reregistration_does_not_deadlock() -> None:
    w, old_rm = _populated_with_an_rm_updating_n1_from_a_worker()
    try:
        new_rm = RecordingRM()
        w.register(BASIC, rm=new_rm)
        old_rm.assert_worker_finished()
        # The worker's update reached the new registration: n1 went with the old partition.
        assert "unknown node n1" in new_rm.rejected_nodes["n1"]
        assert _summary(old_rm)[: len(BOTH_REMOVED)] == BOTH_REMOVED
    finally:
        w.close()


def test_an_rm_calling_back_from_another_thread_on_a_reload_does_not_deadlock() -> None:
    w, rm = _populated_with_an_rm_updating_n1_from_a_worker()
    try:
        w.reload(BASIC)
        rm.assert_worker_finished()
        # The worker's update was applied to the partition that stayed.
        assert w.partition().nodes["n1"].total == {"memory": 500}
        assert [r.allocation_key for r in rm.released] == ["g1"]
    finally:
        w.close()


def test_an_allocation_committed_just_before_its_partition_goes_reaches_the_old_rm_in_order() -> None:
    """The commit's partition is removed (re-registration) after the commit and before its caller
    reports it: the old RM hears the allocation, then its release; the new RM hears nothing."""
    w = World(BASIC)
    try:
        w.add_node("n1")
        w.add_app("app-1")
        w.ask("k1", "app-1")
        old_rm, new_rm = w.rm, RecordingRM()
        armed = [True]

        def reregister_once() -> None:
            # Runs right after the commit released the partition's lock (its change notification).
            if armed[0]:
                armed[0] = False
                w.register(BASIC, rm=new_rm)

        w.context.add_update_listener(reregister_once)
        w.commit("app-1", "k1", "n1")
        order = [
            ("new" if r.new else "released", (r.new or r.released)[0].allocation_key)
            for r in old_rm.calls_of("update_allocation")
        ]
        assert order == [("new", "k1"), ("released", "k1")]
        assert old_rm.allocations == {} and old_rm.app_state("app-1") == "Failing"
        assert new_rm.calls == []
    finally:
        w.close()
