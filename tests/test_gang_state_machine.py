"""Gang scheduling through the RM interface as a hypothesis state machine (issue 14), its
invariants checked after every step.

**The cluster.** One partition; a FIFO leaf ``root.gang`` for gang applications and a leaf
``root.other`` for normal ones; three nodes of 4 vcores that the RM removes and adds back.

**What the machine does.** The RM submits gang applications (one or two task groups of 1-3
members of 0.5-2 vcores, Soft or Hard, a placeholder timeout of 1-20 s) with their placeholder
asks, real members of their groups (now and then one larger than the group's placeholders, or
of a group that has none), and normal applications with asks; it withdraws members (pending,
taking a placeholder's place, or running), removes applications and nodes; it adds daemon set
pods that need a node (required-node preemption, placeholders and members among the victims);
its predicates refuse members on one node now and then (members then take other nodes than
their placeholders'); it confirms the core's releases as a shim does (PLACEHOLDER_REPLACED and
TIMEOUT with the same type, PREEMPTED_BY_SCHEDULER too, sometimes twice, some late, some
never). The scheduler runs cycles; the clock moves up to 25 s and ticks (placeholder timeouts).

**Invariants**, after every step:

1. *Health*: ``check_invariants`` and the REST health checks are green (queues, nodes,
   applications and users add up).
2. *Placeholder counts add up*: per application and task group, ``count`` equals the group's
   placeholders allocated now plus those pending plus ``replaced`` plus ``timed out``.
3. *No gang starts half*: an application still placing its placeholders has no member
   allocated or taking a placeholder.
4. *No member before its placeholder is gone*: a real member taking a placeholder's place is
   not allocated in the core and has not been sent to the RM until the RM confirmed the
   placeholder's release; a member allocated by replacement (``placeholder_used``) replaced a
   placeholder whose release the RM confirmed.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from rm_helpers import World, check_invariants, res
from scheduling_helpers import config as queues_yaml

from pyscheduler.objects.application_state import AppState
from pyscheduler.scheduler.cycle import SchedulingCycle
from pyscheduler.scheduler.health import check_health
from pyscheduler.si import messages as si

CONFIG = queues_yaml("""\
          - name: gang
            properties: {application.sort.policy: fifo}
          - name: other
""")
NODES = ("node-1", "node-2", "node-3")
CONFIRMED_TYPES = (si.TerminationType.TIMEOUT, si.TerminationType.PLACEHOLDER_REPLACED,
                   si.TerminationType.PREEMPTED_BY_SCHEDULER)


class GangMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.w = World(CONFIG)
        self.gangs: dict[str, dict[str, int]] = {}  # app -> task group -> placeholder size
        self.normal: list[str] = []
        self.keys = 0
        self.handled = 0  # core releases looked at
        self.unconfirmed: list[si.AllocationRelease] = []
        self.confirmed_placeholders: set[str] = set()
        self.down: list[str] = []

    def teardown(self) -> None:
        self.w.close()

    def _key(self, prefix: str) -> str:
        self.keys += 1
        return f"{prefix}-{self.keys}"

    @initialize()
    def nodes(self) -> None:
        for node in NODES:
            self.w.add_node(node, memory=100_000, vcore=4000)

    # -- the RM ----------------------------------------------------------------------------------

    @rule(groups=st.lists(st.tuples(st.integers(1, 3), st.sampled_from([500, 1000, 2000])), min_size=1, max_size=2),
          hard=st.booleans(), timeout_s=st.integers(1, 20), members=st.integers(0, 3))
    def submit_gang(self, groups: list[tuple[int, int]], hard: bool, timeout_s: int, members: int) -> None:
        """A gang with its placeholders, and (like a job's executors) up to ``members`` real
        members per group at once."""
        app_id = self._key("gang")
        total = sum(count * size for count, size in groups)
        self.w.apps(si.AddApplicationRequest(
            application_id=app_id, queue_name="root.gang", partition_name="default",
            ugi=si.UserGroupInformation(user="alice"), placeholder_ask=res(vcore=total),
            gang_scheduling_style="Hard" if hard else "Soft", execution_timeout_milli_seconds=timeout_s * 1000))
        if app_id not in self.w.partition().applications:
            return  # rejected (larger than the cluster)
        self.gangs[app_id] = {}
        for index, (count, size) in enumerate(groups):
            group = f"tg-{index}"
            self.gangs[app_id][group] = size
            for _ in range(count):
                self.w.ask(self._key("ph"), app_id, res(vcore=size), placeholder=True, task_group_name=group)
            for _ in range(min(members, count)):
                self.w.ask(self._key("real"), app_id, res(vcore=size), task_group_name=group)

    @rule(data=st.data())
    def submit_members(self, data: st.DataObject) -> None:
        live = [a for a in sorted(self.gangs) if a in self.w.partition().applications]
        if not live:
            return
        app_id = data.draw(st.sampled_from(live))
        groups = self.gangs[app_id]
        group = data.draw(st.sampled_from([*sorted(groups), "tg-none"]))
        size = groups.get(group, 1000)
        size = data.draw(st.sampled_from([size, size, size // 2 or 1, size * 2]))
        for _ in range(data.draw(st.integers(1, 2))):
            self.w.ask(self._key("real"), app_id, res(vcore=size), task_group_name=group)

    @rule(asks=st.integers(1, 3))
    def submit_normal(self, asks: int) -> None:
        app_id = self._key("app")
        self.w.add_app(app_id, "root.other")
        self.normal.append(app_id)
        for _ in range(asks):
            self.w.ask(self._key("ask"), app_id, res(vcore=1000))

    @rule(data=st.data())
    def withdraw_member(self, data: st.DataObject) -> None:
        """The RM deletes a real member's pod: pending, taking a placeholder's place, or running."""
        part = self.w.partition()
        members = sorted((app.app_id, key) for app in part.applications.values()
                         for key in [*app.asks, *app.allocations,
                                     *(p.replaced_by.allocation_key for p in app.placeholders() if p.replaced_by)]
                         if key.startswith("real-"))
        if members:
            app_id, key = data.draw(st.sampled_from(members))
            self.w.release(app_id, key)
            assert key not in self.w.rm.rejected_allocations

    @rule(node=st.sampled_from(NODES), size=st.sampled_from([500, 1000, 2000]))
    def daemon_set(self, node: str, size: int) -> None:
        """A daemon set pod that needs ``node``: on a full node it preempts (placeholders and
        members included; a preempted placeholder is never replaced)."""
        app_id = self._key("ds")
        self.w.add_app(app_id, "root.other")
        self.w.ask(self._key("ds-ask"), app_id, res(vcore=size), allocation_tags={si.TAG_REQUIRED_NODE: node})

    @rule(data=st.data())
    def remove_app(self, data: st.DataObject) -> None:
        live = sorted(self.w.partition().applications)
        if live:
            self.w.remove_app(data.draw(st.sampled_from(live)))

    @rule(data=st.data())
    def node_goes_or_comes(self, data: st.DataObject) -> None:
        if self.down and data.draw(st.booleans()):
            node = self.down.pop(0)
            self.w.add_node(node, memory=100_000, vcore=4000)
            return
        up = [n for n in NODES if n not in self.down]
        if len(up) > 1:
            node = data.draw(st.sampled_from(up))
            self.w.node(node, si.NodeAction.DECOMISSION)
            self.down.append(node)

    @rule(data=st.data())
    def confirm(self, data: st.DataObject) -> None:
        """The shim confirms some of the core's releases: the placeholder pods are gone."""
        released = self.w.rm.released
        self.unconfirmed.extend(r for r in released[self.handled:] if r.termination_type in CONFIRMED_TYPES)
        self.handled = len(released)
        if not self.unconfirmed:
            return
        count = data.draw(st.integers(1, len(self.unconfirmed)))
        taken, self.unconfirmed = self.unconfirmed[:count], self.unconfirmed[count:]
        for release in taken:
            times = 2 if data.draw(st.integers(0, 4)) == 0 else 1
            for _ in range(times):
                if release.termination_type == si.TerminationType.PLACEHOLDER_REPLACED:
                    self.confirmed_placeholders.add(release.allocation_key)
                self.w.release(release.application_id, release.allocation_key, termination=release.termination_type)

    @rule(node=st.sampled_from([None, *NODES]))
    def refuse_members_on(self, node: str | None) -> None:
        """The RM's predicates refuse real members on one node (None: accept everything), so
        members sometimes take other nodes than their placeholders'."""
        def predicates(key: str, node_id: str, allocate: bool) -> str | None:
            del allocate
            return "refused" if node is not None and node_id == node and key.startswith("real-") else None
        self.w.rm.set_predicates(predicates)

    # -- the scheduler and the clock -------------------------------------------------------------

    @rule(cycles=st.integers(1, 8))
    def schedule(self, cycles: int) -> None:
        cycle = SchedulingCycle(self.w.context)
        for _ in range(cycles):
            cycle.run()

    @rule(seconds=st.floats(0.1, 25.0))
    def advance(self, seconds: float) -> None:
        self.w.advance(seconds)

    # -- invariants -------------------------------------------------------------------------------

    @invariant()
    def healthy(self) -> None:
        check_invariants(self.w.context)
        result = check_health(self.w.context)
        assert result.healthy, result.explain()

    @invariant()
    def placeholder_counts_add_up(self) -> None:
        for app in self.w.partition().applications.values():
            for group, counts in app.placeholder_data.items():
                allocated = sum(1 for a in app.allocations.values() if a.placeholder and a.task_group_name == group)
                pending = sum(1 for a in app.asks.values() if a.placeholder and a.task_group_name == group)
                assert counts.count == allocated + pending + counts.replaced + counts.timed_out, (
                    app.app_id, group, counts, allocated, pending)

    @invariant()
    def no_member_before_its_placeholder_is_gone(self) -> None:
        sent = self.w.rm.allocations
        for app in self.w.partition().applications.values():
            for alloc in app.allocations.values():
                if alloc.replaced_by is not None:
                    member = alloc.replaced_by
                    assert member.allocation_key not in app.allocations and member.allocation_key not in sent
                if alloc.placeholder_used:
                    placeholders = self._placeholders_of(alloc.allocation_key)
                    assert placeholders & self.confirmed_placeholders or placeholders & self._removed_with_node(), (
                        alloc.allocation_key, placeholders)

    @invariant()
    def no_gang_starts_half(self) -> None:
        """An application still placing its gang runs none of its members."""
        for app in self.w.partition().applications.values():
            if app.state is AppState.ACCEPTED and not app.allocated_placeholder.is_zero():
                assert not any(a.placeholder_used for a in app.allocations.values()), app.app_id
                assert not any(a.replaced_by is not None for a in app.allocations.values()), app.app_id

    def _placeholders_of(self, member_key: str) -> set[str]:
        """The placeholders the core asked the RM to release for this member."""
        return {r.allocation_key for r in self.w.rm.released
                if r.termination_type == si.TerminationType.PLACEHOLDER_REPLACED and r.message.endswith(": " + member_key)}

    def _removed_with_node(self) -> set[str]:
        """Placeholders whose node went while their member was on another node: the replacement
        completes without the RM's confirmation (YuniKorn's rule)."""
        return {r.allocation_key for r in self.w.rm.released if r.message == "node removed"}


TestGangMachine = GangMachine.TestCase
TestGangMachine.settings = settings(max_examples=60, stateful_step_count=40, deadline=None,
                                    suppress_health_check=[HealthCheck.too_slow])

