"""``kubectl pyscheduler``: the arguments and the commands (docs/kubectl.md).

Each command fetches through :class:`~.client.SchedulerClient` and prints a view (``-o json``:
the raw answers instead). Exit status: 0 done, 1 the scheduler or the cluster answered with an
error or could not be reached (the message on stderr), 2 wrong arguments. Options common to
every command may come before or after it (``kubectl pyscheduler --server URL queues`` or
``kubectl pyscheduler queues --server URL``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from pyscheduler_k8s.kubectl import events_view, queues_view, why_view
from pyscheduler_k8s.kubectl.client import SchedulerClient, SchedulerError
from pyscheduler_k8s.kubectl.reach import (DEFAULT_SERVICE, SERVER_ENV, cluster, default_namespace, direct, server_url,
                                           service_proxy)
from pyscheduler_k8s.kubectl.targets import Subject, Target, parse_target, resolve

__all__ = ["main"]

PROG = "kubectl pyscheduler"
#: Pods of a Job named as running on their nodes before the rest are counted.
MAX_BOUND_PODS = 5


def _common_options(suppress: bool) -> argparse.ArgumentParser:
    """The options every command takes; on the top parser and on each command's, the latter's
    defaults suppressed so an option given before the command is not reset by it."""
    parser = argparse.ArgumentParser(add_help=False, argument_default=argparse.SUPPRESS if suppress else None)
    where = parser.add_argument_group("where the scheduler is")
    where.add_argument("--server", metavar="URL",
                       help=f"the scheduler's REST API (http://host:9080); default: ${SERVER_ENV}, else the "
                            "cluster's service proxy")
    where.add_argument("--service", metavar="NAMESPACE/NAME[:PORT]",
                       help=f"the scheduler's Service, reached through the API server (default {DEFAULT_SERVICE}, "
                            "its port named rest or its first)")
    where.add_argument("--kubeconfig", metavar="FILE", help="the kubeconfig (default: $KUBECONFIG, ~/.kube/config)")
    where.add_argument("--context", help="the kubeconfig context to use instead of the current one")
    what = parser.add_argument_group("what to show")
    what.add_argument("-n", "--namespace", help="the namespace of the pods and Jobs named (default: the kubeconfig context's, else default)")
    what.add_argument("--partition", help="the scheduler's partition (default: default)")
    what.add_argument("-o", "--output", choices=("text", "json"), help="text (default) or the raw JSON answers")
    return parser


def _option(args: argparse.Namespace, name: str, default: Any = None) -> Any:
    value = getattr(args, name, None)
    return default if value is None else value


def _scheduler(args: argparse.Namespace) -> SchedulerClient:
    url = server_url(_option(args, "server"))
    if url:
        return direct(url)
    return service_proxy(cluster(_option(args, "kubeconfig"), _option(args, "context")),
                         _option(args, "service", DEFAULT_SERVICE))


def _subjects(args: argparse.Namespace, target: Target) -> list[Subject]:
    if target.kind == "app":
        return [Subject(target.name)]
    kubeconfig, context = _option(args, "kubeconfig"), _option(args, "context")
    namespace = _option(args, "namespace") or default_namespace(kubeconfig, context)
    return resolve(cluster(kubeconfig, context), namespace, target)


def _json(value: Any, out: TextIO) -> None:
    out.write(json.dumps(value, indent=2, sort_keys=False) + "\n")


def _partition(args: argparse.Namespace) -> str:
    return str(_option(args, "partition", "default"))


def _text(args: argparse.Namespace) -> bool:
    return bool(_option(args, "output", "text") == "text")


def cmd_queues(args: argparse.Namespace, out: TextIO) -> int:
    root = _scheduler(args).queues(_partition(args))
    if not _text(args):
        _json(root, out)
        return 0
    resources = args.resources.split(",") if args.resources else None
    out.write(queues_view.format_queue_tree(root, resources) + "\n")
    return 0


def cmd_top(args: argparse.Namespace, out: TextIO) -> int:
    client = _scheduler(args)
    root, nodes = client.queues(_partition(args)), client.nodes(_partition(args))
    if not _text(args):
        _json({"queues": root, "nodes": nodes}, out)
        return 0
    out.write(queues_view.format_top(root, nodes, args.limit) + "\n")
    return 0


def cmd_events(args: argparse.Namespace, out: TextIO) -> int:
    client = _scheduler(args)
    if not args.follow:
        # The last COUNT events: where the ring ends first, then that window.
        head = client.events_batch(count=1)
        start = max(0, int(head.get("LowestID") or 0), int(head.get("HighestID") or 0) - args.count + 1)
        batch = client.events_batch(count=args.count, start=start)
        records = batch.get("EventRecords") or []
        if not _text(args):
            _json(batch, out)
        else:
            for record in records:
                out.write(events_view.format_event(record) + "\n")
        return 0
    shown = 0
    try:
        for line in client.event_stream(count=args.history or None):
            kind, text = events_view.stream_line(line)
            if kind == "start":
                continue
            if kind == "closed":
                sys.stderr.write(f"the stream ended: {text}\n")
                return 0
            out.write((json.dumps(line) if not _text(args) else str(text)) + "\n")
            out.flush()
            shown += 1
            if args.count and shown >= args.count:
                return 0
    except KeyboardInterrupt:
        return 0
    return 0


def cmd_why(args: argparse.Namespace, out: TextIO) -> int:
    client = _scheduler(args)
    subjects = _subjects(args, parse_target(args.target))
    answers: list[dict[str, Any]] = []
    texts: list[str] = []
    # One answer per application; the pods' asks picked out of it.
    by_app: dict[str, list[Subject]] = {}
    for subject in subjects:
        by_app.setdefault(subject.app_id, []).append(subject)
    for app_id, members in by_app.items():
        pods = [s for s in members if s.pod]
        try:
            answer = client.why(_partition(args), app_id, ask=args.ask, nodes=not args.no_nodes)
        except SchedulerError as exc:
            if exc.status != 404 or not pods:
                raise
            raise SchedulerError(404, f"{exc.message}: the scheduler does not know application {app_id} of pod "
                                      f"{pods[0].pod} in partition {_partition(args)} (is the pod's schedulerName "
                                      "pyscheduler?)") from exc
        answers.append(answer)
        bound = [s for s in pods if s.node]
        lines = [f"Pod {s.pod} runs on node {s.node} ({s.phase or 'bound'})" for s in bound[:MAX_BOUND_PODS]]
        if len(bound) > MAX_BOUND_PODS:
            lines.append(f"... and {len(bound) - MAX_BOUND_PODS} more of its pods run")
        keys = [s.allocation_key for s in pods if not s.node] if pods else None
        if pods and not keys:
            lines.append(why_view.format_why(answer, asks=[], max_asks=0).split("\n", 1)[0])
        else:
            lines.append(why_view.format_why(answer, asks=keys, max_asks=args.max_asks))
        texts.append("\n".join(lines))
    if not _text(args):
        _json(answers[0] if len(answers) == 1 else answers, out)
    else:
        out.write("\n\n".join(texts) + "\n")
    return 0


def cmd_position(args: argparse.Namespace, out: TextIO) -> int:
    client = _scheduler(args)
    if args.target:
        apps = [client.application(_partition(args), app_id)
                for app_id in dict.fromkeys(s.app_id for s in _subjects(args, parse_target(args.target)))]
        if not _text(args):
            _json(apps[0] if len(apps) == 1 else apps, out)
        else:
            out.write("\n".join(why_view.format_position(app) for app in apps) + "\n")
        return 0
    entries = client.pending(_partition(args), queue=args.queue, limit=args.limit, offset=args.offset)
    if not _text(args):
        _json(entries, out)
    else:
        out.write(why_view.format_pending(entries) + "\n")
    return 0


def cmd_preempted(args: argparse.Namespace, out: TextIO) -> int:
    client = _scheduler(args)
    subjects = _subjects(args, parse_target(args.target))
    answers = []
    for subject in subjects:
        key = args.allocation_key or subject.allocation_key
        if not key:
            raise SchedulerError(0, "an application's allocation is named by --allocation-key")
        answers.append(client.preempted(_partition(args), subject.app_id, key))
    if not _text(args):
        _json(answers[0] if len(answers) == 1 else answers, out)
    else:
        out.write("\n".join(why_view.format_preempted(a) for a in answers) + "\n")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, parents=[_common_options(suppress=False)],
        description="Ask pyscheduler what it is doing and why a pod, a Job or an application waits.",
        epilog="Each command has its own --help. See docs/kubectl.md.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    common = _common_options(suppress=True)

    def command(name: str, run: Callable[[argparse.Namespace, TextIO], int], text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, parents=[common], help=text, description=text)
        sub.set_defaults(run=run)
        return sub

    queues = command("queues", cmd_queues, "The queue tree: per queue its running applications, pending "
                     "resources and a usage bar per resource (used of its max or limit, | at guaranteed).")
    queues.add_argument("--resources", metavar="NAMES", help="only these resources (vcore,memory)")
    top = command("top", cmd_top, "The busiest leaf queues and nodes: the largest share of a resource's limit "
                  "or capacity first.")
    top.add_argument("--limit", type=int, default=10, help="how many of each (default 10)")
    events = command("events", cmd_events, "The scheduler's events, one line each: the last ones, or with -f "
                     "the live stream until --count events or Ctrl-C.")
    events.add_argument("-f", "--follow", action="store_true", help="follow the live stream")
    events.add_argument("--count", type=int, default=None,
                        help="the last COUNT events (default 20); with -f: stop after COUNT events (default: never)")
    events.add_argument("--history", type=int, default=0, help="with -f: replay this many past events first")
    why = command("why", cmd_why, "Why a pod, a Job's pods or an application waits: the first thing that stops "
                  "each pending ask, with numbers, the nodes grouped by why they refuse it, reservations, "
                  "preemption and what it waits for.")
    why.add_argument("target", metavar="POD|job/NAME|app/ID")
    why.add_argument("--ask", metavar="KEY", help="only this ask (allocation key) of the application")
    why.add_argument("--no-nodes", action="store_true", help="skip the per-node grouping (cheaper)")
    why.add_argument("--max-asks", type=int, default=10, help="print at most this many asks (default 10)")
    position = command("position", cmd_position, "The pending applications in the order the next cycle visits "
                       "them, or one target's place in its queue and the partition.")
    position.add_argument("target", nargs="?", metavar="POD|job/NAME|app/ID")
    position.add_argument("--queue", help="only this leaf queue")
    position.add_argument("--limit", type=int, default=None, help="at most this many")
    position.add_argument("--offset", type=int, default=None, help="skip this many first")
    preempted = command("preempted", cmd_preempted, "For a preempted pod or allocation: who took its place and "
                        "under which rule (from the event history).")
    preempted.add_argument("target", metavar="POD|app/ID")
    preempted.add_argument("--allocation-key", metavar="KEY",
                           help="the allocation (default: the pod's uid); needed with app/ID")
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "events" and args.count is None and not args.follow:
        args.count = 20
    try:
        status: int = args.run(args, out or sys.stdout)
        return status
    except ValueError as exc:
        parser.error(str(exc))
    except SchedulerError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (| head): nothing more to say, and nothing to flush at exit.
        if out is None:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
