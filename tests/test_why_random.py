"""The why answer of every pending ask of random clusters, against an independent re-evaluation
(issue 35): the checker below knows only what the test configured and what the RM was told
(the queues' maxes and the user's limit as written in the YAML, the allocations the RM holds,
the nodes it registered) and decides for each ask which check stops it first: the user's room,
then each queue's max from the leaf up, then whether any node has room. The answer's code, and
the queue it names, must agree; asking changes nothing (state dump and events)."""

from __future__ import annotations

import random
from collections import defaultdict

import pytest
from rm_helpers import World, check_invariants, res
from scheduling_helpers import config

from pyscheduler.dao.statedump import fullstatedump
from pyscheduler.dao.why import why
from pyscheduler.scheduler.cycle import SchedulingCycle
from pyscheduler.si import messages as si

#: The maxes the YAML below writes, per queue path (memory and vcore as given to the nodes).
MAXES: dict[str, dict[str, int]] = {
    "root.a": {"memory": 150, "vcore": 40_000},  # the YAML's vcore is in cores
    "root.p": {"memory": 300},
    "root.p.c1": {"memory": 200},
}
ALICE_IN_U = {"memory": 120}
QUEUES = """\
          - name: a
            resources:
              max: {memory: 150, vcore: 40}
          - name: p
            parent: true
            resources:
              max: {memory: 300}
            queues:
              - name: c1
                resources:
                  max: {memory: 200}
              - name: c2
          - name: u
            limits:
              - limit: alice in u
                users: [alice]
                maxresources: {memory: 120}
          - name: b
"""
LEAVES = ["root.a", "root.p.c1", "root.p.c2", "root.u", "root.b"]


def _fits(ask: dict[str, int], room: dict[str, int]) -> bool:
    return all(ask.get(name, 0) <= room.get(name, 0) for name in ask)


def _add(total: dict[str, int], more: dict[str, int]) -> None:
    for name, value in more.items():
        total[name] = total.get(name, 0) + value


class Checker:
    """What stops an ask, from the test's own bookkeeping (see the module doc)."""

    def __init__(self, nodes: dict[str, tuple[dict[str, int], bool]], app_queue: dict[str, str],
                 app_user: dict[str, str], allocations: list[tuple[str, str, dict[str, int]]]) -> None:
        self.nodes = nodes
        self.used_on: dict[str, dict[str, int]] = defaultdict(dict)
        self.used_in: dict[str, dict[str, int]] = defaultdict(dict)
        self.alice_in_u: dict[str, int] = {}
        for app_id, node_id, resource in allocations:
            _add(self.used_on[node_id], resource)
            path = app_queue[app_id]
            parts = path.split(".")
            for i in range(1, len(parts) + 1):
                _add(self.used_in[".".join(parts[:i])], resource)
            if path == "root.u" and app_user[app_id] == "alice":
                _add(self.alice_in_u, resource)
        self.maxes = dict(MAXES)
        root: dict[str, int] = {}
        for total, _ in nodes.values():
            _add(root, total)
        self.maxes["root"] = root

    def expect(self, queue: str, user: str, ask: dict[str, int]) -> tuple[str, str]:
        """(code family, queue named)."""
        if queue == "root.u" and user == "alice":
            room = {k: ALICE_IN_U[k] - self.alice_in_u.get(k, 0) for k in ALICE_IN_U}
            if not _fits({k: v for k, v in ask.items() if k in room}, room):
                return "USER_LIMIT", "root.u"
        parts = queue.split(".")
        for i in range(len(parts), 0, -1):
            path = ".".join(parts[:i])
            maximum = self.maxes.get(path)
            if maximum is None:
                continue
            room = {k: maximum[k] - self.used_in[path].get(k, 0) for k in maximum}
            if not _fits({k: v for k, v in ask.items() if k in room}, room):
                return ("QUEUE_MAX" if path == queue else "PARENT_MAX"), path
        for node_id, (total, schedulable) in self.nodes.items():
            free = {k: total.get(k, 0) - self.used_on[node_id].get(k, 0) for k in total}
            if schedulable and _fits(ask, free):
                return "PLACEABLE", ""
        return "NO_NODE_FITS", ""


class Built:
    """A random cluster built through the RM interface, with the test's own bookkeeping."""

    def __init__(self, seed: int) -> None:
        rng = random.Random(seed)
        self.w = w = World(config(QUEUES))
        self.nodes: dict[str, tuple[dict[str, int], bool]] = {}
        for i in range(rng.randint(2, 6)):
            total = {"memory": rng.choice([100, 200, 400]), "vcore": rng.choice([10_000, 20_000, 50_000])}
            schedulable = rng.random() > 0.15
            action = si.NodeAction.CREATE if schedulable else si.NodeAction.CREATE_DRAIN
            w.node(f"node-{i}", action, res(**total))
            self.nodes[f"node-{i}"] = (total, schedulable)
        self.app_queue: dict[str, str] = {}
        self.app_user: dict[str, str] = {}
        self.asks: dict[str, tuple[str, dict[str, int]]] = {}
        for a in range(rng.randint(2, 7)):
            app_id, queue, user = f"app-{a}", rng.choice(LEAVES), rng.choice(["alice", "bob"])
            w.add_app(app_id, queue, user=user)
            self.app_queue[app_id], self.app_user[app_id] = queue, user
            for k in range(rng.randint(1, 4)):
                ask = {"memory": rng.choice([10, 30, 60, 100, 250]), "vcore": rng.choice([1000, 5000, 10_000, 30_000])}
                key = f"{app_id}-{k}"
                w.ask(key, app_id, res(**ask))
                self.asks[key] = (app_id, ask)
            w.advance(0.01)
            cycle = SchedulingCycle(w.context)
            for _ in range(rng.randint(0, 4)):
                cycle.run()

    def placements_after(self, cycles: int) -> dict[str, str]:
        cycle = SchedulingCycle(self.w.context)
        for _ in range(cycles):
            cycle.run()
        return {key: a.node_id for key, a in self.w.rm.allocations.items()}


@pytest.mark.parametrize("seed", range(25))
def test_every_pending_asks_why_agrees_with_an_independent_check(seed: int) -> None:
    built, twin = Built(seed), Built(seed)
    w = built.w
    try:
        partition = w.partition()
        assert not partition.reservations.by_key  # no time passes for a reservation: not checked here
        allocations = [(a.application_id, a.node_id, dict(a.resource_per_alloc)) for a in w.rm.allocations.values()]
        checker = Checker(built.nodes, built.app_queue, built.app_user, allocations)
        before, mark = fullstatedump(w.context), w.mark()
        checked = 0
        for app_id in sorted(built.app_queue):
            for answer in why(w.context, "default", app_id)["asks"]:
                key = answer["allocationKey"]
                family, queue = checker.expect(built.app_queue[app_id], built.app_user[app_id], built.asks[key][1])
                context = (seed, key, answer["code"], answer["message"], family, queue)
                if family == "PLACEABLE":
                    assert answer["code"] in ("NONE", "FAIR_SHARE_ORDER"), context
                    assert answer["nodes"]["fit"] >= 1, context
                else:
                    assert answer["code"] == family, context
                    if queue:
                        assert answer["details"]["queue"] == queue, context
                    if family == "NO_NODE_FITS":
                        assert answer["nodes"]["fit"] == 0, context
                checked += 1
        assert checked == sum(len(w.app(a).asks) for a in built.app_queue)
        # Asking changed nothing: the same state, no event, and the next cycles decide as in a
        # twin cluster nobody asked about.
        assert fullstatedump(w.context) == before and w.mark() == mark
        assert built.placements_after(10) == twin.placements_after(10)
        check_invariants(w.context)
    finally:
        built.w.close()
        twin.w.close()
