"""How the shim's client reaches a real API server (kube-apiserver on loopback, started with a
client CA of the test's own): the server verified against the cluster's CA from a kubeconfig,
a server signed by someone else refused, a client certificate given inline as a kubeconfig
carries it, a token file read again once it is old, and every connection sharing one TLS
context instead of building one (and loading a CA bundle) per connection."""

from __future__ import annotations

import base64
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3.connection
from kube_cluster import KubeCluster, start_cluster

from pyscheduler_k8s import kubeapi
from pyscheduler_k8s.kubeapi import ClusterAccess, KubeApi, KubeApiError


def _openssl(workdir: Path, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=workdir, check=True, capture_output=True)


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeCluster]:
    workdir = tmp_path_factory.mktemp("kube-tls")
    # A client CA the API server trusts, and an admin client certificate it signed.
    _openssl(workdir, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "client-ca.key", "-out",
             "client-ca.crt", "-days", "2", "-subj", "/CN=pyscheduler-test-client-ca")
    _openssl(workdir, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "admin.key", "-out", "admin.csr",
             "-subj", "/O=system:masters/CN=cert-admin")
    _openssl(workdir, "x509", "-req", "-in", "admin.csr", "-CA", "client-ca.crt", "-CAkey", "client-ca.key",
             "-CAcreateserial", "-out", "admin.crt", "-days", "2")
    cluster = start_cluster(workdir, kwok=False, api_flags=(f"--client-ca-file={workdir / 'client-ca.crt'}",))
    try:
        yield cluster
    finally:
        cluster.stop()


def _kubeconfig(path: Path, server: str, cluster: dict[str, Any], user: dict[str, Any]) -> str:
    import yaml

    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": server, **cluster}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
    }))
    return str(path)


def _inline(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def test_the_server_is_verified_and_a_client_certificate_authenticates(kube: KubeCluster, tmp_path: Path) -> None:
    # The API server's self-signed certificate (with its CA) is the cluster's CA here.
    server_ca = kube.workdir / "certs" / "apiserver.crt"
    work = kube.workdir
    config = _kubeconfig(tmp_path / "kubeconfig", kube.server, {"certificate-authority": str(server_ca)},
                         {"client-certificate-data": _inline(work / "admin.crt"),
                          "client-key-data": _inline(work / "admin.key")})
    api = KubeApi(ClusterAccess.discover(config))
    assert api._tls.verify_mode.name == "CERT_REQUIRED"
    # Authenticated as system:masters by the certificate alone: no token anywhere.
    namespaces, version = api.list("/api/v1/namespaces")
    assert version and {n["metadata"]["name"] for n in namespaces} >= {"default", "kube-system"}
    review = api.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                         {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    assert review["status"]["userInfo"]["username"] == "cert-admin"
    assert "system:masters" in review["status"]["userInfo"]["groups"]

    # Without the certificate the same server answers as to anyone: 403 for the anonymous user.
    anonymous = KubeApi(ClusterAccess(kube.server, ca_file=str(server_ca)))
    with pytest.raises(KubeApiError) as refused:
        anonymous.list("/api/v1/namespaces")
    assert refused.value.status in (401, 403)


def test_a_server_the_ca_did_not_sign_is_refused(kube: KubeCluster) -> None:
    # The client CA signed no server certificate: the TLS handshake fails, nothing is sent; the
    # caller sees a failed call like any other (status 0: the server was not reached).
    api = KubeApi(ClusterAccess(kube.server, token=kube.token, ca_file=str(kube.workdir / "client-ca.crt")))
    with pytest.raises(KubeApiError) as untrusted:
        api.list("/api/v1/namespaces")
    assert untrusted.value.status == 0 and "CERTIFICATE_VERIFY_FAILED" in untrusted.value.message
    # The system's CAs did not sign it either.
    with pytest.raises(KubeApiError) as untrusted:
        KubeApi(ClusterAccess(kube.server, token=kube.token)).list("/api/v1/namespaces")
    assert untrusted.value.status == 0 and "CERTIFICATE_VERIFY_FAILED" in untrusted.value.message


def test_a_server_that_is_not_there_is_a_failed_call(kube: KubeCluster) -> None:
    from kube_cluster import free_port

    api = KubeApi(ClusterAccess(f"https://127.0.0.1:{free_port()}", token=kube.token, verify=False))
    with pytest.raises(KubeApiError) as refused:
        api.request("POST", "/api/v1/namespaces/default/events", {"metadata": {"name": "x"}}, timeout=5)
    assert refused.value.status == 0 and refused.value.reason == "Unreachable"


def test_a_token_file_is_read_again_once_it_is_old(kube: KubeCluster, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    token = tmp_path / "token"
    token.write_text("not-a-valid-token\n")
    api = KubeApi(ClusterAccess(kube.server, token_file=str(token), verify=False))
    with pytest.raises(KubeApiError) as refused:
        api.list("/api/v1/namespaces")
    assert refused.value.status == 401
    token.write_text(kube.token + "\n")  # the kubelet rotated it
    with pytest.raises(KubeApiError):
        api.list("/api/v1/namespaces")  # still the one read a moment ago
    monkeypatch.setattr(kubeapi._BearerToken, "REREAD_AFTER", 0.0)
    assert api.list("/api/v1/namespaces")[0]


def test_connections_share_one_tls_context(kube: KubeCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[object] = []
    original = urllib3.connection.create_urllib3_context

    def counting(*args: Any, **kwargs: Any) -> Any:
        built.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(urllib3.connection, "create_urllib3_context", counting)
    api = KubeApi(ClusterAccess(kube.server, token=kube.token, verify=False))
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(10):
                api.request("GET", "/api/v1/namespaces/default")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors
    # Six threads, six connections, sixty requests: urllib3 built no TLS context of its own.
    assert built == []


def test_a_watch_line_without_end_is_cut_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server (or something in between) that streams one endless event: the watch refuses it
    once it passes the line limit, instead of buffering it until memory runs out."""
    import socket

    monkeypatch.setattr(kubeapi, "MAX_WATCH_LINE", 4096)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
            chunk = b"x" * 1024
            for _ in range(1000):  # bounded: 1 MiB at most, the client stops reading after 4 KiB
                if stop.is_set():
                    return
                try:
                    conn.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                except OSError:
                    return

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    api = KubeApi(ClusterAccess(f"http://127.0.0.1:{port}", verify=False))
    try:
        with pytest.raises(KubeApiError) as cut:
            for _ in api.watch("/api/v1/pods", "1", timeout_seconds=5):
                pass
        assert cut.value.status == 0 and cut.value.reason == "LineTooLong"
    finally:
        stop.set()
        listener.close()
        server.join(5)
