"""The container image `make image` builds (Containerfile, tools/image/build.sh; docs/image.md).

`make test` builds it before pytest runs (the pytest target's prerequisites include `image`); a
missing image fails here, saying to run `make image`, as a missing wheel fails tests/test_wheel.py.
podman runs with tools/image/containers.conf (CONTAINERS_CONF: runc, cgroupfs, explicit ulimits)
on the host's network; every server the tests start binds 127.0.0.1 only, and every wait is
bounded.

What is checked: the configuration (entry point and command as k8s/deploy/30-deployment.yaml runs
them, the non-root user, the port, the health command), the file system (no compiler, Rust tool,
maturin or pip; the packages import), the size, the default command (the Kubernetes shim), a
served scheduler answering its health check from the host and through the image's own health
command, with a read-only root file system as the Helm chart runs it, and the image's scheduler
placing a pod on a real API server (tests/kube_cluster.py).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import tomllib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from kube_cluster import KubeCluster, free_port, start_cluster

ROOT = Path(__file__).resolve().parent.parent
VERSION = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["package"]["version"]
IMAGE = f"localhost/pyscheduler:{VERSION}"
HEALTH_PATH = "/ws/v1/scheduler/healthcheck"
#: The image's size bound: 168 MB measured (Debian bookworm minbase with python3: 124 MB; the
#: virtual environment: 44 MB, grpcio the biggest at 19 MB). A base or dependency that grows it by
#: half again is a decision to make, not a drift.
SIZE_BOUND_MB = 250
UID = 10001
#: What must not be in the runtime image: compilers, linkers, the Rust tools, the wheel builders.
BUILD_TOOLS = ("gcc", "cc", "c++", "g++", "ld", "as", "make", "cargo", "rustc", "rustup", "maturin", "pip", "pip3")


def podman(*args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"CONTAINERS_CONF": str(ROOT / "tools" / "image" / "containers.conf")}
    done = subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout, env=env)
    if check and done.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)}: exit {done.returncode}\n{done.stdout}\n{done.stderr}")
    return done


@pytest.fixture(scope="module")
def inspected() -> dict[str, Any]:
    """``podman image inspect`` of the image (fails, naming make image, when it is missing)."""
    done = podman("image", "inspect", IMAGE, check=False)
    if done.returncode != 0:
        pytest.fail(f"no image {IMAGE}: run `make image` (make test does it first)\n{done.stderr.strip()}")
    found: dict[str, Any] = json.loads(done.stdout)[0]
    return found


def run_in_image(inspected: dict[str, Any], *args: str, entrypoint: str | None = None,
                 timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``podman run --rm`` of the image with no network: ``args`` after the entry point."""
    options = ["--entrypoint", entrypoint] if entrypoint else []
    return podman("run", "--rm", "--network", "none", *options, IMAGE, *args, timeout=timeout, check=False)


# -- the configuration -----------------------------------------------------------------------------


def test_entry_point_and_command_are_the_deployments(inspected: dict[str, Any]) -> None:
    config = inspected["Config"]
    deployment = next(yaml.safe_load_all((ROOT / "k8s" / "deploy" / "30-deployment.yaml").read_text()))
    command = deployment["spec"]["template"]["spec"]["containers"][0]["command"]
    assert config["Entrypoint"] == ["pyscheduler"]
    assert config["Cmd"] == ["serve", "--bind", "0.0.0.0:9080", "--rm", "pyscheduler_k8s:attach"]
    assert [*config["Entrypoint"], *config["Cmd"]] == command
    assert "9080/tcp" in config["ExposedPorts"]
    assert config["User"] == f"{UID}:{UID}"
    assert config["Labels"]["org.opencontainers.image.version"] == VERSION
    assert any(e.startswith("PATH=/opt/pyscheduler/bin:") for e in config["Env"])


def test_the_health_command_is_pyscheduler_healthcheck(inspected: dict[str, Any]) -> None:
    # podman shows it beside the configuration, Docker inside it.
    health = inspected.get("Healthcheck") or inspected["Config"].get("Healthcheck")
    assert health is not None, "no HEALTHCHECK: the image must be built with --format docker"
    assert health["Test"] == ["CMD", "pyscheduler", "healthcheck"]
    assert 0 < health["Timeout"] <= health["Interval"]
    assert health["Retries"] >= 1


def test_the_image_is_small(inspected: dict[str, Any]) -> None:
    size_mb = inspected["Size"] / 1e6
    assert size_mb < SIZE_BOUND_MB, f"{IMAGE} is {size_mb:.0f} MB, the bound is {SIZE_BOUND_MB} MB"


# -- the file system -------------------------------------------------------------------------------


def test_it_runs_as_the_non_root_user(inspected: dict[str, Any]) -> None:
    done = run_in_image(inspected, "-c", "id -u; id -g; id -un; test -w $HOME && echo home-writable",
                        entrypoint="/bin/sh")
    assert done.stdout.split() == [str(UID), str(UID), "pyscheduler", "home-writable"], done.stderr


def test_no_compiler_rust_tool_or_pip_in_the_image(inspected: dict[str, Any]) -> None:
    script = (
        f"for t in {' '.join(BUILD_TOOLS)}; do command -v $t; done; "
        # Any executable of the toolchains, wherever it is (gcc-12-base, libgcc's, is no compiler).
        "find / -xdev -type f -perm -u+x \\( -name 'cargo' -o -name 'rustc' -o -name 'cc1*' -o -name 'maturin' "
        "-o -name 'gcc*' -o -name 'x86_64-linux-gnu-*' \\) -print 2>/dev/null; "
        "find / -xdev -name '*.rs' -print 2>/dev/null; "
        "python3 -c 'import pip' 2>/dev/null && echo 'pip importable'; "
        "ls -d /opt/rust /build /root/.cargo /wheelhouse 2>/dev/null; true"
    )
    done = run_in_image(inspected, "-c", script, entrypoint="/bin/sh")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [], f"build tools or build leftovers in the image:\n{done.stdout}"


def test_the_packages_and_their_commands_are_installed(inspected: dict[str, Any]) -> None:
    script = (
        "import json, importlib.metadata as m, pyscheduler._native, pyscheduler_web.server, grpc\n"
        "from pyscheduler_k8s import attach\n"
        "print(json.dumps({n: m.version(n) for n in ('pyscheduler', 'pyscheduler-web', 'pyscheduler-k8s', 'grpcio')}))\n"
    )
    done = run_in_image(inspected, "-c", script, entrypoint="python3")
    assert done.returncode == 0, done.stderr
    versions = json.loads(done.stdout)
    assert versions == {"pyscheduler": VERSION, "pyscheduler-web": VERSION, "pyscheduler-k8s": VERSION,
                        "grpcio": _pin("grpcio")}
    done = run_in_image(inspected, "version")
    assert done.stdout.strip() == f"pyscheduler {VERSION} (native {VERSION})", done.stderr
    done = run_in_image(inspected, "--help", entrypoint="kubectl-pyscheduler")
    assert done.returncode == 0 and "usage" in done.stdout.lower(), done.stderr


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        if match := re.fullmatch(r"([A-Za-z0-9_.-]+)==(\S+)", line.strip()):
            pins[match[1].lower().replace("_", "-")] = match[2]
    return pins


def _pin(name: str) -> str:
    return _pins(ROOT / "requirements" / "image.txt")[name]


def test_the_images_pins_are_the_tested_ones() -> None:
    """requirements/image.txt pins what requirements/dev.txt pins (the versions the tests ran with),
    plus Flask's own dependencies, which dev.txt leaves to pip."""
    image, dev = _pins(ROOT / "requirements" / "image.txt"), _pins(ROOT / "requirements" / "dev.txt")
    assert {name: version for name, version in image.items() if dev.get(name, version) != version} == {}
    for runtime in ("pyyaml", "fsspec", "flask", "gunicorn", "orjson", "prometheus-client", "urllib3", "grpcio",
                    "protobuf"):
        assert runtime in image
    assert _pins(ROOT / "requirements" / "image-build.txt")["maturin"] == dev["maturin"]


# -- running it ------------------------------------------------------------------------------------


def test_the_default_command_serves_the_kubernetes_shim(inspected: dict[str, Any]) -> None:
    """With no cluster (no network, no service account), the default command starts the shim and
    stops at once, saying why: the command a pod runs, minus the pod."""
    started = time.monotonic()
    done = run_in_image(inspected, timeout=90)
    assert done.returncode != 0
    assert "no cluster: no --kubeconfig, no KUBECONFIG" in done.stdout + done.stderr
    assert time.monotonic() - started < 90


@dataclass
class Container:
    name: str
    port: int

    @property
    def health_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{HEALTH_PATH}"


def _start(port: int, *args: str, options: tuple[str, ...] = ()) -> Container:
    """The image started detached on the host's network with a read-only root file system (as the
    Helm chart runs it), ``args`` after its entry point, its health command told the port."""
    name = f"pyscheduler-test-{uuid.uuid4().hex[:8]}"
    podman("run", "--detach", "--rm", "--name", name, "--network", "host", "--read-only",
           "--env", f"PYSCHEDULER_HEALTHCHECK_URL=http://127.0.0.1:{port}{HEALTH_PATH}", *options, IMAGE, *args)
    return Container(name, port)


def _wait_healthy(container: Container, timeout: float = 90) -> dict[str, Any]:
    """The health document once it says healthy, asked from the host; raises after ``timeout``
    or when the container is gone, with its log."""
    deadline = time.monotonic() + timeout
    last = "nothing yet"
    while time.monotonic() < deadline:
        try:
            answer = requests.get(container.health_url, timeout=5)
            if answer.status_code == 200 and answer.json().get("Healthy") is True:
                document: dict[str, Any] = answer.json()
                return document
            last = f"{answer.status_code} {answer.text[:200]}"
        except (requests.RequestException, ValueError) as exc:
            last = str(exc)
        if podman("container", "exists", container.name, check=False).returncode != 0:
            last += " (the container is gone)"
            break
        time.sleep(0.5)
    logs = podman("logs", container.name, check=False)
    raise AssertionError(f"{container.health_url} not healthy within {timeout:g} s: {last}\n"
                         f"{logs.stdout[-3000:]}{logs.stderr[-3000:]}")


def _stop(container: Container) -> None:
    podman("rm", "--force", "--time", "10", container.name, timeout=60, check=False)


@pytest.fixture(scope="module")
def demo(inspected: dict[str, Any]) -> Iterator[Container]:
    """The image serving the demo cluster (the native module, the REST service) on a free
    loopback port."""
    port = free_port()
    container = _start(port, "serve", "--demo", "--bind", f"127.0.0.1:{port}")
    try:
        _wait_healthy(container)
        yield container
    finally:
        _stop(container)


def test_the_health_check_answers_healthy_from_the_host(demo: Container) -> None:
    answer = requests.get(demo.health_url, timeout=10)
    assert answer.status_code == 200
    document = answer.json()
    assert document["Healthy"] is True and document["HealthChecks"]
    assert all(check["Succeeded"] for check in document["HealthChecks"])
    # The demo RM schedules: the REST API shows its queues.
    queues = requests.get(f"http://127.0.0.1:{demo.port}/ws/v1/partition/default/queues", timeout=10)
    assert queues.status_code == 200 and queues.json()["queuename"] == "root"


def test_the_images_own_health_command_succeeds_inside_it(demo: Container) -> None:
    """podman runs the HEALTHCHECK of the image's configuration in the container (here, with no
    systemd for its timers, only when asked; it logs that it cannot add them)."""
    done = podman("healthcheck", "run", demo.name, timeout=60, check=False)
    assert done.returncode == 0, f"podman healthcheck run: {done.returncode} {done.stdout} {done.stderr}"
    state = json.loads(podman("inspect", demo.name).stdout)[0]["State"]
    health = state.get("Health") or state.get("Healthcheck")
    assert health["Status"] == "healthy"
    assert health["Log"][-1]["ExitCode"] == 0 and health["Log"][-1]["Output"].strip() == "healthy"
    # The same command told a port nothing listens on says unhealthy: the verdict is the server's.
    done = podman("exec", demo.name, "pyscheduler", "healthcheck", "--url", f"http://127.0.0.1:1{HEALTH_PATH}",
                  "--timeout", "5", timeout=60, check=False)
    assert done.returncode == 1 and "not reached" in done.stderr


def test_the_server_runs_as_the_non_root_user(demo: Container) -> None:
    status = podman("exec", demo.name, "cat", "/proc/1/status", timeout=60).stdout
    uids = next(line.split()[1:] for line in status.splitlines() if line.startswith("Uid:"))
    assert uids == [str(UID)] * 4


# -- on Kubernetes ---------------------------------------------------------------------------------


@pytest.fixture
def kube(tmp_path: Path) -> Iterator[KubeCluster]:
    cluster = start_cluster(tmp_path / "cluster")
    try:
        yield cluster
    finally:
        cluster.stop()


QUEUES = """\
partitions:
  - name: default
    placementrules:
      - {name: provided, create: true}
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: default
"""


def test_the_images_scheduler_places_a_pod_on_a_real_api_server(inspected: dict[str, Any], kube: KubeCluster,
                                                                 tmp_path: Path) -> None:
    """The default command with only the bind changed (loopback), the cluster's kubeconfig given
    as a pod's service account would be: the image's scheduler binds a pod to a fake node."""
    kube.ensure_namespace("pyscheduler")
    config_map = {"metadata": {"name": "pyscheduler-configs", "namespace": "pyscheduler"},
                  "data": {"queues.yaml": QUEUES}}
    assert kube.request("POST", "/api/v1/namespaces/pyscheduler/configmaps", config_map).status_code == 201
    kube.add_node("kwok-node-0")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(kube.kubeconfig.read_text())
    kubeconfig.chmod(0o644)  # the image's user reads it
    port = free_port()
    container = _start(port, "serve", "--bind", f"127.0.0.1:{port}", "--rm", "pyscheduler_k8s:attach", options=(
        "--volume", f"{kubeconfig}:/etc/pyscheduler/kubeconfig:ro",
        "--env", "PYSCHEDULER_K8S_KUBECONFIG=/etc/pyscheduler/kubeconfig",
        "--env", "PYSCHEDULER_K8S_NAMESPACE=pyscheduler"))
    try:
        _wait_healthy(container)
        kube.ensure_namespace("work")
        pod = {"metadata": {"name": "p0", "labels": {"queue": "root.default"}}, "spec": {
            "schedulerName": "pyscheduler", "containers": [
                {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": "100m"}}}]}}
        created = kube.request("POST", "/api/v1/namespaces/work/pods", pod)
        assert created.status_code == 201, created.text
        pod_uid = created.json()["metadata"]["uid"]
        try:
            kube.wait_for("p0 bound by the image's scheduler", lambda: kube.request(
                "GET", "/api/v1/namespaces/work/pods/p0").json()["spec"].get("nodeName") == "kwok-node-0", timeout=60)
        except TimeoutError as exc:
            logs = podman("logs", container.name, check=False)
            raise AssertionError(f"{exc}\n{logs.stdout[-4000:]}{logs.stderr[-4000:]}") from None
        # Its REST API shows the node and the pod's allocation on it.
        nodes = requests.get(f"http://127.0.0.1:{port}/ws/v1/partition/default/nodes", timeout=10).json()
        assert [node["nodeID"] for node in nodes] == ["kwok-node-0"]
        assert [a["allocationKey"] for a in nodes[0]["allocations"]] == [pod_uid]
    finally:
        _stop(container)
