"""YuniKorn's examples on a real API server (kwok nodes), the shim reading YuniKorn's ConfigMap
``yunikorn-configs`` in namespace ``yunikorn`` (``ShimOptions(namespace="yunikorn")``):
``deployments/examples`` of apache/yunikorn-k8shim at 23b6b47f, copied unchanged into
tests/data/yunikorn_examples/ (its README names the source), each applied as ``kubectl apply``
would, with the outcome YuniKorn documents. Preemption is tests/test_k8s_yunikorn_preemption_example.py.

Without a config of their own the examples run under YuniKorn's default ConfigMap
(``deployments/scheduler/yunikorn-configs.yaml``: the ``tag`` rule on ``namespace``, created),
which places an application in ``root.<namespace>`` whatever queue its pods name
(placements/README.md: "queue in the application on submit: my_special_queue. Result:
root.default").

- ``predicates/node-affinity-example.yaml``: required node affinity on
  ``kubernetes.io/e2e-az-name`` in (e2e-az1, e2e-az2): the pod runs on the one node labelled
  e2e-az2 (Kubernetes' ``requiredDuringScheduling`` semantics, which YuniKorn's predicates apply).
- ``predicates/pod-nodeselector-example.yaml``: ``nodeSelector: {nodetype: test}``: Pending
  (``PodScheduled=False``, ``Unschedulable``) while no node has the label, then on the node
  labelled.
- ``predicates/pod-affinity-example.yaml``: two pods, each requiring a ``zone: z1`` pod on its
  host, both ``zone: z1``: both on one node.
- ``predicates/pod-anti-affinity-example.yaml``, ``pod-anti-affinity-p0.yaml`` then ``-p1.yaml``:
  the same with anti-affinity: on two different nodes.
- ``predicates/pod-with-toleration.yaml``: it names no scheduler (YuniKorn's admission
  controller would make it ``yunikorn``'s): as applied it is ``default-scheduler``'s and left
  alone; admitted as YuniKorn's admission controller admits it, it runs on a node tainted
  ``example-key=value1:NoSchedule`` (every node is, for the test).
- ``namespace/`` (README.md "namespace example"): queues.yaml (``root.development``,
  ``root.default``, the ``tag`` rule on ``namespace``, created) as the ConfigMap's
  ``queues.yaml``; namespaces.yaml; sleeppod_dev.yaml "will be run in the root.development
  queue", sleeppod_prod.yaml "in the newly created root.production queue".
- ``placements/{provided,username,fixed,tag}/`` (placements/README.md), each config.yaml as the
  ConfigMap's data: provided (parent ``user``) -> ``root.developer.my_special_queue``; username
  (create false) -> ``finance.test`` in ``root.finance_dot_test``, ``developer`` "failed" (no
  queue, rejected: its pod marked Failed, ``ApplicationRejected``, as YuniKorn's shim does);
  fixed -> ``root.last_resort``; tag -> ``root.default`` and (namespace ``testing``)
  ``root.testing``.
- ``sleep/sleeppods.yaml`` ("launches 3 pods") and ``sleep/batch-sleep-job.yaml`` ("a job with
  50 pods"): all placed, in ``root.default``; ``nginx/nginx.yaml`` ("a simple one pod
  deployment"): its pod placed.
- ``authz/acl``, ``authz/placement-rules``, ``authz/resource-limits`` (authz/README.md tables):
  ACL: sue (group-a) gets ``root.tenants.group-a``, not group-b; kim (group-b) group-b, not the
  other; anonymous neither ("blocked": rejected, the pod Failed). Placement rules: admin's
  provided queues under ``root.system``, sue in ``root.tenants.group-a.sue``, kim's namespaces
  dev/test in ``root.tenants.group-b.dev``/``.test``. Resource limits: admin's pod runs in
  ``root.system``; of sue's 5 replicas of 512M in ``root.tenants.group-a`` (max 2G) "run 3
  replica", 2 stay Pending.

**Users.** The authz examples' users submit through ``kubectl --context=<user>``; YuniKorn's
admission controller records the submitter on the pod (annotation
``yunikorn.apache.org/user.info``, for a Deployment on its pod template) and makes the pod
YuniKorn's (pkg/admission: ``processPod``/``processWorkload``). No admission controller runs
here, so :func:`_admitted` writes what it would: the user and its groups (the certificate's
organisation plus ``system:authenticated``, as create-user.sh makes them).

**Placed.** "Runs on a node" is asserted as the scheduler's binding (``spec.nodeName``): kwok
marks the pods Running seconds later, at the pace its pod watch restarts here.

**Controllers.** No controller manager runs: a Deployment's or Job's pods are created as the
ReplicaSet or Job controller would (the template, its labels plus the controller's, a generated
name), without owner references (kwok completes every pod a Job owns at once); a namespace gets
its ``default`` service account.

**Left out.** ``authz/priority`` (its table contradicts its config: the queue named
``low-priority`` has offset -1000 in the config, 1000 in the table, and the counts depend on
the pods' arrival against the scheduling cycle and on the environment, "results will vary");
``admission-controller-tests`` (YuniKorn's admission webhook, which pyscheduler does not have);
``spark``, ``tfjob``, ``mpioperator`` (their operators and images); ``volume`` (a real NFS server,
EBS on AWS, a local path on a real node: kwok runs no containers and has no volumes); gang
scheduling is tests/test_k8s_gang.py.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kube_cluster import KubeCluster, start_cluster
from kube_served import PARTITION, Served, events_of

from pyscheduler_k8s.shim import ShimOptions

pytestmark = pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")

DATA = Path(__file__).resolve().parent / "data" / "yunikorn_examples"
EXAMPLES = DATA / "examples"
NODES = [f"kwok-{n}" for n in range(4)]
#: The node affinity example's zone label, on one node only.
AZ_NODE = "kwok-1"
CONFIG_NAMESPACE = "yunikorn"
CONFIG_MAPS = f"/api/v1/namespaces/{CONFIG_NAMESPACE}/configmaps"
#: Every namespace an example puts pods in (cleaned after each test).
NAMESPACES = ("default", "development", "production", "testing", "dev", "test")
#: The groups the API server gives the example's users (create-user.sh: ``/O=<group>``).
ADMIN = ("admin", ["admin", "system:authenticated"])
SUE = ("sue", ["group-a", "system:authenticated"])
KIM = ("kim", ["group-b", "system:authenticated"])
ANONYMOUS = ("anonymous", ["anonymous", "system:authenticated"])
#: The cluster's own admin (the static token's user), who applies the examples without a context.
CLUSTER_ADMIN = ("admin", ["system:masters", "system:authenticated"])


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeCluster]:
    cluster = start_cluster(tmp_path_factory.mktemp("kube-yunikorn-examples"))
    try:
        cluster.add_nodes(NODES, cpu="8", memory="32Gi", labels={AZ_NODE: {"kubernetes.io/e2e-az-name": "e2e-az2"}})
        for namespace in (CONFIG_NAMESPACE, "default"):
            cluster.ensure_namespace(namespace)
        yield cluster
    finally:
        cluster.stop()


# -- applying the examples ---------------------------------------------------------------------

def _docs(relative: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all((DATA / relative).read_text()) if doc]


def _config_map(relative: str) -> dict[str, Any]:
    """The example's configuration as the ConfigMap ``yunikorn/yunikorn-configs``: a ConfigMap
    file as it is (namespace ``yunikorn`` when it names none); a placements config.yaml (the
    ConfigMap's data: "the configuration field ... replaced by the configuration field in the
    config.yaml") as its data; a bare queues.yaml as its ``queues.yaml`` (the namespace example:
    "create the configmap ... using the local queues.yaml")."""
    text = (DATA / relative).read_text()
    loaded = yaml.safe_load(text)
    if loaded.get("kind") == "ConfigMap":
        loaded["metadata"].setdefault("namespace", CONFIG_NAMESPACE)
        return dict(loaded)
    data = loaded if "queues.yaml" in loaded else {"queues.yaml": text}
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "yunikorn-configs", "namespace": CONFIG_NAMESPACE}, "data": data}


def _admitted(obj: dict[str, Any], user: tuple[str, list[str]]) -> dict[str, Any]:
    """What YuniKorn's admission controller makes of an object ``user`` submits (pkg/admission,
    defaults): a pod gets the user-info annotation, ``schedulerName: yunikorn``, the generated
    application id when it has none, ``allow-preemption: "true"`` (no PriorityClass); a
    Deployment or Job the user-info annotation on its pod template (its pods, created by a
    trusted controller, keep it)."""
    info = json.dumps({"user": user[0], "groups": user[1]}, separators=(",", ":"))
    if obj["kind"] in ("Deployment", "Job"):
        meta = obj["spec"]["template"].setdefault("metadata", {})
        meta.setdefault("annotations", {})["yunikorn.apache.org/user.info"] = info
        return obj
    meta, spec = obj["metadata"], obj["spec"]
    annotations = meta.setdefault("annotations", {})
    annotations.setdefault("yunikorn.apache.org/user.info", info)
    annotations.setdefault("yunikorn.apache.org/allow-preemption", "true")
    spec["schedulerName"] = "yunikorn"
    labels = meta.setdefault("labels", {})
    if not any(labels.get(k) for k in ("yunikorn.apache.org/app-id", "spark-app-selector", "applicationId")) \
            and not annotations.get("yunikorn.apache.org/app-id"):
        generated = f"yunikorn-{meta.get('namespace', 'default')}-autogen"
        labels["yunikorn.apache.org/app-id"] = labels["applicationId"] = generated
    return obj


def _create_pod(kube: KubeCluster, namespace: str, pod: dict[str, Any]) -> tuple[str, str]:
    answer = kube.request("POST", f"/api/v1/namespaces/{namespace}/pods", pod, timeout=30)
    assert answer.status_code == 201, answer.text
    return namespace, answer.json()["metadata"]["name"]


def _apply(kube: KubeCluster, relative: str, user: tuple[str, list[str]] | None = None) -> list[tuple[str, str]]:
    """``kubectl apply -f`` of an example file (``user``: submitted by that user, through
    YuniKorn's admission controller); a Deployment's or Job's pods as their controller makes
    them. Returns the pods created, (namespace, name)."""
    pods: list[tuple[str, str]] = []
    for doc in _docs(relative):
        if user is not None and doc["kind"] in ("Pod", "Deployment", "Job"):
            doc = _admitted(doc, user)
        namespace = doc["metadata"].get("namespace", "default")
        if doc["kind"] == "Namespace":
            answer = kube.request("POST", "/api/v1/namespaces", doc)
            assert answer.status_code == 201, answer.text
            kube.ensure_namespace(doc["metadata"]["name"])  # its default service account
        elif doc["kind"] == "Pod":
            pods.append(_create_pod(kube, namespace, doc))
        elif doc["kind"] in ("Deployment", "Job"):
            pods += _controlled_pods(kube, namespace, doc, user)
        else:
            raise AssertionError(f"{relative}: {doc['kind']} not expected")
    return pods


def _controlled_pods(kube: KubeCluster, namespace: str, doc: dict[str, Any],
                     user: tuple[str, list[str]] | None) -> list[tuple[str, str]]:
    """The Deployment or Job created, then its pods as the ReplicaSet / Job controller makes
    them (see the module doc); each pod admitted again (the controller keeps the user info)."""
    kind = doc["kind"]
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments" if kind == "Deployment" \
        else f"/apis/batch/v1/namespaces/{namespace}/jobs"
    answer = kube.request("POST", path, doc)
    assert answer.status_code == 201, answer.text
    created = answer.json()
    name, uid, template = created["metadata"]["name"], created["metadata"]["uid"], created["spec"]["template"]
    if kind == "Deployment":
        count, template_hash = created["spec"].get("replicas", 1), secrets.token_hex(5)[:10]
        extra = {"pod-template-hash": template_hash}
        prefix = f"{name}-{template_hash}"
    else:
        count = created["spec"].get("parallelism", 1)
        extra = {"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name,
                 "controller-uid": uid, "job-name": name}
        prefix = name
    pods = []
    for _ in range(count):
        labels = {**template["metadata"].get("labels", {}), **extra}
        meta = {"name": f"{prefix}-{secrets.token_hex(3)[:5]}", "labels": labels,
                "annotations": dict(template["metadata"].get("annotations") or {})}
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template["spec"]}
        if user is not None:
            pod = _admitted(pod, user)
        pods.append(_create_pod(kube, namespace, pod))
    return pods


@contextlib.contextmanager
def _yunikorn(kube: KubeCluster, config: str = "scheduler/yunikorn-configs.yaml") -> Iterator[Served]:
    """The example's ConfigMap applied (default: YuniKorn's own), then the scheduler with the
    shim reading it; on the way out the scheduler stopped, the examples' objects deleted."""
    config_map = _config_map(config)
    answer = kube.request("POST", CONFIG_MAPS, config_map)
    assert answer.status_code == 201, answer.text
    served = Served(kube, ShimOptions(namespace=CONFIG_NAMESPACE))
    try:
        yield served
    finally:
        served.stop()
        _clean(kube)


def _clean(kube: KubeCluster) -> None:
    kube.request("DELETE", f"{CONFIG_MAPS}/yunikorn-configs")
    existing = {n["metadata"]["name"] for n in kube.request("GET", "/api/v1/namespaces").json()["items"]}
    for namespace in (n for n in NAMESPACES if n in existing):
        for path in (f"/apis/apps/v1/namespaces/{namespace}/deployments", f"/apis/batch/v1/namespaces/{namespace}/jobs",
                     f"/api/v1/namespaces/{namespace}/pods?gracePeriodSeconds=0"):
            kube.request("DELETE", path, timeout=30)
        kube.wait_for(f"pods of {namespace} deleted", lambda: not _pods(kube, namespace), timeout=60, interval=0.2)


# -- reading the outcome -----------------------------------------------------------------------

def _pods(kube: KubeCluster, namespace: str) -> list[dict[str, Any]]:
    answer = kube.request("GET", f"/api/v1/namespaces/{namespace}/pods", timeout=30)
    items: list[dict[str, Any]] = answer.json()["items"]
    return items


def _pod(kube: KubeCluster, key: tuple[str, str]) -> dict[str, Any]:
    found: dict[str, Any] = kube.request("GET", f"/api/v1/namespaces/{key[0]}/pods/{key[1]}").json()
    return found


def _bound(pod: dict[str, Any]) -> bool:
    return bool(pod.get("spec", {}).get("nodeName"))


def _node_of(kube: KubeCluster, key: tuple[str, str], timeout: float = 30) -> str:
    """The node the scheduler bound the pod to (kwok reports it Running later: its pod watch
    restarts every few seconds here, which is kwok's pace, not the scheduler's)."""
    try:
        found = kube.wait_for(f"{key[0]}/{key[1]} bound", lambda: _bound(p := _pod(kube, key)) and p,
                              timeout=timeout, interval=0.1)
    except TimeoutError as exc:  # say why
        raise AssertionError(f"{exc}: status {_pod(kube, key).get('status')}, events "
                             f"{[e['message'] for e in events_of(kube, key[0], key[1])]}") from exc
    node: str = found["spec"]["nodeName"]
    return node


def _unschedulable(pod: dict[str, Any]) -> dict[str, Any] | None:
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition["type"] == "PodScheduled" and condition["status"] == "False":
            return dict(condition)
    return None


def _failed(kube: KubeCluster, key: tuple[str, str], timeout: float = 30) -> dict[str, Any]:
    """The status of a pod marked Failed (an application the core rejected)."""
    found = kube.wait_for(f"{key[0]}/{key[1]} Failed", lambda: (s := _pod(kube, key).get("status", {})).get(
        "phase") == "Failed" and s, timeout=timeout, interval=0.1)
    assert not _pod(kube, key)["spec"].get("nodeName")
    return dict(found)


def _queue_of(served: Served, app_id: str) -> str | None:
    """The queue the core placed the application in (None: not placed, or rejected)."""
    partition = served.context.partitions[PARTITION]
    with partition.lock:
        app = partition.applications.get(app_id) or partition.completed_applications.get(app_id)
        return app.queue.path if app is not None and app.queue is not None else None


def _wait_queue(served: Served, kube: KubeCluster, app_id: str, timeout: float = 30) -> str:
    path: str = kube.wait_for(f"application {app_id} placed", lambda: _queue_of(served, app_id), timeout=timeout)
    return path


def _rejected(served: Served, app_id: str) -> str | None:
    partition = served.context.partitions[PARTITION]
    with partition.lock:
        app = partition.rejected_applications.get(app_id)
        return None if app is None else app.rejected_message or "rejected"


def _queue_managed(served: Served, path: str) -> bool | None:
    partition = served.context.partitions[PARTITION]
    with partition.lock:
        queue: Any = partition.root
        for name in path.split(".")[1:]:
            queue = queue.children.get(name) if queue is not None else None
        return None if queue is None else bool(queue.is_managed)


def _patch_node(kube: KubeCluster, name: str, patch: dict[str, Any]) -> None:
    answer = kube.session.patch(f"{kube.server}/api/v1/nodes/{name}", json=patch, verify=False, timeout=10,
                                headers={"Content-Type": "application/merge-patch+json"})
    assert answer.status_code == 200, answer.text


def _stays(check: Any, seconds: float) -> None:
    """``check()`` holds all along ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert check()
        time.sleep(0.25)


# -- predicates --------------------------------------------------------------------------------

def test_node_affinity_example_runs_on_the_zone_node(kube: KubeCluster) -> None:
    with _yunikorn(kube) as served:
        [pod] = _apply(kube, "examples/predicates/node-affinity-example.yaml")
        assert _node_of(kube, pod) == AZ_NODE
        # queue: root.sandbox on the pod; YuniKorn's default tag rule places it by namespace.
        assert _queue_of(served, "pod-with-node-affinity-01") == "root.default"


def test_node_selector_example_waits_for_a_node_labelled_nodetype_test(kube: KubeCluster) -> None:
    try:
        with _yunikorn(kube):
            [pod] = _apply(kube, "examples/predicates/pod-nodeselector-example.yaml")
            condition = kube.wait_for("PodScheduled=False", lambda: _unschedulable(_pod(kube, pod)), timeout=30)
            assert condition["reason"] == "Unschedulable", condition
            _stays(lambda: not _pod(kube, pod)["spec"].get("nodeName"), 2)
            _patch_node(kube, "kwok-2", {"metadata": {"labels": {"nodetype": "test"}}})
            assert _node_of(kube, pod) == "kwok-2"
    finally:
        _patch_node(kube, "kwok-2", {"metadata": {"labels": {"nodetype": None}}})


def test_pod_affinity_example_puts_both_pods_on_one_node(kube: KubeCluster) -> None:
    with _yunikorn(kube) as served:
        pods = _apply(kube, "examples/predicates/pod-affinity-example.yaml")
        nodes = {_node_of(kube, pod) for pod in pods}
        assert len(nodes) == 1, nodes
        assert served.app_allocations("pod-with-pod-affinity-01") == 2


def test_pod_anti_affinity_example_puts_the_pods_on_two_nodes(kube: KubeCluster) -> None:
    with _yunikorn(kube):
        pods = _apply(kube, "examples/predicates/pod-anti-affinity-example.yaml")
        nodes = [_node_of(kube, pod) for pod in pods]
        assert len(set(nodes)) == 2, nodes


def test_pod_anti_affinity_p0_then_p1_on_two_nodes(kube: KubeCluster) -> None:
    with _yunikorn(kube):
        [p0] = _apply(kube, "examples/predicates/pod-anti-affinity-p0.yaml")
        first = _node_of(kube, p0)
        [p1] = _apply(kube, "examples/predicates/pod-anti-affinity-p1.yaml")
        assert _node_of(kube, p1) != first


def test_pod_with_toleration_example_on_tainted_nodes(kube: KubeCluster) -> None:
    taint = {"key": "example-key", "value": "value1", "effect": "NoSchedule"}
    try:
        for node in NODES:
            _patch_node(kube, node, {"spec": {"taints": [taint]}})
        with _yunikorn(kube) as served:
            # As written it names no scheduler: default-scheduler's, not ours.
            [plain] = _apply(kube, "examples/predicates/pod-with-toleration.yaml")
            assert _pod(kube, plain)["spec"]["schedulerName"] == "default-scheduler"
            _stays(lambda: not _pod(kube, plain)["spec"].get("nodeName") and not _unschedulable(_pod(kube, plain)), 2)
            assert "yunikorn-default-autogen" not in served.shim.applications()
            answer = kube.request("DELETE", f"/api/v1/namespaces/default/pods/{plain[1]}?gracePeriodSeconds=0")
            assert answer.status_code == 200, answer.text
            kube.wait_for("deleted", lambda: _pod(kube, plain).get("kind") == "Status", timeout=30)
            # Through YuniKorn's admission controller: ours, and it tolerates the taint.
            [admitted] = _apply(kube, "examples/predicates/pod-with-toleration.yaml", CLUSTER_ADMIN)
            assert _node_of(kube, admitted) in NODES
            assert _queue_of(served, "yunikorn-default-autogen") == "root.default"
    finally:
        for node in NODES:
            _patch_node(kube, node, {"spec": {"taints": []}})


# -- placement: the namespace example and placements/ -------------------------------------------

def test_namespace_example_places_by_namespace(kube: KubeCluster) -> None:
    with _yunikorn(kube, "examples/namespace/queues.yaml") as served:
        assert _queue_managed(served, "root.production") is None  # not in the configuration
        _apply(kube, "examples/namespace/namespaces.yaml")
        [dev] = _apply(kube, "examples/namespace/sleeppod_dev.yaml")
        [prod] = _apply(kube, "examples/namespace/sleeppod_prod.yaml")
        assert _wait_queue(served, kube, "application-namespace-1") == "root.development"
        assert _wait_queue(served, kube, "application-namespace-2") == "root.production"
        assert _queue_managed(served, "root.development") is True
        assert _queue_managed(served, "root.production") is False  # created by the rule
        _node_of(kube, dev)
        _node_of(kube, prod)


def test_placements_provided_rule_with_user_parent(kube: KubeCluster) -> None:
    with _yunikorn(kube, "examples/placements/provided/config.yaml") as served:
        [pod] = _apply(kube, "examples/placements/provided/provided_example.yaml")
        assert _wait_queue(served, kube, "prvoided-rule-example01") == "root.developer.my_special_queue"
        _node_of(kube, pod)


def test_placements_user_name_rule(kube: KubeCluster) -> None:
    with _yunikorn(kube, "examples/placements/username/config.yaml") as served:
        finance, developer = _apply(kube, "examples/placements/username/username_example.yaml")
        assert _wait_queue(served, kube, "username-rule-example01") == "root.finance_dot_test"
        _node_of(kube, finance)
        # "queue does not exist: Result: failed": rejected, its pod marked Failed.
        status = _failed(kube, developer)
        assert status["reason"] == "ApplicationRejected", status
        assert _rejected(served, "username-rule-example02")
        assert _queue_managed(served, "root.developer") is None


def test_placements_fixed_rule(kube: KubeCluster) -> None:
    with _yunikorn(kube, "examples/placements/fixed/config.yaml") as served:
        [pod] = _apply(kube, "examples/placements/fixed/fixed_example.yaml")
        assert _wait_queue(served, kube, "fixed-rule-example01") == "root.last_resort"
        _node_of(kube, pod)


def test_placements_tag_rule(kube: KubeCluster) -> None:
    kube.ensure_namespace("testing")  # the example's second pod is in it
    with _yunikorn(kube, "examples/placements/tag/config.yaml") as served:
        pods = _apply(kube, "examples/placements/tag/tag_example.yaml")
        assert _wait_queue(served, kube, "tag-rule-example01") == "root.default"
        assert _wait_queue(served, kube, "tag-rule-example02") == "root.testing"
        for pod in pods:
            _node_of(kube, pod)


# -- sleep and nginx ---------------------------------------------------------------------------

def test_sleep_pods_example(kube: KubeCluster) -> None:
    with _yunikorn(kube) as served:
        pods = _apply(kube, "examples/sleep/sleeppods.yaml")
        assert len(pods) == 3
        for pod in pods:
            _node_of(kube, pod)
        for n in (1, 2, 3):
            assert _queue_of(served, f"application-sleep-000{n}") == "root.default"


def test_batch_sleep_job_example(kube: KubeCluster) -> None:
    with _yunikorn(kube) as served:
        pods = _apply(kube, "examples/sleep/batch-sleep-job.yaml")
        assert len(pods) == 50
        kube.wait_for("50 pods bound", lambda: sum(_bound(p) for p in _pods(kube, "default")) == 50, timeout=60,
                      interval=0.5)
        assert served.app_allocations("batch-sleep-job-1") == 50
        assert _queue_of(served, "batch-sleep-job-1") == "root.default"


def test_nginx_deployment_example(kube: KubeCluster) -> None:
    with _yunikorn(kube) as served:
        [pod] = _apply(kube, "examples/nginx/nginx.yaml")
        _node_of(kube, pod)
        assert _queue_of(served, "nginx_2019_01_22_00001") == "root.default"


# -- authz --------------------------------------------------------------------------------------

def test_authz_acl_example(kube: KubeCluster) -> None:
    with _yunikorn(kube, "examples/authz/acl/yunikorn-configs.yaml") as served:
        a, b = _apply(kube, "examples/authz/acl/nginx-1.yaml", SUE)
        c, d = _apply(kube, "examples/authz/acl/nginx-2.yaml", KIM)
        e, f = _apply(kube, "examples/authz/acl/nginx-3.yaml", ANONYMOUS)
        assert _wait_queue(served, kube, "nginx-a") == "root.tenants.group-a"
        assert _wait_queue(served, kube, "nginx-d") == "root.tenants.group-b"
        _node_of(kube, a)
        _node_of(kube, d)
        for pod, app in ((b, "nginx-b"), (c, "nginx-c"), (e, "nginx-e"), (f, "nginx-f")):
            assert _failed(kube, pod)["reason"] == "ApplicationRejected"
            assert _rejected(served, app), app


def test_authz_placement_rules_example(kube: KubeCluster) -> None:
    for namespace in ("dev", "test"):  # nginx-kim.yaml's namespaces
        kube.ensure_namespace(namespace)
    with _yunikorn(kube, "examples/authz/placement-rules/yunikorn-configs.yaml") as served:
        pods = _apply(kube, "examples/authz/placement-rules/nginx-admin.yaml", ADMIN)
        pods += _apply(kube, "examples/authz/placement-rules/nginx-sue.yaml", SUE)
        pods += _apply(kube, "examples/authz/placement-rules/nginx-kim.yaml", KIM)
        expected = {"nginx-admin-high-priority": "root.system.high-priority",
                    "nginx-admin-low-priority": "root.system.low-priority", "nginx-sue": "root.tenants.group-a.sue",
                    "nginx-kim-dev": "root.tenants.group-b.dev", "nginx-kim-test": "root.tenants.group-b.test"}
        for app, queue in expected.items():
            assert _wait_queue(served, kube, app) == queue, app
        for pod in pods:
            _node_of(kube, pod)


def test_authz_resource_limits_example(kube: KubeCluster) -> None:
    with _yunikorn(kube, "examples/authz/resource-limits/yunikorn-configs.yaml") as served:
        [admin] = _apply(kube, "examples/authz/resource-limits/nginx-admin.yaml", ADMIN)
        sue = _apply(kube, "examples/authz/resource-limits/nginx-sue.yaml", SUE)
        assert _wait_queue(served, kube, "nginx-admin") == "root.system"
        _node_of(kube, admin)
        assert _wait_queue(served, kube, "nginx-sue") == "root.tenants.group-a"

        def split() -> tuple[int, int]:
            states = [_pod(kube, pod) for pod in sue]
            return sum(_bound(p) for p in states), sum(bool(_unschedulable(p)) for p in states)

        # "run 3 replica (4 replica will exceed the resource limit)"
        kube.wait_for("3 bound, 2 pending", lambda: split() == (3, 2), timeout=30, interval=0.2)
        _stays(lambda: split() == (3, 2), 3)
        pending = [p for p in (_pod(kube, pod) for pod in sue) if not p["spec"].get("nodeName")]
        for pod in pending:
            condition = _unschedulable(pod)
            assert condition is not None and condition["reason"] == "Unschedulable", condition
            assert "root.tenants.group-a" in condition.get("message", ""), condition
        assert served.app_allocations("nginx-sue") == 3
