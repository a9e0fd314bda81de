"""The Flask application factory.

``create_app()`` builds the app around one scheduler (the core's
:class:`~pyscheduler.service.SchedulerService`: RM proxy, cluster context, scheduling loop,
history, health checks, and the embedded RMs), starts it in the calling process and then
mounts the routes its RMs declare (:mod:`pyscheduler_web.rm_routes`). Under gunicorn it runs
in the worker (never ``preload_app``), which the gunicorn configuration keeps to exactly one: each worker
would otherwise hold a scheduler of its own. The service is stopped by the worker's exit
hook (:mod:`pyscheduler_web.gunicorn_conf`) and, failing that, at interpreter exit.

Routing follows yunikorn-core's ``julienschmidt/httprouter`` rather than Flask's defaults:
a route answers exactly its methods (no implicit HEAD or OPTIONS), and what no route matches
is decided by :class:`~pyscheduler_web.errors.HttpRouterFallback` (trailing-slash and
fixed-path redirects, OPTIONS, 405, plain 404).
"""

from __future__ import annotations

import atexit
import logging
from dataclasses import dataclass
from typing import Any

from flask import Flask, Response, request
from werkzeug.http import HTTP_STATUS_CODES
from werkzeug.routing import Rule

from pyscheduler.service import SchedulerService
from pyscheduler_web.blueprints import all_blueprints
from pyscheduler_web.errors import HttpRouterFallback, install_error_handlers
from pyscheduler_web.http import MAX_BODY_BYTES, compress_response
from pyscheduler_web.metrics import Metrics
from pyscheduler_web.metrics.rest import instrument_requests
from pyscheduler_web.metrics.rm import register_rm_metrics
from pyscheduler_web.rm_routes import mount_rm_routes
from pyscheduler_web.service import ServeOptions, build_service
from pyscheduler_web.streams import StreamRegistry

__all__ = ["WebState", "create_app"]

log = logging.getLogger(__name__)


class ExactMethodsRule(Rule):
    """A rule that answers only the methods it names: Werkzeug adds HEAD to every GET rule,
    httprouter does not (a HEAD on a GET route is a 405 in YuniKorn)."""

    def __init__(self, string: str, *args: Any, **kwargs: Any) -> None:
        methods = kwargs.get("methods")
        explicit_head = methods is not None and any(m.upper() == "HEAD" for m in methods)
        super().__init__(string, *args, **kwargs)
        if not explicit_head and self.methods is not None:
            self.methods.discard("HEAD")


class RestFlask(Flask):
    url_rule_class = ExactMethodsRule


@dataclass
class WebState:
    """What the handlers reach through ``current_app.extensions["pyscheduler"]``."""

    service: SchedulerService
    streams: StreamRegistry
    metrics: Metrics
    router: HttpRouterFallback


def create_app(options: ServeOptions | None = None, *, service: SchedulerService | None = None, start: bool = True) -> Flask:
    """Build the app and (``start``) start its scheduler.

    ``options`` defaults to :meth:`ServeOptions.from_env`; ``service`` to the service built
    from them (:func:`~pyscheduler_web.service.build_service`). The service is reachable as
    ``app.extensions["pyscheduler"].service``. With ``start``, a service that fails to start
    (an RM that fails to attach) raises here, and so does a declared route that cannot be
    mounted (the service is stopped first).
    """
    if service is None:
        service = build_service(options or ServeOptions.from_env())
    app = RestFlask("pyscheduler_web", static_folder=None)
    app.config.update(PROVIDE_AUTOMATIC_OPTIONS=False, MAX_CONTENT_LENGTH=MAX_BODY_BYTES)
    # httprouter cleans paths itself (and redirects); Werkzeug must not merge slashes first.
    app.url_map.merge_slashes = False
    for blueprint in all_blueprints():
        app.register_blueprint(blueprint)
    router = install_error_handlers(app)
    streams = StreamRegistry(lambda: service.event_system.settings)
    state = WebState(service, streams, Metrics(service, streams), router)
    app.extensions["pyscheduler"] = state
    instrument_requests(app, state.metrics)

    @app.after_request
    def finish_response(response: Response) -> Response:
        # Go's reason phrases ("301 Moved Permanently", Werkzeug sends them upper-case), then
        # the gzip middleware.
        response.status = f"{response.status_code} {HTTP_STATUS_CODES.get(response.status_code, 'Unknown')}"
        return compress_response(response, request.headers, request.path)

    if start:
        service.start()
        atexit.register(service.stop)
        try:
            mount_rm_routes(app, service)
            register_rm_metrics(state.metrics, service.attachments)
        except BaseException:
            service.stop()
            raise
    return app
