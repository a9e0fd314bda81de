"""The few calls the shim makes to the Kubernetes API server, over plain HTTP.

Why not a client library: ``docs/kubernetes.md`` ("Choosing the client library") measured the
official client eight times slower per binding, and both typed clients fail on the binding's
answer. A pool of keep-alive connections (urllib3, :class:`KubeApi` says why not ``requests``)
and orjson for list and watch bodies is all the shim needs: list, watch (a stream of JSON lines), get, create, the ``binding`` subresource and
strategic-merge patches of a pod's status.

Where the cluster is (:meth:`ClusterAccess.discover`): the ``kubeconfig`` given, else the
``KUBECONFIG`` environment variable (its first file), else ``~/.kube/config``, else the pod's
service account (``/var/run/secrets/kubernetes.io/serviceaccount`` with
``KUBERNETES_SERVICE_HOST``/``PORT``). A kubeconfig's current context (or the one named) gives
the server, its CA (file or inline data, or ``insecure-skip-tls-verify``) and the user's bearer
token (inline or ``tokenFile``) or client certificate and key (files or inline data).
"""

from __future__ import annotations

import base64
import os
import socket
import ssl
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson
import urllib3
import yaml

from pyscheduler_k8s.api_metrics import KubeApiMetrics

__all__ = ["ClusterAccess", "KubeApi", "KubeApiError", "WatchExpired"]

SERVICE_ACCOUNT_DIR: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount")
#: Seconds a request may take (a watch: its own server-side timeout plus this).
REQUEST_TIMEOUT: Final = 30.0
#: The longest watch line read (one event: an object the API server stores is at most 1.5 MiB by
#: default, etcd's request limit); a stream that goes on longer without a newline is cut off
#: instead of buffering it all.
MAX_WATCH_LINE: Final = 16 * 2**20
#: Keep-alive connections kept (more are opened when more threads call at once, then closed).
POOL_SIZE: Final = 32


class KubeApiError(Exception):
    """An answer other than success: ``status`` (HTTP), ``reason`` (the Status object's, e.g.
    ``NotFound``, ``Conflict``, ``Expired``) and the server's message."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message


class WatchExpired(KubeApiError):
    """The watch's resource version is too old (410 Gone): list again."""


@dataclass(frozen=True)
class ClusterAccess:
    server: str
    token: str | None = None
    token_file: str | None = None
    #: CA bundle to verify the server with; None with ``verify`` True: the system's.
    ca_file: str | None = None
    verify: bool = True
    client_cert: tuple[str, str] | None = None

    @classmethod
    def discover(cls, kubeconfig: str | None = None, context: str | None = None) -> ClusterAccess:
        """``context``: that context of the kubeconfig instead of its current one."""
        if kubeconfig:
            return cls.from_kubeconfig(kubeconfig, context)
        env = os.environ.get("KUBECONFIG", "")
        first = next((p for p in env.split(os.pathsep) if p), "")
        if first:
            return cls.from_kubeconfig(first, context)
        home = Path.home() / ".kube" / "config"
        if home.exists():
            return cls.from_kubeconfig(str(home), context)
        return cls.in_cluster()

    @classmethod
    def in_cluster(cls) -> ClusterAccess:
        host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        token = SERVICE_ACCOUNT_DIR / "token"
        if not host or not token.exists():
            raise ValueError("no cluster: no --kubeconfig, no KUBECONFIG, no ~/.kube/config, and not in a pod "
                             "with a service account")
        if ":" in host:
            host = f"[{host}]"
        ca = SERVICE_ACCOUNT_DIR / "ca.crt"
        return cls(f"https://{host}:{port}", token_file=str(token), ca_file=str(ca) if ca.exists() else None)

    @classmethod
    def from_kubeconfig(cls, path: str, context_name: str | None = None) -> ClusterAccess:
        try:
            config = yaml.safe_load(Path(path).read_text())
        except (OSError, yaml.YAMLError) as exc:
            raise ValueError(f"kubeconfig {path}: {exc}") from exc
        if not isinstance(config, dict):
            raise ValueError(f"kubeconfig {path}: not a mapping")
        base = Path(path).parent

        def named(kind: str, name: str) -> dict[str, Any]:
            for entry in config.get(kind + "s") or ():
                if isinstance(entry, dict) and entry.get("name") == name:
                    found = entry.get(kind)
                    return found if isinstance(found, dict) else {}
            raise ValueError(f"kubeconfig {path}: no {kind} named {name!r}")

        context = named("context", context_name or str(config.get("current-context", "")))
        cluster = named("cluster", str(context.get("cluster", "")))
        user = named("user", str(context.get("user", ""))) if context.get("user") else {}
        server = cluster.get("server")
        if not isinstance(server, str) or not server:
            raise ValueError(f"kubeconfig {path}: the cluster has no server")

        def file_or_data(key: str, source: Mapping[str, Any]) -> str | None:
            if source.get(key):
                return str(base / str(source[key]))
            data = source.get(key + "-data")
            if data:
                handle, name = tempfile.mkstemp(prefix="pyscheduler-k8s-")
                with os.fdopen(handle, "wb") as out:
                    out.write(base64.b64decode(data))
                return name
            return None

        cert, key = file_or_data("client-certificate", user), file_or_data("client-key", user)
        token_file = user.get("tokenFile")
        return cls(server=server.rstrip("/"), token=user.get("token") or None,
                   token_file=str(base / token_file) if token_file else None,
                   ca_file=file_or_data("certificate-authority", cluster),
                   verify=not cluster.get("insecure-skip-tls-verify", False),
                   client_cert=(cert, key) if cert and key else None)


class _BearerToken:
    """The bearer token; a token file is read again after a minute (the kubelet rotates a
    service account's token), as client-go does."""

    REREAD_AFTER: Final = 60.0

    def __init__(self, token: str | None, token_file: str | None) -> None:
        self._token, self._file = token, token_file
        self._read_at = -self.REREAD_AFTER

    def header(self) -> str | None:
        if self._file and time.monotonic() - self._read_at >= self.REREAD_AFTER:
            self._token = Path(self._file).read_text().strip()
            self._read_at = time.monotonic()
        return f"Bearer {self._token}" if self._token else None


def tls_context(access: ClusterAccess) -> ssl.SSLContext:
    """The one TLS context of every connection to the server: its trust (the cluster's CA, the
    system's, or none with ``insecure-skip-tls-verify``) and the client certificate."""
    if access.verify:
        context = ssl.create_default_context(cafile=access.ca_file)
    else:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if access.client_cert:
        context.load_cert_chain(*access.client_cert)
    return context


class KubeApi:
    """Requests to one API server; safe to use from several threads: one urllib3 pool of
    keep-alive connections (up to :data:`POOL_SIZE` kept), all made with one TLS context.

    urllib3 directly rather than ``requests`` on top of it: the benchmark against kube-scheduler
    showed the shim's CPU competing with the API server's on the same cores, and requests adds
    a request preparation, cookie jar, hooks and environment lookups to every call. Building the
    TLS context once matters more still: left to itself urllib3 builds one and loads a CA bundle
    for every new connection (tens of milliseconds of CPU each, most of the shim's time with 16
    binder threads connecting at once, as a profile showed). Failures to reach the server
    (refused, reset, timed out, a certificate not trusted) are :class:`KubeApiError` with status
    0, like any other failed call."""

    def __init__(self, access: ClusterAccess, metrics: KubeApiMetrics | None = None) -> None:
        self.access = access
        #: Where its requests are counted (:mod:`.api_metrics`; shared by one attach's clients).
        self.metrics = metrics if metrics is not None else KubeApiMetrics()
        self._tls = tls_context(access)
        self._token = _BearerToken(access.token, access.token_file)
        cert_reqs = "CERT_NONE" if self._tls.verify_mode == ssl.CERT_NONE else "CERT_REQUIRED"
        options: dict[str, Any] = {"maxsize": POOL_SIZE, "ssl_context": self._tls, "cert_reqs": cert_reqs,
                                   "retries": False}
        # A proxy from the environment (HTTPS_PROXY, NO_PROXY), read once, as client-go does.
        proxy = urllib.request.getproxies().get(urllib.parse.urlsplit(access.server).scheme)
        host = urllib.parse.urlsplit(access.server).hostname or ""
        if proxy and not urllib.request.proxy_bypass(host):
            self._pool: urllib3.PoolManager = urllib3.ProxyManager(proxy, **options)
        else:
            self._pool = urllib3.PoolManager(**options)
        #: Watches being read (closed by :meth:`close_watches`): their sockets.
        self._watches: dict[int, Any] = {}
        self._watches_lock = threading.Lock()
        if not access.verify:
            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)

    def _headers(self, content_type: str | None = None) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        token = self._token.header()
        if token:
            headers["Authorization"] = token
        if content_type:
            headers["Content-Type"] = content_type
        return headers

    def _url(self, path: str, params: Mapping[str, str] | None) -> str:
        return self.access.server + path + ("?" + urllib.parse.urlencode(params) if params else "")

    def _send(self, method: str, path: str, *, params: Mapping[str, str] | None = None, body: bytes | None = None,
              headers: dict[str, str], timeout: urllib3.Timeout, stream: bool = False) -> urllib3.BaseHTTPResponse:
        try:
            return self._pool.request(method, self._url(path, params), body=body, headers=headers, timeout=timeout,
                                      preload_content=not stream, redirect=False)
        except urllib3.exceptions.HTTPError as exc:
            raise KubeApiError(0, "Unreachable", f"{method} {path}: {exc}") from exc

    def request(self, method: str, path: str, body: Any = None, *, params: Mapping[str, str] | None = None,
                content_type: str = "application/json", timeout: float = REQUEST_TIMEOUT) -> Any:
        """The decoded answer of a call; :class:`KubeApiError` on anything but success."""
        data = orjson.dumps(body) if body is not None else None
        try:
            answer = self._send(method, path, params=params, body=data,
                                headers=self._headers(content_type if data is not None else None),
                                timeout=urllib3.Timeout(connect=REQUEST_TIMEOUT, read=timeout))
        except KubeApiError:
            self.metrics.request(method, path, 0)
            raise
        self.metrics.request(method, path, answer.status)
        if answer.status >= 300:
            raise _error(answer.status, answer.data)
        return orjson.loads(answer.data) if answer.data else None

    def list(self, path: str, *, params: Mapping[str, str] | None = None) -> tuple[list[dict[str, Any]], str]:
        """Every item of a collection (pages of 500) and the list's resource version."""
        items: list[dict[str, Any]] = []
        query = {"limit": "500", **(params or {})}
        while True:
            page = self.request("GET", path, params=query)
            items.extend(page.get("items") or ())
            meta = page.get("metadata") or {}
            if not meta.get("continue"):
                return items, str(meta.get("resourceVersion", ""))
            query = {**query, "continue": meta["continue"]}

    def watch(self, path: str, resource_version: str, *, timeout_seconds: int = 300,
              stop: threading.Event | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
        """(type, object) of each change after ``resource_version`` (``ADDED``, ``MODIFIED``,
        ``DELETED``, ``BOOKMARK``) until the server ends the watch; :class:`WatchExpired` when the
        version is too old."""
        params = {"watch": "1", "resourceVersion": resource_version, "allowWatchBookmarks": "true",
                  "timeoutSeconds": str(timeout_seconds)}
        try:
            answer = self._send("GET", path, params=params, headers=self._headers(), stream=True,
                                timeout=urllib3.Timeout(connect=REQUEST_TIMEOUT, read=timeout_seconds + REQUEST_TIMEOUT))
        except KubeApiError:
            self.metrics.request("GET", path, 0, watch=True)
            raise
        self.metrics.request("GET", path, answer.status, watch=True)
        key = id(answer)
        try:
            if answer.status >= 300:
                raise _error(answer.status, answer.read())
            with self._watches_lock:
                # Its socket: shutting that down is what wakes a reader blocked in it.
                self._watches[key] = getattr(answer.connection, "sock", None)
            pending = b""
            try:
                for chunk in answer.stream(65536):
                    lines = (pending + chunk).split(b"\n")
                    pending = lines.pop()
                    if len(pending) > MAX_WATCH_LINE:
                        raise KubeApiError(0, "LineTooLong",
                                           f"watch {path}: an event longer than {MAX_WATCH_LINE} bytes")
                    for line in lines:
                        if stop is not None and stop.is_set():
                            return
                        if not line.strip():
                            continue
                        event = orjson.loads(line)
                        kind, obj = str(event.get("type", "")), event.get("object") or {}
                        if kind == "ERROR":
                            code = int(obj.get("code", 500))
                            self.metrics.watch_ended_with(path, code)
                            raise (WatchExpired if code == 410 else KubeApiError)(
                                code, str(obj.get("reason", "")), str(obj.get("message", "")))
                        yield kind, obj
            except urllib3.exceptions.HTTPError as exc:
                raise KubeApiError(0, "Unreachable", f"watch {path}: {exc}") from exc
        finally:
            with self._watches_lock:
                self._watches.pop(key, None)
            # Whatever was left unread, the connection is not reused.
            answer.close()
            answer.release_conn()

    def close_watches(self) -> None:
        """Ends every watch being read now (their readers see the stream end): a stopping shim
        does not wait for the server's next event."""
        with self._watches_lock:
            sockets = list(self._watches.values())
        for sock in sockets:
            if sock is None:
                continue
            try:
                # The plain socket's shutdown (not the TLS one, which the reader is inside of):
                # the blocked read returns, the stream ends with an error its reader expects.
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
            except OSError:
                pass

    def bind(self, namespace: str, name: str, node: str) -> None:
        started, bound = time.perf_counter(), False
        try:
            self.request("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/binding", {
                "apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "namespace": namespace},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
            bound = True
        finally:
            self.metrics.binding(bound, (time.perf_counter() - started) * 1000.0)

    def patch_pod_status(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        self.request("PATCH", f"/api/v1/namespaces/{namespace}/pods/{name}/status", patch,
                     content_type="application/strategic-merge-patch+json")

    def create_pod(self, namespace: str, pod: Mapping[str, Any]) -> None:
        self.request("POST", f"/api/v1/namespaces/{namespace}/pods", pod)

    def delete_pod(self, namespace: str, name: str, *, uid: str = "") -> None:
        """Deletes the pod gracefully (its own grace period); ``uid``: only that incarnation
        (a pod of the same name created since is left alone)."""
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": uid}} if uid else None
        self.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}", body)

    def create_event(self, namespace: str, event: Mapping[str, Any]) -> None:
        self.request("POST", f"/api/v1/namespaces/{namespace}/events", event)


def _error(status: int, content: bytes) -> KubeApiError:
    reason, message = "", content[:500].decode(errors="replace")
    try:
        body = orjson.loads(content)
        if isinstance(body, dict):
            reason, message = str(body.get("reason", "")), str(body.get("message", message))
    except orjson.JSONDecodeError:
        pass
    return (WatchExpired if status == 410 else KubeApiError)(status, reason, message)
