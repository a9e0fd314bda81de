"""Where the scheduler is: a URL given (``--server``, or ``PYSCHEDULER_URL``), else the
cluster's API server service proxy, as ``kubectl proxy`` users reach a service:
``{api server}/api/v1/namespaces/{namespace}/services/{name}:{port}/proxy/ws/v1/...``.

The cluster comes from the kubeconfig the kubectl way (``--kubeconfig``, else ``KUBECONFIG``,
else ``~/.kube/config``, else the pod's service account; ``--context`` instead of the current
one), read by the shim's own :class:`~pyscheduler_k8s.kubeapi.ClusterAccess`. The service is
``pyscheduler`` in namespace ``pyscheduler`` unless told (k8s/deploy/30-deployment.yaml); its
port is the one named ``rest``, else its first, read from the Service itself.
"""

from __future__ import annotations

import os
import urllib.parse
from pathlib import Path
from typing import Final

import yaml

from pyscheduler_k8s.kubeapi import SERVICE_ACCOUNT_DIR, ClusterAccess, KubeApi, KubeApiError, tls_context
from pyscheduler_k8s.kubectl.client import SchedulerClient, SchedulerError

__all__ = ["DEFAULT_SERVICE", "SERVER_ENV", "cluster", "default_namespace", "direct", "server_url", "service_proxy"]

SERVER_ENV: Final = "PYSCHEDULER_URL"
DEFAULT_SERVICE: Final = "pyscheduler/pyscheduler"
#: The Service port the REST API is served on (k8s/deploy): by name, else the Service's first.
REST_PORT_NAME: Final = "rest"


def cluster(kubeconfig: str | None, context: str | None) -> KubeApi:
    """The kube API of the kubeconfig's (or the pod's) cluster; :class:`SchedulerError` when
    there is none."""
    try:
        return KubeApi(ClusterAccess.discover(kubeconfig, context))
    except (ValueError, OSError) as exc:
        raise SchedulerError(0, f"no cluster to reach: {exc}") from exc


def direct(url: str) -> SchedulerClient:
    """The scheduler at ``url`` (``http://host:9080``), no cluster involved."""
    if "://" not in url:
        url = "http://" + url
    return SchedulerClient(url, where=url)


def _bearer(access: ClusterAccess) -> dict[str, str]:
    token = access.token
    if not token and access.token_file:
        token = Path(access.token_file).read_text().strip()
    return {"Authorization": f"Bearer {token}"} if token else {}


def _service_port(api: KubeApi, namespace: str, name: str) -> str:
    try:
        service = api.request("GET", f"/api/v1/namespaces/{namespace}/services/{name}")
    except KubeApiError as exc:
        raise SchedulerError(exc.status, f"service {namespace}/{name}: {exc.message}") from exc
    ports = (service.get("spec") or {}).get("ports") or []
    if not ports:
        raise SchedulerError(0, f"service {namespace}/{name} has no port")
    chosen = next((p for p in ports if p.get("name") == REST_PORT_NAME), ports[0])
    return str(chosen.get("name") or chosen.get("port"))


def service_proxy(api: KubeApi, service: str = DEFAULT_SERVICE) -> SchedulerClient:
    """The scheduler behind ``service`` (``namespace/name``, or ``namespace/name:port``) through
    the API server's service proxy, with the kubeconfig's credentials."""
    namespace, _, name = service.rpartition("/")
    namespace = namespace or "pyscheduler"
    name, _, port = name.partition(":")
    port = port or _service_port(api, namespace, name)
    access = api.access
    path = "/api/v1/namespaces/{}/services/{}/proxy".format(
        urllib.parse.quote(namespace, safe=""), urllib.parse.quote(f"{name}:{port}", safe=":"))
    tls = tls_context(access) if access.server.startswith("https:") else None
    return SchedulerClient(access.server + path, headers=_bearer(access), tls=tls,
                           where=f"service {namespace}/{name}:{port} through {access.server}")


def server_url(option: str | None) -> str | None:
    """``--server``, else ``PYSCHEDULER_URL``, else None (the service proxy)."""
    return option or os.environ.get(SERVER_ENV) or None


def default_namespace(kubeconfig: str | None, context: str | None) -> str:
    """The namespace kubectl would use without ``-n``: the context's (the kubeconfig found as
    :meth:`ClusterAccess.discover` finds it), else the pod's service account's, else ``default``."""
    path = kubeconfig or next((p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p), "")
    if not path and (Path.home() / ".kube" / "config").exists():
        path = str(Path.home() / ".kube" / "config")
    if path:
        try:
            config = yaml.safe_load(Path(path).read_text())
        except (OSError, yaml.YAMLError):
            return "default"
        name = context or (config.get("current-context") if isinstance(config, dict) else None)
        for entry in (config.get("contexts") or ()) if isinstance(config, dict) else ():
            if isinstance(entry, dict) and entry.get("name") == name:
                namespace = (entry.get("context") or {}).get("namespace")
                return str(namespace) if namespace else "default"
        return "default"
    try:
        return (SERVICE_ACCOUNT_DIR / "namespace").read_text().strip() or "default"
    except OSError:
        return "default"
