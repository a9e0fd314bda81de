"""Error answers: YuniKorn's JSON errors for handlers, httprouter's plain answers for routing.

Two kinds of failure, answered the way yunikorn-core answers them:

- A handler fails (a DAO lookup error, a bad parameter, a bug): a JSON ``YAPIError`` body
  with the status, and ``writeHeaders``' content type and CORS headers.
- No handler matches: ``julienschmidt/httprouter`` with its defaults decides, in its order
  (see :class:`HttpRouterFallback`): a trailing-slash redirect, a fixed-path (case and
  ``CleanPath``) redirect, an ``OPTIONS`` answer with ``Allow``, a plain-text 405 with
  ``Allow``, or the plain-text ``404 page not found``. None of these is JSON.
"""

from __future__ import annotations

import logging
import posixpath
import uuid
from collections.abc import Iterable
from typing import Final

from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException
from werkzeug.routing import Map

from pyscheduler.dao.errors import DAOError

from pyscheduler_web.http import HTTPError, cors_methods_of_rule, error_response, go_redirect

__all__ = ["HttpRouterFallback", "install_error_handlers"]

log = logging.getLogger(__name__)

_PLAIN: Final = "text/plain; charset=utf-8"


def _plain(status: int, text: str) -> Response:
    """Go's ``http.Error``: the text and a newline, plain text, ``nosniff``."""
    response = Response(text + "\n", status=status)
    response.headers["Content-Type"] = _PLAIN
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


def clean_path(path: str) -> str:
    """httprouter's ``CleanPath``: ``path.Clean`` that keeps a trailing slash."""
    if path == "":
        return "/"
    if not path.startswith("/"):
        path = "/" + path
    cleaned = posixpath.normpath(path)
    if cleaned.startswith("//"):
        cleaned = "/" + cleaned.lstrip("/")
    if path.endswith("/") and cleaned != "/":
        cleaned += "/"
    return cleaned


class HttpRouterFallback:
    """What httprouter does when no route matches the method and path exactly.

    Its ``ServeHTTP``, with ``RedirectTrailingSlash``, ``RedirectFixedPath``,
    ``HandleMethodNotAllowed`` and ``HandleOPTIONS`` on:

    1. Only if some route has the request's method, and the method is not CONNECT and the path
       not ``/``: a route of that method matching the path with its trailing slash removed
       (or added) is a redirect there; else a route of that method matching the cleaned path
       case-insensitively (parameters kept as written, trailing slash fixed) is a redirect
       there. The code is 301 for GET and 308 otherwise; the query string is kept.
    2. ``OPTIONS`` on a path that routes of other methods match: 200, ``Allow``, no body.
    3. Another method on such a path: 405 ``Method Not Allowed`` with ``Allow``.
    4. Otherwise 404 ``404 page not found``.

    ``Allow`` lists the matching routes' methods and ``OPTIONS``, sorted (``GET, OPTIONS``).
    """

    def __init__(self, url_map: Map) -> None:
        self._url_map = url_map
        self._routes: list[tuple[frozenset[str], tuple[str | None, ...]]] | None = None

    def _table(self) -> list[tuple[frozenset[str], tuple[str | None, ...]]]:
        if self._routes is None:
            routes = []
            for rule in self._url_map.iter_rules():
                # Segments: a string is static, None is a parameter (one non-empty segment).
                segments = tuple(None if s.startswith("<") else s for s in rule.rule.split("/")[1:])
                routes.append((frozenset(rule.methods or ()), segments))
            self._routes = routes
        return self._routes

    @staticmethod
    def _match(pattern: tuple[str | None, ...], parts: list[str], fold: bool) -> str | None:
        if len(pattern) != len(parts):
            return None
        fixed = []
        for want, got in zip(pattern, parts):
            if want is None:
                if got == "":
                    return None
                fixed.append(got)
            elif want == got or (fold and want.lower() == got.lower()):
                fixed.append(want)
            else:
                return None
        return "/" + "/".join(fixed)

    def methods_matching(self, path: str) -> set[str]:
        """Methods of the routes that match ``path`` exactly."""
        parts = path.split("/")[1:]
        return {m for methods, pattern in self._table() if self._match(pattern, parts, False) for m in methods}

    def _find(self, path: str, method: str, fold: bool) -> str | None:
        parts = path.split("/")[1:]
        for methods, pattern in self._table():
            if method in methods:
                found = self._match(pattern, parts, fold)
                if found is not None:
                    return found
        return None

    def _methods(self) -> set[str]:
        return {m for methods, _ in self._table() for m in methods}

    def redirect_target(self, method: str, path: str) -> str | None:
        if method == "CONNECT" or path == "/" or method not in self._methods():
            return None
        # RedirectTrailingSlash (exact, case-sensitive).
        other = path[:-1] if path.endswith("/") else path + "/"
        if other and self._find(other, method, False) is not None:
            return other
        # RedirectFixedPath: the cleaned path, case-insensitively, with the slash fixed too.
        cleaned = clean_path(path)
        for candidate in (cleaned, cleaned[:-1] if cleaned.endswith("/") and cleaned != "/" else cleaned + "/"):
            found = self._find(candidate, method, True)
            if found is not None:
                return found
        return None

    def answer(self, method: str, path: str, query: str) -> Response:
        target = self.redirect_target(method, path)
        if target is not None:
            return go_redirect(target, 301 if method == "GET" else 308, query)
        allowed = self.methods_matching(path) if path != "*" else set()
        allowed.discard("OPTIONS")
        if method == "OPTIONS":
            if allowed:
                response = Response(status=200)
                del response.headers["Content-Type"]  # Go sends none with an empty body
                response.headers["Allow"] = _allow(allowed)
                return response
        else:
            allowed.discard(method)
            if allowed:
                response = _plain(405, "Method Not Allowed")
                response.headers["Allow"] = _allow(allowed)
                return response
        return _plain(404, "404 page not found")


def _allow(methods: Iterable[str]) -> str:
    return ", ".join(sorted({*methods, "OPTIONS"}))


def install_error_handlers(app: Flask) -> HttpRouterFallback:
    """Routing fallbacks (404/405) and JSON errors for handler failures."""
    fallback = HttpRouterFallback(app.url_map)

    def routing_failed(err: HTTPException) -> Response | HTTPException:
        if request.url_rule is not None:
            # A handler raised it: answer in JSON like every other handler error.
            return error_response(err.code or 500, err.description or "", _cors())
        return fallback.answer(request.method, request.path, request.query_string.decode("latin-1"))

    def http_error(err: HTTPError) -> Response:
        return error_response(err.status, err.message, _cors())

    def unexpected(err: Exception) -> Response | HTTPException:
        if isinstance(err, HTTPException):
            if request.url_rule is None:
                return err
            return error_response(err.code or 500, err.description or "", _cors())
        # The client learns that it failed and an id to quote; the details stay in the log.
        error_id = uuid.uuid4().hex[:12]
        log.exception("internal error %s: handler for %s %s failed", error_id, request.method, request.path)
        return error_response(500, f"internal error (id {error_id})", _cors())

    app.register_error_handler(404, routing_failed)
    app.register_error_handler(405, routing_failed)
    app.register_error_handler(HTTPError, http_error)

    def dao_failed(err: DAOError) -> Response:
        return error_response(err.status, err.message, _cors())

    app.register_error_handler(DAOError, dao_failed)
    app.register_error_handler(Exception, unexpected)
    return fallback


def _cors() -> str:
    rule = request.url_rule
    return cors_methods_of_rule(rule.methods if rule is not None else None)
