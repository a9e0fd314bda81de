"""The Grafana dashboard (k8s/chart/dashboards/pyscheduler.json) reads only metrics the served
scheduler exports: every metric name of every PromQL expression in it (tests/promql_names.py
finds them) is a sample name of a real ``/ws/v1/metrics`` scrape, taken from ``pyscheduler serve
--rm pyscheduler_k8s:attach`` (gunicorn on loopback) on a real API server with kwok nodes after
plain pods and a gang job ran through it, so the histograms, the per-queue series and the
shim's API series have samples; every metric of the scheduler's own is in docs/metrics.md. The
checker itself is shown to catch a misspelled name, and the dashboard to be what Grafana
imports (schema, a Prometheus data source variable, the partition and queue variables, a row
per area)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kube_cluster import KubeCluster
from kube_served import create_pods, list_pods, pod_body, running, serving, small_cluster
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families
from prometheus_client.parser import text_string_to_metric_families
from promql_names import dashboard_expressions, metric_names, missing_names
from web_helpers import Server

pytestmark = pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")

DASHBOARD = Path(__file__).resolve().parent.parent / "k8s" / "chart" / "dashboards" / "pyscheduler.json"
METRICS_DOC = Path(__file__).resolve().parent.parent / "docs" / "metrics.md"
NAMESPACE = "dash"
QUEUES = """\
partitions:
  - name: default
    placementrules:
      - name: provided
        create: false
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: batch
            resources: {guaranteed: {vcore: 2, memory: 2Gi}, max: {vcore: 8}}
          - name: gangs
            properties: {application.sort.policy: fifo}
"""
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


# -- the checker and the dashboard's form (no cluster) --------------------------------------------------


def test_the_tokenizer_reads_metric_names_only() -> None:
    expr = ('histogram_quantile(0.99, sum by (le, endpoint) (rate(http_seconds_bucket{instance=~"$instance",'
            'code!="500"}[$__rate_interval] offset 1h))) / on (instance) group_left (pod) '
            'sum without (le) (up{job="a"}) > bool 0.5 and max_over_time(queue_depth[1h:5m]) '
            'or count(count by (state) (apps)) unless vector(1) * 2e3 - time()')
    assert metric_names(expr) == {"http_seconds_bucket", "up", "queue_depth", "apps"}
    assert metric_names("label_values(nodes{cluster=~\"$cluster\"}, partition)") == {"nodes"}
    assert metric_names("sum(rate(a_total[5m])) by (queue)") == {"a_total"}
    with pytest.raises(ValueError, match="unknown PromQL function"):
        metric_names("rates(a_total[5m])")
    with pytest.raises(ValueError, match="unbalanced"):
        metric_names("sum(rate(a_total[5m])")


def test_the_checker_catches_a_misspelled_metric_name(tmp_path: Path) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    every = {name for expr in dashboard_expressions(dashboard) for name in metric_names(expr)}
    assert missing_names(DASHBOARD, every) == {}
    text = DASHBOARD.read_text().replace("pyscheduler_k8s_bindings_total", "pyscheduler_k8s_binding_total")
    assert text != DASHBOARD.read_text()
    misspelled = tmp_path / "dashboard.json"
    misspelled.write_text(text)
    missing = missing_names(misspelled, every)
    assert list(missing) == ["pyscheduler_k8s_binding_total"]
    assert all("pyscheduler_k8s_binding_total" in expr for expr in missing["pyscheduler_k8s_binding_total"])
    # A histogram read by its family name instead of a sample name is missing too.
    assert missing_names(DASHBOARD, every - {"yunikorn_scheduler_scheduling_latency_milliseconds_bucket"}) != {}


def _panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for panel in dashboard["panels"]:
        out.append(panel)
        out.extend(panel.get("panels") or ())
    return out


def test_the_dashboard_is_a_grafana_dashboard_with_a_row_per_area() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["schemaVersion"] >= 39 and dashboard["uid"] == "pyscheduler"
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    assert {"cluster", "partition", "queue"} <= set(variables)
    panels = _panels(dashboard)
    assert len({p["id"] for p in panels}) == len(panels)
    rows = [p["title"] for p in panels if p["type"] == "row"]
    assert rows == ["Cluster", "Queues", "Scheduling", "Preemption", "Gangs", "Event store", "REST and streams",
                    "Kubernetes", "Process"]
    for panel in panels:
        grid = panel["gridPos"]
        assert 0 <= grid["x"] and grid["x"] + grid["w"] <= 24
        if panel["type"] != "row":
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"} and panel["targets"]
    cells = [(x, y) for p in panels for x in range(p["gridPos"]["x"], p["gridPos"]["x"] + p["gridPos"]["w"])
             for y in range(p["gridPos"]["y"], p["gridPos"]["y"] + p["gridPos"]["h"])]
    assert len(cells) == len(set(cells)), "panels overlap"
    queue_exprs = " ".join(t["expr"] for p in panels for t in p.get("targets") or ())
    for state in ("allocated", "guaranteed", "max", "pending"):
        assert f'state="{state}"' in queue_exprs
    assert 'queue=~"$queue"' in queue_exprs and 'partition=~"$partition"' in queue_exprs


# -- against a served scheduler ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeCluster]:
    with small_cluster(tmp_path_factory.mktemp("kube-dashboard"), ["dash-0", "dash-1"], NAMESPACE) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def server(kube: KubeCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(kube, tmp_path_factory.mktemp("serve-dashboard"), QUEUES) as running_server:
        yield running_server


def _gang(app: str, executors: int) -> list[dict[str, Any]]:
    groups = json.dumps([{"name": "driver", "minMember": 1, "minResource": {"cpu": "500m"}},
                         {"name": "executor", "minMember": executors, "minResource": {"cpu": "500m"}}])

    def member(name: str, group: str) -> dict[str, Any]:
        return pod_body(name, app, "root.gangs", "500m", annotations={
            "yunikorn.apache.org/task-groups": groups, "yunikorn.apache.org/task-group-name": group,
            "yunikorn.apache.org/schedulingPolicyParameters": "placeholderTimeoutInSeconds=120"})

    return [member(f"{app}-driver", "driver")] + [member(f"{app}-exec-{n}", "executor") for n in range(executors)]


def _scrape(server: Server) -> Samples:
    answer = server.get("/ws/v1/metrics")
    assert answer.status_code == 200
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(answer.text) for s in family.samples}


def _members_running(kube: KubeCluster, pods: int) -> bool:
    listed = [p for p in list_pods(kube, NAMESPACE) if p["metadata"]["labels"].get("placeholder") != "true"]
    return len(listed) == pods and all(running(p) for p in listed)


def test_every_metric_the_dashboard_reads_is_exported_by_a_served_scheduler(kube: KubeCluster, server: Server) -> None:
    create_pods(kube, NAMESPACE, [pod_body(f"batch-{n}", "batch-app", "root.batch", "1") for n in range(3)])
    create_pods(kube, NAMESPACE, _gang("gang-app", 2))
    kube.wait_for("every pod running", lambda: _members_running(kube, 6), timeout=120)
    where = (("cluster", "pyscheduler-k8s"), ("partition", "default"))
    kube.wait_for("the placeholders replaced", lambda: _scrape(server).get(
        ("pyscheduler_gang_placeholders_replaced_total", where)) == 3, timeout=60)
    samples = _scrape(server)

    missing = missing_names(DASHBOARD, {name for name, _ in samples})
    assert missing == {}, f"the dashboard reads metrics the scheduler does not export: {missing}"
    # Prometheus asks for OpenMetrics: the same sample names there.
    answer = server.get("/ws/v1/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    assert answer.headers["Content-Type"].startswith("application/openmetrics-text")
    open_metrics = {s.name for family in openmetrics_families(answer.text) for s in family.samples}
    assert missing_names(DASHBOARD, open_metrics) == {}

    # Every metric of the scheduler's own is in the metrics reference.
    reference = METRICS_DOC.read_text()
    families = {f.name for f in text_string_to_metric_families(server.get("/ws/v1/metrics").text)}
    undocumented = sorted(name for name in families if name.startswith(("pyscheduler_", "yunikorn_"))
                          and not name.endswith("_created")  # a counter's or histogram's creation time
                          and not re.search(rf"`{name}(_total)?`", reference))
    assert undocumented == [], f"not in docs/metrics.md: {undocumented}"

    # The per-queue series: configured guaranteed and max, and what the pods use.
    def queue(path: str, state: str, resource: str) -> float:
        return samples[("yunikorn_queue_resource", (*where, ("queue", path), ("resource", resource), ("state", state)))]

    assert queue("root.batch", "guaranteed", "vcore") == 2000 and queue("root.batch", "max", "vcore") == 8000
    assert queue("root.batch", "allocated", "vcore") == 3000
    assert queue("root.gangs", "allocated", "vcore") == 1500
    assert samples[("yunikorn_queue_app", (*where, ("queue", "root.batch"), ("state", "running")))] == 1
    assert samples[("pyscheduler_gang_applications", (*where, ("state", "running")))] == 1
    assert samples[("pyscheduler_gang_placeholders_allocated_total", where)] == 3
    # The shim's: 3 pods, 3 placeholders and the 3 members that replaced them asked for a binding.
    # A placeholder the core replaced before its own binding reached the API server is refused
    # (409, being deleted): that binding counts as failed, its member's as bound.
    bound = samples[("pyscheduler_k8s_bindings_total", (("result", "bound"),))]
    failed = samples[("pyscheduler_k8s_bindings_total", (("result", "failed"),))]
    assert bound >= 6 and bound + failed >= 9, (bound, failed)
    assert samples[("pyscheduler_k8s_binding_latency_milliseconds_count", ())] >= bound
    assert samples[("pyscheduler_k8s_api_requests_total",
                    (("code", "201"), ("resource", "pods/binding"), ("verb", "create")))] >= bound
    assert samples[("pyscheduler_k8s_watches_started_total", (("resource", "pods"),))] >= 1
    # The Lease did not exist when the replica first read it: an API error, by verb, resource and code.
    assert samples[("pyscheduler_k8s_api_errors_total", (("code", "404"), ("resource", "leases"), ("verb", "get")))] >= 1
    # The REST layer's: the scrapes themselves, by their route.
    route = ("endpoint", "/ws/v1/metrics")
    assert samples[("pyscheduler_web_http_requests_total", (("code", "200"), route, ("method", "GET")))] >= 1
    assert samples[("pyscheduler_web_http_request_duration_seconds_count", (route,))] >= 1
