"""Randomized RM traffic interleaved with scheduling cycles (a hypothesis state machine): nodes
come, go, drain and return; applications come and go; asks (some pinned to a node) arrive and
are withdrawn; allocations are released one by one or all at once; the manual clock moves
(reservations, completing timeouts). After every step every health check is green, the RM's
view of the live allocations is the core's, and no limit is exceeded."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from scheduling_helpers import Cluster, config, res

from pyscheduler.objects.application_state import AppState
from pyscheduler.si import messages as si
from pyscheduler.si.messages import TAG_REQUIRED_NODE

CONFIG = config("""\
          - name: a
            maxapplications: 2
            resources: {max: {memory: 150, vcore: 20}}
            limits:
              - limit: alice in a
                users: [alice]
                maxresources: {memory: 80}
                maxapplications: 1
          - name: b
          - name: p
            resources: {max: {memory: 120}}
            queues:
              - name: x
              - name: y
""")
NODES = [f"node-{i}" for i in range(5)]
APPS = [f"app-{i}" for i in range(6)]
QUEUES = ["root.a"] * 3 + ["root.b", "root.p.x", "root.p.y"]  # root.a has the limits
USERS = ["alice", "alice", "bob", "carol"]  # alice has the limits
NODE_SIZES = [(50, 5), (100, 10), (30, 3)]
ASK_SIZES = [(10, 1), (20, 2), (40, 1), (60, 4), (120, 2)]  # 120 fits no node
#: Actions by weight.
ACTIONS = (["asks"] * 5 + ["schedule_once"] * 4 + ["run_until_idle"] * 2 + ["release_allocation"] * 3
           + ["confirm_preemption"] * 2
           + ["withdraw_ask", "release_all", "remove_app", "add_node"] + ["add_app", "node_action"] * 2 + ["advance"] * 3)


class SchedulingMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.cluster = Cluster(CONFIG, rm_timeout=2.0)
        self.keys = 0

    @initialize(policy=st.sampled_from(["fair", "binpacking"]),
                nodes=st.lists(st.sampled_from(NODE_SIZES), min_size=1, max_size=4),
                apps=st.lists(st.tuples(st.sampled_from(QUEUES), st.sampled_from(USERS)), min_size=1, max_size=5))
    def start(self, policy: str, nodes: list[tuple[int, int]], apps: list[tuple[str, str]]) -> None:
        if policy == "binpacking":
            self.cluster.close()
            self.cluster = Cluster(CONFIG.replace("type: fair", "type: binpacking"), rm_timeout=2.0)
        for node, size in zip(NODES, nodes):
            self.add_node(node, size, False)
        for app, (queue, user) in zip(APPS, apps):
            self.add_app(app, queue, user)

    def teardown(self) -> None:
        self.cluster.close()

    # One rule that draws a weighted action: hypothesis picks among rules evenly, and an even
    # mix of node and app churn would leave little to schedule.

    @rule(data=st.data(), action=st.sampled_from(ACTIONS))
    def step(self, data: st.DataObject, action: str) -> None:
        getattr(self, f"_{action}")(data)

    # -- nodes ------------------------------------------------------------------------------------

    def _add_node(self, data: st.DataObject) -> None:
        node, size = data.draw(st.sampled_from(NODES)), data.draw(st.sampled_from(NODE_SIZES))
        self.add_node(node, size, data.draw(st.booleans()))

    def add_node(self, node: str, size: tuple[int, int], drained: bool) -> None:
        action = si.NodeAction.CREATE_DRAIN if drained else si.NodeAction.CREATE
        self.cluster.update_nodes(si.NodeInfo(node_id=node, action=action,
                                              schedulable_resource=res(memory=size[0], vcore=size[1])))

    def _node_action(self, data: st.DataObject) -> None:
        known = sorted(self.cluster.partition.nodes)
        node = data.draw(st.sampled_from(known)) if known and data.draw(st.integers(0, 9)) else data.draw(
            st.sampled_from(NODES))
        action = data.draw(st.sampled_from(
            [si.NodeAction.DECOMISSION, si.NodeAction.DRAIN_NODE, si.NodeAction.DRAIN_TO_SCHEDULABLE]))
        self.cluster.node_action(node, action)

    # -- applications -------------------------------------------------------------------------------

    def _add_app(self, data: st.DataObject) -> None:
        self.add_app(data.draw(st.sampled_from(APPS)), data.draw(st.sampled_from(QUEUES)),
                     data.draw(st.sampled_from(USERS)))

    def add_app(self, app: str, queue: str, user: str) -> None:
        self.cluster.add_app(app, queue, user=user)

    def _remove_app(self, data: st.DataObject) -> None:
        self.cluster.remove_app(self._app(data))

    def _app(self, data: st.DataObject) -> str:
        """Mostly an application the core knows (requests for unknown ones are rejected)."""
        known = sorted(self.cluster.partition.applications)
        if known and data.draw(st.integers(0, 9)) > 0:
            return data.draw(st.sampled_from(known))
        return data.draw(st.sampled_from(APPS))

    # -- asks and releases ---------------------------------------------------------------------------

    def _asks(self, data: st.DataObject) -> None:
        app = self._app(data)
        size = data.draw(st.sampled_from(ASK_SIZES))
        priority = data.draw(st.integers(0, 2))
        pinned = data.draw(st.sampled_from(NODES)) if data.draw(st.integers(0, 5)) == 0 else None
        msgs = []
        for _ in range(data.draw(st.integers(1, 6))):
            self.keys += 1
            tags = {TAG_REQUIRED_NODE: pinned} if pinned else {}
            msgs.append(self.cluster.ask_msg(f"k{self.keys}", app, size[0], size[1], priority=priority, tags=tags))
        self.cluster.send(*msgs)

    def _release_allocation(self, data: st.DataObject) -> None:
        live = sorted((a.application_id, k) for k, a in self.cluster.rm.allocations.items())
        if live:
            app, key = data.draw(st.sampled_from(live))
            self.cluster.release(app, key)

    def _confirm_preemption(self, data: st.DataObject) -> None:
        """As a real RM: a victim the core released (a required-node ask preempted it) is
        killed and its release confirmed with the same termination type."""
        part = self.cluster.partition
        with part.lock:
            waiting = sorted((a.application_id, k) for app in part.applications.values()
                             for k, a in app.allocations.items() if a.preempted)
        if waiting:
            app, key = data.draw(st.sampled_from(waiting))
            self.cluster.send(releases=(si.AllocationRelease(
                partition_name="default", application_id=app, allocation_key=key,
                termination_type=si.TerminationType.PREEMPTED_BY_SCHEDULER),))

    def _withdraw_ask(self, data: st.DataObject) -> None:
        pending = sorted((a.app_id, k) for a in self.cluster.partition.applications.values() for k in a.asks)
        if pending:
            app, key = data.draw(st.sampled_from(pending))
            self.cluster.release(app, key)

    def _release_all(self, data: st.DataObject) -> None:
        self.cluster.release(self._app(data))

    # -- scheduling and time ---------------------------------------------------------------------------

    def _schedule_once(self, data: st.DataObject) -> None:
        for _ in range(data.draw(st.integers(1, 3))):
            self._cycle()

    def _run_until_idle(self, data: st.DataObject) -> None:
        for _ in range(500):
            if not self._cycle():
                break

    def _advance(self, data: st.DataObject) -> None:
        self.cluster.advance(data.draw(st.sampled_from([0.5, 2.0, 31.0])))
        # Timers first (the cycle would fire them itself, after _cycle's look at what may run).
        self.cluster.tick()
        self._cycle()

    def _cycle(self) -> list:
        """One cycle, checked against what was true before it."""
        part = self.cluster.partition
        with part.lock:
            # maxApplications and the user's maxapplications gate apps that are not running yet.
            runnable = {
                app.app_id: app.queue.can_run_app() and part.ugm.can_run_app(app.queue.path, app.app_id, app.user, app.groups)
                for app in part.applications.values()
                if app.state is AppState.ACCEPTED and app.queue is not None
            }
        decisions = self.cluster.once()
        assert len(decisions) <= 1  # one partition: at most one allocation per cycle
        for d in decisions:
            assert runnable.get(d.app.app_id, True), f"{d.app.app_id} was not runnable: {d}"
            assert d.node.schedulable, d
            if d.ask.required_node:
                assert d.node.node_id == d.ask.required_node, d
            assert d.ask.allocation_key in self.cluster.rm.allocations
        return decisions

    # -- invariants -------------------------------------------------------------------------------------

    @invariant()
    def healthy(self) -> None:
        self.cluster.assert_healthy()

    @invariant()
    def rm_sees_what_the_core_holds(self) -> None:
        """The RM's live allocations are the core's, except preemption victims: those the RM
        was told to release (PREEMPTED_BY_SCHEDULER) and has not confirmed yet."""
        part = self.cluster.partition
        with part.lock:
            core = {k: a.node_id for app in part.applications.values() for k, a in app.allocations.items()
                    if not a.preempted}
            victims = {k for app in part.applications.values() for k, a in app.allocations.items() if a.preempted}
        assert self.cluster.placements() == core
        told = {r.allocation_key for r in self.cluster.rm.released
                if r.termination_type is si.TerminationType.PREEMPTED_BY_SCHEDULER}
        assert victims <= told

    @invariant()
    def limits_hold(self) -> None:
        c = self.cluster
        for path in ("root.a", "root.p"):
            queue = c.queue(path)
            assert queue.allocated.fits_in_max_undef(queue.max_resource), (path, queue.allocated)
        assert c.partition.ugm.user_usage("alice", "root.a").get("memory", 0) <= 80
        # maxApplications is checked per decision (an app that is already running is not
        # gated again, as in YuniKorn), see _cycle.


TestScheduling = SchedulingMachine.TestCase
TestScheduling.settings = settings(
    max_examples=50,
    stateful_step_count=40,
    deadline=None,
    derandomize=True,  # the same examples every run
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
