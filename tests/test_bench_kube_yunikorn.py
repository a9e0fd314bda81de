"""The kubernetes family's YuniKorn contender (benchmarks/kube_yunikorn.py): its ConfigMaps,
its command, when it is skipped and what the skip says, without a binary; and, with the binary
``PYSCHEDULER_BENCH_YUNIKORN`` names, that it binds a few pods on a kwok cluster.

That last test is skipped without the variable: YuniKorn's scheduler cannot be built from
this repository (its core and scheduler interface are not on the Go module proxy, and a
fetched repository's code, a binary built from it and its build recipe stay out of the
repository; docs/benchmarks.md, "YuniKorn's scheduler as a contender")."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from benchmarks.kube_contenders import CONTENDERS, QUEUES, contenders_to_run
from benchmarks.kube_workloads import QUEUE, plain_pod
from benchmarks.kube_yunikorn import (
    BINARY_ENV,
    CONFIG_MAP,
    DEFAULTS_CONFIG_MAP,
    WEB_ADDRESS_ENV,
    YUNIKORN,
    YunikornContender,
    config_maps,
    required_binary,
    skip_message,
    yunikorn_binary,
)
from kube_cluster import KubeCluster, start_cluster


def _executable(tmp_path: Path) -> Path:
    binary = tmp_path / "yunikorn-scheduler"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    return binary


def test_config_maps_carry_the_queues_and_high_client_limits() -> None:
    defaults, configs = config_maps()
    assert (defaults["metadata"]["name"], configs["metadata"]["name"]) == (DEFAULTS_CONFIG_MAP, CONFIG_MAP)
    assert defaults["data"] == {} and {defaults["metadata"]["namespace"], configs["metadata"]["namespace"]} == {"default"}
    data = configs["data"]
    assert (data["kubernetes.qps"], data["kubernetes.burst"]) == ("5000", "5000")
    assert all(isinstance(value, str) for value in data.values())  # a ConfigMap holds strings only
    partition = yaml.safe_load(data["queues.yaml"])["partitions"][0]
    assert data["queues.yaml"] == QUEUES
    leaves = {f"root.{queue['name']}" for queue in partition["queues"][0]["queues"]}
    assert QUEUE in leaves  # the queue the workloads' pods name in their ``queue`` label
    assert config_maps(qps=7, burst=9)[1]["data"]["kubernetes.burst"] == "9"


def test_without_a_binary_the_contender_is_skipped_saying_how_to_supply_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BINARY_ENV, raising=False)
    assert yunikorn_binary() is None
    message = skip_message()
    assert BINARY_ENV in message and "docs/benchmarks.md" in message and "not set" in message
    said: list[str] = []
    assert contenders_to_run(None, None, said.append) == ["limit", "pyscheduler", "kube-scheduler"]
    assert said == [message]
    assert contenders_to_run(["pyscheduler", "yunikorn"], None) == ["pyscheduler"]
    with pytest.raises(ValueError, match=BINARY_ENV):
        contenders_to_run(["yunikorn"], None)
    with pytest.raises(ValueError, match=BINARY_ENV):
        required_binary()

    not_executable = tmp_path / "plain-file"
    not_executable.write_text("")
    for value in (str(not_executable), str(tmp_path / "missing"), str(tmp_path)):
        assert yunikorn_binary({BINARY_ENV: value}) is None
        assert "is not an executable file" in skip_message({BINARY_ENV: value})


def test_with_a_binary_it_runs_after_kube_scheduler_on_loopback(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    binary = _executable(tmp_path)
    monkeypatch.setenv(BINARY_ENV, str(binary))
    assert yunikorn_binary() == binary == required_binary()
    said: list[str] = []
    assert contenders_to_run(None, None, said.append)[-1] == "yunikorn" and not said
    assert CONTENDERS["yunikorn"] == YUNIKORN

    cluster = KubeCluster("https://127.0.0.1:1", "token", tmp_path / "kubeconfig", tmp_path)
    args, env = YunikornContender(cluster, tmp_path, binary).command()
    assert args == [str(binary)]
    assert (env["KUBECONFIG"], env["NAMESPACE"]) == (str(tmp_path / "kubeconfig"), "default")
    host, _, port = env[WEB_ADDRESS_ENV].rpartition(":")
    assert host == "127.0.0.1" and int(port) > 0


@pytest.mark.skipif(yunikorn_binary() is None,
                    reason=f"needs YuniKorn's scheduler binary in {BINARY_ENV}: it is built outside the repository "
                           "(docs/benchmarks.md), never by the tests")
def test_yunikorn_binds_pods_on_a_kwok_cluster(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path / "kube")
    contender = YunikornContender(cluster, tmp_path, required_binary())
    try:
        cluster.ensure_namespace("default")
        cluster.add_nodes([f"node-{i}" for i in range(3)], cpu="8", memory="32Gi")
        contender.start()
        names = [f"yuni-{i}" for i in range(12)]
        for index, name in enumerate(names):
            answer = cluster.request("POST", "/api/v1/namespaces/default/pods",
                                     plain_pod(name, f"app-{index // 4}", contender.scheduler_name))
            assert answer.status_code == 201, answer.text

        def placed() -> dict[str, str]:
            items = cluster.request("GET", "/api/v1/namespaces/default/pods").json()["items"]
            nodes = {p["metadata"]["name"]: p["spec"].get("nodeName") or "" for p in items}
            return nodes if all(nodes.get(name) for name in names) else {}

        nodes = cluster.wait_for("YuniKorn binds the pods", placed, timeout=90)
        assert set(nodes.values()) <= {f"node-{i}" for i in range(3)}
        configs = cluster.request("GET", f"/api/v1/namespaces/default/configmaps/{CONFIG_MAP}").json()
        assert configs["data"]["kubernetes.qps"] == "5000"
        contender.write_config_maps()  # again, as the next phase's start does: replaced, not refused
    finally:
        contender.stop()
        cluster.stop()
    assert contender.process is not None and contender.process.returncode is not None
    log = (tmp_path / f"{contender.tag}.log").read_text()
    assert '"kubeQPS": 5000' in log.replace("\\n", "\n").replace('\\"', '"'), log[-2000:]
    assert not any(line.startswith("panic") for line in log.splitlines())
