"""The core entry point (pyscheduler.service): a scheduler with no web layer, several RMs
attached to one service, the stop order, a failing attach rolled back, routes an RM declares
(checked at attach, served by the REST service over real gunicorn), the one object loader."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pyscheduler.common.importing import load_object, parse_object_name
from pyscheduler.service import AttachedRM, CoreOptions, Route, RoutedRM, SchedulerService, load_attach
from service_rms import ClusterRM, attach_east, attach_west

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent / "web"))
from web_helpers import launch, stop  # noqa: E402

#: A quick loop and no background threads but the loop's: what these tests read.
FAST = CoreOptions(history=False, background=False, loop_idle_interval=0.01)


@pytest.fixture
def service() -> Iterator[SchedulerService]:
    made = SchedulerService(FAST)
    yield made
    made.stop()


def _cluster(name: str, stopped: list[str]) -> tuple[ClusterRM, object]:
    rm = ClusterRM(name, stopped)

    def attach(svc: SchedulerService) -> ClusterRM:
        rm.register(svc)
        return rm

    return rm, attach


# -- no web ---------------------------------------------------------------------------------------


def test_a_service_runs_without_the_web_layer() -> None:
    """In a fresh interpreter: start, attach an RM, schedule, stop; Flask never imported."""
    code = textwrap.dedent("""
        import sys
        sys.path.insert(0, "tests")
        from pyscheduler.service import CoreOptions, SchedulerService
        from service_rms import attach_east

        service = SchedulerService(CoreOptions(history=False))
        service.attach(attach_east)
        service.start()
        (attachment,) = service.attachments
        placed = attachment.rm.callback.wait_for_allocation("east-ask")
        service.stop()
        print(placed.node_id)
        web = sorted(m for m in ("flask", "werkzeug", "gunicorn", "pyscheduler_web") if m in sys.modules)
        assert not web, web
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "east-node"


# -- several RMs ----------------------------------------------------------------------------------


def test_two_rms_attached_at_once_each_schedule_through_the_one_proxy(service: SchedulerService) -> None:
    service.attach(attach_east)
    service.attach(attach_west)
    service.start()
    east, west = (a.rm for a in service.attachments)
    assert isinstance(east, ClusterRM) and isinstance(west, ClusterRM)
    assert east.callback.wait_for_allocation("east-ask").node_id == "east-node"
    assert west.callback.wait_for_allocation("west-ask").node_id == "west-node"
    # Each RM has its own partition and hears only of its own allocations.
    assert set(east.callback.allocations) == {"east-ask"}
    assert set(west.callback.allocations) == {"west-ask"}
    assert {p.rm_id for p in service.context.partitions.values()} == {"cluster-east", "cluster-west"}


def test_an_rm_attached_after_the_start_attaches_at_once(service: SchedulerService) -> None:
    service.start()
    rm = service.attach(attach_east)
    assert isinstance(rm, ClusterRM)
    assert rm.callback.wait_for_allocation("east-ask").node_id == "east-node"
    assert [a.name for a in service.attachments] == ["service_rms:attach_east"]


def test_rms_stop_in_reverse_order_once(service: SchedulerService) -> None:
    stopped: list[str] = []
    for name in ("a", "b", "c"):
        service.attach(_cluster(name, stopped)[1], name=name)  # type: ignore[arg-type]
    service.start()
    assert service.running
    service.stop()
    service.stop()  # idempotent: nothing stops twice
    assert stopped == ["c", "b", "a"]
    assert not service.running and service.attachments == ()
    assert not service.scheduler._thread.running  # the loop ended too
    with pytest.raises(RuntimeError, match="has stopped"):
        service.attach(attach_east)


def test_a_failing_attach_at_start_stops_what_started_and_raises() -> None:
    stopped: list[str] = []
    service = SchedulerService(FAST)
    service.attach(_cluster("first", stopped)[1], name="first")  # type: ignore[arg-type]

    def broken(svc: SchedulerService) -> AttachedRM:
        raise OSError("the cluster is away")

    service.attach(broken, name="broken")
    service.attach(_cluster("never", stopped)[1], name="never")  # type: ignore[arg-type]
    with pytest.raises(OSError, match="the cluster is away"):
        service.start()
    assert stopped == ["first"]  # the one that started, stopped; the one after never ran
    assert not service.running and not service.scheduler._thread.running
    service.start()  # a stopped service does not start again
    assert not service.running


def test_a_failing_attach_after_the_start_leaves_the_others_running(service: SchedulerService) -> None:
    stopped: list[str] = []
    service.attach(_cluster("first", stopped)[1], name="first")  # type: ignore[arg-type]
    service.start()

    def broken(svc: SchedulerService) -> AttachedRM:
        raise ValueError("bad settings")

    with pytest.raises(ValueError, match="bad settings"):
        service.attach(broken)
    assert service.running and stopped == []
    assert [a.name for a in service.attachments] == ["first"]


# -- routes ---------------------------------------------------------------------------------------


def test_routes_are_asked_once_and_a_rule_is_served_for_one_rm_only(service: SchedulerService) -> None:
    stopped: list[str] = []
    east = ClusterRM("east", stopped)
    asked: list[str] = []
    declared = east.routes

    def counting() -> tuple[Route, ...]:
        asked.append("routes")
        return tuple(declared())

    east.routes = counting  # type: ignore[method-assign]
    assert isinstance(east, RoutedRM)
    service.attach(lambda svc: east, name="east")
    service.start()
    assert [r.rule for a in service.attachments for r in a.routes] == ["/ws/v1/east/status"]
    assert asked == ["routes"]
    # A second RM declaring the same path is refused, and stopped (it had started).
    impostor = ClusterRM("east", stopped)
    with pytest.raises(ValueError, match="already served for east"):
        service.attach(lambda svc: impostor, name="impostor")
    assert stopped == ["east"] and len(service.attachments) == 1


@pytest.mark.parametrize(
    ("rule", "name"),
    [("ws/v1/x", "x"), ("/ws/v1/<name>", "x"), ("/ws//v1", "x"), ("/ws/v1/x", "a.b"), ("/ws/v1/x", "")],
)
def test_a_route_is_an_absolute_fixed_path_with_a_plain_name(rule: str, name: str) -> None:
    with pytest.raises(ValueError):
        Route(rule, name, dict)


def test_the_routes_of_several_rms_are_served_over_gunicorn(tmp_path: Path) -> None:
    """``pyscheduler serve --rm service_rms:attach_east --rm service_rms:attach_west``: both
    clusters schedule in the one served scheduler, and each RM's route answers (both are named
    ``status``: the app keeps their endpoints apart)."""
    server = launch(tmp_path, ["--rm", "service_rms:attach_east", "--rm", "service_rms:attach_west"])
    try:
        for name in ("east", "west"):
            deadline = time.monotonic() + 10
            while not (status := server.get(f"/ws/v1/{name}/status").json())["allocated"]:
                assert time.monotonic() < deadline, status
                time.sleep(0.05)
            assert status == {"rm_id": f"cluster-{name}", "allocated": {f"{name}-ask": f"{name}-node"}}
        assert server.request("HEAD", "/ws/v1/east/status").status_code == 405  # GET only, as httprouter
        assert server.get("/ws/v1/north/status").status_code == 404
    finally:
        assert stop(server) == 0


# -- the object loader ----------------------------------------------------------------------------


def test_the_object_loader_names_what_is_wrong() -> None:
    assert load_object("service_rms:ClusterRM.status") is ClusterRM.status
    assert load_object("service_rms", default_attr="attach_west") is attach_west
    assert load_attach("service_rms:attach_east") is attach_east
    assert parse_object_name("a.b", default_attr="attach") == parse_object_name("a.b:attach")
    with pytest.raises(ValueError, match="expected MODULE:ATTR"):
        load_object("service_rms")
    with pytest.raises(ValueError):
        parse_object_name("mod:a..b")
    with pytest.raises(ModuleNotFoundError) as missing:
        load_object("no_such_module_here:attach")
    assert missing.value.name == "no_such_module_here"
    with pytest.raises(AttributeError, match="'service_rms' has no attribute 'nothing'"):
        load_object("service_rms:nothing")
    with pytest.raises(TypeError, match="not callable"):
        load_attach("service_rms:__doc__")


# -- the Kubernetes shim's route ------------------------------------------------------------------


class _FakeShim:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def start(self) -> None:
        self.calls.append("start")

    def finish_replacements(self) -> bool:
        self.calls.append("finish replacements")
        return True

    def stop(self) -> None:
        self.calls.append("stop")


def test_the_kubernetes_shim_declares_its_leadership_route_without_flask() -> None:
    """Both forms attach() returns (a Replica behind leader election, the sole shim without)
    are routed RMs declaring ``GET /ws/v1/k8s/leadership`` (served: test_k8s_shim.py)."""
    from pyscheduler_k8s import Replica, SoleShim
    from pyscheduler_k8s.leader import LeaseSettings

    fake = _FakeShim()
    sole = SoleShim(lambda: fake)  # type: ignore[arg-type,return-value]
    assert isinstance(sole, RoutedRM)
    (route,) = sole.routes()
    assert (route.rule, route.name) == ("/ws/v1/k8s/leadership", "k8s_leadership")
    assert route.view()["role"] == "leader"
    sole.start()
    sole.stop()
    assert fake.calls == ["start", "finish replacements", "stop"]  # a graceful stop ends the gangs' replacements

    replica = Replica(_FakeShim, object(), "replica-a", LeaseSettings(namespace="ns"))  # type: ignore[arg-type]
    assert isinstance(replica, RoutedRM)
    (route,) = replica.routes()
    assert route.rule == "/ws/v1/k8s/leadership"
    assert route.view() == {"role": "standby", "identity": "replica-a", "holder": "", "lease": "ns/pyscheduler",
                            "shim": "stopped"}


# -- the web layer's options ----------------------------------------------------------------------


def test_serve_options_go_through_the_environment_and_keep_the_core_options() -> None:
    from pyscheduler_web.service import DEMO_TERMINATED_TIMEOUT, ServeOptions, build_service

    core = CoreOptions(config_path="queues.yaml", rms=("a.b:attach", "c"), health_interval=5.0, history=False,
                       role_history_dir="memory://histories", role_history_keep=2, role_history_max_age=60.0,
                       role_history_save_delay=0.5, reporter_period=1.0, reporter_timeout=2.0, reporter_grace=3.0,
                       reporter_enabled=("*", "-noisy"), reporter_checkpoint="/tmp/cp", reporter_dir="/tmp/plugins",
                       terminated_timeout=90.0)
    options = ServeOptions(core=core, demo=True, demo_seed=7)
    assert ServeOptions.from_env(options.to_env()) == options
    assert ServeOptions.from_env({}) == ServeOptions()
    # The demo expires terminated applications sooner unless told otherwise.
    assert ServeOptions(demo=True).core_options().terminated_timeout == DEMO_TERMINATED_TIMEOUT
    assert options.core_options().terminated_timeout == 90.0
    assert ServeOptions().core_options().terminated_timeout is None
    # The demo attaches as any RM does, first.
    service = build_service(ServeOptions(core=CoreOptions(history=False, background=False), demo=True))
    try:
        service.start()
        (demo,) = service.attachments
        assert demo.name == "demo RM" and isinstance(demo.rm, AttachedRM)
        assert service.context.timeouts.terminated == DEMO_TERMINATED_TIMEOUT
    finally:
        service.stop()


def test_an_rm_may_not_take_a_path_of_the_rest_api() -> None:
    from pyscheduler_web.app import create_app
    from pyscheduler_web.service import ServeOptions

    stopped: list[str] = []
    service = SchedulerService(FAST)
    rm = ClusterRM("east", stopped)
    rm.routes = lambda: (Route("/ws/v1/partitions", "status", rm.status),)  # type: ignore[method-assign]
    service.attach(lambda svc: rm, name="greedy")
    with pytest.raises(ValueError, match="greedy: /ws/v1/partitions is a path of the REST API's own"):
        create_app(ServeOptions(), service=service)
    assert stopped == ["east"] and not service.running


def test_the_app_mounts_each_rms_routes_under_its_own_endpoint() -> None:
    from pyscheduler_web.app import create_app

    service = SchedulerService(FAST)
    service.attach(attach_east)
    service.attach(attach_west)
    app = create_app(service=service)
    try:
        endpoints = {rule.rule: rule.endpoint for rule in app.url_map.iter_rules() if "/status" in rule.rule}
        assert endpoints == {"/ws/v1/east/status": "rm0_status", "/ws/v1/west/status": "rm1_status"}
        client = app.test_client()
        for attachment in service.attachments:
            assert isinstance(attachment.rm, ClusterRM)
            attachment.rm.callback.wait_for_allocation(f"{attachment.rm.name}-ask")
        assert client.get("/ws/v1/west/status").get_json() == {
            "rm_id": "cluster-west", "allocated": {"west-ask": "west-node"}}
    finally:
        service.stop()
