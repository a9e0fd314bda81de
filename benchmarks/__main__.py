"""``python -m benchmarks [FAMILY] [--quick] [--json FILE]``: run the benchmarks.

Benchmark families are registered in :data:`FAMILIES` (name -> family); ``all`` (the
default) runs every family in registration order. Tables go to stdout, progress to stderr,
and ``--json FILE`` writes the machine facts and every family's results. The exit status
is 1 when a family failed to measure something (never because a figure is slow).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from benchmarks import (
    answers,
    events_memory,
    events_throughput,
    gang,
    hostile_clients,
    interpod,
    kube_contenders,
    kubernetes,
    multicluster,
    preemption,
    reporter,
    rest,
    rest_polling,
    role_history,
    scale,
    scheduling,
    topology,
    yunikorn_go,
)
from benchmarks.baseline import baseline_environment
from benchmarks.machine import Progress, machine_facts
from benchmarks.workload import DEFAULT_SEED, parse_mix


class FamilyReport(Protocol):
    """What a benchmark family returns."""

    failures: list[str]

    def format(self) -> str: ...

    def to_dict(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Family:
    """A registered benchmark family: a subcommand of ``python -m benchmarks``."""

    name: str
    help: str
    run: Callable[[argparse.Namespace, Progress], FamilyReport]


def _run_events_memory(args: argparse.Namespace, progress: Progress) -> FamilyReport:
    sizes = args.sizes or (events_memory.QUICK_SIZES if args.quick else events_memory.DEFAULT_SIZES)
    return events_memory.run(sizes=sizes, python_max=args.python_max, seed=args.seed, mix=args.mix, progress=progress)


def _run_events_throughput(args: argparse.Namespace, progress: Progress) -> FamilyReport:
    quick = args.quick
    events = args.events or (events_throughput.QUICK_EVENTS if quick else events_throughput.DEFAULT_EVENTS)
    return events_throughput.run(
        events=events,
        ring_capacity=events_throughput.RING_CAPACITY,  # clamped to the event count by run()
        repeats=3,
        batch_repeats=5 if quick else 20,
        seed=args.seed,
        mix=args.mix,
        progress=progress,
    )


def _run_scheduling(args: argparse.Namespace, progress: Progress) -> FamilyReport:
    quick = args.quick
    return scheduling.run(
        nodes=args.nodes or (scheduling.QUICK_NODES if quick else scheduling.DEFAULT_NODES),
        asks=args.asks or (scheduling.QUICK_ASKS if quick else scheduling.DEFAULT_ASKS),
        repeats=args.repeats or (scheduling.QUICK_REPEATS if quick else scheduling.DEFAULT_REPEATS),
        shapes=args.shapes or scheduling.SHAPES,
        many_nodes=scheduling.QUICK_MANY_NODES if quick else scheduling.MANY_NODES,
        many_asks=scheduling.QUICK_MANY_ASKS if quick else scheduling.MANY_ASKS,
        baseline=args.baseline,
        progress=progress,
    )


def _run_scale(args: argparse.Namespace, progress: Progress) -> FamilyReport:
    return scale.run(quick=args.quick, repeats=args.repeats, baseline=args.baseline, progress=progress)


def _run_yunikorn_go(args: argparse.Namespace, progress: Progress) -> FamilyReport:
    return yunikorn_go.run(quick=args.quick, repeats=args.repeats, progress=progress)


def _run_rest(args: argparse.Namespace, progress: Progress) -> FamilyReport:
    return rest.run(quick=args.quick, streams=args.streams, progress=progress)


def _run_hostile_clients(args: argparse.Namespace, progress: Progress) -> FamilyReport:
    return hostile_clients.run(quick=args.quick, sockets=args.sockets, progress=progress)


def _run_role_history(args: argparse.Namespace, progress: Progress) -> FamilyReport:
    return role_history.run(quick=args.quick, progress=progress)


def _run_reporter(args: argparse.Namespace, progress: Progress) -> FamilyReport:
    return reporter.run(quick=args.quick, progress=progress)


def _run_preemption(args: argparse.Namespace, progress: Progress) -> FamilyReport:
    return preemption.run(quick=args.quick, progress=progress)


def _run_gang(args: argparse.Namespace, progress: Progress) -> FamilyReport:
    return gang.run(quick=args.quick, progress=progress)


def _run_topology(args: argparse.Namespace, progress: Progress) -> FamilyReport:
    return topology.run(quick=args.quick, progress=progress)


def _run_answers(args: argparse.Namespace, progress: Progress) -> FamilyReport:
    return answers.run(quick=args.quick, progress=progress)


def _run_rest_polling(args: argparse.Namespace, progress: Progress) -> FamilyReport:
    return rest_polling.run(quick=args.quick, pollers=args.pollers or rest_polling.POLLERS, progress=progress)


def _run_interpod(args: argparse.Namespace, progress: Progress) -> FamilyReport:
    return interpod.run(quick=args.quick, progress=progress)


def _run_kubernetes(args: argparse.Namespace, progress: Progress) -> FamilyReport:
    return kubernetes.run(quick=args.quick, progress=progress, nodes=args.kube_nodes, pods=args.kube_pods,
                          workloads=args.kube_workloads, baseline=args.baseline, contenders=args.kube_contenders,
                          **({"limit_binders": args.kube_limit_binders} if args.kube_limit_binders else {}))


def _run_multicluster(args: argparse.Namespace, progress: Progress) -> FamilyReport:
    return multicluster.run(quick=args.quick, progress=progress, nodes=args.multicluster_nodes,
                            pods=args.multicluster_pods)


FAMILIES: dict[str, Family] = {
    family.name: family
    for family in (
        Family("events-memory", "event store memory per event (benchmarks.md section 1)", _run_events_memory),
        Family("events-throughput", "event add and serialisation throughput (section 2)", _run_events_throughput),
        Family("scheduling", "allocations per second, YuniKorn's BenchmarkScheduling shape (section 3)", _run_scheduling),
        Family(
            "scale",
            "allocations per second and resident memory per node and application: 50,000 nodes, 1,000 leaf queues, "
            "10,000 applications, 100,000 asks",
            _run_scale,
        ),
        Family(
            "yunikorn-go",
            "YuniKorn's Go core (built from the module proxy) and this one side by side: many queues, and YuniKorn's "
            "shape at 5,000 nodes, fair and binpacking",
            _run_yunikorn_go,
        ),
        Family("rest", "REST batch time, stream replay, scheduling with open streams (section 2, served)", _run_rest),
        Family(
            "rest-polling",
            "scheduling throughput (many-queues shape) while REST clients poll nodes and applications (served)",
            _run_rest_polling,
        ),
        Family(
            "hostile-clients",
            "health checks and scheduling while misbehaving clients hold 1,000 sockets, 10 rounds per kind (served)",
            _run_hostile_clients,
        ),
        Family(
            "role-history",
            "role history: node selection cost, save of 100,000 entries, scheduling with it on vs off",
            _run_role_history,
        ),
        Family(
            "reporter",
            "node reporter manager: a round for 5,000 nodes x 8 plugins, scheduling while it updates 5%% of nodes",
            _run_reporter,
        ),
        Family(
            "preemption",
            "preemption decision time at 5,000 nodes x 50,000 allocations, scheduling with it armed vs off",
            _run_preemption,
        ),
        Family(
            "gang",
            "scheduling throughput with every application a gang (placeholders, then replacements) vs none",
            _run_gang,
        ),
        Family(
            "topology",
            "gang placement at 5,000 nodes (100 racks of 50, 10 blocks): gangs requiring one rack vs the same without",
            _run_topology,
        ),
        Family(
            "answers",
            "why (median, p99) at 5,000 nodes x 100,000 pending asks, what-if of 10 asks, scheduling while 4 "
            "threads ask why vs none",
            _run_answers,
        ),
        Family(
            "interpod",
            "the Kubernetes shim's node check with inter-pod affinity, anti-affinity and spread at 5,000 nodes",
            _run_interpod,
        ),
        Family(
            "kubernetes",
            "pods bound per second on a real API server with 5,000 kwok nodes: the shim vs kube-scheduler and the limit",
            _run_kubernetes,
        ),
        Family(
            "multicluster",
            "pods placed per second through a hub over 3 member clusters of 500 kwok nodes vs one cluster of 1,500",
            _run_multicluster,
        ),
    )
}
"""Benchmark families by subcommand name; add REST, ... here."""


def parse_count(text: str) -> int:
    """Parse an event count such as ``9M``, ``20k`` or ``1000000``."""
    factors = {"k": 1_000, "m": 1_000_000}
    text = text.strip().lower().replace("_", "")
    try:
        if text and text[-1] in factors:
            return int(float(text[:-1]) * factors[text[-1]])
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a count: {text!r} (e.g. 9M, 20k, 1000000)") from None


def _sizes(text: str) -> list[int]:
    return [parse_count(part) for part in text.split(",") if part.strip()]


def _shapes(text: str) -> list[str]:
    shapes = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [shape for shape in shapes if shape not in scheduling.SHAPES]
    if unknown or not shapes:
        raise argparse.ArgumentTypeError(f"unknown shape(s) {unknown or text!r}: choose from {', '.join(scheduling.SHAPES)}")
    return shapes


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"not a positive integer: {text!r}")
    return value


def _accepted_by(check: Callable[[str], object]) -> Callable[[str], str]:
    """An argparse type: the option's text as given, once ``check`` accepts it; the ValueError
    it raises (BaselineError is one) becomes the option's error message."""

    def accepted(text: str) -> str:
        try:
            check(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return text

    return accepted


_mix = _accepted_by(parse_mix)
_baseline = _accepted_by(baseline_environment)


def _kube_workloads(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in kubernetes.WORKLOADS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown workloads {unknown or text!r}: choose from {', '.join(kubernetes.WORKLOADS)}")
    return names


def _kube_contenders(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in kube_contenders.CONTENDERS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown contenders {unknown or text!r}: choose from {', '.join(kube_contenders.CONTENDERS)}")
    return names


def _families(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in FAMILIES]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown families {unknown}: choose from {', '.join(FAMILIES)}")
    return names


def build_parser() -> argparse.ArgumentParser:
    """Return the command-line parser."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Run pyscheduler's benchmarks (shared/spec/benchmarks.md). Tables on stdout, progress on stderr.",
    )
    names = ", ".join(f"{f.name} ({f.help})" for f in FAMILIES.values())
    parser.add_argument("family", nargs="?", default="all", choices=[*FAMILIES, "all"], help=f"all (default), {names}")
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke test that finishes in seconds")
    parser.add_argument(
        "--skip",
        type=_families,
        default=[],
        metavar="FAMILIES",
        help="comma-separated families to leave out of 'all' (e.g. kubernetes: it builds kube-scheduler once, ~6 min)",
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write machine-readable results to FILE")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="workload seed")
    parser.add_argument("--mix", type=_mix, default="normal", help="'normal', 'gang' or a fraction of gang apps")
    memory = parser.add_argument_group("events-memory")
    memory.add_argument("--sizes", type=_sizes, help="event counts, e.g. 1M,3M,9M (default; --quick: 50k)")
    memory.add_argument(
        "--python-max",
        type=parse_count,
        default=events_memory.DEFAULT_PYTHON_MAX,
        help="largest N at which the pure-Python layouts are measured (default 3M; 9M takes several GB)",
    )
    throughput = parser.add_argument_group("events-throughput")
    throughput.add_argument("--events", type=parse_count, help="events per add measurement (default 1M; --quick: 20k)")
    sched = parser.add_argument_group("scheduling")
    sched.add_argument(
        "--nodes", type=_sizes, help="node counts, e.g. 500,5000 (default 500,1000,2000,5000; --quick: 50,200)"
    )
    sched.add_argument("--asks", type=parse_count, help="asks per case (default 10k; --quick: 1k)")
    sched.add_argument(
        "--repeats", type=_positive,
        help="fresh-subprocess runs per case, median reported (default 3; --quick: 1); also the scale family's runs"
    )
    sched.add_argument(
        "--shapes",
        type=_shapes,
        help=f"workload shapes, e.g. {scheduling.MANY_QUEUES_SHAPE} (default {','.join(scheduling.SHAPES)}: YuniKorn's "
        "BenchmarkScheduling, then 10x10 queues with 1,000 apps on 1,000 nodes; --nodes and --asks apply to the first)",
    )
    sched.add_argument(
        "--baseline",
        type=_baseline,
        metavar="DIR",
        help="scheduling (many-queues shape) and scale: also run these workloads on the core of another checkout "
        "(DIR/pyscheduler with its native module built, e.g. a git worktree of the previous commit), alternating, "
        "and report this core's rate over it; kubernetes: also serve DIR's core, DIR/web and DIR/k8s as the "
        "contender 'pyscheduler (baseline)'",
    )
    rest_group = parser.add_argument_group("rest")
    rest_group.add_argument(
        "--streams", type=_positive, help="live streams open during the served scheduling run (default 100; --quick: 10)"
    )
    rest_group.add_argument(
        "--pollers", type=_positive, help="rest-polling: clients polling nodes and active applications (default 4)"
    )
    rest_group.add_argument(
        "--sockets", type=_positive, help="hostile-clients: misbehaving connections per kind (default 1,000; --quick: 150)"
    )
    kube = parser.add_argument_group("kubernetes")
    kube.add_argument("--kube-nodes", type=_positive, help="kwok nodes (default 5,000; --quick: 50)")
    kube.add_argument("--kube-pods", type=_positive,
                      help="pods per contender and phase of the plain workload (default 10,000, scheduler_perf's "
                      "larger size 50,000; --quick: 500); the anti-affinity and spread workloads take half as many, "
                      "the preemption wave one a node (at most half), the gangs are 10 jobs of 100 (--quick: 5 of 20)")
    kube.add_argument("--kube-limit-binders", type=_positive,
                      help="the limit contender's concurrent binders (default benchmarks.kube_limit.BINDERS)")
    kube.add_argument(
        "--kube-workloads", type=_kube_workloads, metavar="WORKLOADS",
        help=f"comma-separated workloads (default all: {','.join(kubernetes.WORKLOADS)}; scheduler_perf's "
        "SchedulingBasic, SchedulingPodAntiAffinity, TopologySpreading and PreemptionBasic shapes, and YuniKorn "
        "task-group gangs)",
    )
    kube.add_argument(
        "--kube-contenders", type=_kube_contenders, metavar="CONTENDERS",
        help=f"comma-separated contenders, run in this order whatever the order given: {','.join(kube_contenders.CONTENDERS)} "
        "(default all available: baseline with --baseline only); e.g. pyscheduler,baseline for a quicker "
        "before/after comparison without kube-scheduler",
    )
    several = parser.add_argument_group("multicluster")
    several.add_argument("--multicluster-nodes", type=_positive,
                         help="kwok nodes per member cluster (default 500; --quick: 20); the single cluster has 3x")
    several.add_argument("--multicluster-pods", type=_positive,
                         help="pods per side and phase (default 5,000; --quick: 200)")
    return parser


def selected(name: str, skip: Sequence[str] = ()) -> list[Family]:
    """Return the families to run for the ``family`` argument, without those in ``skip``."""
    return [f for f in (FAMILIES.values() if name == "all" else [FAMILIES[name]]) if f.name not in skip]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the selected benchmark families; return the exit status."""
    args = build_parser().parse_args(argv)
    progress = Progress()
    facts = machine_facts()
    print("# pyscheduler benchmarks" + (" (--quick: smoke-test sizes, not figures to keep)" if args.quick else ""))
    print()
    print("\n".join(f"- {line}" for line in facts.header_lines()))
    print(f"- command: python -m benchmarks {' '.join(argv if argv is not None else sys.argv[1:])}".rstrip())
    results: dict[str, Any] = {}
    failed = False
    for family in selected(args.family, args.skip):
        progress(f"{family.name}: starting")
        try:
            report = family.run(args, progress)
        except Exception as exc:  # one broken family must not hide the others
            failed = True
            results[family.name] = {"error": f"{type(exc).__name__}: {exc}"}
            print(f"\n## {family.name}\n\nERROR: {type(exc).__name__}: {exc}")
            continue
        failed = failed or bool(report.failures)
        results[family.name] = report.to_dict()
        print()
        print(report.format(), flush=True)
    if args.json is not None:
        document = {
            "command": ["python", "-m", "benchmarks", *(argv if argv is not None else sys.argv[1:])],
            "quick": args.quick,
            "machine": facts.to_dict(),
            "results": results,
        }
        args.json.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        progress(f"results written to {args.json}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
