"""Debug routes outside ``/ws/v1``, and YuniKorn's deprecated redirects to them.

- ``GET /debug/stack``: every thread's Python stack, as text (YuniKorn dumps its goroutines).
  Unlike YuniKorn, which labels the dump JSON, it is sent as ``text/plain``.
- ``GET /debug/fullstatedump``: the state dump, pretty-printed JSON; one dump at a time.
  ``eventStreams`` lists the open REST event streams.
- ``GET /ws/v1/stack`` and ``GET /ws/v1/fullstatedump``: 301 to the two above.
"""

from __future__ import annotations

import sys
import threading
import traceback

from flask import Blueprint, Response

from pyscheduler_web.blueprints.common import ctx, dao, service
from pyscheduler_web.http import go_redirect, json_response, web_state, write_headers

bp = Blueprint("debug", __name__)

_dump_lock = threading.Lock()


@bp.get("/debug/stack")
def stack() -> Response:
    names = {t.ident: t.name for t in threading.enumerate()}
    parts = []
    for ident, frame in sys._current_frames().items():
        parts.append(f"thread {ident} [{names.get(ident, '?')}]:\n")
        parts.extend(traceback.format_stack(frame))
        parts.append("\n")
    response = Response("".join(parts))
    write_headers(response.headers)
    response.headers["Content-Type"] = "text/plain; charset=utf-8"
    return response


@bp.get("/debug/fullstatedump")
def fullstatedump() -> Response:
    with _dump_lock:
        svc = service()
        dump = dao.fullstatedump(ctx(), svc.scheduler, svc.history)
        if isinstance(dump, dict):
            dump["eventStreams"] = web_state().streams.describe()
        return json_response(dump, indent=True)


@bp.get("/ws/v1/stack")
def stack_redirect() -> Response:
    return go_redirect("/debug/stack", 301)


@bp.get("/ws/v1/fullstatedump")
def fullstatedump_redirect() -> Response:
    return go_redirect("/debug/fullstatedump", 301)
