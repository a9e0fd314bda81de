"""``make k8s-demo``: a real Kubernetes control plane on loopback (etcd, kube-apiserver, kwok)
with 50 fake nodes, and pyscheduler serving its REST API with the Kubernetes shim attached.
Prints how to point kubectl at it; Ctrl-C stops everything.

``--check`` (used by the tests): once up, submit one pod, wait until pyscheduler has bound it,
and stop.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from kube_cluster import KubeCluster, free_port, start_cluster  # noqa: E402

QUEUES = """\
partitions:
  - name: default
    placementrules:
      - name: provided
        create: true
      - name: tag
        value: namespace
        create: true
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: batch
            resources: {max: {vcore: 40}}
          - name: service
"""


def _serve(workdir: Path, cluster: KubeCluster, port: int) -> subprocess.Popen[bytes]:
    config = workdir / "queues.yaml"
    config.write_text(QUEUES)
    env = {**os.environ, "PYSCHEDULER_K8S_KUBECONFIG": str(cluster.kubeconfig), "PYSCHEDULER_K8S_NAMESPACE": "default"}
    log = (workdir / "pyscheduler.log").open("wb")
    return subprocess.Popen([sys.executable, "-m", "pyscheduler.cli", "serve", "--bind", f"127.0.0.1:{port}",
                             "--config", str(config), "--rm", "pyscheduler_k8s:attach"],
                            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _check(cluster: KubeCluster) -> None:
    pod = {"metadata": {"name": "hello", "labels": {"queue": "root.batch"}},
           "spec": {"schedulerName": "pyscheduler", "containers": [
               {"name": "c", "image": "registry.k8s.io/pause:3.7", "resources": {"requests": {"cpu": "500m"}}}]}}
    answer = cluster.request("POST", "/api/v1/namespaces/demo/pods", pod)
    if answer.status_code != 201:
        raise RuntimeError(f"pod not created: {answer.status_code} {answer.text[:200]}")
    node = cluster.wait_for("the demo pod bound", lambda: cluster.request(
        "GET", "/api/v1/namespaces/demo/pods/hello").json().get("spec", {}).get("nodeName"), timeout=60)
    print(f"check: pod demo/hello bound to {node} by pyscheduler")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=50, help="fake nodes (default 50)")
    parser.add_argument("--check", action="store_true", help="submit one pod, wait for its binding, and stop")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pyscheduler-k8s-demo-") as tmp:
        workdir = Path(tmp)
        started = time.monotonic()
        print("starting etcd, kube-apiserver and kwok on 127.0.0.1 ...", flush=True)
        cluster = start_cluster(workdir / "cluster")
        server: subprocess.Popen[bytes] | None = None
        try:
            cluster.add_nodes([f"kwok-node-{n}" for n in range(args.nodes)], cpu="8", memory="32Gi")
            print(f"  {args.nodes} fake nodes Ready", flush=True)
            cluster.ensure_namespace("demo")
            port = free_port()
            server = _serve(workdir, cluster, port)
            cluster.wait_for("pyscheduler serving", lambda: _answers(port), timeout=60)
            print(f"""
ready in {time.monotonic() - started:.0f} s: {args.nodes} fake nodes, pyscheduler's REST API at http://127.0.0.1:{port}/ws/v1/

  export KUBECONFIG={cluster.kubeconfig}
  kubectl get nodes
  kubectl -n demo run web --image=registry.k8s.io/pause:3.7 --labels=queue=root.service \\
      --overrides='{{"spec": {{"schedulerName": "pyscheduler"}}}}'
  kubectl -n demo get pods -o wide
  curl http://127.0.0.1:{port}/ws/v1/partition/default/nodes

Edit the queues live: kubectl -n default create configmap pyscheduler-configs --from-file=queues.yaml=...
Logs: {workdir}/pyscheduler.log, {workdir}/cluster/*.log. Ctrl-C stops everything.
""", flush=True)
            if args.check:
                _check(cluster)
                return 0
            signal.sigwait({signal.SIGINT, signal.SIGTERM})
            return 0
        finally:
            if server is not None and server.poll() is None:
                server.send_signal(signal.SIGTERM)
                try:
                    server.wait(15)
                except subprocess.TimeoutExpired:
                    server.kill()
            cluster.stop()


def _answers(port: int) -> bool:
    import requests

    try:
        return requests.get(f"http://127.0.0.1:{port}/ws/v1/k8s/leadership", timeout=2).json().get("role") == "leader"
    except (requests.RequestException, ValueError):
        return False


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})  # for sigwait
    sys.exit(main())
