"""Instructions per allocation, counted by valgrind: ``python -m benchmarks.instructions``.

This machine's wall clock moves by up to 40 % between minutes, which hides a step of a few per
cent; an instruction count does not move (repeat runs of one commit agree within about 1 %).
The count is taken with ``valgrind --tool=cachegrind --cache-sim=no`` twice: a worker that
builds the shape (``benchmarks.scheduling.build``) and makes N allocations in lockstep, and the
same worker making none; the difference divided by N is what one allocation costs, setup and
interpreter start excluded. ``--baseline DIR`` counts another checkout's core the same way
(``benchmarks.baseline``) and prints the ratio. Hash randomisation is off in the workers so
both runs build the same dicts. Needs valgrind (Debian package ``valgrind``); slow: a minute or
two per core at the default sizes.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence

from benchmarks.baseline import BaselineError, baseline_environment
from benchmarks.scheduling import POLICIES, WORKER_SHAPES, allocate_in_lockstep, build

_REFS = re.compile(r"I\s+refs:\s+([0-9,]+)")


def count_allocations(shape: str, policy: str, nodes: int, asks: int, allocations: int) -> int:
    """In this process: build the shape, then make ``allocations`` allocations in lockstep."""
    setup = build(policy, nodes, asks, True, shape)
    gc.collect()
    try:
        made = allocate_in_lockstep(setup, allocations)
        setup.context.event_system.flush(30.0)
    finally:
        setup.proxy.stop()
    return made


def instructions(shape: str, policy: str, nodes: int, asks: int, allocations: int,
                 env: Mapping[str, str] | None = None) -> int:
    """Instructions valgrind counts for a worker making ``allocations`` allocations."""
    environment = dict(env if env is not None else os.environ)
    environment["PYTHONHASHSEED"] = "0"
    command = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
               sys.executable, "-m", "benchmarks.instructions", "--worker", "--shape", shape, "--policy", policy,
               "--nodes", str(nodes), "--asks", str(asks), "--allocations", str(allocations)]
    done = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=3600, check=False)
    found = _REFS.search(done.stderr)
    if done.returncode != 0 or found is None:
        tail = " | ".join(done.stderr.strip().splitlines()[-3:])
        raise RuntimeError(f"valgrind worker exited with {done.returncode}: {tail or 'no output'}")
    return int(found.group(1).replace(",", ""))


def per_allocation(shape: str, policy: str, nodes: int, asks: int, env: Mapping[str, str] | None = None) -> float:
    """Instructions of one allocation: (a run of ``asks`` allocations - the same with none) / asks."""
    return (instructions(shape, policy, nodes, asks, asks, env) - instructions(shape, policy, nodes, asks, 0, env)) / asks


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.instructions", description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", choices=WORKER_SHAPES, default="many-queues")
    parser.add_argument("--policy", choices=POLICIES, default="fair")
    parser.add_argument("--nodes", type=int, default=1_000)
    parser.add_argument("--asks", type=int, default=4_000, help="asks, all allocated in the counted run")
    parser.add_argument("--baseline", metavar="DIR", help="also count another checkout's core (benchmarks.baseline)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--allocations", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.nodes < 1 or args.asks < 1:
        parser.error("--nodes and --asks must be positive")
    if args.worker:
        made = count_allocations(args.shape, args.policy, args.nodes, args.asks, args.allocations)
        return 0 if made == args.allocations else 1
    try:
        env = baseline_environment(args.baseline) if args.baseline else None
    except BaselineError as exc:
        parser.error(str(exc))
    if shutil.which("valgrind") is None:
        parser.error("valgrind is not installed (Debian: apt-get install valgrind)")
    what = f"{args.shape}, {args.policy}, {args.nodes:,} nodes, {args.asks:,} asks"
    now = per_allocation(args.shape, args.policy, args.nodes, args.asks)
    print(f"{what}: {now:,.0f} instructions per allocation (this core)")
    if env is not None:
        then = per_allocation(args.shape, args.policy, args.nodes, args.asks, env)
        print(f"{what}: {then:,.0f} instructions per allocation (baseline {args.baseline}); "
              f"this core / baseline: {now / then:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
