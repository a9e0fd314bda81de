"""What every blueprint's handlers use: the served service and context, and :func:`get_json`
(a GET route returning plain data). Kept apart from the package's ``__init__``, which imports
every blueprint, so a blueprint never imports its own package back."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from flask import Blueprint, Response

from pyscheduler import dao
from pyscheduler.service import SchedulerService
from pyscheduler_web.http import json_response, web_state

__all__ = ["ctx", "dao", "get_json", "service"]



def service() -> SchedulerService:
    """The served scheduler (the core's :class:`~pyscheduler.service.SchedulerService`)."""
    served: SchedulerService = web_state().service
    return served


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
