"""The Helm chart (k8s/chart, docs/helm.md) rendered by a real helm (v3, built from its Go module
by tools/k8s/build.sh): its version is the project's; every value is commented in values.yaml
and listed in docs/helm.md; the values schema refuses unknown keys everywhere; ``helm lint``
passes with the defaults and with every optional part on; a typo in values (an unknown key, a
wrong type) fails lint and template with the schema's message; the rendered RBAC is exactly
k8s/deploy/'s (and the CRD and the agents' role too); the values reach the Deployment.
tests/test_helm_install.py installs it on a real API server."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from chart_values import CHART, DEPLOY, OPTIONS_ON, QUEUES, RELEASE, RELEASE_NAMESPACE, ROOT, SCHEDULER_NAME, \
    manifest, render
from helm_kit import Helm, helm, helm_path, only  # helm, helm_path: fixtures


# -- the chart itself ------------------------------------------------------------------------------


def test_the_chart_version_is_the_projects(helm: Helm) -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    project = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["package"]["version"]
    shim = tomllib.loads((ROOT / "k8s" / "pyproject.toml").read_text())["project"]["version"]
    assert chart["apiVersion"] == "v2" and chart["name"] == "pyscheduler"
    assert chart["version"] == chart["appVersion"] == project == shim
    deployment = only(render(helm), "Deployment")
    image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == f"localhost/pyscheduler:{project}"  # what `make image` builds
    assert "v3.22.0" in helm.run("version", "--short").stdout


def _leaves(values: dict[str, Any], prefix: str = "") -> Iterator[str]:
    """Every value's dotted name: a mapping with keys is walked, anything else is a value."""
    for key, value in values.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value and name not in _FREE_MAPS:
            yield from _leaves(value, name + ".")
        else:
            yield name


#: Values that are maps of the user's own keys (their default content is an example, not values).
_FREE_MAPS = {"resources", "podSecurityContext", "readinessProbe", "livenessProbe", "securityContext",
              "reporterAgent.resources", "reporterAgent.securityContext"}


def test_every_value_is_commented_and_documented() -> None:
    """Each value of values.yaml has a comment line right above it (or above its first line
    of a block), and docs/helm.md's table names it."""
    text = (CHART / "values.yaml").read_text()
    lines = text.splitlines()
    values = yaml.safe_load(text)
    docs = (ROOT / "docs" / "helm.md").read_text()
    undocumented, uncommented = [], []
    for name in _leaves(values):
        if f"`{name}`" not in docs:
            undocumented.append(name)
        *parents, key = name.split(".")
        indent = "  " * len(parents)
        # The key's line under its parents (the first one at that indent after the parent's).
        start = 0
        for depth, parent in enumerate(parents):
            start = next(i for i in range(start, len(lines)) if lines[i] == "  " * depth + f"{parent}:")
        line = next(i for i in range(start, len(lines)) if lines[i].startswith(f"{indent}{key}:"))
        if not lines[line - 1].strip().startswith("#"):
            uncommented.append(name)
    assert not uncommented, f"values without a comment: {uncommented}"
    assert not undocumented, f"values missing from docs/helm.md: {undocumented}"


def test_the_schema_refuses_unknown_keys_everywhere() -> None:
    """Every object of values.schema.json with named properties refuses others, and names
    every key values.yaml has."""
    schema = json.loads((CHART / "values.schema.json").read_text())
    open_objects = []

    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            if "properties" in node and node.get("additionalProperties") is not False:
                open_objects.append(where)
            for key, value in node.items():
                walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for n, value in enumerate(node):
                walk(value, f"{where}/{n}")

    walk(schema, "#")
    assert not open_objects, open_objects
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert set(values) <= set(schema["properties"])


def test_lint_passes_with_defaults_and_with_every_option_on(helm: Helm) -> None:
    for options in ([], OPTIONS_ON):
        done = helm.run("lint", "--strict", str(CHART), *options)
        assert "1 chart(s) linted, 0 chart(s) failed" in done.stdout, done.stdout


@pytest.mark.parametrize(("options", "message"), [
    (["--set", "replicas=3"], "additional properties 'replicas' not allowed"),
    (["--set", "image.repo=x"], "additional properties 'repo' not allowed"),
    (["--set", "reporterAgent.enable=true"], "additional properties 'enable' not allowed"),
    (["--set", "replicaCount=two"], "got string, want integer"),
    (["--set", "leaderElection.enabled=yes"], "got string, want boolean"),
    (["--set", "service.type=Headless"], "value must be one of"),
    (["--set", "schedulerNames[0]=Not_A_Name"], "does not match pattern"),
])
def test_a_typo_in_values_fails_lint_and_template(helm: Helm, options: list[str], message: str) -> None:
    for command in (["lint", str(CHART)], ["template", RELEASE, str(CHART)]):
        done = helm.run(*command, *options, check=False)
        assert done.returncode != 0, done.stdout
        assert "values don't meet the specifications of the schema" in done.stdout + done.stderr
        assert message in done.stdout + done.stderr, done.stdout + done.stderr


@pytest.mark.parametrize(("queues", "message"), [
    ("partitions: [name: default", "queues: not YAML"),
    ("queues: [{name: root}]", "queues: no partitions list"),
])
def test_queues_that_are_not_a_queue_configuration_fail(helm: Helm, tmp_path: Path, queues: str,
                                                         message: str) -> None:
    path = tmp_path / "queues.yaml"
    path.write_text(queues)
    done = helm.run("template", RELEASE, str(CHART), "--set-file", f"queues={path}", check=False)
    assert done.returncode != 0 and message in done.stderr, done.stderr


def test_replicas_need_leader_election_and_get_a_disruption_budget(helm: Helm) -> None:
    done = helm.run("template", RELEASE, str(CHART), "--set", "leaderElection.enabled=false", check=False)
    assert done.returncode != 0 and "needs leaderElection.enabled" in done.stderr, done.stderr
    alone = render(helm, "--set", "leaderElection.enabled=false", "--set", "replicaCount=1")
    env = only(alone, "Deployment")["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "PYSCHEDULER_K8S_LEADER_ELECTION", "value": "false"} in env
    # One replica: no disruption budget (it would block every drain); two: one evicted at a time.
    assert not [o for o in alone if o["kind"] == "PodDisruptionBudget"]
    assert only(render(helm), "PodDisruptionBudget")["spec"]["maxUnavailable"] == 1
    done = helm.run("template", RELEASE, str(CHART), "--set", "leaderElection.retryPeriod=12", check=False)
    assert done.returncode != 0 and "leaseDuration > renewDeadline > retryPeriod" in done.stderr, done.stderr


def _rules(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = only(objects, kind, name)["rules"]
    return rules


def test_the_rendered_rbac_is_the_manifests(helm: Helm) -> None:
    """The chart's roles are k8s/deploy/'s, rule for rule (the same verbs on the same
    resources), so the two cannot drift; the same for the agents' role and the CRD."""
    deploy = manifest(DEPLOY / "10-rbac.yaml")
    rendered = render(helm)
    assert _rules(rendered, "ClusterRole") == _rules(deploy, "ClusterRole")
    assert _rules(rendered, "Role") == _rules(deploy, "Role")
    account = only(rendered, "ServiceAccount")["metadata"]["name"]
    for binding in ("ClusterRoleBinding", "RoleBinding"):
        assert only(rendered, binding)["subjects"] == [
            {"kind": "ServiceAccount", "name": account, "namespace": RELEASE_NAMESPACE}]
    assert only(rendered, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == account
    with_agents = render(helm, "--set", "reporterAgent.enabled=true")
    agent = only(with_agents, "ServiceAccount", f"{RELEASE}-reporter-agent")["metadata"]["name"]
    assert _rules(with_agents, "ClusterRole", agent) == _rules(manifest(DEPLOY / "50-reporter-agent.yaml"),
                                                               "ClusterRole")
    assert only(with_agents, "DaemonSet")["spec"]["template"]["spec"]["serviceAccountName"] == agent
    crd = only(with_agents, "CustomResourceDefinition")
    assert crd["spec"] == only(manifest(DEPLOY / "40-customnoderesource-crd.yaml"), "CustomResourceDefinition")["spec"]
    without_crd = render(helm, "--set", "reporterAgent.enabled=true", "--set", "reporterAgent.installCRD=false")
    assert not [o for o in without_crd if o["kind"] == "CustomResourceDefinition"]
    assert not [o for o in rendered if o["kind"] in ("DaemonSet", "CustomResourceDefinition", "ServiceMonitor",
                                                     "PodMonitor") or o["metadata"]["name"].endswith("-dashboard")]


def test_the_rendered_deployment(helm: Helm, tmp_path: Path) -> None:
    """The values reach the Deployment: replicas and leader election, the rolling update that
    starts a new replica first, schedulerNames, the queues ConfigMap (also from --set-file),
    probes, scheduling constraints, extra arguments; the dashboard ConfigMap holds the chart's
    dashboard."""
    queues = tmp_path / "queues.yaml"
    queues.write_text(QUEUES)
    rendered = render(helm, "--set-file", f"queues={queues}", "--set", f"schedulerNames={{{SCHEDULER_NAME},other}}",
                             *OPTIONS_ON)
    deployment = only(rendered, "Deployment")
    spec = deployment["spec"]
    assert spec["replicas"] == 2
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    pod = spec["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == 30
    assert pod["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert pod["tolerations"] == [{"key": "dedicated", "operator": "Equal", "value": "scheduler",
                                   "effect": "NoSchedule"}]
    container = pod["containers"][0]
    assert container["command"] == ["pyscheduler", "serve", "--bind=0.0.0.0:9080", "--rm=pyscheduler_k8s:attach",
                                     "--health-interval=60", "--role-history-dir=/var/lib/pyscheduler/history"]
    assert {"name": "history", "mountPath": "/var/lib/pyscheduler/history"} in container["volumeMounts"]
    assert pod["securityContext"] == {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"},
                                      "fsGroup": 10001}
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}
    assert env["GUNICORN_CMD_ARGS"] == "--graceful-timeout 20"
    assert env["PYSCHEDULER_K8S_SCHEDULER_NAMES"] == f"{SCHEDULER_NAME},other"
    assert env["PYSCHEDULER_K8S_NAMESPACE"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    assert (env["PYSCHEDULER_K8S_LEADER_ELECTION"], env["PYSCHEDULER_K8S_LEASE_DURATION"]) == ("true", "15")
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/ws/v1/scheduler/healthcheck", "port": "rest"}
    config = only(rendered, "ConfigMap", "pyscheduler-configs")
    assert yaml.safe_load(config["data"]["queues.yaml"]) == yaml.safe_load(QUEUES)
    assert config["data"]["service.schedulingInterval"] == "1s"
    dashboard = only(rendered, "ConfigMap", f"{RELEASE}-dashboard")
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(dashboard["data"]["pyscheduler.json"]) == json.loads(
        (CHART / "dashboards" / "pyscheduler.json").read_text())
    service = only(rendered, "Service")
    selector = spec["selector"]["matchLabels"]
    assert service["spec"]["selector"] == selector
    for monitor, endpoints in (("ServiceMonitor", "endpoints"), ("PodMonitor", "podMetricsEndpoints")):
        found = only(rendered, monitor)
        assert found["spec"][endpoints][0]["path"] == "/ws/v1/metrics"
        assert found["spec"]["selector"]["matchLabels"].items() <= (
            service["metadata"]["labels"] if monitor == "ServiceMonitor" else pod_labels(spec)).items()


def pod_labels(deployment_spec: dict[str, Any]) -> dict[str, str]:
    labels: dict[str, str] = deployment_spec["template"]["metadata"]["labels"]
    return labels
