"""The fast guaranteed-share preemptor decides exactly as its slow twin
(tests/preemption_reference.py, every node planned and sorted, every victim read) on random
clusters: nested queues with guarantees, maxes, priority offsets and fences; nodes full, nearly
full or with room; allocations of two resource types with random priorities, ages, opt-outs
and originators; asks of random sizes and priorities; an RM that accepts or refuses nodes and
picks indices, or no RM check at all; nodes reserved by others or unschedulable."""

from __future__ import annotations

import random
import zlib

from rm_helpers import World, res
from scheduling_helpers import config

from pyscheduler.objects.node import Node
from pyscheduler.scheduler.preemption.guaranteed import GuaranteedPreemptor, PreemptionPlan
from pyscheduler.si import messages as si

from preemption_reference import ReferencePreemptor, scan_victims


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


def _outcome(result: PreemptionPlan | str) -> object:
    if isinstance(result, str):
        return result
    return result.node_id, [v.allocation_key for v in result.victims]


def test_fast_and_reference_preemptors_decide_alike() -> None:
    compared = plans = victims_seen = 0
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
            for ask_number in range(4):
                leaf = rng.choice(leaves) if rng.random() < 0.2 else f"root.p{rng.randrange(3)}.starved"
                queue = w.queue(leaf)
                app_id = f"asker-{ask_number}"
                w.add_app(app_id, leaf)
                w.ask(f"ask-{ask_number}", app_id, res(vcore=rng.choice([500, 1000, 3000, 5000]),
                                                      memory=rng.choice([0, 20])),
                      priority=rng.choice([0, 3, 10]),
                      preemption_policy=si.PreemptionPolicy(allow_preempt_self=True, allow_preempt_other=True))
                ask = part.applications[app_id].asks[f"ask-{ask_number}"]
                for nodes_tried in (False, True):
                    for rm in (None, _rm_check(seed * 10 + ask_number)):
                        def reserved_by_others(node: Node) -> bool:
                            return node.node_id in unusable

                        # The lazy victims equal a walk reading every allocation, in order and per node.
                        fast = GuaranteedPreemptor(queue, ask, part.applications, part.nodes, part.sorted_node_ids(),
                                                   nodes_tried=nodes_tried, predicates=None, preemption_predicates=None,
                                                   reserved_by_others=reserved_by_others)
                        scanned = scan_victims(queue, ask, fast.victims)
                        assert [(e.queue.path, a.allocation_key) for e, a in fast.victims.every()] == scanned
                        for node_id in nodes:
                            on_node = [(e.queue.path, a.allocation_key) for e, a in fast.victims.on_node(part.nodes[node_id])]
                            assert on_node == [(path, key) for path, key in scanned
                                               if part.applications[key_app[key]].allocations[key].node_id == node_id]
                        victims_seen += len(scanned)
                        outcomes = []
                        for kind in (GuaranteedPreemptor, ReferencePreemptor):
                            preemptor = kind(queue, ask, part.applications, part.nodes, part.sorted_node_ids(), nodes_tried=nodes_tried,
                                             predicates=None, preemption_predicates=rm,
                                             reserved_by_others=reserved_by_others,
                                             fitting=part.fitting_node_ids if kind is GuaranteedPreemptor else None)
                            outcomes.append(_outcome(preemptor.try_preemption()))
                        assert outcomes[0] == outcomes[1], (seed, ask_number, nodes_tried, rm is not None)
                        compared += 1
                        plans += not isinstance(outcomes[0], str)
                        kind_seen = outcomes[0] if isinstance(outcomes[0], str) else "plan"
                        KINDS[kind_seen] = KINDS.get(kind_seen, 0) + 1
        finally:
            w.close()
    assert compared == 40 * 4 * 4
    # The random clusters lead to plans and to every kind of failure.
    assert plans > 150 and len(KINDS) == 4, (plans, KINDS)
    assert victims_seen > 10_000, victims_seen
