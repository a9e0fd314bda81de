"""HTTP building blocks shared by the blueprints: YuniKorn's response headers, JSON bodies,
error bodies, Go-compatible parameter parsing, redirects and the gzip rule.

Everything here follows yunikorn-core's ``pkg/webservice`` (see
``shared/spec/yunikorn/rest.md``, "Server and router behaviour" and "Error body"):

- every JSON answer carries ``writeHeaders``' four headers (content type and CORS), with
  ``Access-Control-Allow-Methods: GET, OPTIONS`` on GET routes and ``OPTIONS, POST`` on POST
  routes, and its body ends with a newline (Go's ``json.Encoder``);
- errors are ``{"status_code", "message", "description"}`` (the last two omitted when empty;
  ``description`` repeats ``message``, as YuniKorn's handlers never wrap an error);
- bodies of 1400 bytes or more are gzipped (fastest level) when the client accepts gzip,
  with ``Content-Encoding`` and ``Vary``; the event stream never is.
"""

from __future__ import annotations

import gzip
import html
from collections.abc import Collection, Mapping
from typing import Any, Final
from urllib.parse import quote

import orjson
from flask import Response, current_app, request
from werkzeug.datastructures import Headers

from pyscheduler.common.errors import SchedulerError
from pyscheduler.common.goparse import NumError, go_quote, parse_uint

__all__ = [
    "GET_METHODS",
    "JSON_CONTENT_TYPE",
    "MIN_COMPRESSION_SIZE",
    "POST_METHODS",
    "HTTPError",
    "accepts_gzip",
    "compress_response",
    "cors_methods_of_rule",
    "error_body",
    "error_response",
    "go_redirect",
    "json_body",
    "json_bytes_response",
    "json_response",
    "parse_uint_param",
    "query_unescape",
    "web_state",
    "write_headers",
]

JSON_CONTENT_TYPE: Final = "application/json; charset=UTF-8"
#: ``Access-Control-Allow-Methods`` of GET routes and of POST routes (YuniKorn's writeHeaders).
GET_METHODS: Final = "GET, OPTIONS"
POST_METHODS: Final = "OPTIONS, POST"
_ALLOW_HEADERS: Final = "X-Requested-With,Content-Type,Accept,Origin"
#: YuniKorn's gzip middleware buffers this much before it decides to compress.
MIN_COMPRESSION_SIZE: Final = 1400
#: The one path the gzip middleware skips.
STREAM_PATH: Final = "/ws/v1/events/stream"


class HTTPError(SchedulerError):
    """An error answer in YuniKorn's JSON shape, raised by a handler or a parser."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


#: The largest request body accepted (a queues.yaml for validate-conf), whatever its framing.
MAX_BODY_BYTES: Final = 16 << 20
_READ_SIZE: Final = 1 << 16


def read_body(limit: int = MAX_BODY_BYTES) -> bytes:
    """The request body, at most ``limit`` bytes, read from the server's own input stream so
    that a chunked body is bounded as strictly as one with a Content-Length.

    Raises :class:`HTTPError` 413 (``Request Entity Too Large``) for a longer body, before
    reading it when its Content-Length says so, and 400 for a body the server cannot decode (a
    malformed chunk size, a connection closed half-way): never a body cut short and treated as
    whole."""
    length = request.content_length
    if length is not None and length > limit:
        raise HTTPError(413, f"request body larger than {limit} bytes")
    stream = request.environ["wsgi.input"]
    parts: list[bytes] = []
    size = 0
    try:
        while size <= limit:
            part = stream.read(min(_READ_SIZE, limit + 1 - size))
            if not part:
                break
            parts.append(part)
            size += len(part)
    except Exception as err:  # the server's body parser: bad framing, a peer gone mid-body
        raise HTTPError(400, f"malformed request body ({type(err).__name__})") from None
    if size > limit:
        raise HTTPError(413, f"request body larger than {limit} bytes")
    return b"".join(parts)


def web_state() -> Any:
    """The running app's :class:`~pyscheduler_web.app.WebState` (service, streams, metrics)."""
    return current_app.extensions["pyscheduler"]


# -- headers and bodies ------------------------------------------------------------------------


def write_headers(headers: Any, methods: str = GET_METHODS) -> None:
    """YuniKorn's ``writeHeaders``: JSON content type and the CORS headers."""
    headers["Content-Type"] = JSON_CONTENT_TYPE
    headers["Access-Control-Allow-Origin"] = "*"
    headers["Access-Control-Allow-Methods"] = methods
    headers["Access-Control-Allow-Headers"] = _ALLOW_HEADERS


def json_body(data: Any, *, indent: bool = False) -> bytes:
    """``data`` as JSON with Go's trailing newline (orjson: ints stay ints, no floats sneak in)."""
    return orjson.dumps(data, option=orjson.OPT_INDENT_2 if indent else 0) + b"\n"


def json_bytes_response(body: bytes, status: int = 200, methods: str = GET_METHODS) -> Response:
    """A ready-made JSON body (e.g. the event store's batch body) sent as is."""
    response = Response(body, status=status)
    write_headers(response.headers, methods)
    return response


def json_response(data: Any, status: int = 200, methods: str = GET_METHODS, *, indent: bool = False) -> Response:
    return json_bytes_response(json_body(data, indent=indent), status, methods)


def error_body(status: int, message: str) -> dict[str, Any]:
    """``dao.YAPIError``: ``message`` and ``description`` are omitempty."""
    body: dict[str, Any] = {"status_code": status}
    if message:
        body["message"] = message
        body["description"] = message
    return body


def error_response(status: int, message: str, methods: str = GET_METHODS) -> Response:
    return json_response(error_body(status, message), status, methods)


def cors_methods_of_rule(methods: Collection[str] | None) -> str:
    """The ``Access-Control-Allow-Methods`` value for a route answering ``methods``."""
    return POST_METHODS if methods and "POST" in methods else GET_METHODS


# -- redirects ---------------------------------------------------------------------------------

_STATUS_TEXT: Final = {301: "Moved Permanently", 308: "Permanent Redirect"}


def go_redirect(path: str, code: int, query: str = "") -> Response:
    """Go's ``http.Redirect`` to a local path: ``Location`` (path percent-encoded, query kept)
    and, for GET, the small HTML body ``<a href="...">Moved Permanently</a>.``."""
    location = quote(path, safe="/:@!$&'()*+,;=-._~")
    if query:
        location += "?" + query
    response = Response(status=code)
    response.headers["Location"] = location
    method = request.method
    if method in ("GET", "HEAD"):
        response.headers["Content-Type"] = "text/html; charset=utf-8"
    if method == "GET":
        response.set_data(f'<a href="{html.escape(location)}">{_STATUS_TEXT.get(code, "Redirect")}</a>.\n\n')
    # Werkzeug would turn a relative Location into an absolute URL; Go sends it as is.
    response.autocorrect_location_header = False
    return response


# -- parameters --------------------------------------------------------------------------------


def parse_uint_param(raw: str) -> int:
    """Go's ``strconv.ParseUint(raw, 10, 64)``; a bad value is a 400 with Go's own message
    (``strconv.ParseUint: parsing "-1": invalid syntax``), as YuniKorn answers."""
    try:
        return parse_uint(raw, 64)
    except NumError as err:
        raise HTTPError(400, str(err)) from None


_HEX: Final = frozenset("0123456789abcdefABCDEF")


def query_unescape(text: str) -> str:
    """Go's ``url.QueryUnescape``: ``+`` is a space, ``%XX`` a byte; a broken escape is a 400
    with Go's message (``invalid URL escape "%zz"``). YuniKorn applies it to queue, user and
    group path parameters on top of the router's own path decoding."""
    if "%" not in text and "+" not in text:
        return text
    out = bytearray()
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == "%":
            if i + 2 >= n or text[i + 1] not in _HEX or text[i + 2] not in _HEX:
                raise HTTPError(400, f"invalid URL escape {go_quote(text[i:i + 3])}")
            out.append(int(text[i + 1 : i + 3], 16))
            i += 3
            continue
        out += b" " if c == "+" else c.encode("utf-8", "surrogatepass")
        i += 1
    return out.decode("utf-8", "replace")


# -- gzip --------------------------------------------------------------------------------------


def accepts_gzip(accept_encoding: str) -> bool:
    """True when ``Accept-Encoding`` lists ``gzip`` with a q-value other than 0."""
    for item in accept_encoding.split(","):
        name, _, params = item.partition(";")
        if name.strip().lower() != "gzip":
            continue
        for param in params.split(";"):
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    if float(value.strip()) == 0.0:
                        return False
                except ValueError:
                    return False
        return True
    return False


def compress_response(response: Response, headers: Mapping[str, str] | Headers, path: str) -> Response:
    """The gzip middleware (an ``after_request`` hook): compress a complete body of at least
    :data:`MIN_COMPRESSION_SIZE` bytes for a client that accepts gzip."""
    if (
        path == STREAM_PATH
        or response.is_streamed
        or response.direct_passthrough
        or "Content-Encoding" in response.headers
        or not accepts_gzip(headers.get("Accept-Encoding", ""))
    ):
        return response
    data = response.get_data()
    if len(data) < MIN_COMPRESSION_SIZE:
        return response
    response.set_data(gzip.compress(data, compresslevel=1, mtime=0))
    response.headers["Content-Encoding"] = "gzip"
    response.vary.add("Accept-Encoding")
    return response
