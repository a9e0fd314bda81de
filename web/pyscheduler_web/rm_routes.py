"""The HTTP endpoints of the RMs attached to the served scheduler, mounted on the app.

An RM declares its endpoints without Flask (:class:`pyscheduler.service.Route`: a GET
answering a JSON object); :func:`mount_rm_routes` adds each as a rule of the app, once the
service has started and its RMs are attached. The Flask endpoint name is
``rm<N>_<route name>`` (N: the RM's place in attach order), so two RMs may use the same route
names; two RMs never serve the same path (the service refuses that at attach), and no RM
takes a path of the REST API's own (ValueError: the app factory then stops the service).

An RM that only ever runs under this web layer (the REST tests' scenario RMs, the REST
benchmark) may also be a Flask extension (:class:`FlaskExtensionRM`): its ``init_app(app)``
is called once, after its routes are mounted, and may add what a
:class:`~pyscheduler.service.Route` does not describe (other methods, query parameters,
bodies, WSGI middleware). An RM meant for any embedding declares routes instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol, runtime_checkable

from flask import Flask, Response

from pyscheduler.service import SchedulerService
from pyscheduler_web.http import json_response

__all__ = ["FlaskExtensionRM", "mount_rm_routes"]


@runtime_checkable
class FlaskExtensionRM(Protocol):
    """An attached RM that extends the served Flask app itself (web-only RMs; see the module doc)."""

    def init_app(self, app: Flask) -> None: ...


def mount_rm_routes(app: Flask, service: SchedulerService) -> int:
    """Mount what the service's RMs declare, then let the Flask extension RMs extend the app;
    the number of routes mounted and extensions initialised."""
    mounted = 0
    own = {rule.rule for rule in app.url_map.iter_rules()}
    for index, attachment in enumerate(service.attachments):
        for route in attachment.routes:
            if route.rule in own:
                raise ValueError(f"{attachment.name}: {route.rule} is a path of the REST API's own")
            app.add_url_rule(route.rule, f"rm{index}_{route.name}", _json_view(route.view), methods=["GET"])
            mounted += 1
        rm: object = attachment.rm
        if isinstance(rm, FlaskExtensionRM):
            rm.init_app(app)
            mounted += 1
    return mounted


def _json_view(view: Callable[[], Mapping[str, object]]) -> Callable[[], Response]:
    def respond() -> Response:
        return json_response(dict(view()))

    return respond
