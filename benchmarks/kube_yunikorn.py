"""YuniKorn's scheduler (its k8shim with its core) as a contender of the kubernetes family
(:mod:`benchmarks.kubernetes`), run from a binary the user supplies.

The binary is not built here: the Go module proxy refuses yunikorn-core and the scheduler
interface, and the repository's rules keep a fetched repository's code, a binary built from
it and any recipe that builds it out of this repository. ``docs/benchmarks.md`` ("YuniKorn's
scheduler as a contender") says which version was built, how, and how to point the benchmark
at it: ``PYSCHEDULER_BENCH_YUNIKORN=/path/to/yunikorn-scheduler``. Without it (or with a path
that is not an executable file) the contender is skipped with :func:`skip_message`.

How the k8shim is configured (read from its ``pkg/conf`` at v1.9.0), and what this sets:

- the kubeconfig from ``KUBECONFIG`` (the cluster's), its namespace from ``NAMESPACE``
  (``default``, where it reads its ConfigMaps);
- its ConfigMaps ``yunikorn-defaults`` (empty) and ``yunikorn-configs`` (:func:`config_maps`):
  ``queues.yaml`` is the benchmark's own queue file (:data:`benchmarks.kube_contenders.QUEUES`:
  pyscheduler reads YuniKorn's format, so it passes as is), ``kubernetes.qps`` and
  ``kubernetes.burst`` 5,000 (its defaults are 1,000/1,000; scheduler_perf gives kube-scheduler
  5,000/5,000, so both Go schedulers get the same client limits);
- its REST service: YuniKorn's core listens on ``:9080`` (every interface) and has no setting
  for it. The build described in the docs has one local change: the address comes from
  ``YUNIKORN_WEB_ADDRESS`` (default ``127.0.0.1:9080``); this contender sets a free loopback
  port. An unpatched binary ignores the variable and listens on ``:9080``.

Pods reach it by ``schedulerName: yunikorn`` and YuniKorn's labels ``applicationId`` and
``queue`` (the workloads' pods carry both, :func:`benchmarks.kube_workloads.plain_pod`); no
admission controller runs. It runs no leader election.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchmarks.kube_contenders import KUBE_BURST, KUBE_QPS, QUEUES, Contender

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))

from kube_cluster import KubeCluster, free_port  # noqa: E402

#: The environment variable naming the YuniKorn scheduler binary.
BINARY_ENV = "PYSCHEDULER_BENCH_YUNIKORN"
#: The contender's name in the report, and the pods' ``schedulerName`` (the k8shim's constant).
YUNIKORN, YUNIKORN_NAME = "yunikorn", "yunikorn"
#: The scheduler's namespace: where its ConfigMaps are (pods may be in any namespace).
NAMESPACE = "default"
CONFIG_MAP, DEFAULTS_CONFIG_MAP = "yunikorn-configs", "yunikorn-defaults"
#: The local build's REST address variable (module doc).
WEB_ADDRESS_ENV = "YUNIKORN_WEB_ADDRESS"


def yunikorn_binary(environ: Mapping[str, str] | None = None) -> Path | None:
    """The binary :data:`BINARY_ENV` names, if it is an executable file; else None."""
    value = (os.environ if environ is None else environ).get(BINARY_ENV, "").strip()
    if not value:
        return None
    path = Path(value).expanduser()
    return path if path.is_file() and os.access(path, os.X_OK) else None


def required_binary() -> Path:
    """:func:`yunikorn_binary`, or ValueError with :func:`skip_message`."""
    binary = yunikorn_binary()
    if binary is None:
        raise ValueError(skip_message())
    return binary


def skip_message(environ: Mapping[str, str] | None = None) -> str:
    """Why the contender does not run, and how to make it run."""
    value = (os.environ if environ is None else environ).get(BINARY_ENV, "").strip()
    found = f"{BINARY_ENV}={value} is not an executable file" if value else f"{BINARY_ENV} is not set"
    return (f"yunikorn contender skipped: {found}. Build YuniKorn's scheduler (yunikorn-k8shim's ./pkg/cmd/shim "
            f"with yunikorn-core and yunikorn-scheduler-interface) outside this repository as docs/benchmarks.md "
            f"(\"YuniKorn's scheduler as a contender\") describes, then set {BINARY_ENV}=/path/to/yunikorn-scheduler")


def config_maps(queues: str = QUEUES, qps: int = KUBE_QPS, burst: int = KUBE_BURST) -> list[dict[str, Any]]:
    """The two ConfigMaps the k8shim reads at start in its namespace: ``yunikorn-defaults``
    (empty: every default) and ``yunikorn-configs`` (the queues and the client limits)."""
    data = {"queues.yaml": queues, "kubernetes.qps": str(qps), "kubernetes.burst": str(burst)}
    return [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NAMESPACE},
             "data": values} for name, values in ((DEFAULTS_CONFIG_MAP, {}), (CONFIG_MAP, data))]


class YunikornContender(Contender):
    """The user's YuniKorn scheduler binary, its ConfigMaps written before each start."""

    name = YUNIKORN
    tag = "yuni"
    scheduler_name = YUNIKORN_NAME
    client_limits = f"QPS {KUBE_QPS:,}, burst {KUBE_BURST:,} (kubernetes.qps/burst)"

    def __init__(self, cluster: KubeCluster, workdir: Path, binary: Path) -> None:
        super().__init__(cluster, workdir)
        self.binary = binary

    def command(self) -> tuple[list[str], dict[str, str]]:
        env = {**os.environ, "KUBECONFIG": str(self.cluster.kubeconfig), "NAMESPACE": NAMESPACE,
               WEB_ADDRESS_ENV: f"127.0.0.1:{free_port()}"}
        return [str(self.binary)], env

    def start(self) -> None:
        self.write_config_maps()
        super().start()

    def write_config_maps(self) -> None:
        """Creates or replaces :func:`config_maps` (it reads them once at start and watches them)."""
        base = f"/api/v1/namespaces/{NAMESPACE}/configmaps"
        for body in config_maps():
            answer = self.cluster.request("POST", base, body)
            if answer.status_code == 409:
                answer = self.cluster.request("PUT", f"{base}/{body['metadata']['name']}", body)
            if answer.status_code not in (200, 201):
                raise RuntimeError(f"ConfigMap {body['metadata']['name']}: {answer.status_code} {answer.text[:300]}")
