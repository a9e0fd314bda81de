"""``pyscheduler healthcheck``: asks a served scheduler whether it is healthy (a container's health command).

The image's ``HEALTHCHECK`` runs it (see ``Containerfile`` and docs/image.md), so it follows the
health-command contract of Docker and podman: exit 0 healthy, exit 1 unhealthy, never anything else
for a verdict (argparse's exit 2 is only for a command line it cannot parse).

- ``GET URL``, where URL is ``--url``, else ``$PYSCHEDULER_HEALTHCHECK_URL``, else
  :data:`DEFAULT_URL` (the scheduler the image's default command serves on port 9080), each
  connect and read waiting at most ``--timeout`` seconds (the container engine's own health
  timeout bounds the whole command).
- Healthy (exit 0, ``healthy`` on standard output): a 200 whose JSON body has ``"Healthy": true``
  (YuniKorn's ``SchedulerHealthDAOInfo``, which the service answers with status 200 whether healthy
  or not).
- Unhealthy (exit 1, the reason on standard error): ``"Healthy": false`` (each failed check named with
  its diagnosis), a 404 (the service answers it before its first health check ran), any other
  status, a body that is not the health document, a refused or timed-out connection.

Only the standard library, and no part of the scheduler: the command runs every health interval
beside a busy scheduler, so it starts quickly and loads nothing it does not need.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Final

__all__ = ["DEFAULT_TIMEOUT", "DEFAULT_URL", "URL_VARIABLE", "Verdict", "probe", "run"]

DEFAULT_URL: Final = "http://127.0.0.1:9080/ws/v1/scheduler/healthcheck"
#: The environment variable naming the URL when ``--url`` is not given: a container started with
#: another ``--bind`` sets it once, and the image's unchanged health command follows.
URL_VARIABLE: Final = "PYSCHEDULER_HEALTHCHECK_URL"
DEFAULT_TIMEOUT: Final = 5.0
#: The most of a body read: the health document is a few hundred bytes; a bigger answer is not it.
_MAX_BODY: Final = 1 << 20


@dataclass(frozen=True)
class Verdict:
    """What one probe found: healthy or not, and the line that says why."""

    healthy: bool
    message: str


def probe(url: str, timeout: float) -> Verdict:
    """One ``GET url``; the verdict on its answer (see the module's contract)."""
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read(_MAX_BODY)
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return Verdict(False, f"{url}: 404, no health check has run yet (or this is not a pyscheduler)")
        return Verdict(False, f"{url}: HTTP {exc.code} {exc.reason}")
    except (urllib.error.URLError, OSError) as exc:  # refused, unresolvable, timed out
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        return Verdict(False, f"{url}: not reached: {reason}")
    return _judge(url, body)


def _judge(url: str, body: bytes) -> Verdict:
    try:
        document = json.loads(body)
    except ValueError:
        return Verdict(False, f"{url}: the answer is not JSON")
    healthy = document.get("Healthy") if isinstance(document, dict) else None
    if not isinstance(healthy, bool):
        return Verdict(False, f"{url}: the answer has no boolean 'Healthy'")
    if healthy:
        return Verdict(True, "healthy")
    checks = document.get("HealthChecks")
    failed = [c for c in checks if isinstance(c, dict) and not c.get("Succeeded")] if isinstance(checks, list) else []
    details = "; ".join(f"{c.get('Name')}: {c.get('DiagnosisMessage') or c.get('Description')}" for c in failed)
    return Verdict(False, f"unhealthy: {details or 'no failed check listed'}")


def run(argv: list[str]) -> int:
    """``pyscheduler healthcheck [--url URL] [--timeout SECONDS]``: 0 healthy, 1 not."""
    parser = argparse.ArgumentParser(
        prog="pyscheduler healthcheck",
        description="Ask a served scheduler's /ws/v1/scheduler/healthcheck: exit 0 and print 'healthy' when it "
        "answers healthy, exit 1 with the reason on standard error otherwise (unhealthy, no check run yet, not "
        "reached in time). The container image's health command.",
    )
    parser.add_argument(
        "--url", default=os.environ.get(URL_VARIABLE) or DEFAULT_URL,
        help=f"the health check's URL (default: ${URL_VARIABLE}, else {DEFAULT_URL})",
    )
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
        help=f"how long to wait for the answer (default {DEFAULT_TIMEOUT:g})",
    )
    args = parser.parse_args(argv)
    if not args.timeout > 0:
        parser.error("--timeout must be more than 0")
    verdict = probe(args.url, args.timeout)
    print(verdict.message, file=sys.stdout if verdict.healthy else sys.stderr)
    return 0 if verdict.healthy else 1
