"""The shim's API metrics (pyscheduler_k8s.api_metrics): what a request path counts as, what
KubeApi records for its calls (here to a port nothing listens on: no answer), and how the
served scheduler exports an attached RM's metrics (pyscheduler_web.metrics.rm). The served
path, with a real API server, is tests/test_dashboard_metrics.py."""

from __future__ import annotations

import socket
from types import SimpleNamespace

import pytest
from prometheus_client.parser import text_string_to_metric_families

from pyscheduler.service.rm import MeasuredRM
from pyscheduler_k8s.api_metrics import UNREACHABLE, KubeApiMetrics, api_resource, api_verb
from pyscheduler_k8s.kubeapi import ClusterAccess, KubeApi, KubeApiError
from pyscheduler_k8s.sole import SoleShim
from pyscheduler_web.metrics import Metrics
from pyscheduler_web.metrics.rm import register_rm_metrics


@pytest.mark.parametrize(("method", "path", "watch", "verb", "resource"), [
    ("GET", "/api/v1/pods", False, "list", "pods"),
    ("GET", "/api/v1/pods", True, "watch", "pods"),
    ("GET", "/api/v1/namespaces/ns-1/pods/web-0", False, "get", "pods"),
    ("POST", "/api/v1/namespaces/ns-1/pods/web-0/binding", False, "create", "pods/binding"),
    ("PATCH", "/api/v1/namespaces/ns-1/pods/web-0/status", False, "patch", "pods/status"),
    ("DELETE", "/api/v1/namespaces/ns-1/pods/web-0", False, "delete", "pods"),
    ("GET", "/api/v1/namespaces", False, "list", "namespaces"),
    ("GET", "/api/v1/namespaces/ns-1", False, "get", "namespaces"),
    ("PUT", "/apis/coordination.k8s.io/v1/namespaces/ns-1/leases/pyscheduler", False, "update", "leases"),
    ("GET", "/apis/scheduling.x-k8s.io/v1alpha1/podgroups?limit=500", False, "list", "podgroups"),
])
def test_a_path_counts_as_its_verb_and_resource_without_names(method: str, path: str, watch: bool, verb: str,
                                                              resource: str) -> None:
    assert (api_verb(method, path, watch=watch), api_resource(path)) == (verb, resource)


def _values(metrics: KubeApiMetrics) -> dict[str, dict[tuple[str, ...], float]]:
    return {m.name: dict(m.values) for m in metrics.metrics() if m.kind != "histogram"}


def test_requests_errors_watches_and_bindings_are_counted() -> None:
    metrics = KubeApiMetrics()
    assert isinstance(metrics, MeasuredRM)
    metrics.request("GET", "/api/v1/nodes", 200, watch=True)
    metrics.request("GET", "/api/v1/nodes", 200, watch=True)
    metrics.request("POST", "/api/v1/namespaces/a/pods/p/binding", 201)
    metrics.request("POST", "/api/v1/namespaces/a/pods/q/binding", 409)
    metrics.watch_ended_with("/api/v1/nodes", 410)
    metrics.binding(True, 3.0)
    metrics.binding(False, 700.0)
    values = _values(metrics)
    assert values["pyscheduler_k8s_api_requests"] == {("watch", "nodes", "200"): 2, ("create", "pods/binding", "201"): 1,
                                                      ("create", "pods/binding", "409"): 1}
    assert values["pyscheduler_k8s_api_errors"] == {("create", "pods/binding", "409"): 1, ("watch", "nodes", "410"): 1}
    assert values["pyscheduler_k8s_watches_started"] == {("nodes",): 2}
    assert values["pyscheduler_k8s_bindings"] == {("bound",): 1, ("failed",): 1}
    (latency,) = [m for m in metrics.metrics() if m.kind == "histogram"]
    ((labels, buckets, total),) = latency.histograms
    assert labels == () and total == 703.0
    assert dict(buckets)["5.0"] == 1 and dict(buckets)["1000.0"] == 2 and buckets[-1] == ("+Inf", 2)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_kube_api_records_its_calls_even_without_an_answer() -> None:
    metrics = KubeApiMetrics()
    api = KubeApi(ClusterAccess(server=f"http://127.0.0.1:{_closed_port()}"), metrics)
    with pytest.raises(KubeApiError):
        api.bind("ns-1", "web-0", "node-1")
    with pytest.raises(KubeApiError):
        list(api.watch("/api/v1/pods", "1"))
    values = _values(metrics)
    assert values["pyscheduler_k8s_api_errors"] == {("create", "pods/binding", UNREACHABLE): 1,
                                                    ("watch", "pods", UNREACHABLE): 1}
    assert values["pyscheduler_k8s_bindings"] == {("bound",): 0, ("failed",): 1}
    assert values["pyscheduler_k8s_watches_started"] == {}  # none opened
    assert KubeApi(ClusterAccess(server="http://127.0.0.1:1")).metrics is not metrics  # its own by default


def test_the_served_scheduler_exports_a_measured_attachment() -> None:
    metrics = KubeApiMetrics()
    metrics.request("POST", "/api/v1/namespaces/a/pods/p/binding", 201)
    metrics.binding(True, 12.0)
    served = Metrics(SimpleNamespace(), None, sources=())  # type: ignore[arg-type]
    attachments = [SimpleNamespace(rm=metrics), SimpleNamespace(rm=object())]
    assert register_rm_metrics(served, attachments) == 1  # type: ignore[arg-type]
    body, _ = served.exposition(None)
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(body.decode()) for s in family.samples}
    assert samples[("pyscheduler_k8s_api_requests_total",
                    (("code", "201"), ("resource", "pods/binding"), ("verb", "create")))] == 1
    assert samples[("pyscheduler_k8s_bindings_total", (("result", "bound"),))] == 1
    assert samples[("pyscheduler_k8s_binding_latency_milliseconds_count", ())] == 1
    assert samples[("pyscheduler_k8s_binding_latency_milliseconds_bucket", (("le", "25.0"),))] == 1
    assert samples[("pyscheduler_k8s_binding_latency_milliseconds_sum", ())] == 12.0
    metrics.binding(False, 1.0)  # read at the next scrape
    body, _ = served.exposition(None)
    assert 'pyscheduler_k8s_bindings_total{result="failed"} 1.0' in body.decode()


def test_what_attach_returns_exports_the_api_metrics_it_was_given() -> None:
    runner = SoleShim(lambda: None)  # type: ignore[arg-type,return-value]  # never started
    assert isinstance(runner, MeasuredRM) and runner.metrics() == ()
    runner.api_metrics = KubeApiMetrics()
    runner.api_metrics.binding(True, 2.0)
    names = [m.name for m in runner.metrics()]
    assert "pyscheduler_k8s_bindings" in names and "pyscheduler_k8s_binding_latency_milliseconds" in names
