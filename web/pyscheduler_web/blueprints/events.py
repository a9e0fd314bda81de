"""Events: the ring buffer in one response, or as a live NDJSON stream.

- ``GET /ws/v1/events/batch?start=&count=``: the event store's own batch body, sent as the
  bytes it returns (never decoded). ``start`` defaults to 0; ``count`` defaults to
  ``event.RESTResponseSize`` and is clamped to it; ``count=0`` is a 400; a value that is not
  an unsigned integer is a 400 with Go's ``strconv.ParseUint`` message; tracking disabled
  is a 500 ``Event tracking is disabled``. A ``start`` the ring does not hold gives
  ``"EventRecords":null`` with the current lowest and highest ids.
- ``GET /ws/v1/events/stream?count=`` (or ``?start=``): see :mod:`pyscheduler_web.streams`.
  Checks in YuniKorn's order: tracking disabled (500), stream limits (503
  ``Too many streaming connections``), then the parameters (400). ``count`` replays that many
  past events first (YuniKorn). ``start=ID`` (pyscheduler) resumes at event id ``ID`` with no
  gap: the id after the last one a client saw, e.g. ``HighestID + 1`` of a batch; an id the
  ring no longer (or not yet) holds is a 400 naming the lowest and highest ids held.
  ``count`` and ``start`` cannot be combined.
"""

from __future__ import annotations

from flask import Blueprint, Response, request

from pyscheduler.events import EventIdOutOfRangeError

from pyscheduler_web.blueprints.common import service
from pyscheduler_web.http import HTTPError, json_body, json_bytes_response, parse_uint_param, web_state, write_headers
from pyscheduler_web.streams import StreamBody, stream_body

bp = Blueprint("events", __name__)

TRACKING_DISABLED = "Event tracking is disabled"
TOO_MANY_STREAMS = "Too many streaming connections"


@bp.get("/ws/v1/events/batch")
def batch() -> Response:
    events = service().event_system
    if not events.tracking_enabled:
        raise HTTPError(500, TRACKING_DISABLED)
    limit = events.settings.rest_response_size
    count = limit
    raw_count = request.args.get("count", "")
    if raw_count != "":
        count = parse_uint_param(raw_count)
        if count == 0:
            raise HTTPError(400, '0 is not a valid value for "count"')
        count = min(count, limit)
    start = 0
    raw_start = request.args.get("start", "")
    if raw_start != "":
        start = parse_uint_param(raw_start)
    return json_bytes_response(events.batch_body(start, count))


@bp.get("/ws/v1/events/stream")
def stream() -> Response:
    svc = service()
    events = svc.event_system
    if not events.tracking_enabled:
        raise HTTPError(500, TRACKING_DISABLED)
    registry = web_state().streams
    slot = registry.acquire(request.remote_addr or "")
    if slot is None:
        raise HTTPError(503, TOO_MANY_STREAMS)
    try:
        raw_count = request.args.get("count", "")
        raw_start = request.args.get("start", "")
        count = parse_uint_param(raw_count) if raw_count != "" else 0
        if raw_start != "":
            if raw_count != "":
                raise HTTPError(400, '"start" and "count" cannot be used together')
            start = parse_uint_param(raw_start)
            try:
                subscription = events.subscribe_from(start)
            except EventIdOutOfRangeError as err:
                lowest, highest = err.args[2], err.args[3]
                raise HTTPError(
                    400,
                    f"event id {start} is not available: the lowest event id held is {lowest} "
                    f"and the highest is {highest}",
                ) from None
        else:
            subscription = events.subscribe(count)
    except BaseException:
        registry.release(slot)
        raise
    # gunicorn's client socket: the stream writer writes the body to it.
    sock = request.environ.get("gunicorn.socket")
    first_line = json_body({"InstanceUUID": events.instance_uuid})

    def release() -> None:  # idempotent: closing the subscription and the slot twice is harmless
        subscription.close()
        registry.release(slot)

    # gunicorn frames the body in chunks for HTTP/1.1 and ends an HTTP/1.0 one by closing.
    chunked = request.environ.get("SERVER_PROTOCOL") != "HTTP/1.0"
    body = stream_body(first_line, subscription, release, svc.stopping, sock, events.open_stream, chunked)
    response = Response(StreamBody(body, release), direct_passthrough=True)
    write_headers(response.headers)
    return response

