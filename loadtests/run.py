#!/usr/bin/env python3
"""``make loadtest``: a served demo scheduler on 127.0.0.1, locust headless against it, a summary.

Starts ``pyscheduler serve --demo --bind 127.0.0.1:<free port>`` (the demo RM keeps a small
simulated cluster busy, so events flow), waits until it answers, runs
``locust -f loadtests/locustfile.py --headless -u USERS -r RATE -t TIME --host URL`` for a
bounded time, prints requests/s, latency percentiles and failures per request name, and stops
the server (also on errors and Ctrl-C). Loopback only.

    python loadtests/run.py                      # the mix: 6 users, 30 s
    python loadtests/run.py --scenario stream -u 4 -t 20s
    python loadtests/run.py --no-think -t 20s      # saturation: no think time between requests
    python loadtests/run.py --json /tmp/loadtest.json

The exit status is locust's (1 when a request failed), or 2 when the server or locust could
not run.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
LOCUSTFILE = HERE / "locustfile.py"
SCENARIOS = {
    "mix": [],  # every user class, by weight
    "batch": ["BatchPoller"],
    "stream": ["StreamReader"],
    "objects": ["ObjectBrowser"],
}
STARTUP_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0
#: Percentile columns of locust's stats CSV that the summary shows.
PERCENTILES = ("50%", "95%", "99%")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def parse_duration(text: str) -> float:
    """Seconds in a locust time string: ``30``, ``30s``, ``2m``, ``1h30m``."""
    text = text.strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    parts = re.findall(r"(\d+)\s*([hms])", text)
    if not parts or "".join(n + u for n, u in parts) != text.replace(" ", ""):
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (e.g. 30s, 2m)")
    return float(sum(int(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in parts))


def start_server(port: int, workdir: Path, extra: list[str]) -> subprocess.Popen[bytes]:
    log = (workdir / "server.log").open("wb")
    env = dict(os.environ)
    env.pop("PYSCHEDULER_BIND", None)
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "pyscheduler.cli", "serve", "--demo", "--bind", f"127.0.0.1:{port}", *extra],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=workdir,
            start_new_session=True,
        )
    finally:
        log.close()


def wait_until_serving(process: subprocess.Popen[bytes], url: str, timeout: float = STARTUP_TIMEOUT) -> None:
    """Until the demo's nodes are registered (the object endpoints then have content)."""
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with status {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/ws/v1/partition/default/nodes", timeout=2) as response:
                if response.status == 200 and json.loads(response.read()):
                    return
        except (OSError, urllib.error.URLError, ValueError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"the server did not answer within {timeout:g} s")
        time.sleep(0.2)


def stop_server(process: subprocess.Popen[bytes]) -> int | None:
    """SIGTERM (gunicorn's graceful stop), then SIGKILL of its process group."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except OSError:
                pass
            process.wait(5)
    return process.returncode


def read_stats(prefix: Path) -> list[dict[str, Any]]:
    """Locust's ``PREFIX_stats.csv`` as rows of numbers (the ``Aggregated`` row last)."""
    path = Path(f"{prefix}_stats.csv")
    rows = []
    with path.open(newline="", encoding="utf-8") as f:
        for raw in csv.DictReader(f):
            def num(key: str) -> float:
                value = raw.get(key, "") or "0"
                return float(value) if value != "N/A" else 0.0

            rows.append({
                "type": raw["Type"],
                "name": raw["Name"],
                "requests": int(num("Request Count")),
                "failures": int(num("Failure Count")),
                "requests_per_s": num("Requests/s"),
                "failures_per_s": num("Failures/s"),
                "median_ms": num("Median Response Time"),
                "average_ms": num("Average Response Time"),
                "max_ms": num("Max Response Time"),
                "average_bytes": num("Average Content Size"),
                **{f"p{p.rstrip('%')}_ms": num(p) for p in PERCENTILES},
            })
    return rows


def read_failures(prefix: Path) -> list[dict[str, str]]:
    path = Path(f"{prefix}_failures.csv")
    if not path.exists():
        return []
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def format_summary(rows: list[dict[str, Any]], header: str) -> str:
    columns = ["request", "requests", "failures", "req/s", "p50 ms", "p95 ms", "p99 ms", "max ms", "avg bytes"]
    cells = [columns] + [
        [
            (r["type"] + " " + r["name"]).strip(),
            f"{r['requests']:,}", f"{r['failures']:,}", f"{r['requests_per_s']:.1f}",
            f"{r['p50_ms']:.0f}", f"{r['p95_ms']:.0f}", f"{r['p99_ms']:.0f}", f"{r['max_ms']:.0f}",
            f"{r['average_bytes']:,.0f}",
        ]
        for r in rows
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    align = "l" + "r" * (len(columns) - 1)

    def line(row: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(row, widths, align)) + " |"

    rule = "|" + "|".join("-" * (w + 2) if a == "l" else "-" * (w + 1) + ":" for w, a in zip(widths, align)) + "|"
    return "\n".join([header, "", line(cells[0]), rule, *(line(r) for r in cells[1:])])


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="loadtests/run.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), default="mix", help="which clients (default: mix)")
    parser.add_argument("-u", "--users", type=int, default=6, help="concurrent users (default 6; 2 cores)")
    parser.add_argument("-r", "--spawn-rate", type=float, default=3.0, help="users started per second (default 3)")
    parser.add_argument("-t", "--run-time", type=parse_duration, default=30.0, help="how long (default 30s)")
    parser.add_argument("--no-think", action="store_true",
                        help="no think time between a user's requests (saturation instead of a client mix)")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the summary as JSON")
    parser.add_argument("--serve-arg", action="append", default=[], metavar="ARG",
                        help="extra argument for pyscheduler serve (repeatable)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.users < 1 or args.spawn_rate <= 0 or args.run_time <= 0:
        print("users, spawn rate and run time must be positive", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="pyscheduler-loadtest-") as tmp:
        workdir = Path(tmp)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        run_time = f"{int(args.run_time)}s" if args.run_time == int(args.run_time) else f"{args.run_time}s"
        server = start_server(port, workdir, args.serve_arg)
        try:
            try:
                wait_until_serving(server, url)
            except RuntimeError as exc:
                print(f"loadtest: {exc}\n{(workdir / 'server.log').read_text(errors='replace')[-3000:]}", file=sys.stderr)
                return 2
            prefix = workdir / "locust"
            command = [
                sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless",
                "-u", str(args.users), "-r", str(args.spawn_rate), "-t", run_time, "--host", url,
                "--only-summary", "--csv", str(prefix), "--stop-timeout", "20", "--loglevel", "WARNING",
                *SCENARIOS[args.scenario],
            ]
            print(f"loadtest: {' '.join(command[1:])}", flush=True)
            started = time.monotonic()
            try:
                # Bounded: the run time, the users' stop timeout, start-up and reporting.
                env = dict(os.environ, LOADTEST_THINK="0" if args.no_think else os.environ.get("LOADTEST_THINK", "1"))
                locust = subprocess.run(command, cwd=workdir, env=env, timeout=args.run_time + 120, check=False)
            except subprocess.TimeoutExpired:
                print("loadtest: locust did not finish in time", file=sys.stderr)
                return 2
            elapsed = time.monotonic() - started
            try:
                rows = read_stats(prefix)
            except (OSError, KeyError, ValueError) as exc:
                print(f"loadtest: no locust statistics ({exc}); locust exited with {locust.returncode}", file=sys.stderr)
                return 2
            failures = read_failures(prefix)
        finally:
            code = stop_server(server)
            log = (workdir / "server.log").read_text(errors="replace")
        header = (
            f"## Load test: scenario {args.scenario}{' (no think time)' if args.no_think else ''}, "
            f"{args.users} users (spawn rate {args.spawn_rate:g}/s), "
            f"{run_time}, pyscheduler serve --demo on 127.0.0.1 (locust ran {elapsed:.0f} s)"
        )
        print()
        print(format_summary(rows, header))
        total = next((r for r in rows if r["name"] == "Aggregated"), None)
        if total is not None:
            print(
                f"\nTotal: {total['requests']:,} requests, {total['requests_per_s']:.1f} requests/s, "
                f"{total['failures']:,} failures; p50 {total['p50_ms']:.0f} ms, p95 {total['p95_ms']:.0f} ms, "
                f"p99 {total['p99_ms']:.0f} ms."
            )
        for failure in failures:
            print(f"FAILURE: {failure.get('Method', '')} {failure.get('Name', '')}: "
                  f"{failure.get('Error', '')} (x{failure.get('Occurrences', '?')})")
        server_errors = [line for line in log.splitlines() if "Traceback" in line or "[ERROR]" in line]
        if server_errors:
            print(f"Server log: {len(server_errors)} error lines, e.g. {server_errors[0]}")
        if args.json is not None:
            args.json.write_text(json.dumps({
                "scenario": args.scenario, "no_think": args.no_think, "users": args.users, "spawn_rate": args.spawn_rate,
                "run_time_s": args.run_time, "host": url, "locust_exit_code": locust.returncode,
                "server_exit_code": code, "server_error_lines": len(server_errors),
                "stats": rows, "failures": failures,
            }, indent=2) + "\n", encoding="utf-8")
        return locust.returncode


if __name__ == "__main__":
    sys.exit(main())
