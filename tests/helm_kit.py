"""The chart's test kit: helm with a home of its own, kubectl against a test cluster, and the
scheduler process run the way the chart's Deployment runs it (tests/test_helm_chart.py,
tests/test_install_doc.py).

kwok only fakes the Deployment's pods, so a test proves an installed release works by running
``pyscheduler serve`` itself with the rendered Deployment's arguments and environment,
authenticated only as the release's service account (a TokenRequest token): what the release
grants is then all it has."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from kube_cluster import KubeCluster, start_cluster
from kube_served import list_pods, pod_body
from web_helpers import Server, launch

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "k8s" / "chart"
DEPLOY = ROOT / "k8s" / "deploy"
RELEASE = "pyscheduler"
RELEASE_NAMESPACE = "pyscheduler-system"
PODS_NAMESPACE = "team"
SCHEDULER_NAME = "helm-scheduler"
#: Every helm and kubectl command of a test ends within this (seconds).
COMMAND_TIMEOUT = 120.0
#: Every optional part of the chart on (lint and the server-side dry run).
OPTIONS_ON = [
    "--set", "reporterAgent.enabled=true",
    "--set", "metrics.serviceMonitor.enabled=true",
    "--set", "metrics.podMonitor.enabled=true",
    "--set", "grafanaDashboard.enabled=true",
    "--set", "configMap.settings.service\\.schedulingInterval=1s",
    "--set", "extraArgs[0]=--health-interval=60",
    "--set", "extraArgs[1]=--role-history-dir=/var/lib/pyscheduler/history",
    "--set-json", 'extraVolumes=[{"name": "history", "emptyDir": {}}]',
    "--set-json", 'extraVolumeMounts=[{"name": "history", "mountPath": "/var/lib/pyscheduler/history"}]',
    "--set-json", 'extraEnv=[{"name": "GUNICORN_CMD_ARGS", "value": "--graceful-timeout 20"}]',
    "--set", "nodeSelector.kubernetes\\.io/os=linux",
    "--set", "tolerations[0].key=dedicated,tolerations[0].operator=Equal,tolerations[0].value=scheduler",
    "--set", "tolerations[0].effect=NoSchedule",
    "--set", "podSecurityContext.fsGroup=10001",
    "--set", "priorityClassName=system-cluster-critical",
]
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
          - name: alpha
"""
UPGRADED_QUEUES = QUEUES + "          - name: beta\n"


def documents(text: str) -> list[dict[str, Any]]:
    """The objects of a multi-document YAML text (helm's output), empty documents left out."""
    return [doc for doc in yaml.safe_load_all(text) if doc]


def manifest(path: Path) -> list[dict[str, Any]]:
    return documents(path.read_text())


@contextmanager
def helm_cluster(workdir: Path) -> Iterator[KubeCluster]:
    """A test cluster with two kwok nodes (4 cpu, 8Gi) and the pods' namespace."""
    cluster = start_cluster(workdir)
    try:
        cluster.add_nodes(["kwok-0", "kwok-1"], cpu="4", memory="8Gi")
        cluster.ensure_namespace(PODS_NAMESPACE)
        yield cluster
    finally:
        cluster.stop()


def pods_bound(kube: KubeCluster, names: list[str], namespace: str = PODS_NAMESPACE) -> dict[str, str]:
    """pod name -> node, once each of ``names`` is bound and Running; else empty."""
    pods = {p["metadata"]["name"]: p for p in list_pods(kube, namespace)}
    if all(name in pods and pods[name]["spec"].get("nodeName") and pods[name]["status"].get("phase") == "Running"
           for name in names):
        return {name: pods[name]["spec"]["nodeName"] for name in names}
    return {}


def create_pod(kube: KubeCluster, name: str, queue: str, scheduler: str = SCHEDULER_NAME,
               namespace: str = PODS_NAMESPACE) -> None:
    body = pod_body(name, f"app-{name}", queue, "100m")
    body["spec"]["schedulerName"] = scheduler
    answer = kube.request("POST", f"/api/v1/namespaces/{namespace}/pods", body, timeout=30)
    assert answer.status_code == 201, answer.text


class Helm:
    """helm with its own cache, configuration and data directories (nothing of the user's)."""

    def __init__(self, binary: Path, home: Path, kubeconfig: Path | None = None) -> None:
        self.binary = binary
        self.kubeconfig = kubeconfig
        self.env = {**os.environ, "HELM_CACHE_HOME": str(home / "cache"), "HELM_CONFIG_HOME": str(home / "config"),
                    "HELM_DATA_HOME": str(home / "data")}
        self.env.pop("KUBECONFIG", None)

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        cluster = [f"--kubeconfig={self.kubeconfig}"] if self.kubeconfig is not None else []
        done = subprocess.run([str(self.binary), *args, *cluster], capture_output=True, text=True,
                              env=self.env, timeout=COMMAND_TIMEOUT)
        if check:
            assert done.returncode == 0, f"helm {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
        return done

    def template(self, *args: str) -> list[dict[str, Any]]:
        """The chart rendered (release :data:`RELEASE` in :data:`RELEASE_NAMESPACE`), as objects."""
        return documents(self.run("template", RELEASE, str(CHART), "--namespace", RELEASE_NAMESPACE, *args).stdout)

    def manifest(self, release: str, namespace: str) -> list[dict[str, Any]]:
        """The objects an installed release made (``helm get manifest``)."""
        return documents(self.run("get", "manifest", release, "--namespace", namespace).stdout)


def kubectl(kube: KubeCluster, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(["kubectl", f"--kubeconfig={kube.kubeconfig}", *args], input=stdin, capture_output=True,
                          text=True, timeout=COMMAND_TIMEOUT)
    assert done.returncode == 0, f"kubectl {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def only(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, f"{kind} {name}: {[o['metadata']['name'] for o in found]}"
    return found[0]


def token_kubeconfig(kube: KubeCluster, account: str, namespace: str, path: Path) -> Path:
    """A kubeconfig authenticating as the service account (a TokenRequest token)."""
    token = kubectl(kube, "create", "token", account, "--namespace", namespace, "--duration=1h").strip()
    path.write_text(kube.kubeconfig.read_text().replace(kube.token, token))
    return path


def served_as_deployment(deployment: dict[str, Any], namespace: str, tmp: Path, kubeconfig: Path) -> Server:
    """The Deployment's container run here: its ``pyscheduler serve`` arguments (but --bind: a
    free loopback port) and its environment (the namespace from the downward API: ``namespace``,
    the release's), the cluster reached with ``kubeconfig`` as the pod would with its service
    account's token."""
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    command = container["command"]
    assert command[:2] == ["pyscheduler", "serve"]
    args = [a for a in command[2:] if not a.startswith("--bind")]
    env = {"PYSCHEDULER_K8S_KUBECONFIG": str(kubeconfig)}
    for var in container["env"]:
        if "value" in var:
            env[var["name"]] = var["value"]
        else:
            assert var["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}, var
            env[var["name"]] = namespace
    return launch(tmp, args, env)


def served_release(kube: KubeCluster, helm: Helm, release: str, namespace: str, tmp: Path) -> Server:
    """A replica of an installed release, run here as its service account."""
    deployment = only(helm.manifest(release, namespace), "Deployment")
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    tmp.mkdir(parents=True, exist_ok=True)
    kubeconfig = token_kubeconfig(kube, account, namespace, tmp / "sa-kubeconfig")
    return served_as_deployment(deployment, namespace, tmp, kubeconfig)
