"""docs/install.md run as written: every shell block of the page, in the page's order, against a
real kube-apiserver with kwok nodes and the controllers a namespace deletion and a Deployment's
rollout need (tests/kube_cluster.py), with the helm v3 that tools/k8s/build.sh builds.

Each block is marked ``<!-- install-doc: NAME -->``; a block without a mark, or with a name this
test does not run, fails :func:`test_every_shell_block_is_a_step_this_test_runs` (no untested
snippet). The block ``make`` is run by ``make test`` itself (pytest's prerequisites build the
image): the test checks the Makefile says so.

kwok only fakes the Deployment's pods: after an install, the test runs the scheduler process
itself as the release's Deployment says, authenticated only as its service account
(tests/helm_kit.py), as the pods would be. The blocks run with bash (``-euo pipefail``) in a
directory holding the checkout's ``k8s`` and ``docs`` (the page's relative paths), with
``KUBECONFIG`` naming the test cluster and helm first on ``PATH``."""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helm_kit import COMMAND_TIMEOUT, ROOT, Helm, kubectl, served_release
from kube_cluster import KubeCluster, helm_binary, start_cluster
from web_helpers import Server, stop

from pyscheduler_k8s.pods import app_id_of

pytestmark = pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")

PAGE = ROOT / "docs" / "install.md"
#: The page's steps, in its order.
STEPS = ("make", "install", "check", "first-pod", "queues", "upgrade", "uninstall", "from-yunikorn")
NAMESPACE = "pyscheduler"
#: What YuniKorn's chart leaves in its namespace that the page reads: the queues of its ConfigMap.
YUNIKORN_QUEUES = """\
partitions:
  - name: default
    placementrules:
      - name: provided
        create: true
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: sandbox
"""
#: A stand-in for YuniKorn's release (`helm uninstall yunikorn` needs one): its ConfigMap.
YUNIKORN_CHART = {
    "Chart.yaml": "apiVersion: v2\nname: yunikorn\nversion: 1.7.0\nappVersion: 1.7.0\n",
    "templates/configmap.yaml": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yunikorn-configs\ndata:\n"
        "  queues.yaml: |\n" + "".join(f"    {line}\n" for line in YUNIKORN_QUEUES.splitlines())),
}


def steps(page: str) -> list[tuple[str, str]]:
    """(name, script) of every ``sh`` block of the page, in order; a block without a mark is
    named ``""``."""
    found = []
    for match in re.finditer(r"(<!-- install-doc: ([\w-]+) -->\n)?```sh\n(.*?)```", page, re.S):
        found.append((match.group(2) or "", match.group(3)))
    return found


def test_every_shell_block_is_a_step_this_test_runs() -> None:
    blocks = steps(PAGE.read_text())
    assert [name for name, _ in blocks] == list(STEPS), "every sh block of docs/install.md is marked and run here"
    assert PAGE.read_text().count("```sh") == len(blocks)


def test_the_make_step_is_run_by_make_test() -> None:
    """``make image`` is what the page's first block says; ``make test`` runs it (pytest's
    prerequisites), so it is tested by every CI run."""
    (_, script), = [s for s in steps(PAGE.read_text()) if s[0] == "make"]
    assert script.strip() == "make image"
    makefile = (ROOT / "Makefile").read_text()
    prerequisites = re.search(r"^pytest:(.*)$", makefile, re.M)
    assert prerequisites is not None and "image" in prerequisites.group(1).split()


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeCluster]:
    # The namespace controller ends `kubectl delete namespace`; the Deployment and ReplicaSet
    # controllers roll the Deployment out on an upgrade (its pods stay pending: nothing
    # schedules the default scheduler's pods here, and kwok would only fake them).
    cluster = start_cluster(tmp_path_factory.mktemp("kube"), controller_manager=True,
                            controllers=("namespace", "deployment", "replicaset"))
    try:
        cluster.add_nodes(["kwok-0", "kwok-1"], cpu="4", memory="8Gi")
        yield cluster
    finally:
        cluster.stop()


class Page:
    """The page's blocks, run one by one in a directory that looks like the checkout."""

    def __init__(self, kube: KubeCluster, helm: Helm, workdir: Path) -> None:
        self.blocks = dict(steps(PAGE.read_text()))
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        for name in ("k8s", "docs"):
            (workdir / name).symlink_to(ROOT / name)
        self.env = {**helm.env, "KUBECONFIG": str(kube.kubeconfig),
                    "PATH": f"{helm.binary.parent}{os.pathsep}{os.environ['PATH']}"}

    def run(self, name: str) -> str:
        started = time.monotonic()
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", self.blocks[name]], cwd=self.workdir, env=self.env,
                              capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
        assert done.returncode == 0, f"docs/install.md, step {name}:\n{done.stdout}\n{done.stderr}"
        print(f"step {name}: {time.monotonic() - started:.1f} s")
        return done.stdout


def _leader(kube: KubeCluster, replicas: list[Server]) -> tuple[Server, str]:
    """The replica that leads, and its identity (the Lease's holder), once one does."""
    def leading() -> tuple[Server, str] | None:
        for replica in replicas:
            status = replica.get("/ws/v1/k8s/leadership").json()
            if status.get("role") == "leader":
                return replica, str(status["identity"])
        return None

    return kube.wait_for("a replica leads", leading, timeout=30)


def _queue_of(replica: Server, app: str) -> str | None:
    answer = replica.get(f"/ws/v1/partition/default/application/{app}")
    return str(answer.json()["queueName"]) if answer.status_code == 200 else None


def _stopped(replicas: list[Server]) -> None:
    while replicas:
        replica = replicas.pop()
        code = stop(replica)
        log = replica.log()
        assert code == 0 and "Traceback" not in log, log


def test_the_install_page_runs_as_written(kube: KubeCluster, tmp_path: Path) -> None:
    helm = Helm(helm_binary(), tmp_path / "helm")
    page = Page(kube, helm, tmp_path / "checkout")
    kube_helm = Helm(helm.binary, tmp_path / "helm", kube.kubeconfig)
    replicas: list[Server] = []
    try:
        # 2. Install, and the Deployment's two replicas (run here, as its service account).
        page.run("install")
        replicas += [served_release(kube, kube_helm, "pyscheduler", NAMESPACE, tmp_path / f"replica-{n}")
                     for n in range(2)]
        leader, identity = _leader(kube, replicas)
        out = page.run("check")
        for expected in ("deployment.apps/pyscheduler", "service/pyscheduler", "configmap/pyscheduler-configs"):
            assert expected in out, out
        assert out.strip().splitlines()[-1] == identity, out

        # 3. A pod bound to a kwok node, in the queue of its namespace.
        out = page.run("first-pod")
        assert out.strip().splitlines()[-1] in {"kwok-0", "kwok-1"}, out
        pod = kube.request("GET", "/api/v1/namespaces/default/pods/first-pod").json()
        assert _queue_of(leader, app_id_of(pod)) == "root.default"

        # 4. Other queues, applied without a restart (the event the page shows is there).
        for _ in range(30):
            out = page.run("queues")
            if "ConfigurationApplied" in out:
                break
            time.sleep(1)
        assert "ConfigurationApplied" in out, out
        queues = leader.get("/ws/v1/partition/default/queues").json()
        assert {q["queuename"] for q in queues.get("children") or ()} >= {"root.batch", "root.services"}

        # 5. A new version rolls out: the Deployment names the new image.
        out = page.run("upgrade")
        assert out.strip().splitlines()[-1] == "registry.example.com/pyscheduler:0.1.1", out

        # 6. Uninstall: the replicas go with their pods, then the release and its namespace.
        _stopped(replicas)
        page.run("uninstall")
        assert kube.request("GET", f"/api/v1/namespaces/{NAMESPACE}").status_code == 404
        assert kube.request("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/pyscheduler").status_code == 404

        # Switch from YuniKorn: its release and queues, and a pod written for it left pending.
        yunikorn = tmp_path / "yunikorn-chart"
        for name, text in YUNIKORN_CHART.items():
            (yunikorn / name).parent.mkdir(parents=True, exist_ok=True)
            (yunikorn / name).write_text(text)
        kube_helm.run("install", "yunikorn", str(yunikorn), "--namespace", "yunikorn", "--create-namespace")
        kubectl(kube, "apply", "-f", "-", stdin=_yunikorn_pod())
        page.run("from-yunikorn")
        assert kube.request("GET", "/api/v1/namespaces/yunikorn/configmaps/yunikorn-configs").status_code == 404
        replicas.append(served_release(kube, kube_helm, "pyscheduler", NAMESPACE, tmp_path / "after-yunikorn"))
        _leader(kube, replicas)
        node = kube.wait_for("the pod written for YuniKorn is bound", lambda: kube.request(
            "GET", "/api/v1/namespaces/default/pods/written-for-yunikorn").json()["spec"].get("nodeName"), timeout=60)
        assert node in {"kwok-0", "kwok-1"}
        assert _queue_of(replicas[0], "spark-job-1") == "root.sandbox"
    finally:
        _stopped(replicas)


def _yunikorn_pod() -> str:
    """A pod as YuniKorn's users write them: its schedulerName, applicationId and queue labels."""
    return """\
apiVersion: v1
kind: Pod
metadata:
  name: written-for-yunikorn
  namespace: default
  labels: {applicationId: spark-job-1, queue: root.sandbox}
spec:
  schedulerName: yunikorn
  containers:
    - name: main
      image: registry.example.com/busybox:1.36
      resources:
        requests: {cpu: 100m, memory: 64Mi}
"""
