"""The ``pyscheduler`` command.

Subcommands:

- ``pyscheduler bench``: says where the benchmarks are (they are not installed with the package:
  ``make bench`` in a source checkout runs ``python -m benchmarks``); exit 2.
- ``pyscheduler serve [--config FILE] [--bind ADDR] [--demo] [--rm MODULE:CALLABLE] [--cluster NAME=KUBECONFIG]``: the REST
  service (YuniKorn's ``/ws/v1`` API) under gunicorn with one scheduler in its worker; needs
  the ``pyscheduler-web`` package (``pip install 'pyscheduler[web]'``), exit 1 without it.
  ``--cluster`` (repeatable, with ``--rm pyscheduler_k8s:attach``) names the Kubernetes clusters
  to schedule, each its own RM (``PYSCHEDULER_K8S_CLUSTERS``; a bad name, a name given twice or
  a missing kubeconfig exits 2). ``--clusters-file FILE`` (with the same ``--rm``) makes the
  shim a hub over member clusters (``PYSCHEDULER_K8S_CLUSTERS_FILE``, docs/multicluster.md; a
  file that does not parse exits 2, naming what is wrong).
  An unreadable configuration or an ``--rm`` module that does not exist exits 2, an invalid
  configuration 1; otherwise it serves until SIGINT/SIGTERM (exit 0).
- ``pyscheduler reporter-agent --node NAME [options]``: the node reporter manager as a per-node
  agent on Kubernetes: polls its plugins (in-process by import path, Katalyst's gRPC plugins from
  its plugin directory) and writes their merge into the node's ``CustomNodeResource``; needs the
  ``pyscheduler-k8s`` package (``pip install 'pyscheduler[k8s]'``), exit 1 without it. Settings
  it cannot start with exit 2; otherwise it runs until SIGTERM/SIGINT (exit 0); ``--once``: one
  round, exit 0, or 1 when the write failed.
- ``pyscheduler simulate [WORKLOAD_FILE] [--preset NAME] [options]``: play a workload against
  the core with a simulated RM; progress bar on standard error, summary on standard output
  (exit 0). A workload file that cannot be read exits 2, an invalid one 1 (the error names the
  key), a run that did not finish 3. ``--preset preemption`` is a late tenant with a guarantee
  on a full cluster, run with preemption on and off; ``--preset topology`` (a workload with a
  ``topology`` section) plays its gangs with topology placement and without, side by side. The
  file format is in ``docs/simulator.md``.
- ``pyscheduler validate-conf FILE``: check a ``queues.yaml`` (``-`` reads standard input);
  prints ``valid`` and the checksum (exit 0), or every error on standard error (exit 1);
  a file that cannot be read exits 2.
- ``pyscheduler version``: print the package and native-module versions.
- ``pyscheduler healthcheck [--url URL] [--timeout SECONDS]``: ask a served scheduler's
  ``/ws/v1/scheduler/healthcheck`` (the container image's health command,
  :mod:`pyscheduler.healthprobe`): exit 0 healthy, 1 not.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyscheduler.sim.workload import WorkloadSpec

__all__ = ["main"]


def _version(_: list[str]) -> int:
    import pyscheduler
    from pyscheduler import _native

    print(f"pyscheduler {pyscheduler.__version__} (native {_native.__version__})")
    return 0


def _bench(rest: list[str]) -> int:
    """The benchmarks are not part of the installed package: they live in the source
    checkout's ``benchmarks/`` (``make bench``, or ``python -m benchmarks`` there)."""
    print(
        "pyscheduler bench: the benchmarks are not installed with the package; in a source "
        "checkout run `make bench` (or `python -m benchmarks " + " ".join(rest or ["--help"]) + "`)",
        file=sys.stderr,
    )
    return 2


def _simulate(rest: list[str]) -> int:
    """``simulate [WORKLOAD_FILE]``: run a workload with the simulated RM and summarise it."""
    from pyscheduler.sim.rm import DEFAULT_SPEED, DEFAULT_TIMEOUT
    from pyscheduler.sim.workload import PRESETS

    parser = argparse.ArgumentParser(
        prog="pyscheduler simulate",
        description="Play a seeded workload against the scheduler core with a simulated RM (nodes, "
        "applications, asks, releases after each allocation's run time) and print a summary: allocations, "
        "throughput, latency percentiles and utilisation per node sort policy. A workload with services (roles "
        "stopped and started again) runs each policy with role history and without, and reports how many "
        "instances came back to a node their role used before. A workload with a late tenant (a queue with a "
        "guarantee arriving on a busy cluster, e.g. --preset preemption) runs each policy with preemption on and "
        "off, and reports how long the tenant took to reach its guarantee, the allocations preempted and the work "
        "they lost. Progress goes to standard "
        "error, the summary to standard output. The workload file format is in docs/simulator.md.",
    )
    parser.add_argument(
        "workload", nargs="?", metavar="WORKLOAD_FILE",
        help="a YAML or JSON workload file (default: the built-in workload, or the preset); with --preset, the "
        "file's keys replace the preset's",
    )
    parser.add_argument(
        "--preset", choices=sorted(PRESETS),
        help="start from a named workload instead of the built-in one; 'preemption': tenant A fills the cluster "
        "with long tasks, tenant B with a guarantee arrives at 60 s; 'topology': gangs requiring a rack or a block on "
        "a 3-level cluster, with topology placement and without",
    )
    parser.add_argument("--seed", type=int, help="override the workload's seed")
    parser.add_argument(
        "--policy", choices=["fair", "binpacking", "both"], default="both",
        help="node sort policy; 'both' runs the same workload with each (default)",
    )
    parser.add_argument(
        "--mode", choices=["lockstep", "threaded"], default="lockstep",
        help="lockstep: one scheduling cycle at a time on a simulated clock, exactly repeatable (default); "
        "threaded: the real scheduling thread on a clock running --speed times faster than real time",
    )
    parser.add_argument(
        "--speed", type=float, default=DEFAULT_SPEED,
        help="threaded mode: simulated seconds per real second (default %(default)g)",
    )
    parser.add_argument(
        "--python-ordering", action="store_true",
        help="use the pure-Python node ordering instead of the Rust node index",
    )
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT,
        help="real seconds after which a run is abandoned (default %(default)g)",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the workload and the summaries to FILE as JSON")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(rest)
    if args.speed <= 0:
        parser.error(f"--speed must be positive, got {args.speed}")
    if args.timeout <= 0:
        parser.error(f"--timeout must be positive, got {args.timeout}")

    import dataclasses
    import json

    from pyscheduler.sim import ProgressBar, WorkloadError, WorkloadSpec, format_summaries, plan_runs, run_simulation
    from pyscheduler.sim.runner import describe_workload, run_label

    base = PRESETS[args.preset] if args.preset else WorkloadSpec()
    try:
        spec = WorkloadSpec.from_file(args.workload, base) if args.workload else base
        if args.seed is not None:
            spec = dataclasses.replace(spec, seed=args.seed)
    except OSError as exc:
        print(f"pyscheduler simulate: cannot read {args.workload}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except WorkloadError as exc:
        print(f"pyscheduler simulate: invalid workload: {exc}", file=sys.stderr)
        return 1
    if spec.topology.count:
        return _simulate_topology(spec, args.policy, args.timeout, args.json)
    plan = spec.generate()
    policies = ["fair", "binpacking"] if args.policy == "both" else [args.policy]
    print(describe_workload(spec, plan))
    print()
    summaries = []
    # With services, each policy runs with role history and without it (their return-to-node
    # fractions side by side); with a late tenant, with preemption on and off.
    for run in plan_runs(spec, policies):
        bar = None if args.no_progress else ProgressBar(f"{run_label(spec, run):<10}")
        try:
            summary = run_simulation(
                plan,
                policy=run.policy,
                mode=args.mode,
                native_node_ordering=False if args.python_ordering else None,
                speed=args.speed,
                timeout=args.timeout,
                progress=bar,
                role_history=run.role_history,
                preemption=run.preemption,
            )
        finally:
            if bar is not None:
                bar.close()
        summaries.append(summary)
    print(format_summaries(summaries), flush=True)
    if args.json:
        document = {
            "workload": spec.to_mapping(),
            "asks": plan.total_asks,
            "summaries": [s.to_dict() for s in summaries],
        }
        try:
            with open(args.json, "w", encoding="utf-8") as handle:
                json.dump(document, handle, indent=2)
                handle.write("\n")
        except OSError as exc:
            print(f"pyscheduler simulate: cannot write {args.json}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    return 0 if all(s.completed for s in summaries) else 3


def _simulate_topology(spec: WorkloadSpec, policy: str, timeout: float, json_path: str | None) -> int:
    """``simulate`` of a workload with a topology section (``--preset topology``): its gangs with
    topology placement and without, side by side (binpacking unless ``--policy fair``)."""
    import json

    from pyscheduler.sim.topology_run import describe_topology, format_topology, run_topology_pair

    summaries = run_topology_pair(spec, policy="fair" if policy == "fair" else "binpacking", timeout=timeout)
    print(describe_topology(spec))
    print()
    print(format_topology(summaries), flush=True)
    if json_path:
        document = {"workload": spec.to_mapping(), "summaries": [s.to_dict() for s in summaries]}
        try:
            with open(json_path, "w", encoding="utf-8") as handle:
                json.dump(document, handle, indent=2)
                handle.write("\n")
        except OSError as exc:
            print(f"pyscheduler simulate: cannot write {json_path}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    return 0 if all(s.completed for s in summaries) else 3


def _optional_package_missing(command: str, exc: ImportError, package: str, what: str, extra: str) -> int:
    """Says that ``pyscheduler COMMAND`` needs the optional ``package`` (``what`` it is,
    installed as the ``extra`` of pyscheduler, from the checkout's directory of that name) and how
    to install it, or that one of its dependencies is missing; the exit code (1)."""
    if (exc.name or package).split(".")[0] == package:
        print(f"pyscheduler {command} needs {what}, {package.replace('_', '-')}, which is not installed.\n"
              f"Install it with:  pip install 'pyscheduler[{extra}]'\n"
              f"(in a source checkout:  pip install -e {extra})", file=sys.stderr)
    else:  # the package is there but one of its dependencies is not
        print(f"pyscheduler {command}: cannot load {what} ({exc}); reinstall it with "
              f"pip install 'pyscheduler[{extra}]'", file=sys.stderr)
    return 1


def _reporter_options(parser: argparse.ArgumentParser, prefix: str, about: str) -> None:
    """The reporter manager's settings, as ``serve`` (``--reporter-period``, ...) and
    ``reporter-agent`` (``--period``, ...) take them; ``about`` starts each help text."""
    from pyscheduler.reporter.rounds import DEFAULT_GRACE, DEFAULT_PERIOD, DEFAULT_TIMEOUT, ManagerSettings

    parser.add_argument(f"--{prefix}period", type=float, default=DEFAULT_PERIOD, metavar="SECONDS",
                        help=f"{about}seconds between polls of the plugins, from the end of one round to the start "
                        "of the next (default %(default)g)")
    parser.add_argument(f"--{prefix}timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help=f"{about}how long one plugin's poll may take (default %(default)g)")
    parser.add_argument(f"--{prefix}grace", type=float, default=DEFAULT_GRACE, metavar="SECONDS",
                        help=f"{about}how long a plugin that went away keeps its facts (default %(default)g)")
    parser.add_argument(f"--{prefix}enable", default=",".join(ManagerSettings().enabled), metavar="RULES",
                        help=f"{about}plugins on and off, Katalyst's rule: '*' all, 'foo' on, '-foo' off, "
                        "comma-separated, the first naming a plugin wins (default '%(default)s')")
    parser.add_argument(f"--{prefix}checkpoint", metavar="FILE",
                        help=f"{about}keep every plugin's last report here across restarts (default: none)")


def _enable_rules(text: str) -> tuple[str, ...]:
    return tuple(rule.strip() for rule in text.split(",") if rule.strip())


def _serve(rest: list[str]) -> int:
    """``serve``: the REST service under gunicorn (see ``pyscheduler_web.server``)."""
    # The web package first: its defaults are in the help, and nothing serves without it.
    try:
        from pyscheduler_web.gunicorn_conf import DEFAULT_BIND
        from pyscheduler_web.server import serve
        from pyscheduler_web.service import DEFAULT_DEMO_SEED, ServeOptions
    except ImportError as exc:
        return _optional_package_missing("serve", exc, "pyscheduler_web", "the REST service package", "web")
    from pyscheduler.common.goduration import go_duration
    from pyscheduler.policies.role_history.store import DEFAULT_KEEP, DEFAULT_MAX_AGE
    from pyscheduler.scheduler.health_checker import DEFAULT_HEALTH_CHECK_INTERVAL
    from pyscheduler.scheduler.role_history_saver import DEFAULT_SAVE_DELAY

    parser = argparse.ArgumentParser(
        prog="pyscheduler serve",
        description="Serve YuniKorn's REST API (/ws/v1: partitions, queues, nodes, applications, events batch "
        "and stream, metrics, ...) with gunicorn: one worker with threads, running one scheduler. Without --demo "
        "or --rm the scheduler waits for an RM: embed one in the process with --rm (see README, 'The REST "
        "service'). Any other gunicorn setting can be given in GUNICORN_CMD_ARGS.",
    )
    parser.add_argument(
        "--config", metavar="FILE",
        help="queues.yaml handed to the RMs (the demo RM registers with it; default: the built-in configuration)",
    )
    parser.add_argument("--bind", metavar="ADDR", help=f"address to listen on (default {DEFAULT_BIND})")
    parser.add_argument(
        "--demo", action="store_true",
        help="attach the demo RM: a small simulated cluster kept busy, so queues, nodes, applications and events "
        "show at once",
    )
    parser.add_argument("--demo-seed", type=int, default=DEFAULT_DEMO_SEED, metavar="N",
                        help="seed of the demo workload (default %(default)s)")
    parser.add_argument(
        "--rm", action="append", default=[], metavar="MODULE:CALLABLE",
        help="attach an RM running in the served process: CALLABLE(service) registers it through service.proxy "
        "(repeatable)",
    )
    parser.add_argument(
        "--cluster", action="append", default=[], metavar="NAME=KUBECONFIG",
        help="with --rm pyscheduler_k8s:attach: schedule this Kubernetes cluster, as an RM of its own named NAME "
        "(a DNS label; its partitions are [NAME]default...), reached through KUBECONFIG (repeatable; sets "
        "PYSCHEDULER_K8S_CLUSTERS; default: the one cluster PYSCHEDULER_K8S_KUBECONFIG names)",
    )
    parser.add_argument(
        "--clusters-file", metavar="FILE",
        help="with --rm pyscheduler_k8s:attach: a hub over member clusters, listed in FILE (YAML: hub, members, "
        "lostAfter, onLost; see docs/multicluster.md); sets PYSCHEDULER_K8S_CLUSTERS_FILE",
    )
    parser.add_argument(
        "--health-interval", type=float, default=DEFAULT_HEALTH_CHECK_INTERVAL, metavar="SECONDS",
        help="seconds between health checks (default %(default)g; 0 or less: only the first check)",
    )
    parser.add_argument(
        "--no-history", action="store_true",
        help="do not keep the application and container history (/ws/v1/history/* answer 500)",
    )
    parser.add_argument(
        "--role-history-dir", metavar="URL",
        help="save role histories here (a path, or an fsspec URL: file://, memory://, s3://, gs://, hdfs:// with "
        "their drivers installed) and start from what was saved; default: role histories live in memory only",
    )
    parser.add_argument(
        "--role-history-keep", type=int, default=DEFAULT_KEEP, metavar="N",
        help="history files kept per partition; older ones are deleted after each save (default %(default)s)",
    )
    parser.add_argument(
        "--role-history-max-age", default=go_duration(int(DEFAULT_MAX_AGE * 1e9)), metavar="DURATION",
        help="entries last used longer ago are dropped when a saved history is loaded (Go duration or seconds; "
        "default %(default)s)",
    )
    parser.add_argument(
        "--role-history-save-delay", type=float, default=DEFAULT_SAVE_DELAY, metavar="SECONDS",
        help="the longest a change waits before it is saved (default %(default)g)",
    )
    _reporter_options(parser, "reporter-", "node reporter manager: ")
    parser.add_argument("--reporter-dir", metavar="DIR",
                        help="node reporter manager: socket plugins (Katalyst's gRPC API) register here, one "
                        "sub-directory per node: DIR/NODE/PLUGIN.sock (default: no socket plugins)")
    args = parser.parse_args(rest)
    if args.reporter_dir:  # socket plugins are the reporter-grpc extra: said before anything starts
        from pyscheduler.reporter.socket_directory import socket_plugins_problem

        problem = socket_plugins_problem()
        if problem is not None:
            print(f"pyscheduler serve: --reporter-dir: {problem}", file=sys.stderr)
            return 2
    from pyscheduler.common.goduration import parse_seconds

    try:
        max_age = parse_seconds(args.role_history_max_age)
    except ValueError:
        print(f"pyscheduler serve: --role-history-max-age {args.role_history_max_age!r}: not a duration "
              "(e.g. 168h, 30m, 3600)", file=sys.stderr)
        return 2
    import importlib.util

    from pyscheduler.common.importing import parse_object_name
    from pyscheduler.config.validator import ConfigValidationError
    from pyscheduler.service import CoreOptions

    core = CoreOptions(
        config_path=args.config,
        rms=tuple(args.rm),
        health_interval=args.health_interval,
        history=not args.no_history,
        role_history_dir=args.role_history_dir,
        role_history_keep=args.role_history_keep,
        role_history_max_age=max_age,
        role_history_save_delay=args.role_history_save_delay,
        reporter_period=args.reporter_period,
        reporter_timeout=args.reporter_timeout,
        reporter_grace=args.reporter_grace,
        reporter_enabled=_enable_rules(args.reporter_enable),
        reporter_checkpoint=args.reporter_checkpoint,
        reporter_dir=args.reporter_dir,
    )
    options = ServeOptions(core=core, demo=args.demo, demo_seed=args.demo_seed)
    try:
        core.role_history_store()  # a bad URL or setting fails here, before gunicorn forks
    except (ValueError, ImportError) as exc:
        print(f"pyscheduler serve: role history: {exc}", file=sys.stderr)
        return 2
    try:
        core.reporter_settings()
    except ValueError as exc:
        print(f"pyscheduler serve: {exc}", file=sys.stderr)
        return 2
    if args.reporter_dir:
        import os

        if not os.path.isdir(args.reporter_dir) or not os.access(args.reporter_dir, os.R_OK | os.X_OK):
            print(f"pyscheduler serve: --reporter-dir {args.reporter_dir}: not a readable directory", file=sys.stderr)
            return 2
    for spec in core.rms:
        try:
            module = parse_object_name(spec, default_attr="attach").module
        except ValueError as exc:
            print(f"pyscheduler serve: --rm {exc}", file=sys.stderr)
            return 2
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            print(f"pyscheduler serve: --rm {spec}: no module named {module!r}", file=sys.stderr)
            return 2
    if args.cluster:
        problem = _name_clusters(args.cluster, core.rms)
        if problem:
            print(f"pyscheduler serve: --cluster {problem}", file=sys.stderr)
            return 2
    if args.clusters_file:
        problem = _name_hub(args.clusters_file, core.rms, bool(args.cluster))
        if problem:
            print(f"pyscheduler serve: --clusters-file {problem}", file=sys.stderr)
            return 2
    try:
        core.read_config()  # fail here, before gunicorn forks, with the file's errors
    except OSError as exc:
        print(f"pyscheduler serve: cannot read {args.config}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except UnicodeDecodeError as exc:
        print(f"{args.config}: not UTF-8 text (byte {exc.start})", file=sys.stderr)
        return 1
    except ConfigValidationError as exc:
        for error in exc.errors:
            print(f"{args.config}: {error}", file=sys.stderr)
        return 1
    return serve(options, args.bind)


def _name_clusters(entries: list[str], rms: Sequence[str]) -> str:
    """Checks ``--cluster NAME=KUBECONFIG`` (each name a DNS label, once, each file there, the
    Kubernetes shim among the RMs) and names the clusters to the served process through
    ``PYSCHEDULER_K8S_CLUSTERS``; what is wrong, or "" when nothing is."""
    if not any(spec.split(":", 1)[0] == "pyscheduler_k8s" for spec in rms):
        return "needs --rm pyscheduler_k8s:attach (the Kubernetes shim schedules the clusters)"
    try:
        from pyscheduler_k8s.clusters import CLUSTERS_ENV, format_clusters, parse_clusters
    except ImportError as exc:
        return f"needs the Kubernetes package, pyscheduler-k8s ({exc})"
    import os

    try:
        clusters = parse_clusters(entries)
        os.environ[CLUSTERS_ENV] = format_clusters(clusters)  # gunicorn's worker inherits it
    except ValueError as exc:
        return str(exc)
    return ""


def _name_hub(path: str, rms: Sequence[str], with_clusters: bool) -> str:
    """Checks ``--clusters-file`` (the Kubernetes shim among the RMs, no ``--cluster`` beside it,
    the file a hub's) and names it to the served process; what is wrong, or ""."""
    if not any(spec.split(":", 1)[0] == "pyscheduler_k8s" for spec in rms):
        return "needs --rm pyscheduler_k8s:attach (the Kubernetes shim runs the hub)"
    if with_clusters:
        return "and --cluster: a hub lists its members in the file; use one or the other"
    try:
        from pyscheduler_k8s.hub.config import CLUSTERS_FILE_ENV, load_hub_config
    except ImportError as exc:
        return f"needs the Kubernetes package, pyscheduler-k8s ({exc})"
    import os

    try:
        load_hub_config(path)
    except ValueError as exc:
        return str(exc)
    os.environ[CLUSTERS_FILE_ENV] = os.path.abspath(os.path.expanduser(path))  # gunicorn's worker inherits it
    return ""


def _reporter_agent(rest: list[str]) -> int:
    """``reporter-agent``: the reporter manager for one node (see ``pyscheduler_k8s.agent``)."""
    # The Kubernetes package first: its defaults are in the help, and nothing runs without it.
    try:
        from pyscheduler_k8s.agent import DEFAULT_RESYNC, AgentOptions, run
    except ImportError as exc:
        return _optional_package_missing("reporter-agent", exc, "pyscheduler_k8s", "the Kubernetes package", "k8s")
    parser = argparse.ArgumentParser(
        prog="pyscheduler reporter-agent",
        description="The node reporter manager as a per-node agent (a DaemonSet, as Katalyst's agent): every "
        "period it polls its plugins, merges what they report about this node, and when the merge changed writes "
        "it into the node's CustomNodeResource (node.katalyst.kubewharf.io/v1alpha1) in one server-side apply. The "
        "scheduler's Kubernetes shim reads those objects into the core's nodes. Plugins are in-process (--plugin) "
        "or Katalyst's gRPC plugins, which register by putting their socket into --plugin-dir, unchanged.",
    )
    parser.add_argument("--node", required=True, metavar="NAME",
                        help="the node this agent reports on (in a DaemonSet: spec.nodeName from the downward API)")
    parser.add_argument("--plugin-dir", metavar="DIR",
                        help="this node's plugin directory, flat: socket plugins register by creating DIR/NAME.sock "
                        "(Katalyst's agent uses /var/lib/katalyst/plugin-socks; default: no socket plugins)")
    parser.add_argument("--plugin", action="append", default=[], metavar="MODULE:ATTR",
                        help="an in-process plugin: an object with name and report(), or a factory called with the "
                        "node's name that returns one (repeatable; the order given is the merge order)")
    _reporter_options(parser, "", "")
    parser.add_argument("--resync", type=float, default=DEFAULT_RESYNC, metavar="SECONDS",
                        help="write the object again after this long even when nothing changed, so one deleted or "
                        "edited by someone else comes back (default %(default)g)")
    parser.add_argument("--kubeconfig", metavar="PATH",
                        help="the cluster (default: KUBECONFIG, ~/.kube/config, else the pod's service account)")
    parser.add_argument("--once", action="store_true",
                        help="one round, then exit: 0 when written or unchanged, 1 when the write failed")
    args = parser.parse_args(rest)
    for option in ("period", "timeout", "grace", "resync"):
        value = getattr(args, option)
        if not math.isfinite(value) or value <= 0:  # nan and inf parse as floats too
            parser.error(f"--{option} must be a positive number of seconds, got {value}")
    return run(AgentOptions(
        node=args.node, plugin_dir=args.plugin_dir, plugins=tuple(args.plugin), period=args.period,
        timeout=args.timeout, grace=args.grace,
        enabled=_enable_rules(args.enable), checkpoint=args.checkpoint,
        resync=args.resync, kubeconfig=args.kubeconfig, once=args.once))


def _validate_conf(rest: list[str]) -> int:
    """``validate-conf FILE``: parse and validate a queues.yaml without a scheduler."""
    parser = argparse.ArgumentParser(
        prog="pyscheduler validate-conf",
        description="Check a queues.yaml: strict parsing and every validation rule, no scheduler needed. "
        "Prints 'valid' and the checksum, or each error on its own line on standard error.",
    )
    parser.add_argument("file", metavar="FILE", help="the queues.yaml to check, or - for standard input")
    args = parser.parse_args(rest)

    from pyscheduler.config.loader import parse_and_validate
    from pyscheduler.config.queue_preemption import preemption_warnings
    from pyscheduler.config.validator import ConfigValidationError

    try:
        data = sys.stdin.buffer.read() if args.file == "-" else _read_bytes(args.file)
    except OSError as exc:
        print(f"pyscheduler validate-conf: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # Unreadable content is an invalid configuration, not a missing file.
        print(f"{args.file}: not UTF-8 text (byte {exc.start})", file=sys.stderr)
        return 1
    try:
        config = parse_and_validate(text)
    except ConfigValidationError as exc:
        for error in exc.errors:
            print(error, file=sys.stderr)
        return 1
    for warning in preemption_warnings(config):
        print(f"warning: {warning}", file=sys.stderr)
    print("valid")
    print(f"checksum: {config.checksum}")
    return 0


def _healthcheck(rest: list[str]) -> int:
    from pyscheduler.healthprobe import run

    return run(rest)


def _read_bytes(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


_COMMANDS = {
    "bench": (_bench, "where the benchmarks are (make bench in a source checkout)"),
    "healthcheck": (_healthcheck, "ask a served scheduler's health check: exit 0 healthy, 1 not (the image's)"),
    "reporter-agent": (_reporter_agent, "the node reporter manager on one node, writing its CustomNodeResource"),
    "serve": (_serve, "serve the REST API (YuniKorn's /ws/v1) with gunicorn; --demo for a busy demo cluster"),
    "simulate": (_simulate, "play a workload against the core with a simulated RM and print a summary"),
    "validate-conf": (_validate_conf, "check a queues.yaml file (- for stdin): prints 'valid' or the errors"),
    "version": (_version, "print the package and native-module versions"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pyscheduler",
        description="pyscheduler: a YuniKorn-style resource scheduler core with Rust hot paths.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (_, help_text) in _COMMANDS.items():
        # Each subcommand parses its own options, so they are passed through untouched.
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    known, rest = parser.parse_known_args(args[:1])
    handler, _ = _COMMANDS[known.command]
    return handler(rest + args[1:])


if __name__ == "__main__":
    sys.exit(main())
