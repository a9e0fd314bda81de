"""kube-scheduler's NodeResourcesFit, case by case: the cases of kube-scheduler's own test tables
(kubernetes v1.37), written here as Python data under their Go names.

NodeResourcesFit is the core's own rule here: the shim turns a pod into a request
(``pods.pod_request``: cpu in millicores as ``vcore``, memory in bytes, every other resource by
its name, one ``pods``) and a node into a capacity (``nodes.node_view(node).capacity``, its
allocatable), and the core places the pod where every requested resource fits in what is left.
:func:`insufficient` below mirrors that rule (and kube-scheduler's ``fitsRequest``): a resource
fits when request <= capacity - used, a resource the node lacks counting as 0; what the pods on
the node use is the sum of their requests, one ``pods`` each.

Followed (in kubernetes/kubernetes):

- pkg/scheduler/framework/plugins/noderesources/fit_test.go: ``TestEnoughRequests`` (node
  allocatable cpu 10m, memory 20, pods 32, example.com/aaa 5, ephemeral-storage 20,
  hugepages-2Mi 5), ``TestNotEnoughRequests`` (pods 1), ``TestStorageRequests``,
  ``TestRestartableInitContainers`` (cpu 2m, pods 1); semantics: fit.go ``fitsRequest``.
- staging/src/k8s.io/component-helpers/resource/helpers_test.go: ``TestPodRequestsAndLimits``
  (the requests), ``TestPodResourceRequests``; semantics: helpers.go ``PodRequests`` and
  ``AggregateContainerRequests`` (sidecars: KEP 753's formula; pod-level requests; overhead).

Skipped (listed as skips below):

- TestEnoughRequests "skip checking ignored extended resource", "skip checking ignored extended
  resource via resource groups": ``NodeResourcesFitArgs.ignoredResources`` and
  ``ignoredResourceGroups`` are kube-scheduler profile settings the shim does not have.
- TestEnoughRequests "extended resource backed by DRA", "extended resource backed by DRA, nil
  draManager", "extended resource was backed by Device Plugin (Allocatable: 0)": extended
  resources served by DRA device classes (DRAExtendedResource); the shim has no DRA.
- TestRestartableInitContainers "not allow pod with restartable init containers if sidecar
  containers is disabled": SidecarContainers is GA and locked on in v1.37.
- TestPodResourceRequests "pod overhead excluded" (``ExcludeOverhead``, an option the
  scheduler never sets), "resized, infeasible", "resized, no resize status"
  (``UseStatusResources``: a running pod's in-place resize, from its status; a pending pod
  asks for its spec's requests).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from pyscheduler_k8s.nodes import node_view
from pyscheduler_k8s.pods import PodError, pod_request

A = "example.com/aaa"
B = "example.com/bbb"
K8S_A = "kubernetes.io/something"
K8S_B = "subdomain.kubernetes.io/something"
HUGE = "hugepages-2Mi"
DRA = "extended.resource.dra.io/something"
CPU, MEMORY, STORAGE, PODS = "vcore", "memory", "ephemeral-storage", "pods"

IGNORED_ARGS = "NodeResourcesFitArgs ignoredResources/ignoredResourceGroups are profile settings the shim does not have"
DRA_BACKED = "an extended resource served by a DRA device class (DRAExtendedResource); the shim has no DRA"


def insufficient(request: Mapping[str, int], capacity: Mapping[str, int], used: Mapping[str, int]) -> set[str]:
    """The resources that do not fit: request > capacity - used (absent: 0). The core's rule,
    and kube-scheduler's fitsRequest (which skips zero requests; pod_request leaves them out)."""
    return {name for name, wanted in request.items() if wanted > capacity.get(name, 0) - used.get(name, 0)}


def fits(request: Mapping[str, int], capacity: Mapping[str, int], used: Mapping[str, int]) -> bool:
    return not insufficient(request, capacity, used)


def _used(pods: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for pod in pods:
        for name, value in pod_request(pod).items():
            total[name] = total.get(name, 0) + value
    return total


def _allocatable(cpu_milli: int, memory: int, pods: int, extended_a: int, storage: int, hugepages: int) -> dict[str, str]:
    """fit_test.go's makeAllocatableResources."""
    return {"cpu": f"{cpu_milli}m", "memory": str(memory), "pods": str(pods), A: str(extended_a),
            "ephemeral-storage": str(storage), HUGE: str(hugepages)}


def _capacity(allocatable: Mapping[str, str]) -> dict[str, int]:
    return node_view({"metadata": {"name": "n"}, "status": {"allocatable": dict(allocatable)}}).capacity


def _res(cpu: int = 0, mem: int = 0, storage: int = 0, scalars: Mapping[str, int] | None = None) -> dict[str, str]:
    """A container's requests as fit_test.go's newResourcePod writes them (zeros included, and a
    ``pods`` entry, which the scheduler ignores)."""
    out = {"cpu": f"{cpu}m", "memory": str(mem), "pods": "0", "ephemeral-storage": str(storage)}
    out.update({name: str(value) for name, value in (scalars or {}).items()})
    return out


def _pod(*containers: Mapping[str, str], init: Iterable[Mapping[str, str]] = (), overhead: Mapping[str, str] | None = None,
         pod_level: Mapping[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": f"c{n}", "resources": {"requests": dict(r)}}
                                           for n, r in enumerate(containers)]}
    init = list(init)
    if init:
        spec["initContainers"] = [{"name": f"i{n}", "resources": {"requests": dict(r)}} for n, r in enumerate(init)]
    if overhead is not None:
        spec["overhead"] = dict(overhead)
    if pod_level is not None:
        spec["resources"] = {"requests": dict(pod_level)}
    return {"metadata": {"name": "p", "namespace": "ns"}, "spec": spec}


EMPTY = _pod()
ENOUGH = _allocatable(10, 20, 32, 5, 20, 5)

ENOUGH_REQUESTS_CASES: list[Any] = [
    # (name, pod, pods on the node (None: an empty node), insufficient resources)
    ("no resources requested always fits", EMPTY, [_pod(_res(10, 20))], set()),
    ("too many resources fails", _pod(_res(1, 1)), [_pod(_res(10, 20))], {CPU, MEMORY}),
    ("too many resources fails due to init container cpu", _pod(_res(1, 1), init=[_res(3, 1)]),
     [_pod(_res(8, 19))], {CPU}),
    ("too many resources fails due to highest init container cpu", _pod(_res(1, 1), init=[_res(3, 1), _res(2, 1)]),
     [_pod(_res(8, 19))], {CPU}),
    ("too many resources fails due to init container memory", _pod(_res(1, 1), init=[_res(1, 3)]),
     [_pod(_res(9, 19))], {MEMORY}),
    ("too many resources fails due to highest init container memory", _pod(_res(1, 1), init=[_res(1, 3), _res(1, 2)]),
     [_pod(_res(9, 19))], {MEMORY}),
    ("init container fits because it's the max, not sum, of containers and init containers",
     _pod(_res(1, 1), init=[_res(1, 1)]), [_pod(_res(9, 19))], set()),
    ("multiple init containers fit because it's the max, not sum, of containers and init containers",
     _pod(_res(1, 1), init=[_res(1, 1), _res(1, 1)]), [_pod(_res(9, 19))], set()),
    ("both resources fit", _pod(_res(1, 1)), [_pod(_res(5, 5))], set()),
    ("one resource memory fits", _pod(_res(2, 1)), [_pod(_res(9, 5))], {CPU}),
    ("one resource cpu fits", _pod(_res(1, 2)), [_pod(_res(5, 19))], {MEMORY}),
    ("equal edge case", _pod(_res(5, 1)), [_pod(_res(5, 19))], set()),
    ("equal edge case for init container", _pod(_res(4, 1), init=[_res(5, 1)]), [_pod(_res(5, 19))], set()),
    ("extended resource fits", _pod(_res(scalars={A: 1})), [_pod(_res())], set()),
    ("extended resource fits for init container", _pod(_res(), init=[_res(scalars={A: 1})]), [_pod(_res())], set()),
    ("extended resource capacity enforced", _pod(_res(1, 1, scalars={A: 10})), [_pod(_res(scalars={A: 0}))], {A}),
    ("extended resource capacity enforced for init container", _pod(_res(), init=[_res(1, 1, scalars={A: 10})]),
     [_pod(_res(scalars={A: 0}))], {A}),
    ("extended resource allocatable enforced", _pod(_res(1, 1, scalars={A: 1})), [_pod(_res(scalars={A: 5}))], {A}),
    ("extended resource allocatable enforced for init container", _pod(_res(), init=[_res(1, 1, scalars={A: 1})]),
     [_pod(_res(scalars={A: 5}))], {A}),
    ("extended resource allocatable enforced for multiple containers",
     _pod(_res(1, 1, scalars={A: 3}), _res(1, 1, scalars={A: 3})), [_pod(_res(scalars={A: 2}))], {A}),
    ("extended resource allocatable admits multiple init containers",
     _pod(_res(), init=[_res(1, 1, scalars={A: 3}), _res(1, 1, scalars={A: 3})]), [_pod(_res(scalars={A: 2}))], set()),
    ("extended resource allocatable enforced for multiple init containers",
     _pod(_res(), init=[_res(1, 1, scalars={A: 6}), _res(1, 1, scalars={A: 3})]), [_pod(_res(scalars={A: 2}))], {A}),
    ("extended resource allocatable enforced for unknown resource", _pod(_res(1, 1, scalars={B: 1})),
     [_pod(_res())], {B}),
    ("extended resource allocatable enforced for unknown resource for init container",
     _pod(_res(), init=[_res(1, 1, scalars={B: 1})]), [_pod(_res())], {B}),
    ("kubernetes.io resource capacity enforced", _pod(_res(1, 1, scalars={K8S_A: 10})), [_pod(_res())], {K8S_A}),
    ("kubernetes.io resource capacity enforced for init container", _pod(_res(), init=[_res(1, 1, scalars={K8S_B: 10})]),
     [_pod(_res())], {K8S_B}),
    ("hugepages resource capacity enforced", _pod(_res(1, 1, scalars={HUGE: 10})), [_pod(_res(scalars={HUGE: 0}))],
     {HUGE}),
    ("hugepages resource capacity enforced for init container", _pod(_res(), init=[_res(1, 1, scalars={HUGE: 10})]),
     [_pod(_res(scalars={HUGE: 0}))], {HUGE}),
    ("hugepages resource allocatable enforced for multiple containers",
     _pod(_res(1, 1, scalars={HUGE: 3}), _res(1, 1, scalars={HUGE: 3})), [_pod(_res(scalars={HUGE: 2}))], {HUGE}),
    pytest.param(_pod(_res(1, 1, scalars={B: 1})), [_pod(_res())], set(), id="skip checking ignored extended resource",
                 marks=pytest.mark.skip(reason=IGNORED_ARGS)),
    ("resources + pod overhead fits", _pod(_res(1, 1), overhead={"cpu": "3m", "memory": "13"}), [_pod(_res(5, 5))],
     set()),
    ("requests + overhead does not fit for memory", _pod(_res(1, 1), overhead={"cpu": "1m", "memory": "15"}),
     [_pod(_res(5, 5))], {MEMORY}),
    pytest.param(_pod(_res(1, 1, scalars={B: 1, K8S_A: 1})), [_pod(_res())], {K8S_A},
                 id="skip checking ignored extended resource via resource groups",
                 marks=pytest.mark.skip(reason=IGNORED_ARGS)),
    ("skip checking extended resource request with quantity zero via resource groups",
     _pod(_res(1, 1, scalars={A: 0})), [_pod(_res(scalars={A: 6}))], set()),
    ("skip checking resource request with quantity zero", _pod(_res(scalars={A: 1})),
     [_pod(_res(20, 30, scalars={A: 1}))], set()),
    ("both pod-level and container-level resources fit", _pod(_res(1, 1), pod_level={"cpu": "1m", "memory": "2"}),
     [_pod(_res(5, 5))], set()),
    ("pod-level cpu resource not fit", _pod(_res(1, 1), pod_level={"cpu": "7m", "memory": "2"}), [_pod(_res(5, 5))],
     {CPU}),
    ("pod-level memory resource not fit", _pod(_res(1, 1), pod_level={"cpu": "3m", "memory": "2"}),
     [_pod(_res(5, 19))], {MEMORY}),
    ("pod-level hugepages resource fit", _pod(pod_level={"cpu": "3m", "memory": "2", HUGE: "5"}), None, set()),
    ("both pod-level and container-level hugepages resource fit",
     _pod(_res(1, 1, scalars={HUGE: 3}), pod_level={"cpu": "3m", "memory": "2", HUGE: "5"}), None, set()),
    ("pod-level hugepages resource not fit", _pod(pod_level={"cpu": "3m", "memory": "2", HUGE: "10"}), None, {HUGE}),
    ("one pod-level cpu resource fits and all init and non-init containers resources fit",
     _pod(_res(1, 1), init=[_res(1, 1)], pod_level={"cpu": "3m", "memory": "2"}), [_pod(_res(5, 19))], {MEMORY}),
    ("extended resource backed by device plugin", _pod(_res(scalars={A: 1})), [_pod(_res())], set()),
    pytest.param(_pod(_res(1, 1, scalars={DRA: 1})), [_pod(_res())], set(), id="extended resource backed by DRA",
                 marks=pytest.mark.skip(reason=DRA_BACKED)),
    pytest.param(_pod(_res(1, 1, scalars={A: 1})), [_pod(_res())], set(),
                 id="extended resource backed by DRA, nil draManager", marks=pytest.mark.skip(reason=DRA_BACKED)),
    ("extended resource backed by DRA not enabled", _pod(_res(1, 1, scalars={DRA: 1})), [_pod(_res())], {DRA}),
    ("extended resource NOT backed by DRA", _pod(_res(1, 1, scalars={B: 1})), [_pod(_res())], {B}),
    pytest.param(_pod(_res(scalars={DRA: 1})), [_pod(_res(scalars={DRA: 0}))], set(),
                 id="extended resource was backed by Device Plugin (Allocatable: 0)",
                 marks=pytest.mark.skip(reason=DRA_BACKED)),
    ("extended resource was backed by Device Plugin (Allocatable: 0), global cache", _pod(_res(scalars={A: 1})),
     [_pod(_res(scalars={A: 0}))], set()),
]


def _cases(cases: list[Any]) -> list[Any]:
    return [pytest.param(*c[1:], id=c[0]) if isinstance(c[0], str) else c for c in cases]


@pytest.mark.parametrize(("pod", "on_node", "short"), _cases(ENOUGH_REQUESTS_CASES))
def test_enough_requests(pod: dict[str, Any], on_node: list[dict[str, Any]] | None, short: set[str]) -> None:
    """TestEnoughRequests: the resources that do not fit are those the Go case names."""
    assert insufficient(pod_request(pod), _capacity(ENOUGH), _used(on_node or [])) == short


@pytest.mark.parametrize(("pod", "on_node"), [
    pytest.param(EMPTY, _pod(_res(10, 20)),
                 id="even without specified resources, predicate fails when there's no space for additional pod"),
    pytest.param(_pod(_res(1, 1)), _pod(_res(5, 5)),
                 id="even if both resources fit, predicate fails when there's no space for additional pod"),
    pytest.param(_pod(_res(5, 1)), _pod(_res(5, 19)),
                 id="even for equal edge case, predicate fails when there's no space for additional pod"),
    pytest.param(_pod(_res(5, 1), init=[_res(5, 1)]), _pod(_res(5, 19)),
                 id="even for equal edge case, predicate fails when there's no space for additional pod due to init "
                    "container"),
])
def test_not_enough_requests(pod: dict[str, Any], on_node: dict[str, Any]) -> None:
    """TestNotEnoughRequests: room for one pod, one there: "Too many pods" and nothing else."""
    assert insufficient(pod_request(pod), _capacity(_allocatable(10, 20, 1, 0, 0, 0)), _used([on_node])) == {PODS}


@pytest.mark.parametrize(("pod", "on_node", "short"), [
    pytest.param(_pod(_res(1, 1)), _pod(_res(2, 10)), set(), id="empty storage requested, and pod fits"),
    pytest.param(_pod(_res(storage=25)), _pod(_res(2, 2)), {STORAGE},
                 id="storage ephemeral local storage request exceeds allocatable"),
    pytest.param(_pod(_res(storage=5)), _pod(_res(2, 2, storage=10)), set(), id="ephemeral local storage is sufficient"),
    pytest.param(_pod(_res(storage=10)), _pod(_res(2, 2)), set(), id="pod fits"),
])
def test_storage_requests(pod: dict[str, Any], on_node: dict[str, Any], short: set[str]) -> None:
    """TestStorageRequests."""
    assert insufficient(pod_request(pod), _capacity(ENOUGH), _used([on_node])) == short


def _sidecar_pod(request: Mapping[str, str] | None, sidecar_request: Mapping[str, str] | None) -> dict[str, Any]:
    """fit_test.go's newPodWithRestartableInitContainers."""
    container: dict[str, Any] = {"name": "regular"}
    if request is not None:
        container["resources"] = {"requests": dict(request)}
    sidecar: dict[str, Any] = {"name": "restartable-init", "restartPolicy": "Always"}
    if sidecar_request is not None:
        sidecar["resources"] = {"requests": dict(sidecar_request)}
    return {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": [container], "initContainers": [sidecar]}}


PLAIN = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": [{"name": "regular"}]}}


@pytest.mark.parametrize(("pod", "short"), [
    pytest.param(PLAIN, set(), id="allow pod without restartable init containers if sidecar containers is disabled"),
    pytest.param(_sidecar_pod(None, None), set(),
                 id="not allow pod with restartable init containers if sidecar containers is disabled",
                 marks=pytest.mark.skip(reason="SidecarContainers is GA and locked on in v1.37")),
    pytest.param(PLAIN, set(), id="allow pod without restartable init containers if sidecar containers is enabled"),
    pytest.param(_sidecar_pod(None, None), set(),
                 id="allow pod with restartable init containers if sidecar containers is enabled"),
    pytest.param(_sidecar_pod({"cpu": "1m"}, {"cpu": "1m"}), set(),
                 id="allow pod if the total requested resources do not exceed the node's allocatable resources"),
    pytest.param(_sidecar_pod({"cpu": "1m"}, {"cpu": "2m"}), {CPU},
                 id="not allow pod if the total requested resources do exceed the node's allocatable resources"),
])
def test_restartable_init_containers(pod: dict[str, Any], short: set[str]) -> None:
    """TestRestartableInitContainers: a sidecar runs beside the containers (their sum counts)."""
    assert insufficient(pod_request(pod), _capacity(_allocatable(2, 0, 1, 0, 0, 0)), {}) == short


# --- the request itself (component-helpers PodRequests) -----------------------------------------


def _containers(*cpus: str, sidecar: Iterable[int] = ()) -> list[dict[str, Any]]:
    """Containers asking for these cpus; the positions in ``sidecar`` are restartable."""
    sidecars = set(sidecar)
    return [{"name": f"c{n}", "resources": {"requests": {"cpu": cpu}}, **({"restartPolicy": "Always"} if n in sidecars else {})}
            for n, cpu in enumerate(cpus)]


def _spec_pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns"}, "spec": spec}


@pytest.mark.parametrize(("pod", "expected"), [
    pytest.param(_spec_pod(initContainers=_containers("4"), containers=_containers("1")), {CPU: 4000},
                 id="nil options, larger init container"),
    pytest.param(_spec_pod(initContainers=_containers("2"), containers=_containers("2", "3")), {CPU: 5000},
                 id="nil options, larger containers"),
    pytest.param(_spec_pod(overhead={"cpu": "1"}, initContainers=_containers("2"), containers=_containers("2", "3")),
                 {CPU: 5000}, id="pod overhead excluded",
                 marks=pytest.mark.skip(reason="ExcludeOverhead: an option the scheduler never sets")),
    pytest.param(_spec_pod(overhead={"cpu": "1", "memory": "1Gi"}, initContainers=_containers("2"),
                           containers=_containers("2", "3")), {CPU: 6000, MEMORY: 1 << 30}, id="pod overhead included"),
    pytest.param(_spec_pod(containers=_containers("4")), {CPU: 2000}, id="resized, infeasible",
                 marks=pytest.mark.skip(reason="UseStatusResources: a running pod's in-place resize")),
    pytest.param(_spec_pod(containers=_containers("4")), {CPU: 4000}, id="resized, no resize status",
                 marks=pytest.mark.skip(reason="UseStatusResources: a running pod's in-place resize")),
    pytest.param(_spec_pod(containers=_containers("4")), {CPU: 4000}, id="resized, infeasible, but don't use status"),
    pytest.param(_spec_pod(initContainers=_containers("1", sidecar=[0]), containers=_containers("1")), {CPU: 2000},
                 id="restartable init container"),
    pytest.param(_spec_pod(initContainers=_containers("5", "1", "2", "3", sidecar=[1, 2, 3]), containers=_containers("1")),
                 {CPU: 7000}, id="multiple restartable init containers"),
    pytest.param(_spec_pod(initContainers=_containers("5", "1", "2", "5", "3", sidecar=[1, 2, 4]),
                           containers=_containers("1")), {CPU: 8000}, id="multiple restartable and regular init containers"),
    pytest.param(_spec_pod(initContainers=_containers("10", "200", sidecar=[0]), containers=_containers("100")),
                 {CPU: 210000}, id="restartable-init, init and regular"),
])
def test_pod_resource_requests(pod: dict[str, Any], expected: dict[str, int]) -> None:
    """TestPodResourceRequests (component-helpers): the request, the Kubernetes formula."""
    assert pod_request(pod) == {**expected, PODS: 1}


def _get_pod(cpu_request: str = "", cpu_limit: str = "", memory_request: str = "", memory_limit: str = "",
             cpu_overhead: str = "", memory_overhead: str = "") -> dict[str, Any]:
    """helpers_test.go's getPod: one container; empty strings are left out."""
    def resources(**quantities: str) -> dict[str, str]:
        return {name: q for name, q in quantities.items() if q}
    spec: dict[str, Any] = {"containers": [{"name": "foobar", "resources": {
        "requests": resources(cpu=cpu_request, memory=memory_request), "limits": resources(cpu=cpu_limit, memory=memory_limit)}}]}
    overhead = resources(cpu=cpu_overhead, memory=memory_overhead)
    if overhead:
        spec["overhead"] = overhead
    return _spec_pod(**spec)


@pytest.mark.parametrize(("pod", "expected"), [
    pytest.param(_get_pod(cpu_limit="9"), {}, id="just-limit-no-overhead"),
    pytest.param(_get_pod(cpu_overhead="5", memory_overhead="5"), {CPU: 5000, MEMORY: 5}, id="just-overhead"),
    pytest.param(_get_pod(cpu_request="1", memory_request="10", cpu_overhead="5", memory_overhead="5"),
                 {CPU: 6000, MEMORY: 15}, id="req-and-overhead"),
    pytest.param(_get_pod(cpu_request="1", cpu_limit="2", memory_request="10", memory_limit="12", cpu_overhead="5",
                          memory_overhead="5"), {CPU: 6000, MEMORY: 15}, id="all-req-lim-and-overhead"),
    pytest.param(_get_pod(cpu_request="1", cpu_limit="2", memory_request="10", cpu_overhead="5", memory_overhead="5"),
                 {CPU: 6000, MEMORY: 15}, id="req-some-lim-and-overhead"),
])
def test_pod_requests_and_limits(pod: dict[str, Any], expected: dict[str, int]) -> None:
    """TestPodRequestsAndLimits (component-helpers), the requests: limits alone ask for nothing
    (the API server copies them into requests before the scheduler sees the pod)."""
    assert pod_request(pod) == {**expected, PODS: 1}


# --- ours: units and exact sums -------------------------------------------------------------------


def test_every_resource_in_the_units_of_the_nodes_capacity() -> None:
    """Ours: the pod's request and the node's capacity agree on every resource's unit, so GPUs,
    hugepages, ephemeral storage and any extended resource are compared as Kubernetes does."""
    node = {"cpu": "3900m", "memory": "15Gi", "pods": "110", "ephemeral-storage": "100Gi", HUGE: "4Mi",
            "nvidia.com/gpu": "2", "example.com/foo": "3"}
    capacity = _capacity(node)
    assert capacity == {CPU: 3900, MEMORY: 15 << 30, PODS: 110, STORAGE: 100 << 30, HUGE: 4 << 20,
                        "nvidia.com/gpu": 2, "example.com/foo": 3}
    pod = _spec_pod(containers=[{"name": "c", "resources": {"requests": {
        "cpu": "1.5", "memory": "1Gi", "ephemeral-storage": "10G", HUGE: "2Mi", "nvidia.com/gpu": "2", "example.com/foo": "1"}}}])
    request = pod_request(pod)
    assert request == {CPU: 1500, MEMORY: 1 << 30, STORAGE: 10 ** 10, HUGE: 2 << 20, "nvidia.com/gpu": 2,
                       "example.com/foo": 1, PODS: 1}
    assert fits(request, capacity, {})
    assert insufficient(request, capacity, {"nvidia.com/gpu": 1, HUGE: 3 << 20}) == {"nvidia.com/gpu", HUGE}
    assert insufficient({**request, "example.com/bar": 1}, capacity, {}) == {"example.com/bar"}  # the node has none


def test_quantities_are_added_exactly_then_rounded_up_once() -> None:
    """Ours, from PodRequests then Resource.SetMaxResource: Kubernetes adds the quantities
    exactly and rounds the sum up (MilliValue for cpu, Value for the rest)."""
    pod = _spec_pod(containers=_containers("0.5m", "0.5m"), overhead={"memory": "0.5"},
                    initContainers=[{"name": "i", "resources": {"requests": {"memory": "0.25"}}}])
    assert pod_request(pod) == {CPU: 1, MEMORY: 1, PODS: 1}
    # a sidecar's request joins every later init container's and the pod's steady one
    sidecar_then_init = _spec_pod(initContainers=[
        {"name": "s", "restartPolicy": "Always", "resources": {"requests": {"memory": "1Gi", "nvidia.com/gpu": "1"}}},
        {"name": "i", "resources": {"requests": {"memory": "3Gi"}}}], containers=_containers("1"))
    assert pod_request(sidecar_then_init) == {CPU: 1000, MEMORY: 4 << 30, "nvidia.com/gpu": 1, PODS: 1}
    # pod-level requests replace cpu, memory and hugepages only; other resources stay the containers'
    pod_level = _spec_pod(containers=[{"name": "c", "resources": {"requests": {"cpu": "1", STORAGE: "1Gi"}}}],
                          resources={"requests": {"cpu": "3", "memory": "2Gi", STORAGE: "5Gi"}})
    assert pod_request(pod_level) == {CPU: 3000, MEMORY: 2 << 30, STORAGE: 1 << 30, PODS: 1}
    with pytest.raises(PodError, match="int64"):
        pod_request(_spec_pod(containers=[{"name": "c", "resources": {"requests": {"memory": "8Ei"}}},
                                          {"name": "d", "resources": {"requests": {"memory": "8Ei"}}}]))
