"""``pyscheduler healthcheck`` (pyscheduler.healthprobe): the container image's health command.

Run as a real ``python -m pyscheduler.cli healthcheck`` process against a small HTTP server on
loopback that answers what each test sets: exit 0 only for a 200 saying ``"Healthy": true``, exit 1
for everything else, with the reason on standard error. tests/test_image.py runs it inside the
image against a served scheduler.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pyscheduler.healthprobe import DEFAULT_URL, URL_VARIABLE

REPO = Path(__file__).resolve().parent.parent
PATH = "/ws/v1/scheduler/healthcheck"


@dataclass
class Answer:
    """What the fake scheduler answers next: a status, a body, after a delay."""

    status: int = 200
    body: bytes = b""
    delay: float = 0.0


def _health(healthy: bool, *failed: tuple[str, str]) -> bytes:
    checks = [{"Name": "Scheduling errors", "Succeeded": True, "Description": "d", "DiagnosisMessage": "0 errors"}]
    checks += [{"Name": name, "Succeeded": False, "Description": "d", "DiagnosisMessage": why} for name, why in failed]
    return json.dumps({"Healthy": healthy, "HealthChecks": checks}).encode()


@pytest.fixture
def server() -> Iterator[tuple[str, Answer]]:
    """The fake scheduler's health URL and the answer it gives (the test changes it)."""
    answer = Answer(body=_health(True))

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            time.sleep(answer.delay)
            try:
                self.send_response(answer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the command gave up first (the timeout test): nobody to answer

        def log_message(self, *_: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}{PATH}", answer
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def _healthcheck(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != URL_VARIABLE} | (env or {})
    return subprocess.run([sys.executable, "-m", "pyscheduler.cli", "healthcheck", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=60, env=environment)


def test_a_healthy_scheduler_exits_0(server: tuple[str, Answer]) -> None:
    url, _ = server
    done = _healthcheck("--url", url)
    assert (done.returncode, done.stdout, done.stderr) == (0, "healthy\n", "")


def test_an_unhealthy_scheduler_exits_1_naming_the_failed_checks(server: tuple[str, Answer]) -> None:
    url, answer = server
    answer.body = _health(False, ("Failed nodes", "There were 2 failed nodes"), ("Negative resources", "[n1]"))
    done = _healthcheck("--url", url)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip() == "unhealthy: Failed nodes: There were 2 failed nodes; Negative resources: [n1]"


@pytest.mark.parametrize(("status", "body", "message"), [
    (404, b'{"status_code": 404}', "404, no health check has run yet"),
    (500, b"{}", "HTTP 500"),
    (200, b"<html>a proxy</html>", "the answer is not JSON"),
    (200, b'{"healthy": true}', "no boolean 'Healthy'"),
    (200, b'["Healthy"]', "no boolean 'Healthy'"),
])
def test_anything_but_a_healthy_document_exits_1(server: tuple[str, Answer], status: int, body: bytes,
                                                 message: str) -> None:
    url, answer = server
    answer.status, answer.body = status, body
    done = _healthcheck("--url", url)
    assert done.returncode == 1 and done.stdout == ""
    assert message in done.stderr


def test_a_scheduler_not_answering_in_time_exits_1(server: tuple[str, Answer]) -> None:
    url, answer = server
    answer.delay = 3.0
    started = time.monotonic()
    done = _healthcheck("--url", url, "--timeout", "0.5")
    assert done.returncode == 1 and "not reached" in done.stderr and "timed out" in done.stderr
    assert time.monotonic() - started < 3.0, "it gave up after its timeout, not when the server answered"


def test_nothing_listening_exits_1(server: tuple[str, Answer]) -> None:
    url, _ = server
    closed = url.replace(url.split(":")[2].split("/")[0], "1")  # port 1: nothing listens on loopback
    done = _healthcheck("--url", closed)
    assert done.returncode == 1 and "not reached" in done.stderr


def test_the_url_comes_from_the_environment_when_not_given(server: tuple[str, Answer]) -> None:
    url, answer = server
    assert _healthcheck(env={URL_VARIABLE: url}).returncode == 0
    answer.body = _health(False, ("Failed nodes", "1"))
    assert _healthcheck(env={URL_VARIABLE: url}).returncode == 1
    # --url wins over the environment.
    assert _healthcheck("--url", "http://127.0.0.1:1" + PATH, env={URL_VARIABLE: url}).stderr.startswith(
        "http://127.0.0.1:1")


def test_the_default_url_is_the_images_port() -> None:
    assert DEFAULT_URL == "http://127.0.0.1:9080/ws/v1/scheduler/healthcheck"
    done = _healthcheck("--help")
    assert done.returncode == 0 and URL_VARIABLE in done.stdout


def test_a_bad_timeout_is_a_usage_error() -> None:
    done = _healthcheck("--timeout", "0")
    assert done.returncode == 2 and "--timeout must be more than 0" in done.stderr


def test_the_command_is_listed_in_the_main_parser() -> None:
    from pyscheduler.cli import build_parser

    assert "healthcheck" in build_parser().format_help()
