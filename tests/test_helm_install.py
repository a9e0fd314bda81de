"""The Helm chart (k8s/chart, docs/helm.md) on a real API server with kwok nodes
(tests/kube_cluster.py), with a real helm (tools/k8s/build.sh builds it).

- ``helm template`` (defaults, and every option on) passes ``kubectl apply --dry-run=server``
  (the ServiceMonitor and PodMonitor against a minimal monitoring.coreos.com CRD).
- ``helm install``, then the scheduler process itself (kwok only fakes the Deployment's pod:
  ``pyscheduler serve --rm pyscheduler_k8s:attach`` with the installed Deployment's arguments
  and environment) authenticated only as the release's service account (a TokenRequest
  token): it leads through the Lease, reads the release's ConfigMap and binds the pods naming
  the chart's schedulerName; a second one stands by and is healthy (the readiness probe);
  ``helm upgrade`` with other queues reloads the running scheduler; ``helm uninstall`` removes
  what the release made. A typo in values fails the install before anything is made.
- The image ``make image`` built (``make test`` builds it first; missing, the test fails): the image run by podman as the
  installed Deployment runs it (its command, environment, user, read-only root with /tmp
  writable, no capabilities) with the release's service account mounted where a pod has it
  (the shim's in-cluster discovery), binding a pod.

Every command and wait is bounded in time."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from chart_values import CHART, OPTIONS_ON, QUEUES, RELEASE, RELEASE_NAMESPACE, SCHEDULER_NAME, UPGRADED_QUEUES
from helm_kit import (  # helm, helm_path: fixtures, used by name
    COMMAND_TIMEOUT, Helm, helm, helm_path, kubectl, only, served_as_deployment, token_kubeconfig)
from kube_cluster import KubeCluster, free_port, start_cluster
from kube_served import list_pods, pod_body
from web_helpers import Server, stop

from pyscheduler_k8s.kubeapi import ClusterAccess, KubeApi, KubeApiError

pytestmark = pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")

PODS_NAMESPACE = "team"

#: A minimal stand-in for the Prometheus Operator's CRDs: their group, kinds and scope, any
#: content (the real ones validate the spec; the API server needs only the kinds to exist).
MONITORING_CRDS = [
    {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
     "metadata": {"name": f"{plural}.monitoring.coreos.com"},
     "spec": {"group": "monitoring.coreos.com", "scope": "Namespaced",
              "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": plural[:-1]},
              "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                  "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}
    for kind, plural in (("ServiceMonitor", "servicemonitors"), ("PodMonitor", "podmonitors"))]


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeCluster]:
    cluster = start_cluster(tmp_path_factory.mktemp("kube"))
    try:
        cluster.add_nodes(["kwok-0", "kwok-1"], cpu="4", memory="8Gi")
        cluster.ensure_namespace(PODS_NAMESPACE)
        yield cluster
    finally:
        cluster.stop()


def test_the_rendered_chart_passes_a_server_side_dry_run(kube: KubeCluster, helm: Helm) -> None:
    """``helm template | kubectl apply --dry-run=server``: with the defaults, and with every
    option on (the monitors' kinds made known first by a minimal monitoring.coreos.com CRD)."""
    kube.ensure_namespace(RELEASE_NAMESPACE)
    kubectl(kube, "apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": MONITORING_CRDS}))
    kubectl(kube, "wait", "--for=condition=Established", "--timeout=60s",
            "crd/servicemonitors.monitoring.coreos.com", "crd/podmonitors.monitoring.coreos.com")
    for options in ([], OPTIONS_ON):
        rendered = helm.run("template", RELEASE, str(CHART), "--namespace", RELEASE_NAMESPACE, *options).stdout
        out = kubectl(kube, "apply", "--dry-run=server", "-f", "-", stdin=rendered)
        kinds = {line.split("/")[0] for line in out.splitlines() if "(server dry run)" in line}
        expected = {"serviceaccount", "clusterrole.rbac.authorization.k8s.io", "configmap", "service",
                    "deployment.apps", "role.rbac.authorization.k8s.io", "poddisruptionbudget.policy"}
        if options:
            expected |= {"daemonset.apps", "customresourcedefinition.apiextensions.k8s.io",
                         "servicemonitor.monitoring.coreos.com", "podmonitor.monitoring.coreos.com"}
        assert expected <= kinds, out


def _queue_names(server: Server) -> set[str]:
    answer = server.get("/ws/v1/partition/default/queues")
    if answer.status_code != 200:
        return set()
    names: set[str] = set()

    def walk(queue: dict[str, Any]) -> None:
        names.add(queue["queuename"])
        for child in queue.get("children") or ():
            walk(child)

    walk(answer.json())
    return names


def pods_bound(kube: KubeCluster, names: list[str]) -> dict[str, str]:
    """pod name -> node, once each of ``names`` is bound and Running; else empty."""
    pods = {p["metadata"]["name"]: p for p in list_pods(kube, PODS_NAMESPACE)}
    if all(name in pods and pods[name]["spec"].get("nodeName") and pods[name]["status"].get("phase") == "Running"
           for name in names):
        return {name: pods[name]["spec"]["nodeName"] for name in names}
    return {}


def create_pod(kube: KubeCluster, name: str, queue: str, scheduler: str = SCHEDULER_NAME) -> None:
    body = pod_body(name, f"app-{name}", queue, "100m")
    body["spec"]["schedulerName"] = scheduler
    answer = kube.request("POST", f"/api/v1/namespaces/{PODS_NAMESPACE}/pods", body, timeout=30)
    assert answer.status_code == 201, answer.text


def test_install_schedule_upgrade_uninstall(kube: KubeCluster, helm_path: Path, tmp_path: Path) -> None:
    """The chart installed; the scheduler run as its Deployment says, as its service account
    only: it leads, binds the pods naming the chart's schedulerName to kwok nodes (and leaves
    the others), a second replica stands by and answers the health check; an upgrade with
    another queue reloads it; uninstall removes the release's objects."""
    helm = Helm(helm_path, tmp_path / "helm", kube.kubeconfig)
    queues, upgraded = tmp_path / "queues.yaml", tmp_path / "queues-upgraded.yaml"
    queues.write_text(QUEUES)
    upgraded.write_text(UPGRADED_QUEUES)
    # A typo fails the install before anything is made.
    done = helm.run("install", RELEASE, str(CHART), "--namespace", RELEASE_NAMESPACE, "--create-namespace",
                    "--set", "replicas=3", check=False)
    assert done.returncode != 0 and "additional properties 'replicas' not allowed" in done.stderr, done.stderr
    assert helm.run("list", "--all", "--namespace", RELEASE_NAMESPACE, "--short").stdout.strip() == ""
    started = time.monotonic()
    done = helm.run("install", RELEASE, str(CHART), "--namespace", RELEASE_NAMESPACE, "--create-namespace",
                    "--set-file", f"queues={queues}", "--set", f"schedulerNames={{{SCHEDULER_NAME}}}",
                    "--set", "leaderElection.retryPeriod=0.5")
    assert "STATUS: deployed" in done.stdout and "get lease pyscheduler" in done.stdout, done.stdout
    print(f"helm install: {time.monotonic() - started:.1f} s")
    deployment = only(helm.manifest(RELEASE, RELEASE_NAMESPACE), "Deployment")
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    kubeconfig = token_kubeconfig(kube, account, RELEASE_NAMESPACE, tmp_path / "sa-kubeconfig")
    # Least privilege: the account reads no secrets.
    with pytest.raises(KubeApiError) as refused:
        KubeApi(ClusterAccess.from_kubeconfig(str(kubeconfig))).list(f"/api/v1/namespaces/{RELEASE_NAMESPACE}/secrets")
    assert refused.value.status == 403
    leader = served_as_deployment(deployment, RELEASE_NAMESPACE, tmp_path, kubeconfig)
    standby: Server | None = None
    try:
        status = kube.wait_for("the scheduler leads", lambda: (
            found if (found := leader.get("/ws/v1/k8s/leadership").json()).get("role") == "leader" else None),
            timeout=30)
        lease = kube.request("GET", f"/apis/coordination.k8s.io/v1/namespaces/{RELEASE_NAMESPACE}/leases/pyscheduler")
        assert lease.json()["spec"]["holderIdentity"] == status["identity"]
        kube.wait_for("the release's queues", lambda: "root.alpha" in _queue_names(leader), timeout=30)
        for n in range(3):
            create_pod(kube, f"alpha-{n}", "root.alpha")
        create_pod(kube, "not-ours", "root.alpha", scheduler="pyscheduler")  # not a name the release serves
        bound = kube.wait_for("pods bound by the installed release", lambda: pods_bound(
            kube, [f"alpha-{n}" for n in range(3)]), timeout=60)
        assert set(bound.values()) <= {"kwok-0", "kwok-1"}
        not_ours = kube.request("GET", f"/api/v1/namespaces/{PODS_NAMESPACE}/pods/not-ours").json()
        assert not not_ours["spec"].get("nodeName")
        # The second replica: standby, yet healthy (the readiness probe's check), so a rolling
        # update (maxUnavailable 0) goes on.
        standby = served_as_deployment(deployment, RELEASE_NAMESPACE, tmp_path, kubeconfig)
        seen = kube.wait_for("the standby saw the leader", lambda: (
            found if (found := standby.get("/ws/v1/k8s/leadership").json()).get("holder") else None), timeout=30)
        assert seen["role"] == "standby" and seen["holder"] == status["identity"]
        assert standby.get("/ws/v1/scheduler/healthcheck").status_code == 200

        started = time.monotonic()
        done = helm.run("upgrade", RELEASE, str(CHART), "--namespace", RELEASE_NAMESPACE, "--reuse-values",
                        "--set-file", f"queues={upgraded}")
        assert "STATUS: deployed" in done.stdout and "REVISION: 2" in done.stdout, done.stdout
        kube.wait_for("the upgraded queues applied", lambda: "root.beta" in _queue_names(leader), timeout=30)
        print(f"helm upgrade to applied queues: {time.monotonic() - started:.1f} s")
        create_pod(kube, "beta-0", "root.beta")
        kube.wait_for("a pod of the new queue bound", lambda: pods_bound(kube, ["beta-0"]), timeout=60)
        events = kube.request("GET", f"/api/v1/namespaces/{RELEASE_NAMESPACE}/events").json()["items"]
        assert any(e["reason"] == "ConfigurationApplied" for e in events)
    finally:
        for server in (standby, leader):
            if server is not None:
                code = stop(server)
                log = server.log()
                assert code == 0 and "Traceback" not in log, log
        kube.request("DELETE", f"/api/v1/namespaces/{PODS_NAMESPACE}/pods?gracePeriodSeconds=0")
    helm.run("uninstall", RELEASE, "--namespace", RELEASE_NAMESPACE, "--wait", "--timeout=60s")
    for path in (f"/api/v1/namespaces/{RELEASE_NAMESPACE}/configmaps/pyscheduler-configs",
                 f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{RELEASE}",
                 f"/apis/apps/v1/namespaces/{RELEASE_NAMESPACE}/deployments/{RELEASE}"):
        assert kube.request("GET", path).status_code == 404, path


# -- the image, as the chart runs it -------------------------------------------------------------------

IMAGE = "localhost/pyscheduler"
#: How podman runs here (tests' rules: runc, the cgroupfs manager, explicit limits, the host's network).
PODMAN = ["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs"]


def _image_built(tag: str) -> bool:
    if shutil.which("podman") is None:
        return False
    done = subprocess.run([*PODMAN, "image", "exists", f"{IMAGE}:{tag}"], capture_output=True, timeout=60)
    return done.returncode == 0


def _podman_run_args(pod: dict[str, Any], namespace: str, secrets: Path, api_port: int, rest_port: int,
                     name: str) -> list[str]:
    """``podman run`` arguments doing what the kubelet would with the rendered pod spec: the
    container's user and security settings, its volumes (emptyDirs as tmpfs), its environment
    (the downward API's namespace), the service account's files where a pod has them and the
    API server as the in-cluster environment names it; its command, but --bind on a free
    loopback port (the host's network)."""
    container = pod["containers"][0]
    security = container["securityContext"]
    args = ["run", "--detach", "--name", name, "--network", "host", "--ulimit", "nofile=1024:1024",
            "--ulimit", "nproc=1024:1024", "--cap-drop", "ALL",
            "-v", f"{secrets}:/var/run/secrets/kubernetes.io/serviceaccount:ro",
            "-e", "KUBERNETES_SERVICE_HOST=127.0.0.1", "-e", f"KUBERNETES_SERVICE_PORT={api_port}"]
    assert security["capabilities"] == {"drop": ["ALL"]} and security["allowPrivilegeEscalation"] is False
    args += ["--security-opt", "no-new-privileges"]
    if security.get("readOnlyRootFilesystem"):
        args.append("--read-only")
    if pod["securityContext"].get("runAsNonRoot"):
        args.append("--user=10001:10001")  # the image's own user; runAsNonRoot holds it to a non-root one
    volumes = {v["name"]: v for v in pod["volumes"]}
    for mount in container["volumeMounts"]:
        assert "emptyDir" in volumes[mount["name"]], mount
        args += ["--tmpfs", mount["mountPath"]]
    for var in container["env"]:
        value = var["value"] if "value" in var else namespace
        args += ["-e", f"{var['name']}={value}"]
    command = [f"--bind=127.0.0.1:{rest_port}" if a.startswith("--bind") else a for a in container["command"]]
    assert command[0] == "pyscheduler"
    return [*args, "--entrypoint", command[0], container["image"], *command[1:]]


def test_the_image_runs_as_the_chart_says(kube: KubeCluster, helm_path: Path, tmp_path: Path) -> None:
    """The chart's Deployment in the image ``make image`` built: installed as a release of its
    own, its pod run by podman as the kubelet would (:func:`_podman_run_args`), credentials from
    the service account's files only: it leads and binds a pod of the chart's schedulerName."""
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert _image_built(chart["appVersion"]), f"no image {IMAGE}:{chart['appVersion']}: run make image"
    namespace = release = "pyscheduler-image"
    queues = tmp_path / "queues.yaml"
    queues.write_text(QUEUES)
    helm = Helm(helm_path, tmp_path / "helm", kube.kubeconfig)
    helm.run("install", release, str(CHART), "--namespace", namespace, "--create-namespace",
             "--set", f"schedulerNames={{{SCHEDULER_NAME}}}", "--set-file", f"queues={queues}")
    pod = only(helm.manifest(release, namespace), "Deployment")["spec"]["template"]["spec"]
    secrets = tmp_path / "serviceaccount"
    secrets.mkdir()
    token = kubectl(kube, "create", "token", pod["serviceAccountName"], "--namespace", namespace, "--duration=1h")
    (secrets / "token").write_text(token.strip())
    (secrets / "ca.crt").write_text((kube.workdir / "certs" / "apiserver.crt").read_text())
    (secrets / "namespace").write_text(namespace)
    for path in (secrets, *secrets.iterdir()):  # the image's user reads them, as a pod's projected volume lets it
        path.chmod(0o755 if path.is_dir() else 0o644)
    api_port = int(kube.server.rsplit(":", 1)[1])
    rest_port = free_port()
    name = f"pyscheduler-chart-test-{rest_port}"
    started = subprocess.run([*PODMAN, *_podman_run_args(pod, namespace, secrets, api_port, rest_port, name)],
                             capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    assert started.returncode == 0, started.stderr
    try:
        rest = f"http://127.0.0.1:{rest_port}"
        kube.wait_for("the image's scheduler leads", lambda: _get_json(rest, "/ws/v1/k8s/leadership").get(
            "role") == "leader", timeout=60, interval=0.5)
        create_pod(kube, "from-image-0", "root.alpha")
        bound = kube.wait_for("a pod bound by the image", lambda: pods_bound(kube, ["from-image-0"]), timeout=60)
        assert bound["from-image-0"] in ("kwok-0", "kwok-1")
    finally:
        logs = subprocess.run([*PODMAN, "logs", name], capture_output=True, text=True, timeout=60)
        subprocess.run([*PODMAN, "rm", "--force", "--time", "15", name], capture_output=True, timeout=60)
        kube.request("DELETE", f"/api/v1/namespaces/{PODS_NAMESPACE}/pods?gracePeriodSeconds=0")
        helm.run("uninstall", release, "--namespace", namespace, "--wait", "--timeout=60s")
    assert "Traceback" not in logs.stdout + logs.stderr, logs.stdout + logs.stderr


def _get_json(base: str, path: str) -> dict[str, Any]:
    try:
        answer = requests.get(base + path, timeout=5)
    except requests.RequestException:
        return {}
    found: dict[str, Any] = answer.json() if answer.status_code == 200 else {}
    return found
