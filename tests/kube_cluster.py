"""A real Kubernetes control plane on loopback, for the Kubernetes tests (issue 15): etcd,
kube-apiserver and kwok (fake nodes whose pods "run" without a kubelet), as
``shared/spec/kubernetes.md`` says they run on these machines. ``tools/k8s/build.sh`` builds
them into the user's cache directory (once per machine).

Everything binds to 127.0.0.1 on free ports; the API server authenticates one static admin
token (``system:masters``) and serves a self-signed certificate (clients skip verification:
the test owns both ends). No controller manager runs unless asked
(``start_cluster(..., controller_manager=True)``: the controllers that make a batch/v1 Job run,
:data:`CONTROLLERS`, plus any ``controllers`` named, with any ``controller_flags``: e.g. the
Workload API's feature gates and ``podgroup-protection-controller``, :data:`WORKLOAD_CONTROLLERS`),
so a namespace's ``default`` service account is created by :meth:`KubeCluster.ensure_namespace`.
Every wait is bounded.

``python tests/kube_cluster.py`` (``make k8s-smoke``) starts a cluster, creates a fake node,
binds a pod to it and waits until kwok reports it Running, printing the timings.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
import urllib3

ROOT = Path(__file__).resolve().parent.parent
READY_TIMEOUT = 60.0
#: kube-controller-manager's controllers when a cluster runs one: a Job's pods created and its
#: completions counted (job), its pods deleted with it (garbagecollector), a finished Job's
#: ``ttlSecondsAfterFinished`` (ttl-after-finished), each namespace's ``default`` service
#: account and its token, and the ``kube-root-ca.crt`` ConfigMap pods mount. Not the node
#: lifecycle controller: kwok's nodes are the tests' to taint.
CONTROLLERS = ("job", "garbagecollector", "ttl-after-finished", "serviceaccount", "serviceaccount-token",
               "root-ca-cert-publisher")
#: What a cluster serving Kubernetes' Workload API (``scheduling.k8s.io/v1beta1``, v1.37) adds to
#: :data:`CONTROLLERS`: the controller that removes a deleted PodGroup's protection finalizer once
#: no pod that has not terminated names the group (``docs/design/workload-api.md``). It needs the
#: ``GenericWorkload`` gate on the controller manager too (``controller_flags``).
WORKLOAD_CONTROLLERS = ("podgroup-protection-controller",)


def tools_dir() -> Path:
    """Where tools/k8s/build.sh puts the binaries (it builds what is missing, then says)."""
    done = subprocess.run([str(ROOT / "tools" / "k8s" / "build.sh")], stdout=subprocess.PIPE, text=True, check=True)
    return Path(done.stdout.strip().splitlines()[-1])


def helm_binary(tools: Path | None = None) -> Path:
    """helm (v3, built from its Go module by tools/k8s/build.sh beside the control plane), for
    the chart's tests (k8s/chart); ``tools``: the build's output directory (default: :func:`tools_dir`)."""
    helm = (tools if tools is not None else tools_dir()) / "bin" / "helm"
    if not helm.exists():
        raise FileNotFoundError(f"{helm} is missing: run tools/k8s/build.sh (make k8s-tools)")
    return helm


#: Ports handed out by :func:`free_port` in this process: control planes started in parallel
#: threads (tests/kube_hub.py) must never get the same one (the OS may hand a port just closed
#: to the next bind, and it is only taken when etcd or the API server starts).
_HANDED_OUT: set[int] = set()
_PORTS_LOCK = threading.Lock()


def free_port() -> int:
    """A loopback port nothing listens on now, never handed out before in this process."""
    with _PORTS_LOCK:
        for _ in range(100):
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                port = int(sock.getsockname()[1])
            if port not in _HANDED_OUT:
                _HANDED_OUT.add(port)
                return port
    raise RuntimeError("no free loopback port not handed out before")


@dataclass
class KubeCluster:
    """A running control plane: its URL, admin token, kubeconfig and processes."""

    server: str
    token: str
    kubeconfig: Path
    workdir: Path
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    #: Each process's command line, to start it again (:meth:`restart_apiserver`).
    commands: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {self.token}"
        self.session.verify = False

    def request(self, method: str, path: str, body: Mapping[str, Any] | None = None,
                timeout: float = 10.0) -> requests.Response:
        # verify=False per request: a session's verify loses to REQUESTS_CA_BUNDLE in the environment.
        return self.session.request(method, self.server + path, json=body, timeout=timeout, verify=False)

    def wait_for(self, what: str, check: Any, timeout: float = 30.0, interval: float = 0.05) -> Any:
        """Polls ``check()`` until it returns something truthy; raises after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            found = check()
            if found:
                return found
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what}: not within {timeout:g} s")
            time.sleep(interval)

    def ensure_namespace(self, name: str) -> None:
        """The namespace and its ``default`` service account (no controller manager makes it)."""
        for path, body in (
            ("/api/v1/namespaces", {"metadata": {"name": name}}),
            (f"/api/v1/namespaces/{name}/serviceaccounts", {"metadata": {"name": "default"}}),
        ):
            answer = self.request("POST", path, body)
            if answer.status_code not in (201, 409):
                raise RuntimeError(f"POST {path}: {answer.status_code} {answer.text[:300]}")

    def add_node(self, name: str, **allocatable: str) -> None:
        """A fake node (:func:`fake_node`), Ready, without the ``not-ready`` taint the API server
        puts on a new node: the node lifecycle controller would take it off once the node is
        Ready, but no controller manager runs here."""
        self.add_nodes([name], **allocatable)

    def add_nodes(self, names: list[str], timeout: float = 180.0,
                  labels: Mapping[str, Mapping[str, str]] | None = None, **allocatable: str) -> None:
        """:meth:`add_node` for many: all created, then each made ready as kwok gets to it.
        ``labels``: more labels per node name (e.g. a zone)."""
        for name in names:
            extra = labels.get(name) if labels is not None else None
            answer = self.request("POST", "/api/v1/nodes", fake_node(name, labels=extra, **allocatable))
            if answer.status_code != 201:
                raise RuntimeError(f"POST node {name}: {answer.status_code} {answer.text[:300]}")
        waiting = set(names)

        def ready() -> bool:
            for item in self.request("GET", "/api/v1/nodes", timeout=30).json().get("items", []):
                name = item["metadata"]["name"]
                conditions = item.get("status", {}).get("conditions", [])
                if name in waiting and any(c["type"] == "Ready" and c["status"] == "True" for c in conditions):
                    self._untaint(item)
                    waiting.discard(name)
            return not waiting

        self.wait_for(f"{len(names)} nodes Ready", ready, timeout=timeout, interval=0.2)

    def _untaint(self, node: dict[str, Any]) -> None:
        name = node["metadata"]["name"]
        taints = [t for t in node.get("spec", {}).get("taints") or () if t.get("key") != "node.kubernetes.io/not-ready"]
        patch = [{"op": "replace" if "taints" in node.get("spec", {}) else "add", "path": "/spec/taints", "value": taints}]
        answer = self.session.patch(f"{self.server}/api/v1/nodes/{name}", json=patch, verify=False, timeout=10,
                                    headers={"Content-Type": "application/json-patch+json"})
        if answer.status_code != 200:
            raise RuntimeError(f"PATCH node {name}: {answer.status_code} {answer.text[:300]}")

    def log(self, name: str) -> str:
        return (self.workdir / f"{name}.log").read_text(errors="replace")

    def stop_apiserver(self, timeout: float = 10.0) -> None:
        """Stops kube-apiserver alone (etcd and kwok go on): the cluster is unreachable until
        :meth:`restart_apiserver`, with nothing lost."""
        process = self.processes["kube-apiserver"]
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def restart_apiserver(self) -> None:
        """Starts kube-apiserver again, on the same port with the same certificates and token,
        and waits until it is ready."""
        self.processes["kube-apiserver"] = _start("kube-apiserver", self.commands["kube-apiserver"], self.workdir)
        self._wait_ready()

    def _wait_ready(self) -> None:
        def ready() -> bool:
            if self.processes["kube-apiserver"].poll() is not None:
                raise RuntimeError("kube-apiserver exited:\n" + self.log("kube-apiserver")[-3000:])
            try:
                return self.request("GET", "/readyz", timeout=2.0).status_code == 200
            except requests.RequestException:
                return False

        self.wait_for("kube-apiserver /readyz", ready, READY_TIMEOUT, 0.2)

    def _wait_controller_manager(self, port: int) -> None:
        """Until kube-controller-manager answers ``/healthz`` (its controllers started)."""
        process = self.processes["kube-controller-manager"]

        def healthy() -> bool:
            if process.poll() is not None:
                raise RuntimeError("kube-controller-manager exited:\n" + self.log("kube-controller-manager")[-3000:])
            try:
                return requests.get(f"https://127.0.0.1:{port}/healthz", timeout=2.0, verify=False).status_code == 200
            except requests.RequestException:
                return False

        self.wait_for("kube-controller-manager /healthz", healthy, READY_TIMEOUT, 0.2)

    def stop(self, timeout: float = 10.0) -> None:
        """Stops the processes one after another, last started first: kube-apiserver stopping
        while etcd is already gone waits out its whole shutdown timeout (10 s a cluster)."""
        deadline = time.monotonic() + timeout
        for process in reversed(list(self.processes.values())):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _start(name: str, args: list[str], workdir: Path) -> subprocess.Popen[bytes]:
    log = (workdir / f"{name}.log").open("wb")
    try:
        return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=workdir, start_new_session=True)
    finally:
        log.close()


def start_cluster(workdir: Path, tools: Path | None = None, *, kwok: bool = True,
                  api_flags: tuple[str, ...] = (), controller_manager: bool = False,
                  controllers: tuple[str, ...] = (), controller_flags: tuple[str, ...] = ()) -> KubeCluster:
    """Starts etcd, kube-apiserver (ready) and kwok in ``workdir``; the caller stops it.
    ``tools``: the build's output directory (default: :func:`tools_dir`); ``api_flags``: more
    kube-apiserver flags; ``controller_manager``: kube-controller-manager too (healthy before
    this returns), running :data:`CONTROLLERS` and ``controllers`` (kube-controller-manager's
    names, e.g. :data:`WORKLOAD_CONTROLLERS`) as the admin, without leader election, with
    ``controller_flags`` added to its command line (e.g.
    ``--feature-gates=GenericWorkload=true,WorkloadWithJob=true``: the gates are per process, so
    a gate the API server has is not on in the controller manager unless given here too).
    ``controllers`` or ``controller_flags`` without ``controller_manager`` is an error."""
    if (controllers or controller_flags) and not controller_manager:
        raise ValueError("controllers and controller_flags need controller_manager=True")
    tools = tools if tools is not None else tools_dir()
    bin_dir = tools / "bin"
    for tool in ("kube-apiserver", "kwok", *(["kube-controller-manager"] if controller_manager else [])):
        if not (bin_dir / tool).exists():
            raise FileNotFoundError(f"{bin_dir / tool} is missing: run tools/k8s/build.sh (make k8s-tools)")
    workdir.mkdir(parents=True, exist_ok=True)
    etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
    token = secrets.token_hex(16)
    (workdir / "tokens.csv").write_text(f'{token},admin,admin,"system:masters"\n')
    subprocess.run(["openssl", "genrsa", "-out", "sa.key", "2048"], cwd=workdir, check=True, capture_output=True)
    subprocess.run(["openssl", "rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub"], cwd=workdir, check=True,
                   capture_output=True)
    server = f"https://127.0.0.1:{api_port}"
    cluster = KubeCluster(server, token, workdir / "kubeconfig", workdir)
    try:
        cluster.processes["etcd"] = _start("etcd", [
            "etcd", "--data-dir", str(workdir / "etcd"), "--name", "default",
            "--listen-client-urls", f"http://127.0.0.1:{etcd_port}",
            "--advertise-client-urls", f"http://127.0.0.1:{etcd_port}",
            "--listen-peer-urls", f"http://127.0.0.1:{peer_port}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer_port}",
            "--initial-cluster", f"default=http://127.0.0.1:{peer_port}",
        ], workdir)
        cluster.commands["kube-apiserver"] = api_command = [
            str(bin_dir / "kube-apiserver"),
            f"--etcd-servers=http://127.0.0.1:{etcd_port}", "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none", f"--secure-port={api_port}",
            f"--cert-dir={workdir / 'certs'}", "--service-account-issuer=https://kubernetes.default.svc",
            "--service-account-key-file=sa.pub", "--service-account-signing-key-file=sa.key",
            "--token-auth-file=tokens.csv", "--authorization-mode=RBAC", "--service-cluster-ip-range=10.0.0.0/24",
            # Debian's etcd (3.4.23) cannot be asked for watch progress, so the API server's
            # streaming lists (watch-list, which kwok's client uses) wait for the next write to
            # start: kwok saw pods up to 50 s late. Without WatchList the clients list, then
            # watch (measured: bound to Running in 0.06 s instead of 0.8-52 s).
            "--feature-gates=WatchList=false",
            *api_flags,
        ]
        cluster.processes["kube-apiserver"] = _start("kube-apiserver", api_command, workdir)
        cluster._wait_ready()
        cluster.kubeconfig.write_text(f"""apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {{server: "{server}", insecure-skip-tls-verify: true}}
users:
- name: admin
  user: {{token: "{token}"}}
contexts:
- name: local
  context: {{cluster: local, user: admin}}
current-context: local
""")
        if controller_manager:
            _start_controller_manager(cluster, bin_dir / "kube-controller-manager", (*CONTROLLERS, *controllers),
                                      controller_flags)
        if kwok:
            cluster.processes["kwok"] = _start("kwok", [
                str(bin_dir / "kwok"), f"--kubeconfig={cluster.kubeconfig}",
                f"--config={tools / 'kwok-stages.yaml'}", "--manage-all-nodes=true",
            ], workdir)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _start_controller_manager(cluster: KubeCluster, binary: Path, controllers: tuple[str, ...],
                              flags: tuple[str, ...]) -> None:
    """kube-controller-manager against the cluster's API server, as its admin (the token of
    the kubeconfig), serving its health on a free loopback port, running ``controllers`` with
    ``flags`` last; the service-account token
    controller signs with the API server's key and hands out its self-signed certificate as
    the cluster's CA. Client QPS above the default 20: a test's Jobs should not queue behind
    the controller's own rate limiter."""
    port = free_port()
    workdir = cluster.workdir
    cluster.commands["kube-controller-manager"] = command = [
        str(binary), f"--kubeconfig={cluster.kubeconfig}", "--bind-address=127.0.0.1", f"--secure-port={port}",
        f"--cert-dir={workdir / 'controller-manager-certs'}", "--leader-elect=false",
        f"--controllers={','.join(dict.fromkeys(controllers))}", "--service-account-private-key-file=sa.key",
        f"--root-ca-file={workdir / 'certs' / 'apiserver.crt'}", "--use-service-account-credentials=false",
        # Its own delegated authentication would look the API server's client CA up; nothing
        # but /healthz (always allowed) is asked of it here.
        "--authentication-skip-lookup=true", "--kube-api-qps=200", "--kube-api-burst=400",
        *flags,
    ]
    cluster.processes["kube-controller-manager"] = _start("kube-controller-manager", command, workdir)
    cluster._wait_controller_manager(port)


@contextmanager
def running_cluster(workdir: Path) -> Iterator[KubeCluster]:
    cluster = start_cluster(workdir)
    try:
        yield cluster
    finally:
        cluster.stop()


def fake_node(name: str, cpu: str = "8", memory: str = "32Gi", pods: str = "110",
              labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A node kwok manages (it makes it Ready and runs its pods); ``labels`` join its own
    (``kubernetes.io/hostname``, ``type: kwok``)."""
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods}
    return {
        "metadata": {"name": name, "annotations": {"kwok.x-k8s.io/node": "fake"},
                     "labels": {"kubernetes.io/hostname": name, "type": "kwok", **(labels or {})}},
        "spec": {"taints": []},
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


def _smoke(workdir: Path) -> None:
    started = time.monotonic()
    with running_cluster(workdir) as cluster:
        print(f"kube-apiserver ready in {time.monotonic() - started:.1f} s at {cluster.server}")
        assert cluster.request("POST", "/api/v1/nodes", fake_node("kwok-node-0")).status_code == 201

        def node_ready() -> bool:
            node = cluster.request("GET", "/api/v1/nodes/kwok-node-0").json()
            return any(c["type"] == "Ready" and c["status"] == "True" for c in node.get("status", {}).get("conditions", []))

        t = time.monotonic()
        cluster.wait_for("node Ready", node_ready)
        print(f"fake node Ready in {time.monotonic() - t:.2f} s")
        cluster.ensure_namespace("smoke")
        pod = {"metadata": {"name": "p0"}, "spec": {"schedulerName": "pyscheduler", "containers": [
            {"name": "c", "image": "registry.k8s.io/pause:3.7", "resources": {"requests": {"cpu": "100m"}}}]}}
        answer = cluster.request("POST", "/api/v1/namespaces/smoke/pods", pod)
        assert answer.status_code == 201, answer.text
        binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p0"},
                   "target": {"apiVersion": "v1", "kind": "Node", "name": "kwok-node-0"}}
        t = time.monotonic()
        answer = cluster.request("POST", "/api/v1/namespaces/smoke/pods/p0/binding", binding)
        assert answer.status_code == 201, answer.text
        cluster.wait_for("pod Running", lambda: cluster.request(
            "GET", "/api/v1/namespaces/smoke/pods/p0").json().get("status", {}).get("phase") == "Running")
        print(f"pod bound and Running in {time.monotonic() - t:.2f} s")


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kube-smoke-") as tmp:
        try:
            _smoke(Path(tmp))
        except Exception as exc:
            print(f"smoke test failed: {exc}", file=sys.stderr)
            for name in ("etcd", "kube-apiserver", "kwok"):
                log = Path(tmp) / f"{name}.log"
                if log.exists():
                    print(f"--- {name} log (tail) ---\n{log.read_text(errors='replace')[-2000:]}", file=sys.stderr)
            sys.exit(1)
    print("ok")
    os._exit(0)
