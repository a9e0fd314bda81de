"""REST requests: how many, by endpoint, method and status code, and how long each took.

- ``pyscheduler_web_http_requests_total`` (counter; labels ``endpoint``, ``method``, ``code``).
- ``pyscheduler_web_http_request_duration_seconds`` (histogram; label ``endpoint``): from the
  request's arrival to its response being ready to send; for a streamed answer (the event
  stream, chunked lists) that is until the stream opens, not until it ends.

``endpoint`` is the matched route's rule, its template (``/ws/v1/partition/<partition>/queues``),
never the path asked for, and ``<unmatched>`` when no route matched (a 404, a redirect, a 405):
the app's routes bound it. ``method`` is one of the HTTP methods a route can answer, else
``other``; ``code`` the status sent. So the series are at most routes × methods × codes used.

:func:`instrument_requests` is the one hook, called by the app factory: it registers the
collector on the app's :class:`~pyscheduler_web.metrics.Metrics` and times each request from a
``before_request`` to an ``after_request`` function (a few microseconds per request).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Final

from flask import Flask, Response, g, request
from prometheus_client import Counter, Histogram
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from pyscheduler_web.metrics.source import MetricsInputs

if TYPE_CHECKING:
    from pyscheduler_web.metrics import Metrics

__all__ = ["REQUEST_DURATION_BUCKETS_S", "UNMATCHED", "RequestMetrics", "instrument_requests"]

#: Seconds: most answers take a millisecond or two; large lists and what-if runs take seconds.
REQUEST_DURATION_BUCKETS_S: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                                     10.0, 30.0)
#: The endpoint of a request no route matched.
UNMATCHED: Final = "<unmatched>"
_METHODS: Final = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class RequestMetrics(Collector):
    """The request counter and duration histogram (thread-safe: gunicorn's threads observe)."""

    def __init__(self, inputs: MetricsInputs | None = None) -> None:
        self.requests = Counter("pyscheduler_web_http_requests", "REST requests answered, by endpoint, method and code.",
                                ["endpoint", "method", "code"], registry=None)
        self.duration = Histogram("pyscheduler_web_http_request_duration_seconds",
                                  "Time to answer a REST request (a stream: until it opens), by endpoint.",
                                  ["endpoint"], buckets=REQUEST_DURATION_BUCKETS_S, registry=None)

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        yield from self.requests.collect()
        yield from self.duration.collect()

    def observe(self, endpoint: str, method: str, code: int, seconds: float) -> None:
        self.requests.labels(endpoint, method if method in _METHODS else "other", str(code)).inc()
        self.duration.labels(endpoint).observe(seconds)


def instrument_requests(app: Flask, metrics: Metrics) -> RequestMetrics:
    """Counts and times every request of ``app`` on ``metrics`` (see the module doc)."""
    collector = metrics.register(RequestMetrics)
    assert isinstance(collector, RequestMetrics)
    perf_counter = time.perf_counter

    @app.before_request
    def start_timer() -> None:
        g.pyscheduler_request_started = perf_counter()

    @app.after_request
    def observe_request(response: Response) -> Response:
        started: float | None = g.get("pyscheduler_request_started")
        rule = request.url_rule
        collector.observe(rule.rule if rule is not None else UNMATCHED, request.method, response.status_code,
                          perf_counter() - started if started is not None else 0.0)
        return response

    return collector
