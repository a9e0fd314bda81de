"""A probe of the serving path under hostile clients (issue 10): ``python -m benchmarks.hostile_clients``.

Starts ``pyscheduler serve --demo`` on a free 127.0.0.1 port, then for each kind of misbehaving
client opens ``--sockets`` connections (900 by default, under the worker's 1,000-connection cap)
that stay open while 10 health checks (``/ws/v1/scheduler/healthcheck``, each on a new
connection) are timed: idle sockets, half a request head, a whole head with a body that never
completes, answers never read (``Connection: close``), kept-alive connections after one request.
Prints the median and the slowest check per kind (target: under 100 ms) and whether the
server is still running at the end. Not yet a ``make bench`` family: its figures
are recorded by hand in docs/benchmarks.md. Bounded: a few thousand sockets, about a minute.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

from benchmarks.rest import free_port

KINDS = {
    "idle": b"",
    "half a request head": b"GET /ws/v1/partitions HT",
    "body never completes": b"POST /ws/v1/validate-conf HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\npart",
    "answers never read (Connection: close)": (
        b"GET /ws/v1/partition/default/nodes HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    ),
    "kept alive after one request": b"GET /ws/v1/partitions HTTP/1.1\r\nHost: x\r\n\r\n",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.hostile_clients", description=__doc__.split("\n")[0])
    parser.add_argument("--sockets", type=int, default=900, help="misbehaving connections per kind (default 900)")
    args = parser.parse_args(argv)
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "pyscheduler.cli", "serve", "--demo", "--bind", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}/ws/v1/scheduler/healthcheck"

    def check() -> float:
        began = time.monotonic()
        with urllib.request.urlopen(url, timeout=30) as response:
            response.read()
        return time.monotonic() - began

    try:
        for _ in range(300):
            try:
                check()
                break
            except OSError:
                time.sleep(0.1)
        print(f"| clients ({args.sockets} sockets each) | health check median ms | slowest of 10 ms |")
        print("|---|--:|--:|")
        for kind, first in KINDS.items():
            opened = []
            try:
                for _ in range(args.sockets):
                    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
                    if first:
                        sock.sendall(first)
                    opened.append(sock)
                time.sleep(0.3)
                times = [check() for _ in range(10)]
            finally:
                for sock in opened:
                    sock.close()
            print(f"| {kind} | {statistics.median(times) * 1e3:.1f} | {max(times) * 1e3:.1f} |", flush=True)
            time.sleep(0.5)
        print(f"\nserver still running: {server.poll() is None}")
        return 0 if server.poll() is None else 1
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(15)


if __name__ == "__main__":
    sys.exit(main())
