"""Invariants under concurrent and random RM traffic.

- no negative resource (queues, applications, nodes, user usage);
- a queue's usage equals the sum of its applications' (leaf) or children's (parent);
- a node's usage equals the sum of its allocations, and node and application agree on them;
- the RM's view (new allocations minus releases it was sent) equals the core's allocations.

Several threads send node, application, ask and release updates and commit allocations while
readers walk queues, applications and nodes. Everything is bounded in operation count and
joined with a timeout; nothing sleeps to synchronise. A hypothesis state machine then drives
random RM updates from one thread and checks the invariants after every step.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from rm_helpers import BASIC, World, check_invariants, invariant_problems, res, world  # noqa: F401

from pyscheduler.objects.partition import PartitionError
from pyscheduler.si import messages as si
from pyscheduler.testing.recording import RecordingRM

A = si.NodeAction


def core_allocations(w: World) -> set[str]:
    keys: set[str] = set()
    for part in list(w.context.partitions.values()):
        for app in list(part.applications.values()):
            keys.update(app.allocations)
    return keys


def check_rm_view(w: World, recovered: set[str]) -> None:
    """The RM holds exactly the core's allocations, except those the RM itself reported
    (recovered or bound: the core sends no "new" for them)."""
    core = core_allocations(w)
    rm_live = set(w.rm.allocations)
    assert rm_live <= core, f"the RM still holds released allocations {sorted(rm_live - core)}"
    assert core - rm_live <= recovered, f"the RM was never told of {sorted(core - rm_live - recovered)}"


# -- ordering of what the RM hears ----------------------------------------------------------------------


def test_a_new_allocation_is_never_reported_after_its_release(world: World) -> None:
    """The node of a just-committed allocation is removed before the commit's caller reports it:
    the RM must hear "new" then "released", never the reverse (which would leave it holding an
    allocation the core released)."""
    world.add_node("n1")
    world.add_app("app-1")
    world.ask("k1", "app-1")
    armed = [True]

    def interleave() -> None:
        # Runs right after the commit released the partition lock (partition.on_change), as if
        # another RM thread got in before the commit's caller told the RM.
        if armed[0]:
            armed[0] = False
            world.node("n1", A.DECOMISSION)

    world.context.add_update_listener(interleave)
    world.commit("app-1", "k1", "n1")
    assert world.rm.allocations == {}
    order = [
        ("new" if r.new else "released", (r.new or r.released)[0].allocation_key)
        for r in world.rm.calls_of("update_allocation")
    ]
    assert order == [("new", "k1"), ("released", "k1")]


class _BlockingRM(RecordingRM):
    """On the thread named ``victim``, the first "new allocation" callback blocks (before it is
    recorded) until released."""

    def __init__(self) -> None:
        super().__init__()
        self.victim = ""
        self.blocked = threading.Event()
        self.release_it = threading.Event()

    def update_allocation(self, response: si.AllocationResponse) -> None:
        if threading.current_thread().name == self.victim and response.new and not self.blocked.is_set():
            self.blocked.set()
            assert self.release_it.wait(10)
        super().update_allocation(response)


def test_concurrent_deliveries_keep_the_rm_in_order() -> None:
    """Thread B commits an allocation and, while it is telling the RM, thread A removes the
    node. Whatever the interleaving, the RM must end up without the
    allocation: A's release may not overtake B's "new"."""
    w = World(BASIC, register=False)
    rm = _BlockingRM()
    w.register(BASIC, rm=rm)
    w.rm = rm
    try:
        w.add_node("n1")
        w.add_app("app-1")
        w.ask("k1", "app-1")
        errors: list[BaseException] = []

        def guarded(fn: Callable[[], None]) -> Callable[[], None]:
            def run() -> None:
                try:
                    fn()
                except BaseException as err:  # noqa: BLE001 - reported by the test
                    errors.append(err)
            return run

        rm.victim = "committer"
        committer = threading.Thread(target=guarded(lambda: w.commit("app-1", "k1", "n1")), name="committer")
        committer.start()
        assert rm.blocked.wait(10), "the committer never reached the RM"
        remover = threading.Thread(target=guarded(lambda: w.node("n1", A.DECOMISSION)), name="remover")
        remover.start()
        # With ordered delivery the remover cannot finish while the committer is mid-delivery:
        # this bounded join only gives a broken implementation the chance to overtake.
        remover.join(0.5)
        rm.release_it.set()
        committer.join(10)
        remover.join(10)
        assert not committer.is_alive() and not remover.is_alive()
        assert errors == []
        assert rm.allocations == {}, "the RM holds an allocation on a removed node"
        assert "n1" not in w.partition().nodes
    finally:
        w.close()


# -- many threads --------------------------------------------------------------------------------------


def test_concurrent_rm_updates_and_reads_keep_the_invariants() -> None:
    w = World(BASIC)
    context = w.context
    for i in range(4):
        w.add_node(f"base-{i}", memory=200, vcore=20)
    part = w.partition()
    recovered: set[str] = set()
    recovered_lock = threading.Lock()
    errors: list[str] = []
    writers_done = threading.Event()
    reads = [0]

    def record_error(where: str, err: BaseException) -> None:
        errors.append(f"{where}: {type(err).__name__}: {err}")

    def app_writer(index: int, ops: int = 250) -> None:
        rng = random.Random(index)
        apps: list[str] = []
        keys = 0
        try:
            for _ in range(ops):
                roll = rng.random()
                if roll < 0.12 or not apps:
                    app_id = f"w{index}-app{len(apps)}"
                    apps.append(app_id)
                    w.add_app(app_id, rng.choice(["root.a", "root.b"]), user=rng.choice(["u1", "u2", "u3"]))
                    continue
                app_id = rng.choice(apps)
                if roll < 0.42:
                    keys += 1
                    w.ask(f"{app_id}-k{keys}", app_id, res(memory=rng.randint(1, 20), vcore=rng.randint(1, 3)))
                elif roll < 0.70:
                    app = part.applications.get(app_id)
                    asks = list(app.asks.values()) if app is not None else []
                    nodes = list(part.nodes.values())
                    if app is None or not asks or not nodes:
                        continue
                    try:
                        context.commit_allocation(part, app, rng.choice(asks), rng.choice(nodes))
                    except PartitionError:
                        pass  # the decision went stale: another thread removed something first
                elif roll < 0.85:
                    app = part.applications.get(app_id)
                    allocated = list(app.allocations) if app is not None else []
                    if allocated:
                        w.release(app_id, rng.choice(allocated))
                elif roll < 0.90:
                    w.release(app_id, "")
                elif roll < 0.95:
                    nodes = list(part.nodes)
                    if nodes:
                        keys += 1
                        key = f"{app_id}-r{keys}"
                        with recovered_lock:
                            recovered.add(key)
                        w.ask(key, app_id, res(memory=5, vcore=1), node_id=rng.choice(nodes))
                else:
                    w.remove_app(app_id)
        except BaseException as err:  # noqa: BLE001 - reported by the test
            record_error(f"app writer {index}", err)

    def node_writer(ops: int = 150) -> None:
        rng = random.Random(99)
        made = 0
        try:
            for _ in range(ops):
                roll = rng.random()
                nodes = list(part.nodes)
                if roll < 0.3 or not nodes:
                    made += 1
                    w.add_node(f"extra-{made}", memory=rng.randint(50, 300), vcore=20)
                elif roll < 0.5:
                    w.node(rng.choice(nodes), A.UPDATE, res(memory=rng.randint(50, 300), vcore=20))
                elif roll < 0.7:
                    w.node(rng.choice(nodes), rng.choice([A.DRAIN_NODE, A.DRAIN_TO_SCHEDULABLE]))
                else:
                    w.node(rng.choice(nodes), A.DECOMISSION)
        except BaseException as err:  # noqa: BLE001
            record_error("node writer", err)

    def timer(ops: int = 60) -> None:
        try:
            for _ in range(ops):
                w.clock.advance(7)
                context.tick()
        except BaseException as err:  # noqa: BLE001
            record_error("timer", err)

    def reader(index: int) -> None:
        try:
            while not writers_done.is_set():
                # Without locks: nothing may raise and nothing may be negative at any moment.
                for queue in part.queues():
                    assert not queue.allocated.has_negative(), queue
                    assert not queue.pending.has_negative(), queue
                for app in list(part.applications.values()):
                    assert not app.allocated.has_negative() and not app.pending.has_negative(), app
                    list(app.allocations.values())
                for node in list(part.nodes.values()):
                    assert not node.allocated.has_negative(), node.node_id
                    list(node.allocations.values())
                # Under the partition's lock: the cross-object invariants hold exactly.
                with part.lock:
                    problems = invariant_problems(part)
                assert not problems, problems
                reads[0] += 1
        except BaseException as err:  # noqa: BLE001
            record_error(f"reader {index}", err)

    writers = [threading.Thread(target=app_writer, args=(i,), name=f"app-writer-{i}") for i in range(3)]
    writers += [threading.Thread(target=node_writer, name="node-writer"), threading.Thread(target=timer, name="timer")]
    readers = [threading.Thread(target=reader, args=(i,), name=f"reader-{i}") for i in range(2)]
    try:
        for thread in readers + writers:
            thread.start()
        for thread in writers:
            thread.join(120)
        writers_done.set()
        for thread in readers:
            thread.join(30)
        assert not any(t.is_alive() for t in writers + readers), "a thread did not finish (deadlock?)"
        assert errors == []
        assert reads[0] > 0
        check_invariants(context)
        check_rm_view(w, recovered)
        # Every application answer arrived: each app was accepted or rejected exactly once.
        assert len(w.rm.accepted_apps) + len(w.rm.rejected_apps) > 0
    finally:
        writers_done.set()
        w.close()


# -- a random walk of RM updates (hypothesis) -------------------------------------------------------------

OTHER_CONFIG = BASIC.replace("          - name: b\n", "          - name: b\n            maxapplications: 3\n"
                             "            resources:\n              max: {memory: 60}\n")


class RMMachine(RuleBasedStateMachine):
    """Random RM traffic from one thread; every answer must leave the core consistent."""

    @initialize()
    def start(self) -> None:
        self.w = World(BASIC)
        self.recovered: set[str] = set()
        self.counter = 0

    def teardown(self) -> None:
        w = getattr(self, "w", None)
        if w is not None:
            w.close()

    def _next(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    @property
    def part(self):
        return self.w.partition()

    @rule(memory=st.integers(0, 200), schedulable=st.booleans())
    def add_node(self, memory: int, schedulable: bool) -> None:
        node_id = self._next("n")
        self.w.node(node_id, A.CREATE if schedulable else A.CREATE_DRAIN, res(memory=memory, vcore=10))

    @precondition(lambda self: self.part.nodes)
    @rule(data=st.data(), memory=st.integers(-5, 200))
    def update_node(self, data: st.DataObject, memory: int) -> None:
        node_id = data.draw(st.sampled_from(sorted(self.part.nodes)))
        self.w.node(node_id, A.UPDATE, {"memory": memory, "vcore": 10})
        if memory < 0:
            assert node_id in self.w.rm.rejected_nodes

    @precondition(lambda self: self.part.nodes)
    @rule(data=st.data(), action=st.sampled_from([A.DRAIN_NODE, A.DRAIN_TO_SCHEDULABLE, A.DECOMISSION]))
    def node_action(self, data: st.DataObject, action: si.NodeAction) -> None:
        self.w.node(data.draw(st.sampled_from(sorted(self.part.nodes))), action)

    @rule(queue=st.sampled_from(["root.a", "root.b", "root.parent", "root.nope"]), user=st.sampled_from(["u1", "u2"]))
    def add_app(self, queue: str, user: str) -> None:
        app_id = self._next("app")
        self.w.add_app(app_id, queue, user=user)
        answered = app_id in self.w.rm.accepted_apps or app_id in self.w.rm.rejected_apps
        assert answered, f"{app_id} got no answer"

    @precondition(lambda self: self.part.applications)
    @rule(data=st.data())
    def remove_app(self, data: st.DataObject) -> None:
        self.w.remove_app(data.draw(st.sampled_from(sorted(self.part.applications))))

    @rule(data=st.data(), memory=st.integers(-1, 50), known=st.booleans())
    def ask(self, data: st.DataObject, memory: int, known: bool) -> None:
        apps = sorted(self.part.applications)
        app_id = data.draw(st.sampled_from(apps)) if apps and known else "ghost"
        key = self._next("k")
        self.w.ask(key, app_id, {"memory": memory, "vcore": 1} if memory else {"memory": 0})
        if memory <= 0 or app_id == "ghost":
            assert key in self.w.rm.rejected_allocations

    @precondition(lambda self: self.part.applications and self.part.nodes)
    @rule(data=st.data())
    def recover(self, data: st.DataObject) -> None:
        app_id = data.draw(st.sampled_from(sorted(self.part.applications)))
        node_id = data.draw(st.sampled_from(sorted(self.part.nodes)))
        key = self._next("r")
        self.recovered.add(key)
        self.w.ask(key, app_id, res(memory=7, vcore=1), node_id=node_id)

    @precondition(lambda self: any(a.asks for a in self.part.applications.values()) and self.part.nodes)
    @rule(data=st.data())
    def commit(self, data: st.DataObject) -> None:
        app = data.draw(st.sampled_from([a for _, a in sorted(self.part.applications.items()) if a.asks]))
        key = data.draw(st.sampled_from(sorted(app.asks)))
        node_id = data.draw(st.sampled_from(sorted(self.part.nodes)))
        self.w.commit(app.app_id, key, node_id)
        assert key in self.w.rm.allocations

    @precondition(lambda self: any(a.allocations or a.asks for a in self.part.applications.values()))
    @rule(data=st.data(), whole=st.booleans())
    def release(self, data: st.DataObject, whole: bool) -> None:
        app = data.draw(st.sampled_from(
            [a for _, a in sorted(self.part.applications.items()) if a.allocations or a.asks]))
        key = "" if whole else data.draw(st.sampled_from(sorted({*app.allocations, *app.asks})))
        self.w.release(app.app_id, key)

    @rule(seconds=st.sampled_from([1, 29, 31, 3 * 24 * 3600]))
    def advance(self, seconds: int) -> None:
        self.w.advance(seconds)

    @rule(other=st.booleans())
    def reload(self, other: bool) -> None:
        self.w.reload(OTHER_CONFIG if other else BASIC)

    @invariant()
    def consistent(self) -> None:
        check_invariants(self.w.context)
        check_rm_view(self.w, self.recovered)
        # Running apps counted on a queue are exactly its Running apps (YuniKorn counts on
        # entering and leaving Running; a Completing app gave its slot back).
        for queue in self.part.queues():
            if queue.is_leaf:
                running = sum(1 for a in queue.applications.values() if a.state.value == "Running")
                assert queue.running_apps == running, queue


TestRMMachine = RMMachine.TestCase
TestRMMachine.settings = settings(
    max_examples=40, stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
