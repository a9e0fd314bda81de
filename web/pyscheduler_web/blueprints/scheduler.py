"""Cluster-wide routes: clusters, configuration, validation, health, utilisation, history,
metrics.

- ``GET /ws/v1/clusters``
- ``GET /ws/v1/config`` (``Accept: application/json`` for JSON, YAML otherwise)
- ``POST /ws/v1/validate-conf`` (the body is a queues.yaml; always 200)
- ``GET /ws/v1/scheduler/healthcheck``
- ``GET /ws/v1/scheduler/node-utilizations``
- ``GET /ws/v1/history/apps``, ``GET /ws/v1/history/containers``
- ``GET /ws/v1/metrics`` (Prometheus text; OpenMetrics when asked for)
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, request

from pyscheduler_web.blueprints.common import ctx, dao, get_json, service
from pyscheduler_web.http import POST_METHODS, json_response, read_body, web_state, write_headers

bp = Blueprint("scheduler", __name__)

YAML_CONTENT_TYPE = "application/x-yaml; charset=UTF-8"


@get_json(bp, "/ws/v1/clusters")
def clusters() -> Any:
    return dao.clusters(ctx())


def _wants_json() -> bool:
    """YuniKorn picks JSON for ``Accept: application/json``; a list naming it counts too."""
    accept = request.headers.get("Accept", "")
    return any(part.split(";")[0].strip().lower() == "application/json" for part in accept.split(","))


@get_json(bp, "/ws/v1/config")
def config() -> Any:
    as_json = _wants_json()
    result = dao.config(ctx(), as_json)
    if as_json or not isinstance(result, str):
        return result
    response = Response(result if result.endswith("\n") else result + "\n")
    write_headers(response.headers)
    response.headers["Content-Type"] = YAML_CONTENT_TYPE
    return response


@bp.post("/ws/v1/validate-conf")
def validate_conf() -> Response:
    body = read_body()
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as err:
        return json_response({"allowed": False, "reason": f"not UTF-8 text (byte {err.start})"}, methods=POST_METHODS)
    return json_response(dao.validate_conf(text), methods=POST_METHODS)


@get_json(bp, "/ws/v1/scheduler/healthcheck")
def healthcheck() -> Any:
    return dao.healthcheck(ctx())


@get_json(bp, "/ws/v1/scheduler/node-utilizations")
def node_utilizations() -> Any:
    return dao.node_utilizations(ctx())


@get_json(bp, "/ws/v1/history/apps")
def history_apps() -> Any:
    return dao.history_apps(service().history)


@get_json(bp, "/ws/v1/history/containers")
def history_containers() -> Any:
    return dao.history_containers(service().history)


@bp.get("/ws/v1/metrics")
def metrics() -> Response:
    body, content_type = web_state().metrics.exposition(request.headers.get("Accept"))
    return Response(body, content_type=content_type)
