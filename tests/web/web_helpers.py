"""Helpers of the REST tests: a real gunicorn serving pyscheduler, and a raw stream client.

A plain module (``from web_helpers import ...``), used by conftest.py's fixtures and the tests.

``server`` (one per session) runs ``python -m pyscheduler.cli serve`` on a free port of
127.0.0.1 with the test configuration (:data:`TEST_QUEUES`) and the scenario RM
(``--rm scenario_rm:attach``, see scenario_rm.py) embedded in the served process, and with
``GUNICORN_CMD_ARGS=--timeout 3`` so a stream outliving the worker timeout is cheap to test.
Tests that change event settings (``server.settings(...)``) put the defaults back
(``restore_settings``). ``start_server`` starts extra servers (the demo, shutdown tests).

:class:`StreamClient` reads ``/ws/v1/events/stream`` over a plain socket: chunked framing
decoded by hand, lines as they come, a deadline on every read, an optional source address
(for the per-address limit) and receive buffer (for the slow-consumer test).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

TEST_QUEUES = """\
partitions:
  - name: default
    placementrules:
      - name: provided
        create: false
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
          - name: b
            resources:
              max: {memory: 32G, vcore: 16}
"""

#: Event settings the session server runs with (YuniKorn's defaults).
DEFAULT_SETTINGS: dict[str, str] = {}
STARTUP_TIMEOUT = 40.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    url: str
    port: int
    process: subprocess.Popen[bytes]
    log_path: Path
    session: Any = field(default_factory=lambda: requests.Session())

    def get(self, path: str, **kwargs: Any) -> Any:
        kwargs.setdefault("timeout", 10)
        kwargs.setdefault("allow_redirects", False)
        return self.session.get(self.url + path, **kwargs)

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        kwargs.setdefault("timeout", 10)
        kwargs.setdefault("allow_redirects", False)
        return self.session.request(method, self.url + path, **kwargs)

    def add_events(self, n: int) -> int:
        """Add ``n`` events in the server; the next event id afterwards."""
        r = self.session.post(f"{self.url}/test/events", params={"n": n}, timeout=30)
        r.raise_for_status()
        return int(r.json()["next_id"])

    def settings(self, **extra: str) -> dict[str, Any]:
        """Apply these extra-config keys (everything else back to its default)."""
        r = self.session.post(f"{self.url}/test/settings", json=extra, timeout=10)
        r.raise_for_status()
        return dict(r.json())

    def state(self) -> dict[str, Any]:
        r = self.session.get(f"{self.url}/test/state", timeout=10)
        r.raise_for_status()
        return dict(r.json())

    def wait_for(self, check: Callable[[dict[str, Any]], bool], timeout: float = 5.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            state = self.state()
            if check(state) or time.monotonic() > deadline:
                return state
            time.sleep(0.05)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def _server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    # tests/web (scenario RMs) and tests/ (shared helpers such as event_oracle.py).
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), str(HERE.parent), env.get("PYTHONPATH", "")) if p)
    env.pop("PYSCHEDULER_BIND", None)
    env.update(extra or {})
    return env


def launch(tmp: Path, args: list[str], env: dict[str, str] | None = None, host: str = "127.0.0.1") -> Server:
    """Start ``pyscheduler serve ARGS`` on a free port of ``host`` (an address of this machine;
    loopback unless a test needs another, e.g. one an API server will proxy to); returns once it
    answers."""
    port = free_port()
    log_path = tmp / f"server-{port}.log"
    log = log_path.open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "pyscheduler.cli", "serve", "--bind", f"{host}:{port}", *args],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=_server_env(env),
        cwd=tmp,
        start_new_session=True,
    )
    log.close()
    server = Server(f"http://{host}:{port}", port, process, log_path)
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}:\n{server.log()}")
        try:
            if requests.get(server.url + "/ws/v1/events/batch?count=1", timeout=2).status_code == 200:
                return server
        except (requests.ConnectionError, requests.Timeout):  # not listening yet, or still loading the app
            pass
        if time.monotonic() > deadline:
            stop(server)
            raise RuntimeError(f"server did not answer within {STARTUP_TIMEOUT}s:\n{server.log()}")
        time.sleep(0.1)


def stop(server: Server, timeout: float = 15.0) -> int:
    """SIGTERM (a graceful gunicorn stop), then SIGKILL after ``timeout``; the exit status."""
    server.session.close()
    process = server.process
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(5)
    return int(process.returncode)


# -- a raw stream client -------------------------------------------------------------------------


class StreamClient:
    """``GET`` over a plain socket with chunked decoding by hand; every read has a deadline."""

    def __init__(
        self,
        port: int,
        path: str,
        *,
        source: str | None = None,
        rcvbuf: int | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 10.0,
    ) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        if source is not None:
            self.sock.bind((source, 0))
        self.sock.settimeout(timeout)
        self.sock.connect(("127.0.0.1", port))
        headers = {"Host": f"127.0.0.1:{port}", **(headers or {})}
        lines = [f"GET {path} HTTP/1.1"] + [f"{k}: {v}" for k, v in headers.items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        self._buf = b""
        self._body = b""  # received body bytes not yet returned as lines
        self._lines: deque[bytes] = deque()
        self.finished = False
        head = self._read_until(b"\r\n\r\n", timeout)
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        self.status = int(status_line.split()[1])
        self.headers = {k.strip().lower(): v.strip() for k, v in (h.split(":", 1) for h in header_lines if h)}
        self.chunked = self.headers.get("transfer-encoding", "").lower() == "chunked"
        if not self.chunked:
            length = int(self.headers.get("content-length", "0"))
            while len(self._buf) < length:
                self._recv(timeout)
            self._body, self._buf = self._buf[:length], self._buf[length:]
            self.finished = True

    def _recv(self, timeout: float) -> None:
        self.sock.settimeout(max(timeout, 0.001))
        data = self.sock.recv(65536)
        if not data:
            raise EOFError("connection closed")
        self._buf += data

    def _read_until(self, marker: bytes, timeout: float) -> bytes:
        deadline = time.monotonic() + timeout
        while marker not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {marker!r} within {timeout}s")
            self._recv(left)
        head, _, self._buf = self._buf.partition(marker)
        return head

    def _next_chunk(self, timeout: float) -> None:
        size_line = self._read_until(b"\r\n", timeout)
        size = int(size_line.split(b";")[0], 16)
        deadline = time.monotonic() + timeout
        while len(self._buf) < size + 2:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("chunk incomplete")
            self._recv(left)
        chunk, self._buf = self._buf[:size], self._buf[size + 2 :]
        if size == 0:
            self.finished = True
        self._body += chunk
        if b"\n" in chunk:
            *complete, self._body = self._body.split(b"\n")
            self._lines.extend(line + b"\n" for line in complete)

    def body(self) -> bytes:
        return self._body

    def json(self) -> Any:
        return json.loads(self._body)

    def read_line(self, timeout: float = 5.0) -> bytes | None:
        """The next line (with its newline); None at the end of the body."""
        deadline = time.monotonic() + timeout
        while not self._lines:
            if self.finished:
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no line within {timeout}s (have {self._body[:200]!r})")
            self._next_chunk(left)
        return self._lines.popleft()

    def read_lines(self, n: int, timeout: float = 5.0) -> list[bytes]:
        deadline = time.monotonic() + timeout
        lines = []
        for _ in range(n):
            line = self.read_line(max(deadline - time.monotonic(), 0.001))
            if line is None:
                break
            lines.append(line)
        return lines

    def read_to_end(self, timeout: float = 10.0, max_bytes: int = 256 << 20) -> list[bytes]:
        """Every remaining line until the body ends."""
        deadline = time.monotonic() + timeout
        lines = []
        total = 0
        while True:
            line = self.read_line(max(deadline - time.monotonic(), 0.001))
            if line is None:
                return lines
            total += len(line)
            if total > max_bytes:
                raise AssertionError("stream did not end")
            lines.append(line)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self) -> StreamClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ChunkedReader:
    """Decodes HTTP/1.1 chunks from a socket into NDJSON lines (raw bytes kept)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""
        self.body = b""
        self.lines: list[bytes] = []

    def read(self, n: int, timeout: float = 10.0) -> list[bytes]:
        """Reads until ``n`` lines arrived in all (fewer when the connection ends)."""
        deadline = time.monotonic() + timeout
        while len(self.lines) < n:
            self.sock.settimeout(max(deadline - time.monotonic(), 0.001))
            data = self.sock.recv(1 << 16)
            if not data:
                break
            self.buf += data
            while b"\r\n" in self.buf:
                head, rest = self.buf.split(b"\r\n", 1)
                size = int(head, 16)
                if len(rest) < size + 2:
                    break
                assert rest[size : size + 2] == b"\r\n", "chunk framing"
                self.body += rest[:size]
                self.buf = rest[size + 2 :]
            *complete, self.body = self.body.split(b"\n")
            self.lines.extend(line + b"\n" for line in complete)
        return self.lines

    def events(self) -> list[dict]:
        return [json.loads(line) for line in self.lines if b"timestampNano" in line]
