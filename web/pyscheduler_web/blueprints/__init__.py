"""The REST routes, one blueprint per resource family.

Handlers only translate HTTP to the query functions of :mod:`pyscheduler.dao` (which build
the DAO dicts from values copied under the partition's lock) and back: path and query parameters in, a JSON
body (or a YuniKorn error) out. Each blueprint's module doc lists its routes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from flask import Blueprint, Response

from pyscheduler import dao
from pyscheduler_web.http import json_response, web_state

__all__ = ["all_blueprints", "ctx", "dao", "get_json", "service"]



def service() -> Any:
    """The served :class:`~pyscheduler_web.service.SchedulerService`."""
    return web_state().service


def ctx() -> Any:
    """The served cluster context."""
    return web_state().service.context


def get_json(bp: Blueprint, rule: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a GET route whose handler returns plain data (sent as JSON) or a Response."""

    def register(handler: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(handler)
        def view(**params: Any) -> Response:
            result = handler(**params)
            return result if isinstance(result, Response) else json_response(result)

        bp.add_url_rule(rule, view_func=view, methods=["GET"])
        return handler

    return register


def all_blueprints() -> list[Blueprint]:
    """Every blueprint of the service, in registration order."""
    from pyscheduler_web.blueprints import (
        applications,
        debug,
        events,
        nodes,
        partitions,
        queues,
        reporters,
        scheduler,
        usage,
    )

    return [
        scheduler.bp,
        partitions.bp,
        queues.bp,
        nodes.bp,
        applications.bp,
        usage.bp,
        events.bp,
        reporters.bp,
        debug.bp,
    ]

