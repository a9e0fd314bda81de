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
from pathlib import Path
from typing import Any

import pytest
import yaml
from kube_cluster import KubeCluster, helm_binary
from kube_served import Server, launch  # (tests/web's helpers, on the path kube_served sets)

ROOT = Path(__file__).resolve().parent.parent
#: Every helm and kubectl command of a test ends within this (seconds).
COMMAND_TIMEOUT = 120.0


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

    def manifest(self, release: str, namespace: str) -> list[dict[str, Any]]:
        """The objects an installed release made (``helm get manifest``)."""
        out = self.run("get", "manifest", release, "--namespace", namespace).stdout
        return [doc for doc in yaml.safe_load_all(out) if doc]


@pytest.fixture(scope="module")
def helm_path() -> Path:
    """The helm binary (a fixture: modules import it by name)."""
    return helm_binary()


@pytest.fixture
def helm(helm_path: Path, tmp_path: Path) -> Helm:
    """helm with a home of its own in the test's temporary directory, no cluster."""
    return Helm(helm_path, tmp_path / "helm")


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
