"""A gang recovered half-way through the RM interface (issue 34: a shim restarted while its gang
reserves): the application comes back with its placeholderAsk, the RM reports the placeholders
already placed as placeholder allocations and asks for the others. The core must treat them
exactly as placeholders it placed itself: Accepted while they do not add up, Running once the
last one is placed, members then replacing them one for one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from rm_helpers import World, res
from scheduling_helpers import config as queues_yaml

from pyscheduler.objects.application_state import AppState
from pyscheduler.scheduler.cycle import SchedulingCycle
from pyscheduler.si import messages as si

GANG = queues_yaml("""\
          - name: gang
            properties: {application.sort.policy: fifo}
""")
THREE = {"vcore": 3000}


@pytest.fixture
def w() -> Iterator[World]:
    made = World(GANG)
    yield made
    made.close()


def _recovered_gang_of_four(w: World) -> None:
    """Three nodes of 4 vcore, each holding one recovered placeholder of 3; the fourth asks."""
    for n in range(3):
        w.add_node(f"node-{n}", memory=1000, vcore=4000)
    w.apps(si.AddApplicationRequest(
        application_id="app-1", queue_name="root.gang", partition_name="default",
        ugi=si.UserGroupInformation(user="alice"), placeholder_ask=res(vcore=12_000)))
    w.allocs(*(w.alloc_msg(f"ph-{n}", "app-1", res(**THREE), node_id=f"node-{n}", placeholder=True,
                           task_group_name="workers") for n in range(3)))
    w.ask("ph-3", "app-1", res(**THREE), placeholder=True, task_group_name="workers")


def test_recovered_placeholders_keep_the_gang_accepted_until_the_last_one_is_placed(w: World) -> None:
    _recovered_gang_of_four(w)
    app = w.app("app-1")
    assert app.state is AppState.ACCEPTED
    assert app.allocated_placeholder == res(vcore=9000)
    assert {name: data.count for name, data in app.placeholder_data.items()} == {"workers": 4}
    assert SchedulingCycle(w.context).run() == []  # no room for the fourth
    assert app.state is AppState.ACCEPTED
    w.add_node("node-3", memory=1000, vcore=4000)
    (decision,) = SchedulingCycle(w.context).run()
    assert decision.ask.allocation_key == "ph-3" and decision.node.node_id == "node-3"
    assert app.state is AppState.RUNNING


def test_members_replace_recovered_placeholders_one_for_one(w: World) -> None:
    _recovered_gang_of_four(w)
    w.add_node("node-3", memory=1000, vcore=4000)
    SchedulingCycle(w.context).run()
    for n in range(4):
        w.ask(f"member-{n}", "app-1", res(**THREE), task_group_name="workers")
    replaced: list[str] = []
    for _ in range(8):
        for decision in SchedulingCycle(w.context).run():
            assert decision.replaced is not None, "a member placed beside the placeholders"
            replaced.append(decision.replaced.allocation_key)
            w.release("app-1", decision.replaced.allocation_key, termination=si.TerminationType.PLACEHOLDER_REPLACED)
    assert sorted(replaced) == [f"ph-{n}" for n in range(4)]
    app = w.app("app-1")
    assert sorted(app.allocations) == [f"member-{n}" for n in range(4)]
    assert {name: (data.count, data.replaced) for name, data in app.placeholder_data.items()} == {"workers": (4, 4)}
    assert app.state is AppState.RUNNING
