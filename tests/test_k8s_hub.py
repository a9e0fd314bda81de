"""A hub over member clusters (issue 33, level 2), on three real control planes on loopback
(tests/kube_hub.py: the hub with its controller manager, two members with kwok nodes): pods
submitted to the hub run in one member, chosen for the whole application; the hub's queues
count every member's usage; a lost member's pods run again in the other member, once.

Members: ``east`` (2 nodes of 2 cpu) and ``west`` (2 nodes of 4 cpu). The hub runs in this
process (``pyscheduler_k8s.attach`` with ``PYSCHEDULER_K8S_CLUSTERS_FILE``, leader election
off), except in the test through ``pyscheduler serve --clusters-file`` under gunicorn."""

from __future__ import annotations

import contextlib
import itertools
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kube_cluster import KubeCluster
from kube_hub import HubAndMembers, start_hub_and_members, write_clusters_file
from kube_served import CONFIG_NAMESPACE, create_pods, events_of, list_pods, pod_body, put_config_map

from pyscheduler.service import CoreOptions, SchedulerService
from pyscheduler_k8s import attach
from pyscheduler_k8s.hub import HubRM, HubShim
from pyscheduler_k8s.hub.marks import CLUSTER_LABEL, HUB_POD_UID_LABEL, NODE_ANNOTATION

sys.path.insert(0, str(Path(__file__).resolve().parent / "web"))
from web_helpers import launch, stop  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")

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
          - name: batch
          - name: capped
            resources:
              max: {vcore: 3}
          - name: prod
            properties: {preemption.delay: 1s}
            resources:
              guaranteed: {vcore: 2}
"""
_namespaces = itertools.count()


@pytest.fixture(scope="module")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubAndMembers]:
    made = start_hub_and_members(tmp_path_factory.mktemp("hub"), ("east", "west"))
    try:
        made.members["east"].add_nodes(["e0", "e1"], cpu="2", memory="8Gi")
        made.members["west"].add_nodes(["w0", "w1"], cpu="4", memory="8Gi")
        put_config_map(made.hub, QUEUES)
        answer = made.hub.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses",
                                  {"metadata": {"name": "prod"}, "value": 100})
        assert answer.status_code == 201, answer.text
        yield made
    finally:
        made.stop()


@pytest.fixture
def namespace(clusters: HubAndMembers) -> Iterator[str]:
    """A namespace of its own on the hub and the members; its pods deleted everywhere after."""
    name = f"team{next(_namespaces)}"
    for kube in clusters.all():
        kube.ensure_namespace(name)
    yield name
    for kube in clusters.all():
        kube.request("DELETE", f"/api/v1/namespaces/{name}/pods?gracePeriodSeconds=0")


@contextlib.contextmanager
def hub(clusters: HubAndMembers, tmp: Path, monkeypatch: pytest.MonkeyPatch, **settings: Any) -> Iterator[HubShim]:
    """The hub running in this process (``attach`` as ``serve`` calls it), its shim once started."""
    path = write_clusters_file(tmp / "clusters.yaml", clusters, **settings)
    monkeypatch.setenv("PYSCHEDULER_K8S_CLUSTERS_FILE", str(path))
    monkeypatch.setenv("PYSCHEDULER_K8S_LEADER_ELECTION", "false")
    monkeypatch.setenv("PYSCHEDULER_K8S_NAMESPACE", CONFIG_NAMESPACE)
    service = SchedulerService(CoreOptions(history=False, loop_idle_interval=0.02))
    service.attach(attach, name="k8s")
    service.start()
    try:
        rm = service.attachments[0].rm
        assert isinstance(rm, HubRM)
        shim = clusters.hub.wait_for("the hub shim", lambda: rm.shim, timeout=30)
        assert isinstance(shim, HubShim)
        yield shim
    finally:
        service.stop()


def _placements(clusters: HubAndMembers, namespace: str, selector: str = "") -> dict[str, tuple[str, str, str]]:
    """Hub pod name -> (member, node, phase) from its marks and mirrored status."""
    out = {}
    for pod in list_pods(clusters.hub, namespace, selector):
        meta = pod["metadata"]
        out[meta["name"]] = (meta.get("labels", {}).get(CLUSTER_LABEL, ""),
                             meta.get("annotations", {}).get(NODE_ANNOTATION, ""), pod["status"].get("phase", ""))
    return out


def _running_everywhere(clusters: HubAndMembers, namespace: str, selector: str = "", count: int = 0,
                        timeout: float = 30.0) -> dict[str, tuple[str, str, str]]:
    def check() -> dict[str, tuple[str, str, str]] | None:
        placed = _placements(clusters, namespace, selector)
        running = {k: v for k, v in placed.items() if v[0] and v[2] == "Running"}
        return running if len(running) >= (count or len(placed)) and running else None

    try:
        return dict(clusters.hub.wait_for(f"hub pods running ({selector or 'all'})", check, timeout=timeout))
    except TimeoutError as exc:
        raise AssertionError(f"{exc}: {_placements(clusters, namespace, selector)}") from None


def _copies(kube: KubeCluster, namespace: str) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in list_pods(kube, namespace) if HUB_POD_UID_LABEL in p["metadata"].get("labels", {})}


def test_a_job_lands_in_the_member_with_room_for_all_of_it_and_its_status_comes_back(
        clusters: HubAndMembers, namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    east, west = clusters.members["east"], clusters.members["west"]
    with hub(clusters, tmp_path, monkeypatch) as shim:
        # 5 x 1 cpu: east (4 cpu) has room for the first pods, west (8 cpu) for all of them.
        create_pods(clusters.hub, namespace, [pod_body(f"a{i}", "app-a", "root.batch", "1") for i in range(5)])
        placed = _running_everywhere(clusters, namespace, count=5)
        assert {member for member, _, _ in placed.values()} == {"west"}, placed
        copies = _copies(west, namespace)
        assert sorted(copies) == sorted(placed) and not _copies(east, namespace)
        hub_pods = {p["metadata"]["name"]: p for p in list_pods(clusters.hub, namespace)}
        for name, copy in copies.items():
            # The copy is bound where the hub pod says, and names its hub pod; kwok runs it.
            assert copy["spec"]["nodeName"] == placed[name][1]
            assert copy["metadata"]["labels"][HUB_POD_UID_LABEL] == hub_pods[name]["metadata"]["uid"]
            assert copy["status"]["phase"] == "Running"
            # The hub pod is never bound on the hub (it runs in the member) and says where it runs.
            assert not hub_pods[name]["spec"].get("nodeName")
            assert f"runs in cluster west on node {placed[name][1]}" in hub_pods[name]["status"]["message"]
        scheduled = [e for e in events_of(clusters.hub, namespace, "a0") if e.get("reason") == "Scheduled"]
        assert len(scheduled) == 1 and "[west]" in scheduled[0]["message"], scheduled
        # A member's event about a copy is written on the hub pod, the member named.
        copy = copies["a0"]
        west.request("POST", f"/api/v1/namespaces/{namespace}/events", {
            "metadata": {"name": "a0.pulled"}, "type": "Normal", "reason": "Pulled", "message": "image present",
            "involvedObject": {"kind": "Pod", "namespace": namespace, "name": "a0", "uid": copy["metadata"]["uid"]}})
        clusters.hub.wait_for("the member's event on the hub pod", lambda: [
            e for e in events_of(clusters.hub, namespace, "a0") if e.get("message") == "[west] image present"])
        # The core: one application, placed in west, in the hub's one partition.
        assert shim.options.rm_id == "hub"
        # A hub pod deleted: its copy goes too.
        clusters.hub.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/a4")
        west.wait_for("a4's copy deleted", lambda: "a4" not in _copies(west, namespace), timeout=20)


def test_a_pinned_job_waits_for_its_cluster_and_quota_counts_every_member(
        clusters: HubAndMembers, namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    east = clusters.members["east"]
    pin_east = {"pyscheduler.io/clusters": "east"}
    with hub(clusters, tmp_path, monkeypatch):
        create_pods(clusters.hub, namespace, [pod_body(f"f{i}", "filler", "root.batch", "1", annotations=pin_east)
                                              for i in range(4)])
        filled = _running_everywhere(clusters, namespace, "applicationId=filler", count=4)
        assert {m for m, _, _ in filled.values()} == {"east"}
        # East is full: a job pinned there waits, although west has room.
        create_pods(clusters.hub, namespace, [pod_body("pinned", "pinned", "root.batch", "1", annotations=pin_east)])
        with pytest.raises(AssertionError, match="not within"):
            _running_everywhere(clusters, namespace, "applicationId=pinned", timeout=3)
        assert _placements(clusters, namespace, "applicationId=pinned")["pinned"][0] == ""
        clusters.hub.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/f0")
        pinned = _running_everywhere(clusters, namespace, "applicationId=pinned", timeout=30)
        assert pinned["pinned"][0] == "east" and "pinned" in _copies(east, namespace)

        # root.capped's max is 3 cpu over every member: 2 in one member, then only 1 more anywhere.
        create_pods(clusters.hub, namespace, [pod_body(f"c{i}", "capped-1", "root.capped", "1") for i in range(2)])
        _running_everywhere(clusters, namespace, "applicationId=capped-1", count=2)
        create_pods(clusters.hub, namespace, [pod_body(f"d{i}", "capped-2", "root.capped", "1") for i in range(2)])
        _running_everywhere(clusters, namespace, "applicationId=capped-2", count=1)
        with pytest.raises(AssertionError, match="not within"):
            _running_everywhere(clusters, namespace, "applicationId=capped-2", count=2, timeout=3)
        capped = {k: v for k, v in _placements(clusters, namespace).items() if k[0] in "cd" and v[0]}
        assert len(capped) == 3, capped


def _gang(app: str, executors: int, cpu: str) -> list[dict[str, Any]]:
    groups = json.dumps([{"name": "worker", "minMember": executors, "minResource": {"cpu": cpu}}])
    return [pod_body(f"{app}-{n}", app, "root.batch", cpu, annotations={
        "yunikorn.apache.org/task-groups": groups, "yunikorn.apache.org/task-group-name": "worker"})
        for n in range(executors)]


def test_a_gang_is_never_split_across_members(clusters: HubAndMembers, namespace: str, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    with hub(clusters, tmp_path, monkeypatch):
        # 3 x 1.5 cpu: east's nodes hold one each (two in all), west's two each: the whole gang
        # fits west only, although east's first node has room for its first member.
        create_pods(clusters.hub, namespace, _gang("gang", 3, "1500m"))
        placed = _running_everywhere(clusters, namespace, "applicationId=gang", count=3, timeout=60)
        members = {k: v for k, v in placed.items() if k.startswith("gang-")}
        assert len(members) == 3 and {m for m, _, _ in members.values()} == {"west"}, placed
        # Its placeholders were placed in west too, and replaced there.
        assert not _copies(clusters.members["east"], namespace)


def test_a_member_lost_longer_than_the_limit_has_its_pods_run_once_in_the_other(
        clusters: HubAndMembers, namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    east, west = clusters.members["east"], clusters.members["west"]
    prefer_east = {"pyscheduler.io/preferred-clusters": "east"}
    with hub(clusters, tmp_path, monkeypatch, lost_after=3) as shim:
        create_pods(clusters.hub, namespace, [pod_body(f"l{i}", "lost-app", "root.batch", "1", annotations=prefer_east)
                                              for i in range(2)])
        first = _running_everywhere(clusters, namespace, count=2)
        assert {m for m, _, _ in first.values()} == {"east"}
        east.stop_apiserver()
        try:
            def all_in_west() -> dict[str, tuple[str, str, str]] | None:
                placed = _placements(clusters, namespace)
                in_west = all(member == "west" and phase == "Running" for member, _, phase in placed.values())
                return placed if in_west else None

            again = clusters.hub.wait_for("requeued and running in west", all_in_west, timeout=60)
            assert len(again) == 2
            assert shim.members["east"].health.value == "lost"
            reasons = [e.get("reason") for e in events_of(clusters.hub, namespace, "l0")]
            assert "ClusterLost" in reasons
        finally:
            east.restart_apiserver()
        # East answers again: its stale copies are deleted, each pod runs in west only.
        east.wait_for("east's stale copies deleted", lambda: not _copies(east, namespace), timeout=60)
        assert sorted(_copies(west, namespace)) == ["l0", "l1"]
        assert shim.members["east"].health.value == "answers"
        scheduled = [e for e in events_of(clusters.hub, namespace, "l0") if e.get("reason") == "Scheduled"]
        assert len(scheduled) == 2 and "[east]" in scheduled[0]["message"] + scheduled[1]["message"]


def test_a_job_on_the_hub_completes_from_its_pods_mirrored_status(
        clusters: HubAndMembers, namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hub's own Job controller makes the pods and counts them done from the status mirrored
    from the copies (a kubelet would write it in the member: here the test does)."""
    template = pod_body("unused", "job-app", "root.batch", "1")
    template["metadata"].pop("name")
    template["spec"]["restartPolicy"] = "Never"
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "sums"},
           "spec": {"completions": 2, "parallelism": 2, "template": template}}
    with hub(clusters, tmp_path, monkeypatch):
        made = clusters.hub.request("POST", f"/apis/batch/v1/namespaces/{namespace}/jobs", job)
        assert made.status_code == 201, made.text
        placed = _running_everywhere(clusters, namespace, "applicationId=job-app", count=2, timeout=60)
        assert len(placed) == 2
        member = next(iter(placed.values()))[0]
        kube = clusters.members[member]
        for name in placed:
            copy = _copies(kube, namespace)[name]
            status = copy["status"]
            status["phase"] = "Succeeded"
            answer = kube.request("PUT", f"/api/v1/namespaces/{namespace}/pods/{name}/status", copy)
            assert answer.status_code == 200, answer.text
        done = clusters.hub.wait_for("the hub's Job complete", lambda: (
            j if (j := clusters.hub.request("GET", f"/apis/batch/v1/namespaces/{namespace}/jobs/sums").json())
            .get("status", {}).get("succeeded") == 2 else None), timeout=60)
        assert done["metadata"]["labels"][CLUSTER_LABEL] == member


def test_serve_with_a_clusters_file(clusters: HubAndMembers, namespace: str, tmp_path: Path) -> None:
    """``pyscheduler serve --clusters-file`` under gunicorn: the members' status, the hub's one
    partition with every member's nodes, a pod placed, its application's member cluster."""
    path = write_clusters_file(tmp_path / "clusters.yaml", clusters, labels={"west": {"region": "eu"}})
    server = launch(tmp_path, ["--rm", "pyscheduler_k8s:attach", "--clusters-file", str(path)],
                    {"PYSCHEDULER_K8S_NAMESPACE": CONFIG_NAMESPACE})
    try:
        status = clusters.hub.wait_for("the hub running", lambda: (
            s if (s := server.get("/ws/v1/k8s/members").json())["hub"] == "running" else None), timeout=60)
        assert {name: s["health"] for name, s in status["members"].items()} == {"east": "answers", "west": "answers"}
        assert status["members"]["west"]["labels"] == {"region": "eu"}
        nodes = server.get("/ws/v1/partition/[hub]default/nodes").json()
        assert sorted(n["nodeID"] for n in nodes) == ["[east]e0", "[east]e1", "[west]w0", "[west]w1"]
        create_pods(clusters.hub, namespace, [pod_body("s0", "served-app", "root.batch", "1", annotations={
            "pyscheduler.io/cluster-selector": "region=eu"})])
        placed = _running_everywhere(clusters, namespace, count=1)
        assert placed["s0"][0] == "west"
        apps = server.get("/ws/v1/partition/[hub]default/queue/root.batch/applications").json()
        assert [a.get("memberCluster") for a in apps if a["applicationID"] == "served-app"] == ["west"]
    finally:
        code = stop(server)
    assert code == 0 and "Traceback" not in server.log(), server.log()


def test_a_hub_restarted_recovers_its_placements_and_places_nothing_twice(
        clusters: HubAndMembers, namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    east, west = clusters.members["east"], clusters.members["west"]
    with hub(clusters, tmp_path, monkeypatch):
        create_pods(clusters.hub, namespace, [pod_body(f"r{i}", "kept", "root.batch", "1") for i in range(3)])
        before = _running_everywhere(clusters, namespace, count=3)
        copies = {name: copy["metadata"]["uid"] for name, copy in {**_copies(east, namespace),
                                                                    **_copies(west, namespace)}.items()}
    with hub(clusters, tmp_path, monkeypatch) as shim:
        # The new hub recovers the placed pods as allocations on their members' nodes ...
        recovered = clusters.hub.wait_for("the placements recovered", lambda: (
            a if len(a := shim.applications().get("kept", set())) == 3 else None), timeout=30)
        assert all(shim.pod_state(uid) == "allocated" for uid in recovered)
        # ... and a new pod of the same application joins it in the same member.
        create_pods(clusters.hub, namespace, [pod_body("r3", "kept", "root.batch", "1")])
        after = _running_everywhere(clusters, namespace, count=4)
    assert {k: v for k, v in after.items() if k != "r3"} == before
    assert after["r3"][0] == next(iter(before.values()))[0]
    now = {name: copy["metadata"]["uid"] for name, copy in {**_copies(east, namespace),
                                                             **_copies(west, namespace)}.items()}
    assert {k: v for k, v in now.items() if k != "r3"} == copies  # the same copies: none made again
    scheduled = [e for e in events_of(clusters.hub, namespace, "r0") if e.get("reason") == "Scheduled"]
    assert len(scheduled) == 1


def test_preemption_frees_room_only_in_the_member_where_the_preemptor_runs(
        clusters: HubAndMembers, namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both members full of root.batch pods; root.prod's guarantee (2 cpu) comes back in west,
    the member its pods prefer: the victims are west's pods only, although east's are younger
    (the ones preemption would take first on one cluster)."""
    east, west = clusters.members["east"], clusters.members["west"]
    with hub(clusters, tmp_path, monkeypatch):
        create_pods(clusters.hub, namespace, [pod_body(f"w{i}", "fill-west", "root.batch", "1", annotations={
            "pyscheduler.io/clusters": "west"}) for i in range(8)])
        _running_everywhere(clusters, namespace, "applicationId=fill-west", count=8)
        create_pods(clusters.hub, namespace, [pod_body(f"e{i}", "fill-east", "root.batch", "1", annotations={
            "pyscheduler.io/clusters": "east"}) for i in range(4)])
        _running_everywhere(clusters, namespace, "applicationId=fill-east", count=4)
        create_pods(clusters.hub, namespace, [pod_body(f"p{i}", "prod", "root.prod", "1", priorityClassName="prod",
                                                       annotations={"pyscheduler.io/preferred-clusters": "west"})
                                              for i in range(2)])
        prod = _running_everywhere(clusters, namespace, "applicationId=prod", count=2, timeout=60)
        assert {member for member, _, _ in prod.values()} == {"west"}, prod
        left = _placements(clusters, namespace)
        victims = sorted(f"w{i}" for i in range(8) if f"w{i}" not in left)
        assert len(victims) == 2, left
        assert all(left.get(f"e{i}", ("", "", ""))[2] == "Running" for i in range(4)), left  # east untouched
        assert sorted(_copies(east, namespace)) == [f"e{i}" for i in range(4)]
        west.wait_for("the victims' copies gone", lambda: not set(victims) & set(_copies(west, namespace)), timeout=30)


def test_a_members_own_pod_with_the_copys_name_is_never_touched(
        clusters: HubAndMembers, namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    west = clusters.members["west"]
    own = create_pods(west, namespace, [{**pod_body("same", "theirs", "root.x", "100m"),
                                         "spec": {"nodeName": "w0", "containers": [{"name": "c", "image": "i"}]}}])[0]
    with hub(clusters, tmp_path, monkeypatch):
        create_pods(clusters.hub, namespace, [pod_body("same", "ours", "root.batch", "1", annotations={
            "pyscheduler.io/clusters": "west"})])
        with pytest.raises(AssertionError, match="not within"):
            _running_everywhere(clusters, namespace, timeout=4)
        still = west.request("GET", f"/api/v1/namespaces/{namespace}/pods/same").json()
        assert still["metadata"]["uid"] == own["metadata"]["uid"] and not still.get("metadata", {}).get("deletionTimestamp")
        # The member's own pod occupies its node in the hub's core like another scheduler's.
        assert _placements(clusters, namespace)["same"][0] == ""
