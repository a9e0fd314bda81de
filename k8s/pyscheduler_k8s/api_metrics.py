"""The shim's metrics of its calls to the API server: what the served scheduler exports on
``/ws/v1/metrics`` (docs/metrics.md) when the shim is attached.

:class:`KubeApiMetrics` is shared by every :class:`~pyscheduler_k8s.kubeapi.KubeApi` one attach
makes (an API's client outlives the shims a replica starts and stops as it leads), which
records into it. What attach returns (a replica, a sole shim, several clusters, a hub: each an
:class:`ApiMeasured`) holds it as ``api_metrics`` and is thereby a
:class:`~pyscheduler.service.rm.MeasuredRM`, giving its values as plain data at each scrape:

- ``pyscheduler_k8s_api_requests_total`` (counter; ``verb``, ``resource``, ``code``): every
  answered or failed request, a watch counted when it opens; ``code`` is the HTTP status, or
  ``<error>`` when the server could not be reached (client-go's ``rest_client_requests_total``).
- ``pyscheduler_k8s_api_errors_total`` (counter; same labels): those that failed (a status of
  300 or more, ``<error>``, or an ``ERROR`` event ending a watch, with its code).
- ``pyscheduler_k8s_binding_latency_milliseconds`` (histogram): a binding's round trip, from
  the ``pods/binding`` request to the API server's answer, whatever the answer.
- ``pyscheduler_k8s_bindings_total`` (counter; ``result``: ``bound`` or ``failed``).
- ``pyscheduler_k8s_watches_started_total`` (counter; ``resource``): watches opened; past the
  first of each informer, each is a restart (a server timeout, an expiry, a lost connection).

The labels are bounded: ``verb`` is one of Kubernetes' verbs, ``resource`` the resource (and
subresource) of the path with namespaces and object names left out (the shim uses a fixed set),
``code`` the statuses seen. Recording takes a lock for a dictionary update.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from typing import Final

from pyscheduler.common.histogram import LatencyHistogram
from pyscheduler.service.rm import RMMetric

__all__ = ["BINDING_BUCKETS_MS", "UNREACHABLE", "ApiMeasured", "KubeApiMetrics", "api_resource", "api_verb"]

#: Milliseconds: a binding takes a few ms on an idle API server, tens to hundreds on a busy one.
BINDING_BUCKETS_MS: Final = (1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0)
#: The ``code`` of a request that got no answer (client-go writes the same).
UNREACHABLE: Final = "<error>"

_VERBS: Final = {"POST": "create", "PUT": "update", "PATCH": "patch"}


def _parts(path: str) -> list[str]:
    """The path's segments after the API group and version, namespace left out."""
    parts = path.split("?", 1)[0].strip("/").split("/")
    if parts[:1] == ["api"]:
        parts = parts[2:]
    elif parts[:1] == ["apis"]:
        parts = parts[3:]
    if len(parts) >= 3 and parts[0] == "namespaces":
        parts = parts[2:]
    return parts


def api_resource(path: str) -> str:
    """``pods``, ``pods/binding``, ``leases``...: the resource of a path, with its subresource."""
    parts = _parts(path)
    if not parts or not parts[0]:
        return ""
    return parts[0] + (f"/{parts[2]}" if len(parts) >= 3 else "")


def api_verb(method: str, path: str, *, watch: bool = False) -> str:
    """Kubernetes' verb of a request: ``get`` or ``list``, ``watch``, ``create``..."""
    if watch:
        return "watch"
    named = len(_parts(path)) >= 2
    if method == "GET":
        return "get" if named else "list"
    if method == "DELETE":
        return "delete" if named else "deletecollection"
    return _VERBS.get(method, method.lower())


class KubeApiMetrics:
    """Counters and the binding histogram (see the module doc); safe to use from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: Counter[tuple[str, str, str]] = Counter()
        self._errors: Counter[tuple[str, str, str]] = Counter()
        self._bindings: Counter[str] = Counter()
        self._watches: Counter[str] = Counter()
        self._binding_latency = LatencyHistogram(BINDING_BUCKETS_MS)

    def request(self, method: str, path: str, status: int, *, watch: bool = False) -> None:
        """One request answered with ``status`` (0: no answer)."""
        key = (api_verb(method, path, watch=watch), api_resource(path), str(status) if status else UNREACHABLE)
        with self._lock:
            self._requests[key] += 1
            if not 200 <= status < 300:
                self._errors[key] += 1
            if watch and status and status < 300:
                self._watches[key[1]] += 1

    def watch_ended_with(self, path: str, status: int) -> None:
        """An open watch ended by an ``ERROR`` event carrying ``status`` (410: expired)."""
        with self._lock:
            self._errors[("watch", api_resource(path), str(status) if status else UNREACHABLE)] += 1

    def binding(self, bound: bool, milliseconds: float) -> None:
        """One ``pods/binding`` request and how long its answer took."""
        with self._lock:
            self._bindings["bound" if bound else "failed"] += 1
            self._binding_latency.observe(milliseconds)

    def metrics(self) -> Sequence[RMMetric]:
        with self._lock:
            requests, errors = sorted(self._requests.items()), sorted(self._errors.items())
            bindings = tuple(((result,), float(self._bindings[result])) for result in ("bound", "failed"))
            watches = sorted(self._watches.items())
            latency = (tuple(self._binding_latency.cumulative()), self._binding_latency.sum_ms)
        labels = ("verb", "resource", "code")
        return (
            RMMetric("pyscheduler_k8s_api_requests", "counter", "Requests to the API server, by verb, resource and code.",
                     labels, tuple((key, float(n)) for key, n in requests)),
            RMMetric("pyscheduler_k8s_api_errors", "counter",
                     "Failed requests to the API server (status 300 or more, no answer, a watch's ERROR event).",
                     labels, tuple((key, float(n)) for key, n in errors)),
            RMMetric("pyscheduler_k8s_binding_latency_milliseconds", "histogram",
                     "Round trip of a pod's binding: from the pods/binding request to the API server's answer.",
                     histograms=(((), *latency),)),
            RMMetric("pyscheduler_k8s_bindings", "counter", "Pod bindings requested, by result (bound, failed).",
                     ("result",), bindings),
            RMMetric("pyscheduler_k8s_watches_started", "counter",
                     "Watches opened on the API server, by resource (past an informer's first: restarts).",
                     ("resource",), tuple(((resource,), float(n)) for resource, n in watches)),
        )


class ApiMeasured:
    """What the shim's attach returns: a :class:`~pyscheduler.service.rm.MeasuredRM` exporting
    the :class:`KubeApiMetrics` its API clients record into (``api_metrics``, set by attach;
    None: nothing to export)."""

    api_metrics: KubeApiMetrics | None = None

    def metrics(self) -> Sequence[RMMetric]:
        return self.api_metrics.metrics() if self.api_metrics is not None else ()
