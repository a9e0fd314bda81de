"""The kubernetes family's contenders (:mod:`benchmarks.kubernetes`): the schedulers it starts
on the cluster, how, and which of them run.

Each contender runs alone on the cluster, started by :meth:`Contender.start` in a session of its
own (so :func:`cpu_seconds` counts its whole process group: gunicorn's workers for pyscheduler)
and stopped by :meth:`Contender.stop` (SIGTERM, then SIGKILL). Its name is its results' name in
the report; its four-letter ``tag`` names its pods and its log, so contenders never share pods.

- ``limit``: :class:`benchmarks.kube_limit.LimitContender`, a binder without decisions (pod i to
  node i mod N): the API server's own rate of bindings, the ceiling.
- ``pyscheduler``: ``pyscheduler serve --rm pyscheduler_k8s:attach`` from this checkout.
- ``pyscheduler (baseline)``: the same command, importing another checkout's core, REST layer and
  shim (:func:`benchmarks.baseline.served_baseline_environment`).
- ``kube-scheduler``: built from the cluster's Kubernetes version, client QPS and burst 5,000
  (scheduler_perf's; the default 50/100 would cap it at 50 bindings/s).
- ``yunikorn``: YuniKorn's scheduler from the binary ``PYSCHEDULER_BENCH_YUNIKORN`` names
  (:mod:`benchmarks.kube_yunikorn`); left out, with a message saying how to supply one, without it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))

from kube_cluster import KubeCluster, free_port  # noqa: E402

from pyscheduler_k8s.shim import ShimOptions  # noqa: E402

KUBE_QPS, KUBE_BURST = 5_000, 5_000
PYSCHEDULER_NAME, KUBE_SCHEDULER_NAME = "pyscheduler", "default-scheduler"
"""The pods' ``schedulerName`` for the shim (this checkout's or the baseline's) and kube-scheduler."""
#: The contenders' names in the report (``PhaseResult.scheduler``), in the order they run.
PYSCHEDULER, BASELINE, KUBE_SCHEDULER = "pyscheduler", "pyscheduler (baseline)", "kube-scheduler"
#: ``contenders`` of :func:`benchmarks.kubernetes.run` (``--kube-contenders``) -> the contender's name in the report.
#: ``limit``: :class:`benchmarks.kube_limit.LimitContender`, the binder without decisions (the ceiling).
#: ``yunikorn``: :class:`benchmarks.kube_yunikorn.YunikornContender`, from a binary the user supplies.
CONTENDERS = {"limit": "limit", "pyscheduler": PYSCHEDULER, "baseline": BASELINE, "kube-scheduler": KUBE_SCHEDULER,
              "yunikorn": "yunikorn"}
QUEUES = """\
partitions:
  - name: default
    placementrules:
      - name: provided
        create: true
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: bench
          # The preemption workload's wave (benchmarks/kube_workloads.py): YuniKorn preempts
          # for a queue below its guarantee; this one is above any cluster's size.
          - name: bench-high
            properties: {preemption.delay: 100ms}
            resources:
              guaranteed: {vcore: 1000000}
"""


class Contender:
    """A scheduler the benchmark starts (:meth:`command`, its log in the work directory) and
    stops (SIGTERM, then SIGKILL)."""

    name: str
    tag: str
    """Four letters, unique per contender: in its pods' names (:meth:`Bench.prefix`) and its log's."""
    scheduler_name: str
    client_limits: str

    def __init__(self, cluster: KubeCluster, workdir: Path) -> None:
        self.cluster = cluster
        self.workdir = workdir
        self.process: subprocess.Popen[bytes] | None = None

    def command(self) -> tuple[list[str], dict[str, str]]:
        raise NotImplementedError

    def start(self) -> None:
        args, env = self.command()
        with (self.workdir / f"{self.tag}.log").open("ab") as log:
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env,
                                            start_new_session=True)

    def stop(self) -> None:
        terminate(self.process)


class PyschedulerContender(Contender):
    """``pyscheduler serve --rm pyscheduler_k8s:attach`` run by this interpreter, importing the
    packages ``environment`` (default this process's) leads it to."""

    name = PYSCHEDULER
    tag = "pysc"
    scheduler_name = PYSCHEDULER_NAME
    client_limits = f"none ({ShimOptions.binders} binder threads)"

    def __init__(self, cluster: KubeCluster, workdir: Path, environment: Mapping[str, str] | None = None) -> None:
        super().__init__(cluster, workdir)
        self.environment = dict(os.environ if environment is None else environment)

    def command(self) -> tuple[list[str], dict[str, str]]:
        config = self.workdir / "queues.yaml"
        config.write_text(QUEUES)
        env = {**self.environment, "PYSCHEDULER_K8S_KUBECONFIG": str(self.cluster.kubeconfig),
               "PYSCHEDULER_K8S_NAMESPACE": "default", "PYSCHEDULER_K8S_LEADER_ELECTION": "false"}
        return [sys.executable, "-m", "pyscheduler.cli", "serve", "--bind", f"127.0.0.1:{free_port()}", "--config",
                str(config), "--rm", "pyscheduler_k8s:attach"], env


class BaselineContender(PyschedulerContender):
    """The same command with the baseline's core, REST layer and shim: ``environment`` is
    :func:`benchmarks.baseline.served_baseline_environment`'s."""

    name = BASELINE
    tag = "base"
    client_limits = "none (the baseline's binder pool)"

    def __init__(self, cluster: KubeCluster, workdir: Path, environment: Mapping[str, str]) -> None:
        super().__init__(cluster, workdir, environment)


class KubeSchedulerContender(Contender):
    name = KUBE_SCHEDULER
    tag = "kube"
    scheduler_name = KUBE_SCHEDULER_NAME
    client_limits = f"QPS {KUBE_QPS:,}, burst {KUBE_BURST:,}"

    def __init__(self, cluster: KubeCluster, workdir: Path, binary: Path) -> None:
        super().__init__(cluster, workdir)
        self.binary = binary

    def command(self) -> tuple[list[str], dict[str, str]]:
        config = self.workdir / "kube-scheduler.yaml"
        config.write_text(f"""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: {self.cluster.kubeconfig}
  qps: {KUBE_QPS}
  burst: {KUBE_BURST}
leaderElection:
  leaderElect: false
""")
        kubeconfig = str(self.cluster.kubeconfig)
        return [str(self.binary), f"--config={config}", "--bind-address=127.0.0.1", f"--secure-port={free_port()}",
                f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}",
                "--v=1"], dict(os.environ)


def cpu_seconds(process: subprocess.Popen[bytes] | None) -> float:
    """CPU time (user + system) used so far by a process started in a session of its own and
    every process of its group (gunicorn's workers, for pyscheduler)."""
    if process is None:
        return 0.0
    ticks = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue  # ended meanwhile
        if int(fields[2]) == process.pid:  # the process group
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def terminate(process: subprocess.Popen[bytes] | None) -> None:
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(5)


def contenders_to_run(requested: list[str] | None, baseline: str | Path | None,
                      say: Callable[[str], None] | None = None) -> list[str]:
    """The keys of :data:`CONTENDERS` to run, in that order: ``requested`` (default all
    available: the baseline only with a ``baseline`` directory). ValueError for an unknown key,
    or the baseline requested without its directory. ``yunikorn`` without its binary
    (:func:`benchmarks.kube_yunikorn.yunikorn_binary`) is left out, ``say`` telling why and how
    to supply one; ValueError when nothing else was asked for."""
    # Imported here: kube_yunikorn subclasses this module's Contender.
    from benchmarks.kube_yunikorn import skip_message, yunikorn_binary

    wanted = set(requested) if requested is not None else {key for key in CONTENDERS if key != "baseline" or baseline}
    unknown = sorted(wanted - set(CONTENDERS))
    if unknown or not wanted:
        raise ValueError(f"unknown contenders {unknown or requested!r}: choose from {', '.join(CONTENDERS)}")
    if "baseline" in wanted and not baseline:
        raise ValueError("the baseline contender needs a baseline directory (--baseline DIR)")
    if "yunikorn" in wanted and yunikorn_binary() is None:
        wanted.discard("yunikorn")
        if not wanted:
            raise ValueError(skip_message())
        if say is not None:
            say(skip_message())
    return [key for key in CONTENDERS if key in wanted]
