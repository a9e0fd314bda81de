"""What if: ``POST /ws/v1/partition/<partition>/whatif`` (docs/whatif.md).

The body is a JSON request (:mod:`pyscheduler.sim.whatif_request`), or a pod or Job manifest
(``{"manifest": ...}``, translated by :mod:`pyscheduler_web.whatif_manifest`); the answer is
:func:`pyscheduler.sim.whatif.what_if`'s, computed on a copy of the partition (the live
scheduler is only read, under its partition's lock, while it is copied).

Bounds the service adds to the request's own: the body is at most the service's limit (16 MiB,
:func:`~pyscheduler_web.http.read_body`: 413 beyond); one what-if runs at a time in the process
(another one meanwhile is a 429 with ``Retry-After``), so a flood of requests holds one request
thread and one copy, never more; and a run's wall-clock budget is at most
``PYSCHEDULER_WHATIF_MAX_BUDGET`` seconds (default 10; a request without ``budgetSeconds`` gets
``PYSCHEDULER_WHATIF_BUDGET``, default 3). A run cut short by its budget is still a 200 whose
answer says ``complete: false`` and why.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

from flask import Blueprint, Response

from pyscheduler.sim.whatif import WhatIfLimits, what_if
from pyscheduler_web.blueprints.common import ctx
from pyscheduler_web.http import POST_METHODS, HTTPError, json_response, read_body
from pyscheduler_web.whatif_manifest import request_of_manifest

__all__ = ["bp", "limits"]

bp = Blueprint("whatif", __name__)

#: One what-if at a time in the process (see the module doc).
_RUNNING = threading.BoundedSemaphore(1)


def _seconds_from_env(name: str, default: float) -> float:
    text = os.environ.get(name, "")
    try:
        value = float(text) if text else default
    except ValueError:
        return default
    return value if value > 0 else default


def limits() -> WhatIfLimits:
    """The service's what-if bounds, from the environment."""
    max_budget = _seconds_from_env("PYSCHEDULER_WHATIF_MAX_BUDGET", 10.0)
    return WhatIfLimits(budget_seconds=min(_seconds_from_env("PYSCHEDULER_WHATIF_BUDGET", 3.0), max_budget),
                        max_budget_seconds=max_budget)


def _json_body() -> Any:
    body = read_body()
    try:
        return json.loads(body)
    except UnicodeDecodeError as err:
        raise HTTPError(400, f"the body is not UTF-8 (byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise HTTPError(400, f"the body is not JSON: {err.msg} at line {err.lineno} column {err.colno}") from None
    except RecursionError:
        raise HTTPError(400, "the body is nested too deeply") from None


@bp.post("/ws/v1/partition/<partition>/whatif")
def whatif(partition: str) -> Response:
    body = _json_body()
    if isinstance(body, dict) and "manifest" in body:
        body = request_of_manifest(body)
    if not _RUNNING.acquire(blocking=False):
        response = json_response({"status_code": 429, "message": "another what-if is running: try again shortly",
                                  "description": "another what-if is running: try again shortly"}, 429,
                                 methods=POST_METHODS)
        response.headers["Retry-After"] = "1"
        return response
    try:
        answer = what_if(ctx(), partition, body, limits())
    finally:
        _RUNNING.release()
    return json_response(answer, methods=POST_METHODS)
