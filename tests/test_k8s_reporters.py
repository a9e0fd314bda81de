"""The node reporter agent on a real API server (issue 16; etcd, kube-apiserver and kwok on
loopback, tests/kube_cluster.py): three agents, each a real ``pyscheduler reporter-agent``
process with the manifests' service account, an in-process plugin loaded by import path
(tests/k8s_reporter_plugin.py) and a gRPC plugin process on a unix socket in the agent's flat
plugin directory (tests/reporter_plugin_server.py, kubelet's registration handshake). Each
node's CustomNodeResource holds both plugins' merged fields after one round, written with one
request per node (the agents' logs and kube-apiserver's own request counter agree), an unchanged
round writes nothing, a watching plugin's change is written at once and a field no longer
reported leaves; with the shim running, a reported label is a node attribute in the core and
places pods by node selector. Broken fields are left out with the rest written; a refused or
unreachable API server fails a round, not the agent; SIGTERM ends it cleanly.

The control plane's binaries are built once per machine (tools/k8s/build.sh); the first run
builds them. The tests without the ``kube`` fixture need no cluster.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from k8s_reporter_plugin import BAD_LABEL, Inventory, pool_of
from kube_cluster import KubeCluster, free_port, start_cluster
from kube_served import PARTITION, Served

from pyscheduler.reporter.content import FieldType, ReportContent, ReportField
from pyscheduler.reporter.manager import ManagerSettings, ReporterManager
from pyscheduler.reporter.merge import Reported, merge
from pyscheduler.reporter.node_fields import CNR, NODE_SCHEMA, node_facts
from pyscheduler_k8s.agent import ReporterAgent
from pyscheduler_k8s.cnr import CNR_PATH, cnr_object, cnr_path, reported_node
from pyscheduler_k8s.kubeapi import ClusterAccess, KubeApi, KubeApiError

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEPLOY = ROOT / "k8s" / "deploy"
NODES = [f"kwok-{n}" for n in range(3)]
NAMESPACE = "team"
#: Seconds between the fleet's rounds: long enough that "after one round" is seen before the next.
PERIOD = 2.0
AGENT_ACCOUNT = "pyscheduler-reporter-agent"
CNR_KIND = {"group": CNR.group, "version": CNR.version, "kind": CNR.kind}
#: One write step in an agent's log (pyscheduler_k8s.agent.WriteOutcome.describe).
OUTCOME = re.compile(r"(?:round (\d+)|watch after round (\d+)): (written|unchanged|failed), (\d+) requests?, (\d+) ms")
pytestmark = pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")


# -- the cluster and the agents -------------------------------------------------------------------


def _kubectl_apply(kube: KubeCluster, manifest: Path) -> None:
    done = subprocess.run(["kubectl", f"--kubeconfig={kube.kubeconfig}", "apply", "-f", str(manifest)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def _account_kubeconfig(kube: KubeCluster, account: str, path: Path) -> Path:
    """A kubeconfig authenticating as service account ``account`` of namespace pyscheduler."""
    answer = kube.request("POST", f"/api/v1/namespaces/pyscheduler/serviceaccounts/{account}/token",
                          {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}})
    assert answer.status_code == 201, answer.text
    path.write_text(kube.kubeconfig.read_text().replace(kube.token, answer.json()["status"]["token"]))
    return path


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeCluster]:
    """Three kwok nodes; the CRD and the agent's manifest (service account, role, DaemonSet)
    applied from k8s/deploy as a user applies them. No controller manager runs, so the
    DaemonSet starts nothing: the tests start the agents themselves."""
    cluster = start_cluster(tmp_path_factory.mktemp("kube"))
    try:
        cluster.add_nodes(NODES, cpu="4", memory="8Gi")
        cluster.ensure_namespace("pyscheduler")
        cluster.ensure_namespace(NAMESPACE)
        _kubectl_apply(cluster, DEPLOY / "40-customnoderesource-crd.yaml")
        _kubectl_apply(cluster, DEPLOY / "50-reporter-agent.yaml")
        done = subprocess.run(["kubectl", f"--kubeconfig={cluster.kubeconfig}", "wait", "--for=condition=established",
                               "--timeout=30s", "crd/customnoderesources.node.katalyst.kubewharf.io"],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        yield cluster
    finally:
        cluster.stop()


def _grpc_content(node: str, zone: str | None = None, *, nic: bool = True, memory: bool = True) -> list[dict[str, Any]]:
    """What the gRPC plugin reports about ``node`` (Katalyst's CNR fields): ``tier`` and ``zone``
    labels, reclaimed memory, the property ``nic=rdma``, a topology policy."""
    fields: list[dict[str, Any]] = [
        {"type": int(FieldType.METADATA), "name": "Labels", "value": {"tier": "grpc", "zone": zone or f"zone-{node}"}},
        {"type": int(FieldType.STATUS), "name": "TopologyPolicy", "value": "SingleNUMANodeContainerLevel"},
    ]
    if memory:
        fields.append({"type": int(FieldType.STATUS), "name": "ReclaimedResourceCapacity", "value": {"memory": "4Gi"}})
    if nic:
        fields.append({"type": int(FieldType.SPEC), "name": "NodeResourceProperties",
                       "value": [{"propertyName": "nic", "propertyValues": ["rdma"]}]})
    return [{**CNR_KIND, "fields": fields}]


def _expected_object(node: str, grpc_content: list[dict[str, Any]]) -> dict[str, Any]:
    """The object the agent should write: the in-process plugin's fields, then the gRPC
    plugin's (registered after it), merged here the way the agent merges them."""
    socket_fields = [ReportField(FieldType(f["type"]), f["name"], json.dumps(f["value"]).encode())
                     for content in grpc_content for f in content["fields"]]
    merged = merge([Reported("inventory", Inventory(node).report()[node][0].fields),
                    Reported("topology", socket_fields)], NODE_SCHEMA)
    return cnr_object(node, merged).body


@dataclass
class Agent:
    node: str
    process: subprocess.Popen[bytes]
    log: Path
    plugin_status: Path
    plugin_content: Path
    #: When the process was started (wall clock, as the log's timestamps).
    started: float

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def outcomes(self) -> list[tuple[str, int, str, int, int]]:
        """Each write step logged: (trigger, round, outcome, requests, ms)."""
        return [("round" if m[1] else "watch", int(m[1] or m[2]), m[3], int(m[4]), int(m[5]))
                for m in OUTCOME.finditer(self.text())]

    def requests(self) -> int:
        return sum(o[3] for o in self.outcomes())

    def reached(self, round_number: int) -> bool:
        return any(o[0] == "round" and o[1] >= round_number for o in self.outcomes())

    def logged_at(self, text: str) -> float:
        """When the first log line holding ``text`` was written (its timestamp, wall clock)."""
        line = next(line for line in self.text().splitlines() if text in line)
        return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()


def _start_plugin(socket_path: Path, name: str, content: list[dict[str, Any]], workdir: Path,
                  ) -> tuple[subprocess.Popen[str], Path, Path]:
    content_file = workdir / f"{socket_path.parent.name}-{name}.json"
    status_file = workdir / f"{socket_path.parent.name}-{name}.status"
    content_file.write_text(json.dumps(content))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    process = subprocess.Popen([sys.executable, str(HERE / "reporter_plugin_server.py"), str(socket_path), name,
                                str(content_file), str(status_file)], stdout=subprocess.PIPE, text=True, env=env)
    assert process.stdout is not None and process.stdout.readline().strip() == "serving"
    return process, content_file, status_file


def _start_agent(node: str, kubeconfig: Path, log: Path, *extra: str, period: float = PERIOD
                 ) -> subprocess.Popen[bytes]:
    """``python -m pyscheduler.cli reporter-agent`` with the in-process plugin from tests/."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    with log.open("wb") as out:
        return subprocess.Popen([sys.executable, "-m", "pyscheduler.cli", "reporter-agent", "--node", node,
                                 "--plugin", "k8s_reporter_plugin:Inventory", "--period", str(period),
                                 "--kubeconfig", str(kubeconfig), *extra],
                                stdout=out, stderr=subprocess.STDOUT, env=env)


def _stop(process: subprocess.Popen[Any], timeout: float = 10.0) -> int | None:
    """SIGTERM, then the exit code (None when it had to be killed)."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return None


def _cnr_applies(kube: KubeCluster) -> int:
    """kube-apiserver's own count of the writes to CustomNodeResources (every answer code)."""
    total = 0.0
    for line in kube.request("GET", "/metrics", timeout=30).text.splitlines():
        if (line.startswith("apiserver_request_total{") and 'resource="customnoderesources"' in line
                and ('verb="APPLY"' in line or 'verb="PATCH"' in line)):
            total += float(line.rsplit(" ", 1)[1])
    return int(total)


def _cnr(kube: KubeCluster, node: str) -> dict[str, Any]:
    answer = kube.request("GET", cnr_path(node))
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def _written_part(cnr: dict[str, Any]) -> dict[str, Any]:
    """What of a stored object the agent wrote (the API server adds uid, managedFields, ...)."""
    meta = cnr["metadata"]
    written = {"apiVersion": cnr["apiVersion"], "kind": cnr["kind"],
               "metadata": {"name": meta["name"], **{k: meta[k] for k in ("labels", "annotations") if k in meta}}}
    return {**written, **{part: cnr[part] for part in ("spec", "status") if part in cnr}}


@dataclass
class Fleet:
    agents: dict[str, Agent]
    #: kube-apiserver's count of CNR writes before the agents started.
    applies_before: int
    plugins: list[subprocess.Popen[str]]


@pytest.fixture(scope="module")
def fleet(kube: KubeCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    """The three agents, each with its gRPC plugin already serving in its plugin directory,
    running as the manifests' service account."""
    workdir = tmp_path_factory.mktemp("fleet")
    kubeconfig = _account_kubeconfig(kube, AGENT_ACCOUNT, workdir / "agent.kubeconfig")
    # Unix socket paths are limited to about 100 bytes: a short directory, not pytest's tmp_path.
    sockets = Path(f"/tmp/pka-{os.getpid()}")
    plugins: list[subprocess.Popen[str]] = []
    agents: dict[str, Agent] = {}
    try:
        files: dict[str, tuple[Path, Path]] = {}
        for node in NODES:
            plugin, content, status = _start_plugin(sockets / node / "topology.sock", "topology", _grpc_content(node),
                                                    workdir)
            plugins.append(plugin)
            files[node] = (status, content)
        applies_before = _cnr_applies(kube)
        for node, (status, content) in files.items():
            log = workdir / f"agent-{node}.log"
            started = time.time()
            process = _start_agent(node, kubeconfig, log, "--plugin-dir", str(sockets / node))
            agents[node] = Agent(node, process, log, status, content, started)
        yield Fleet(agents, applies_before, plugins)
    finally:
        for agent in agents.values():
            _stop(agent.process)
        for plugin in plugins:
            plugin.kill()
            plugin.wait(10)
        subprocess.run(["rm", "-rf", str(sockets)], check=False)


# -- against the API server -----------------------------------------------------------------------


def test_each_node_s_object_holds_both_plugins_merged_fields_after_one_round(kube: KubeCluster, fleet: Fleet) -> None:
    agents = fleet.agents
    kube.wait_for("every agent's first round", lambda: all(a.reached(1) for a in agents.values()), timeout=60)
    for node, agent in agents.items():
        first = [o for o in agent.outcomes() if o[1] == 1]
        # Round 1 wrote the object in one request, and no watch message wrote it again before round 2.
        assert first[0][:4] == ("round", 1, "written", 1), agent.text()
        assert sum(o[3] for o in first) == 1, agent.text()
        print(f"{node}: round 1 (polls, merge, write) {first[0][4]} ms, written "
              f"{agent.logged_at('round 1: written') - agent.started:.2f} s after the process started")
        # The socket plugin registered through the flat directory with kubelet's handshake.
        assert json.loads(agent.plugin_status.read_text()) == {"registered": True, "error": ""}
        stored = _cnr(kube, node)
        assert _written_part(stored) == _expected_object(node, _grpc_content(node))
        # The merge rules: map keys by key with the later-registered plugin winning (tier), maps
        # joined (reclaimed), slices concatenated (properties), a common field replaced
        # (topology policy); broken fields, the refused label key and the other node's content out.
        assert stored["metadata"]["labels"] == {"pool": pool_of(node), "tier": "grpc", "zone": f"zone-{node}"}
        assert stored["status"] == {"reclaimedResourceCapacity": {"cpu": "2", "memory": "4Gi"},
                                    "topologyPolicy": "SingleNUMANodeContainerLevel"}
        assert [p["propertyName"] for p in stored["spec"]["nodeResourceProperties"]] == ["disk", "nic"]
        # What the shim reads back is what was merged.
        back = reported_node(stored)
        assert back.rejected == () and back.labels == stored["metadata"]["labels"]
        assert {k: back.facts.attributes[k] for k in ("pool", "reclaimed.cpu", "reclaimed.memory", "property.disk",
                                                      "property.nic")} == {
            "pool": pool_of(node), "reclaimed.cpu": "2", "reclaimed.memory": "4Gi", "property.disk": "ssd",
            "property.nic": "rdma"}
        log = agent.text()
        assert f"Labels {BAD_LABEL!r} from inventory" in log and "NoSuchField from inventory" in log, log
        assert "Occupied from inventory: not JSON" in log and "unknown node 'another-node'" in log, log
    # kube-apiserver counted three writes: one request per node.
    assert _cnr_applies(kube) - fleet.applies_before == len(NODES)
    # Rounds with nothing new write nothing.
    kube.wait_for("two more rounds everywhere", lambda: all(a.reached(3) for a in agents.values()), timeout=30)
    for agent in agents.values():
        later = [o for o in agent.outcomes() if o[1] in (2, 3)]
        assert [o[:4] for o in later if o[0] == "round"] == [("round", 2, "unchanged", 0), ("round", 3, "unchanged", 0)]
        assert agent.requests() == 1, agent.text()
    assert _cnr_applies(kube) - fleet.applies_before == len(NODES)


def test_a_watching_plugin_s_change_is_written_at_once_and_a_dropped_field_leaves(kube: KubeCluster,
                                                                                    fleet: Fleet) -> None:
    agent = fleet.agents["kwok-0"]
    kube.wait_for("the first round", lambda: agent.reached(1), timeout=60)
    before = agent.requests()
    changed = _grpc_content("kwok-0", "zone-b", nic=False, memory=False)
    staged = agent.plugin_content.with_suffix(".new")
    staged.write_text(json.dumps(changed))
    staged.replace(agent.plugin_content)  # whole, at once: the plugin's watch stream sends it
    started = time.monotonic()
    kube.wait_for("the change in the object", lambda: _cnr(kube, "kwok-0")["metadata"]["labels"]["zone"] == "zone-b",
                  timeout=10, interval=0.02)
    took = time.monotonic() - started
    print(f"a watched change reached the API server in {took * 1000:.0f} ms")
    stored = _cnr(kube, "kwok-0")
    # The fields the plugin no longer reports are gone (the apply drops what the agent wrote before).
    assert stored["status"]["reclaimedResourceCapacity"] == {"cpu": "2"}
    assert [p["propertyName"] for p in stored["spec"]["nodeResourceProperties"]] == ["disk"]
    assert _written_part(stored) == _expected_object("kwok-0", changed)
    time.sleep(PERIOD + 0.5)  # a round after it: nothing more to write
    assert agent.requests() == before + 1, agent.text()


def test_a_reported_label_reaches_the_core_and_places_pods_by_node_selector(kube: KubeCluster, fleet: Fleet) -> None:
    kube.wait_for("every agent's first round", lambda: all(a.reached(1) for a in fleet.agents.values()), timeout=60)
    served = Served(kube)
    names = itertools.count()

    def pod(selector: dict[str, str]) -> str:
        name = f"selecting-{next(names)}"
        body = {"metadata": {"name": name, "labels": {"yunikorn.apache.org/app-id": "reporters", "queue": "root.batch"}},
                "spec": {"schedulerName": "pyscheduler", "nodeSelector": selector, "containers": [
                    {"name": "c", "image": "registry.k8s.io/pause:3.7", "resources": {"requests": {"cpu": "100m"}}}]}}
        answer = kube.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", body)
        assert answer.status_code == 201, answer.text
        return name

    def get(name: str) -> dict[str, Any]:
        found: dict[str, Any] = kube.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods/{name}").json()
        return found

    def attributes(node: str) -> dict[str, str]:
        partition = served.context.partitions[PARTITION]
        with partition.lock:
            core_node = partition.nodes.get(node)
            return dict(core_node.attributes) if core_node is not None else {}

    try:
        for node in NODES:
            kube.wait_for(f"{node}'s reported fields in the core", lambda: attributes(node).get("pool") == pool_of(node),
                          timeout=10)
            assert {k: attributes(node).get(k) for k in ("tier", "reclaimed.cpu", "property.disk")} == {
                "tier": "grpc", "reclaimed.cpu": "2", "property.disk": "ssd"}
        assert attributes(NODES[1])["kubernetes.io/hostname"] == NODES[1]  # the Node's own labels stay
        pinned = pod({"pool": pool_of(NODES[1])})
        nowhere = pod({"pool": "pool-9"})
        kube.wait_for("the pod selecting pool-1 bound", lambda: get(pinned)["spec"].get("nodeName"), timeout=30)
        assert get(pinned)["spec"]["nodeName"] == NODES[1]
        kube.wait_for("the pod selecting a pool no node reports unschedulable", lambda: any(
            c["type"] == "PodScheduled" and c["status"] == "False"
            for c in get(nowhere).get("status", {}).get("conditions", [])), timeout=30)
        assert not get(nowhere)["spec"].get("nodeName")
    finally:
        served.stop()
        kube.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods?gracePeriodSeconds=0")


def test_sigterm_stops_every_agent_cleanly(kube: KubeCluster, fleet: Fleet) -> None:
    for agent in fleet.agents.values():
        started = time.monotonic()
        assert _stop(agent.process) == 0, agent.text()
        took = time.monotonic() - started
        print(f"{agent.node}: stopped by SIGTERM in {took * 1000:.0f} ms")
        assert took < 5.0
        log = agent.text()
        assert f"reporter agent for node {agent.node} stopped" in log and "Traceback" not in log, log


def test_a_refused_write_is_logged_and_tried_again_and_the_agent_survives(kube: KubeCluster, tmp_path: Path) -> None:
    """An account without the manifests' role: every round is refused (403) and logged with the
    API server's reason; once the role is bound, the next round writes."""
    account, node = "agent-without-role", "kwok-9"
    answer = kube.request("POST", "/api/v1/namespaces/pyscheduler/serviceaccounts", {"metadata": {"name": account}})
    assert answer.status_code == 201, answer.text
    log = tmp_path / "agent.log"
    process = _start_agent(node, _account_kubeconfig(kube, account, tmp_path / "kubeconfig"), log, period=0.3)
    binding = f"{account}-binding"
    try:
        kube.wait_for("two refused rounds", lambda: len(re.findall(r"round \d+: failed, 1 request", log.read_text())) >= 2,
                      timeout=30)
        assert process.poll() is None
        assert "403 Forbidden" in log.read_text() and 'cannot patch resource "customnoderesources"' in log.read_text()
        answer = kube.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
            "metadata": {"name": binding},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": AGENT_ACCOUNT},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": "pyscheduler"}]})
        assert answer.status_code == 201, answer.text
        kube.wait_for("written once the role is bound", lambda: "written, 1 request" in log.read_text(), timeout=30)
        assert _cnr(kube, node)["metadata"]["labels"]["pool"] == pool_of(node)
    finally:
        assert _stop(process) == 0, log.read_text()
        kube.request("DELETE", f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{binding}")
        kube.request("DELETE", cnr_path(node))


def test_the_shim_s_role_reads_the_reports_and_writes_none(kube: KubeCluster, tmp_path: Path) -> None:
    """k8s/deploy/10-rbac.yaml: the shim's account may list and watch the CustomNodeResources
    (the shim follows them) and get one; it may not write them."""
    _kubectl_apply(kube, DEPLOY / "10-rbac.yaml")
    answer = kube.request("POST", CNR_PATH, {"apiVersion": "node.katalyst.kubewharf.io/v1alpha1",
                                             "kind": "CustomNodeResource", "metadata": {"name": "role-check"}})
    assert answer.status_code == 201, answer.text
    try:
        api = KubeApi(ClusterAccess.from_kubeconfig(str(_account_kubeconfig(kube, "pyscheduler", tmp_path / "kc"))))
        items, version = api.list(CNR_PATH)
        assert version and "role-check" in {i["metadata"]["name"] for i in items}
        assert api.request("GET", cnr_path("role-check"))["metadata"]["name"] == "role-check"
        with pytest.raises(KubeApiError) as refused:
            api.request("PATCH", cnr_path("role-check"), {"metadata": {"labels": {"pool": "mine"}}},
                        content_type="application/merge-patch+json")
        assert refused.value.status == 403
    finally:
        kube.request("DELETE", cnr_path("role-check"))


def _status_subresource_served(kube: KubeCluster) -> bool:
    found = kube.request("GET", f"/apis/{CNR.group}/{CNR.version}").json().get("resources") or []
    return any(resource["name"] == "customnoderesources/status" for resource in found)


def test_with_katalyst_s_crd_the_agent_writes_the_status_through_its_subresource(kube: KubeCluster,
                                                                                 tmp_path: Path) -> None:
    """Issue 32's bug: with Katalyst's own CustomNodeResource CRD (a status subresource) installed,
    the agent's one apply wrote no status. Here the project's CRD with ``subresources: {status:
    {}}`` added, as Katalyst's has, replaces it: the agent process (the manifests' account) writes
    the whole object, status included, in two requests; an unchanged round writes nothing. The
    project's CRD is put back after."""
    node = "kwok-8"
    crd = yaml.safe_load((DEPLOY / "40-customnoderesource-crd.yaml").read_text())
    for version in crd["spec"]["versions"]:
        version["subresources"] = {"status": {}}
    katalyst_crd = tmp_path / "katalyst-crd.yaml"
    katalyst_crd.write_text(yaml.safe_dump(crd))
    kubeconfig = _account_kubeconfig(kube, AGENT_ACCOUNT, tmp_path / "agent.kubeconfig")
    expected = cnr_object(node, merge([Reported("inventory", Inventory(node).report()[node][0].fields)],
                                      NODE_SCHEMA)).body
    assert expected["status"], "the plugin reports status fields"
    _kubectl_apply(kube, katalyst_crd)
    process: subprocess.Popen[bytes] | None = None
    log = tmp_path / "agent.log"
    try:
        kube.wait_for("the status subresource served", lambda: _status_subresource_served(kube), timeout=30)
        # The CRD behaves as Katalyst's: a status written to the object itself is dropped.
        answer = kube.request("POST", CNR_PATH, expected)
        assert answer.status_code == 201 and "status" not in answer.json(), answer.text
        assert kube.request("DELETE", cnr_path(node)).status_code == 200
        process = _start_agent(node, kubeconfig, log, period=0.5)
        kube.wait_for("the status written", lambda: kube.request("GET", cnr_path(node)).json().get("status"),
                      timeout=30)
        kube.wait_for("a round after it", lambda: re.search(r"round [2-9]\d*: unchanged", log.read_text()), timeout=30)
        stored = _cnr(kube, node)
        assert _written_part(stored) == expected, log.read_text()
        written = [line for line in log.read_text().splitlines() if re.search(r": written, \d+ request", line)]
        assert len(written) == 1 and "round 1: written, 2 requests" in written[0], log.read_text()
        assert "status subresource" in log.read_text()
        assert {(f["manager"], f.get("subresource", "")) for f in stored["metadata"]["managedFields"]} >= {
            ("pyscheduler-reporter-agent", ""), ("pyscheduler-reporter-agent", "status")}
    finally:
        if process is not None:
            assert _stop(process) == 0, log.read_text()
        kube.request("DELETE", cnr_path(node))
        _kubectl_apply(kube, DEPLOY / "40-customnoderesource-crd.yaml")
        kube.wait_for("the project's CRD back", lambda: not _status_subresource_served(kube), timeout=30)


# -- without a cluster --------------------------------------------------------------------------------


def test_the_object_reads_back_as_exactly_what_was_merged() -> None:
    """Every field of the node schema, from two plugins, written by cnr_object and read back by
    the shim's reported_node: the same labels and the same facts (attributes, capacity,
    occupied), nothing rejected; entries Kubernetes would refuse are left out and named."""
    def fields(**named: tuple[FieldType, Any]) -> list[ReportField]:
        return [ReportField(part, name, orjson.dumps(value)) for name, (part, value) in named.items()]

    first = fields(
        Labels=(FieldType.METADATA, {"rack": "r1", "tier": "a", "example.com/gpu": "true", "bad/key/x": "1"}),
        Annotations=(FieldType.METADATA, {"note": "any text at all: it is an annotation"}),
        NodeResourceProperties=(FieldType.SPEC, [{"propertyName": "cpu-model", "propertyValues": ["x", "y"]}]),
        Taints=(FieldType.SPEC, [{"key": "katalyst.kubewharf.io/reclaimed", "value": "", "effect": "NoSchedule"}]),
        Resources=(FieldType.STATUS, {"allocatable": {"cpu": "6", "memory": "12Gi"}}),
        Occupied=(FieldType.STATUS, {"cpu": "500m"}),
        TopologyZone=(FieldType.STATUS, [{"type": "Socket", "name": "0"}, {"type": "Numa", "name": "0"}]),
        TopologyPolicy=(FieldType.STATUS, "None"),
        ReclaimedResourceCapacity=(FieldType.STATUS, {"cpu": "10"}),
        ResourceStatus=(FieldType.STATUS, [{"name": "a"}]),
        TopologyStatus=(FieldType.STATUS, {"sockets": 1}),
    )
    second = fields(
        Labels=(FieldType.METADATA, {"tier": "b", "empty-value": "", "long": "v" * 64}),
        NodeResourceProperties=(FieldType.SPEC, [{"propertyName": "nic", "propertyQuantity": "2"}]),
        ReclaimedResourceCapacity=(FieldType.STATUS, {"memory": "24Gi"}),
        ResourceStatus=(FieldType.STATUS, [{"name": "b"}]),
        TopologyStatus=(FieldType.STATUS, {"sockets": 2}),
    )
    merged = merge([Reported("one", first), Reported("two", second)], NODE_SCHEMA)
    written = cnr_object("node-1", merged)
    assert sorted(written.left_out) == [
        "Labels 'bad/key/x' from one: its prefix is not a DNS subdomain",
        "Labels 'long' from two: the value is not 0-63 letters, digits, '-', '_' or '.' between letters or digits"]
    stored = orjson.loads(orjson.dumps(written.body))  # through JSON, as the API server keeps it
    assert stored["metadata"]["labels"] == {"empty-value": "", "example.com/gpu": "true", "rack": "r1", "tier": "b"}
    assert stored["spec"]["taints"][0]["key"] == "katalyst.kubewharf.io/reclaimed"
    assert stored["status"]["topologyZone"] == [{"type": "Numa", "name": "0"}, {"type": "Socket", "name": "0"}]
    back = reported_node(stored)
    assert back.rejected == () and back.name == "node-1"
    assert back.labels == stored["metadata"]["labels"]
    facts = node_facts(merged)
    assert back.facts.capacity == facts.capacity and back.facts.occupied == facts.occupied
    # The facts of the merge, but for the two labels left out.
    assert back.facts.attributes == {k: v for k, v in facts.attributes.items() if k not in ("bad/key/x", "long")}
    # Nothing reported: an object with only its name (an apply of it drops every field written before).
    assert cnr_object("node-1", None).body == {"apiVersion": "node.katalyst.kubewharf.io/v1alpha1",
                                               "kind": "CustomNodeResource", "metadata": {"name": "node-1"}}


def _cli(*args: str, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pyscheduler.cli", "reporter-agent", *args], capture_output=True,
                          text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])})


@pytest.mark.parametrize("name", ["Kwok_0", "node-", "a" * 254, ""])
def test_a_node_name_that_cannot_name_an_object_is_refused_at_start(name: str) -> None:
    done = _cli("--node", name, "--once")
    assert done.returncode == 2, done.stderr
    assert f"--node {name!r}: " in done.stderr and ("object name" in done.stderr), done.stderr


def test_bad_plugins_and_directories_are_refused_at_start(tmp_path: Path) -> None:
    kubeconfig = _unreachable_kubeconfig(tmp_path)
    for args, said in (
        (("--plugin", "no_such_module:x"), "cannot import 'no_such_module'"),
        (("--plugin", "k8s_reporter_plugin:Missing"), "has no 'Missing'"),
        (("--plugin", "k8s_reporter_plugin:BAD_LABEL"), "neither a reporter plugin"),
        (("--plugin", "k8s_reporter_plugin"), "expected MODULE:ATTR"),
        (("--plugin-dir", str(tmp_path / "absent")), "does not exist"),
        (("--period", "nan"), "--period must be a positive number"),
        (("--timeout", "inf"), "--timeout must be a positive number"),
        (("--resync", "-1"), "--resync must be a positive number"),
    ):
        done = _cli("--node", "node-1", "--kubeconfig", str(kubeconfig), "--once", *args)
        assert done.returncode == 2 and said in done.stderr, (args, done.stderr)


def _unreachable_kubeconfig(tmp_path: Path) -> Path:
    """A kubeconfig naming a loopback port nothing listens on."""
    path = tmp_path / "unreachable.kubeconfig"
    server = {"server": f"https://127.0.0.1:{free_port()}", "insecure-skip-tls-verify": True}
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "gone",
        "clusters": [{"name": "gone", "cluster": server}], "users": [{"name": "someone", "user": {"token": "t"}}],
        "contexts": [{"name": "gone", "context": {"cluster": "gone", "user": "someone"}}]}))
    return path


def test_an_unreachable_api_server_fails_the_round_not_the_agent(tmp_path: Path) -> None:
    kubeconfig = _unreachable_kubeconfig(tmp_path)
    done = _cli("--node", "node-1", "--plugin", "k8s_reporter_plugin:Inventory", "--kubeconfig", str(kubeconfig),
                "--once")
    assert done.returncode == 1, done.stderr
    assert re.search(r"round 1: failed, 1 request, \d+ ms, 4 fields: 0 Unreachable", done.stderr), done.stderr
    # Running: every round fails and is counted, and the agent goes on.
    agent = ReporterAgent("node-1", KubeApi(ClusterAccess.from_kubeconfig(str(kubeconfig))))
    agent.register(Inventory("node-1"))
    try:
        assert [agent.run_round().outcome for _ in range(3)] == ["failed"] * 3
        assert (agent.rounds, agent.requests, agent.failures, agent.writes) == (3, 3, 3, 0)
    finally:
        agent.close()


class _RecordingApi:
    """Answers every apply as a server would, keeping the bodies (``bodies``, ``paths``) and the
    object (``stored``, the fields written; no other writer). ``status_subresource`` answers as a
    CRD with one does (Katalyst's): the object's endpoint ignores the status, ``/status`` writes
    only it; without one, ``/status`` is not found."""

    def __init__(self, status_subresource: bool = False) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.status_subresource = status_subresource
        self.stored: dict[str, Any] = {}

    def request(self, method: str, path: str, body: Any = None, **_: Any) -> Any:
        self.bodies.append(body)
        self.paths.append(path)
        status = self.stored.get("status")
        if path.endswith("/status"):
            if not self.status_subresource:
                raise KubeApiError(404, "NotFound", "the server could not find the requested resource")
            status = body.get("status")
        elif self.status_subresource:
            self.stored = {k: v for k, v in body.items() if k != "status"}
        else:
            self.stored, status = dict(body), body.get("status")
        if status is not None:
            self.stored["status"] = status
        else:
            self.stored.pop("status", None)
        return json.loads(json.dumps(self.stored))


class _Watching:
    """An in-process plugin with a watch: each label set put on ``changes`` is a new report."""

    name = "watching"

    def __init__(self, node: str) -> None:
        self.node = node
        self.labels = {"phase": "1"}
        self.changes: list[dict[str, str]] = []
        self.more = threading.Event()
        self.closed = False

    def report(self) -> Any:
        return {self.node: [ReportContent(CNR, (ReportField(FieldType.METADATA, "Labels",
                                                            orjson.dumps(self.labels)),))]}

    def watch(self) -> Iterator[Any]:
        while self.more.wait() and not self.closed:
            self.more.clear()
            while self.changes:
                self.labels = self.changes.pop(0)
                yield self.report()


def test_a_watching_plugin_s_report_is_written_before_the_next_round() -> None:
    api = _RecordingApi()
    agent = ReporterAgent("node-1", api, ManagerSettings(period=60.0))  # type: ignore[arg-type]
    plugin = _Watching("node-1")
    agent.register(plugin)
    worker = threading.Thread(target=agent.serve)
    worker.start()
    try:
        deadline = time.monotonic() + 10
        while len(api.bodies) < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        plugin.changes.append({"phase": "2"})
        plugin.more.set()
        while len(api.bodies) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [b["metadata"]["labels"] for b in api.bodies] == [{"phase": "1"}, {"phase": "2"}]
        assert agent.rounds == 1 and agent.last is not None and agent.last.trigger == "watch"
    finally:
        agent.stop()
        worker.join(10)
        agent.close()
        plugin.closed = True
        plugin.more.set()
    assert not worker.is_alive()


def test_with_a_status_subresource_the_status_is_written_through_it(caplog: pytest.LogCaptureFixture) -> None:
    """Katalyst's own CRD (issue 32's bug: the agent could not write the status there). The
    first write finds the status ignored and writes it through /status at once; every later
    write is two requests, the object's metadata and spec, then its status."""
    caplog.set_level(logging.INFO, logger="pyscheduler_k8s.agent")
    api = _RecordingApi(status_subresource=True)
    agent = ReporterAgent("node-1", api, ManagerSettings(), resync=0.001)  # type: ignore[arg-type]
    agent.register(Inventory("node-1"))
    try:
        first = agent.run_round()
        expected = cnr_object("node-1", agent.manager.merged("node-1")).body
        assert (first.outcome, first.requests) == ("written", 2)
        assert api.paths == [cnr_path("node-1"), cnr_path("node-1") + "/status"]
        assert api.stored == expected and set(expected["status"]) == {"reclaimedResourceCapacity", "topologyPolicy"}
        time.sleep(0.002)
        again = agent.run_round()  # the resync: written again although nothing changed
        assert (again.outcome, again.requests) == ("written", 2) and api.stored == expected
        assert "status" not in api.bodies[2] and api.bodies[3]["status"] == expected["status"]
    finally:
        agent.close()
    said = [r.message for r in caplog.records if "status subresource" in r.message]
    assert len(said) == 1 and "written through /status" in said[0], said
    assert agent.writes == 2 and agent.requests == 4 and agent.status_subresource is True


def test_without_a_status_subresource_one_apply_writes_it_all() -> None:
    api = _RecordingApi(status_subresource=False)
    agent = ReporterAgent("node-1", api, ManagerSettings(), resync=0.001)  # type: ignore[arg-type]
    agent.register(Inventory("node-1"))
    try:
        assert agent.run_round().requests == 1
        time.sleep(0.002)
        assert agent.run_round().requests == 1
    finally:
        agent.close()
    assert api.paths == [cnr_path("node-1")] * 2 and api.stored == api.bodies[-1]
    assert "status" in api.stored and agent.status_subresource is None


def test_a_crd_that_lost_its_status_subresource_is_written_in_one_apply_again() -> None:
    api = _RecordingApi(status_subresource=True)
    agent = ReporterAgent("node-1", api, ManagerSettings(), resync=0.001)  # type: ignore[arg-type]
    agent.register(Inventory("node-1"))
    try:
        agent.run_round()
        api.status_subresource = False  # the project's CRD installed over Katalyst's
        time.sleep(0.002)
        refused = agent.run_round()
        assert (refused.outcome, refused.requests) == ("failed", 2) and "404" in refused.reason
        time.sleep(0.002)
        assert agent.run_round().requests == 1
    finally:
        agent.close()
    assert api.stored == api.bodies[-1] and "status" in api.stored


def test_without_the_kubernetes_package_the_command_says_how_to_install_it(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from pyscheduler.cli import main

    monkeypatch.setitem(sys.modules, "pyscheduler_k8s.agent", None)  # as if it were not installed
    assert main(["reporter-agent", "--node", "node-1"]) == 1
    said = capsys.readouterr().err
    assert "needs the Kubernetes package, pyscheduler-k8s, which is not installed" in said
    assert "pip install 'pyscheduler[k8s]'" in said and "pip install -e k8s" in said


def test_a_sink_that_fails_is_given_the_update_again_at_the_next_round() -> None:
    """The manager's sink (the agent's is one): an update the sink could not take is offered
    again although nothing changed since; one it took is not."""

    class FlakySink:
        def __init__(self) -> None:
            self.failures_left = 1
            self.sent: list[list[tuple[str, str, str]]] = []

        def known_nodes(self) -> dict[str, str]:
            return {"node-1": "its-owner"}

        def send(self, updates: Any) -> None:
            if self.failures_left:
                self.failures_left -= 1
                raise RuntimeError("the store is away")
            self.sent.append([(u.node_id, u.owner, u.facts.attributes["pool"]) for u in updates])

    sink = FlakySink()
    manager = ReporterManager(sink=sink)
    manager.register(Inventory("node-1"))
    try:
        with pytest.raises(RuntimeError):
            manager.run_round()
        manager.run_round()
        manager.run_round()
    finally:
        manager.stop()
    assert sink.sent == [[("node-1", "its-owner", "pool-1")]]
    with pytest.raises(TypeError):
        ReporterManager()
