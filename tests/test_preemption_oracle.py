"""The fast guaranteed-share preemptor decides exactly as its slow twin
(pyscheduler/testing/preemption_reference.py, every node planned and sorted, every victim read) on random
clusters: nested queues with guarantees, maxes, priority offsets and fences; nodes full, nearly
full or with room; allocations of two resource types with random priorities, ages, opt-outs
and originators; asks of random sizes and priorities; an RM that accepts or refuses nodes and
picks indices, or no RM check at all; nodes reserved by others or unschedulable; for some
attempts, room already claimed on the ask's path by asks still waiting for their victims
(``claimed``, counted as usage). The fast
preemptor keeps one memo per cluster across its attempts (pyscheduler.scheduler.preemption.memo),
and between the asks the cluster changes as it would between two attempts: a plan's victims
become preempting, some allocations are released, a queue's guarantee may change, the claims
come and go."""

from __future__ import annotations

import random
import zlib

import pytest

from rm_helpers import World, res
from scheduling_helpers import config

from pyscheduler.common import native
from pyscheduler.objects.node import Node
from pyscheduler.objects.queue import Queue
from pyscheduler.scheduler.preemption.guaranteed import GuaranteedPreemptor
from pyscheduler.scheduler.preemption.memo import PreemptionMemo
from pyscheduler.scheduler.preemption.preemptor import PreemptionOutcome, PreemptionPlan, PreemptionReason
from pyscheduler.scheduler.preemption.ordering import sort_for_node
from pyscheduler.si import messages as si

from pyscheduler.testing.preemption_reference import ReferencePreemptor, scan_victims


def _queues(rng: random.Random) -> tuple[str, list[str]]:
    text = ""
    leaves = []
    for p in range(3):
        policy = rng.choice(["", "preemption.policy: fence, ", "priority.policy: fence, priority.offset: 5, ",
                             "priority.offset: -3, "])
        maximum = f"max: {{vcore: {rng.choice([40, 60, 1000])}}}, " if rng.random() < 0.3 else ""
        guaranteed = f"guaranteed: {{vcore: {rng.choice([32, 40])}}}" if rng.random() < 0.5 else ""
        text += f"""\
          - name: p{p}
            properties: {{{policy.rstrip(', ')}}}
            resources: {{{(maximum + guaranteed).rstrip(', ')}}}
            queues:
"""
        for leaf in range(3):
            leaf_policy = rng.choice(["", "", "preemption.policy: disabled, ", "priority.offset: 2, "])
            g_vcore = rng.choice([0, 1, 2, 8])
            g_memory = rng.choice([0, 0, 50])
            guaranteed_parts = ", ".join(f"{k}: {v}" for k, v in (("vcore", g_vcore), ("memory", g_memory)) if v)
            text += f"""\
              - name: l{leaf}
                properties: {{{(leaf_policy + "preemption.delay: 1ms").strip(', ')}}}
                resources: {{{("guaranteed: {" + guaranteed_parts + "}") if guaranteed_parts else ""}}}
"""
            leaves.append(f"root.p{p}.l{leaf}")
        text += f"""\
              - name: starved
                properties: {{preemption.delay: 1ms{rng.choice(["", ", priority.offset: 4"])}}}
                resources: {{guaranteed: {{vcore: 6{rng.choice(["", ", memory: 50"])}}}}}
"""
    return config(text), leaves


def _rm_check(seed: int):  # type: ignore[no-untyped-def]
    def check(args: si.PreemptionPredicatesArgs) -> si.PreemptionPredicatesResponse:
        verdict = zlib.crc32(f"{seed}/{args.node_id}".encode()) % 4
        if verdict == 0:
            return si.PreemptionPredicatesResponse(success=False)
        last = len(args.preempt_allocation_keys) - 1
        index = args.start_index if verdict < 3 else min(last, args.start_index + 1)
        return si.PreemptionPredicatesResponse(success=True, index=index)
    return check


def _outcome(result: PreemptionOutcome) -> tuple[PreemptionReason, object]:
    """(PLANNED, (node, victim keys)) or (the reason, its allocation log message)."""
    if result.plan is None:
        return result.reason, result.message
    return result.reason, (result.plan.node_id, [v.allocation_key for v in result.plan.victims])


ASKS = 6


def _change_between_attempts(rng: random.Random, w: World, plan: PreemptionPlan | None, queues: str,
                             key_app: dict[str, str], asker: str) -> int:
    """What happens between two attempts: the last plan's victims become preempting (as the
    cycle applies a plan) and one of them is confirmed gone; a few other allocations end and the
    last asker's application gets the room of one of them (its queue's usage grows); now and
    then the configuration is reloaded with one starved queue's guarantee changed. Returns the
    changes made."""
    part = w.partition()
    changes = 0
    if plan is not None:
        with part.lock:
            for victim in plan.victims:
                app = part.applications[victim.application_id]
                assert app.queue is not None
                app.queue.inc_preempting(victim.resource)
                victim.preempted = True
                changes += 1
        confirmed = plan.victims[0]
        w.release(confirmed.application_id, confirmed.allocation_key)
        changes += 1
    for key in rng.sample(sorted(key_app), k=3):
        app = part.applications[key_app[key]]
        alloc = app.allocations.get(key)
        if alloc is not None and not alloc.preempted:
            w.release(app.app_id, key)
            w.allocs(w.alloc_msg(f"{key}-{asker}", asker, alloc.resource, node_id=alloc.node_id))
            key_app[f"{key}-{asker}"] = asker
            changes += 2
    if rng.random() < 0.4:
        text = queues.split("guaranteed: {vcore: 6")
        which = rng.randrange(1, len(text))
        w.reload("guaranteed: {vcore: 6".join(text[:which]) + f"guaranteed: {{vcore: {rng.choice([1, 3, 12])}"
                 + "guaranteed: {vcore: 6".join(text[which:]))
        changes += 1
    return changes


def _claims(rng: random.Random, leaf: Queue) -> dict[str, dict[str, int]] | None:
    """For a third of the attempts, room claimed on the ask's path as the cycle would work it out
    (pyscheduler.scheduler.preemption.guaranteed.claimed_by_preemptors): asks of random sizes
    below random queues of the path, each counted on every queue of the path above it (its own
    RNG: the cluster's stays the same)."""
    if rng.random() > 0.35:
        return None
    path = []
    walk: Queue | None = leaf
    while walk is not None:
        path.append(walk.path)
        walk = walk.parent
    claimed: dict[str, dict[str, int]] = {}
    for _ in range(rng.randrange(1, 4)):
        amounts = {"vcore": rng.choice([500, 1000, 3000]), "memory": rng.choice([0, 10])}
        below = rng.randrange(len(path))  # the holder's deepest queue on the ask's path
        for queue_path in path[below:]:
            held = claimed.setdefault(queue_path, {})
            for name, amount in amounts.items():
                held[name] = held.get(name, 0) + amount
    return claimed


@pytest.mark.parametrize("native_plan", [True, False], ids=["native-plan", "python-plan"])
def test_fast_and_reference_preemptors_decide_alike(native_plan: bool) -> None:
    """Both twins of the node plan (node_plan: rust/schedmath/src/plan.rs, and its pure-Python
    twin, chosen by the one native switch) against the reference."""
    with native.forced(native_plan):
        _decide_alike(native_plan)


def _decide_alike(native_plan: bool) -> None:
    compared = plans = victims_seen = changes = claims = 0
    KINDS: dict[str, int] = {}
    for seed in range(40):
        rng = random.Random(seed)
        queues, leaves = _queues(rng)
        w = World(queues)
        try:
            for n in range(rng.choice([6, 15, 30])):
                w.add_node(f"node-{n:02d}", memory=rng.choice([200, 400]), vcore=rng.choice([4000, 8000]))
            part = w.partition()
            apps = []
            for i, leaf in enumerate(leaves):
                for a in range(2):
                    app_id = f"app-{i}-{a}"
                    w.add_app(app_id, leaf)
                    apps.append(app_id)
            key = 0
            key_app: dict[str, str] = {}
            for node_id in sorted(part.nodes):
                node = part.nodes[node_id]
                while rng.random() > 0.05:
                    size = res(vcore=rng.choice([500, 1000, 2000]), memory=rng.choice([0, 10, 40]))
                    if not size.fits_in(node.available):
                        break
                    key += 1
                    app_id = rng.choice(apps)
                    key_app[f"a{key:04d}"] = app_id
                    w.allocs(w.alloc_msg(
                        f"a{key:04d}", app_id, size, node_id=node_id, priority=rng.choice([0, 0, 1, 5, 10]),
                        originator=rng.random() < 0.1,
                        preemption_policy=si.PreemptionPolicy(allow_preempt_self=rng.random() < 0.8),
                        allocation_tags={"creationTime": str(1_600_000_000 + rng.randrange(50))}))
            nodes = sorted(part.nodes)
            unusable = set(rng.sample(nodes, k=len(nodes) // 5))
            memo = PreemptionMemo()
            last_plan: PreemptionPlan | None = None
            for ask_number in range(ASKS):
                if ask_number:
                    changes += _change_between_attempts(rng, w, last_plan, queues, key_app, f"asker-{ask_number - 1}")
                last_plan = None
                leaf = rng.choice(leaves) if rng.random() < 0.2 else f"root.p{rng.randrange(3)}.starved"
                queue = w.queue(leaf)
                app_id = f"asker-{ask_number}"
                w.add_app(app_id, leaf)
                w.ask(f"ask-{ask_number}", app_id, res(vcore=rng.choice([500, 1000, 3000, 5000]),
                                                      memory=rng.choice([0, 20])),
                      priority=rng.choice([0, 3, 10]),
                      preemption_policy=si.PreemptionPolicy(allow_preempt_self=True, allow_preempt_other=True))
                ask = part.applications[app_id].asks[f"ask-{ask_number}"]
                claimed = _claims(random.Random(seed * 1000 + ask_number), queue)
                claims += bool(claimed)
                for nodes_tried in (False, True):
                    for rm in (None, _rm_check(seed * 10 + ask_number)):
                        def reserved_by_others(node: Node) -> bool:
                            return node.node_id in unusable

                        # The lazy victims equal a walk reading every allocation, in order and per node.
                        fast = GuaranteedPreemptor(queue, ask, part.applications, part.nodes, part.sorted_node_ids(),
                                                   nodes_tried=nodes_tried, predicates=None, preemption_predicates=None,
                                                   reserved_by_others=reserved_by_others, memo=memo,
                                                   claimed=claimed)
                        scanned = scan_victims(queue, ask, fast.victims)
                        assert [(e.queue.path, a.allocation_key) for e, a in fast.victims.every()] == scanned
                        for node_id in nodes:
                            on_node = [(e.queue.path, a.allocation_key) for e, a in fast.victims.on_node(part.nodes[node_id])]
                            assert on_node == [(path, key) for path, key in scanned
                                               if part.applications[key_app[key]].allocations[key].node_id == node_id]
                            # A plan's order: the guaranteed-share sort, stable over the order of every().
                            planned = [a.allocation_key for _, a in fast.victims.on_node_for_plan(part.nodes[node_id])]
                            assert planned == [a.allocation_key for a in sort_for_node(
                                [a for _, a in fast.victims.on_node(part.nodes[node_id])])]
                        victims_seen += len(scanned)
                        outcomes = []
                        for kind in (GuaranteedPreemptor, ReferencePreemptor):
                            preemptor = kind(queue, ask, part.applications, part.nodes, part.sorted_node_ids(), nodes_tried=nodes_tried,
                                             predicates=None, preemption_predicates=rm,
                                             reserved_by_others=reserved_by_others,
                                             fitting=part.fitting_node_ids if kind is GuaranteedPreemptor else None,
                                             memo=memo if kind is GuaranteedPreemptor else None,
                                             claimed=claimed)
                            result = preemptor.try_preemption()
                            outcomes.append(_outcome(result))
                            if result.plan is not None:
                                last_plan = result.plan
                        assert outcomes[0] == outcomes[1], (seed, ask_number, nodes_tried, rm is not None)
                        compared += 1
                        plans += outcomes[0][0] is PreemptionReason.PLANNED
                        kind_seen = outcomes[0][0].name
                        KINDS[kind_seen] = KINDS.get(kind_seen, 0) + 1
            # The plans ran on the twin asked for.
            for leaf_path in {*leaves, *(f"root.p{p}.starved" for p in range(3))}:
                for kept in memo.for_ask_leaf(w.queue(leaf_path)).typed.values():
                    assert (kept.native is not None) is native_plan
        finally:
            w.close()
    assert compared == 40 * ASKS * 4
    assert changes > 300, changes
    assert claims > 40, claims
    # The random clusters lead to plans and to every kind of failure.
    assert plans > 150 and len(KINDS) == 4, (plans, KINDS)
    assert victims_seen > 10_000, victims_seen
